"""One harvest of a catalogue source at a time, across processes: a second run's harvest of the same source
(a manual run beside a scheduled one) waits for the first to end, then starts from its watermark."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import UTC, datetime

from geoweb.store import Store


def test_a_second_harvest_of_a_source_waits_for_the_first_and_starts_from_its_watermark(store, postgis_dsn):
    source = f"csw:http://{uuid.uuid4().hex[:12]}.example/csw"
    watermark = datetime(2024, 5, 1, tzinfo=UTC)
    seen: dict[str, object] = {}

    def second() -> None:
        with Store(postgis_dsn) as other, other.catalogue.harvesting(source, "csw", source) as harvest:
            seen["watermark"] = harvest.state.watermark
            seen["while_first_ran"] = not first_done.is_set()

    first_done = threading.Event()
    with store.catalogue.harvesting(source, "csw", source) as harvest:
        waiting = threading.Thread(target=second)
        waiting.start()
        time.sleep(0.5)  # time for the second harvest to reach the lock
        assert "watermark" not in seen, "the second harvest began while the first held the source"
        harvest.advance([watermark])
        first_done.set()
    waiting.join(10)
    assert seen == {"watermark": watermark, "while_first_ran": False}


def test_harvests_of_different_sources_run_at_once(store, postgis_dsn):
    first, other_source = (f"csw:http://{uuid.uuid4().hex[:12]}.example/csw" for _ in range(2))
    with (
        store.catalogue.harvesting(first, "csw", first),
        Store(postgis_dsn) as other,
        other.catalogue.harvesting(other_source, "csw", other_source) as harvest,
    ):
        assert harvest.state.name == other_source
