"""Figures of the ``mia`` audit, drawn from what the audit computed (no statistic is computed here).

* ``roc.png`` (:func:`plot_roc`): the ROC of every attack on log-log axes,
  where the low-FPR region that matters for membership inference is visible;
* ``vulnerability.png`` (:func:`plot_vulnerability`): the records the
  headline attack scores highest, by their row in the pool, members in red.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privaudit.report.plotting import new_figure, save_figure

__all__ = ["figures", "plot_roc", "plot_vulnerability"]


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
    axis.set_yticks(list(positions), [f"record {r.record}" for r in records])
    axis.invert_yaxis()
    axis.set_xlabel(f"{attack} score (red: member of the target)")
    return save_figure(figure, path)


def figures(run: Any) -> dict:
    """The figures of a mia run: the ROC needs the per-record scores, which only a fresh run holds."""
    from privaudit.stats.mia_metrics import roc_points

    result = run.result
    drawings: dict = {}
    if result.most_vulnerable:
        drawings["vulnerability.png"] = lambda path: plot_vulnerability(list(result.most_vulnerable), path, attack="online RMIA")
    scores = run.observations.get("scores")
    if scores:
        member = run.observations["is_member"]
        curves = {name: roc_points(values, member) for name, values in scores.items()}
        aucs = {summary.attack: summary.auc for summary in result.attacks}
        title = f"{result.num_references} reference models, {result.num_records} records"
        drawings["roc.png"] = lambda path: plot_roc(curves, aucs, path, title=title)
    return drawings
