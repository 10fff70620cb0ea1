"""The harvest database of the local stack (``python -m stack start`` in a clone), for ``geoweb`` run without
GEOWEB_DB. The stack owns the DSN: it writes it to ``DSN_FILE`` in its clone while its PostgreSQL runs and
removes it when it stops; the library only reads the file of the clone it is installed from."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

DSN_FILE = Path("var") / "stack" / "geoweb_db"  # relative to a clone
# include/geoweb/local_stack.py in an editable install; an installed package finds no stack there
CLONE = Path(__file__).resolve().parents[2]


def stack_dsn(clone: Path | None = None) -> str | None:
    """The DSN the stack of ``clone`` (default ``CLONE``) wrote, or None when its PostgreSQL is not running or
    there is no stack."""
    try:
        return ((clone or CLONE) / DSN_FILE).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def without_password(dsn: str) -> str:
    """A postgresql:// DSN fit to print: its user, host, port and database, never its password."""
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{parts.username}@{host}" if parts.username else host).geturl()
