"""One-run audit figures: the canaries' scores, in against out, and every bound beside the claimed ε.

Each function draws what the audit computed (:mod:`privaudit.audits.one_run`),
writes one PNG to ``path`` and returns the path; no statistic is computed here:

* ``observations.png``: density histograms of the included and excluded
  canaries' scores on the audit's shared bins, each with the Gaussian the
  audit fitted to it (:func:`privaudit.report.dpsgd.plot_observation_histograms`);
* ``bounds.png`` (:func:`plot_bounds`): one bar per method (Steinke, f-DP,
  Gaussian) and the headline, against the claimed ε of the run.

:func:`section` builds the family's report section from its ``results.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privaudit.report.plotting import new_figure, save_figure

from .html import ReportSection, plots_in
from .provenance import provenance
from .sections import generic_section, headline_fields, typed_result
from .verdict import user_claim

__all__ = ["BOUND_LABELS", "figures", "plot_bounds", "section"]

BOUND_LABELS = {
    "steinke": "Steinke et al.",
    "fdp_gdp": "f-DP (GDP)",
    "fdp_pld": "f-DP (subsampled Gaussian)",
    "gaussian": "Gaussian",
    "headline": "headline (best; Bonferroni)",
}


def plot_bounds(
    bounds: dict,
    path,
    *,
    claimed_epsilon: float | None,
    canary_epsilon: float | None = None,
    delta: float,
    confidence: float,
    claim_label: str = "claimed ε",
    user_claim: float | None = None,
):
    """Horizontal bars of the ε lower bounds in ``bounds`` (name -> object with ``epsilon``), with the claimed ε as a line.

    ``claimed_epsilon`` is drawn as ``claim_label`` (the accountant's ε of the
    run's settings; none when it was not computed); ``user_claim``, the ε the user claimed, as "claimed ε"
    when given; ``canary_epsilon`` too when it differs (canaries at a rate
    other than the data's).
    """
    names = list(bounds)
    values = [float(bounds[name].epsilon) for name in names]
    figure, axis = new_figure(figsize=(6.5, 0.6 * len(names) + 1.6))
    colors = ["tab:red" if name == "headline" else "tab:blue" for name in names]
    positions = range(len(names))
    axis.barh(positions, values, color=colors, alpha=0.8)
    for position, value in zip(positions, values):
        axis.annotate(f"{value:.3g}", (value, position), xytext=(3, 0), textcoords="offset points", va="center", fontsize="small")
    axis.set_yticks(list(positions), [BOUND_LABELS.get(name, name) for name in names])
    axis.invert_yaxis()
    if claimed_epsilon is not None:
        axis.axvline(claimed_epsilon, color="grey", linestyle="--", label=f"{claim_label} = {claimed_epsilon:.3g}")
    if canary_epsilon is not None and canary_epsilon != claimed_epsilon:
        axis.axvline(canary_epsilon, color="black", linestyle=":", label=f"ε of a canary = {canary_epsilon:.3g}")
    if user_claim is not None:
        axis.axvline(user_claim, color="tab:red", linestyle="-.", label=f"claimed ε = {user_claim:.3g}")
    top = max([*values, claimed_epsilon or 0.0, canary_epsilon or 0.0, user_claim or 0.0])
    axis.set_xlim(0.0, 1.15 * top if top > 0 else 1.0)
    axis.set_xlabel(f"ε lower bound at δ = {delta:.2g} ({confidence:.0%} confidence each)")
    axis.legend(loc="lower right", fontsize="small")
    return save_figure(figure, path)


def figures(run) -> dict:
    """The figures of a one-run audit run, drawn from its result and the fits its audit computed."""
    from privaudit.report.dpsgd import plot_observation_histograms

    result = run.result
    member = list(result.included)
    in_scores = [score for score, inside in zip(result.observations, member) if inside]
    out_scores = [score for score, inside in zip(result.observations, member) if not inside]
    drawings = {
        "bounds.png": lambda path: plot_bounds(
            result.side_by_side(),
            path,
            claimed_epsilon=result.accountant_epsilon,
            canary_epsilon=result.canary_epsilon,
            delta=result.bound.delta,
            confidence=result.bound.confidence,
            **_claim_lines(result),
        )
    }
    if "fits" in run.observations:
        title = f"one run: {result.num_in} canaries in, {result.num_canaries - result.num_in} out"
        drawings["observations.png"] = lambda path: plot_observation_histograms(in_scores, out_scores, run.observations["fits"], path, title=title)
    return drawings


def _claim_lines(result: Any) -> dict[str, Any]:
    """How the bounds figure labels the accountant's ε: "claimed" only for privaudit's own DP-SGD without a user claim."""
    user = user_claim(result)
    own = user is None and result.config.train is None
    return {"claim_label": "claimed ε" if own else "accountant's ε of the settings", "user_claim": user}


def _given(result: Any) -> str:
    """With --train: whether σ, q and the steps were observed or only typed (privaudit's own DP-SGD ran them otherwise)."""
    status = result.model.get("settings")
    if not status:
        return ""
    return "; " + ", ".join(f"{key}: {text}" for key, text in status.items())


def section(data: dict, directory: Path | None) -> ReportSection:
    """The report section of a results dict of this family; ``directory`` holds its figures (see :mod:`privaudit.report.sections`)."""
    from ..audits.one_run.config import OneRunAuditResult

    result = typed_result(OneRunAuditResult, data)
    if result is None:
        return generic_section(data, directory)
    headline, config = result.headline(), result.config
    details: list[tuple[str, Any]] = [
        (f"{BOUND_LABELS.get(name, name)} ({bound.kind}, {bound.confidence:.0%} alone)", bound.epsilon)
        for name, bound in result.side_by_side().items()
        if name != "headline"
    ]
    own = config.train is None and user_claim(result) is None  # privaudit's DP-SGD without a claim: its accountant's ε is the claim
    accountant = "not computed: σ is below what the claim needs (finding)" if result.accountant_epsilon is None else result.accountant_epsilon
    details += [
        ("claimed ε of the run (accountant)" if own else "accountant's ε for the settings (evidence)", accountant),
        ("canaries in / out", f"{result.num_in} / {result.num_canaries - result.num_in}"),
        ("score", result.score),
        ("inclusion draw", f"probability {config.inclusion_prob:g}, seed {result.inclusion_seed}"),
        ("DP-SGD", f"σ = {config.noise_multiplier:g}, q = {config.sampling_rate:g}, {config.num_steps} steps, δ = {config.delta:g}{_given(result)}"),
        ("test accuracy", "not measured (your --train model)" if result.test_accuracy is None else result.test_accuracy),
    ]
    if result.canary_epsilon is not None and result.canary_epsilon != result.accountant_epsilon:
        details.insert(len(details) - 5, ("ε of a canary at its own rate (accountant)", result.canary_epsilon))
    if "canaries" in result.model:  # the black box's input canaries, and how they were optimised
        details.append(("input canaries", result.model["canaries"]))
    optimised = result.model.get("canary_optimisation")
    if optimised:
        details.append((
            "canary optimisation",
            f"{optimised['meta_steps']} meta steps of metagradient descent before the inclusion draw (seed {optimised['seed']}); "
            f"surrogate objective {optimised['objective_first']:.3g} at the first, {optimised['objective_last']:.3g} at the last",
        ))  # fmt: skip
    from ..audits.one_run.final_model import final_model_rows

    details += final_model_rows(result)
    flag = None
    if result.findings:
        flag = "Claim rejected by the evidence: " + " | ".join(result.findings)
    elif headline.flag:
        user = user_claim(result)
        flag = (
            f"Claim rejected: the one-run lower bound exceeds the ε the accountant gives the canaries ({result.canary_epsilon:.3g})."
            if user is None
            else f"Claim rejected: the one-run lower bound exceeds your claimed ε ({user:.3g})."
        )
    return ReportSection(
        title=f"One-run audit of DP-SGD ({config.threat_model})",
        audit="one-run",
        **headline_fields(headline),
        meaning=(
            "One training run with canaries each kept in or out by a recorded coin: with the stated confidence the whole "
            "training run is no better than ε-DP, end to end, for an example like the canaries. "
            + (
                f"The headline is one order-statistics test against the claim's own DP-SGD ({result.bound.refuted}), compared with the claim in that family."
                if result.bound.refuted
                else "The headline is the best of the methods fixed in advance, corrected for the choice."
            )
        ),
        not_meaning=(
            "A bound below the claim does not prove the claim: one run with m canaries cannot reach the true ε when it is "
            "large. Each side-by-side bound holds alone; only the headline may be read as the best of them."
        ),
        threat_model=result.threat_model,
        flag=flag,
        details=tuple(details),
        plots=plots_in(
            directory,
            {
                "observations.png": "Canary scores: included (in) against excluded (out), with fitted Gaussians",
                "bounds.png": "Every one-run ε lower bound beside the claimed ε",
            },
        ),
        **provenance(data),
    )
