"""PANORAMIA's figures: precision–recall of the baseline and the MIA, and the bounds over recall.

As the paper's comparison figures: the left panel plots precision against
recall for b (generated non-members, target unseen) and for the MIA (with the
target's loss); the right panel plots, at each recall, the lower bound that
the precision gives (c for b, c + ε for the MIA, in logit units, at the
Bonferroni level the reported test used) with the reported c_lb and
{c+ε}_lb as dashed lines. RM;RN's MIA is drawn too when present.
"""

from __future__ import annotations

import numpy as np

from ..stats.panoramia import privacy_recall_curve
from .plotting import new_figure, save_figure

__all__ = ["plot_panoramia"]


def plot_panoramia(scores, result, path, *, title: str = "PANORAMIA") -> None:
    """Write the two-panel figure for one audited target to ``path`` (PNG, Agg backend).

    ``scores`` is the :class:`~privaudit.audits.panoramia.GameScores` of the
    game and ``result`` its :class:`~privaudit.audits.panoramia.PanoramiaAuditResult`.

    >>> import tempfile, os, types
    >>> rng = np.random.default_rng(0)
    >>> s = rng.random(200) < 0.5
    >>> scores = types.SimpleNamespace(baseline=s + rng.normal(size=200), mia=2 * s + rng.normal(size=200), is_member=s,
    ...                                real_non_member_mia=None, real_non_member_is_member=None)
    >>> from privaudit.stats.panoramia import panoramia_bounds
    >>> bounds = panoramia_bounds(scores.baseline, scores.mia, s)
    >>> result = types.SimpleNamespace(bounds=bounds, generator="mst", target="demo")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     plot_panoramia(scores, result, os.path.join(folder, "pr.png"))
    ...     os.path.getsize(os.path.join(folder, "pr.png")) > 0
    True
    """
    bounds = result.bounds
    alpha = (1.0 - bounds.confidence) / 2.0 / (bounds.num_tests if bounds.correction == "bonferroni" else 1)
    curves: list[tuple] = [
        (f"baseline b ({result.generator})", scores.baseline, scores.is_member, "tab:blue", bounds.c_lb, "c_lb"),
        ("PANORAMIA MIA", scores.mia, scores.is_member, "tab:red", bounds.c_plus_epsilon_lb, "{c+ε}_lb"),
    ]
    if scores.real_non_member_mia is not None:
        curves.append(("RM;RN MIA", scores.real_non_member_mia, scores.real_non_member_is_member, "tab:green", None, None))
    figure, (left, right) = new_figure(1, 2, figsize=(11, 4.2))
    for label, values, member, colour, level, level_name in curves:
        curve = privacy_recall_curve(values, member, alpha=alpha)
        left.plot(curve["recall"], curve["precision"], color=colour, label=label)
        right.plot(curve["recall"], np.maximum(curve["bound"], -1.0), color=colour, label=label)
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
    """One precision-recall figure per target of a PANORAMIA run."""
    scores = run.observations["scores"]
    return {
        figure_name(name): (lambda path, name=name, entry=entry: plot_panoramia(scores[name], entry.audit, path, title=f"PANORAMIA: {name}"))
        for name, entry in run.result.targets.items()
    }
