"""Secret Sharer figures: exposure vs. insertions (Fig. 4), the perplexity histogram (Fig. 3), DP vs. non-DP (Table 3).

:func:`section` builds the family's report section from its ``results.json``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .html import ReportSection, plots_in
from .plotting import new_figure, save_figure
from .provenance import provenance
from .sections import generic_section, headline_fields, typed_result


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


def section(data: dict, directory: Path | None) -> ReportSection:
    """The report section of a results dict of this family; ``directory`` holds its figures (see :mod:`privaudit.report.sections`)."""
    from ..audits.secret_sharer.audit import SecretSharerResult
    from ..audits.secret_sharer.own_model import OwnModelSecretSharerResult

    own = data.get("result_type") == OwnModelSecretSharerResult.__name__  # phase two on the user's model
    result = typed_result(OwnModelSecretSharerResult if own else SecretSharerResult, data)
    if result is None:
        return generic_section(data, directory)
    headline = result.headline()
    # the result keeps one dict per canary and the bound and baselines as dicts: their keys are the result's fields
    bound, baselines = result.epsilon_bound, result.baselines
    column = "exact" if any(canary["exposure_exact"] is not None for canary in result.canaries) else "sampled"
    extracted = [canary["text"] for canary in result.canaries if canary.get("extracted")]
    details = [(f"canary '{c['text']}' inserted {c['repetitions']}×: exposure ({column})", c.get(f"exposure_{column}")) for c in result.canaries]
    details += [
        (f"ε lower bound from exposures ({bound.get('confidence', 0.95):.0%}, group of {bound.get('duplicates', 1)})", bound.get("epsilon")),
        ("largest possible exposure, log2 |R|", baselines.get("max_exposure")),
        ("exposure no unmemorised canary reaches (95%, all canaries)", baselines.get("exact_upper_95_all_canaries")),
        ("canaries extracted by shortest-path search", ", ".join(extracted) or "none"),
    ]
    flag = None
    if headline.flag:
        upper = baselines["exact_upper_95_all_canaries"]
        flag = f"Memorisation: a canary's exposure ({headline.value:.3g} bits) exceeds what random guessing reaches with 95% probability ({upper:.3g} bits)."
    return ReportSection(
        title="Secret Sharer: canary exposure",
        audit="secret-sharer",
        **headline_fields(headline),
        meaning=(
            "Exposure is log2 |R| minus log2 of the canary's rank among all candidates of its format: a canary with exposure e "
            "is as likely under the model as the top 2^-e of the candidates. High exposure means the model memorised the "
            "inserted secret and an attacker could guess it in about 2^(log2|R| - e) tries."
        ),
        not_meaning=(
            "Exposure is a statistic of these canaries and this model, not an ε. Low exposure does not prove privacy for "
            "other data; the ε lower bound beside it holds for groups of the largest repetition count, not for one example."
        ),
        threat_model="Black-box query access to the trained language model's likelihoods; canaries inserted into the training text.",
        flag=flag,
        details=tuple(details),
        plots=plots_in(
            directory,
            {
                "exposure_vs_insertions.png": "Exposure of each canary against its number of insertions",
                "perplexity_histogram.png": "Log-perplexity of canaries and references, with the skew-normal fit",
                "dp_comparison.png": "Exposure with and without DP-SGD",
            },
        ),
        **provenance(data),
    )
