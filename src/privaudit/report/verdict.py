"""The verdict block of every report section and console: the claim's verdict, the ceiling and the sanity warnings.

Read from a results dict, so ``privaudit report`` on an old run and the
command that just ran print the same lines.

>>> verdict_lines({"ceiling": {"value": 2.6, "bound": 2.5, "at_ceiling": True, "raise_with": "more canaries", "design": "m = 170"}})[0]
'no claim given: no verdict (pass --claimed-epsilon and --claimed-delta)'
>>> verdict_lines({})
()
"""

from __future__ import annotations

import math
from typing import Any

from ..stats.verdict import Verdict, ceiling_note, describe_verdict

__all__ = ["console_lines", "family_lines", "family_rows", "user_claim", "verdict_lines"]


def _number(value: Any) -> float:
    return float(value)  # JSON's "inf" string included


def ceiling_line(ceiling: dict[str, Any]) -> str:
    """The ceiling beside its bound, and the note when the bound is at it.

    >>> ceiling_line({"value": "inf", "bound": 1.0, "at_ceiling": False, "raise_with": "more canaries", "design": ""})
    'ceiling: none (the design puts no limit on the bound)'
    """
    value, bound = _number(ceiling["value"]), _number(ceiling["bound"])
    if not math.isfinite(value):
        return "ceiling: none (the design puts no limit on the bound)"
    design = f" ({ceiling['design']})" if ceiling.get("design") else ""
    line = f"ceiling: ε ≥ {bound:.3g} of at most {value:.3g}, what a perfect attack would show on this design{design}"
    note = ceiling_note(bound, value, raise_with=str(ceiling.get("raise_with", "a larger design")))
    return line + (f"; {note}" if note else "")


def user_claim(result: Any) -> float | None:
    """The ε the user claimed (--claimed-epsilon), in the verdict's quantity; None where the verdict is against privaudit's own accountant.

    The report calls this value the claim; an accountant's ε computed from the
    run's settings is evidence beside it, never the yardstick in its place.

    >>> from types import SimpleNamespace as R
    >>> user_claim(R(claim_verdict=R(claim=R(source="user", epsilon=2.0)))), user_claim(R(claim_verdict=None))
    (2.0, None)
    """
    verdict = getattr(result, "claim_verdict", None)
    return None if verdict is None or verdict.claim.source != "user" else float(verdict.claim.epsilon)


def verdict_lines(data: dict[str, Any]) -> tuple[str, ...]:
    """The verdict, ceiling and warning lines of a results dict (none for a result that bounds nothing).

    The Opacus in-loop result holds both comparisons under ``verdict``; its
    headline is end to end, so that is its claim's verdict here.

    >>> claim = {"epsilon": 4.0, "delta": 1e-5, "quantity": "end-to-end", "source": "user"}
    >>> end = {"bound": 2.7, "bound_delta": 1e-5, "claim": claim, "quantity": "end-to-end", "ratio": 0.675, "flagged": False, "conversion": None}
    >>> verdict_lines({"verdict": {"end_to_end": end, "per_step": end}, "ceiling": None})[0].startswith("not flagged: the end-to-end bound")
    True

    A finding flags the run whatever the bound says, so the bound's line
    never opens "not flagged" above one:

    >>> verdict_lines({"verdict": {"end_to_end": end, "per_step": end, "findings": ["batch sizes are fixed"]}, "ceiling": None})
    ('the bound does not flag the claim (the finding below does): the end-to-end bound ε ≥ 2.7 does not exceed the claimed ε = 4 (δ = 1e-05, user); bound/claim = 0.675', 'finding (flags the run): batch sizes are fixed')
    """
    lines: list[str] = []
    verdict, ceiling = data.get("claim_verdict"), data.get("ceiling")
    findings = list(data.get("findings") or ())
    if verdict is None and isinstance(data.get("verdict"), dict):  # opacus-inloop: per step and end to end; mechanism's "verdict" is a word
        findings += list(data["verdict"].get("findings") or ())
        verdict = data["verdict"].get("end_to_end")
    if isinstance(verdict, dict):
        line = describe_verdict(Verdict.from_dict(verdict))
        if findings and line.startswith("not flagged: "):
            line = (
                f"the bound does not flag the claim (the finding{'s' if len(findings) > 1 else ''} below {'do' if len(findings) > 1 else 'does'}): " + line[13:]
            )
        lines.append(line)
    elif isinstance(ceiling, dict):
        lines.append(describe_verdict(None))
    if isinstance(ceiling, dict):
        lines.append(ceiling_line(ceiling))
    lines.extend(f"finding (flags the run): {text}" for text in findings)
    lines.extend(f"warning: {text}" for text in data.get("sanity_warnings") or ())
    return tuple(lines)


def family_rows(data: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """(label, value) rows of a results dict's ``family_test`` block (none without one): the report's details and, joined, the console's lines.

    Read from the dict, so ``privaudit report`` on a stored run shows the same rows.
    """
    block = data.get("family_test")
    if not isinstance(block, dict):
        return ()
    bound = block["bound"]
    verdict = Verdict.from_dict(block["verdict"])
    rows = [
        (
            f"family bound (order statistics, Xiang et al.; δ = {float(bound['delta']):g}, {float(bound['confidence']):.0%})",
            f"ε ≥ {float(bound['epsilon']):.4g}; refuted: {block['refuted']}",
        ),
        (
            f"family claim ({block['family']}, {block['parameter_name']} = {float(block['claim']):g}: ε = {float(block['claim_epsilon']):.4g} at that δ)",
            f"{'flagged' if verdict.flagged else 'not flagged'}: the family bound {'exceeds' if verdict.flagged else 'does not exceed'} it",
        ),
    ]
    if block.get("ceiling") is not None:
        rows.append(("family ceiling (the bound had every released guess been right)", f"{_number(block['ceiling']):.4g}"))
    generic = f"ε ≥ {_number(block['generic_epsilon']):.4g}"
    if isinstance(block.get("generic_verdict"), dict):
        other = Verdict.from_dict(block["generic_verdict"])
        generic += f"; against --claimed-epsilon {other.claim.epsilon:g}: {'flagged' if other.flagged else 'not flagged'}"
    rows += [("generic bound (Steinke et al., proven for any (ε, δ)-DP training)", generic), ("validity", str(block["validity"]))]
    return tuple(rows)


def family_lines(data: dict[str, Any]) -> tuple[str, ...]:
    """The console lines of :func:`family_rows`."""
    return tuple(f"{label}: {value}" for label, value in family_rows(data))


def console_lines(data: dict[str, Any]) -> tuple[str, ...]:
    """What the console prints under the table: the ceiling's note when the bound is at it, and one line per sanity warning.

    >>> console_lines({"ceiling": {"value": 2.6, "bound": 2.5, "at_ceiling": True, "raise_with": "more canaries"}, "sanity_warnings": ["no signal"]})[1]
    'warning: no signal'
    """
    lines: list[str] = list(family_lines(data))
    if data.get("blind_baseline"):  # only then: `privaudit bound` prints these lines too, and the baseline's statistics cost an import
        from .blind import blind_rows

        lines.extend(f"{name}: {value}" for name, value in blind_rows(data))
    ceiling = data.get("ceiling")
    if isinstance(ceiling, dict):
        note = ceiling_note(_number(ceiling["bound"]), _number(ceiling["value"]), raise_with=str(ceiling.get("raise_with", "a larger design")))
        if note:
            lines.append(note)
    lines.extend(f"warning: {text}" for text in data.get("sanity_warnings") or ())
    return tuple(lines)
