"""The figure of an exposure audit: each canary's exposure against the random-guessing baselines.

A function of the result alone (:class:`~privaudit.audits.exposure.ExposureAuditResult`):
the exposures and the baselines were computed by the audit.
"""

from __future__ import annotations

import numpy as np

from .plotting import new_figure, save_figure

__all__ = ["figures", "plot_exposures"]

MAX_TICK_LABELS = 30
_LABEL_CHARS = 18


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def plot_exposures(result, path):
    """Exposure of each canary (against its insertions when known, else in input order) and the baselines as lines."""
    canaries = result.canaries
    values = np.array([canary.exposure for canary in canaries])
    known = all(canary.insertions is not None for canary in canaries)
    figure, axis = new_figure(figsize=(9, 4.5))
    if known:
        axis.scatter([canary.insertions for canary in canaries], values, color="tab:red", zorder=3, label="canary")
        axis.set_xscale("log", base=2)
        axis.set_xlabel("insertions of the canary")
    else:
        positions = np.arange(len(canaries))
        axis.scatter(positions, values, color="tab:red", zorder=3, label="canary")
        if len(canaries) <= MAX_TICK_LABELS:
            if any(c.text is not None for c in canaries):
                axis.set_xticks(
                    positions, [_short(c.text) if c.text is not None else str(c.index) for c in canaries], rotation=60, ha="right", fontsize="small"
                )
            else:
                axis.set_xticks(positions, [str(c.index) for c in canaries])
        axis.set_xlabel("canary")
    baselines = result.baselines
    axis.axhline(baselines["max_exposure"], color="grey", linestyle=":", label=f"largest possible, log2 n = {baselines['max_exposure']:.3g}")
    axis.axhline(
        baselines["sampled_upper_95_all_canaries"],
        color="tab:orange",
        linestyle="-.",
        label=f"random guessing, 95% over all canaries ({baselines['sampled_upper_95_all_canaries']:.3g})",
    )
    axis.axhline(baselines["quantile_75"], color="tab:blue", linestyle="--", label=f"random guessing, 75th percentile ({baselines['quantile_75']:.3g})")
    axis.axhline(baselines["mean"], color="tab:green", linestyle="--", label=f"random guessing, mean ({baselines['mean']:.3g})")
    axis.set_ylabel("exposure (bits)")
    axis.set_title(f"canary exposure among {result.num_references} references")
    axis.set_ylim(min(0.0, float(values.min())) - 0.5, baselines["max_exposure"] * 1.08 + 0.5)
    axis.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return save_figure(figure, path)


def figures(run) -> dict:
    """The one figure of an exposure run."""
    return {"exposure.png": lambda path: plot_exposures(run.result, path)}
