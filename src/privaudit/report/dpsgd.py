"""DP-SGD audit figures, after Nasr et al., "Tight Auditing of Differentially Private Machine Learning" (2023).

Each function draws what the audit computed (:mod:`privaudit.audits.dpsgd`),
writes one PNG to ``path`` and returns the path; no statistic is computed here:

* :func:`plot_observation_histograms` (their Figure 4): density histograms of
  the "in" observations (runs with the canary) and the "out" ones (without
  it) on the audit's shared bins, each with the Gaussian the audit fitted to
  it (:func:`~privaudit.audits.dpsgd.audit.observation_fits`).
* :func:`plot_tradeoff`: the empirical trade-off curve (FNR against FPR)
  against the claimed guarantee's curves, as μ-GDP and as (ε, δ)-DP
  (:func:`~privaudit.audits.dpsgd.audit.tradeoff_curves`).
* :func:`plot_bound_vs_observations` (their Figure 3): the GDP / Clopper–Pearson
  lower bound on ε on growing prefixes of the observations, as the audit
  computed it; it approaches the true ε as the confidence intervals shrink.

:func:`section` builds the family's report section from its ``results.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privaudit.report.plotting import new_figure, save_figure
from privaudit.report.scores import plot_tradeoff_curves

from .html import ReportSection, plots_in
from .provenance import provenance
from .sections import generic_section, headline_fields, typed_result
from .verdict import user_claim

__all__ = ["figures", "plot_bound_vs_observations", "plot_observation_histograms", "plot_tradeoff", "section"]


def plot_observation_histograms(in_scores, out_scores, fits, path, *, title=None):
    """Overlaid density histograms of the "in" and "out" observations on ``fits.bins``, each with its fitted Gaussian.

    ``fits`` is the audit's :class:`~privaudit.audits.dpsgd.config.ObservationFits` of the same observations.
    """
    figure, axis = new_figure(figsize=(6, 4))
    for key, name, scores, color in (("out", "out (no canary)", out_scores, "tab:blue"), ("in", "in (with canary)", in_scores, "tab:orange")):
        axis.hist(scores, bins=fits.bins, density=True, alpha=0.45, color=color)  # shared bins: comparable bar for bar
        fit = fits.fits[key]
        label = f"{name}: N({fit.mean:.3g}, {fit.std:.3g}²)"
        if fit.density is not None:
            axis.plot(fits.grid, fit.density, color=color, label=label)
        else:  # a point mass has no density to draw; mark it instead
            axis.axvline(fit.mean, color=color, label=label)
    axis.set_xlabel("observation")
    axis.set_ylabel("density")
    if title is not None:
        axis.set_title(title)
    axis.legend()
    return save_figure(figure, path)


def plot_tradeoff(curves, path):
    """Empirical trade-off curve (FNR vs FPR) against the claimed μ-GDP and (ε, δ) curves of ``curves``.

    ``curves`` is the audit's :class:`~privaudit.audits.scores.audit.ScoresCurves` (:func:`~privaudit.audits.dpsgd.audit.tradeoff_curves`).
    """
    return plot_tradeoff_curves(curves.roc_fpr, curves.roc_tpr, curves.alpha, curves.references, path, title="trade-off against the claimed ε")


def plot_bound_vs_observations(points, path, *, delta, confidence, claimed_epsilon=None):
    """Draw the lower bound on ε against the number of observations it used (Tight Auditing Figure 3).

    ``points`` are :class:`privaudit.audits.dpsgd.config.PrefixBound`-like objects
    (``num_in``, ``epsilon``), computed by the audit, in increasing ``num_in``.
    """
    figure, axis = new_figure(figsize=(6, 4))
    axis.plot([p.num_in for p in points], [p.epsilon for p in points], marker="o", label=f"GDP lower bound ({confidence:.0%})")
    if claimed_epsilon is not None:
        axis.axhline(claimed_epsilon, color="grey", linestyle="--", label=f"claimed ε = {claimed_epsilon:.3g}")
    axis.set_xscale("log")
    axis.set_xlabel('"in" observations (with "out" in proportion)')
    axis.set_ylabel(f"ε lower bound at δ = {delta:.2g}")
    # headroom above the highest point or the claimed line, so neither sits on the frame
    top = max([p.epsilon for p in points] + ([claimed_epsilon] if claimed_epsilon is not None else []))
    axis.set_ylim(0.0, 1.1 * top if top > 0 else 1.0)
    axis.legend()
    return save_figure(figure, path)


def figures(run) -> dict:
    """The three figures of a DP-SGD audit run, drawn from its result and what its audit computed."""
    result, config, observations = run.result, run.result.config, run.observations
    user = user_claim(result)
    claimed = float(result.claimed_step_epsilon if user is None else user)
    return {
        "observations.png": lambda path: plot_observation_histograms(
            observations["in_scores"], observations["out_scores"], observations["fits"], path, title=f"DP-SGD canary observations (bug: {config.bug})"
        ),
        "tradeoff.png": lambda path: plot_tradeoff(observations["curves"], path),
        "bound_vs_observations.png": lambda path: plot_bound_vs_observations(
            result.bound_vs_observations, path, delta=config.delta, confidence=config.confidence, claimed_epsilon=claimed
        ),
    }


def section(data: dict, directory: Path | None) -> ReportSection:
    """The report section of a results dict of this family; ``directory`` holds its figures (see :mod:`privaudit.report.sections`)."""
    from ..audits.dpsgd.config import DPSGDAuditResult

    result = typed_result(DPSGDAuditResult, data)
    if result is None:
        return generic_section(data, directory)
    headline, user = result.headline(), user_claim(result)
    claimed = result.claimed_step_epsilon if user is None else user
    details: list[tuple[str, Any]] = (
        [("claimed per-step ε", claimed)]
        if user is None
        else [("your claim, per step (converted)", user), ("accountant's per-step ε for the config's σ (evidence)", result.claimed_step_epsilon)]
    )
    details += [(f"per-step bound: {name} ({bound.kind})", bound.epsilon) for name, bound in result.step_bounds.items()]
    details += [
        ("end-to-end ε (estimate, §5.5 composition)", result.end_to_end.epsilon),
        ("claimed end-to-end ε" if user is None else "accountant's end-to-end ε for the config (evidence)", result.claimed_end_to_end_epsilon),
        ("canary / other observations", f"{result.num_in} / {result.num_out}"),
        ("injected bug", result.config.bug),
        ("test accuracy", "not measured" if result.test_accuracy is None else result.test_accuracy),
    ]
    flag = None
    if result.flagged:
        flag = f"Claim rejected: the per-step ε lower bound exceeds the claimed {claimed:.3g}; the implementation is not as private as claimed."
    return ReportSection(
        title=f"DP-SGD white-box audit (bug: {result.config.bug})",
        audit="dpsgd",
        **headline_fields(headline),
        meaning=(
            "With the stated confidence, one step of this training run is no better than ε-DP at the reported δ: "
            "the canaries' noisy gradients were told apart this well. A bound above the claimed ε proves the claim false."
        ),
        not_meaning=(
            "A bound below the claim does not prove the claim: the audit only sees what its canaries reveal. "
            "The end-to-end figure composes the per-step bound and is an estimate, not a bound."
        ),
        threat_model=result.threat_model,
        flag=flag,
        details=tuple(details),
        plots=plots_in(
            directory,
            {
                "observations.png": "Canary observations: in (canary present) vs out, with fitted Gaussians",
                "tradeoff.png": "Empirical trade-off curve against the claimed GDP and (ε, δ) curves",
                "bound_vs_observations.png": "The bound as observations accumulate",
            },
        ),
        **provenance(data),
    )
