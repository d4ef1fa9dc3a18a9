"""A user's privacy claim and the verdict of a lower bound against it, like for like.

An (ε, δ) always refers to *something*: one step of DP-SGD, the whole
training run, one record, a group of k copies, one release of a mechanism.
A lower bound on one of these says nothing about a claim on another, so
:func:`compare` refuses to compare unlike quantities; the caller converts
first (with the steps and sampling rate that ran) and says in ``conversion``
which way it went.

The claim is the user's own: it is never read from the object under audit,
whose settings are evidence to check against the claim, not the yardstick.

>>> claim = Claim(epsilon=4.0, delta=1e-5)
>>> verdict = compare(5.0, bound_delta=1e-5, quantity="end-to-end", claim=claim)
>>> verdict.flagged, verdict.ratio
(True, 1.25)
>>> Verdict.from_dict(verdict.to_dict()) == verdict
True
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

__all__ = ["QUANTITIES", "TOLERANCE", "Claim", "Verdict", "at_ceiling", "ceiling_note", "compare", "describe_verdict"]

#: What an (ε, δ) refers to.
QUANTITIES = ("per-step", "end-to-end", "per-record", "group", "per-release")

#: Sources of a claim: the user's own, or privaudit's accountant for training privaudit ran itself.
USER = "user"
OWN_ACCOUNTANT = "privaudit's accountant for the settings it ran"


def _check_epsilon(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise ValueError(f"`{name}` must be in (0, inf), got {value!r}")
    number = float(value)
    if not 0.0 < number < math.inf:
        raise ValueError(f"`{name}` must be in (0, inf), got {number:g}")
    return number


def _check_delta(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise ValueError(f"`{name}` must be in [0, 1), got {value!r}")
    number = float(value)
    if not 0.0 <= number < 1.0:  # NaN fails this too
        raise ValueError(f"`{name}` must be in [0, 1), got {number:g}")
    return number


def _a(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _check_quantity(value: Any, name: str = "quantity") -> str:
    if value not in QUANTITIES:
        raise ValueError(f"`{name}` must be one of {', '.join(map(repr, QUANTITIES))}, got {value!r}")
    return str(value)


@dataclasses.dataclass(frozen=True)
class Claim:
    """An (ε, δ)-DP claim and the quantity it is about.

    ``source`` says whose claim it is: ``"user"`` (given with
    ``--claimed-epsilon``/``claimed_epsilon=``), or privaudit's accountant
    for a training run privaudit itself ran with known settings.

    >>> Claim(epsilon=-1, delta=1e-5)
    Traceback (most recent call last):
    ...
    ValueError: `claimed_epsilon` must be in (0, inf), got -1
    >>> Claim(epsilon=1.0, delta=1.0)
    Traceback (most recent call last):
    ...
    ValueError: `claimed_delta` must be in [0, 1), got 1
    """

    epsilon: float
    delta: float
    quantity: str = "end-to-end"
    source: str = USER

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_epsilon(self.epsilon, "claimed_epsilon"))
        object.__setattr__(self, "delta", _check_delta(self.delta, "claimed_delta"))
        _check_quantity(self.quantity)
        if not isinstance(self.source, str) or not self.source:
            raise ValueError(f"`source` must be a non-empty string, got {self.source!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Claim:
        return cls(epsilon=float(data["epsilon"]), delta=float(data["delta"]), quantity=data.get("quantity", "end-to-end"), source=data.get("source", USER))


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A lower bound held against a claim on the same quantity.

    ``flagged`` is true when the bound exceeds the claimed ε (the claim is
    refuted at the bound's confidence); ``ratio`` is bound / claimed ε.
    ``conversion`` says in words how the bound or the claim was converted to
    make the two refer to the same quantity, or is None when they already
    did.
    """

    bound: float
    bound_delta: float
    claim: Claim
    quantity: str
    ratio: float
    flagged: bool
    conversion: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["claim"] = self.claim.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        return cls(
            bound=float(data["bound"]),
            bound_delta=float(data["bound_delta"]),
            claim=Claim.from_dict(data["claim"]),
            quantity=data["quantity"],
            ratio=float(data["ratio"]),
            flagged=bool(data["flagged"]),
            conversion=data.get("conversion"),
        )


