"""Which concepts a dataset is about, from its name, title and keywords, and failing those its schema.

Exact matches come first: every label of every concept, as a phrase of normalised words, is looked for in
the words of the name and the title (method ``label``) and of each keyword (``keyword``), longest phrase
first, so that "sea ice" is sea ice and not the sea. Only when nothing matches, each word of the name (and
the name run together) is compared with every label by longest common subsequence, and the best label at or
above the threshold counts (``lcs``, its similarity as the score): misspelt names such as ``watercorse`` or
``buidings``. A title of more than MAX_TITLE_WORDS words is a description (often a citation naming its
publisher), and is not matched. Finally, a WFS feature type still unmatched is matched by the property
names of its schema (``schema``), which the WFS detector reads with DescribeFeatureType.

Of the concepts found, those implied by a more specific one (its broader concepts and wholes) are dropped:
"lakes" with the keyword "hydrography" is a lake, and a search for hydrography finds it anyway.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from geoweb.semantic.ontology import Ontology, default_ontology
from geoweb.semantic.tokens import name_words, words

MIN_LCS_WORD = 4  # shorter words are compared exactly only: "rd" is not "road" by accident
MAX_LCS_WORD = 40
MAX_KEYWORDS = 50  # of one dataset
MAX_TITLE_WORDS = 12  # longer titles are descriptions or citations, not names
MAX_PROPERTIES = 100  # schema properties of one feature type
# Words of layer names that say nothing about their subject; they take no part in LCS matching.
GENERIC_WORDS = frozenset(
    "layer layers data dataset map maps wms wfs wcs wmts service feature features default test name value "
    "type version group tile tiled day night view public".split()
)


@dataclass(frozen=True, slots=True)
class ConceptMatch:
    """One concept found for a dataset: how (label, keyword, lcs, schema), how well (1.0 for exact
    matches, the LCS similarity otherwise) and on which words."""

    concept: str
    method: str
    score: float
    text: str


def lcs_length(a: str, b: str) -> int:
    """The length of the longest common subsequence of two strings."""
    if len(a) < len(b):
        a, b = b, a
    previous = [0] * (len(b) + 1)
    for ch in a:
        current = [0]
        for j, other in enumerate(b):
            current.append(previous[j] + 1 if ch == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def lcs_similarity(a: str, b: str) -> float:
    """LCS length over the longer length: 1.0 for equal strings, 0.0 for nothing in common."""
    if not a or not b:
        return 0.0
    return lcs_length(a, b) / max(len(a), len(b))


class Matcher:
    """Matches datasets against one ontology with one LCS threshold."""

    def __init__(self, ontology: Ontology, lcs_threshold: float):
        if not 0.0 < lcs_threshold <= 1.0:
            raise ValueError(f"lcs_threshold must be in (0, 1], not {lcs_threshold}")
        self.ontology = ontology
        self.threshold = lcs_threshold
        self.phrases: dict[tuple[str, ...], list[str]] = {}
        for concept in ontology:
            for label in concept.labels:
                phrase = tuple(words(label))
                if phrase and concept.id not in self.phrases.setdefault(phrase, []):
                    self.phrases[phrase].append(concept.id)
        self.longest = max(map(len, self.phrases))
        # labels run together ("water body" -> "waterbody") for LCS, each with its concepts
        self.compact: dict[str, list[str]] = {}
        for phrase, ids in self.phrases.items():
            self.compact.setdefault("".join(phrase), []).extend(ids)
        self._letters = {compact: Counter(compact) for compact in self.compact}
        self._similar = lru_cache(maxsize=65536)(self._most_similar)

    def match(
        self,
        name: str | None,
        title: str | None = None,
        keywords: Iterable[str] = (),
        properties: Sequence[str] = (),
    ) -> list[ConceptMatch]:
        """The most specific concepts of a dataset, each with its best match, in the order found."""
        found: dict[str, ConceptMatch] = {}
        title_words = name_words(title)  # titles copied from names are package paths and QNames too
        if len(title_words) > MAX_TITLE_WORDS:
            title_words = []
        sources = [(name_words(name), "label"), (title_words, "label")]
        sources += [(words(k), "keyword") for k in list(keywords)[:MAX_KEYWORDS] if isinstance(k, str)]
        for text_words, method in sources:
            self._add(found, self._phrases_in(text_words, method))
        if not found:
            self._add(found, self._similar_words(name_words(name)))
        if not found:
            for prop in properties[:MAX_PROPERTIES]:
                if isinstance(prop, str):
                    self._add(found, self._phrases_in(name_words(prop), "schema"))
        keep = self.ontology.most_specific(found)
        return [found[c] for c in keep]

    @staticmethod
    def _add(found: dict[str, ConceptMatch], matches: Iterable[ConceptMatch]) -> None:
        for m in matches:
            if m.concept not in found or m.score > found[m.concept].score:
                found[m.concept] = m

    def _phrases_in(self, text_words: list[str], method: str) -> list[ConceptMatch]:
        """Label phrases in a word sequence, longest first at each position, without overlaps."""
        matches, i = [], 0
        while i < len(text_words):
            for n in range(min(self.longest, len(text_words) - i), 0, -1):
                phrase = tuple(text_words[i : i + n])
                if phrase in self.phrases:
                    matches += [ConceptMatch(c, method, 1.0, " ".join(phrase)) for c in self.phrases[phrase]]
                    i += n
                    break
            else:
                i += 1
        return matches

    def _similar_words(self, name: list[str]) -> list[ConceptMatch]:
        candidates = [w for w in name if w not in GENERIC_WORDS]
        if len(candidates) > 1:
            candidates.append("".join(candidates))  # "water_course" -> "watercourse"
        matches = []
        for word in dict.fromkeys(candidates):
            if MIN_LCS_WORD <= len(word) <= MAX_LCS_WORD:
                matches += self._similar(word)
        return matches

    def _most_similar(self, word: str) -> tuple[ConceptMatch, ...]:
        """The concepts of the labels most similar to ``word``, if at or above the threshold."""
        best, ids, label = 0.0, [], ""
        letters = Counter(word)
        for compact, concepts in self.compact.items():
            # cheap bounds first: the LCS is no longer than the shorter word, nor than the letters they share
            longer = max(len(word), len(compact))
            if min(len(word), len(compact)) < self.threshold * longer:
                continue
            if (letters & self._letters[compact]).total() < self.threshold * longer:
                continue
            score = lcs_similarity(word, compact)
            if score > best:
                best, ids, label = score, concepts, compact
        if best < self.threshold:
            return ()
        return tuple(ConceptMatch(c, "lcs", round(best, 3), f"{word}~{label}") for c in ids)


@lru_cache(maxsize=8)
def default_matcher(lcs_threshold: float) -> Matcher:
    """A matcher over the shipped ontology, built once per threshold per process."""
    return Matcher(default_ontology(), lcs_threshold)
