"""Parse untrusted XML: no entity expansion, no DTD or network loading, bounded size and depth.

Every document the crawl parses comes from a server nobody vetted; this is the only XML entry point.
"""

from __future__ import annotations

import io
from collections.abc import Collection

from lxml import etree

from geoweb.errors import MalformedContent, UnsafeContent
from geoweb.settings import Settings

DEFAULT_MAX_BYTES = Settings().max_xml_bytes

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_WHITESPACE = b" \t\r\n"


def strip_bom(data: bytes) -> bytes:
    """``data`` without a UTF-8 byte-order mark, or a UTF-16 one that stands before single-byte text.

    Some servers write a UTF-16 mark and then ISO-8859-1 or UTF-8 text; a true UTF-16 document (a zero byte
    in its first character) keeps its mark for the parser. Leading whitespace, which the XML declaration
    forbids but real servers send, goes too.
    """
    if data.startswith(_UTF8_BOM):
        data = data[3:]
    elif data[:2] in _UTF16_BOMS and data[2:4] and 0 not in data[2:4]:
        data = data[2:]
    stripped = data.lstrip(_WHITESPACE)
    return stripped if stripped[:1] == b"<" else data


def looks_like_xml(head: bytes) -> bool:
    """Whether the first bytes of a body open an XML document (a declaration, in any of its encodings)."""
    head = strip_bom(head[:64])
    return head.startswith(
        (b"<?xml", b"\xff\xfe<\x00?\x00", b"\xfe\xff\x00<\x00?", b"<\x00?\x00", b"\x00<\x00?")
    )


def sniff(data: bytes, *, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str | None, str]:
    """The (namespace, local name) of a document's root element, read from its start tag alone by a pull
    parser: no tree is built, no DTD loaded, no entity expanded, nothing fetched; cheap enough for the event
    loop.

    Raises UnsafeContent for a body over ``max_bytes``, MalformedContent when no start tag parses.
    """
    if len(data) > max_bytes:
        raise UnsafeContent(f"XML document of {len(data)} bytes is over the {max_bytes}-byte cap")
    events = etree.iterparse(
        io.BytesIO(strip_bom(data)),
        events=("start",),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
    )
    try:
        _, element = next(events)
    except (StopIteration, etree.XMLSyntaxError) as exc:
        raise MalformedContent(f"not well-formed XML: {exc or 'no root element'}") from None
    qname = etree.QName(element)
    return qname.namespace, qname.localname


def _parser() -> etree.XMLParser:
    # A new parser per call: lxml parsers must not be shared between threads. huge_tree=False keeps
    # libxml2's limits on depth, text size and entity amplification.
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def parse_xml(
    data: bytes, *, max_bytes: int = DEFAULT_MAX_BYTES, roots: Collection[str] | None = None
) -> etree._Element:
    """The root element of ``data``. With ``roots`` (local names), a document whose root is none of them
    is refused from its start tag (``sniff``), before a tree is built.

    Raises UnsafeContent for a body over ``max_bytes``, a DOCTYPE declaring entities, or a document that
    hits the parser's resource limits (entity amplification, nesting depth); MalformedContent otherwise.
    """
    if len(data) > max_bytes:
        raise UnsafeContent(f"XML document of {len(data)} bytes is over the {max_bytes}-byte cap")
    if roots is not None:
        _, name = sniff(data, max_bytes=max_bytes)
        if name not in roots:
            raise MalformedContent(f"root element {name!r} is none of {', '.join(roots)}")
    try:
        root = etree.fromstring(strip_bom(data), _parser())
    except etree.XMLSyntaxError as exc:
        if exc.code == etree.ErrorTypes.ERR_RESOURCE_LIMIT:
            raise UnsafeContent(f"XML document exceeds parser limits: {exc}") from None
        raise MalformedContent(f"not well-formed XML: {exc}") from None
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None:
        entities = [entity.name for entity in dtd.iterentities()]
        if entities:
            raise UnsafeContent(f"DOCTYPE declares entities ({', '.join(entities[:5])}); rejected unexpanded")
    return root
