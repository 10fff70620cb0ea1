"""The address guard decides every IPv4 spelling itself, with the oldest aiohttp ``pyproject.toml`` allows.

aiohttp 3.10 hands ``127.1``, ``2130706433`` or ``0177.0.0.1`` to the system resolver, which reads them as
127.0.0.1 (a guard that trusted the client let 8 such requests reach a loopback port that was not allowed);
the locked aiohttp refuses them on its own. The spelling tests of
``tests/unit/test_fetch_addressguard.py`` run here again in a subprocess with the floor version first on
the path, installed by uv (the lock's installer) into the test's temporary folder.
"""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def aiohttp_floor() -> str:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    [floor] = [m.group(1) for d in dependencies if (m := re.fullmatch(r"aiohttp>=([\d.]+)", d.strip()))]
    return floor


@pytest.mark.timeout(300)
def test_the_guard_holds_with_the_oldest_aiohttp_allowed(tmp_path):
    floor = aiohttp_floor()
    uv = Path(sys.executable).with_name("uv")
    target = tmp_path / "aiohttp-floor"
    install = subprocess.run(
        [str(uv), "pip", "install", "--python", sys.executable, "--target", str(target), "--no-deps",
         f"aiohttp=={floor}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if install.returncode != 0:
        pytest.skip(
            f"aiohttp {floor} could not be installed (no package index reachable?): {install.stderr[-300:]}"
        )
    path = os.pathsep.join([str(target), os.environ.get("PYTHONPATH", ""), str(ROOT / "include"), str(ROOT)])
    check = subprocess.run(
        [sys.executable, "-c", "import aiohttp; print(aiohttp.__version__)"],
        env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert check.stdout.strip() == floor
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "spelling or ending_in_a_number",
         str(ROOT / "tests/unit/test_fetch_addressguard.py")],
        env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True, check=False, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed is not None and int(passed[1]) >= 20, done.stdout[-3000:]  # the spelling tests did run
