"""Figures and report sections of the LM one-run audit (``privaudit audit lm-one-run``) and of released synthetic text (``privaudit audit synthetic-text``).

Each figure draws what the audit computed (:mod:`privaudit.audits.lm`):

* ``scores.png``: density histograms of the included and excluded canaries'
  scores (:func:`privaudit.report.scores.plot_score_histograms`);
* ``roc.png``: their ROC on log-log axes, where the low-FPR region that
  TPR at 1% FPR reads is visible (:func:`privaudit.report.scores.plot_roc_loglog`);
* ``bound.png`` (:func:`plot_bound_and_claim`): the one-run ε lower bound
  beside the claimed ε, when the run has one.

:func:`section` builds the family's report section from its ``results.json``.

>>> import tempfile, os
>>> with tempfile.TemporaryDirectory() as folder:
...     path = plot_bound_and_claim(0.8, os.path.join(folder, "bound.png"), claimed_epsilon=4.0, delta=1e-5, confidence=0.95)
...     open(path, "rb").read(4) == b"\\x89PNG"
True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .html import ReportSection, plots_in
from .plotting import new_figure, save_figure
from .provenance import provenance
from .sections import generic_section, headline_fields, typed_result
from .verdict import family_rows

__all__ = ["bound_caption", "figures", "plot_bound_and_claim", "section", "synthetic_section"]


def plot_bound_and_claim(epsilon: float, path: Any, *, claimed_epsilon: float | None, delta: float, confidence: float) -> Any:
    """A bar from 0 to the ε lower bound, and the claimed ε as a dashed line with the bound's share of it (no line without a claim)."""
    figure, axis = new_figure(figsize=(6.5, 2.2))
    axis.barh([0], [epsilon], color="tab:red", alpha=0.8, height=0.5)
    axis.annotate(f"ε ≥ {epsilon:.3g}", (epsilon, 0), xytext=(4, 0), textcoords="offset points", va="center")
    top = max(epsilon, claimed_epsilon or 0.0)
    if claimed_epsilon is not None:
        axis.axvline(
            claimed_epsilon, color="grey", linestyle="--", label=f"claimed ε = {claimed_epsilon:.3g} (bound / claim = {epsilon / claimed_epsilon:.2f})"
        )
        axis.legend(loc="upper right", fontsize="small")
    else:
        axis.set_title("no claimed ε given (--claimed-epsilon)", fontsize="small")
    axis.set_xlim(0.0, 1.25 * top if top > 0 else 1.0)
    axis.set_ylim(-0.6, 0.9)
    axis.set_yticks([0], ["one-run bound"])
    axis.set_xlabel(f"ε lower bound at δ = {delta:.2g} ({confidence:.0%} confidence)")
    return save_figure(figure, path)


def bound_caption(epsilon: float, confidence: float, claimed_epsilon: float | None) -> str:
    """The caption of ``bound.png``: the bound as the page shows numbers (4 significant digits), and the claim.

    >>> bound_caption(0.51234, 0.95, 4.0)
    'The one-run ε lower bound, 0.5123 at 95% confidence, beside the claimed ε = 4'
    """
    claim = f"beside the claimed ε = {claimed_epsilon:.4g}" if claimed_epsilon is not None else "(no claimed ε was given)"
    return f"The one-run ε lower bound, {epsilon:.4g} at {confidence:.0%} confidence, {claim}"


def figures(run) -> dict:
    """The figures of an lm-one-run run, drawn from its result's scores, inclusion coins and bound."""
    from ..stats.mia_metrics import roc_points
    from .scores import plot_roc_loglog, plot_score_histograms

    result = run.result
    in_scores = [score for score, inside in zip(result.scores, result.included, strict=True) if inside]
    out_scores = [score for score, inside in zip(result.scores, result.included, strict=True) if not inside]
    fpr, tpr = roc_points(result.scores, result.included)
    floor = 0.5 / max(len(in_scores), len(out_scores))  # half of one canary's rate stands in for 0 on log axes
    what = f"{result.design} canaries, {'calibrated ' if getattr(result, 'calibrated', False) else ''}score"
    return {
        "scores.png": lambda path: plot_score_histograms(in_scores, out_scores, path, title=f"{what}: in against out"),
        "roc.png": lambda path: plot_roc_loglog(fpr, tpr, path, floor=floor, title=f"ROC (AUC {result.auc:.3f}, TPR at 1% FPR {result.tpr_at_1pct_fpr:.3f})"),
        "bound.png": lambda path: plot_bound_and_claim(
            result.bound.epsilon, path, claimed_epsilon=result.claimed_epsilon, delta=result.bound.delta, confidence=result.bound.confidence
        ),
    }


