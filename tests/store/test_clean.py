import math

from geoweb.store.clean import LONG_TEXT, MAX_URL_BYTES, MAX_WORDS, SHORT_TEXT, WORD, Cleaner, storable_url


def test_clean_text_passes_unchanged_without_notes():
    clean = Cleaner()
    assert clean.text("Rivers of Taiwan — 河川", "title") == "Rivers of Taiwan — 河川"
    assert clean.text(None, "title") is None
    assert clean.words(["hydrology", "河川"], "keywords") == ["hydrology", "河川"]
    assert (
        clean.json({"layers": [1, 2.5, None, True, "x"]}, "extra") == '{"layers": [1, 2.5, null, true, "x"]}'
    )
    assert not clean.changes


def test_nul_characters_and_lone_surrogates_are_removed_and_noted():
    clean = Cleaner()
    assert clean.text("Ri\x00vers\x00", "title") == "Rivers"
    assert clean.text("bad \ud800 half", "abstract") == "bad ? half"
    assert clean.summary() == "title: NUL characters removed; abstract: unencodable characters replaced"


def test_enormous_text_is_cut_and_noted_once_per_field():
    clean = Cleaner()
    assert len(clean.text("x" * 10_000_000, "title")) == SHORT_TEXT
    assert len(clean.text("y" * 10_000_000, "abstract", LONG_TEXT)) == LONG_TEXT
    words = clean.words(["k" * 1000] * (MAX_WORDS * 3), "keywords")
    assert len(words) == MAX_WORDS
    assert {len(w) for w in words} == {WORD}
    assert clean.changes[f"keywords: cut to {WORD} characters"] == MAX_WORDS
    assert f"keywords: only the first {MAX_WORDS} of {MAX_WORDS * 3} kept" in clean.summary()


def test_json_survives_nan_nul_keys_and_odd_types():
    clean = Cleaner()
    text = clean.json({"a\x00b": math.nan, "inf": [math.inf], 3: b"raw", "set": {1}}, "extra")
    assert text == '{"ab": null, "inf": [null], "3": "b\'raw\'", "set": "{1}"}'
    assert clean.changes["extra: non-finite number stored as null"] == 2
    assert clean.changes["extra key: NUL characters removed"] == 1


def test_json_too_deep_to_store_becomes_an_empty_object():
    deep: dict = {}
    node = deep
    for _ in range(100_000):
        node["x"] = {}
        node = node["x"]
    clean = Cleaner()
    assert clean.json(deep, "extra") == "{}"
    assert clean.summary() == "extra: not storable as JSON, dropped"


def test_urls_are_refused_rather_than_altered():
    assert storable_url("http://a.example/wms?map=x") == "http://a.example/wms?map=x"
    assert storable_url("http://a.example/" + "a" * MAX_URL_BYTES) is None
    assert storable_url("http://a.example/\x00") is None
    assert storable_url("http://a.example/\ud800") is None
    assert storable_url("http://[::1/broken") is None
    assert storable_url("") is None
    assert storable_url(None) is None
