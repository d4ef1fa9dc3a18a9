"""The hidden-state audit in the user's own Opacus loop: ``python benchmarks/opacus_hidden_state.py [--seeds N] [--canaries M]``.

The user's loop on scikit-learn's digits (1,797 records; an MLP of 64 tanh
units; Poisson batches of 64; SGD at learning rate 0.5; clip 1; σ
calibrated by Opacus' PRV accountant to ε = 4 at δ = 10⁻⁵ over 5 epochs),
audited three ways on the same seeds:

* ``hidden``: :class:`privaudit.integrations.opacus_hidden.OpacusHiddenStateAuditor`,
  ``--canaries`` gradient canaries in every step, only their final sums read;
* ``every step``: :class:`privaudit.integrations.opacus_inloop.OpacusInLoopAuditor`
  (10 canaries per step, every step's release read), for comparison;
* ``hidden, σ/10``: the hidden-state audit of the same loop with the noise
  divided by 10 while the accountant is told the calibrated σ (a bug).

Each row gives the end-to-end bound ÷ the claimed ε = 4 (the claim is the
accountant's target, an upper bound on the truth), whether the run was
flagged, and, for the hidden state, the composed bound ÷ Steinke et al.'s
last-iterate heuristic (the composition's own ε at q_c = 1).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import opacus
import torch
from results_io import write_results
from sklearn.datasets import load_digits

from privaudit._core.results import library_versions
from privaudit.integrations.opacus_hidden import OpacusHiddenStateAuditor
from privaudit.integrations.opacus_inloop import OpacusInLoopAuditor

EPSILON, DELTA, EPOCHS = 4.0, 1e-5, 5


def audit_loop(seed: int, *, kind: str, canaries: int, noise_divisor: float = 1.0) -> dict:
    """Run the user's loop once with the auditor ``kind`` attached; its bound, flag and time."""
    digits = load_digits()
    torch.manual_seed(seed)
    x, y = torch.tensor(digits.data / 16.0, dtype=torch.float32), torch.tensor(digits.target)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 10))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = opacus.PrivacyEngine(accountant="prv")
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
            data_loader=loader,
            target_epsilon=EPSILON,
            target_delta=DELTA,
            epochs=EPOCHS,
            max_grad_norm=1.0,
        )
        optimizer.noise_multiplier /= noise_divisor
        common = {"seed": seed, "accountant": engine.accountant, "data_loader": loader}
        auditor = (
            OpacusInLoopAuditor(model, optimizer, canaries_per_step=10, **common)
            if kind == "every step"
            else OpacusHiddenStateAuditor(model, optimizer, num_canaries=canaries, **common)
        )
        start = time.perf_counter()
        with auditor:
            for _ in range(EPOCHS):
                for xb, yb in loader:
                    optimizer.zero_grad()
                    torch.nn.functional.cross_entropy(model(xb), yb).backward()
                    optimizer.step()
        result = auditor.result(delta=DELTA, claimed_epsilon=EPSILON)
    row = {
        "seed": seed,
        "audit": kind if noise_divisor == 1.0 else f"{kind}, sigma/{noise_divisor:g}",
        "steps": result.num_steps,
        "noise_multiplier": result.noise_multiplier,
        "per_step_mu_bound": result.bound.parameter,
        "end_to_end_bound": result.end_to_end_epsilon,
        "bound_over_claim": result.end_to_end_epsilon / EPSILON,
        "flagged": bool(result.flagged),
        "seconds": time.perf_counter() - start,
    }
    if kind == "hidden":
        row.update(
            canaries=canaries,
            composed_bound=result.composed_epsilon,
            heuristic=None if result.heuristic is None else result.heuristic.epsilon,
            bound_over_heuristic=result.bound_over_heuristic,
        )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--canaries", type=int, default=4000, help="the hidden-state audit's canaries")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "opacus_hidden_state.json")
    args = parser.parse_args()
    rows = []
    for seed in range(args.seeds):
        rows.append(audit_loop(seed, kind="hidden", canaries=args.canaries))
        rows.append(audit_loop(seed, kind="every step", canaries=args.canaries))
        rows.append(audit_loop(seed, kind="hidden", canaries=args.canaries, noise_divisor=10.0))
    summary = {}
    for audit in dict.fromkeys(row["audit"] for row in rows):
        ratios = [row["bound_over_claim"] for row in rows if row["audit"] == audit]
        summary[audit] = {
            "mean_bound_over_claim": float(np.mean(ratios)),
            "min_bound_over_claim": float(np.min(ratios)),
            "flagged": sum(row["flagged"] for row in rows if row["audit"] == audit),
            "runs": len(ratios),
        }
    out = {
        "setting": f"digits, MLP 64 tanh, Poisson batches of 64, SGD lr 0.5, clip 1, sigma for epsilon {EPSILON:g} at delta {DELTA:g} over {EPOCHS} epochs (PRV)",
        "command": f"python benchmarks/opacus_hidden_state.py --seeds {args.seeds} --canaries {args.canaries}",
        "summary": summary,
        "rows": rows,
        "versions": library_versions(),
    }
    write_results(out, args.output)


if __name__ == "__main__":
    main()
