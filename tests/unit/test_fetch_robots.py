"""robots.txt through the fetcher: fetched once per origin, RFC 9309 status rules, crawl-delay, our agent."""

from collections import Counter

import pytest

from geoweb.errors import RobotsDisallowed
from geoweb.fetch import Response
from geoweb.fetch.robots import product_token
from tests.hostile.servers import HostileServer, fetch_each, loopback_settings

OUR_GROUP_DISALLOWS_OK = "User-agent: GeoWebHarvester\nDisallow: /ok\n\nUser-agent: *\nDisallow:\n"


def test_product_token_is_what_groups_match():
    assert product_token("GeoWebHarvester/0.1 (+https://example.org)") == "GeoWebHarvester"
    assert product_token("  plainbot ") == "plainbot"


def test_fetched_once_for_concurrent_requests_and_sent_with_our_user_agent():
    with HostileServer(robots="User-agent: *\nDisallow: /private\n") as server:
        settings = loopback_settings(server)
        results = fetch_each(settings, *[server.url("/ok")] * 10, concurrent=True)
    assert all(isinstance(r, Response) and r.status == 200 for r in results)
    assert server.paths().count("/robots.txt") == 1
    assert server.paths()[0] == "/robots.txt"
    assert all(seen.headers["User-Agent"] == settings.user_agent for seen in server.seen)


def test_the_group_of_our_agent_applies():
    with HostileServer(robots=OUR_GROUP_DISALLOWS_OK) as server:
        ok, other = fetch_each(loopback_settings(server), server.url("/ok"), server.url("/status/200"))
    assert isinstance(ok, RobotsDisallowed)
    assert isinstance(other, Response)
    assert "/ok" not in server.paths()


def test_another_agents_group_does_not_apply():
    with HostileServer(robots="User-agent: OtherBot\nDisallow: /\n") as server:
        [result] = fetch_each(loopback_settings(server), server.url("/ok"))
    assert isinstance(result, Response)


@pytest.mark.parametrize("status", [404, 403, 410])
def test_4xx_allows_everything(status):
    with HostileServer(robots=status) as server:
        [result] = fetch_each(loopback_settings(server), server.url("/ok"))
    assert isinstance(result, Response) and result.status == 200


@pytest.mark.parametrize("status", [500, 503, 429])
def test_5xx_disallows_everything_unless_configured(status):
    with HostileServer(robots=status) as server:
        stats = Counter()
        [refused] = fetch_each(loopback_settings(server, retries=0), server.url("/ok"), stats=stats)
        assert isinstance(refused, RobotsDisallowed)
        assert "/ok" not in server.paths()
        assert stats["robots/fetch_error"] == 1 and stats["robots/forbidden"] == 1
        [allowed] = fetch_each(loopback_settings(server, retries=0, robots_5xx_allow=True), server.url("/ok"))
        assert isinstance(allowed, Response) and allowed.status == 200


def test_unreachable_robots_disallows_everything():
    with HostileServer(robots="User-agent: *\nDisallow:\n") as server:
        # read_timeout: robots.txt "answers" after the /stall fashion by never answering
        server.robots = (307, {"Location": "/stall"})
        stats = Counter()
        [result] = fetch_each(
            loopback_settings(server, read_timeout=0.2, retries=0), server.url("/ok"), stats=stats
        )
    assert isinstance(result, RobotsDisallowed)
    assert stats["robots/fetch_error"] == 1
    assert "/ok" not in server.paths()


def test_redirects_are_followed_to_another_origin():
    with HostileServer() as rules, HostileServer() as site:
        rules.robots = "User-agent: *\nDisallow: /ok\n"
        site.robots = (301, {"Location": rules.url("/robots.txt")})
        [result] = fetch_each(loopback_settings(rules, site), site.url("/ok"))
    assert isinstance(result, RobotsDisallowed)
    assert rules.paths() == ["/robots.txt"]


def test_more_than_five_redirects_mean_no_robots_txt():
    with HostileServer(robots=(301, {"Location": "/chain/9"})) as server:
        [result] = fetch_each(loopback_settings(server), server.url("/ok"))
    assert isinstance(result, Response) and result.status == 200
    # robots.txt and five redirects (to /chain/9 ... /chain/5); the sixth is not followed
    assert server.paths() == ["/robots.txt", *(f"/chain/{n}" for n in range(9, 4, -1)), "/ok"]


def test_a_redirect_to_a_blocked_address_makes_robots_unreachable_not_the_site():
    with HostileServer(robots=(302, {"Location": "http://127.0.0.2/robots.txt"})) as server:
        stats = Counter()
        settings = loopback_settings(server, robots_5xx_allow=True)
        [result] = fetch_each(settings, server.url("/ok"), stats=stats)
    assert isinstance(result, Response) and result.status == 200
    assert stats["guard/blocked"] == 1 and stats["robots/fetch_error"] == 1


def test_crawl_delay_spaces_requests():
    with HostileServer(robots="User-agent: *\nCrawl-delay: 0.3\n") as server:
        fetch_each(loopback_settings(server), server.url("/ok"), server.url("/ok"))
    robots, first, second = (seen.time for seen in server.seen)
    assert second - first >= 0.29
    assert first - robots >= 0.29  # the robots.txt request counts as a request to the origin


def test_crawl_delay_is_capped():
    with HostileServer(robots="User-agent: *\nCrawl-delay: 3600\n") as server:
        fetch_each(loopback_settings(server, max_crawl_delay=0.2), server.url("/ok"), server.url("/ok"))
    _, first, second = (seen.time for seen in server.seen)
    assert 0.19 <= second - first < 1.0


@pytest.mark.parametrize("value", ["-5", "nan", "soon"])
def test_a_nonsense_crawl_delay_is_ignored(value):
    with HostileServer(robots=f"User-agent: *\nCrawl-delay: {value}\n") as server:
        fetch_each(loopback_settings(server), server.url("/ok"), server.url("/ok"))
    _, first, second = (seen.time for seen in server.seen)
    assert second - first < 0.2


def test_obey_robots_off_never_asks_for_robots_txt():
    with HostileServer(robots="User-agent: *\nDisallow: /\n") as server:
        [result] = fetch_each(loopback_settings(server, obey_robots=False), server.url("/ok"))
    assert isinstance(result, Response)
    assert server.paths() == ["/ok"]


def test_binary_garbage_robots_allows_everything():
    garbage = bytes(range(256)).decode("latin-1") * 100
    with HostileServer(robots=garbage) as server:
        [result] = fetch_each(loopback_settings(server), server.url("/ok"))
    assert isinstance(result, Response) and result.status == 200


def test_rules_past_500_kib_are_not_read():
    padding = "# padding\n" * 60_000  # 600 kB
    robots = f"User-agent: *\nDisallow: /ok\n{padding}Disallow: /status/\n"
    with HostileServer(robots=robots) as server:
        ok, status = fetch_each(loopback_settings(server), server.url("/ok"), server.url("/status/200"))
    assert isinstance(ok, RobotsDisallowed)
    assert isinstance(status, Response) and status.status == 200
