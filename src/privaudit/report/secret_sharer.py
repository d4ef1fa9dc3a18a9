"""Secret Sharer figures: exposure vs. insertions (Fig. 4), the perplexity histogram (Fig. 3), DP vs. non-DP (Table 3)."""

from __future__ import annotations

import numpy as np

from .plotting import new_figure, save_figure


def plot_exposure_vs_insertions(result, path, *, label: str = "model", others=()):
    """Exposure of each canary against its number of insertions, one line per result."""
    figure, axis = new_figure(figsize=(6, 4))
    for name, run in ((label, result), *others):
        repetitions = np.array([c["repetitions"] for c in run.canaries])
        key = "exposure_exact" if run.canaries[0]["exposure_exact"] is not None else "exposure_sampled"
        values = np.array([c[key] for c in run.canaries])
        order = np.argsort(repetitions, kind="stable")
        axis.plot(repetitions[order], values[order], marker="o", label=f"{name} ({key.split('_')[1]})")
    axis.axhline(result.baselines["max_exposure"], color="grey", linestyle=":", label="log2 |R|")
    axis.axhline(result.baselines["mean"], color="grey", linestyle="--", label="random guessing (mean)")
    axis.set_xscale("log", base=2)
    axis.set_xlabel("insertions of the canary")
    axis.set_ylabel("exposure (bits)")
    axis.legend()
    save_figure(figure, path)


def plot_perplexity_histogram(reference_bits, canary_bits, density, path):
    """Histogram of reference log-perplexities, the fitted skew-normal ``density`` (the audit's (grid, values)), and the canaries."""
    figure, axis = new_figure(figsize=(6, 4))
    axis.hist(reference_bits, bins=100, density=True, alpha=0.6, label="reference candidates")
    grid, values = density
    axis.plot(grid, values, label="skew-normal fit")
    for value in canary_bits:
        axis.axvline(value, color="red", alpha=0.5, linewidth=1)
    axis.set_xlabel("log-perplexity (bits)")
    axis.set_ylabel("density")
    axis.set_title("canaries in red")
    axis.legend()
    save_figure(figure, path)


def plot_dp_comparison(runs: dict, path):
    """A Table 3-style figure: exposure per canary (rows) for each named run's canary list (columns)."""
    names = list(runs)
    rows = []
    first = runs[names[0]]
    for index, canary in enumerate(first):
        row = [str(canary["repetitions"])]
        for name in names:
            c = runs[name][index]
            value = c["exposure_exact"] if c["exposure_exact"] is not None else c["exposure_sampled"]
            row.append(f"{value:.2f}")
        rows.append(row)
    figure, axis = new_figure(figsize=(1.8 * (len(names) + 1), 0.4 * (len(rows) + 2)))
    axis.axis("off")
    table = axis.table(cellText=rows, colLabels=["insertions", *names], loc="center")
    table.scale(1, 1.3)
    save_figure(figure, path)


def figures(run) -> dict:
    """The figures of a Secret Sharer run: exposure vs. insertions, the perplexity histogram, and the DP comparison."""
    result, observations = run.result, run.observations
    drawings = {
        "exposure_vs_insertions.png": lambda path: plot_exposure_vs_insertions(result, path),
        "perplexity_histogram.png": lambda path: plot_perplexity_histogram(
            observations["reference_bits"], observations["canary_bits"], observations["skewnorm_density"], path
        ),
    }
    if result.dp_comparison is not None:
        label = f"DP (eps = {result.dp_comparison['epsilon']:.2f})"
        drawings["dp_comparison.png"] = lambda path: plot_dp_comparison({"non-private": result.canaries, label: result.dp_comparison["canaries"]}, path)
    return drawings
