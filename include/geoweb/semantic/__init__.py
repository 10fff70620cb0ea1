"""Semantic categories: an ontology of spatial feature concepts (shipped as ``ontology.json``), a matcher of
dataset names, titles, keywords and schemas against it, and the tagging of detected datasets."""

from geoweb.semantic.matcher import ConceptMatch, Matcher, default_matcher
from geoweb.semantic.ontology import Concept, Ontology, OntologyError, default_ontology, load_ontology
from geoweb.semantic.tagging import tag_datasets, tag_datasets_in_turns

__all__ = [
    "Concept",
    "ConceptMatch",
    "Matcher",
    "Ontology",
    "OntologyError",
    "default_matcher",
    "default_ontology",
    "load_ontology",
    "tag_datasets",
    "tag_datasets_in_turns",
]
