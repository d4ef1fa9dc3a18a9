"""Figures of a scores audit: the ROC on log-log axes, the score histograms, and the trade-off curve.

Each figure only draws what the audit computed (:class:`~privaudit.audits.scores.audit.ScoresCurves`
and the scores themselves): no statistic is computed here. The trade-off
figure compares the attack with the claimed ε when one was given, and with
the curve of the bound's own ε otherwise (the result's ``tradeoff`` field
says which).

:func:`section` builds the family's report section from its ``results.json``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .html import ReportSection, plots_in
from .plotting import new_figure, save_figure
from .provenance import provenance
from .sections import generic_section, headline_fields, typed_result

__all__ = ["figures", "plot_roc_loglog", "plot_score_histograms", "plot_tradeoff_curves", "section"]

_STYLES = (("tab:blue", "-"), ("tab:green", "--"), ("tab:purple", "-."))


def plot_roc_loglog(fpr, tpr, path, *, floor: float, title: str = "ROC"):
    """TPR against FPR on log-log axes, where the low-FPR regime that matters for privacy is visible.

    ``fpr``/``tpr`` are the ROC points; ``floor`` (half of one observation's
    rate) stands in for zero, which log axes cannot show.
    """
    figure, axis = new_figure(figsize=(5, 4.5))
    axis.plot(np.maximum(fpr, floor), np.maximum(tpr, floor), label="attack")
    grid = np.geomspace(floor, 1.0, 50)
    axis.plot(grid, grid, color="grey", linestyle=":", label="chance")
    axis.set(xscale="log", yscale="log", xlabel="false positive rate", ylabel="true positive rate", title=title)
    axis.legend()
    return save_figure(figure, path)


def plot_score_histograms(in_scores, out_scores, path, *, title: str):
    """Overlaid density histograms of the members' and non-members' scores, on shared bins."""
    figure, axis = new_figure(figsize=(6, 4))
    both = np.concatenate([in_scores, out_scores])
    low, high = float(np.min(both)), float(np.max(both))
    if low == high:  # every score equal: widen the range so the plot is not empty
        low, high = low - 0.5, high + 0.5
    bins = np.linspace(low, high, 61)
    axis.hist(out_scores, bins=bins, density=True, alpha=0.45, color="tab:blue", label=f"non-members (out, {len(out_scores)})")
    axis.hist(in_scores, bins=bins, density=True, alpha=0.45, color="tab:orange", label=f"members (in, {len(in_scores)})")
    axis.set(xlabel="score (higher = member)", ylabel="density", title=title)
    axis.legend()
    return save_figure(figure, path)


def plot_tradeoff_curves(fpr, tpr, alpha, references: dict, path, *, title: str):
    """The attack's empirical trade-off curve (FNR against FPR) and the reference curves, each given on ``alpha``."""
    figure, axis = new_figure(figsize=(5, 5))
    axis.plot(fpr, 1.0 - np.asarray(tpr), color="tab:red", label="attack (empirical)")
    for (label, fnr), (color, style) in zip(references.items(), _STYLES * (1 + len(references) // len(_STYLES))):
        axis.plot(alpha, fnr, color=color, linestyle=style, label=label)
    axis.plot([0.0, 1.0], [1.0, 0.0], color="grey", linestyle=":", label="no privacy loss")
    axis.set(xlim=(0.0, 1.0), ylim=(0.0, 1.0), xlabel="false-positive rate", ylabel="false-negative rate", title=title)
    axis.set_aspect("equal")
    axis.legend(loc="upper right", fontsize="small")
    return save_figure(figure, path)


def figures(run) -> dict:
    """The figures of a scores run, each a function of the run's result and of the curves its audit computed."""
    result = run.result
    in_scores, out_scores, curves = run.observations["in_scores"], run.observations["out_scores"], run.observations["curves"]
    floor = 0.5 / max(result.num_in, result.num_out)
    drawings = {
        "roc.png": lambda path: plot_roc_loglog(curves.roc_fpr, curves.roc_tpr, path, floor=floor),
        "scores.png": lambda path: plot_score_histograms(in_scores, out_scores, path, title="scores: members (in) and non-members (out)"),
    }
    if curves.references:
        against = (result.tradeoff or {}).get("against", "")
        title = "trade-off against the claimed ε" if against == "claimed epsilon" else "trade-off against the bound's own ε"
        drawings["tradeoff.png"] = lambda path: plot_tradeoff_curves(curves.roc_fpr, curves.roc_tpr, curves.alpha, curves.references, path, title=title)
    return drawings


def section(data: dict, directory: Path | None) -> ReportSection:
    """The report section of a results dict of this family; ``directory`` holds its figures (see :mod:`privaudit.report.sections`)."""
    from ..audits.scores.audit import ScoresResult

    result = typed_result(ScoresResult, data)
    if result is None:
        return generic_section(data, directory)
    headline = result.headline()
    details = [("AUC (in-sample statistic)", result.auc)]
    details += [(f"TPR at FPR {level}", rate) for level, rate in result.tpr_at_fpr.items()]
    if result.bound_eps_delta is not None:
        details.append((f"(ε, δ) lower bound ({result.bound_eps_delta.kind})", result.bound_eps_delta.epsilon))
    if result.one_run is not None:
        details.append((f"one-run lower bound ({result.one_run.kind}, method {result.one_run.method})", result.one_run.epsilon))
    if result.claimed_epsilon is not None:
        details.append(("claimed ε", result.claimed_epsilon))
    details.append(("scores in / out", f"{result.num_in} / {result.num_out}"))
    tradeoff = result.tradeoff or {}
    if tradeoff.get("note"):
        details.append(("trade-off figure compares the attack with", tradeoff["note"]))
    against = "the claimed ε" if tradeoff.get("against", "claimed epsilon") == "claimed epsilon" else "the curve of the bound's own ε"
    claim = result.claimed_epsilon
    return ReportSection(
        title="Membership-inference scores: ε lower bounds",
        audit="scores",
        **headline_fields(headline),
        meaning="With the stated confidence, the mechanism that produced these scores is no better than ε-DP: its members and non-members were told apart this well.",
        not_meaning="The bound is only as strong as the attack behind the scores; a small bound does not show the model is private.",
        threat_model=result.threat_model,
        flag=f"Claim rejected: the lower bound exceeds the claimed ε = {claim:g}." if headline.flag else None,
        details=tuple(details),
        plots=plots_in(directory, {"roc.png": "ROC on log-log axes", "scores.png": "Score histograms", "tradeoff.png": f"Trade-off curve against {against}"}),
        **provenance(data),
    )
