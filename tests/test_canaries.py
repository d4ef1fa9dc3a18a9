"""Canary formats, sampling, enumeration, and the insertion/provenance round trip."""

from __future__ import annotations

import collections

import pytest

from privaudit.canaries import CanaryFormat, Provenance, insert_canaries, remove_canaries


def test_space_size_and_enumeration_agree():
    fmt = CanaryFormat("id {letters:1}-{digits:2} says {words:1}", vocabulary=("yes", "no", "maybe"))
    assert fmt.space_size == 26 * 100 * 3
    texts = [canary.text for canary in fmt.enumerate()]
    assert len(texts) == len(set(texts)) == fmt.space_size
    assert texts[0] == "id a-00 says yes" and texts[-1] == "id z-99 says maybe"
    assert fmt.prefix == "id "


def test_words_and_chars_holes_and_fill_round_trip():
    fmt = CanaryFormat("the code is {chars:3} then {words:2}", alphabet=("x", "y"), vocabulary=("red", "blue", "green"))
    canary = fmt.sample(seed=3)
    assert fmt.fill(canary.secret) == canary.text
    assert canary.text.startswith("the code is ") and len(canary.secret) == 5
    assert fmt.space_size == 2**3 * 3**2


def test_sampling_is_reproducible_and_secure_sampling_is_valid():
    fmt = CanaryFormat("my pin is {digits:6}")
    assert fmt.sample(seed=1) == fmt.sample(seed=1)
    secure = fmt.sample_many(200, secure=True)
    assert len({canary.secret for canary in secure}) == 200
    digits = collections.Counter(d for canary in secure for d in canary.secret)
    assert set(digits) == set(range(10))  # 1200 draws leave no digit unseen (P < 1e-50)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(template="no holes here"), "at least one hole"),
        (dict(template="pin {hex:4}"), "hole type must be one of"),
        (dict(template="pin {chars:4}"), "`alphabet`"),
        (dict(template="pin {words:4}"), "`vocabulary`"),
    ],
)
def test_malformed_formats_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CanaryFormat(**kwargs)


def test_a_space_too_large_is_not_enumerated():
    with pytest.raises(ValueError, match="too large to enumerate"):
        next(CanaryFormat("card {digits:16}").enumerate())


def test_insertion_and_provenance_round_trip():
    corpus = [f"line {i}" for i in range(50)]
    fmt = CanaryFormat("my pin is {digits:6}")
    inserted = insert_canaries(corpus, fmt, schedule=(1, 2, 4, 8), canaries_per_count=2, seed=7)
    provenance = inserted.provenance
    assert len(inserted.lines) == 50 + 2 * (1 + 2 + 4 + 8)
    counts = collections.Counter(inserted.lines)
    for record in provenance.canaries:
        assert counts[record["text"]] == record["repetitions"] == len(record["lines"])
        assert all(inserted.lines[position] == record["text"] for position in record["lines"])
    assert sorted(r["repetitions"] for r in provenance.canaries) == [1, 1, 2, 2, 4, 4, 8, 8]
    restored = Provenance.from_json(provenance.to_json())
    assert restored.canaries == provenance.canaries
    assert remove_canaries(inserted.lines, restored) == corpus
    again = insert_canaries(corpus, fmt, schedule=(1, 2, 4, 8), canaries_per_count=2, seed=7)
    assert again.lines == inserted.lines  # reproducible from the seed


@pytest.mark.parametrize(
    ("corpus", "schedule", "match"),
    [([], (1,), "`corpus_lines` must not be empty"), (["a"], (1, 0), "`schedule`"), (["a"], (-2,), "`schedule`")],
)
def test_bad_insertions_are_refused(corpus, schedule, match):
    with pytest.raises(ValueError, match=match):
        insert_canaries(corpus, CanaryFormat("pin {digits:4}"), schedule=schedule)


def test_removal_checks_the_lines():
    inserted = insert_canaries(["a", "b"], CanaryFormat("pin {digits:4}"), schedule=(1,), seed=0)
    with pytest.raises(ValueError, match="do not match the provenance"):
        remove_canaries(["a", "b", "c"], inserted.provenance)


@pytest.mark.parametrize("template", ["{digits:5000}", "{digits:100000000}", "{digits:" + "9" * 4000 + "}", "x {words:200} {digits:100}"])
def test_oversized_formats_are_refused_before_any_allocation(template):
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"`template` holes must total at most 256"):
        CanaryFormat(template, vocabulary=("a", "b"))
    assert time.perf_counter() - start < 0.5


def test_a_space_beyond_the_bit_limit_is_refused():
    vocabulary = tuple(f"w{i}" for i in range(2**20))  # 20 bits a word
    CanaryFormat("{words:51}", vocabulary=vocabulary)  # 1,020 bits
    with pytest.raises(ValueError, match=r"at most 2\*\*1024 canaries"):
        CanaryFormat("{words:52}", vocabulary=vocabulary)  # 1,040 bits


@pytest.mark.parametrize("schedule", [(1.5, 2), ("2",), (True,), (2, None), 3, ()])
def test_non_integer_schedules_are_refused(schedule):
    # issue 19: [1.5, 2] inserted the canary once while the config recorded 1.5
    with pytest.raises(ValueError, match="`schedule`"):
        insert_canaries(["a"], CanaryFormat("pin {digits:4}"), schedule=schedule)
    assert [c["repetitions"] for c in insert_canaries(["a"], CanaryFormat("pin {digits:4}"), schedule=(1, 2.0)).provenance.canaries] == [1, 2]
