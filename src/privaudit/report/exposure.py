"""The figure of an exposure audit: each canary's exposure against the random-guessing baselines.

A function of the result alone (:class:`~privaudit.audits.exposure.audit.ExposureAuditResult`):
the exposures and the baselines were computed by the audit.

:func:`section` builds the family's report section from its ``results.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .html import ReportSection, plots_in
from .plotting import new_figure, save_figure
from .provenance import provenance
from .sections import generic_section, headline_fields, typed_result

__all__ = ["figures", "plot_exposures", "section"]

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


def section(data: dict, directory: Path | None) -> ReportSection:
    """The report section of a results dict of this family; ``directory`` holds its figures (see :mod:`privaudit.report.sections`)."""
    from ..audits.exposure.audit import ExposureAuditResult

    result = typed_result(ExposureAuditResult, data)
    if result is None:
        return generic_section(data, directory)
    headline = result.headline()
    baselines, bound = result.baselines, result.epsilon_bound
    details: list[tuple[str, Any]] = []
    for canary in result.canaries:
        name = f"canary {canary.index}" if canary.text is None else f"canary {canary.index} '{canary.text}'"
        inserted = "" if canary.insertions is None else f", inserted {canary.insertions}×"
        extrapolated = "" if canary.exposure_extrapolated is None else f" (extrapolated, estimate: {canary.exposure_extrapolated:.4g})"
        details.append((f"{name}{inserted}: exposure (rank {canary.rank})", f"{canary.exposure:.4g}{extrapolated}"))
    if bound is not None:
        details.append((f"ε lower bound from exposures ({bound['confidence']:.0%}, group of {bound['duplicates']})", bound["epsilon"]))
        details.append(("ε estimate from exposures (no confidence)", bound["epsilon_estimate"]))
    else:
        details.append(("ε lower bound from exposures", "not computed: the insertions were not given (--insertions or --insertions-col)"))
    details += [
        ("largest possible exposure, log2 n", baselines["max_exposure"]),
        ("random guessing: mean / median / 75th percentile", f"{baselines['mean']:.4g} / {baselines['median']:.4g} / {baselines['quantile_75']:.4g}"),
        ("exposure no unmemorised canary reaches (95%, all canaries)", baselines["sampled_upper_95_all_canaries"]),
        ("references", result.num_references),
    ]
    if result.extrapolation is not None:
        details.append(("skew-normal fit: Kolmogorov–Smirnov statistic (optimistic: fitted on the same data)", result.extrapolation["ks_statistic"]))
    flag = None
    if headline.flag:
        flag = (
            f"Memorisation: a canary's exposure ({headline.value:.3g} bits) exceeds what random guessing reaches with 95% "
            f"probability over all canaries ({baselines['sampled_upper_95_all_canaries']:.3g} bits)."
        )
    return ReportSection(
        title="Canary exposure (your model's losses)",
        audit="exposure",
        **headline_fields(headline),
        meaning=(
            "Exposure is log2 n minus log2 of the canary's rank among n references that were never inserted: a canary with "
            "exposure e is as likely under the model as the top 2^-e of the references. Far above the random-guessing "
            "baselines, the model memorised the inserted canary."
        ),
        not_meaning=(
            "Exposure is a statistic of these canaries and this model, not an ε; sampled exposure cannot exceed log2 n. "
            "The ε lower bound beside it holds for a group of the largest insertion count, not for one example."
        ),
        threat_model=result.threat_model,
        flag=flag,
        details=tuple(details),
        plots=plots_in(directory, {"exposure.png": "Exposure of each canary against the random-guessing baselines"}),
        **provenance(data),
    )
