"""PANORAMIA's statistics live in the audit: the figure draws stored curves, and O(1) is `one_run_lower_bound`."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import special

from privaudit import one_run_lower_bound
from privaudit.audits.base import AuditRun
from privaudit.audits.panoramia import (
    PanoramiaResults,
    PanoramiaSettings,
    PanoramiaTarget,
    panoramia_curves,
    run_panoramia,
)
from privaudit.stats.one_run_combined import OneRunLowerBound
from privaudit.stats.panoramia import privacy_recall_curve

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

REPORT = Path(__file__).resolve().parents[1] / "src" / "privaudit" / "report" / "panoramia.py"
SETTINGS = PanoramiaSettings(audit_size=200, generator_fraction=0.3, labeller="generator", classifier_iterations=30)


def _records(rng, n):
    x = rng.normal(size=(n, 3))
    return x, (rng.random(n) < special.expit(2 * x[:, 0])).astype(np.int64)


class OracleGenerator:
    def fit(self, x, y, *, seed=0):
        return self

    def sample(self, n, *, seed=0):
        return _records(np.random.default_rng(seed), n)


def _true_loss(x, y):
    p = special.expit(2 * x[:, 0])
    return -np.log(np.where(y == 1, p, 1 - p))


@pytest.fixture(scope="module")
def game():
    """One game on a model that memorises its members, with RM;RN and O(1)."""
    rng = np.random.default_rng(3)
    x, y = _records(rng, 800)
    cx, cy = _records(rng, 300)
    included = rng.random(300) < 0.5
    known = {row.tobytes() for row in np.concatenate([x, cx[included]])}

    def loss(px, py):
        seen = np.array([row.tobytes() in known for row in np.asarray(px, dtype=np.float64)])
        return np.where(seen, 0.05, _true_loss(px, py))

    result, scores = run_panoramia(
        loss,
        x,
        y,
        generator=OracleGenerator(),
        train_helper=lambda hx, hy, seed: _true_loss,
        settings=SETTINGS,
        non_members=(cx[~included], cy[~included]),
        one_run_candidates=(cx, cy, included),
    )
    return result, scores, loss(cx, cy), included


def test_o1_is_one_run_lower_bound_on_the_candidates(game):
    result, _, candidate_losses, included = game
    assert isinstance(result.one_run, OneRunLowerBound) and result.one_run.method in ("steinke", "fdp")
    recomputed = one_run_lower_bound(-candidate_losses, included, delta=SETTINGS.one_run_delta, confidence=SETTINGS.confidence)
    assert result.one_run == recomputed and result.one_run.epsilon > 0.5 and result.one_run.kind == "lower bound"
    assert set(result.one_run.methods) == {"steinke", "fdp"} and result.one_run.delta == 1e-5
    results = PanoramiaResults(config={}, targets={"memoriser": PanoramiaTarget(audit=result, training={})})
    back = PanoramiaResults.from_dict(json.loads(json.dumps(results.to_dict())))
    assert back == results and back.targets["memoriser"].audit.one_run == recomputed
    assert back.summary_rows()[0]["one_run_epsilon"] == recomputed.epsilon


def test_the_curves_are_the_tests_the_result_reports(game):
    result, scores, _, _ = game
    curves = panoramia_curves(scores, result)
    bounds = result.bounds
    m = scores.is_member.size
    counts = np.unique(np.geomspace(1, m, min(SETTINGS.num_recall_levels, m)).round().astype(int))
    alpha = (1 - SETTINGS.confidence) / 2 / counts.size
    for curve, reported, values in ((curves.baseline, bounds.c_lb, scores.baseline), (curves.mia, bounds.c_plus_epsilon_lb, scores.mia)):
        assert curve.alpha == pytest.approx(alpha)
        assert max(0.0, float(np.max(curve.bound[counts - 1]))) == pytest.approx(reported)  # the best of the tested counts
        np.testing.assert_array_equal(curve.precision, privacy_recall_curve(values, scores.is_member, alpha=alpha)["precision"])
    rn = curves.real_non_members
    assert rn is not None and rn.alpha == pytest.approx((1 - SETTINGS.confidence) / result.real_non_members.num_tests)


def test_the_figure_computes_nothing(game, tmp_path, monkeypatch):
    result, scores, _, _ = game
    curves = {"memoriser": panoramia_curves(scores, result)}
    run = AuditRun(
        "panoramia",
        None,
        PanoramiaResults(config={}, targets={"memoriser": PanoramiaTarget(audit=result, training={})}),
        observations={"scores": {"memoriser": scores}, "curves": curves},
    )

    def forbidden(*args, **kwargs):
        raise AssertionError("the figure computed a statistic")

    import privaudit.audits.panoramia.game as game_module
    import privaudit.report.panoramia as report_module
    import privaudit.stats.panoramia as stats_module

    for module in (stats_module, game_module, report_module):
        for name in ("privacy_recall_curve", "panoramia_bounds", "real_non_member_bound", "one_run_lower_bound", "panoramia_curves"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, forbidden)
    monkeypatch.setattr(special, "logit", forbidden)
    from privaudit.report.runs import write_run

    write_run(tmp_path / "out", run)
    assert (tmp_path / "out" / "pr_memoriser.png").stat().st_size > 0
    # and by construction: the figure module imports no statistics
    imported = []
    for node in ast.walk(ast.parse(REPORT.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            imported.append(node.module or "")
        elif isinstance(node, ast.Import):
            imported += [alias.name for alias in node.names]
    assert not [name for name in imported if "stats" in name or "scipy" in name], imported
