"""The semantic matcher on the labelled set: precision, recall and F1 per concept, micro and macro, over LCS
thresholds, with and without the schema fallback, and the matching speed.

    .venv/bin/python -m bench.bench_semantic                       # table to stdout, per-concept table too
    .venv/bin/python -m bench.bench_semantic --output var/bench/semantic.md

The labelled set and how it was built: tests/data/semantic/README.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from geoweb.semantic import Matcher, default_ontology
from geoweb.semantic.evaluation import Evaluation, LabelledRow, evaluate, read_labelled
from geoweb.settings import Settings

LABELLED = Path(__file__).resolve().parent.parent / "tests" / "data" / "semantic" / "labelled.csv"
THRESHOLDS = (0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def threshold_table(rows: list[LabelledRow]) -> list[str]:
    lines = [
        "| LCS threshold | schema fallback | micro P | micro R | micro F1 | macro F1 | rows exactly right |",
        "|---|---|---|---|---|---|---|",
    ]
    for threshold in THRESHOLDS:
        matcher = Matcher(default_ontology(), threshold)
        for use_schema in (False, True):
            e = evaluate(matcher, rows, use_schema=use_schema)
            m = e.micro
            lines.append(
                f"| {threshold:.2f} | {'yes' if use_schema else 'no'} | {m.precision:.3f} | {m.recall:.3f} | "
                f"{m.f1:.3f} | {e.macro_f1:.3f} | {e.exact_rows}/{e.rows} |"
            )
    return lines


def concept_table(evaluation: Evaluation) -> list[str]:
    lines = ["| concept | TP | FP | FN | P | R | F1 |", "|---|---|---|---|---|---|---|"]
    for concept, s in evaluation.per_concept.items():
        lines.append(
            f"| {concept} | {s.tp} | {s.fp} | {s.fn} | {s.precision:.2f} | {s.recall:.2f} | {s.f1:.2f} |"
        )
    return lines


def speed(rows: list[LabelledRow], threshold: float, repeat: int = 20) -> float:
    """Microseconds per dataset, a fresh matcher each round (no LCS cache carried over), its building not
    counted."""
    seconds = 0.0
    for _ in range(repeat):
        matcher = Matcher(default_ontology(), threshold)
        started = time.perf_counter()
        for row in rows:
            matcher.match(row.name, row.title, row.keywords, row.properties)
        seconds += time.perf_counter() - started
    return seconds / (repeat * len(rows)) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labelled", type=Path, default=LABELLED)
    parser.add_argument("--output", type=Path, help="also write the tables to this Markdown file")
    args = parser.parse_args(argv)
    rows = read_labelled(args.labelled)
    threshold = Settings().concept_lcs_threshold
    expected = sum(len(r.expected) for r in rows)
    lines = [
        f"{len(rows)} labelled datasets, {expected} expected tags, {len(default_ontology())} concepts",
        "",
        *threshold_table(rows),
        "",
        f"Per concept at the default threshold {threshold} with the schema fallback:",
        "",
        *concept_table(evaluate(Matcher(default_ontology(), threshold), rows)),
        "",
        f"Matching speed: {speed(rows, threshold):.0f} µs per dataset (default threshold, cold LCS cache)",
    ]
    text = "\n".join(lines)
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
