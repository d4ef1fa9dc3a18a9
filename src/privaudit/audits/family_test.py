"""The claim's own family in the one-run audits whose canaries share one model: ``--family NAME --family-claim VALUE``.

Without a family these audits report the generic one-run bound (Steinke et
al.'s test), proven for any (ε, δ)-DP training. When the user names the
mechanism (``family`` and ``family_claim``, with ``family_sampling_rate``
and ``family_steps`` for the subsampled ones), the headline is the
order-statistics test of Xiang et al. against that family
(:func:`~privaudit.stats.one_run_combined.one_run_lower_bound` with
``null``), on the same canaries' scores; it names the null it refuted and
its ceiling, and the generic bound stays beside it.

Validity, said in every result: the canaries share one model, so the
order-statistics test is not the proven independent-canary case; its
validity rests on Xiang et al.'s transmission dominance (their
Definition 8), not proven here (docs/one-run.md, "Exactly when it is
valid"). The generic bound is proven.

Like for like: the family bound is compared only with the claim in its
family (ε(δ) of the null at the claimed parameter, by the same code as the
bound, so a flag means the refuted parameter is beyond the claimed one); a
generic ``claimed_epsilon`` is compared with the generic bound.

>>> from types import SimpleNamespace as Config
>>> config = Config(family="gdp", family_claim=1.0, family_sampling_rate=None, family_steps=None, delta=1e-5, claimed_epsilon=None, claimed_delta=None)
>>> check_family_fields(config)
>>> plan = family_plan(config)
>>> plan.null.name, round(plan.claim_epsilon, 3), plan.describe
('gdp', 4.377, 'mu-GDP with mu <= 1')
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._core.validation import check_count
from ..stats.ceiling import Ceiling, make_ceiling
from ..stats.families import check_null_request, null_family
from ..stats.one_run_combined import OneRunLowerBound, one_run_lower_bound
from ..stats.order_statistics import claim_leak
from ..stats.verdict import Claim, Verdict, compare

__all__ = [
    "FAMILY_FIELDS",
    "VALIDITY",
    "FamilyPlan",
    "FamilyTest",
    "check_family_fields",
    "family_headline",
    "family_plan",
    "family_test",
    "inert_family_fields",
]

#: The config keys of the family test (flags ``--family``, ``--family-claim``, ``--family-sampling-rate``, ``--family-steps``).
FAMILY_FIELDS = ("family", "family_claim", "family_sampling_rate", "family_steps")

VALIDITY = (
    "the canaries share one model, so the order-statistics bound is valid if Xiang et al.'s transmission dominance (their Definition 8) holds "
    "for this training, which is not proven here (docs/one-run.md); the generic bound beside it (Steinke et al.) is proven for any (ε, δ)-DP training"
)

_SAMPLED = ("subsampled-gaussian", "dpsgd")


def inert_family_fields(config: Any) -> frozenset[str]:
    """The family keys a run without a family leaves out of results.json (its records stay as they were before the keys)."""
    return frozenset(FAMILY_FIELDS) if getattr(config, "family", None) is None else frozenset()


def check_family_fields(config: Any, *, refused: str | None = None) -> None:
    """Check the family keys of ``config`` (and ``delta``, ``claimed_epsilon``, ``claimed_delta``), cheaply, before any work.

    ``refused`` is why this config cannot take a family (say, the wrong
    mode), None when it can. Messages name the config keys, which the
    command line reads as its flags.

    >>> from types import SimpleNamespace as Config
    >>> check_family_fields(Config(family="dpsgd", family_claim=1.0, family_sampling_rate=0.1, family_steps=None, delta=1e-5, claimed_epsilon=None, claimed_delta=None))
    Traceback (most recent call last):
    ...
    ValueError: `family_steps` must be given with `family` 'dpsgd': the number of steps T, an integer >= 1
    """
    family, claim = config.family, config.family_claim
    check_null_request(family, claim, claim_required=True)
    if family is None:
        for key in FAMILY_FIELDS[2:]:
            if getattr(config, key) is not None:
                raise ValueError(f"`{key}` needs `family`")
        return
    if refused is not None:
        raise ValueError(f"`family` {family!r} {refused}")
    rate, steps = config.family_sampling_rate, config.family_steps
    if family in _SAMPLED:
        if rate is None:
            raise ValueError(f"`family_sampling_rate` must be given with `family` {family!r}: each canary's Poisson sampling rate q, in (0, 1]")
        _check_rate(rate)
    elif rate is not None:
        raise ValueError(f"`family_sampling_rate` applies only to `family` subsampled-gaussian or dpsgd, got family {family!r}")
    if family == "dpsgd":
        if steps is None:
            raise ValueError(f"`family_steps` must be given with `family` {family!r}: the number of steps T, an integer >= 1")
        check_count(steps, "family_steps", minimum=1)
    elif steps is not None:
        raise ValueError(f"`family_steps` applies only to `family` dpsgd, got family {family!r}")
    generic_claim = config.claimed_epsilon
    same_delta = config.claimed_delta is None or config.claimed_delta == config.delta
    if family == "generic" and generic_claim is not None and same_delta and generic_claim != claim:
        raise ValueError(
            f"`family_claim` {claim:g} and `claimed_epsilon` {generic_claim:g} are two ε claims at one δ for family 'generic': give one ε (or equal values)"
        )


def _check_rate(rate: Any) -> None:
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 < rate <= 1.0:
        raise ValueError(f"`family_sampling_rate` must be in (0, 1], got {rate!r}")


@dataclasses.dataclass(frozen=True)
class FamilyPlan:
    """The null built from the config, the claimed parameter, and the claim in that family: ε(δ) of the null at it."""

    null: Any
    claim: float
    claim_epsilon: float

    @property
    def describe(self) -> str:
        """The claim in words: ``mu-GDP with mu <= 1``."""
        return str(self.null.describe(claim_leak(self.null, self.claim)))


def family_plan(config: Any) -> FamilyPlan | None:
    """The family test's plan, None without a family; built before any training (a claim whose ε is 0 at δ is refused here)."""
    if config.family is None:
        return None
    null: Any = null_family(config.family, delta=config.delta, sampling_prob=config.family_sampling_rate or 1.0, num_steps=config.family_steps or 1)
    epsilon = float(null.epsilon(claim_leak(null, float(config.family_claim))))
    if not epsilon > 0.0:
        raise ValueError(
            f"`family_claim` {config.family_claim:g} states ε = 0 at δ = {config.delta:g} in family {config.family!r}: no bound can be held against it"
        )
    return FamilyPlan(null, float(config.family_claim), epsilon)


