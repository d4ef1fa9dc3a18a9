"""Mechanism audit figures and report section: the two sides' distributions, the trade-off curve against the claim, the pair, the verdict.

Figures are drawn from what the audit computed (:mod:`privaudit.audits.mechanism`):

* ``distributions.png``: the best test's statistic on the held-out samples of D and of D';
* ``tradeoff.png``: that statistic's empirical trade-off curve (false-negative
  against false-positive rate) beside the claim's (ε, δ) curve: an
  attack curve below the claim's refutes it (up to sampling error, which the
  verdict's bound accounts for).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["figures", "section"]


def figures(run: Any) -> dict:
    """The figures of a mechanism audit run."""
    from .scores import plot_score_histograms, plot_tradeoff_curves

    observations = run.observations
    if "curves" not in observations:
        return {}
    result = run.result
    best = result.tests[result.best_test]
    curves = observations["curves"]
    sides = "D (in) and D' (out)" if best.direction.startswith("D in") else "D' (in) and D (out)"
    title = f"{best.statistic} statistic on held-out samples: {sides}"
    return {
        "distributions.png": lambda path: plot_score_histograms(observations["scores_in"], observations["scores_out"], path, title=title),
        "tradeoff.png": lambda path: plot_tradeoff_curves(
            curves.roc_fpr, curves.roc_tpr, curves.alpha, curves.references, path, title="trade-off against the claim"
        ),
    }


def section(data: dict, directory: Path | None) -> Any:
    """The report section of a mechanism audit's results."""
    from ..audits.mechanism.config import MechanismAuditResult
    from .html import ReportSection, plots_in
    from .provenance import provenance
    from .sections import generic_section, headline_fields, typed_result

    result = typed_result(MechanismAuditResult, data)
    if result is None:
        return generic_section(data, directory)
    headline, pair = result.headline(), result.pair
    best = result.tests[result.best_test]
    details: list[tuple[str, Any]] = [
        ("verdict", result.verdict),
        ("claim", result.claim),
        ("ε lower bound as a fraction of the claimed ε", result.fraction_of_claim),
        ("mechanism", result.mechanism),
        ("pair", f"{pair.how} ({pair.relation}; |D| = {pair.dataset_size}, |D'| = {pair.neighbour_size})"),
        ("best test", f"{best.statistic}, {best.direction}: threshold {best.bound.threshold:.4g}, {best.bound.num_in} + {best.bound.num_out} held-out samples"),
        ("tests (Bonferroni)", f"{len(result.tests)} kept of {len(result.statistics_tried)} tried on the pilot"),
        ("samples drawn", result.total_samples),
    ]
    details += [("search budget", pair.search_budget)] if pair.search_budget else []
    details += [(f"search candidate: {how}", f"pilot ε {value:.3g}") for how, value in pair.candidates]
    flag = f"Claim rejected at confidence {result.confidence:g}: ε >= {result.epsilon:.3g} > {result.claimed_epsilon:.3g}." if result.rejected else None
    return ReportSection(
        title="Mechanism audit: a DP claim tested from samples",
        audit="mechanism",
        **headline_fields(headline),
        meaning=(
            "With the stated confidence, the mechanism is no better than ε-DP at the claimed δ between these two datasets: "
            "statistics and thresholds were fixed on pilot samples, the bound computed on fresh ones, Bonferroni over every test."
        ),
        not_meaning=(
            "A bound below the claim does not prove the claim: it holds only for this pair and these tests, and a finite "
            "budget of samples cannot reach a large true ε."
        ),
        threat_model=result.threat_model,
        flag=flag,
        details=tuple(details),
        plots=plots_in(
            directory,
            {
                "distributions.png": "The best statistic on held-out samples of D and D'",
                "tradeoff.png": "Empirical trade-off curve of the best statistic against the claim's",
            },
        ),
        **provenance(data),
    )
