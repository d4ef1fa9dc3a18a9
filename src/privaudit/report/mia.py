"""Figures and report section of the ``mia`` audit, drawn from what the audit computed (no statistic is computed here).

* ``roc.png`` (:func:`plot_roc`): the ROC of every attack on log-log axes,
  where the low-FPR region that matters for membership inference is visible;
* ``vulnerability.png`` (:func:`plot_vulnerability`): the records the
  headline attack scores highest, by their id, members in red;
* :func:`section`: the attacks' numbers, the vulnerability table
  (:func:`vulnerability_table`), both figures and the threat model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privaudit.report.plotting import new_figure, save_figure

__all__ = ["figures", "plot_roc", "plot_vulnerability", "section", "tpr_text", "vulnerability_table"]


def plot_roc(curves: dict[str, tuple[Any, Any]], aucs: dict[str, float], path: Any, *, title: str) -> Any:
    """One log-log ROC curve per attack (name -> (fpr, tpr)), with the chance diagonal."""
    figure, axis = new_figure(figsize=(5.5, 5.0))
    floor = min((1.0 / max(len(fpr) - 1, 1) for fpr, _ in curves.values()), default=1e-3) / 2
    for name, (fpr, tpr) in curves.items():
        fpr, tpr = np.maximum(np.asarray(fpr, dtype=float), floor), np.maximum(np.asarray(tpr, dtype=float), floor)
        axis.step(fpr, tpr, where="post", label=f"{name} (AUC {aucs[name]:.3f})")
    axis.plot([floor, 1.0], [floor, 1.0], color="grey", linestyle=":", label="chance")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlim(floor, 1.0)
    axis.set_ylim(floor, 1.05)
    axis.set_xlabel("false-positive rate")
    axis.set_ylabel("true-positive rate")
    axis.set_title(title, fontsize="medium")
    axis.legend(loc="lower right", fontsize="small")
    return save_figure(figure, path)


def plot_vulnerability(records: list[Any], path: Any, *, attack: str) -> Any:
    """Horizontal bars of the most exposed records' scores, labelled by record id, members in red."""
    figure, axis = new_figure(figsize=(6.0, 0.35 * len(records) + 1.4))
    positions = range(len(records))
    axis.barh(positions, [r.score for r in records], color=["tab:red" if r.member else "tab:blue" for r in records])
    axis.set_yticks(list(positions), [f"record {r.record if r.record_id is None else r.record_id}" for r in records])
    axis.invert_yaxis()
    axis.set_xlabel(f"{attack} (red: member of the target)")
    return save_figure(figure, path)


def figures(run: Any) -> dict:
    """The figures of a mia run: the ROC needs the per-record scores, which only a fresh run holds."""
    from privaudit.stats.mia_metrics import roc_points

    result = run.result
    drawings: dict = {}
    if result.most_vulnerable:
        drawings["vulnerability.png"] = lambda path: plot_vulnerability(list(result.most_vulnerable), path, attack="online RMIA log ratio log Pr(x|θ)/Pr(x)")
    scores = run.observations.get("scores")
    if scores:
        member = run.observations["is_member"]
        aucs = {summary.attack: summary.auc for summary in result.attacks}
        curves = {name: roc_points(np.ravel(values), np.ravel(member)) for name, values in scores.items() if name in aucs}
        title = f"{result.num_references} reference models, {result.num_records} records"
        drawings["roc.png"] = lambda path: plot_roc(curves, aucs, path, title=title)
    return drawings


def vulnerability_table(result: Any) -> tuple[str, tuple[str, ...], list[tuple[Any, ...]]]:
    """(caption, column names, rows) of the most exposed records: rank, the user's id, RMIA's log ratio and fraction, membership, every attack's score.

    >>> from types import SimpleNamespace as R
    >>> record = R(record=4, record_id="A17", score=2.5, fraction=0.9, member=True, attack_scores=(1.0, 2.0))
    >>> caption, header, rows = vulnerability_table(R(most_vulnerable=(record,), attacks=(R(attack="loss"), R(attack="lira-online")), ties=((2.5, 3),)))
    >>> header[:5], rows
    (('rank', 'record id', 'online RMIA log ratio log Pr(x|θ)/Pr(x)', 'online RMIA fraction of z dominated', 'member of the target'), [(1, 'A17', 2.5, 0.9, 'yes', 1.0, 2.0)])
    >>> caption.split("; ")[-1]
    '3 records tied at log ratio 2.5 (in row order among them)'
    """
    attacks = tuple(summary.attack for summary in result.attacks)
    ratio, fraction = "online RMIA log ratio log Pr(x|θ)/Pr(x)", "online RMIA fraction of z dominated"
    header = ("rank", "record id", ratio, fraction, "member of the target", *(f"{name} score" for name in attacks))
    rows = []
    for rank, record in enumerate(result.most_vulnerable, 1):
        scores = tuple(record.attack_scores) if len(record.attack_scores) == len(attacks) else ("not recorded",) * len(attacks)
        share = "not recorded" if getattr(record, "fraction", None) is None else record.fraction
        rows.append((rank, record.record if record.record_id is None else record.record_id, record.score, share, "yes" if record.member else "no", *scores))
    caption = (
        "The records online RMIA ranks highest, by the id the pool gives them (its row, or its --id-col value): ranked by the log ratio, "
        "of which the fraction of population samples dominated (the paper's score) is a non-decreasing function; every attack's score beside it"
    )
    ties = tuple(getattr(result, "ties", ()))
    caption += "; ties of the log ratio broken by online LiRA's score; " + (
        "; ".join(f"{count} records tied at log ratio {value:.6g} (in row order among them)" for value, count in ties) if ties else "no tie decides the order"
    )
    return caption, header, rows


