"""Figures of a one-shot FL audit, after Andrew et al., "One-shot Empirical Privacy Estimation for FL".

* :func:`plot_cosine_densities` (their Figures 1 and 3): the kernel density
  estimates of each set of canary cosines (one per number of participations)
  and the null's density, drawn in black, as the audit computed them
  (:func:`privaudit.audits.fl.audit.cosine_densities`).
* :func:`plot_epsilon_vs_repetitions` (their Figures 2 and 4): ε_est as bars
  and the 95% ε_lo as red ticks, per number of canary participations.

The numbers all come from the audit (:mod:`privaudit.audits.fl`); this module only draws.

:func:`section` builds the family's report section from its ``results.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from privaudit._core.validation import as_scores, check_count

from .html import ReportSection, plots_in
from .plotting import new_figure, save_figure
from .provenance import provenance
from .sections import generic_section, headline_fields, typed_result

__all__ = ["figures", "plot_cosine_densities", "plot_epsilon_vs_repetitions", "section"]


def plot_cosine_densities(densities, path, *, title=None):
    """Each density of ``densities`` (a :class:`privaudit.audits.fl.audit.CosineDensities`) with the null's, in black.

    >>> import tempfile, pathlib
    >>> from privaudit.audits.fl import cosine_densities
    >>> drawn = cosine_densities({"1": np.random.default_rng(0).normal(0.02, 0.01, 100)}, dimension=10_000)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "densities.png"
    ...     _ = plot_cosine_densities(drawn, path)
    ...     path.stat().st_size > 0
    True
    """
    figure, axes = new_figure(figsize=(6, 4))
    for label, density in densities.densities.items():
        axes.plot(densities.grid, density, label=label)
    axes.plot(densities.grid, densities.null, color="black", label=densities.null_label)
    axes.set_xlabel("cosine")
    axes.set_ylabel("density")
    axes.set_title(title or "canary cosines")
    axes.legend(title="participations")
    return save_figure(figure, path)


def plot_epsilon_vs_repetitions(repetitions, estimates, lower_bounds, path, *, analytical=None, title=None):
    """ε_est (bars) and ε_lo (red ticks), with the analytical ε (crosses) if given, per repetition count.

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "eps.png"
    ...     _ = plot_epsilon_vs_repetitions([1, 2], [0.5, 1.0], [0.1, 0.3], path)
    ...     path.stat().st_size > 0
    True
    """
    labels = [str(check_count(r, "repetitions", minimum=1)) for r in repetitions]
    estimates = as_scores(np.asarray(estimates, dtype=np.float64), "estimates")
    lower_bounds = as_scores(np.asarray(lower_bounds, dtype=np.float64), "lower_bounds")
    if not (len(labels) == estimates.size == lower_bounds.size):
        raise ValueError("`repetitions`, `estimates` and `lower_bounds` must have the same length")
    positions = np.arange(len(labels))
    figure, axes = new_figure(figsize=(5, 4))
    axes.bar(positions, estimates, color="tab:blue", label="ε_est")
    axes.scatter(positions, lower_bounds, marker="_", s=600, color="red", label="ε_lo (95%)", zorder=3)
    if analytical is not None:
        analytical = np.asarray(analytical, dtype=np.float64)
        finite = np.isfinite(analytical)
        axes.scatter(positions[finite], analytical[finite], marker="x", color="black", label="analytical ε", zorder=3)
    axes.set_xticks(positions, labels)
    axes.set_xlabel("canary participations")
    axes.set_ylabel("ε")
    axes.set_title(title or "estimated ε and lower bound")
    axes.legend()
    return save_figure(figure, path)


def figures(run) -> dict[str, Any]:
    """The four figures of an FL audit run: cosine densities and ε against participations, per threat model."""
    result, densities = run.result, run.observations["densities"]
    sigma = result.config.training.noise_multiplier
    repetitions = [r.participations for r in result.runs]
    analytical = [r.analytical_epsilon for r in result.runs]
    drawings = {
        "cosines_final.png": lambda path: plot_cosine_densities(densities["final"], path, title=f"final model, noise multiplier {sigma:g}"),
        "cosines_all.png": lambda path: plot_cosine_densities(densities["all"], path, title=f"all iterates (max over rounds), noise multiplier {sigma:g}"),
    }
    for key, name in (("final", "final model"), ("all", "all iterates")):
        drawings[f"epsilon_{key}.png"] = lambda path, key=key, name=name: plot_epsilon_vs_repetitions(  # type: ignore[misc]
            repetitions,
            [getattr(r, key).estimate.epsilon for r in result.runs],
            [getattr(r, key).lower_bound.epsilon for r in result.runs],
            path,
            analytical=analytical,
            title=f"{name}, noise multiplier {sigma:g}",
        )
    return drawings


def section(data: dict, directory: Path | None) -> ReportSection:
    """The report section of a results dict of this family; ``directory`` holds its figures (see :mod:`privaudit.report.sections`)."""
    from ..audits.fl.audit import FLAuditResult

    result = typed_result(FLAuditResult, data)
    if result is None:
        return generic_section(data, directory)
    headline = result.headline()
    details: list[tuple[str, Any]] = []
    for run in result.runs:
        label = f"{run.participations} participation(s)" if run.sampling == "fixed" else run.sampling
        details += [
            (f"{label}: analytical ε (accountant)", run.analytical_epsilon),
            (
                f"{label}: final model ε_est (estimate) / ε_lo (lower bound)",
                f"{_text_number(run.final.estimate.epsilon)} / {_text_number(run.final.lower_bound.epsilon)}",
            ),
            (
                f"{label}: all iterates ε_est (estimate) / ε_lo (lower bound)",
                f"{_text_number(run.all.estimate.epsilon)} / {_text_number(run.all.lower_bound.epsilon)}",
            ),
        ]
    return ReportSection(
        title="One-shot FL audit (DP-FedAvg with canary clients)",
        audit="fl",
        **headline_fields(headline),
        meaning=(
            "One training run with random canary clients: the canaries' cosines with the final model update are compared "
            "with those of canaries never inserted, and the ε of two Gaussians that far apart is the estimate. The lower "
            f"bounds ε_lo beside it hold at {result.config.confidence:.0%} confidence."
        ),
        not_meaning=(
            "ε_est is an estimate, not a bound: it assumes the cosines are Gaussian (checked by Anderson–Darling) and "
            "can fall below the true ε. It measures random canary clients, not the most vulnerable real client. One run's "
            "ε_est moves with the seed and with the CPU it trained on: read it beside its spread over seeds (the README "
            "gives the demo's)."
        ),
        threat_model="; ".join(result.threat_models.values()) or "final model / all iterates",
        details=tuple(details),
        plots=plots_in(
            directory,
            {
                "cosines_final.png": "Canary cosines with the final model update",
                "cosines_all.png": "Largest canary cosine over all rounds, with the unobserved canaries",
                "epsilon_final.png": "ε against participations, final model",
                "epsilon_all.png": "ε against participations, all iterates",
            },
        ),
        **provenance(data),
    )


def _text_number(value: float) -> str:
    return f"{value:.4g}"
