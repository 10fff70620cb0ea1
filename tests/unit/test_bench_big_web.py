"""The benchmark's on-the-fly web: deterministic, connected within five levels, as redundant as the paper's
crawl, and served over real sockets with its own account of what it served."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import Counter, deque

import pytest
import requests
from lxml import html

from bench.big_web import LAST_MODIFIED, STATS_PATH, BigWeb, BigWebSpec, serve

SPEC = BigWebSpec(pages=3_000, hosts=6, port=18499, slow_hosts=1, slow_seconds=0.3, documents=3)


def bfs(web: BigWeb) -> tuple[dict[tuple[int, int], int], int]:
    """Level of every page reached from the hosts' roots, and the links met on the way."""
    levels = {(h, 0): 0 for h in range(web.spec.hosts)}
    queue, links = deque(levels), 0
    while queue:
        page = queue.popleft()
        for target in web.links(*page):
            links += 1
            if target not in levels:
                levels[target] = levels[page] + 1
                queue.append(target)
    return levels, links


def test_pages_are_functions_of_seed_host_and_index():
    web, again = BigWeb(SPEC), BigWeb(SPEC)
    assert web.page(2, 123) == again.page(2, 123)
    assert web.page(2, 123) != web.page(2, 124)
    other_seed = BigWeb(BigWebSpec(pages=3_000, hosts=6, seed=1))
    assert other_seed.page(2, 123) != web.page(2, 123)


def test_every_page_is_reached_within_five_levels_with_the_papers_redundancy():
    web = BigWeb(SPEC)
    levels, links = bfs(web)
    assert len(levels) == SPEC.pages
    assert max(levels.values()) <= 5
    assert Counter(h for h, _ in levels) == {h: SPEC.pages_of(h) for h in range(SPEC.hosts)}
    # 9.9 million URLs met, 2.1 million unique: 79 % of links lead to pages already seen
    assert 0.76 <= 1 - len(levels) / links <= 0.82


def test_page_links_are_the_links_it_computes():
    web = BigWeb(SPEC)
    tree = html.fromstring(web.page(1, 7))
    hrefs = [a.get("href") for a in tree.iter("a")]
    expected = [
        (f"{SPEC.origin(h)}" if h != 1 else "") + ("/" if i == 0 else f"/s{i // 100:03d}/p{i:05d}.html")
        for h, i in web.links(1, 7)
    ]
    assert hrefs[: len(expected)] == expected


@pytest.fixture(scope="module")
def served():
    loop = asyncio.new_event_loop()
    ready = asyncio.Event()
    task = loop.create_task(serve(SPEC, ready))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(ready.wait(), loop).result(timeout=20)
    yield
    loop.call_soon_threadsafe(task.cancel)
    time.sleep(0.2)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)


def stats() -> dict:
    return requests.get(SPEC.origin(1) + STATS_PATH, timeout=5).json()


def test_the_server_answers_pages_robots_documents_and_counts_them(served):
    before = stats()
    with requests.Session() as session:  # one keep-alive connection for all of these
        origin = SPEC.origin(1)
        robots = session.get(origin + "/robots.txt", timeout=5)
        assert robots.text == "User-agent: *\nDisallow: /private/\n"
        page = session.get(origin + "/s000/p00012.html", timeout=5)
        assert page.status_code == 200
        assert page.headers["Content-Type"].startswith("text/html")
        assert page.content == BigWeb(SPEC).page(1, 12)
        assert session.get(origin + "/s000/p00012.html", timeout=5).status_code == 200  # a repeat
        assert session.get(origin + "/s000/p12.html", timeout=5).status_code == 404  # not the page's path
        assert session.get(origin + f"/s009/p{SPEC.pages_of(1):05d}.html", timeout=5).status_code == 404
        assert session.head(origin + "/", timeout=5).content == b""
        assert session.post(origin + "/", timeout=5).status_code == 405
    after = stats()
    assert after["robots"] - before["robots"] == 1
    assert after["pages"] - before["pages"] == 2  # p00012 and the root (HEAD)
    assert after["repeated_pages"] - before["repeated_pages"] == 1
    assert after["not_found"] - before["not_found"] == 2


