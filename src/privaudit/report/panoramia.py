"""PANORAMIA's figures: precision–recall of the baseline and the MIA, and the bounds over recall.

As the paper's comparison figures: the left panel plots precision against
recall for b (generated non-members, target unseen) and for the MIA (with the
target's loss); the right panel plots, at each recall, the lower bound that
the precision gives (c for b, c + ε for the MIA, in logit units, at the
Bonferroni level the reported test used) with the reported c_lb and
{c+ε}_lb as dashed lines. RM;RN's MIA is drawn too when present.

Every number drawn comes from the result and from the curves the audit
computed (:func:`privaudit.audits.panoramia.panoramia_curves`, in the run's
observations): this module computes no statistics.

:func:`section` builds the family's report section from its ``results.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .html import ReportSection, plots_in
from .plotting import new_figure, save_figure
from .provenance import provenance
from .sections import generic_section, typed_result
from .verdict import family_rows

__all__ = ["figure_name", "figures", "plot_panoramia", "section"]


def plot_panoramia(curves, result, path, *, title: str = "PANORAMIA") -> None:
    """Write the two-panel figure for one audited target to ``path`` (PNG, Agg backend).

    ``curves`` is the :class:`~privaudit.audits.panoramia.PanoramiaCurves`
    the audit computed for the game and ``result`` its
    :class:`~privaudit.audits.panoramia.PanoramiaAuditResult`.

    >>> import tempfile, os, types
    >>> ramp = np.linspace(0.0, 1.0, 50)
    >>> curve = types.SimpleNamespace(recall=ramp, precision=1.0 - ramp / 2, bound=2.0 - 3.0 * ramp, alpha=0.001)
    >>> curves = types.SimpleNamespace(baseline=curve, mia=curve, real_non_members=None)
    >>> bounds = types.SimpleNamespace(c_lb=0.5, c_plus_epsilon_lb=1.5, epsilon_tilde=1.0)
    >>> result = types.SimpleNamespace(bounds=bounds, generator="mst", target="demo")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     plot_panoramia(curves, result, os.path.join(folder, "pr.png"))
    ...     os.path.getsize(os.path.join(folder, "pr.png")) > 0
    True
    """
    bounds = result.bounds
    drawn: list[tuple[str, Any, str, float | None, str | None]] = [
        (f"baseline b ({result.generator})", curves.baseline, "tab:blue", bounds.c_lb, "c_lb"),
        ("PANORAMIA MIA", curves.mia, "tab:red", bounds.c_plus_epsilon_lb, "{c+ε}_lb"),
    ]
    if curves.real_non_members is not None:
        drawn.append(("RM;RN MIA", curves.real_non_members, "tab:green", None, None))
    figure, (left, right) = new_figure(1, 2, figsize=(11, 4.2))
    for label, curve, colour, level, level_name in drawn:
        left.plot(curve.recall, curve.precision, color=colour, label=label)
        right.plot(curve.recall, np.maximum(curve.bound, -1.0), color=colour, label=label)  # the axis floor, for legibility
        if level is not None:
            right.axhline(level, color=colour, linestyle="--", linewidth=1, label=f"{level_name} = {level:.3g}")
    left.axhline(0.5, color="grey", linestyle=":", linewidth=1)
    left.set(xlabel="recall", ylabel="precision", title="precision–recall", ylim=(0.0, 1.02))
    right.set(xlabel="recall", ylabel="lower bound (logit of precision bound)", title=f"bounds over recall (ε̃ = {bounds.epsilon_tilde:.3g}, an estimate)")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    figure.suptitle(title)
    save_figure(figure, path, dpi=110)


def figure_name(target: str) -> str:
    """The file name of a target's precision-recall figure.

    >>> figure_name("mlp many/epochs")
    'pr_mlp_many_epochs.png'
    """
    import re

    return "pr_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", target) + ".png"


def figures(run) -> dict:
    """One precision-recall figure per target of a PANORAMIA run, from its result and the curves its audit computed."""
    curves = run.observations["curves"]
    return {
        figure_name(name): (lambda path, name=name, entry=entry: plot_panoramia(curves[name], entry.audit, path, title=f"PANORAMIA: {name}"))
        for name, entry in run.result.targets.items()
    }


def section(data: dict, directory: Path | None) -> ReportSection:
    """The report section of a results dict of this family; ``directory`` holds its figures (see :mod:`privaudit.report.sections`)."""
    from ..audits.registry import get_audit

    result = typed_result(get_audit("panoramia").result_type, data)
    if result is None:
        return generic_section(data, directory)
    details = []
    for row in result.summary_rows():
        target = row["target"]
        details += [(f"{target}: {_SUMMARY_LABELS[key]}", value) for key, value in row.items() if key != "target" and value is not None]
    details[:0] = family_rows(data)  # with a family named: the O(1) candidates' test against it, its claim, the generic bound and the validity condition
    figures = {figure_name(name): f"PANORAMIA on {name}: precision against recall of the baseline and the MIA" for name in result.targets}
    confidence = next(iter(result.targets.values())).audit.settings.confidence
    return ReportSection(
        title="PANORAMIA: membership inference against generated non-members",
        audit="panoramia",
        value=None,
        label="",
        kind="estimate",
        confidence=None,
        meaning=(
            "A membership-inference attack on the target model is compared with a baseline that does not see the model, "
            "both telling real members from synthetic non-members. c_lb and {c+ε}_lb are lower bounds at "
            f"{confidence:.0%} confidence; their difference ε̃ estimates the privacy loss the model adds."
        ),
        not_meaning=(
            "ε̃ is an estimate and is not a lower bound on ε: it is conditional on the generator's closeness c, which is "
            "itself only bounded from below. No retraining is involved, so it says nothing about worst-case data. One run's ε̃ "
            "moves with the seed and with the CPU the models trained on (float32 training): read it beside its spread over "
            "seeds (the README gives the demo's)."
        ),
        threat_model="Black-box access to the target's losses; the auditor holds part of the training data and trains a generator on it.",
        details=tuple(details),
        plots=plots_in(directory, figures),
        **provenance(data),
    )


_SUMMARY_LABELS = {
    "generator": "generator",
    "c_lb": "c_lb (lower bound)",
    "c_plus_epsilon_lb": "{c+eps}_lb (lower bound)",
    "epsilon_tilde": "epsilon_tilde (estimate)",
    "rm_rn_epsilon": "RM;RN epsilon (lower bound)",
    "one_run_epsilon": "O(1) epsilon (lower bound)",
    "claimed_dp_epsilon": "claimed DP epsilon",
}
