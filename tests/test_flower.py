"""The Flower integration: canary clients in front of Flower's own DP wrapper.

The unit tests drive one round by hand; the simulation test runs Flower's
simulation engine on Ray, as shipped, with real clients training an MLP on
partitions of the digits, at two noise levels in one federation.
"""

import os
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
flwr = pytest.importorskip("flwr")

from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

from privaudit.canaries.update import UpdateCanaries  # noqa: E402
from privaudit.integrations.flower import CanaryClients  # noqa: E402
from privaudit.stats.conversions import gdp_epsilon  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class _Nodes:
    """Stands in for Flower's Grid: the node ids that FedAvg samples from."""

    def __init__(self, count):
        self.ids = list(range(1, count + 1))

    def get_node_ids(self):
        return self.ids


@pytest.fixture
def task_identity(monkeypatch):
    # Flower stamps instruction messages with the running task's ids; a ServerApp sets them, here we do
    for name, value in (("_run_id", 1), ("_node_id", 0), ("_task_id", 1)):
        monkeypatch.setattr(TaskIdentity, name, value)


def _one_round(strategy, initial, client_arrays, weights):
    sent = list(strategy.configure_train(1, initial, ConfigRecord(), _Nodes(len(client_arrays))))
    replies = [
        Message(RecordDict({"arrays": ArrayRecord([a]), "metrics": MetricRecord({"weight": w, "loss": float(i)})}), reply_to=m)
        for i, (m, a, w) in enumerate(zip(sent, client_arrays, weights))
    ]
    return strategy.aggregate_train(1, replies)


def test_canary_reply_is_clipped_averaged_and_weighted_like_a_client(task_identity):
    d, clip, num_clients = 200, 0.7, 3
    dp = DifferentialPrivacyServerSideFixedClipping(
        FedAvg(fraction_evaluate=0.0, weighted_by_key="weight"), noise_multiplier=0.0, clipping_norm=clip, num_sampled_clients=num_clients + 2
    )
    strategy = CanaryClients(dp, num_canaries=5, canaries_per_round=2, num_held_out=3, seed=4)
    rng = np.random.default_rng(0)
    initial = ArrayRecord([rng.normal(size=(10, 20)).astype(np.float32)])
    start = initial.to_numpy_ndarrays()[0].astype(np.float64)
    updates = [rng.normal(size=(10, 20)) * 0.01 for _ in range(num_clients)]  # well inside the clip norm
    arrays, metrics = _one_round(strategy, initial, [(start + u).astype(np.float32) for u in updates], [1.0, 1.0, 1.0])

    chosen = np.flatnonzero(strategy.participations)
    assert chosen.size == 2 and strategy.participations.sum() == 2
    # Independent computation: the mean of the real updates and clip * direction for each chosen canary
    canaries = UpdateCanaries(num_canaries=8, dimension=d, seed=4)
    expected = start.ravel() + (sum(u.ravel() for u in updates) + sum(clip * canaries.direction(int(j)) for j in chosen)) / 5
    np.testing.assert_allclose(arrays.to_numpy_ndarrays()[0].ravel(), expected, atol=1e-5)
    # a canary reports the mean weight and the weighted mean of the other metrics: the aggregate is unchanged
    assert metrics["loss"] == pytest.approx(1.0)
    assert strategy.rounds == [{"round": 1, "clients": 3, "canaries": 2, "num_sampled_clients": 5, "clipping_norm": clip}]


def test_estimate_reads_the_final_model_delta(task_identity):
    dp = DifferentialPrivacyServerSideFixedClipping(
        FedAvg(fraction_evaluate=0.0, weighted_by_key="weight"), noise_multiplier=0.0, clipping_norm=1.0, num_sampled_clients=4
    )
    strategy = CanaryClients(dp, num_canaries=2, canaries_per_round=2, num_held_out=50, seed=1)
    initial = ArrayRecord([np.zeros(3000, dtype=np.float32)])
    tiny = np.full(3000, 1e-6, dtype=np.float32)  # Flower's clipping divides by the update's norm: not 0
    _one_round(strategy, initial, [tiny, tiny], [1, 1])
    result = strategy.estimate(delta=1e-5)
    # the delta is ~ (u_0 + u_1)/4 and the directions are nearly orthogonal: each cosine is ~ 1/sqrt(2)
    np.testing.assert_allclose(result.canary_cosines, 1 / np.sqrt(2), atol=0.05)
    assert result.held_out_cosines.shape == (50,) and np.all(np.abs(result.held_out_cosines) < 0.15)
    assert result.claimed_epsilon is None  # noise multiplier 0 claims nothing
    data = result.to_dict()
    assert data["flwr_version"] == metadata.version("flwr")
    assert data["epsilon_est"]["kind"] == "estimate" and data["epsilon_lo"]["kind"] == "lower bound"