@dataclasses.dataclass(frozen=True)
class FamilyTest:
    """The order-statistics bound against the claim's family (the headline), beside the generic bound, with the validity condition.

    ``bound`` is :func:`~privaudit.stats.one_run_combined.one_run_lower_bound`
    with ``null`` and ``claim`` on ``scores`` and ``member`` (recorded, one
    per canary); ``refuted`` the null it refuted; ``ceiling`` the bound had
    every released guess been right. ``verdict`` compares the bound with the
    claim in its family (``claim_epsilon``: ε(δ) of the null at ``claim``);
    ``generic_epsilon`` and ``generic_verdict`` are the generic bound and the
    user's generic claim held against it. ``validity`` says on what the
    family bound rests.
    """

    family: str
    parameter_name: str
    claim: float
    claim_epsilon: float
    sampling_rate: float | None
    steps: int | None
    bound: OneRunLowerBound
    refuted: str
    ceiling: float | None
    verdict: Verdict
    generic_epsilon: float
    generic_verdict: Verdict | None
    validity: str
    scores: tuple[float, ...]
    member: tuple[bool, ...]

    @property
    def epsilon(self) -> float:
        return self.bound.epsilon


def family_test(
    plan: FamilyPlan, config: Any, scores: Any, member: Any, *, generic: OneRunLowerBound, generic_verdict: Verdict | None, quantity: str
) -> FamilyTest:
    """The family test of ``scores`` (higher = included) and ``member``, with the generic bound ``generic`` and its verdict beside it."""
    values = np.asarray(scores, dtype=np.float64).ravel()
    included = np.asarray(member, dtype=bool).ravel()
    bound = one_run_lower_bound(values, included, delta=config.delta, confidence=config.confidence, null=plan.null, claim=plan.claim)
    claim = Claim(epsilon=plan.claim_epsilon, delta=config.delta, quantity=quantity)
    conversion = (
        f"the claim --family {config.family} --family-claim {plan.claim:g} ({plan.describe}) as its ε at δ = {config.delta:g}, "
        "by the same code as the bound: compared in that family"
    )
    verdict = compare(bound.epsilon, bound_delta=config.delta, quantity=quantity, claim=claim, conversion=conversion)
    return FamilyTest(
        family=str(config.family),
        parameter_name=bound.parameter_name,
        claim=plan.claim,
        claim_epsilon=plan.claim_epsilon,
        sampling_rate=config.family_sampling_rate,
        steps=config.family_steps,
        bound=bound,
        refuted=bound.refuted,
        ceiling=bound.ceiling,
        verdict=verdict,
        generic_epsilon=generic.epsilon,
        generic_verdict=generic_verdict,
        validity=VALIDITY,
        scores=tuple(float(value) for value in values),
        member=tuple(bool(value) for value in included),
    )


def family_headline(
    plan: FamilyPlan, config: Any, scores: Any, member: Any, *, generic: OneRunLowerBound, generic_verdict: Verdict | None, raise_with: str, design: str
) -> tuple[FamilyTest, Ceiling | None]:
    """The family test of an end-to-end claim as an audit's headline: the test, and the ceiling of its one test for ``design`` (its canaries and confidence)."""
    tested = family_test(plan, config, scores, member, generic=generic, generic_verdict=generic_verdict, quantity="end-to-end")
    return tested, make_ceiling(tested.epsilon, tested.ceiling, raise_with=raise_with, design=design)
