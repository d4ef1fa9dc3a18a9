"""What every family adds to its result around the headline bound: the claim's verdict, the ceiling, the sanity warnings.

* **The claim is the user's.** Configs carry ``claimed_epsilon`` and
  ``claimed_delta`` (``--claimed-epsilon``/``--claimed-delta``); an
  accountant's ε for the settings a config names is evidence, never the
  yardstick, except where privaudit itself ran the DP training with known
  settings (its own reference DP-SGD): that claim's source says so.
* **Like for like.** :func:`privaudit.stats.verdict.compare` refuses unlike
  quantities; the conversions are in :mod:`privaudit.stats.conversions`'s
  callers, each described in the verdict's ``conversion``.
* **Sanity checks warn and never change a number**
  (:func:`auc_warnings`, against the AUC's margin under no signal,
  :func:`privaudit.stats.metrics.auc_null_margin`).

>>> claim_of(None, 1e-5, delta=1e-5) is None
True
>>> claim_of(4.0, None, delta=1e-5)
Claim(epsilon=4.0, delta=1e-05, quantity='end-to-end', source='user')
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..stats.ceiling import Ceiling, ceiling_of, exposure_ceiling, make_ceiling
from ..stats.verdict import OWN_ACCOUNTANT, Claim, Verdict, compare

__all__ = [
    "NO_SIGNAL",
    "auc_warnings",
    "bound_ceiling",
    "bound_verdict",
    "check_claim_fields",
    "claim_of",
    "exposure_verdict",
    "own_or_user_claim",
    "pure_bound_claim",
    "verdict_of",
    "with_verdict",
]

NO_SIGNAL = "no signal: check that the model was trained on the corpus with the canaries"


def check_claim_fields(claimed_epsilon: Any, claimed_delta: Any) -> None:
    """Refuse a claimed δ without a claimed ε, and values out of range (messages name `claimed_epsilon`/`claimed_delta`).

    >>> check_claim_fields(None, 1e-5)
    Traceback (most recent call last):
    ...
    ValueError: `claimed_delta` needs `claimed_epsilon` (--claimed-epsilon): a δ alone is no claim
    """
    if claimed_epsilon is None:
        if claimed_delta is not None:
            raise ValueError("`claimed_delta` needs `claimed_epsilon` (--claimed-epsilon): a δ alone is no claim")
        return
    Claim(epsilon=claimed_epsilon, delta=0.0 if claimed_delta is None else claimed_delta)


def claim_of(claimed_epsilon: Any, claimed_delta: Any, *, delta: float, quantity: str = "end-to-end") -> Claim | None:
    """The user's claim (None when none was given); its δ defaults to the audit's ``delta``, the δ of the bound."""
    if claimed_epsilon is None:
        return None
    return Claim(epsilon=claimed_epsilon, delta=delta if claimed_delta is None else claimed_delta, quantity=quantity)


def own_or_user_claim(user: Claim | None, accountant_epsilon: float | None, *, delta: float, quantity: str = "end-to-end") -> Claim | None:
    """The user's claim when given; else, where privaudit ran the DP training itself, its accountant's ε for those settings, labelled so."""
    if user is not None or accountant_epsilon is None or not accountant_epsilon > 0.0:
        return user
    return Claim(epsilon=float(accountant_epsilon), delta=delta, quantity=quantity, source=OWN_ACCOUNTANT)


def verdict_of(bound: float, *, bound_delta: float, quantity: str, claim: Claim | None, conversion: str | None = None) -> Verdict | None:
    """The verdict of ``bound`` against ``claim``, or None without a claim."""
    if claim is None:
        return None
    return compare(bound, bound_delta=bound_delta, quantity=quantity, claim=claim, conversion=conversion)


def with_verdict(
    result: Any,
    *,
    bound: float,
    bound_delta: float,
    quantity: str,
    claim: Claim | None,
    conversion: str | None = None,
    ceiling: Ceiling | None = None,
    warnings: tuple[str, ...] = (),
) -> Any:
    """``result`` with its verdict against ``claim`` (none without one), its ceiling and its sanity warnings."""
    verdict = verdict_of(bound, bound_delta=bound_delta, quantity=quantity, claim=claim, conversion=conversion)
    return dataclasses.replace(result, claim_verdict=verdict, ceiling=ceiling, sanity_warnings=tuple(result.sanity_warnings) + tuple(warnings))


def auc_warnings(auc: float, margin: float, *, members_higher: bool, dp_claim: bool, canary_audit: bool) -> tuple[str, ...]:
    """Warnings about an AUC that contradicts the setting; they change no number.

    ``margin`` is the AUC's confidence margin (half the width of its
    interval). ``members_higher``: the canaries or a claim say members score
    higher. ``canary_audit``: canaries were inserted, so a model trained on
    them without DP shows a signal.

    >>> auc_warnings(0.3, 0.05, members_higher=True, dp_claim=False, canary_audit=False)[0][:40]
    'AUC 0.3 is at or below 1/2 - its margin '
    >>> auc_warnings(0.51, 0.05, members_higher=True, dp_claim=False, canary_audit=True) == (NO_SIGNAL + " (AUC 0.51, within its margin 0.05 of 1/2)",)
    True
    >>> auc_warnings(0.51, 0.05, members_higher=True, dp_claim=True, canary_audit=True)
    ()
    """
    warnings: list[str] = []
    if members_higher and auc <= 0.5 - margin:
        warnings.append(
            f"AUC {auc:.3g} is at or below 1/2 - its margin ({0.5 - margin:.3g}) where members should score higher:"
            " check the inclusion flags, the members list and the score direction"
        )
    elif canary_audit and not dp_claim and abs(auc - 0.5) <= margin:
        warnings.append(f"{NO_SIGNAL} (AUC {auc:.3g}, within its margin {margin:.3g} of 1/2)")
    return tuple(warnings)


def bound_ceiling(bound: Any, *, raise_with: str, method: Any = None, num_guesses: Any = None) -> Ceiling | None:
    """The :class:`~privaudit.stats.ceiling.Ceiling` of a core bound result (an EpsilonLowerBound or a one-run bound), with its design in words."""
    value = ceiling_of(bound, method=method, num_guesses=num_guesses)
    if hasattr(bound, "num_out"):
        design = f"{bound.num_in} in and {bound.num_out} out, {bound.confidence:.0%}, {getattr(bound, 'num_tests', 1)} Bonferroni test(s)"
    else:
        design = f"m = {bound.num_canaries} canaries, {bound.confidence:.0%}, {bound.num_tests} Bonferroni tests"
    return make_ceiling(bound.epsilon, value, raise_with=raise_with, design=design)


def bound_verdict(
    result: Any,
    bound: Any,
    *,
    claim: Claim | None,
    raise_with: str,
    method: Any = None,
    quantity: str = "end-to-end",
    conversion: str | None = None,
    warnings: tuple[str, ...] = (),
) -> Any:
    """``result`` with the verdict of a core bound result (its ε at its own δ) against ``claim``, its ceiling (:func:`bound_ceiling`) and ``warnings``.

    A pure bound (method ``"pure"``) holds at δ = 0 whatever δ it was
    computed beside, so it is compared at δ = 0: it cannot refute a claim
    with δ > 0, which then gets no verdict and a warning.
    """
    ceiling = bound_ceiling(bound, raise_with=raise_with, method=method)
    bound_delta = 0.0 if getattr(bound, "method", None) == "pure" else bound.delta
    claim, pure_warnings = pure_bound_claim(claim, bound_delta, "the bound")
    return with_verdict(
        result,
        bound=bound.epsilon,
        bound_delta=bound_delta,
        quantity=quantity,
        claim=claim,
        conversion=conversion,
        ceiling=ceiling,
        warnings=tuple(warnings) + pure_warnings,
    )


def pure_bound_claim(claim: Claim | None, bound_delta: float, what: str) -> tuple[Claim | None, tuple[str, ...]]:
    """The claim a bound at ``bound_delta`` can be held against, and the warning when a pure bound (δ = 0) meets a claim with δ > 0.

    >>> pure_bound_claim(Claim(epsilon=1.0, delta=1e-5), 0.0, "the bound")[1][0][:44]
    'the bound is a pure ε (δ = 0): it cannot ref'
    >>> pure_bound_claim(Claim(epsilon=1.0, delta=0.0), 0.0, "the bound")[1]
    ()
    """
    if claim is None or bound_delta > 0.0 or claim.delta == 0.0:
        return claim, ()
    return None, (f"{what} is a pure ε (δ = 0): it cannot refute the claimed (ε = {claim.epsilon:g}, δ = {claim.delta:g}); no verdict",)


def exposure_verdict(result: Any, bound: dict[str, Any] | None, *, claimed_epsilon: Any, claimed_delta: Any) -> Any:
    """``result`` with the verdict and ceiling of its exposure bound, a pure ε for one record (group privacy already applied).

    The claim is the user's ``claimed_epsilon`` and ``claimed_delta``, its δ
    0 when none is given. A pure bound (δ = 0) cannot refute a claim with
    δ > 0: there is then no verdict, and a warning says why.
    """
    if bound is None:
        return result
    claim = claim_of(claimed_epsilon, claimed_delta, delta=0.0)
    value = exposure_ceiling(
        bound["num_canaries"], bound["num_references"], quantile=bound["quantile"], confidence=bound["confidence"], duplicates=bound["duplicates"]
    )
    design = f"{bound['num_canaries']} canaries among {bound['num_references']} references, {bound['confidence']:.0%}, groups of {bound['duplicates']}"
    ceiling = make_ceiling(bound["epsilon"], value, raise_with="more canaries and more references", design=design)
    claim, warnings = pure_bound_claim(claim, 0.0, "the exposure bound")
    conversion = (
        f"the bound on a group of {bound['duplicates']} insertions divided by {bound['duplicates']} (group privacy, pure ε)"
        if bound["duplicates"] > 1
        else None
    )
    return with_verdict(
        result, bound=bound["epsilon"], bound_delta=0.0, quantity="end-to-end", claim=claim, conversion=conversion, ceiling=ceiling, warnings=warnings
    )
