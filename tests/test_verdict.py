"""Claims and verdicts (like for like), and the ceiling of a bound against an independent perfect attack."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privaudit.stats.bounds import epsilon_lower_bound
from privaudit.stats.ceiling import at_ceiling, ceiling_note, ceiling_of, lower_bound_ceiling, one_run_ceiling
from privaudit.stats.one_run import epsilon_one_run_sweep
from privaudit.stats.one_run_combined import one_run_lower_bound
from privaudit.stats.thresholds import Bonferroni
from privaudit.stats.verdict import QUANTITIES, Claim, Verdict, compare


@pytest.mark.parametrize(
    ("epsilon", "delta", "message"),
    [
        (-1, 1e-5, "`claimed_epsilon` must be in (0, inf), got -1"),
        (0.0, 1e-5, "claimed_epsilon"),
        (math.inf, 1e-5, "claimed_epsilon"),
        (1.0, 1.0, "`claimed_delta` must be in [0, 1), got 1"),
        (1.0, math.nan, "claimed_delta"),
    ],
)
def test_claim_refuses_out_of_range(epsilon: float, delta: float, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        Claim(epsilon=epsilon, delta=delta)


def test_claim_refuses_unknown_quantity() -> None:
    with pytest.raises(ValueError, match="quantity"):
        Claim(epsilon=1.0, delta=0.0, quantity="per-epoch")


@pytest.mark.parametrize("bound", [0.0, 3.999, 4.0, 4.001, 55.0])
def test_verdict_flags_exactly_above_the_claim(bound: float) -> None:
    verdict = compare(bound, bound_delta=1e-5, quantity="end-to-end", claim=Claim(4.0, 1e-5))
    assert verdict.flagged == (bound > 4.0)
    assert verdict.ratio == pytest.approx(bound / 4.0)
    assert Verdict.from_dict(verdict.to_dict()) == verdict


@pytest.mark.parametrize("bound_quantity", QUANTITIES)
@pytest.mark.parametrize("claim_quantity", QUANTITIES)
def test_unlike_quantities_are_never_compared(bound_quantity: str, claim_quantity: str) -> None:
    claim = Claim(4.0, 1e-5, quantity=claim_quantity)
    if bound_quantity == claim_quantity:
        assert compare(1.0, bound_delta=1e-5, quantity=bound_quantity, claim=claim).quantity == claim_quantity
    else:
        with pytest.raises(ValueError, match="cannot be compared"):
            compare(1.0, bound_delta=1e-5, quantity=bound_quantity, claim=claim)


def test_bound_delta_below_the_claims_is_refused_and_above_is_allowed() -> None:
    claim = Claim(1.0, 1e-5)
    with pytest.raises(ValueError, match="below the claim's"):
        compare(2.0, bound_delta=1e-6, quantity="end-to-end", claim=claim)
    assert compare(2.0, bound_delta=1e-3, quantity="end-to-end", claim=claim).flagged


def _perfect(m: int) -> tuple[np.ndarray, np.ndarray]:
    member = np.zeros(m, dtype=bool)
    member[: m // 2] = True
    scores = member + np.linspace(0.0, 0.5, m)  # distinct scores, every member above every non-member
    return scores, member


@pytest.mark.parametrize("m", [170, 500])
def test_one_run_ceiling_is_the_perfect_attacks_bound(m: int) -> None:
    scores, member = _perfect(m)
    perfect = one_run_lower_bound(scores, member, delta=1e-5)
    assert one_run_ceiling(m, delta=1e-5) == perfect.epsilon
    assert ceiling_of(perfect) == perfect.epsilon
    sweep = epsilon_one_run_sweep(scores, member, delta=1e-5)
    assert ceiling_of(sweep) == sweep.epsilon == one_run_ceiling(m, delta=1e-5, methods=("steinke",))


@pytest.mark.parametrize(("method", "delta"), [("gdp", 1e-5), ("eps-delta", 1e-5), ("pure", 0.0)])
def test_lower_bound_ceiling_is_the_perfect_attacks_bound(method: str, delta: float) -> None:
    rng = np.random.default_rng(3)
    in_scores, out_scores = 10.0 + rng.random(300), rng.random(200)
    # Bonferroni over ranks: the rank-1 threshold separates a perfect attack's scores with no error
    perfect = epsilon_lower_bound(in_scores, out_scores, delta=max(delta, 1e-5), method=method, threshold=Bonferroni(over="ranks"), seed=0)
    assert perfect.false_positives == perfect.false_negatives == 0
    assert ceiling_of(perfect, method=method) == pytest.approx(perfect.epsilon, rel=1e-12)
    assert lower_bound_ceiling(300, 200, delta=max(delta, 1e-5), method=method, num_tests=perfect.num_tests, confidence=perfect.confidence) == pytest.approx(
        perfect.epsilon, rel=1e-12
    )


def test_a_pure_bound_records_its_method_and_gets_the_pure_ceiling_from_it() -> None:
    # a perfect attack's pure bound is its own ceiling; read from the result alone, an "eps-delta" record would put the ceiling at δ = 1e-5, below it
    rng = np.random.default_rng(5)
    perfect = epsilon_lower_bound(10.0 + rng.random(300), rng.random(200), delta=1e-5, method="pure", threshold=Bonferroni(over="ranks"), seed=0)
    assert perfect.method == "pure"
    assert ceiling_of(perfect) == pytest.approx(perfect.epsilon, rel=1e-12)
    assert ceiling_of(perfect, method="eps-delta") < perfect.epsilon


def test_at_ceiling_is_exactly_within_ten_percent() -> None:
    ceiling = one_run_ceiling(170, delta=1e-5)
    assert at_ceiling(0.9 * ceiling + 1e-9, ceiling) and not at_ceiling(0.9 * ceiling - 1e-9, ceiling)
    assert ceiling_note(0.95 * ceiling, ceiling, raise_with="more canaries") is not None
    assert ceiling_note(0.5 * ceiling, ceiling, raise_with="more canaries") is None
