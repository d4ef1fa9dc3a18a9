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
  lower bound on ε computed on growing prefixes of the observations; it
  approaches the true ε as the confidence intervals shrink.

The statistics all come from :mod:`privaudit.stats`; this module only draws.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from privaudit._core.validation import as_scores, check_count, check_positive, check_probability
from privaudit.stats.bounds import epsilon_lower_bound
from privaudit.stats.conversions import gdp_mu
from privaudit.stats.metrics import roc_curve
from privaudit.stats.tradeoff import tradeoff_eps_delta, tradeoff_gdp

__all__ = ["plot_bound_vs_observations", "plot_observation_histograms", "plot_tradeoff"]

_DEFAULT_START = 100
_DEFAULT_STEPS = 12


def _pyplot():
    # Imported lazily so the package works without matplotlib; Agg so it works without a display.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt, figure, path):
    figure.tight_layout()
    try:
        figure.savefig(path, dpi=120)
    finally:
        # Close even when saving fails (e.g. a missing directory) so long runs do not leak figures.
        plt.close(figure)
    return path


def plot_observation_histograms(in_scores, out_scores, path, *, title=None):
    """Overlaid density histograms of the "in" and "out" observations, each with its fitted Gaussian."""
    in_scores = as_scores(in_scores, "in_scores")
    out_scores = as_scores(out_scores, "out_scores")
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6, 4))
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
    return _save(plt, figure, path)


def plot_tradeoff(in_scores, out_scores, path, *, claimed_epsilon, delta):
    """Empirical trade-off curve (FNR vs FPR) against the claimed μ-GDP and (ε, δ) curves."""
    in_scores = as_scores(in_scores, "in_scores")
    out_scores = as_scores(out_scores, "out_scores")
    claimed_epsilon = check_positive(claimed_epsilon, "claimed_epsilon", allow_zero=True)
    delta = check_probability(delta, "delta")
    curve = roc_curve(in_scores, out_scores)
    mu = gdp_mu(claimed_epsilon, delta)
    alpha = np.linspace(0.0, 1.0, 1001)

    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(5, 5))
    axis.plot(curve.fpr, 1.0 - curve.tpr, color="tab:red", label="attack (empirical)")
    axis.plot(alpha, tradeoff_gdp(alpha, mu), color="tab:blue", label=f"claimed {mu:.3g}-GDP")
    axis.plot(alpha, tradeoff_eps_delta(alpha, claimed_epsilon, delta), color="tab:green", linestyle="--",
              label=f"claimed ({claimed_epsilon:.3g}, {delta:.2g})-DP")
    axis.plot([0.0, 1.0], [1.0, 0.0], color="grey", linestyle=":", label="no privacy loss")
    axis.set_xlim(0.0, 1.0)
    axis.set_ylim(0.0, 1.0)
    axis.set_aspect("equal")
    axis.set_xlabel("false-positive rate")
    axis.set_ylabel("false-negative rate")
    axis.legend(loc="upper right")
    return _save(plt, figure, path)


def _prefix_sizes(num_in: int, num_out: int, sizes):
    """(n_in, n_out) pairs, increasing, with n_out the same fraction of ``num_out`` as n_in is of ``num_in``.

    >>> _prefix_sizes(1000, 500, None)[:3], _prefix_sizes(1000, 500, None)[-1]
    ([(100, 50), (123, 62), (152, 76)], (1000, 500))
    >>> _prefix_sizes(30, 30, [10, 30, 10])
    [(10, 10), (30, 30)]
    """
    if sizes is None:
        start = min(_DEFAULT_START, num_in)
        in_sizes = np.rint(np.geomspace(start, num_in, _DEFAULT_STEPS)).astype(int)
    else:
        in_sizes = [check_count(size, "sizes", minimum=1, maximum=num_in) for size in np.atleast_1d(sizes)]
        if not in_sizes:
            raise ValueError("`sizes` must hold at least one value, got none")
    # Rounding can repeat sizes for short arrays; each prefix is computed once, in increasing order.
    unique = sorted({int(n) for n in in_sizes})
    return [(n, max(1, int(np.rint(n * num_out / num_in)))) for n in unique]


def plot_bound_vs_observations(in_scores, out_scores, path, *, delta, claimed_epsilon=None, sizes=None,
                               threshold=0.5, confidence=0.95):
    """GDP / Clopper–Pearson lower bound on ε on growing prefixes of the observations.

    ``sizes`` are numbers of "in" observations (default: 12 geometric steps
    from 100 up to all of them); each prefix of ``out_scores`` is the same
    fraction of it. Returns ``(path, [(n_in, n_out, epsilon), ...])`` in
    increasing ``n_in``, so callers can store the numbers behind the figure.
    """
    in_scores = as_scores(in_scores, "in_scores")
    out_scores = as_scores(out_scores, "out_scores")
    delta = check_probability(delta, "delta")
    if claimed_epsilon is not None:
        claimed_epsilon = check_positive(claimed_epsilon, "claimed_epsilon", allow_zero=True)
    points = []
    for n_in, n_out in _prefix_sizes(in_scores.size, out_scores.size, sizes):
        # Prefixes (not resamples) so each point reuses the previous observations, as more runs come in.
        bound = epsilon_lower_bound(in_scores[:n_in], out_scores[:n_out], delta=delta, method="gdp",
                                    threshold=threshold, confidence=confidence)
        points.append((n_in, n_out, float(bound.epsilon)))

    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6, 4))
    axis.plot([p[0] for p in points], [p[2] for p in points], marker="o", label=f"GDP lower bound ({confidence:.0%})")
    if claimed_epsilon is not None:
        axis.axhline(claimed_epsilon, color="grey", linestyle="--", label=f"claimed ε = {claimed_epsilon:.3g}")
    axis.set_xscale("log")
    axis.set_xlabel('"in" observations (with "out" in proportion)')
    axis.set_ylabel(f"ε lower bound at δ = {delta:.2g}")
    # Headroom above the highest point or the claimed line, so neither sits on the frame.
    top = max([p[2] for p in points] + ([claimed_epsilon] if claimed_epsilon is not None else []))
    axis.set_ylim(0.0, 1.1 * top if top > 0 else 1.0)
    axis.legend()
    return _save(plt, figure, path), points
