"""Figures of a one-shot FL audit, after Andrew et al., "One-shot Empirical Privacy Estimation for FL".

* :func:`plot_cosine_densities` (their Figures 1 and 3): kernel density
  estimates of each set of canary cosines (one per number of participations)
  against the null's density, N(0, 1/d) drawn in black.
* :func:`plot_epsilon_vs_repetitions` (their Figures 2 and 4): ε_est as bars
  and the 95% ε_lo as red ticks, per number of canary participations.

The numbers all come from :mod:`privaudit.stats`; this module only draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from privaudit._core.validation import as_scores, check_count

from .plotting import new_figure, save_figure

__all__ = ["plot_cosine_densities", "plot_epsilon_vs_repetitions"]


def plot_cosine_densities(groups, path, *, dimension=None, null_cosines=None, title=None):
    """Densities of each set of cosines in ``groups`` ({label: cosines}) with the null's density.

    The null is N(0, 1/``dimension``) (final model) or a density estimate of
    ``null_cosines`` (unobserved canaries, all iterates); give one of them.

    >>> import tempfile, pathlib
    >>> rng = np.random.default_rng(0)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "densities.png"
    ...     _ = plot_cosine_densities({"1": rng.normal(0.02, 0.01, 100)}, path, dimension=10_000)
    ...     path.stat().st_size > 0
    True
    """
    if (dimension is None) == (null_cosines is None):
        raise ValueError("exactly one of `dimension` and `null_cosines` must be given")
    samples = {str(label): as_scores(values, f"groups[{label!r}]", min_size=2) for label, values in groups.items()}
    if not samples:
        raise ValueError("`groups` must hold at least one set of cosines")
    if null_cosines is not None:
        null_cosines = as_scores(null_cosines, "null_cosines", min_size=2)
        spread = float(null_cosines.std())
    else:
        dimension = check_count(dimension, "dimension", minimum=2)
        spread = 1.0 / np.sqrt(dimension)
    everything = np.concatenate(list(samples.values()) + ([null_cosines] if null_cosines is not None else []))
    grid = np.linspace(min(everything.min(), -4 * spread), max(everything.max(), 4 * spread) + spread, 400)
    figure, axes = new_figure(figsize=(6, 4))
    for label, values in samples.items():
        axes.plot(grid, stats.gaussian_kde(values)(grid), label=label)
    if null_cosines is not None:
        axes.plot(grid, stats.gaussian_kde(null_cosines)(grid), color="black", label="null (unobserved canaries)")
    else:
        axes.plot(grid, stats.norm.pdf(grid, 0.0, spread), color="black", label="null N(0, 1/d)")
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
    result, observations = run.result, run.observations
    labels = [str(r.participations) if r.sampling == "fixed" else r.sampling for r in result.runs]
    sigma = result.config.training.noise_multiplier
    repetitions = [r.participations for r in result.runs]
    analytical = [r.analytical_epsilon for r in result.runs]
    drawings = {
        "cosines_final.png": lambda path: plot_cosine_densities(
            dict(zip(labels, observations["final"])), path, dimension=observations["dimension"], title=f"final model, noise multiplier {sigma:g}"
        ),
        "cosines_all.png": lambda path: plot_cosine_densities(
            dict(zip(labels, observations["all"])),
            path,
            null_cosines=observations["null_all"],
            title=f"all iterates (max over rounds), noise multiplier {sigma:g}",
        ),
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
