"""Parse untrusted XML: no entity expansion, no DTD or network loading, bounded size and depth.

Every document the crawl parses comes from a server nobody vetted; this is the only XML entry point.
"""

from __future__ import annotations

import codecs
import contextlib
import html.entities
import io
import re
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


# huge_tree=False keeps libxml2's limits on depth, text size and entity amplification.
_SAFE = {"resolve_entities": False, "no_network": True, "load_dtd": False, "huge_tree": False}


def _parser(*, recover: bool = False) -> etree.XMLParser:
    # A new parser per call: lxml parsers must not be shared between threads (and each keeps its own error
    # log).
    return etree.XMLParser(recover=recover, **_SAFE)


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
    return _parsed(strip_bom(data), _parser())


def _parsed(data: bytes, parser: etree.XMLParser) -> etree._Element:
    """The root element ``parser`` reads from ``data``, refused where the document is unsafe."""
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        if exc.code == etree.ErrorTypes.ERR_RESOURCE_LIMIT:
            raise UnsafeContent(f"XML document exceeds parser limits: {exc}") from None
        raise MalformedContent(f"not well-formed XML: {exc}") from None
    if root is None:  # a recovering parser that found no element
        raise MalformedContent("not well-formed XML: no element could be read")
    if any(e.type == etree.ErrorTypes.ERR_RESOURCE_LIMIT for e in parser.error_log):
        raise UnsafeContent("XML document exceeds parser limits")
    return _without_entity_declarations(root)


def _without_entity_declarations(root: etree._Element) -> etree._Element:
    """``root``, unless its DOCTYPE declares entities: UnsafeContent then."""
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None:
        entities = [entity.name for entity in dtd.iterentities()]
        if entities:
            raise UnsafeContent(f"DOCTYPE declares entities ({', '.join(entities[:5])}); rejected unexpanded")
    return root


# --- lenient parsing: the defects real servers' documents have, repaired and named ---------------------

# Prefixes servers use without declaring them; any other undeclared prefix gets a namespace of its own.
KNOWN_PREFIXES = {
    "inspire_common": "http://inspire.ec.europa.eu/schemas/common/1.0",
    "inspire_vs": "http://inspire.ec.europa.eu/schemas/inspire_vs/1.0",
    "inspire_vs_ows11": "http://inspire.ec.europa.eu/schemas/inspire_vs_ows11/1.0",
    "inspire_dls": "http://inspire.ec.europa.eu/schemas/inspire_dls/1.0",
    "xlink": "http://www.w3.org/1999/xlink",
    "xsi": "http://www.w3.org/2001/XMLSchema-instance",
    "gml": "http://www.opengis.net/gml",
}
UNDECLARED_NS = "urn:geoweb:undeclared-prefix:"
_UNDECLARED = re.compile(r"Namespace prefix (\S+) (?:on|for) ")
_DECLARED_ENCODING = re.compile(rb"<\?xml[^>]*?encoding\s*=\s*[\"']([\w.:-]+)", re.I)
_PROLOG_ITEM = re.compile(rb"<\?.*?\?>|<!--.*?-->|<!DOCTYPE(?:[^\[>]|\[.*?\])*>|\s+", re.S)
_START_TAG = re.compile(rb"<[^\s/>!?]+")


def _windows_1252(error: UnicodeDecodeError) -> tuple[str, int]:
    """Decoding error handler: the offending byte as Windows-1252 (ISO-8859-1 where that has no character)."""
    byte = error.object[error.start : error.start + 1]
    try:
        return byte.decode("cp1252"), error.start + 1
    except UnicodeDecodeError:
        return byte.decode("latin-1"), error.start + 1


codecs.register_error("geoweb-windows-1252", _windows_1252)


