"""Figures and report section of the ``synthetic-data`` audit, drawn from what the audit computed (no statistic is computed here).

* ``roc.png``: every attack's ROC on log-log axes (:func:`privaudit.report.mia.plot_roc`),
  where the low-FPR region that DCR's aggregate verdict and the AUC hide is visible;
* ``vulnerability.png``: the records the headline attack (the robust DCR) scores highest, by the user's ids;
* :func:`section`: the attacks beside DCR's verdict on the same data, the
  most exposed records, the bound with its ceiling and the claim.
"""

from __future__ import annotations

from typing import Any

from .mia import plot_roc, plot_vulnerability, tpr_cell, tpr_text

__all__ = ["dcr_gap_note", "exposed_table", "figures", "section"]


def figures(run: Any) -> dict:
    """The figures of a synthetic-data run: the ROC needs the per-record scores, which only a fresh run holds."""
    from types import SimpleNamespace

    from ..stats.mia_metrics import roc_points

    result = run.result
    drawings: dict = {}
    if result.most_exposed:
        bars = [SimpleNamespace(record=r.record_id, record_id=r.record_id, score=r.score, member=r.member) for r in result.most_exposed]
        drawings["vulnerability.png"] = lambda path: plot_vulnerability(
            bars, path, attack="robust DCR: minus the distance to the closest synthetic row (0 = a copy)"
        )
    curves_in = run.observations.get("curves")
    if curves_in:
        curves = {name: roc_points(scores, member) for name, (scores, member) in curves_in.items()}
        aucs = {summary.attack: summary.auc for summary in result.attacks}
        title = f"{result.num_train} members, {result.num_non_members} non-members, {result.num_synthetic} synthetic rows"
        drawings["roc.png"] = lambda path: plot_roc(curves, aucs, path, title=title)
    return drawings


def dcr_gap_note(result: Any) -> str:
    """One sentence: DCR's verdict on this table, beside the headline attack's TPR at 1% FPR and its AUC.

    >>> from types import SimpleNamespace as R
    >>> attack = R(auc=0.52, tpr_at=lambda fpr: 0.08, num_non_members=150)
    >>> dcr = R(passes=True, overfitting_protection=1.0, baseline_protection=0.9)
    >>> dcr_gap_note(R(dcr=dcr, attack=lambda name: attack))[:40]
    "Passes DCR's holdout test (overfitting p"
    >>> few = R(auc=0.52, tpr_at=lambda fpr: None, num_non_members=45)
    >>> dcr_gap_note(R(dcr=R(passes=False, overfitting_protection=0.8, baseline_protection=0.6), attack=lambda name: few)).split("; ")[1]
    "the robust DCR's AUC is 0.520 (its TPR at 1% FPR: n/a (needs >= 100 non-members, got 45))."
    """
    from ..audits.synthetic_data.types import HEADLINE_ATTACK

    dcr, headline = result.dcr, result.attack(HEADLINE_ATTACK)
    verdict = f"DCR's holdout test (overfitting protection {dcr.overfitting_protection:.2f}, baseline protection {dcr.baseline_protection:.2f})"
    tpr = headline.tpr_at(0.01)
    if tpr is None:
        found = f"the robust DCR's AUC is {headline.auc:.3f} (its TPR at 1% FPR: {tpr_cell(None, 0.01, headline.num_non_members)})."
        return f"{'Passes' if dcr.passes else 'Fails'} {verdict}; {found}"
    found = f"the robust DCR finds {tpr:.1%} of the members at 1% FPR (AUC {headline.auc:.3f})"
    return f"{'Passes' if dcr.passes else 'Fails'} {verdict}; {found}."


def exposed_table(result: Any) -> tuple[str, tuple[str, ...], list[tuple[Any, ...]]]:
    """(caption, column names, rows) of the most exposed records by the user's id, with every attack's score."""
    header = (
        "rank",
        "record id",
        "member",
        "robust DCR score",
        "DOMIAS score",
        "DOMIAS (KDE) score",
        "marginal score",
        "DCR score",
        "shadow score",
        "outlier score",
    )
    rows = [
        (rank, r.record_id, "yes" if r.member else "no", *("—" if v is None else v + 0.0 for v in r.attack_scores), r.outlier_score)
        for rank, r in enumerate(result.most_exposed, 1)
    ]
    return "The records the robust DCR (the headline attack) scores highest, by their id (shadow score: only for the shadow attack's targets)", header, rows


