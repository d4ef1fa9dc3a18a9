"""Files of a DP-SGD audit run: ``results.json`` and the three figures of :mod:`privaudit.report.dpsgd`.

:func:`write_dpsgd_outputs` writes into an existing directory; the command
line (``privaudit audit dpsgd``) points it at a scratch directory and moves
that into place only once everything was written.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..schemas import stamp_results
from .._core.results import to_plain
from .dpsgd import DPSGDAuditResult
from .whitebox import GradientObservations

__all__ = ["FILES", "write_dpsgd_outputs"]

FILES = ("results.json", "observations.png", "tradeoff.png", "bound_vs_observations.png")


def write_dpsgd_outputs(result: DPSGDAuditResult, observations: GradientObservations, directory) -> dict:
    """Write ``results.json`` and ``observations.png``, ``tradeoff.png``, ``bound_vs_observations.png``.

    ``results.json`` is ``result.to_dict()`` plus ``bound_vs_observations``:
    the GDP / Clopper–Pearson bound on growing prefixes of the observations
    (the numbers behind ``bound_vs_observations.png``). Returns that dict.
    """
    from ..report.dpsgd import plot_bound_vs_observations, plot_observation_histograms, plot_tradeoff

    directory = Path(directory)
    config = result.config
    in_scores, out_scores = observations.in_scores, observations.out_scores
    claimed = float(result.claimed_step_epsilon)
    plot_observation_histograms(
        in_scores, out_scores, directory / "observations.png", title=f"DP-SGD canary observations (bug: {config.bug})"
    )
    plot_tradeoff(in_scores, out_scores, directory / "tradeoff.png", claimed_epsilon=claimed, delta=config.delta)
    _, points = plot_bound_vs_observations(
        in_scores,
        out_scores,
        directory / "bound_vs_observations.png",
        delta=config.delta,
        claimed_epsilon=claimed,
        threshold=config.threshold,
        confidence=config.confidence,
    )
    data = stamp_results(result.to_dict(), audit="dpsgd")
    data["bound_vs_observations"] = to_plain([{"num_in": n_in, "num_out": n_out, "epsilon": epsilon} for n_in, n_out, epsilon in points])
    (directory / "results.json").write_text(json.dumps(data, indent=2) + "\n")
    return data
