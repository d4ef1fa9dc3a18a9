"""One rule for the claim, in every family: it is the user's (a flag or an argument); what an audited object states of itself is evidence.

Objects under audit may carry a ``claim`` attribute (privaudit's library and
dpmm adapters do: the (ε, δ) given to the library). A claim read from the
object would let a broken object vouch for itself, so the families never
use it as the yardstick: :func:`stated_claim` reads it as evidence,
:func:`missing_claim` is the refusal when the user gave none (it names the
stated values and the flags that would test them), and :func:`stated_warning`
names it beside the user's own claim when the two differ.

>>> class Release:
...     claim = {"epsilon": 1.0, "delta": 1e-5}
>>> stated_claim(Release())
{'epsilon': 1.0, 'delta': 1e-05}
>>> describe(stated_claim(Release()))
'ε = 1, δ = 1e-05'
>>> stated_warning(Release(), "--mechanism", user_epsilon=1.0, user_delta=1e-5) is None
True
>>> print(stated_warning(Release(), "--mechanism", user_epsilon=2.0, user_delta=1e-5))
--mechanism states ε = 1, δ = 1e-05 in its own `claim` attribute: evidence only; the claim tested is yours, ε = 2, δ = 1e-05
>>> stated_claim(lambda: 0) is None
True
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["describe", "missing_claim", "stated_claim", "stated_warning"]


def stated_claim(obj: Any) -> dict[str, float] | None:
    """The ``claim`` attribute of ``obj`` as numbers (``epsilon`` or ``rho``, and ``delta``), or None when it states none it can be read as."""
    declared = getattr(obj, "claim", None)
    if not isinstance(declared, dict):
        return None
    out: dict[str, float] = {}
    for key in ("epsilon", "rho", "delta"):
        value = declared.get(key)
        if value is None:
            continue
        try:
            out[key] = float(value)
        except (TypeError, ValueError):
            return None
    return out if "epsilon" in out or "rho" in out else None


def describe(stated: dict[str, float]) -> str:
    """``ε = 1, δ = 1e-05`` (or ``ρ = ...``) for a stated claim."""
    parts = [f"ε = {stated['epsilon']:g}"] if "epsilon" in stated else [f"ρ = {stated['rho']:g}"]
    return ", ".join([*parts, f"δ = {stated.get('delta', 0.0):g}"])


def _flags(stated: dict[str, float], epsilon_flag: str, delta_flag: str, rho_flag: str | None) -> str:
    """``--epsilon 1 --delta 0`` for flags, ``epsilon=1, delta=0`` for arguments (names ending in ``=``)."""
    first = (epsilon_flag, stated["epsilon"]) if "epsilon" in stated or rho_flag is None else (rho_flag, stated["rho"])
    pairs = [first, (delta_flag, stated.get("delta", 0.0))]
    if epsilon_flag.endswith("="):
        return ", ".join(f"{flag}{value:g}" for flag, value in pairs)
    return " ".join(f"{flag} {value:g}" for flag, value in pairs)


def missing_claim(obj: Any, name: str, *, epsilon_flag: str, delta_flag: str, rho_flag: str | None = None) -> str:
    """The one-line refusal when the user gave no claim: it names the flag and what ``obj`` (called ``name``) states of itself.

    >>> class Noisy:
    ...     claim = {"epsilon": 0.5, "delta": 0.0}
    >>> missing_claim(Noisy(), "`mechanism`", epsilon_flag="epsilon=", delta_flag="delta=")
    '`epsilon` must be given (the claim under test is yours); `mechanism` states ε = 0.5, δ = 0 in its own `claim` attribute, evidence only: pass epsilon=0.5, delta=0 to test it'
    """
    wanted = f"`{epsilon_flag.strip('`-= ')}`" + (f" or `{rho_flag.strip('`-= ')}`" if rho_flag else "")
    head = f"{wanted} must be given (the claim under test is yours)"
    stated = stated_claim(obj)
    if stated is None:
        return f"{head}, got neither" if rho_flag else f"{head}, got none"
    if "epsilon" not in stated and rho_flag is None:
        return f"{head}; {name} states {describe(stated)} in its own `claim` attribute, evidence only"
    return f"{head}; {name} states {describe(stated)} in its own `claim` attribute, evidence only: pass {_flags(stated, epsilon_flag, delta_flag, rho_flag)} to test it"


def stated_warning(obj: Any, name: str, *, user_epsilon: float | None = None, user_delta: float = 0.0, user_rho: float | None = None) -> str | None:
    """A warning naming what ``obj`` states of itself when it differs from the user's claim; None when it states nothing or the same."""
    stated = stated_claim(obj)
    if stated is None:
        return None
    user = {"epsilon": user_epsilon} if user_epsilon is not None else {"rho": float(user_rho or 0.0)}
    user["delta"] = float(user_delta)
    same = all(math.isclose(stated.get(key, 0.0), value, rel_tol=1e-9, abs_tol=0.0) for key, value in user.items()) and set(stated) <= set(user)
    if same:
        return None
    return f"{name} states {describe(stated)} in its own `claim` attribute: evidence only; the claim tested is yours, {describe(user)}"
