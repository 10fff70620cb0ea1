"""PageBuffer: pages are committed in batches of N, or after T seconds, and whatever is left on flush."""

import pytest

from geoweb.harvest.pagebuffer import PageBuffer
from geoweb.models import Page


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def pages(n: int, start: int = 0) -> list[Page]:
    return [Page(f"http://example.org/{i}", None, 1) for i in range(start, start + n)]


def test_commits_every_size_pages_or_after_seconds_and_the_rest_on_flush():
    batches, clock = [], Clock()
    buffer = PageBuffer(
        lambda batch: batches.append([p.url for p in batch]), size=3, seconds=2.0, clock=clock
    )
    for page in pages(7):
        buffer(page)
    assert [len(b) for b in batches] == [3, 3]
    clock.now = 2.5  # a slow page: what waited is committed when the next page arrives
    buffer(pages(1, start=7)[0])
    assert [len(b) for b in batches] == [3, 3, 2]
    buffer(pages(1, start=8)[0])
    buffer.flush()
    buffer.flush()  # nothing left: no empty commit
    assert [len(b) for b in batches] == [3, 3, 2, 1]
    assert [url for batch in batches for url in batch] == [p.url for p in pages(9)]
    assert buffer.committed == 9


def test_a_failed_commit_keeps_its_pages_uncounted():
    def refuse(batch):
        raise ConnectionError("database gone")

    buffer = PageBuffer(refuse, size=2)
    buffer(pages(1)[0])
    with pytest.raises(ConnectionError):
        buffer(pages(1, start=1)[0])
    assert buffer.committed == 0 and len(buffer.pages) == 2