def test_bad_input_names_the_argument():
    dp = DifferentialPrivacyServerSideFixedClipping(FedAvg(), noise_multiplier=1.0, clipping_norm=1.0, num_sampled_clients=4)
    with pytest.raises(ValueError, match=r"`canaries_per_round` must be an integer in \[1, 5\], got 6"):
        CanaryClients(dp, num_canaries=5, canaries_per_round=6)
    with pytest.raises(ValueError, match="`strategy` must be a Flower DP wrapper"):
        CanaryClients(FedAvg(), num_canaries=5, canaries_per_round=1)
    with pytest.raises(ValueError, match="no round has been aggregated"):
        CanaryClients(dp, num_canaries=5, canaries_per_round=1).estimate(delta=1e-5)
    with pytest.raises(ValueError, match="`delta` must be"):
        CanaryClients(dp, num_canaries=5, canaries_per_round=1).estimate(delta=1.5)


def _scaled_residuals(outcome):
    """√d (cos_j - n_j C / (m ‖Δ‖)): each canary's cosine minus its own inserted share, scaled.

    Flower's FedAvg adds (1/m) Σ clipped updates (+ noise) to the model, so an inserted canary j
    contributes exactly n_j C / m · u_j to Δ; everything else in Δ is independent of u_j (up to
    the real clients' later rounds), so the residual is ~ N(0, ‖rest‖²/‖Δ‖²) with ‖rest‖ <= ‖Δ‖.
    """
    estimate = outcome["estimate"]
    delta = np.concatenate([f.ravel() - i.ravel() for f, i in zip(outcome["final"], outcome["initial"])]).astype(np.float64)
    canaries = UpdateCanaries(num_canaries=estimate.num_canaries + estimate.num_held_out, dimension=estimate.dimension, seed=estimate.seed)
    brute = np.array([canaries.direction(j) @ delta for j in range(estimate.num_canaries)]) / np.linalg.norm(delta)
    np.testing.assert_allclose(estimate.canary_cosines, brute, atol=1e-6)
    (m,) = {r["num_sampled_clients"] for r in estimate.rounds}
    (clip,) = {r["clipping_norm"] for r in estimate.rounds}
    share = estimate.participations * clip / (m * np.linalg.norm(delta))
    return np.sqrt(estimate.dimension) * (estimate.canary_cosines - share)


@pytest.fixture(scope="module")
def simulation(tmp_path_factory):
    """One Flower simulation on Ray: clipping only (noise 0), then noise multiplier 2, same federation."""
    sys.path.insert(0, str(EXAMPLES))  # Ray's workers import the example's module through sys.path
    try:
        import flower_digits

        seed = int(np.random.default_rng().integers(2**31))  # any seed must do
        base = flower_digits.FlowerDigitsConfig(
            num_clients=6,
            num_rounds=3,
            noise_multiplier=0.0,
            num_canaries=100,
            canaries_per_round=34,
            num_held_out=100,
            local_steps=5,
            learning_rate=0.5,
            seed=seed,
        )
        noisy = flower_digits.FlowerDigitsConfig(**{**base.__dict__, "noise_multiplier": 2.0})
        low, high = flower_digits.run_flower_digits(base, noisy)
    finally:
        sys.path.remove(str(EXAMPLES))
    return {"low": low, "high": high, "seed": seed, "module": flower_digits, "config": base}


@pytest.mark.parametrize("level", ["low", "high"])
def test_simulation_inserts_each_canary_at_its_clip_norm(simulation, level):
    estimate = simulation[level]["estimate"]
    assert estimate.participations.min() >= 1 and estimate.participations.sum() == 3 * 34
    residuals = _scaled_residuals(simulation[level])
    assert abs(residuals.mean()) < 0.5, simulation["seed"]  # its standard error is <= 0.1
    assert residuals.std() < 1.3, simulation["seed"]


@pytest.mark.parametrize("level", ["low", "high"])
def test_simulation_held_out_canaries_follow_the_exact_null(simulation, level):
    estimate = simulation[level]["estimate"]
    half = (estimate.dimension - 1) / 2
    assert stats.kstest((1 + estimate.held_out_cosines) / 2, stats.beta(half, half).cdf).pvalue > 1e-6, simulation["seed"]


def test_simulation_estimates_track_the_noise(simulation):
    low, high = simulation["low"]["estimate"], simulation["high"]["estimate"]
    # clipping only: the inserted canaries stand far out of the null, so the attack finds them
    assert np.mean(low.canary_cosines > low.held_out_cosines.max()) >= 0.9, simulation["seed"]
    assert low.epsilon_est.epsilon > 10 and low.epsilon_lo.epsilon > 5, simulation["seed"]
    # noise multiplier 2: each canary is one or two Gaussian mechanisms at sigma = 2, seen through the final model
    claimed = gdp_epsilon(np.sqrt(high.participations.max()) / 2.0, 1e-5)
    assert high.claimed_epsilon == pytest.approx(claimed)
    assert high.epsilon_lo.epsilon <= claimed, simulation["seed"]
    assert high.epsilon_est.epsilon < low.epsilon_est.epsilon / 4, simulation["seed"]
    assert simulation["low"]["accuracy"][3] > 0.2  # the real clients do train (chance is 0.1)


def test_example_writes_results_and_plot(simulation, tmp_path):
    module, outcome = simulation["module"], simulation["high"]
    data = module.write_outputs(simulation["config"], outcome, tmp_path / "run")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["cosines.png", "results.json"]
    assert data["estimate"]["threat_model"].startswith("final model")
    assert data["estimate"]["seed"] == simulation["seed"]
