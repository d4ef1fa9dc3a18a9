"""Canary clients touch no global RNG state in the user's Flower round loop: proven bit for bit.

Flower samples each round's clients with Python's ``random`` and its DP
wrapper draws its noise from numpy's global generator; the clients here draw
their updates from numpy's global generator too. The canaries are in the
aggregate by design, so the user's model differs by exactly the canaries'
share of it; everything else (every global RNG state, the clients sampled,
the clients' updates and the DP noise) must be as without privaudit.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
flwr = pytest.importorskip("flwr")

from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402
from rng_helpers import assert_same_rng_states, global_rng_states, seed_everything  # noqa: E402

from privaudit.canaries.update import UpdateCanaries  # noqa: E402
from privaudit.integrations.flower import CanaryClients  # noqa: E402

DIMENSION, NODES, REAL, CANARIES, PER_ROUND, ROUNDS, CLIP, SIGMA = 60, 8, 4, 5, 2, 4, 0.5, 0.8


class _Nodes:
    """Stands in for Flower's Grid: the node ids that FedAvg samples from."""

    def get_node_ids(self):
        return list(range(1, NODES + 1))


@pytest.fixture
def task_identity(monkeypatch):
    # Flower stamps instruction messages with the running task's ids; a ServerApp sets them, here we do
    for name, value in (("_run_id", 1), ("_node_id", 0), ("_task_id", 1)):
        monkeypatch.setattr(TaskIdentity, name, value)


def server_loop(*, canaries: bool, seed: int) -> dict:
    """The user's rounds: Flower samples REAL of NODES clients, each replies with its model plus a small update of its own."""
    seed_everything(seed)
    dp = DifferentialPrivacyServerSideFixedClipping(
        FedAvg(fraction_train=REAL / NODES, fraction_evaluate=0.0, weighted_by_key="weight"),
        noise_multiplier=SIGMA,
        clipping_norm=CLIP,
        num_sampled_clients=REAL + PER_ROUND,
    )
    strategy = CanaryClients(dp, num_canaries=CANARIES, canaries_per_round=PER_ROUND, seed=seed) if canaries else dp
    arrays = ArrayRecord([np.zeros(DIMENSION, dtype=np.float32)])
    sampled, updates, chosen = [], [], []
    for server_round in range(1, ROUNDS + 1):
        sent = list(strategy.configure_train(server_round, arrays, ConfigRecord(), _Nodes()))
        sampled.append(sorted(m.metadata.dst_node_id for m in sent))
        current = arrays.to_numpy_ndarrays()[0]
        round_updates = [np.random.normal(0.0, 0.005, DIMENSION).astype(np.float32) for _ in sent]  # inside the clip norm
        updates.append(round_updates)
        replies = [
            Message(RecordDict({"arrays": ArrayRecord([current + u]), "metrics": MetricRecord({"weight": 1.0})}), reply_to=m)
            for m, u in zip(sent, round_updates, strict=True)
        ]
        before = strategy.participations.copy() if canaries else None
        arrays, _ = strategy.aggregate_train(server_round, replies)
        chosen.append(np.flatnonzero(strategy.participations - before) if canaries else None)
    return {"final": arrays.to_numpy_ndarrays()[0], "sampled": sampled, "updates": updates, "chosen": chosen, "rng": global_rng_states()}


def test_canary_clients_leave_the_users_round_loop_bit_for_bit(task_identity):
    seed = int(np.random.default_rng().integers(2**31))
    plain = server_loop(canaries=False, seed=seed)
    audited = server_loop(canaries=True, seed=seed)
    assert_same_rng_states(plain["rng"], audited["rng"])
    assert plain["sampled"] == audited["sampled"] and all(len(s) == REAL for s in plain["sampled"])
    for a, b in zip(plain["updates"], audited["updates"], strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    # The same noise every round: the models differ by the canaries' share alone. FedAvg averages the
    # replies it gets: Σu/REAL without canaries, (Σu + Σ_j C·c_j)/(REAL + PER_ROUND) with them.
    directions = UpdateCanaries(num_canaries=CANARIES, dimension=DIMENSION, seed=seed)
    share = sum(
        (sum(u.astype(np.float64) for u in round_updates) + sum(CLIP * directions.direction(int(j)) for j in chosen)) / (REAL + PER_ROUND)
        - sum(u.astype(np.float64) for u in round_updates) / REAL
        for round_updates, chosen in zip(audited["updates"], audited["chosen"], strict=True)
    )
    assert sum(len(chosen) for chosen in audited["chosen"]) == ROUNDS * PER_ROUND
    np.testing.assert_allclose(audited["final"] - plain["final"], share, atol=2e-6)
    assert np.abs(share).max() > 1e-2  # far above the tolerance, as is a shifted noise draw (σ·C/6 ≈ 0.07)
