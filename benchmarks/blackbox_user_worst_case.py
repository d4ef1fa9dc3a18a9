"""A user's Opacus training audited from the worst-case start: ``python benchmarks/blackbox_user_worst_case.py [--runs 200] [--workers 2] [--seed 0]``.

``privaudit audit blackbox`` with ``--train blackbox_user_worst_case:train``,
a training function written as a user would (a small MLP, ``opacus.PrivacyEngine``,
full-batch DP-SGD: one fixed batch of every record, ``--steps`` steps, clip 1,
σ the accountant's for ε = ``--epsilon`` at δ = 1e-5), on the first 1,000
digits records of the train split. Two audits of the same function, seeds
and runs, differing only in the start: ``--init average`` (the function
draws its own weights from ``seed``) and ``--init worst-case --init-model
blackbox_user_worst_case:build`` (privaudit pre-trains ``build``'s module on
the records outside the audited set and the function loads ``init_state``).
Bound ÷ ε, the scores' separation and the wall times go to
``benchmarks/results/blackbox_user_worst_case.json``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from results_io import write_results  # benchmarks/results_io.py: the script's own folder is on sys.path

STEPS, LEARNING_RATE, CLIP, HIDDEN = 2, 0.5, 1.0, 64
FEATURES, CLASSES = 64, 10  # digits
SIGMA = "BLACKBOX_USER_SIGMA"  # the environment variable that carries σ to the worker processes (spawned after main() sets it)


def _sigma() -> float:
    return float(os.environ[SIGMA])


def build(*, seed):
    """The untrained MLP (64 tanh units), its weights drawn from ``seed`` alone."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, CLASSES))


def train(x_train, y_train, *, seed, init_state=None):
    """Full-batch DP-SGD with Opacus, from ``init_state`` when privaudit gives one, else from ``build(seed=seed)``."""
    import torch
    from opacus import PrivacyEngine

    model = build(seed=seed)
    if init_state is not None:
        model.load_state_dict(init_state)
    x, y = torch.from_numpy(x_train), torch.from_numpy(y_train)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=len(x))  # one batch: sampling rate 1
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    private, optimizer, loader = PrivacyEngine().make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=_sigma(),
        max_grad_norm=CLIP,
        poisson_sampling=False,
        noise_generator=torch.Generator().manual_seed(seed),
    )
    for _ in range(STEPS):
        for batch_x, batch_y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(private(batch_x), batch_y).backward()
            optimizer.step()
    private._close()  # the user's module without Opacus' hooks: trained in place
    return model


def audit(init: str, runs: int, workers: int, seed: int, epsilon: float) -> dict:
    from privaudit.audits.blackbox.audit import run_blackbox_audit
    from privaudit.audits.blackbox.config import BlackBoxConfig
    from privaudit.runner import RunStore

    config = BlackBoxConfig(
        dataset="digits",
        num_records=1000,
        noise_multiplier=_sigma(),
        num_steps=STEPS,
        num_models_per_side=runs // 2,
        seed=seed,
        train="blackbox_user_worst_case:train",
        init=init,
        init_model="blackbox_user_worst_case:build" if init == "worst-case" else None,
        claimed_epsilon=epsilon,
    )
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="blackbox-user-") as directory:
        result = run_blackbox_audit(config, directory, max_workers=workers)
        stored = RunStore(Path(directory)).load_all().values()
    wall = time.perf_counter() - start
    ins = np.array([r["score"] for r in stored if r["with_canary"]])
    outs = np.array([r["score"] for r in stored if not r["with_canary"]])
    return {
        "init": init,
        "epsilon_lower_bound": result.epsilon_lower_bound,
        "ratio": result.epsilon_lower_bound / epsilon,
        "epsilon_lower_bound_eps_delta": result.epsilon_lower_bound_eps_delta,
        "separation_sd": float((ins.mean() - outs.mean()) / np.sqrt((ins.var(ddof=1) + outs.var(ddof=1)) / 2)),
        "training_runs": result.num_runs,
        "wall_time_s": wall,
        "threat_model": result.threat_model,
        "initialisation": None if result.initialisation is None else result.to_dict()["initialisation"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="training runs per audit, half with the canary (at least 10)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "blackbox_user_worst_case.json")
    args = parser.parse_args()

    import privaudit

    os.environ[SIGMA] = repr(float(privaudit.gaussian_noise_multiplier(args.epsilon, 1e-5, sampling_prob=1.0, num_steps=STEPS)))
    rows = [audit(init, args.runs, args.workers, args.seed, args.epsilon) for init in ("worst-case", "average")]
    out = {
        "benchmark": "blackbox_user_worst_case",
        "command": f"python benchmarks/blackbox_user_worst_case.py --runs {args.runs} --workers {args.workers} --seed {args.seed} --epsilon {args.epsilon:g}",
        "setting": f"digits, first 1,000 train records, MLP ({HIDDEN} tanh), Opacus full batch, {STEPS} steps, lr {LEARNING_RATE}, clip {CLIP}, σ {_sigma():.4f}",
        "epsilon": args.epsilon,
        "delta": 1e-5,
        "rows": rows,
    }
    write_results(out, args.output)


if __name__ == "__main__":
    main()