def parse_xml_leniently(
    data: bytes, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[etree._Element, list[str]]:
    """The root element of ``data`` and the defects repaired to read it, none for a well-formed document.

    Real servers send what an XML parser refuses; each repair is named in the defects:
    bytes that are not UTF-8 under a UTF-8 declaration are read as Windows-1252 (old server configurations
    writing ISO-8859-1); prefixes used but never declared are declared (INSPIRE's under their own namespaces);
    references to entities of a DTD that is not loaded become their HTML character or nothing; whatever still
    does not parse is read by libxml2's recovering parser (a truncated document, the element it was cut in
    left out), its first error named.
    Unsafe documents are never repaired: UnsafeContent as ``parse_xml``; MalformedContent where nothing is
    left to read.
    """
    defects: list[str] = []
    try:
        root = parse_xml(data, max_bytes=max_bytes)
    except MalformedContent:
        data = strip_bom(data)
        if _declared_encoding(data) in ("utf-8", "utf8"):
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                data = data.decode("utf-8", errors="geoweb-windows-1252").encode("utf-8")
                defects.append("bytes that are not UTF-8 under a UTF-8 declaration, read as Windows-1252")
        sniff(data, max_bytes=max_bytes)  # a root start tag cut short is nothing to read
        prefixes = _undeclared_prefixes(data)
        if prefixes:
            data = _declare(data, prefixes)
            defects.append(f"namespace prefixes used but not declared: {', '.join(prefixes)}")
        cut = _cut_short(data)
        if cut is not None:
            root, left_out = cut
            defects.append(f"document cut short: read up to the {left_out} element it ends in, left out")
        else:
            parser = _parser(recover=True)
            root = _parsed(data, parser)
            errors = [e for e in parser.error_log if e.level >= etree.ErrorLevels.ERROR]
            if errors:
                first = errors[0]
                defects.append(
                    f"not well-formed XML, read by a recovering parser: {first.message} (line {first.line})"
                )
    undefined = _drop_entity_references(root)
    if undefined:
        defects.append(f"entities of a DTD that is not read: {', '.join(undefined)}")
    return root, defects


_FEED_BYTES = 1 << 20


def _cut_short(data: bytes) -> tuple[etree._Element, str] | None:
    """The elements of a document that is sound but ends before they do (a push parser takes every byte and
    fails only when told there are no more), without the innermost element still open: its text or its
    children may be cut, and a value cut short is a guess. With that element's name; None for a document
    with any other fault."""
    parser = etree.XMLPullParser(events=("start", "end"), **_SAFE)
    try:
        # in pieces: without huge_tree, libxml2 holds at most 10,000,000 unparsed bytes at once
        for start in range(0, len(data), _FEED_BYTES):
            parser.feed(data[start : start + _FEED_BYTES])
    except etree.XMLSyntaxError as exc:
        if exc.code == etree.ErrorTypes.ERR_RESOURCE_LIMIT:
            raise UnsafeContent(f"XML document exceeds parser limits: {exc}") from None
        return None
    try:
        parser.close()
    except etree.XMLSyntaxError:
        pass
    else:
        return None
    root, still_open = None, []
    for event, element in parser.read_events():
        if event == "start":
            root = element if root is None else root
            still_open.append(element)
        else:
            still_open.pop()
    if root is None or len(still_open) < 2:  # cut in the root's own start tag or text: nothing sure to read
        return None
    innermost = still_open[-1]
    innermost.getparent().remove(innermost)
    return _without_entity_declarations(root), etree.QName(innermost).localname


def _declared_encoding(data: bytes) -> str:
    """The encoding the XML declaration names, lower case; UTF-8 where it names none."""
    found = _DECLARED_ENCODING.match(data[:200])
    return found.group(1).decode("ascii").lower() if found else "utf-8"


def _undeclared_prefixes(data: bytes) -> list[str]:
    """The namespace prefixes ``data`` uses without declaring them, as libxml2 reports them."""
    parser = _parser()
    with contextlib.suppress(etree.XMLSyntaxError):
        etree.fromstring(data, parser)
    found = (_UNDECLARED.match(e.message) for e in parser.error_log)
    return list(dict.fromkeys(m.group(1) for m in found if m))


def _declare(data: bytes, prefixes: list[str]) -> bytes:
    """``data`` with ``prefixes`` declared on its root element."""
    position = 0
    while item := _PROLOG_ITEM.match(data, position):
        position = item.end()
    tag = _START_TAG.match(data, position)
    if tag is None:
        return data
    declarations = "".join(
        f' xmlns:{p}="{KNOWN_PREFIXES.get(p, UNDECLARED_NS + p)}"'
        for p in prefixes
        if re.fullmatch(r"[\w.-]+", p)
    )
    return data[: tag.end()] + declarations.encode("utf-8") + data[tag.end() :]


def _drop_entity_references(root: etree._Element) -> list[str]:
    """Replace each reference to an undefined entity by the HTML character of its name, or by nothing: a
    reference left in the tree would break every later parse of it. The names replaced, in order."""
    names = []
    for reference in list(root.iter(etree.Entity)):
        names.append(f"&{reference.name};")
        text = html.entities.html5.get(f"{reference.name};", "") + (reference.tail or "")
        previous, parent = reference.getprevious(), reference.getparent()
        if previous is not None:
            previous.tail = (previous.tail or "") + text
        else:
            parent.text = (parent.text or "") + text
        parent.remove(reference)
    return list(dict.fromkeys(names))