def tpr_cell(tpr: float | None, fpr: float, num_out: int) -> str:
    """A TPR at ``fpr``, or why it is not shown: "n/a (needs >= 1/FPR non-members)".

    >>> tpr_cell(0.25, 0.01, 500), tpr_cell(None, 0.01, 45)
    ('0.2500', 'n/a (needs >= 100 non-members, got 45)')
    """
    return f"{tpr:.4f}" if tpr is not None else f"n/a (needs >= {round(1 / fpr)} non-members, got {num_out})"


def tpr_text(summary: Any) -> str:
    """An attack's TPR at each FPR, "n/a (needs >= 1/FPR non-members)" where its non-members are too few.

    >>> from types import SimpleNamespace as R
    >>> tpr_text(R(fpr=(0.0, 0.001, 0.01), tpr=(0.1, None, 0.25), num_out=500))
    '0.1000, n/a (needs >= 1000 non-members, got 500), 0.2500'
    """
    return ", ".join(tpr_cell(tpr, fpr, summary.num_out) for fpr, tpr in zip(summary.fpr, summary.tpr, strict=True))


def section(data: dict, directory: Any) -> Any:
    """The report section of a mia audit's results: the attacks' AUC and TPR, the most exposed records, the ROC, the threat model."""
    from ..audits.mia.result import MIAResult
    from .html import ReportSection, plots_in
    from .provenance import provenance
    from .sections import generic_section, headline_fields, typed_result
    from .verdict import family_rows

    result = typed_result(MIAResult, data)
    if result is None:
        return generic_section(data, directory)
    details: list[tuple[str, Any]] = [
        (f"{summary.attack}: AUC; TPR at FPR {', '.join(f'{f:g}' for f in summary.fpr)}", f"{summary.auc:.4f}; " + tpr_text(summary))
        for summary in result.attacks
    ]
    details += [
        ("records attacked (members / all)", f"{result.num_members} / {result.num_records}"),
        ("population samples z (never in the target; evaluated as non-members, each against the other z)", result.num_population),
        ("reference models", result.num_references),
    ]
    meaning = (
        "How well each attack tells the target's training records from records it never saw, on this pool: the fraction of members "
        "found (TPR) when at most 1% of non-members are wrongly accused; the table lists the records most exposed."
    )
    not_meaning = (
        "These are statistics of this target and these attacks, not a bound on ε and no guarantee: a stronger attack may do better, "
        "and a record missing from the table may still be exposed."
    )
    if result.bound is not None:  # a bound mode: membership drawn by fair coins
        bound = result.bound
        details.insert(0, (f"ε lower bound ({bound.kind}, {bound.confidence:.0%}, δ = {bound.delta:g}; {bound.num_canaries} slots)", bound.epsilon))
        details[-2] = ("population samples z (never in a trial; not evaluated)", result.num_population)
        chosen = result.bound_design
        if chosen is not None:
            replicas = "; ".join(f"{name} {worst:.3g} (AUC {auc:.3f})" for name, worst, _, auc in chosen.replicas)
            details[1:1] = [
                ("ceiling: the bound a perfect attack gets on the same slots", chosen.ceiling),
                (
                    f"attack bounded and its guess rule, chosen on the {chosen.num_replicas} reference models scored as targets (their worst value at δ = 0)",
                    f"{chosen.attack}: out below {chosen.low:.4g}, in above {chosen.high:.4g}; {replicas}",
                ),
            ]
        details[:0] = family_rows(data)  # with a family named: the headline's test, its claim, the generic bound and the validity condition
        meaning = (
            f"Each audited record was put in training by a fair coin ({result.mode} mode); with the stated confidence, the training "
            "procedure run here is not (ε, δ)-DP for any ε below the bound. The attacks' AUC and TPR over the audited records are "
            "statistics beside it."
        )
        not_meaning = (
            "A bound of 0 means this attack told the coins from chance no better than a DP training would, not that the training is "
            "private; the bound is of the training procedure as run here (its --train, on this pool), not of another model."
        )
    return ReportSection(
        title="Membership inference (LOSS, LiRA, RMIA)",
        audit="mia",
        **headline_fields(result.headline()),
        meaning=meaning,
        not_meaning=not_meaning,
        threat_model=result.threat_model,
        details=tuple(details),
        tables=(vulnerability_table(result),) if result.most_vulnerable else (),
        plots=plots_in(
            directory,
            {
                "roc.png": "ROC of every attack on log-log axes (the low-FPR region matters)",
                "vulnerability.png": "The records online RMIA scores highest (red: member of the target)",
            },
        ),
        **provenance(data),
    )
