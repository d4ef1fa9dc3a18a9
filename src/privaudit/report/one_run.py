"""One-run audit figures: the canaries' scores, in against out, and every bound beside the claimed ε.

Each function draws what the audit computed (:mod:`privaudit.audits.one_run`),
writes one PNG to ``path`` and returns the path; no statistic is computed here:

* ``observations.png``: density histograms of the included and excluded
  canaries' scores on the audit's shared bins, each with the Gaussian the
  audit fitted to it (:func:`privaudit.report.dpsgd.plot_observation_histograms`);
* ``bounds.png`` (:func:`plot_bounds`): one bar per method (Steinke, f-DP,
  Gaussian) and the headline, against the claimed ε of the run.
"""

from __future__ import annotations

from privaudit.report.plotting import new_figure, save_figure

__all__ = ["BOUND_LABELS", "figures", "plot_bounds"]

BOUND_LABELS = {
    "steinke": "Steinke et al.",
    "fdp_gdp": "f-DP (GDP)",
    "fdp_pld": "f-DP (subsampled Gaussian)",
    "gaussian": "Gaussian",
    "headline": "headline (best; Bonferroni)",
}


def plot_bounds(bounds: dict, path, *, claimed_epsilon: float, canary_epsilon: float | None = None, delta: float, confidence: float):
    """Horizontal bars of the ε lower bounds in ``bounds`` (name -> object with ``epsilon``), with the claimed ε as a line.

    ``canary_epsilon`` is drawn too when it differs from the claim (canaries at a rate other than the data's).
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
    axis.axvline(claimed_epsilon, color="grey", linestyle="--", label=f"claimed ε = {claimed_epsilon:.3g}")
    if canary_epsilon is not None and canary_epsilon != claimed_epsilon:
        axis.axvline(canary_epsilon, color="black", linestyle=":", label=f"ε of a canary = {canary_epsilon:.3g}")
    top = max([*values, claimed_epsilon, canary_epsilon or 0.0])
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
            claimed_epsilon=result.claimed_epsilon,
            canary_epsilon=result.canary_epsilon,
            delta=result.bound.delta,
            confidence=result.bound.confidence,
        )
    }
    if "fits" in run.observations:
        title = f"one run: {result.num_in} canaries in, {result.num_canaries - result.num_in} out"
        drawings["observations.png"] = lambda path: plot_observation_histograms(in_scores, out_scores, run.observations["fits"], path, title=title)
    return drawings
