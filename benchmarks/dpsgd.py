"""Cost of auditing DP-SGD: ``python benchmarks/dpsgd.py [--steps N] [--output FILE]``.

Times, per DP-SGD step on the embedded digits data (batch ≈ 67, q = 0.05):

* the reference DP-SGD without auditing, and with the white-box audit
  (``--canaries`` per step, default 10, on 1,000 audit coordinates, observations read every step,
  twin search at the end), and the paper's design, which privatizes a second
  batch per step for the "out" observations (two steps per step);
* Opacus' DPOptimizer as shipped, with and without the canary wrapper;

for a small MLP (64 hidden units), the small CNN and an MLP with 1,024
hidden units. The audit's cost per step is nearly fixed (about a millisecond
on 2 cores), so its share falls as the model grows.

Writes medians over ``--repeats`` interleaved runs to benchmarks/results/dpsgd.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from privaudit.audits.whitebox import collect_gradient_observations
from privaudit.canaries.gradient import GradientCanary
from privaudit.data.tabular import load_dataset
from privaudit.models.classifiers import build_classifier, count_parameters
from privaudit.stats._result import library_versions
from privaudit.training.dpsgd import DPSGDConfig, ReferenceDPSGD
from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

SLOTS = 1000
CANARY = GradientCanary(slot_size=1, norm=100.0)


ARCHITECTURES = {"mlp-64": ("mlp", 64), "cnn": ("cnn", 64), "mlp-1024": ("mlp", 1024)}


def _model(data, name):
    architecture, hidden = ARCHITECTURES[name]
    return build_classifier(
        architecture, input_dim=data.x_train.shape[1], num_classes=data.num_classes, hidden=hidden, image_shape=data.image_shape, seed=0
    )


def _reference(data, architecture, steps, canaries, audited: bool, paired: bool = False) -> float:
    config = DPSGDConfig(noise_multiplier=1.0, sampling_rate=0.05)
    trainer = ReferenceDPSGD(_model(data, architecture), data.x_train, data.y_train, config, audit_size=SLOTS if audited else 0, seed=0)
    empty = np.zeros((0, SLOTS if audited else 0))
    started = time.perf_counter()
    if audited:
        collect_gradient_observations(trainer.step, num_steps=steps, canaries_per_step=canaries, num_slots=SLOTS, clip_norm=1.0, denominator=trainer.denominator, canary=CANARY)
    else:
        for _ in range(steps * (2 if paired else 1)):
            trainer.step(empty)
    return (time.perf_counter() - started) / steps


def _opacus(data, architecture, steps, canaries, audited: bool) -> float:
    from opacus import PrivacyEngine

    from privaudit.integrations.opacus import opacus_release

    x, y = torch.as_tensor(data.x_train), torch.as_tensor(data.y_train)
    model = _model(data, architecture)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=int(0.05 * len(x)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = PrivacyEngine().make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5), data_loader=loader, noise_multiplier=1.0, max_grad_norm=1.0
        )
        loss = torch.nn.functional.cross_entropy
        started = time.perf_counter()
        if audited:
            release, auditor = opacus_release(model, optimizer, loader, loss, SLOTS)
            collect_gradient_observations(release, num_steps=steps, canaries_per_step=canaries, num_slots=SLOTS, clip_norm=1.0, denominator=auditor.denominator, canary=CANARY)
        else:
            done = 0
            while done < steps:
                for xb, yb in loader:
                    optimizer.zero_grad()
                    loss(model(xb), yb).backward()
                    optimizer.step()
                    done += 1
                    if done == steps:
                        break
    return (time.perf_counter() - started) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--canaries", type=int, default=10, help="canaries per step (Opacus pads every per-sample gradient by this many rows)")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "dpsgd.json")
    args = parser.parse_args()
    torch.manual_seed(0)
    data = load_dataset("digits")
    cases = {}
    for architecture in ARCHITECTURES:
        params = count_parameters(_model(data, architecture))
        timings = {
            "reference, no audit": lambda: _reference(data, architecture, args.steps, args.canaries, False),
            "reference, audited": lambda: _reference(data, architecture, args.steps, args.canaries, True),
            "reference, paper's two batches per step": lambda: _reference(data, architecture, args.steps, args.canaries, False, paired=True),
            "opacus, no audit": lambda: _opacus(data, architecture, args.steps, args.canaries, False),
            "opacus, audited": lambda: _opacus(data, architecture, args.steps, args.canaries, True),
        }
        for run in timings.values():
            run()  # warm-up
        samples = {name: [] for name in timings}
        for _ in range(args.repeats):  # interleaved, so drifts of a shared machine hit every case alike
            for name, run in timings.items():
                samples[name].append(run())
        medians = {name: statistics.median(values) for name, values in samples.items()}
        cases[architecture] = {
            "parameters": params,
            "seconds_per_step": medians,
            "overhead_reference": medians["reference, audited"] / medians["reference, no audit"] - 1.0,
            "overhead_paper_design": medians["reference, paper's two batches per step"] / medians["reference, no audit"] - 1.0,
            "overhead_opacus": medians["opacus, audited"] / medians["opacus, no audit"] - 1.0,
        }
        print(architecture, json.dumps(cases[architecture], indent=1))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "date": time.strftime("%Y-%m-%d"),
                "machine": {"processor": _cpu_name(), "cores": torch.get_num_threads(), "python": platform.python_version()},
                "versions": {**library_versions(), "torch": torch.__version__},
                "steps": args.steps,
                "canaries_per_step": args.canaries,
                "audit_coordinates": SLOTS,
                "cases": cases,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
