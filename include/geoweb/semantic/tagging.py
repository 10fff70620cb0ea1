"""Tagging: each dataset of a detected resource gets the concepts it is about, whatever its type."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict

from geoweb.models import Dataset
from geoweb.semantic.matcher import default_matcher

MATCHES_KEY = "concept_matches"  # Dataset.extra: how each concept was matched
PROPERTIES_KEY = (
    "schema_properties"  # Dataset.extra: property names from the schema (WFS DescribeFeatureType)
)


def tag_datasets(datasets: Iterable[Dataset], lcs_threshold: float) -> None:
    """Set ``concepts`` of each dataset, and the match details in its ``extra``."""
    matcher = default_matcher(lcs_threshold)
    for dataset in datasets:
        properties = dataset.extra.get(PROPERTIES_KEY)
        matches = matcher.match(
            dataset.name,
            dataset.title,
            dataset.keywords,
            properties if isinstance(properties, list) else (),
        )
        dataset.concepts = [m.concept for m in matches]
        if matches:
            dataset.extra[MATCHES_KEY] = [asdict(m) for m in matches]
        else:
            dataset.extra.pop(MATCHES_KEY, None)
