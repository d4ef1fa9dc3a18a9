"""Extraction: exact optimum against brute force, a planted secret far below |R| queries, and the baselines."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from privaudit.extraction import beam_search, brute_force_search, greedy_search, shortest_path_search


def random_model(seed: int, size: int):
    """A fixed random next-symbol distribution for every prefix (seeded by the prefix)."""

    def scorer(prefixes, slot):
        rows = []
        for prefix in prefixes:
            rng = np.random.default_rng([seed, slot, *prefix])
            rows.append(special.log_softmax(rng.normal(0.0, 2.0, size)))
        return np.array(rows)

    return scorer


def planted_model(secret, size: int, confidence: float = 0.9):
    """Puts ``confidence`` on the secret's next symbol while the prefix matches it."""

    def scorer(prefixes, slot):
        out = np.full((len(prefixes), size), np.log((1 - confidence) / (size - 1)))
        for row, prefix in enumerate(prefixes):
            if tuple(prefix) == tuple(secret[:slot]):
                out[row, :] = np.log((1 - confidence) / (size - 1))
                out[row, secret[slot]] = np.log(confidence)
            else:
                out[row, :] = np.log(1.0 / size)
        return out

    return scorer


@pytest.mark.parametrize("seed", range(5))
def test_unbatched_dijkstra_finds_the_brute_force_optimum(seed):
    scorer, sizes = random_model(seed, 6), [6, 6, 6, 6]
    exact = brute_force_search(scorer, sizes)
    found = shortest_path_search(scorer, sizes, batch_size=1)
    assert found.secret == exact.secret
    assert found.log_perplexity == pytest.approx(exact.log_perplexity)
    assert exact.queries == 6**4


@pytest.mark.parametrize("seed", range(5))
def test_batched_search_with_the_correction_still_finds_the_optimum(seed):
    scorer, sizes = random_model(seed, 6), [6, 6, 6, 6]
    exact = brute_force_search(scorer, sizes)
    found = shortest_path_search(scorer, sizes, batch_size=16)
    assert found.log_perplexity >= exact.log_perplexity - 1e-9  # never better than the optimum
    assert found.secret == exact.secret


def test_planted_six_digit_secret_is_extracted_with_far_fewer_queries():
    secret = (8, 6, 7, 5, 3, 0)
    scorer = planted_model(secret, 10)
    result = shortest_path_search(scorer, [10] * 6, batch_size=32)
    assert result.secret == secret
    assert result.queries * 100 <= 10**6  # at least 100× fewer than brute force over |R| = 10⁶
    assert result.log_perplexity == pytest.approx(-6 * np.log2(0.9))


def test_greedy_can_be_trapped_where_shortest_path_is_not():
    # slot 0: symbol 0 looks best (0.6) but every continuation is flat; symbol 1 (0.4) leads to a sure path
    def scorer(prefixes, slot):
        rows = []
        for prefix in prefixes:
            if slot == 0:
                rows.append(np.log([0.6, 0.4]))
            elif prefix[0] == 1:
                rows.append(np.log([0.99, 0.01]))
            else:
                rows.append(np.log([0.5, 0.5]))
        return np.array(rows)

    sizes = [2, 2, 2]
    assert greedy_search(scorer, sizes).secret[0] == 0
    best = shortest_path_search(scorer, sizes, batch_size=1)
    assert best.secret == (1, 0, 0) == brute_force_search(scorer, sizes).secret
    assert beam_search(scorer, sizes, width=2).secret == (1, 0, 0)


def test_full_width_beam_is_brute_force():
    scorer, sizes = random_model(9, 4), [4, 4, 4]
    assert beam_search(scorer, sizes, width=64).secret == brute_force_search(scorer, sizes).secret


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: shortest_path_search(random_model(0, 2), []), "`slot_sizes`"),
        (lambda: shortest_path_search(random_model(0, 2), [2], batch_size=0), "`batch_size`"),
        (lambda: beam_search(random_model(0, 2), [2], width=0), "`width`"),
        (lambda: brute_force_search(random_model(0, 10), [10] * 8), "too large to enumerate"),
        (lambda: shortest_path_search(random_model(0, 3), [2]), "scorer returned shape"),
    ],
)
def test_bad_input_is_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()
