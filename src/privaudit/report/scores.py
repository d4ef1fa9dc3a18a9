"""Figures of a scores audit: the ROC on log-log axes, the score histograms, and the trade-off curve against a claim."""

from __future__ import annotations

import numpy as np

from ..stats.metrics import roc_curve
from .dpsgd import plot_observation_histograms, plot_tradeoff
from .plotting import new_figure, save_figure

__all__ = ["figures", "plot_roc_loglog"]


def plot_roc_loglog(in_scores, out_scores, path, *, title: str = "ROC"):
    """TPR against FPR on log-log axes, where the low-FPR regime that matters for privacy is visible."""
    curve = roc_curve(in_scores, out_scores)
    floor = 0.5 / max(len(in_scores), len(out_scores))
    figure, axis = new_figure(figsize=(5, 4.5))
    axis.plot(np.maximum(curve.fpr, floor), np.maximum(curve.tpr, floor), label="attack")
    grid = np.geomspace(floor, 1.0, 50)
    axis.plot(grid, grid, color="grey", linestyle=":", label="chance")
    axis.set(xscale="log", yscale="log", xlabel="false positive rate", ylabel="true positive rate", title=title)
    axis.legend()
    return save_figure(figure, path)


def figures(run) -> dict:
    in_scores, out_scores = run.observations["in_scores"], run.observations["out_scores"]
    drawings = {
        "roc.png": lambda path: plot_roc_loglog(in_scores, out_scores, path),
        "scores.png": lambda path: plot_observation_histograms(in_scores, out_scores, path, title="scores: members (in) and non-members (out)"),
    }
    if run.result.claimed_epsilon is not None:
        drawings["tradeoff.png"] = lambda path: plot_tradeoff(
            in_scores, out_scores, path, claimed_epsilon=run.result.claimed_epsilon, delta=run.result.bound.delta
        )
    return drawings
