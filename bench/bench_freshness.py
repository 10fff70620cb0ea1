"""What revisiting by change rate buys over uniform revisits at the same budget, on a simulated web whose pages
change at known rates.

The web: ``--pages`` pages, each changing as a Poisson process. Their mean intervals between changes follow
Cho and Garcia-Molina's measurements of 720,000 pages ("The evolution of the Web and implications for an
incremental crawler", VLDB 2000): 23 % change within a day (here every hour to every day), 15 % within a
week, 16 % within a month, 16 % within four months, 30 % more rarely (here four months to two years),
log-uniform within each band. Every page is read on day 0; then one run a day for ``--days`` days, each
revisiting ``--budget`` of the pages (a crawl is instantaneous).

The policies, all from what a crawler observes (at each visit, whether the page changed since the one before,
kept by the real ``PageState``), except the last:

- uniform: round-robin, the pages visited longest ago first;
- change probability: the likeliest to have changed since their last visit first;
- revisit value: ``pagestates.revisits``, the scheduler of ``geoweb crawl --state``;
- revisit value, true rates: the same ranking by the rates the web really has, a bound on what estimating
  them better could give.

Freshness is the share of pages whose copy is current, averaged over time (all days, and the second half,
once the histories are longer) and right after each run; age is how long a stale copy has been stale (0 when
current), averaged over time. Exits 1 when the scheduler's freshness is under ``--min-ratio`` times uniform's.

    .venv/bin/python -m bench.bench_freshness
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from geoweb.crawl.pagestates import PageState, revisits

DAY = 86400.0
# (share of pages, shortest and longest mean interval between changes, in days)
BANDS = ((0.23, 1 / 24, 1), (0.15, 1, 7), (0.16, 7, 30), (0.16, 30, 120), (0.30, 120, 730))

Policy = Callable[[dict[str, PageState], float, int], set[str]]


@dataclass
class Web:
    rates: dict[str, float]  # changes per second
    changes: dict[str, list[float]]  # each page's change times, ascending

    def first_change_after(self, url: str, moment: float) -> float:
        times = self.changes[url]
        at = bisect.bisect_right(times, moment)
        return times[at] if at < len(times) else math.inf


@dataclass
class Result:
    freshness: float
    freshness_second_half: float
    freshness_after_runs: float
    age_hours: float


def make_web(pages: int, days: int, seed: int) -> Web:
    rng = random.Random(seed)
    rates, changes = {}, {}
    horizon = (days + 1) * DAY
    for share, shortest, longest in BANDS:
        for _ in range(round(share * pages)):
            url = f"https://example.org/{len(rates)}"
            interval = math.exp(rng.uniform(math.log(shortest), math.log(longest))) * DAY
            rates[url], moment, times = 1 / interval, 0.0, []
            while (moment := moment + rng.expovariate(1 / interval)) < horizon:
                times.append(moment)
            changes[url] = times
    return Web(rates, changes)


def simulate(web: Web, policy: Policy, days: int, budget: int, seed: int) -> Result:
    """Day 0 reads every page; each day after, the policy chooses the ``budget`` pages revisited."""
    levels = random.Random(seed)
    states = {url: PageState(level=levels.randint(1, 3)) for url in web.rates}
    stale_from = {url: web.first_change_after(url, 0.0) for url in web.rates}
    fresh_seconds, age_seconds2, fresh_after_runs = [0.0] * (days + 1), 0.0, 0.0
    for day in range(1, days + 1):
        start, now = (day - 1) * DAY, day * DAY
        for changed_at in stale_from.values():  # the day before this run
            fresh_seconds[day] += min(max(changed_at - start, 0.0), DAY)
            if changed_at < now:
                stale_since = max(changed_at, start)
                age_seconds2 += ((now - changed_at) ** 2 - (stale_since - changed_at) ** 2) / 2
        for url in policy(states, now, budget):
            states[url].count_visit(now, changed=stale_from[url] <= now)
            stale_from[url] = web.first_change_after(url, now)
        fresh_after_runs += sum(changed_at > now for changed_at in stale_from.values())
    pages = len(web.rates)
    return Result(
        freshness=sum(fresh_seconds) / (pages * days * DAY),
        freshness_second_half=sum(fresh_seconds[days // 2 + 1 :]) / (pages * (days - days // 2) * DAY),
        freshness_after_runs=fresh_after_runs / (pages * days),
        age_hours=age_seconds2 / (pages * days * DAY) / 3600,
    )


def uniform(states: dict[str, PageState], now: float, budget: int) -> set[str]:
    ranked = heapq.nsmallest(budget, states.items(), key=lambda item: (item[1].visited_at, item[0]))
    return {url for url, _ in ranked}


def by_change_probability(states: dict[str, PageState], now: float, budget: int) -> set[str]:
    ranked = heapq.nsmallest(
        budget,
        states.items(),
        key=lambda item: (-item[1].change_probability(now), item[1].level, item[1].visited_at, item[0]),
    )
    return {url for url, _ in ranked}


def by_true_rates(web: Web) -> Policy:
    def value(url: str, state: PageState, now: float) -> float:
        rate = web.rates[url]
        elapsed = rate * (now - state.visited_at)
        return (-math.expm1(-elapsed) - elapsed * math.exp(-elapsed)) / rate

    def choose(states: dict[str, PageState], now: float, budget: int) -> set[str]:
        ranked = heapq.nsmallest(budget, states.items(), key=lambda item: -value(*item, now))
        return {url for url, _ in ranked}

    return choose


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--budget", type=float, default=0.2, help="share of the pages revisited per run")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument(
        "--min-ratio", type=float, default=1.3, help="the scheduler's freshness over uniform's"
    )
    args = parser.parse_args()
    started = time.monotonic()
    web = make_web(args.pages, args.days, args.seed)
    budget = round(args.budget * len(web.rates))
    policies: dict[str, Policy] = {
        "uniform": uniform,
        "change probability": by_change_probability,
        "revisit value (scheduler)": revisits,
        "revisit value, true rates": by_true_rates(web),
    }
    results = {name: simulate(web, policy, args.days, budget, args.seed) for name, policy in policies.items()}
    base = results["uniform"]
    print(f"{len(web.rates):,} pages, {sum(map(len, web.changes.values())):,} changes, {args.days} runs of "
          f"{budget:,} revisits, seed {args.seed}\n")  # fmt: skip
    print("| policy | freshness | / uniform | 2nd half | / uniform | after runs | age h | / uniform |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r.freshness:.3f} | {r.freshness / base.freshness:.2f} | "
              f"{r.freshness_second_half:.3f} | {r.freshness_second_half / base.freshness_second_half:.2f} | "
              f"{r.freshness_after_runs:.3f} | {r.age_hours:.1f} | {r.age_hours / base.age_hours:.2f} |")  # fmt: skip
    ratio = results["revisit value (scheduler)"].freshness / base.freshness
    print(f"\n{time.monotonic() - started:.1f} s; scheduler freshness / uniform {ratio:.2f} (at least "
          f"{args.min_ratio} wanted)")  # fmt: skip
    sys.exit(0 if ratio >= args.min_ratio else 1)


if __name__ == "__main__":
    main()
