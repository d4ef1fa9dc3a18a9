"""The Opacus verdict on a user's own loop: ``python benchmarks/opacus_verdict.py [--seeds 20] [--output FILE]``.

A digits MLP (scikit-learn's ``load_digits``) trained with Opacus'
``make_private_with_epsilon(target_epsilon=4, target_delta=1e-5)``, 5 epochs,
Poisson sampling, with :class:`privaudit.integrations.opacus_inloop.OpacusInLoopAuditor`
in the loop and the user's claim (ε = 4, δ = 1e-5) given to ``result()``.
Two loops per seed: the correct one, and one with ``optimizer.noise_multiplier /= 10``
after ``make_private`` (a real kind of bug). Acceptance: the correct loop is
flagged in at most 1 of 20 seeds, the bug in all 20. The JSON holds, per case,
the flag counts, the per-step and end-to-end bounds ÷ their claims and the
wall time, and, on the same observations, the end-to-end bound ÷ Opacus'
accountant's ε of each per-step test: the headline (the t test of one
Gaussian step), the order-statistics test on paired observations, and the
former GDP Clopper–Pearson bound at threshold 0.5 (:func:`test_ratios`).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

EPSILON, DELTA, EPOCHS, BATCH = 4.0, 1e-5, 5, 64


def digits_auditor(seed: int, *, bug: bool, canaries_per_step: int = 20):
    """Train the digits MLP with Opacus at ε = 4 (σ / 10 after make_private when ``bug``), audited in the loop; the auditor after training."""
    import opacus
    import torch
    from sklearn.datasets import load_digits

    from privaudit.integrations.opacus_inloop import OpacusInLoopAuditor

    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target, dtype=torch.int64)
    generator = torch.Generator().manual_seed(seed)  # the user's own seeded draws; torch's global RNG is not touched
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=BATCH, generator=generator)
    engine = opacus.PrivacyEngine(accountant="prv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus' notes on secure RNG
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
            data_loader=loader,
            target_epsilon=EPSILON,
            target_delta=DELTA,
            epochs=EPOCHS,
            max_grad_norm=1.0,
            poisson_sampling=True,
            noise_generator=torch.Generator().manual_seed(seed + 1),
        )
        if bug:
            optimizer.noise_multiplier /= 10
        with OpacusInLoopAuditor(model, optimizer, canaries_per_step=canaries_per_step, seed=seed, accountant=engine.accountant) as auditor:
            for _ in range(EPOCHS):
                for xb, yb in loader:
                    optimizer.zero_grad()
                    torch.nn.functional.cross_entropy(model(xb), yb).backward()
                    optimizer.step()
    return auditor


def test_ratios(auditor, result, accountant_epsilon: float | None) -> dict:
    """End-to-end bound ÷ the accountant's ε of each per-step test on the auditor's observations (composed as the headline is)."""
    from privaudit.integrations.opacus_verdict import refuted_run

    evidence, delta = result.evidence, result.bound.delta
    claim = result.bound.claim
    if claim is None:
        claim = 1.0 / (result.verdict.implied_noise if result.verdict is not None else min(evidence.noise_multipliers))
    bounds = {
        "t_test": result.bound,
        "order_statistics": auditor.bound(delta=delta, confidence=result.bound.confidence, test="order-statistics", claim=claim),
        "threshold_cp": result.threshold_bound,
    }
    out = {}
    for name, bound in bounds.items():
        _, end = refuted_run(bound, sample_rate=evidence.sample_rate, num_steps=result.num_steps)
        out[name] = {
            "step_mu": float(bound.parameter),
            "end_to_end": end,
            "ratio": None if end is None or not accountant_epsilon else end / accountant_epsilon,
        }
    return out


def digits_run(seed: int, *, bug: bool):
    """The in-loop result of :func:`digits_auditor`, with the user's claim (ε = 4, δ = 1e-5)."""
    return digits_auditor(seed, bug=bug).result(delta=DELTA, claimed_epsilon=EPSILON, claimed_delta=DELTA)


def write_json(out: dict, output: Path | None) -> None:
    """``out`` as indented JSON to ``output``, or to stdout without one."""
    text = json.dumps(out, indent=2)
    if output:
        output.write_text(text + "\n", encoding="utf-8")
    else:
        print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    from privaudit._core.results import library_versions

    cases = {}
    for name, bug in (("correct", False), ("sigma/10 after make_private", True)):
        start, rows = time.perf_counter(), []
        for seed in range(args.seeds):
            auditor = digits_auditor(seed, bug=bug)
            result = auditor.result(delta=DELTA, claimed_epsilon=EPSILON, claimed_delta=DELTA)
            verdict = result.verdict
            rows.append(
                {
                    "refuted": result.refuted,
                    "accountant_epsilon": result.evidence.accountant_epsilon,
                    "tests": test_ratios(auditor, result, result.evidence.accountant_epsilon),
                    "seed": seed,
                    "flagged": verdict.flagged,
                    "per_step_bound": result.bound.epsilon,
                    "per_step_ratio": verdict.per_step.ratio,
                    "end_to_end_bound": verdict.end_to_end.bound,
                    "end_to_end_ratio": verdict.end_to_end.ratio,
                    "findings": list(verdict.findings),
                    "sigma_read": list(result.evidence.noise_multipliers),
                    "sigma_measured": result.evidence.noise_measured,
                    "sigma_implied": verdict.implied_noise,
                    "sample_rate": result.evidence.sample_rate,
                    "steps": result.evidence.run_steps,
                }
            )
        ratios = np.array([row["end_to_end_ratio"] for row in rows])
        per_test = {
            test: float(np.mean([row["tests"][test]["ratio"] for row in rows])) if all(row["tests"][test]["ratio"] is not None for row in rows) else None
            for test in rows[0]["tests"]
        }
        cases[name] = {
            "bound_over_accountant_mean": per_test,
            "flagged": sum(row["flagged"] for row in rows),
            "seeds": args.seeds,
            "end_to_end_ratio_mean": float(ratios.mean()),
            "end_to_end_ratio_min": float(ratios.min()),
            "seconds": time.perf_counter() - start,
            "runs": rows,
        }
        print(f"{name}: flagged in {cases[name]['flagged']} of {args.seeds} seeds; end-to-end bound / claim mean {ratios.mean():.3f} (min {ratios.min():.3f})")
        print(f"  end-to-end bound / accountant's epsilon, mean per test: {per_test}")
    out = {"benchmark": "opacus_verdict", "epsilon": EPSILON, "delta": DELTA, "epochs": EPOCHS, "batch": BATCH, "cases": cases, "versions": library_versions()}
    write_json(out, args.output)


if __name__ == "__main__":
    main()
