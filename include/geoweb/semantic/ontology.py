"""The ontology of spatial feature concepts, read from a SKOS-shaped JSON file and checked whole.

Each concept has an ``id``, a ``prefLabel``, optional ``altLabel`` (synonyms, plurals, other languages) and
``hiddenLabel`` (abbreviations and run-together spellings found in layer names), ``broader`` concepts
(hyponymy: a canal is a watercourse) and ``partOf`` concepts (meronymy: a bridge is part of a road).
A broken file (malformed JSON, a missing label, an unknown or repeated id, a cycle) is refused as a whole
with an error naming the concept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from geoweb.errors import GeowebError

ONTOLOGY = files("geoweb.semantic") / "ontology.json"
MAX_CONCEPTS = 10_000
_FIELDS = frozenset({"id", "prefLabel", "altLabel", "hiddenLabel", "broader", "partOf", "scopeNote"})


class OntologyError(GeowebError):
    """Raised by ``load_ontology`` for an ontology file that cannot be used; the message says where."""

    reason = "ontology"
    user_msg = "The ontology file is not valid"


@dataclass(frozen=True, slots=True)
class Concept:
    id: str
    label: str  # prefLabel
    alt_labels: tuple[str, ...] = ()  # altLabel and hiddenLabel
    broader: tuple[str, ...] = ()
    part_of: tuple[str, ...] = ()

    @property
    def labels(self) -> tuple[str, ...]:
        return (self.label, *self.alt_labels)


class Ontology:
    """Concepts by id, with the relations walked both ways. Build it with ``load_ontology``."""

    def __init__(self, concepts: Iterable[Concept]):
        self.concepts: dict[str, Concept] = {c.id: c for c in concepts}
        self._narrower: dict[str, list[str]] = {cid: [] for cid in self.concepts}
        for concept in self.concepts.values():
            for parent in (*concept.broader, *concept.part_of):
                self._narrower[parent].append(concept.id)

    def __contains__(self, concept_id: object) -> bool:
        return concept_id in self.concepts

    def __iter__(self) -> Iterator[Concept]:
        return iter(self.concepts.values())

    def __len__(self) -> int:
        return len(self.concepts)

    def ancestors(self, concept_id: str) -> set[str]:
        """Every concept above ``concept_id`` through ``broader`` and ``partOf``, not itself."""
        return self._walk(concept_id, lambda c: (*self.concepts[c].broader, *self.concepts[c].part_of))

    def descendants(self, concept_id: str) -> set[str]:
        """Every concept below ``concept_id`` (narrower ones and parts), not itself: what a search for it
        also finds."""
        return self._walk(concept_id, self._narrower.__getitem__)

    @staticmethod
    def _walk(start: str, step) -> set[str]:
        seen: set[str] = set()
        todo = list(step(start))
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(step(current))
        return seen

    def most_specific(self, concept_ids: Iterable[str]) -> list[str]:
        """The ids without those implied by another one (an ancestor of it), in the given order."""
        ids = list(dict.fromkeys(concept_ids))
        implied = set().union(*(self.ancestors(c) for c in ids))
        return [c for c in ids if c not in implied]


def _strings(raw: dict, key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise OntologyError(f"{where}: {key} must be a list of non-empty strings")
    return tuple(v.strip() for v in value)


def _concept(raw: object, position: int) -> Concept:
    if not isinstance(raw, dict):
        raise OntologyError(f"concept #{position}: must be an object")
    cid, label = raw.get("id"), raw.get("prefLabel")
    if not isinstance(cid, str) or not cid.strip() or cid != cid.strip():
        raise OntologyError(f"concept #{position}: id must be a non-empty string without surrounding spaces")
    where = f"concept {cid!r}"
    if not isinstance(label, str) or not label.strip():
        raise OntologyError(f"{where}: prefLabel must be a non-empty string")
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise OntologyError(f"{where}: unknown fields {unknown}")
    return Concept(
        id=cid,
        label=label.strip(),
        alt_labels=_strings(raw, "altLabel", where) + _strings(raw, "hiddenLabel", where),
        broader=_strings(raw, "broader", where),
        part_of=_strings(raw, "partOf", where),
    )


def _check_links(concepts: list[Concept]) -> None:
    ids: set[str] = set()
    for concept in concepts:
        if concept.id in ids:
            raise OntologyError(f"concept {concept.id!r}: id defined twice")
        ids.add(concept.id)
    for concept in concepts:
        for relation, targets in (("broader", concept.broader), ("partOf", concept.part_of)):
            for target in targets:
                if target not in ids:
                    raise OntologyError(
                        f"concept {concept.id!r}: {relation} names unknown concept {target!r}"
                    )
                if target == concept.id:
                    raise OntologyError(f"concept {concept.id!r}: {relation} names itself")


def _check_cycles(ontology: Ontology) -> None:
    """Depth-first over broader and partOf: a concept met again on its own path closes a cycle."""
    done: set[str] = set()
    for start in ontology.concepts:
        path: list[str] = []
        stack: list[tuple[str, bool]] = [(start, False)]
        on_path: set[str] = set()
        while stack:
            current, leaving = stack.pop()
            if leaving:
                on_path.discard(current)
                path.pop()
                done.add(current)
                continue
            if current in on_path:
                cycle = [*path[path.index(current) :], current]
                raise OntologyError(f"cycle through broader/partOf: {' -> '.join(cycle)}")
            if current in done:
                continue
            on_path.add(current)
            path.append(current)
            stack.append((current, True))
            concept = ontology.concepts[current]
            stack.extend((parent, False) for parent in (*concept.broader, *concept.part_of))


def parse_ontology(text: str) -> Ontology:
    """The ontology of a JSON document, or OntologyError naming the first problem."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise OntologyError(f"not JSON: {exc}") from None
    concepts = document.get("concepts") if isinstance(document, dict) else None
    if not isinstance(concepts, list) or not concepts:
        raise OntologyError("the document must be an object with a non-empty list of concepts")
    if len(concepts) > MAX_CONCEPTS:
        raise OntologyError(f"{len(concepts)} concepts: at most {MAX_CONCEPTS}")
    parsed = [_concept(raw, i) for i, raw in enumerate(concepts, 1)]
    _check_links(parsed)
    ontology = Ontology(parsed)
    _check_cycles(ontology)
    return ontology


def load_ontology(path: Path | Traversable = ONTOLOGY) -> Ontology:
    """The ontology in ``path`` (the one shipped with the package by default)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OntologyError(f"cannot read {path}: {exc}") from None
    return parse_ontology(text)


@cache
def default_ontology() -> Ontology:
    """The shipped ontology, read once per process."""
    return load_ontology()
