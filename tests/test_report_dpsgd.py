"""DP-SGD audit figures: each draws what the audit computed into a readable PNG, and the bound curve matches the statistical core."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import matplotlib.image  # noqa: E402

from privaudit.audits.dpsgd.audit import bounds_on_prefixes, observation_fits, tradeoff_curves  # noqa: E402
from privaudit.report.dpsgd import plot_bound_vs_observations, plot_observation_histograms, plot_tradeoff  # noqa: E402
from privaudit.stats.bounds import epsilon_lower_bound  # noqa: E402

DELTA = 1e-5


def scores(n, seed=0, shift=2.0):
    rng = np.random.default_rng(seed)
    return rng.normal(shift, 1.0, n), rng.normal(0.0, 1.0, n)


def assert_png(path):
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []  # every figure was closed
    assert path.is_file() and path.stat().st_size > 0
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 0 and image.shape[1] > 0


def test_histograms_write_png(tmp_path):
    in_scores, out_scores = scores(2000)
    path = tmp_path / "hist.png"
    assert plot_observation_histograms(in_scores, out_scores, observation_fits(in_scores, out_scores), path, title="observations") == path
    assert_png(path)


def test_histograms_accept_constant_scores(tmp_path):
    path = tmp_path / "hist.png"
    plot_observation_histograms(np.ones(10), np.zeros(10), observation_fits(np.ones(10), np.zeros(10)), path)
    assert_png(path)


def test_tradeoff_writes_png(tmp_path):
    in_scores, out_scores = scores(2000)
    path = tmp_path / "tradeoff.png"
    assert plot_tradeoff(tradeoff_curves(in_scores, out_scores, claimed_epsilon=8.0, delta=DELTA), path) == path
    assert_png(path)


def test_bound_points_match_independent_calls(tmp_path):
    in_scores, out_scores = scores(3000, seed=1)
    out_scores = out_scores[:1500]  # unequal sizes: out prefixes are the same fraction as in prefixes
    path = tmp_path / "bound.png"
    points = [(p.num_in, p.num_out, p.epsilon) for p in bounds_on_prefixes(in_scores, out_scores, delta=DELTA, sizes=[3000, 300, 1000, 300], threshold=1.0)]
    returned = plot_bound_vs_observations(
        bounds_on_prefixes(in_scores, out_scores, delta=DELTA, sizes=[3000, 300, 1000, 300], threshold=1.0),
        path,
        delta=DELTA,
        confidence=0.95,
        claimed_epsilon=8.0,
    )
    assert returned == path
    assert_png(path)
    assert [(n_in, n_out) for n_in, n_out, _ in points] == [(300, 150), (1000, 500), (3000, 1500)]
    for n_in, n_out, epsilon in points:
        expected = epsilon_lower_bound(in_scores[:n_in], out_scores[:n_out], delta=DELTA, method="gdp", threshold=1.0)
        assert epsilon == expected.epsilon


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bound_grows_with_observations_and_ends_at_full_data(tmp_path, seed):
    in_scores, out_scores = scores(20_000, seed=seed)
    points = [(p.num_in, p.num_out, p.epsilon) for p in bounds_on_prefixes(in_scores, out_scores, delta=DELTA)]
    assert len(points) == 12
    assert points[0][:2] == (100, 100) and points[-1][:2] == (20_000, 20_000)
    assert [p[0] for p in points] == sorted(p[0] for p in points)
    assert points[-1][2] > points[0][2]
    full = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, method="gdp", threshold=0.5)
    assert points[-1][2] == full.epsilon


def test_bound_default_start_caps_at_array_size(tmp_path):
    in_scores, out_scores = scores(50)
    points = [(p.num_in, p.num_out, p.epsilon) for p in bounds_on_prefixes(in_scores, out_scores, delta=DELTA)]
    assert points == [(50, 50, points[0][2])]


@pytest.mark.parametrize("name", ["in_scores", "out_scores"])
@pytest.mark.parametrize(
    "call",
    [
        lambda i, o, p: plot_observation_histograms(i, o, observation_fits(i, o), p),
        lambda i, o, p: plot_tradeoff(tradeoff_curves(i, o, claimed_epsilon=1.0, delta=DELTA), p),
        lambda i, o, p: bounds_on_prefixes(i, o, delta=DELTA),
    ],
    ids=["histograms", "tradeoff", "bound"],
)
def test_nan_scores_raise_naming_the_argument(tmp_path, call, name):
    good, bad = np.zeros(200), np.r_[np.zeros(199), np.nan]
    in_scores, out_scores = (bad, good) if name == "in_scores" else (good, bad)
    with pytest.raises(ValueError, match=f"`{name}`"):
        call(in_scores, out_scores, tmp_path / "figure.png")
    assert not (tmp_path / "figure.png").exists()


def test_bad_sizes_raise(tmp_path):
    in_scores, out_scores = scores(100)
    with pytest.raises(ValueError, match="`sizes`"):
        bounds_on_prefixes(in_scores, out_scores, delta=DELTA, sizes=[0, 50])
    with pytest.raises(ValueError, match="`sizes`"):
        bounds_on_prefixes(in_scores, out_scores, delta=DELTA, sizes=[101])
