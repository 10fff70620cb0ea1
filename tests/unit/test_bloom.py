import logging
import math

import pytest

from geoweb.dedup import BloomFilter


def test_sizing_follows_the_formula():
    bloom = BloomFilter(1_000_000, 1e-4)
    formula = math.ceil(-1_000_000 * math.log(1e-4) / math.log(2) ** 2)
    assert formula <= bloom.num_bits < formula + 8  # rounded up to whole bytes
    assert bloom.num_hashes == 13
    assert 2.3 < bloom.bytes_per_item < 2.5


def test_add_is_check_and_set_with_no_false_negatives():
    bloom = BloomFilter(10_000, 1e-4)
    urls = [f"http://example.com/page/{i}" for i in range(10_000)]
    new = sum(bloom.add(u) for u in urls)
    assert new >= 9_990  # a few false positives are the price of the structure
    assert not any(bloom.add(u) for u in urls)  # never a false negative
    assert all(u in bloom for u in urls)
    assert bloom.count == new


def test_measured_false_positive_rate_near_target():
    n = 20_000
    bloom = BloomFilter(n, 1e-3)
    for i in range(n):
        bloom.add(f"http://a.example/{i}")
    false_positives = sum(f"http://b.example/{i}" in bloom for i in range(n * 5))
    assert false_positives / (n * 5) < 3e-3
    assert bloom.expected_error_rate() == pytest.approx(1e-3, rel=0.2)


@pytest.mark.parametrize(("n", "rate"), [(0, 1e-4), (10, 0), (10, 1)])
def test_rejects_impossible_sizes(n, rate):
    with pytest.raises(ValueError):
        BloomFilter(n, rate)


def test_a_filter_past_its_size_says_so_once(caplog):
    bloom = BloomFilter(100, 1e-4)
    with caplog.at_level(logging.WARNING, "geoweb.dedup"):
        for i in range(300):
            bloom.add(f"http://h/{i}")
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1
    assert "past the 100 URLs it was sized for (expected_urls)" in warned[0] and "towards 2e-02" in warned[0]
