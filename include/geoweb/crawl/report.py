"""Per-level crawl statistics and the end-of-run table (the paper's Figs. 10-11 as numbers)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from geoweb.links.priority import RecallCurve
from geoweb.models import LevelStats

LEVEL_FIELDS = tuple(f.name for f in fields(LevelStats))


@dataclass(frozen=True, slots=True)
class CrawlTotals:
    """A crawl's figures over all its levels: the table's last rows, the stored summary and GeoHub's report
    all show these."""

    urls: int
    resources: int
    failures: int
    deferred: int
    deferred_hosts: int  # the most hosts set aside in one level
    seconds: float
    by_type: tuple[tuple[str, int], ...]  # resources per type, by type

    @property
    def discovery_ratio(self) -> float:
        return self.resources / self.urls if self.urls else 0.0


@dataclass
class CrawlReport:
    levels: list[LevelStats] = field(default_factory=list)
    resources_by_type: Counter = field(default_factory=Counter)
    stats: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    recall: RecallCurve | None = None  # recall at a link budget of X %, by score and by a random order
    # (run id, costs) of the crawl's last runs up to this one, oldest first (``store.runs.COST_FIELDS``)
    costs: list[tuple[str, dict[str, int]]] = field(default_factory=list)

    @classmethod
    def of_levels(cls, levels: list[LevelStats], resources_by_type: Counter) -> CrawlReport:
        """The report of a harvest run: its levels run one after the other, so its seconds are theirs summed."""
        return cls(levels, resources_by_type, seconds=sum(s.seconds for s in levels))

    @classmethod
    def from_summary(cls, summary: Mapping[str, Any]) -> CrawlReport:
        """The report of a stored ``summary``, its levels as stored (seconds to a tenth); a figure a level row
        lacks (stored before it was counted) is its ``LevelStats`` default."""
        levels = [
            LevelStats(**{k: v for k, v in row.items() if k in LEVEL_FIELDS}) for row in summary["levels"]
        ]
        return cls.of_levels(levels, Counter(summary.get("resources_by_type") or {}))

    @property
    def urls(self) -> int:
        return self.totals().urls

    @property
    def resources(self) -> int:
        return self.totals().resources

    @property
    def requests(self) -> int:
        return self.stats["fetch/requests"]

    def totals(self) -> CrawlTotals:
        return CrawlTotals(
            urls=sum(s.urls for s in self.levels),
            resources=sum(s.resources for s in self.levels),
            failures=sum(s.failures for s in self.levels),
            deferred=sum(s.deferred for s in self.levels),
            deferred_hosts=max((s.deferred_hosts for s in self.levels), default=0),
            seconds=self.seconds,
            by_type=tuple(sorted(self.resources_by_type.items())),
        )

    def summary(self) -> dict[str, Any]:
        """What a harvest run stores of the report (``crawl_runs.summary``, read back by ``from_summary``):
        each level's row, the totals of URLs, resources and deferred URLs, and the resources per type; the
        other totals follow from the level rows."""
        totals = self.totals()
        return {
            "levels": [
                {"level": s.level, "urls": s.urls, "resources": s.resources, "failures": s.failures,
                 "deferred": s.deferred, "deferred_hosts": s.deferred_hosts,
                 "discovery_ratio": round(s.discovery_ratio, 4), "seconds": round(s.seconds, 1)}
                for s in self.levels
            ],
            "urls": totals.urls,
            "resources": totals.resources,
            "deferred": totals.deferred,
            "resources_by_type": dict(totals.by_type),
        }  # fmt: skip

    def table(self) -> str:
        """A plain-text summary: one row per level, totals, resources per type and requests per resource."""
        totals = self.totals()
        rows = [
            f"{'level':>5}  {'URLs fetched':>12}  {'resources':>9}  {'failures':>8}  {'deferred':>8}  "
            f"{'ratio':>8}  {'secs':>7}",
            *(_table_row(s.level, s) for s in self.levels),
            _table_row("all", totals),
        ]
        if totals.deferred_hosts:
            rows.append(
                f"hosts set aside (time or failure budget, level deadline): {totals.deferred_hosts} at most "
                "in a level"
            )
        rows.append(f"resources by type: {', '.join(f'{t} {n}' for t, n in totals.by_type) or 'none'}")
        per_resource = f"{self.requests / totals.resources:.1f}" if totals.resources else "n/a"
        rows.append(
            f"HTTP requests: {self.requests} ({per_resource} per resource found); "
            f"pages/s: {totals.urls / totals.seconds if totals.seconds else 0:.0f}"
        )
        return "\n".join(rows)

    def plot(self, path) -> None:
        """A PNG of resources found and discovery ratio per level (the paper's Figs. 10 and 11), and the recall
        curve of the link budget when the report has one."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator

        levels = [s.level for s in self.levels]
        panels = 2 + bool(self.recall) + bool(self.costs)
        fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 4), constrained_layout=True)
        ax_found, ax_ratio = axes[:2]
        # URLs outnumber resources a hundredfold: each gets its own linear axis of whole numbers
        ax_urls = ax_found.twinx()
        found = ax_found.bar(levels, [s.resources for s in self.levels], color="#2b7bb9", label="resources")
        (fetched,) = ax_urls.plot(
            levels, [s.urls for s in self.levels], "o-", color="#777777", label="URLs fetched"
        )
        ax_found.set(title="Resources found per level", xlabel="level (link hops)", ylabel="resources found")
        ax_urls.set_ylabel("URLs fetched")
        for ax in (ax_found, ax_urls):
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylim(bottom=0)
        ax_found.legend(handles=[found, fetched], loc="upper right")
        ax_ratio.plot(levels, [s.discovery_ratio for s in self.levels], "o-", color="#d95f02")
        ax_ratio.set(title="Discovery ratio per level", xlabel="level (link hops)", ylabel="resources / URLs")
        for ax in (ax_found, ax_ratio):
            ax.set_xticks(levels)
        if self.recall:
            _plot_recall(axes[2], self.recall)
        if self.costs:
            _plot_costs(axes[-1], self.costs)
        fig.savefig(path, dpi=100)
        plt.close(fig)