def section(data: dict, directory: Any) -> Any:
    """The report section of a synthetic-data audit: attacks beside DCR's verdict, exposed records, the bound and its ceiling."""
    from ..audits.synthetic_data import SyntheticDataResult
    from ..audits.synthetic_data.decision import dcr_explanation
    from ..stats.verdict import describe_verdict
    from .html import ReportSection, plots_in
    from .provenance import provenance
    from .sections import generic_section, headline_fields, typed_result
    from .verdict import family_rows

    result = typed_result(SyntheticDataResult, data)
    if result is None:
        return generic_section(data, directory)
    dcr = result.dcr
    details: list[tuple[str, Any]] = []
    details.append(("DCR's verdict beside the attacks", dcr_gap_note(result)))
    details += [
        (
            f"{s.attack}: AUC; TPR at FPR {', '.join(f'{f:g}' for f in s.fpr)} ({s.num_members} members / {s.num_non_members} non-members)",
            f"{s.auc:.4f}; " + tpr_text(s),
        )
        for s in result.attacks
    ]
    details += [
        (
            "DCR holdout test: share of synthetic rows closer to training than to holdout (p-value)",
            f"{dcr.share_closer_to_training:.3f} ({dcr.binomial_p_value:.3g})",
        ),
        (
            "DCROverfittingProtection / DCRBaselineProtection (privaudit's, after sdmetrics)",
            f"{dcr.overfitting_protection:.3f} / {dcr.baseline_protection:.3f}",
        ),
        (
            "sdmetrics' own DCROverfittingProtection / DCRBaselineProtection",
            "sdmetrics not installed"
            if dcr.sdmetrics_overfitting_protection is None
            else f"{dcr.sdmetrics_overfitting_protection:.3f} / {dcr.sdmetrics_baseline_protection:.3f}",
        ),
        ("audited", result.source),
        (
            "records: training / population sample / evaluation non-members / synthetic",
            f"{result.num_train} / {result.num_reference} / {result.num_non_members} / {result.num_synthetic}",
        ),
        ("shadow targets (selection)", f"{', '.join(result.shadow_targets) or 'none'} ({result.selection})"),
    ]
    flag = None
    decision: dict[str, Any] = {}
    if result.decision is not None:  # the steward's decision opens the section: exact tests of this run's scores, the records named
        d = result.decision
        decision = {
            "decision_summary": d.summary(),
            "decision": d.sentence(),
            "decision_notes": (dcr_explanation(dcr, result.num_synthetic, d.num_exposed),),
            "decision_flagged": d.records_exposed,
        }
    if result.bound is not None:
        b = result.bound
        details[:0] = [
            (
                f"ε lower bound per release ({b.bound.confidence:.0%}, δ = {b.bound.delta:g}, {b.bound.num_canaries} canaries, {b.bound.num_in} in)",
                b.bound.epsilon,
            ),
            ("ceiling (every guess right, same canaries and confidence)", b.ceiling),
            (
                "bound ÷ ceiling",
                f"{b.bound.epsilon / b.ceiling:.3f}" + (" (at its ceiling: at least this, maybe much more)" if b.at_ceiling else "") if b.ceiling > 0 else "—",
            ),
            ("verdict on the claim (per release)", describe_verdict(b.verdict)),
            ("canaries", f"{b.canaries}; signal: {b.signal}"),
        ]
        details[:0] = family_rows(data)  # with a family named: the headline's test, its claim, the generic bound and the validity condition
        if b.verdict is not None and b.verdict.flagged:
            flag = (
                flag + " " if flag else ""
            ) + f"The bound {b.bound.epsilon:.3f} exceeds the claimed ε {b.verdict.claim.epsilon:g}: the claim is rejected at {b.bound.confidence:.0%}."
    meaning = (
        "How well each attack tells the training records from records of the same population the generator never saw, from the "
        "synthetic table alone (and the generator's retraining, for the shadow attack): the fraction of members found at 1% FPR. "
        "DCR's aggregate verdict is shown beside it on the same data."
    )
    not_meaning = (
        "The attacks' numbers are statistics of this release, not a bound on ε: a stronger attack may do better, and passing DCR's "
        "test says nothing about the few records an attack finds at low FPR. A bound of 0 means the canaries were not told from chance, "
        "not that the generator is private."
    )
    return ReportSection(
        title="Released synthetic tabular data (robust DCR, DOMIAS, DCR, shadow generators)",
        audit="synthetic-data",
        **headline_fields(result.headline()),
        meaning=meaning,
        not_meaning=not_meaning,
        threat_model=result.threat_model,
        flag=flag,
        **decision,
        details=tuple(details),
        tables=(exposed_table(result),) if result.most_exposed else (),
        plots=plots_in(
            directory,
            {
                "roc.png": "ROC of every attack on log-log axes: the leak lives at low FPR, not in the AUC",
                "vulnerability.png": "The records the robust DCR (the headline attack) scores highest, by their id (red: member of the training table)",
            },
        ),
        **provenance(data),
    )
