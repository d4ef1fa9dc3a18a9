"""Files of an FL audit run: ``results.json`` and the figures of :mod:`privaudit.report.fl`.

:func:`write_fl_outputs` writes into an existing directory; the command line
(``privaudit audit fl``) points it at a scratch directory and moves that into
place only once everything was written.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..schemas import stamp_results
from ..training.fedavg import FedAvgRun
from .fl import FLAuditResult

__all__ = ["FILES", "write_fl_outputs"]

FILES = ("results.json", "cosines_final.png", "cosines_all.png", "epsilon_final.png", "epsilon_all.png")


def write_fl_outputs(result: FLAuditResult, runs: list[FedAvgRun], directory) -> dict:
    """Write ``results.json`` (``result.to_dict()``) and the four figures; return the dict."""
    from ..report.fl import plot_cosine_densities, plot_epsilon_vs_repetitions

    directory = Path(directory)
    labels = [str(r.participations) if r.sampling == "fixed" else r.sampling for r in result.runs]
    sigma = result.config.training.noise_multiplier
    plot_cosine_densities(
        {label: run.final_cosines[: run.num_observed] for label, run in zip(labels, runs)},
        directory / "cosines_final.png",
        dimension=runs[0].dimension,
        title=f"final model, noise multiplier {sigma:g}",
    )
    plot_cosine_densities(
        {label: run.max_cosines[: run.num_observed] for label, run in zip(labels, runs)},
        directory / "cosines_all.png",
        null_cosines=runs[0].max_cosines[runs[0].num_observed :],
        title=f"all iterates (max over rounds), noise multiplier {sigma:g}",
    )
    repetitions = [r.participations for r in result.runs]
    analytical = [r.analytical_epsilon for r in result.runs]
    for key, name in (("final", "final model"), ("all", "all iterates")):
        plot_epsilon_vs_repetitions(
            repetitions,
            [getattr(r, key)["estimate"].epsilon for r in result.runs],
            [getattr(r, key)["lower_bound"].epsilon for r in result.runs],
            directory / f"epsilon_{key}.png",
            analytical=analytical,
            title=f"{name}, noise multiplier {sigma:g}",
        )
    data = stamp_results(result.to_dict(), audit="fl")
    (directory / "results.json").write_text(json.dumps(data, indent=2) + "\n")
    return data
