"""Estimate the privacy of DP-FedAvg in a Flower simulation with random canary clients.

Real clients each hold one partition of scikit-learn's digits (bundled with
scikit-learn, nothing is downloaded) and train a small MLP locally. The server
runs FedAvg inside Flower's ``DifferentialPrivacyServerSideFixedClipping``,
with :class:`privaudit.integrations.flower.CanaryClients` in front of it.
Flower's simulation engine runs the clients on Ray, as shipped.

Run it (about 30 seconds on two CPU cores, most of it starting Ray)::

    python examples/flower_digits.py --noise-multiplier 0.5 --output flower-run

It writes ``results.json`` and ``cosines.png`` into ``--output`` (all at once,
nothing on failure) and prints ε_est, ε_lo and the test accuracy.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")  # no network calls from Flower
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

import numpy as np  # noqa: E402


@dataclasses.dataclass(frozen=True)
class FlowerDigitsConfig:
    """Everything a run depends on. Each round, every real client and ``canaries_per_round`` canaries take part."""

    num_clients: int = 10
    num_rounds: int = 5
    noise_multiplier: float = 0.5
    clipping_norm: float = 1.0
    num_canaries: int = 100
    canaries_per_round: int = 20
    num_held_out: int = 100
    local_steps: int = 10
    learning_rate: float = 0.1
    hidden: int = 256
    delta: float = 1e-5
    seed: int = 0
    num_cpus: int = 2


def _client_partition(seed: int, partition: int, num_partitions: int):
    from privaudit.data.tabular import load_dataset

    data = load_dataset("digits", seed=seed)  # the split is seeded and identical on every node
    rows = np.array_split(np.arange(data.x_train.shape[0]), num_partitions)[partition]
    return data.x_train[rows], data.y_train[rows]


def _model(hidden: int, seed: int):
    from privaudit.models.classifiers import build_classifier

    return build_classifier("mlp", input_dim=64, num_classes=10, hidden=hidden, seed=seed)


def make_client_app():
    """The real clients: ``local_steps`` of full-batch gradient descent on their partition."""
    import torch
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp

    app = ClientApp()

    @app.train()
    def train(msg, context):
        torch.set_num_threads(1)
        config = msg.content["config"]
        x, y = _client_partition(int(config["seed"]), int(context.node_config["partition-id"]), int(context.node_config["num-partitions"]))
        model = _model(int(config["hidden"]), 0)
        model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        optimizer = torch.optim.SGD(model.parameters(), lr=float(config["learning-rate"]))
        inputs, labels = torch.as_tensor(x), torch.as_tensor(y)
        for _ in range(int(config["local-steps"])):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(inputs), labels)
            loss.backward()
            optimizer.step()
        # equal weights: DP-FedAvg's noise is calibrated to an unweighted mean of clipped updates
        metrics = MetricRecord({"train-loss": float(loss.item()), "weight": 1.0})
        return Message(RecordDict({"arrays": ArrayRecord(model.state_dict()), "metrics": metrics}), reply_to=msg)

    return app


def _train_with_canaries(grid, config: FlowerDigitsConfig) -> dict:
    """One federated training with canary clients; returns its estimate, accuracy and parameters."""
    import torch
    from flwr.app import ArrayRecord, ConfigRecord, MetricRecord
    from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg

    from privaudit.data.tabular import load_dataset
    from privaudit.integrations.flower import CanaryClients

    test = load_dataset("digits", seed=config.seed)

    def accuracy(server_round, arrays):
        model = _model(config.hidden, 0)
        model.load_state_dict(arrays.to_torch_state_dict())
        with torch.no_grad():
            predictions = model(torch.as_tensor(test.x_test)).argmax(1).numpy()
        return MetricRecord({"accuracy": float(np.mean(predictions == test.y_test))})

    fedavg = FedAvg(
        fraction_train=1.0,
        fraction_evaluate=0.0,
        min_train_nodes=config.num_clients,
        min_available_nodes=config.num_clients,
        weighted_by_key="weight",
    )
    private = DifferentialPrivacyServerSideFixedClipping(
        fedavg,
        noise_multiplier=config.noise_multiplier,
        clipping_norm=config.clipping_norm,
        num_sampled_clients=config.num_clients + config.canaries_per_round,  # the canaries are clients too
    )
    strategy = CanaryClients(
        private, num_canaries=config.num_canaries, canaries_per_round=config.canaries_per_round, num_held_out=config.num_held_out, seed=config.seed
    )
    train_config = ConfigRecord({"seed": config.seed, "hidden": config.hidden, "learning-rate": config.learning_rate, "local-steps": config.local_steps})
    initial = ArrayRecord(_model(config.hidden, config.seed).state_dict())
    result = strategy.start(grid=grid, initial_arrays=initial, num_rounds=config.num_rounds, train_config=train_config, evaluate_fn=accuracy)
    return {
        "estimate": strategy.estimate(delta=config.delta),
        "accuracy": {int(r): float(m["accuracy"]) for r, m in result.evaluate_metrics_serverapp.items()},
        "initial": initial.to_numpy_ndarrays(),
        "final": result.arrays.to_numpy_ndarrays(),
    }


def make_server_app(configs, outcomes: list):
    """A ServerApp that trains once per config, one after the other, appending each outcome."""
    from flwr.serverapp import ServerApp

    app = ServerApp()

    @app.main()
    def main(grid, context):
        for config in configs:
            outcomes.append(_train_with_canaries(grid, config))

    return app


def run_flower_digits(*configs: FlowerDigitsConfig) -> list[dict]:
    """Run one simulation that trains once per config (same federation, e.g. several noise levels).

    Returns, per config, {"estimate": FlowerCanaryEstimate, "accuracy": {round: test accuracy},
    "initial": [arrays], "final": [arrays]}. Ray starts once, so a sweep costs little more than one run.
    """
    from flwr.simulation import run_simulation

    if not configs or len({(c.num_clients, c.num_cpus) for c in configs}) != 1:
        raise ValueError("`configs` must be one or more configurations with the same num_clients and num_cpus")
    outcomes: list = []
    run_simulation(
        server_app=make_server_app(configs, outcomes),
        client_app=make_client_app(),
        num_supernodes=configs[0].num_clients,
        backend_config={
            "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
            "init_args": {"num_cpus": configs[0].num_cpus, "num_gpus": 0, "log_to_driver": False},
        },
    )
    if len(outcomes) != len(configs):
        raise RuntimeError("the Flower simulation ended early; see Flower's log above")
    return outcomes


def write_outputs(config: FlowerDigitsConfig, outcome: dict, output) -> dict:
    """Write ``results.json`` and ``cosines.png`` into ``output``, all at once (nothing on failure)."""
    from privaudit._core.files import staged_output
    from privaudit.audits.fl.audit import cosine_densities
    from privaudit.report.fl import plot_cosine_densities

    estimate = outcome["estimate"]
    data = {"config": dataclasses.asdict(config), "accuracy": outcome["accuracy"], "estimate": estimate.to_dict()}
    groups = {str(n): estimate.canary_cosines[estimate.participations == n] for n in np.unique(estimate.participations)}
    groups = {label: cosines for label, cosines in groups.items() if cosines.size >= 2}  # a density needs two points
    if estimate.num_held_out >= 2:
        groups["0 (held out)"] = estimate.held_out_cosines
    title = f"ε_est = {estimate.epsilon_est.epsilon:.3g}, ε_lo = {estimate.epsilon_lo.epsilon:.3g} (z = {config.noise_multiplier:g})"
    densities = cosine_densities(groups, dimension=estimate.dimension)  # the statistics, before anything is drawn
    with staged_output(output) as scratch:
        (scratch / "results.json").write_text(json.dumps(data, indent=2) + "\n")
        plot_cosine_densities(densities, scratch / "cosines.png", title=title)
    return data


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for field in dataclasses.fields(FlowerDigitsConfig):
        parser.add_argument("--" + field.name.replace("_", "-"), type=type(field.default), default=field.default)
    parser.add_argument("--output", type=Path, default=Path("flower-digits"))
    arguments = vars(parser.parse_args(argv))
    output = arguments.pop("output")
    config = FlowerDigitsConfig(**arguments)
    (outcome,) = run_flower_digits(config)
    write_outputs(config, outcome, output)
    estimate = outcome["estimate"]
    print(f"epsilon_est = {estimate.epsilon_est.epsilon:.4g} (estimate, final model, delta = {config.delta:g})")
    print(f"epsilon_lo  = {estimate.epsilon_lo.epsilon:.4g} ({estimate.epsilon_lo.kind}, {estimate.epsilon_lo.confidence:.0%})")
    print(f"claimed epsilon for the most-inserted canary = {estimate.claimed_epsilon}")
    print(f"test accuracy after round {config.num_rounds}: {outcome['accuracy'][config.num_rounds]:.3f}; results in {output}")


if __name__ == "__main__":
    sys.exit(main())
