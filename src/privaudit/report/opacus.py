"""The report section of an Opacus audit in the user's own loop (``OpacusInLoopAuditor``) or on a copy (``audit_opacus``).

The headline is the end-to-end bound against the user's claim when a claim
was given, else the per-step bound; the details hold both comparisons with
the way each was converted, the evidence read from the user's objects, and
each finding as its own line.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..integrations.opacus_verdict import describe
from ..stats.verdict import describe_verdict
from .html import ReportSection
from .provenance import provenance
from .sections import generic_section

__all__ = ["headline_values", "section"]

TITLES = {
    "opacus-inloop": "Opacus, audited in your own training loop",
    "opacus-hidden": "Opacus, audited in your own training loop from the final sums alone (hidden state)",
    "opacus": "Opacus, audited on a copy of your setup",
}


def headline_values(result: Any) -> dict[str, Any]:
    """value, label, kind, confidence and valid of the section: the end-to-end verdict's bound with a claim, else the per-step bound."""
    bound, verdict = result.bound, result.verdict
    if verdict is None:
        return {"value": float(bound.epsilon), "label": f"per-step ε lower bound (δ = {bound.delta:g})", "kind": bound.kind}
    return {
        "value": float(verdict.end_to_end.bound),
        "label": f"end-to-end ε lower bound (δ = {verdict.claim.delta:g}; per-step bound composed over the run at the q that ran)",
        "kind": bound.kind,
    }


def _typed(result_type: type, data: dict) -> Any:
    """The result of a results dict (its own fields only); None for a partial file."""
    from pydantic import TypeAdapter, ValidationError

    names = {field.name for field in dataclasses.fields(result_type)}
    try:
        return TypeAdapter(result_type).validate_python({key: value for key, value in data.items() if key in names})
    except ValidationError:
        return None


def _test_name(method: str) -> str:
    """The per-step test in words: the in-loop tests, or either of them on the hidden state's final sums ("gaussian, final sums of T steps").

    >>> _test_name("gaussian"), _test_name("order-statistics, final sums of 145 steps")
    ('t test', 'order-statistics test on the final sums of 145 steps')
    """
    test, _, sums = method.partition(", ")
    name = {"gaussian": "t test", "order-statistics": "order-statistics test"}.get(test, f"{test} test")
    if sums:
        return f"{name} on the {sums}"
    return name + (", paired observations" if test == "order-statistics" else "")


def _hidden_state_rows(result: Any) -> list[tuple[str, Any]]:
    """The hidden-state audit's own rows: what was observed, the composed bound and the heuristic beside it (none for other audits)."""
    if not hasattr(result, "composed_epsilon"):
        return []
    heuristic = result.heuristic
    return [
        ("observed", f"the final sums of {result.num_canaries} canaries' coordinates only (hidden state), {result.canaries_per_step} of them in every step"),
        (f"ε lower bound of the {result.num_steps} audited steps composed, a canary in each (δ = {result.bound.delta:g})", result.composed_epsilon),
        (
            "last-iterate heuristic ε (Steinke et al.; a heuristic, not a bound or a claim; q_c = 1, σ read)",
            "—" if heuristic is None else heuristic.epsilon,
        ),
        ("composed bound ÷ heuristic", "—" if result.bound_over_heuristic is None else result.bound_over_heuristic),
    ]


def section(data: dict, directory: Path | None) -> ReportSection:
    """The report section of a results dict of either Opacus audit."""
    from ..integrations.opacus import OpacusAuditResult
    from ..integrations.opacus_hidden import OpacusHiddenStateResult
    from ..integrations.opacus_inloop import OpacusInLoopResult

    audit = str(data.get("audit"))
    kinds = {"opacus-inloop": OpacusInLoopResult, "opacus-hidden": OpacusHiddenStateResult}
    result = _typed(kinds.get(audit, OpacusAuditResult), data)
    if result is None:
        return generic_section(data, directory)
    bound, verdict, evidence = result.bound, result.verdict, result.evidence
    test = _test_name(bound.method)
    details: list[tuple[str, Any]] = [
        (f"per-step ε lower bound ({bound.kind}, one Gaussian step, {test})", bound.epsilon),
        *_hidden_state_rows(result),
        ("refuted", result.refuted or bound.null),
        ("end-to-end ε of the refuted DP-SGD (composed at the q that ran)", result.end_to_end_epsilon),
        ("per-step ceiling", None if result.ceiling is None else result.ceiling.value),
        ("canaries in / out (a final sum each)" if hasattr(result, "composed_epsilon") else "canary / other observations", f"{bound.num_in} / {bound.num_out}"),
    ]
    if result.threshold_bound is not None:
        details.append(("former per-step bound (GDP, Clopper–Pearson at threshold 0.5; not used by the verdict)", result.threshold_bound.epsilon))
    note = None if result.ceiling is None else result.ceiling.note
    if note:
        details.append(("per-step bound", note))
    for line in describe(verdict):
        details.append(("verdict", line))
    if evidence is not None:
        details += [
            ("σ read from the optimizer (evidence)", ", ".join(f"{value:.4g}" for value in evidence.noise_multipliers)),
            ("σ measured on the audit coordinates", evidence.noise_measured),
            ("sampling rate q (evidence)", f"{evidence.sample_rate:.4g} ({evidence.sample_rate_source})" if evidence.sample_rate else "not read"),
            ("steps of the run (evidence)", f"{evidence.run_steps} ({evidence.run_steps_source}); {evidence.audited_steps} audited"),
        ]
        if evidence.accountant_epsilon is not None:
            details.append(("Opacus' accountant's ε at the claim's δ (evidence)", evidence.accountant_epsilon))
    if verdict is not None:
        details.append(("σ the claim implies (at least)", verdict.implied_noise))
    loop_findings = [check.finding for check in getattr(result, "loop_checks", ()) if check.finding]
    for check in getattr(result, "loop_checks", ()):
        details.append((f"loop check: {check.name}", check.observed + ("" if check.p_value is None else f" (p = {check.p_value:.2g})")))
    flag = None
    if verdict is None and loop_findings:  # no claim, but the loop does not do what its accountant assumes
        flag = "Loop does not match its accounting: " + " | ".join(loop_findings)
    if verdict is not None and verdict.flagged:
        lines = [describe_verdict(v) for v in (verdict.end_to_end, verdict.per_step) if v.flagged] + list(verdict.findings)
        flag = "Claim rejected: " + " | ".join(lines)
    return ReportSection(
        title=TITLES.get(audit, audit),
        audit=audit,
        **headline_values(result),
        confidence=bound.confidence,
        valid=bool(bound.valid),
        meaning=(
            "With the stated confidence, one step of this training is no better than the per-step bound; composed over the run's "
            "steps at the sampling rate that ran, the run is no better than the end-to-end bound. Either above its claim refutes the claim."
        ),
        not_meaning=(
            "A bound below the claim does not prove the claim. σ, q and the steps read from your objects are evidence checked against "
            "the claim, not the claim: the claim is the one you gave."
        ),
        threat_model=result.threat_model,
        flag=flag,
        details=tuple(details),
        **provenance(data),
    )
