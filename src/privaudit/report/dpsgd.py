"""DP-SGD audit figures, after Nasr et al., "Tight Auditing of Differentially Private Machine Learning" (2023).

Each function takes the attack's observations on the "in" runs (trained with
the canary) and the "out" runs (without it) as plain arrays, writes one PNG to
``path`` and returns the path:

* :func:`plot_observation_histograms` (their Figure 4): density histograms of
  the two sets of observations, each with the Gaussian fitted to it. Under
  the Gaussian mechanism the two should look like N(0, σ²) and N(μσ, σ²), so
  the fit shows at a glance whether the GDP reading of the audit is sensible.
* :func:`plot_tradeoff`: the empirical trade-off curve (FNR against FPR of the
  attack "in iff observation >= t", one point per threshold) against the
  trade-off curves of the claimed guarantee, both as μ-GDP (G_μ with the μ
  that implies the claimed (ε, δ)) and as (ε, δ)-DP itself. An attack whose
  curve dips below the claimed curve refutes the claim (up to sampling error).
* :func:`plot_bound_vs_observations` (their Figure 3): the GDP / Clopper–Pearson
  lower bound on ε on growing prefixes of the observations, as the audit
  computed it; it approaches the true ε as the confidence intervals shrink.

The statistics all come from :mod:`privaudit.stats`; this module only draws.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from privaudit._core.validation import as_scores, check_positive, check_probability
from privaudit.report.plotting import new_figure, save_figure
from privaudit.stats.conversions import gdp_mu
from privaudit.stats.metrics import roc_curve
from privaudit.stats.tradeoff import tradeoff_eps_delta, tradeoff_gdp

__all__ = ["plot_bound_vs_observations", "plot_observation_histograms", "plot_tradeoff"]


def plot_observation_histograms(in_scores, out_scores, path, *, title=None):
    """Overlaid density histograms of the "in" and "out" observations, each with its fitted Gaussian."""
    in_scores = as_scores(in_scores, "in_scores")
    out_scores = as_scores(out_scores, "out_scores")
    figure, axis = new_figure(figsize=(6, 4))
    # Shared bins so the two histograms are comparable bar for bar.
    bins = np.histogram_bin_edges(np.concatenate([in_scores, out_scores]), bins=60)
    low, high = bins[0], bins[-1]
    if low == high:  # every observation equal: widen the grid so the plot is not empty
        low, high = low - 0.5, high + 0.5
    grid = np.linspace(low, high, 400)
    for name, scores, color in (("out (no canary)", out_scores, "tab:blue"), ("in (with canary)", in_scores, "tab:orange")):
        axis.hist(scores, bins=bins, density=True, alpha=0.45, color=color)
        mean, std = float(np.mean(scores)), float(np.std(scores))
        label = f"{name}: N({mean:.3g}, {std:.3g}²)"
        if std > 0:
            axis.plot(grid, stats.norm.pdf(grid, loc=mean, scale=std), color=color, label=label)
        else:  # a point mass has no density to draw; mark it instead
            axis.axvline(mean, color=color, label=label)
    axis.set_xlabel("observation")
    axis.set_ylabel("density")
    if title is not None:
        axis.set_title(title)
    axis.legend()
    return save_figure(figure, path)


def plot_tradeoff(in_scores, out_scores, path, *, claimed_epsilon, delta):
    """Empirical trade-off curve (FNR vs FPR) against the claimed μ-GDP and (ε, δ) curves."""
    in_scores = as_scores(in_scores, "in_scores")
    out_scores = as_scores(out_scores, "out_scores")
    claimed_epsilon = check_positive(claimed_epsilon, "claimed_epsilon", allow_zero=True)
    delta = check_probability(delta, "delta")
    curve = roc_curve(in_scores, out_scores)
    mu = gdp_mu(claimed_epsilon, delta)
    alpha = np.linspace(0.0, 1.0, 1001)

    figure, axis = new_figure(figsize=(5, 5))
    axis.plot(curve.fpr, 1.0 - curve.tpr, color="tab:red", label="attack (empirical)")
    axis.plot(alpha, tradeoff_gdp(alpha, mu), color="tab:blue", label=f"claimed {mu:.3g}-GDP")
    axis.plot(
        alpha, tradeoff_eps_delta(alpha, claimed_epsilon, delta), color="tab:green", linestyle="--", label=f"claimed ({claimed_epsilon:.3g}, {delta:.2g})-DP"
    )
    axis.plot([0.0, 1.0], [1.0, 0.0], color="grey", linestyle=":", label="no privacy loss")
    axis.set_xlim(0.0, 1.0)
    axis.set_ylim(0.0, 1.0)
    axis.set_aspect("equal")
    axis.set_xlabel("false-positive rate")
    axis.set_ylabel("false-negative rate")
    axis.legend(loc="upper right")
    return save_figure(figure, path)


def plot_bound_vs_observations(points, path, *, delta, confidence, claimed_epsilon=None):
    """Draw the lower bound on ε against the number of observations it used (Tight Auditing Figure 3).

    ``points`` are :class:`privaudit.audits.dpsgd.PrefixBound`-like objects
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
    """The three figures of a DP-SGD audit run, drawn from its observations and result."""
    result, config = run.result, run.result.config
    in_scores, out_scores = run.observations["in_scores"], run.observations["out_scores"]
    claimed = float(result.claimed_step_epsilon)
    return {
        "observations.png": lambda path: plot_observation_histograms(in_scores, out_scores, path, title=f"DP-SGD canary observations (bug: {config.bug})"),
        "tradeoff.png": lambda path: plot_tradeoff(in_scores, out_scores, path, claimed_epsilon=claimed, delta=config.delta),
        "bound_vs_observations.png": lambda path: plot_bound_vs_observations(
            result.bound_vs_observations, path, delta=config.delta, confidence=config.confidence, claimed_epsilon=claimed
        ),
    }
