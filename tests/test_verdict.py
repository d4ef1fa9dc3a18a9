"""Claims and verdicts (like for like), and the ceiling of a bound against an independent perfect attack."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privaudit.stats.bounds import epsilon_lower_bound
from privaudit.stats.ceiling import at_ceiling, ceiling_note, ceiling_of, lower_bound_ceiling, one_run_ceiling, one_run_record_ceiling
from privaudit.stats.one_run import epsilon_one_run, epsilon_one_run_sweep
from privaudit.stats.one_run_combined import one_run_lower_bound
from privaudit.stats.one_run_group import per_record_one_run_lower_bound
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


def _perfect_with(m: int, num_in: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct scores, every one of ``num_in`` members (at random places) above every non-member."""
    rng = np.random.default_rng(seed)
    member = np.zeros(m, dtype=bool)
    member[rng.choice(m, num_in, replace=False)] = True
    return member + 0.5 * rng.permutation(m) / m, member


@pytest.mark.parametrize(("m", "num_in"), [(170, 85), (170, 84), (170, 20), (170, 150), (60, 2), (500, 240)])
@pytest.mark.parametrize("methods", [("steinke",), ("steinke", "fdp")])
def test_exact_one_run_ceiling_is_the_bound_on_a_perfect_attacks_scores(m: int, num_in: int, methods: tuple[str, ...]) -> None:
    # brute force: the bound itself on scores that separate the members perfectly, through its own guess rule
    scores, member = _perfect_with(m, num_in, seed=m + num_in)
    perfect = one_run_lower_bound(scores, member, delta=1e-5, methods=methods)
    exact = one_run_ceiling(m, num_in=num_in, delta=1e-5, methods=methods)
    assert exact == perfect.epsilon
    assert ceiling_of(perfect) == perfect.epsilon  # the result records its member count
    # every guess counted right is the largest over the coins; a lopsided draw caps the largest guess count's right guesses
    assert exact <= one_run_ceiling(m, delta=1e-5, methods=methods)
    if num_in != m // 2:
        assert exact < one_run_ceiling(m, delta=1e-5, methods=methods)


def test_exact_one_run_ceiling_counts_the_right_guesses_by_hand() -> None:
    # m = 100 with 10 members, guess counts 40 and 100 ("in" on half of each): 10 + 20 and 10 + 50 right, one test each at 0.05 / 2
    m, num_in = 100, 10
    by_hand = max(epsilon_one_run(m, r, v, delta=1e-5, confidence=1 - 0.05 / 2).epsilon for r, v in [(40, 30), (100, 60)])
    assert one_run_ceiling(m, num_in=num_in, delta=1e-5, methods=("steinke",), num_guesses=[40, 100]) == pytest.approx(by_hand, rel=1e-12)


@pytest.mark.parametrize("copies", [1, 3])
def test_exact_record_ceiling_is_the_record_bound_on_a_perfect_attacks_scores(copies: int) -> None:
    scores, member = _perfect_with(200, 70, seed=copies)
    perfect = per_record_one_run_lower_bound(scores, member, copies=copies, delta=1e-5, methods=("steinke",))
    assert one_run_record_ceiling(200, num_in=70, copies=copies, delta=1e-5) == pytest.approx(perfect.epsilon, rel=1e-12)


def test_one_run_ceiling_refuses_a_member_count_outside_the_canaries() -> None:
    with pytest.raises(ValueError, match="`num_in` must be an integer in \\[0, 10\\], got 11"):
        one_run_ceiling(10, num_in=11, delta=1e-5)


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


def test_a_pure_bound_cannot_refute_a_claim_with_delta_and_is_held_at_delta_zero() -> None:
    """A pure ε lower bound says nothing about (ε, δ > 0): the scores audit gives no verdict then; against a pure claim it compares at δ = 0."""
    from privaudit.audits.scores.audit import audit_scores

    rng = np.random.default_rng(7)
    in_scores, out_scores = 3.0 + rng.standard_normal(400), rng.standard_normal(400)
    with_delta = audit_scores(in_scores, out_scores, delta=1e-5, method="pure", claimed_epsilon=0.5, claimed_delta=1e-5, quantity="end-to-end").result
    assert with_delta.bound.epsilon > 0.5  # it would have flagged the (0.5, 1e-5) claim had δ been read as the bound's
    assert with_delta.claim_verdict is None and any("pure ε (δ = 0)" in w for w in with_delta.sanity_warnings)
    pure_claim = audit_scores(in_scores, out_scores, delta=1e-5, method="pure", claimed_epsilon=0.5, claimed_delta=0.0, quantity="end-to-end").result
    assert pure_claim.claim_verdict.bound_delta == 0.0 and pure_claim.claim_verdict.flagged
    eps_delta = audit_scores(in_scores, out_scores, delta=1e-5, method="eps-delta", claimed_epsilon=0.5, claimed_delta=1e-5, quantity="end-to-end").result
    assert eps_delta.claim_verdict.bound_delta == 1e-5
