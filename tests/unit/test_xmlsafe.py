import pytest
from lxml import etree

from geoweb.errors import MalformedContent, UnsafeContent
from geoweb.xmlsafe import looks_like_xml, parse_xml, sniff, strip_bom

LATIN1 = '<?xml version="1.0" encoding="ISO-8859-1"?><r>Zürich</r>'.encode("iso-8859-1")


def test_parses_a_document():
    root = parse_xml(b'<?xml version="1.0"?><a xmlns="urn:x"><b>1</b></a>')
    assert root.tag == "{urn:x}a"
    assert root[0].text == "1"


@pytest.mark.parametrize(
    "body",
    [
        b"\xef\xbb\xbf" + LATIN1,  # UTF-8 mark before text declared otherwise
        b"\xff\xfe" + LATIN1,  # stray UTF-16 marks before single-byte text, as some servers send
        b"\xfe\xff" + LATIN1,
        b"\r\n  " + LATIN1,  # whitespace before the declaration
    ],
)
def test_stray_marks_and_leading_whitespace_are_dropped(body):
    assert parse_xml(body).text == "Zürich"


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be"])
def test_true_utf16_documents_keep_their_encoding(codec):
    body = '<?xml version="1.0" encoding="UTF-16"?><r>Zürich</r>'.encode(codec)
    assert parse_xml(body).text == "Zürich"


def test_strip_bom_leaves_utf16_text_intact():
    body = "<r/>".encode("utf-16")
    assert strip_bom(body) == body


def test_doctype_without_entities_is_accepted_and_its_dtd_not_loaded():
    # The shape of MapServer's WMS 1.1.1 answers: an external DTD plus an internal ELEMENT declaration.
    body = (
        b'<?xml version="1.0"?><!DOCTYPE WMT_MS_Capabilities SYSTEM "http://127.0.0.1:1/WMS_MS_Capabilities.dtd"'
        b' [ <!ELEMENT VendorSpecificCapabilities EMPTY> ]><WMT_MS_Capabilities version="1.1.1"/>'
    )
    assert parse_xml(body).get("version") == "1.1.1"


def test_an_external_dtd_is_not_loaded_so_its_entities_stay_unexpanded(tmp_path):
    dtd = tmp_path / "caps.dtd"
    dtd.write_text('<!ENTITY leak "SECRET">')
    root = parse_xml(f'<!DOCTYPE r SYSTEM "{dtd.as_uri()}"><r>&leak;</r>'.encode())
    assert b"SECRET" not in etree.tostring(root)


@pytest.mark.parametrize(
    "doctype",
    [
        b'<!DOCTYPE r [<!ENTITY name "harmless">]>',
        b'<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
        b'<!DOCTYPE r [<!ENTITY % p SYSTEM "file:///etc/passwd">]>',
    ],
)
def test_any_entity_declaration_is_rejected(doctype):
    with pytest.raises(UnsafeContent, match="DOCTYPE declares entities"):
        parse_xml(b'<?xml version="1.0"?>' + doctype + b"<r>text</r>")


def test_size_cap():
    body = b"<r>" + b"x" * 93 + b"</r>"
    assert parse_xml(body, max_bytes=100).tag == "r"
    with pytest.raises(UnsafeContent, match="over the 99-byte cap"):
        parse_xml(body, max_bytes=99)


@pytest.mark.parametrize("body", [b"", b"   ", b"<a><b></a>", b"not xml at all", b"<a>&undefined;</a>"])
def test_broken_documents_are_malformed(body):
    with pytest.raises(MalformedContent):
        parse_xml(body)


def test_excessive_depth_is_unsafe():
    with pytest.raises(UnsafeContent, match="parser limits"):
        parse_xml(b"<a>" * 10_000 + b"</a>" * 10_000)


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'<?xml version="1.0"?><r/>', True),
        (b"\xef\xbb\xbf<?xml version='1.0'?>", True),
        (b"\xff\xfe<?xml version='1.0'?>", True),
        ('<?xml version="1.0"?>'.encode("utf-16"), True),
        ('<?xml version="1.0"?>'.encode("utf-16-be"), True),
        (b"\n\n<?xml version='1.0'?>", True),
        (b"<!DOCTYPE html><html>", False),
        (b"<html><body>", False),
        (b"PK\x03\x04", False),
        (b"", False),
    ],
)
def test_looks_like_xml(head, expected):
    assert looks_like_xml(head) is expected


def test_a_root_none_of_those_expected_is_refused_from_its_start_tag():
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>'
        b"<rss>" + b"<item>&lol2;</item>" * 100_000 + b"</rss>"
    )
    assert sniff(laughs) == (None, "rss")
    with pytest.raises(MalformedContent, match="root element 'rss' is none of schema, ExceptionReport"):
        parse_xml(laughs, roots=("schema", "ExceptionReport"))
    root = parse_xml(b'<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"/>', roots=("schema",))
    assert root.tag == "{http://www.w3.org/2001/XMLSchema}schema"
