"""Words of dataset names, titles, keywords and labels, normalised so that they compare.

Names are split the way servers build them: a namespace prefix (``ms:lakes``, ``CP:CadastralParcel``) or a
Java package path (``org.n52.wps.server.algorithm.EchoProcess``) is dropped, camelCase, snake_case, dots, dashes and digits separate words (``MODIS_Terra_Snow_Cover``,
``airports1m``, ``landuse_1990``). Words are lower-cased, stripped of accents and made singular by plain
English rules, so that ``Lakes`` meets the label ``lake`` and ``Gebäude`` meets ``gebaude``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

MAX_CHARS = 2000  # of one text: titles that are whole citations end here
_PACKAGE = re.compile(r"^(?:[a-z][a-z0-9_]*\.){3,}\w+$")  # a Java-style package path, no spaces
_QNAME = re.compile(r"^[A-Za-z_][\w.-]{0,30}:(?=[A-Za-z_])(?!.*:)")  # one prefix, not a URN
# Letters only (digits and punctuation separate words), but a chemical formula stays whole: SO2, NO2, O3, PM10.
_WORD = re.compile(r"[a-z]{1,2}\d{1,2}(?![\da-z])|[^\W\d_]+", re.UNICODE | re.IGNORECASE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[^\W\d_]+", re.UNICODE)
# Plural endings that are not plurals: "gas", "bus", "analysis", "glass".
_KEEP_S = ("ss", "us", "is", "as", "ics")


@lru_cache(maxsize=65536)
def normalise(word: str) -> str:
    """A word (without accents) lower-cased and made singular (``cities`` -> ``city``, ``lakes`` -> ``lake``)."""
    word = word.lower()
    if len(word) <= 3 or word.endswith(_KEEP_S):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


def words(text: str | None) -> list[str]:
    """The normalised words of free text (a title, a keyword, a label)."""
    if not text:
        return []
    text = unicodedata.normalize("NFKD", text[:MAX_CHARS]).replace("ß", "ss")
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return [
        normalise(w)
        for part in _WORD.findall(text)
        for w in ((part,) if part[-1].isdigit() else _CAMEL.findall(part))
    ]


def name_words(name: str | None) -> list[str]:
    """The normalised words of a dataset name: its namespace prefix dropped, camelCase and digits split."""
    if not name:
        return []
    name = _QNAME.sub("", name.strip()[:MAX_CHARS])
    if _PACKAGE.match(name):  # org.n52.wps.server.algorithm.EchoProcess: the namespace says nothing
        name = name.rpartition(".")[2]
    return words(name)