def section(data: dict, directory: Path | None) -> ReportSection:
    """The report section of a results dict of this family; ``directory`` holds its figures (see :mod:`privaudit.report.sections`)."""
    from ..audits.lm.result import LMOneRunResult

    result = typed_result(LMOneRunResult, data)
    if result is None:
        return generic_section(data, directory)
    source = f"synthetic text {result.synthetic}" if result.synthetic else (result.model or result.model_source)
    rows = [
        ("scored by", source),
        ("calibrated by the base model", (result.base_model or "yes, the embedded default's base model") if result.calibrated else "no"),
        ("provenance", result.provenance or "drawn by the embedded default"),
    ]
    return _one_run_section(data, directory, result, "lm-one-run", f"LM fine-tuning in one run ({result.design} canaries)", rows)


def synthetic_section(data: dict, directory: Path | None) -> ReportSection:
    """The report section of a ``synthetic-text`` results dict: the same figures and numbers, for canaries' echoes in released text."""
    from ..audits.synthetic_text.audit import SyntheticTextResult

    result = typed_result(SyntheticTextResult, data)
    if result is None:
        return generic_section(data, directory)
    rows = [
        ("membership signal", result.config.synthetic_signal),
        ("synthetic records", result.num_records),
        ("scored against", result.source),
        ("provenance", result.provenance or "drawn by the embedded default"),
    ]
    return _one_run_section(data, directory, result, "synthetic-text", f"Released synthetic text ({result.design} canaries)", rows)


def _one_run_section(data: dict, directory: Path | None, result: Any, audit: str, title: str, rows: list[tuple[str, Any]]) -> ReportSection:
    bound, claim = result.bound, result.claimed_epsilon
    details: list[tuple[str, Any]] = [
        (
            f"ε lower bound ({bound.kind}, {bound.confidence:.0%}; {bound.method} won of {', '.join(bound.methods)}, Bonferroni over {bound.num_tests} tests)",
            bound.epsilon,
        ),
        ("claimed ε", "not given" if claim is None else claim),
        ("bound / claimed ε", "—" if not claim else bound.epsilon / claim),
        ("AUC (in-sample statistic)", result.auc),
        ("TPR at 1% FPR (in-sample statistic)", result.tpr_at_1pct_fpr),
        ("canaries in / out", f"{result.num_in} / {result.num_canaries - result.num_in}"),
        ("copies of each included canary in the fine-tuning data", result.canary_copies),
        ("design, scored span", f"{result.design}, {'the secret given its prefix' if result.span == 'secret' else 'the whole text'}"),
        *rows,
    ]
    details[:0] = family_rows(data)  # with a family named: the headline's test, its claim, the generic bound and the validity condition
    flag = f"Claim rejected: the one-run lower bound exceeds the claimed ε = {claim:g}." if result.flagged else None
    if result.family_test is not None and result.family_test.verdict.flagged:
        flag = f"Family claim rejected: {result.family_test.refuted}, below the claimed {result.family_test.parameter_name} = {result.family_test.claim:g}."
    return ReportSection(
        title=title,
        audit=audit,
        **headline_fields(result.headline()),
        meaning=(
            "Canaries were each added to the fine-tuning data by a recorded fair coin; with the stated confidence, the fine-tuning "
            "is no better than ε-DP for one example like a canary (canaries in several copies: by group privacy). A bound of 0 means "
            "these canaries showed no memorisation this test can tell from chance, not that the fine-tuning is private."
        ),
        not_meaning=(
            "A bound below the claim does not prove the claim: one run with m canaries cannot reach a large ε. The AUC and TPR at "
            "1% FPR are statistics of these canaries, not bounds."
        ),
        threat_model=result.threat_model,
        flag=flag,
        details=tuple(details),
        plots=plots_in(
            directory,
            {
                "scores.png": "Canary scores: included (in) against excluded (out)",
                "roc.png": "ROC of the canary scores on log-log axes",
                "bound.png": bound_caption(bound.epsilon, bound.confidence, claim),
            },
        ),
        **provenance(data),
    )