def _plot_recall(ax, curve: RecallCurve) -> None:
    """Recall against the share of each level's links followed: by score, and by a random order."""
    ax.plot(curve.percents, curve.scored, "o-", color="#1b9e77", label="best score first")
    ax.plot(curve.percents, curve.baseline, "s--", color="#999999", label="random order")
    ax.set(
        title=f"Recall at a link budget ({curve.resources} resources)",
        xlabel="links followed per level (%)",
        ylabel="share of the run's resources found",
        xlim=(0, 100),
        ylim=(0, 1.05),
    )
    ax.legend(loc="lower right")


def _plot_costs(ax, costs: list[tuple[str, dict[str, int]]]) -> None:
    """The crawl's runs side by side: pages read whole and carried over (stacked), and megabytes read."""
    runs = range(1, len(costs) + 1)
    read = [c["new_pages"] + c["changed_pages"] + c["same_bytes"] for _, c in costs]
    carried = [c["not_modified"] + c["not_due"] for _, c in costs]
    ax.bar(runs, read, color="#2b7bb9", label="read whole")
    ax.bar(runs, carried, bottom=read, color="#a6cee3", label="304 or not due")
    ax.set(title="Cost per run of this crawl", xlabel="run (this one last)", ylabel="pages")
    ax.set_ylim(0, 1.3 * max([*map(sum, zip(read, carried, strict=True)), 1]))  # room for the legend
    ax.set_xticks(list(runs))
    ax.legend(loc="upper left")
    megabytes = ax.twinx()
    megabytes.plot(runs, [c["bytes_read"] / 1e6 for _, c in costs], "o-", color="#d95f02")
    megabytes.set_ylabel("MB read", color="#d95f02")
    megabytes.set_ylim(bottom=0)


def _table_row(label: int | str, figures: LevelStats | CrawlTotals) -> str:
    return (
        f"{label:>5}  {figures.urls:>12}  {figures.resources:>9}  {figures.failures:>8}  {figures.deferred:>8}  "
        f"{figures.discovery_ratio:>8.4f}  {figures.seconds:>7.1f}"
    )