def test_a_few_pages_link_real_documents_that_are_served(served):
    web = BigWeb(SPEC)
    linked = []
    for host in range(SPEC.hosts):
        index = web.document_page(host)
        if index is not None:
            tree = html.fromstring(web.page(host, index))
            linked += [
                (host, a.get("href")) for a in tree.iter("a") if a.get("href").startswith("/documents/")
            ]
    assert linked  # host 0 at least
    for host, href in linked:
        answer = requests.get(SPEC.origin(host) + href, timeout=5)
        assert answer.status_code == 200
        assert answer.content.lstrip().startswith(b"<")
        probe = requests.get(SPEC.origin(host) + href + "?service=WMS&request=GetCapabilities", timeout=5)
        assert probe.status_code == 404  # a static file host has no service behind a file


def test_slow_hosts_answer_late_and_others_at_once(served):
    assert SPEC.is_slow(0) and not SPEC.is_slow(1)
    started = time.monotonic()
    requests.get(SPEC.origin(0) + "/", timeout=5)
    assert time.monotonic() - started >= SPEC.slow_seconds
    started = time.monotonic()
    requests.get(SPEC.origin(1) + "/", timeout=5)
    assert time.monotonic() - started < SPEC.slow_seconds


def test_an_endless_request_head_is_cut_off(served):
    with socket.create_connection((SPEC.address(1), SPEC.port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nX-Filler: " + b"a" * 20_000)
        sock.settimeout(5)
        assert sock.recv(100) == b""  # closed without an answer


def test_even_hosts_send_validators_and_answer_their_conditions_with_304(served):
    page = "/s000/p00021.html"
    before = stats()
    with requests.Session() as session:
        odd = session.get(SPEC.origin(3) + page, timeout=5)
        assert "ETag" not in odd.headers and "Last-Modified" not in odd.headers
        asked = session.get(SPEC.origin(3) + page, headers={"If-Modified-Since": LAST_MODIFIED}, timeout=5)
        assert asked.status_code == 200 and asked.content == odd.content  # no validators, no 304

        whole = session.get(SPEC.origin(2) + page, timeout=5)
        etag = whole.headers["ETag"]
        assert whole.status_code == 200 and whole.headers["Last-Modified"] == LAST_MODIFIED
        same = session.get(SPEC.origin(2) + page, headers={"If-None-Match": f'"x", W/{etag}'}, timeout=5)
        assert (same.status_code, same.content, same.headers["ETag"]) == (304, b"", etag)
        since = session.get(SPEC.origin(2) + page, headers={"If-Modified-Since": LAST_MODIFIED}, timeout=5)
        assert since.status_code == 304
        # If-None-Match decides when both are sent; an older date is modified since
        other = session.get(
            SPEC.origin(2) + page,
            headers={"If-None-Match": '"x"', "If-Modified-Since": LAST_MODIFIED},
            timeout=5,
        )
        older = session.get(
            SPEC.origin(2) + page, headers={"If-Modified-Since": "Sun, 07 Aug 2016 00:00:00 GMT"}, timeout=5
        )
        assert other.status_code == older.status_code == 200 and other.content == whole.content
        garbled = session.get(SPEC.origin(2) + page, headers={"If-Modified-Since": "yesterday"}, timeout=5)
        assert garbled.status_code == 200  # a date it cannot read is no condition
        after_304 = session.get(SPEC.origin(2) + "/robots.txt", timeout=5)  # the connection is still in step
        assert after_304.text.startswith("User-agent")
    after = stats()
    assert after["not_modified"] - before["not_modified"] == 2
    sent = 2 * len(odd.content) + 4 * len(whole.content) + len(after_304.content)
    assert after["body_bytes"] - before["body_bytes"] == sent + len(
        json.dumps(before)
    )  # with the first reading
