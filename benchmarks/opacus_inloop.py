"""Overhead of in-loop Opacus auditing: ``python benchmarks/opacus_inloop.py [--output FILE]``.

Times the user's own Opacus training step (forward, backward, ``optimizer.step()``)
with and without :class:`privaudit.integrations.opacus_inloop.OpacusInLoopAuditor`
attached, on an MLP whose step takes a few milliseconds. Plain and audited
blocks alternate (paired), and the overhead is the median of the per-pair
ratios of median step times. The target is <= 10 % for steps of >= 2 ms.

It also trains two fresh, identically seeded setups for ``--steps`` steps, one
with the auditor attached, and reports the largest weight difference between
them and whether torch's global RNG state ended the same (0.0 and true: the
audit leaves the user's training bit for bit).

``bound`` holds, for the audited steps of the timing blocks (σ = 1, q = 1/20),
the end-to-end bound ÷ the ε of Opacus' PRV accountant for those steps, per
per-step test on the same observations: the headline t test, the
order-statistics test on paired observations, and the former GDP
Clopper–Pearson bound at threshold 0.5 (``opacus_verdict.test_ratios``).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import opacus
import torch

from privaudit._core.results import library_versions
from privaudit.integrations.opacus_inloop import OpacusInLoopAuditor


def setup(width: int, batch: int, seed: int):
    torch.manual_seed(seed)
    x, y = torch.randn(batch * 20, 256), torch.randint(0, 10, (batch * 20,))
    model = torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.ReLU(), torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 10))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return opacus.PrivacyEngine().make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.05), data_loader=loader, noise_multiplier=1.0, max_grad_norm=1.0
        )


def block(model, optimizer, batches, steps: int) -> float:
    """Median seconds per step over ``steps`` steps."""
    times = []
    for index in range(steps):
        x, y = batches[index % len(batches)]
        start = time.perf_counter()
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def forever(loader):
    while True:  # a fresh pass each time: Poisson batches are re-drawn
        yield from loader


def bit_for_bit(args) -> dict:
    """Two seeded runs of the user's loop, without and with the auditor: weight difference and RNG state."""
    runs = []
    for audit in (False, True):
        model, optimizer, loader = setup(args.width, args.batch, 1)  # Poisson batches and noise from torch's global RNG
        auditor = OpacusInLoopAuditor(model, optimizer, canaries_per_step=args.canaries_per_step, seed=0) if audit else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if auditor is not None:
                auditor.__enter__()
            batches = forever(loader)
            for _ in range(args.steps):
                x, y = next(batches)
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
            if auditor is not None:
                auditor.__exit__(None, None, None)
        runs.append((torch.cat([p.detach().flatten() for p in model.parameters()]), torch.get_rng_state()))
    (plain, plain_rng), (audited, audited_rng) = runs
    return {"max_weight_difference": float((plain - audited).abs().max()), "global_rng_state_equal": bool(torch.equal(plain_rng, audited_rng))}


def bound_ratios(auditor, loader, delta: float) -> dict:
    """The in-loop result's bound over the audited steps against Opacus' PRV accountant's ε for them, per per-step test."""
    from opacus.accountants import PRVAccountant
    from opacus_verdict import test_ratios  # the sibling benchmark's comparison: one piece of code for both

    result = auditor.result(delta=delta)
    accountant = PRVAccountant()
    accountant.history = [(float(auditor.optimizer.noise_multiplier), float(loader.sample_rate), auditor.num_steps)]
    epsilon = float(accountant.get_epsilon(delta))
    return {"accountant_epsilon": epsilon, "refuted": result.refuted, "delta": delta, "tests": test_ratios(auditor, result, epsilon)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "opacus_inloop.json")
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--canaries-per-step", type=int, default=10)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--delta", type=float, default=1e-5)
    args = parser.parse_args()
    if min(args.width, args.batch, args.canaries_per_step, args.steps, args.pairs) < 1:
        parser.error("every count must be >= 1")
    model, optimizer, loader = setup(args.width, args.batch, 0)
    batches = [next(iter(loader)) for _ in range(8)]
    block(model, optimizer, batches, 5)  # warm-up
    auditor = OpacusInLoopAuditor(model, optimizer, canaries_per_step=args.canaries_per_step, seed=0, data_loader=loader)
    plain, audited = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(args.pairs):
            plain.append(block(model, optimizer, batches, args.steps))
            with auditor:
                audited.append(block(model, optimizer, batches, args.steps))
    ratios = np.array(audited) / np.array(plain)
    report = {
        "benchmark": "opacus_inloop",
        "model": f"MLP 256-{args.width}-{args.width}-10",
        "batch": args.batch,
        "canaries_per_step": args.canaries_per_step,
        "audit_size": auditor.audit_size,
        "steps_per_block": args.steps,
        "pairs": args.pairs,
        "plain_step_ms_median": 1e3 * float(np.median(plain)),
        "audited_step_ms_median": 1e3 * float(np.median(audited)),
        "overhead_median": float(np.median(ratios) - 1.0),
        "overhead_per_pair": (ratios - 1.0).tolist(),
        "audited_steps": auditor.num_steps,
        "bound": bound_ratios(auditor, loader, args.delta),
        "seeds": auditor.seeds,
        **bit_for_bit(args),
        "torch_threads": torch.get_num_threads(),
        "versions": {**library_versions(), "torch": torch.__version__, "opacus": opacus.__version__},
    }
    print(json.dumps({k: v for k, v in report.items() if k != "versions"}, indent=2))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