def compare(bound: float, *, bound_delta: float, quantity: str, claim: Claim, conversion: str | None = None) -> Verdict:
    """The verdict of an ε lower bound at ``bound_delta`` against ``claim``.

    Only like is compared with like: the bound's ``quantity`` must be the
    claim's. And only a valid pair of δs: a mechanism that is (ε, δ_c)-DP is
    also (ε, δ)-DP for every δ >= δ_c, so a lower bound computed at
    δ >= δ_c refutes the claim when it exceeds ε; a bound at δ < δ_c does
    not (the claim says nothing about that δ), and is refused.

    >>> claim = Claim(epsilon=4.0, delta=1e-5)
    >>> compare(3.0, bound_delta=1e-3, quantity="end-to-end", claim=claim).flagged  # δ >= δ_c: valid
    False
    >>> compare(3.0, bound_delta=1e-7, quantity="end-to-end", claim=claim)
    Traceback (most recent call last):
    ...
    ValueError: the bound's delta (1e-07) is below the claim's (1e-05): an (ε, 1e-05) claim says nothing at δ = 1e-07; compute the bound at δ >= 1e-05
    >>> compare(5.05, bound_delta=1e-5, quantity="per-step", claim=claim)
    Traceback (most recent call last):
    ...
    ValueError: a per-step bound cannot be compared with an end-to-end claim; convert one of them first
    """
    quantity = _check_quantity(quantity)
    if not isinstance(claim, Claim):
        raise ValueError(f"`claim` must be a Claim, got {type(claim).__name__}")
    if quantity != claim.quantity:
        raise ValueError(f"{_a(quantity)} {quantity} bound cannot be compared with {_a(claim.quantity)} {claim.quantity} claim; convert one of them first")
    bound_delta = _check_delta(bound_delta, "bound_delta")
    if bound_delta < claim.delta:
        raise ValueError(
            f"the bound's delta ({bound_delta:g}) is below the claim's ({claim.delta:g}): an (ε, {claim.delta:g}) claim says nothing at δ = {bound_delta:g};"
            f" compute the bound at δ >= {claim.delta:g}"
        )
    value = float(bound)
    if math.isnan(value) or value < 0.0:
        raise ValueError(f"`bound` must be a number >= 0, got {value:g}")
    return Verdict(
        bound=value,
        bound_delta=bound_delta,
        claim=claim,
        quantity=quantity,
        ratio=value / claim.epsilon,
        flagged=value > claim.epsilon,
        conversion=conversion,
    )


def describe_verdict(verdict: Verdict | None) -> str:
    """One line for a console or a report.

    >>> describe_verdict(compare(5.0, bound_delta=1e-5, quantity="end-to-end", claim=Claim(4.0, 1e-5)))
    'flagged: the end-to-end bound ε ≥ 5 exceeds the claimed ε = 4 (δ = 1e-05, user); bound/claim = 1.25'
    >>> describe_verdict(None)
    'no claim given: no verdict (pass --claimed-epsilon and --claimed-delta)'
    """
    if verdict is None:
        return "no claim given: no verdict (pass --claimed-epsilon and --claimed-delta)"
    claim = verdict.claim
    word = "exceeds" if verdict.flagged else "does not exceed"
    head = "flagged" if verdict.flagged else "not flagged"
    text = (
        f"{head}: the {verdict.quantity} bound ε ≥ {verdict.bound:.3g} {word} the claimed ε = {claim.epsilon:g}"
        f" (δ = {claim.delta:g}, {claim.source}); bound/claim = {verdict.ratio:.3g}"
    )
    if verdict.conversion:
        text += f"; {verdict.conversion}"
    return text


#: A bound within this fraction of its ceiling is "at its ceiling".
TOLERANCE = 0.1


def at_ceiling(bound: float, ceiling: float | None, tolerance: float = TOLERANCE) -> bool:
    """Whether ``bound`` is within ``tolerance`` (a fraction) of a finite, positive ``ceiling``.

    >>> at_ceiling(2.4, 2.6), at_ceiling(2.3, 2.6), at_ceiling(1.0, float("inf")), at_ceiling(0.0, 0.0)
    (True, False, False, False)
    """
    if ceiling is None or not math.isfinite(ceiling) or ceiling <= 0.0:
        return False
    return float(bound) >= (1.0 - tolerance) * ceiling


def ceiling_note(bound: float, ceiling: float | None, *, raise_with: str) -> str | None:
    """The report's sentence when ``bound`` is at its ceiling, else None.

    >>> ceiling_note(2.5, 2.6, raise_with="more canaries")
    'at its ceiling: ε ≥ 2.5 is within 10% of the 2.6 a perfect attack would show on this design; the truth may be much higher (more canaries would raise the ceiling)'
    """
    if not at_ceiling(bound, ceiling):
        return None
    return (
        f"at its ceiling: ε ≥ {bound:.3g} is within {TOLERANCE:.0%} of the {ceiling:.3g} a perfect attack would show on this design;"
        f" the truth may be much higher ({raise_with} would raise the ceiling)"
    )
