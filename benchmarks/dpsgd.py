"""Cost of auditing DP-SGD: ``python benchmarks/dpsgd.py [--repeats N] [--steps N] [--output FILE]``.

Times, per DP-SGD step on the embedded digits data (batch ≈ 67, q = 0.05):

* the reference DP-SGD without auditing, and with the white-box audit
  (``--canaries`` per step, default 10, on 1,000 audit coordinates, observations read every step,
  twin search at the end), and the paper's design, which privatizes a second
  batch per step for the "out" observations (two steps per step);
* Opacus' DPOptimizer as shipped, with and without the canary wrapper;

for a small MLP (64 hidden units), the small CNN, an MLP with 1,024 hidden
units, a wider CNN (two convolutions of 32 and 64 channels and a hidden
layer of 128 units, 151,306 parameters) and a deep MLP (eight hidden layers of
64 units, 18 parameter tensors). The audit's cost per step is nearly fixed, so
its share falls as the model grows; in Opacus it is about one more parameter
tensor (the audit coordinates) plus ``--canaries`` more rows in each per-sample
gradient.

Method: each repeat runs every case of a model once, for the same number of
steps (per model, ``--steps`` overrides), in an order that alternates from
repeat to repeat; each run builds its model afresh. The runs of a repeat share
its seed, and the seed changes from repeat to repeat (Opacus' Poisson batches
are then the same in the audited and the plain run; the reference DP-SGD draws
its batches and noise from one generator, so its batches part after the first
step, and varying the seed keeps that from favouring either run). An overhead is the median over
repeats of the paired ratio (audited / plain time of the same repeat) minus 1,
so that drifts of a shared machine, which move both runs of a repeat alike,
cancel; the fixed cost is the median paired difference in µs per step. Writes
every run's time, the medians, the paired ratios' quartiles and the minor page
faults per step (fresh memory the kernel maps in; on some machines they cost
Opacus' own per-step buffers more than the audit costs) to
benchmarks/results/dpsgd.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import resource
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

from privaudit._core.results import library_versions
from privaudit.canaries.gradient import GradientCanary
from privaudit.data.tabular import load_dataset
from privaudit.models.classifiers import build_classifier, count_parameters
from privaudit.observation.gradient import collect_gradient_observations
from privaudit.training.dpsgd import DPSGDConfig, ReferenceDPSGD

SLOTS = 1000
CANARY = GradientCanary(slot_size=1, norm=100.0)

# name: (architecture, hidden units, steps per run); "cnn-wide" and "mlp-deep" are built here
ARCHITECTURES = {
    "mlp-64": ("mlp", 64, 250),
    "cnn": ("cnn", 64, 250),
    "mlp-1024": ("mlp", 1024, 80),
    "cnn-wide": ("cnn-wide", 128, 30),
    "mlp-deep": ("mlp-deep", 64, 150),
}
PAIRS = {  # overhead name: (audited case, plain case)
    "reference": ("reference, audited", "reference, no audit"),
    "paper_design": ("reference, paper's two batches per step", "reference, no audit"),
    "opacus": ("opacus, audited", "opacus, no audit"),
}


def _model(data, name):
    architecture, hidden, _ = ARCHITECTURES[name]
    if architecture not in ("cnn-wide", "mlp-deep"):
        return build_classifier(
            architecture, input_dim=data.x_train.shape[1], num_classes=data.num_classes, hidden=hidden, image_shape=data.image_shape, seed=0
        )
    channels, height, width = data.image_shape
    nn = torch.nn
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        if architecture == "mlp-deep":  # many small parameter tensors: Opacus' per-tensor cost dominates
            widths = [data.x_train.shape[1]] + [hidden] * 8
            layers = [module for a, b in zip(widths, widths[1:]) for module in (nn.Linear(a, b), nn.Tanh())]
            return nn.Sequential(*layers, nn.Linear(hidden, data.num_classes))
        return nn.Sequential(
            nn.Unflatten(1, (channels, height, width)),
            nn.Conv2d(channels, 32, 3, padding=1),
            nn.Tanh(),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.Tanh(),
            nn.AvgPool2d(2),
            nn.Flatten(),
            nn.Linear(64 * (height // 2) * (width // 2), hidden),
            nn.Tanh(),
            nn.Linear(hidden, data.num_classes),
        )


def _reference(data, architecture, steps, canaries, seed, audited: bool, paired: bool = False) -> float:
    config = DPSGDConfig(noise_multiplier=1.0, sampling_rate=0.05)
    trainer = ReferenceDPSGD(_model(data, architecture), data.x_train, data.y_train, config, audit_size=SLOTS if audited else 0, seed=seed)
    empty = np.zeros((0, SLOTS if audited else 0))
    started = time.perf_counter()
    if audited:
        collect_gradient_observations(
            trainer.step, num_steps=steps, canaries_per_step=canaries, num_slots=SLOTS, clip_norm=1.0, denominator=trainer.denominator, canary=CANARY
        )
    else:
        for _ in range(steps * (2 if paired else 1)):
            trainer.step(empty)
    return (time.perf_counter() - started) / steps


def _opacus(data, architecture, steps, canaries, seed, audited: bool) -> float:
    from opacus import PrivacyEngine

    from privaudit.integrations.opacus import opacus_release

    x, y = torch.as_tensor(data.x_train), torch.as_tensor(data.y_train)
    model = _model(data, architecture)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=int(0.05 * len(x)))
    torch.manual_seed(seed)  # Poisson batches from the global generator: the same in the audited and the plain run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = PrivacyEngine().make_private(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
            data_loader=loader,
            noise_multiplier=1.0,
            max_grad_norm=1.0,
            noise_generator=torch.Generator().manual_seed(1),  # noise apart, so the audit coordinates' draws leave the batches alone
        )
        loss = torch.nn.functional.cross_entropy
        started = time.perf_counter()
        if audited:
            release, auditor = opacus_release(model, optimizer, loader, loss, SLOTS)
            collect_gradient_observations(
                release, num_steps=steps, canaries_per_step=canaries, num_slots=SLOTS, clip_norm=1.0, denominator=auditor.denominator, canary=CANARY
            )
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


def _quartiles(values):
    low, median, high = np.percentile(values, [25, 50, 75])
    return float(low), float(median), float(high)


def _overheads(samples) -> dict:
    out = {}
    for name, (audited, plain) in PAIRS.items():
        ratios = [a / p for a, p in zip(samples[audited], samples[plain], strict=True)]
        low, median, high = _quartiles(ratios)
        out[name] = {
            "paired_ratio_median": median - 1.0,
            "paired_ratio_quartiles": [low - 1.0, high - 1.0],
            "fixed_us_per_step": 1e6 * statistics.median(a - p for a, p in zip(samples[audited], samples[plain], strict=True)),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="steps per run for every model (default: 250 for the small models, 150 for mlp-deep, 80 for mlp-1024, 30 for cnn-wide)",
    )
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--canaries", type=int, default=10, help="canaries per step (Opacus pads every per-sample gradient by this many rows)")
    parser.add_argument("--architectures", default=",".join(ARCHITECTURES), help="comma-separated subset of " + ", ".join(ARCHITECTURES))
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "dpsgd.json")
    args = parser.parse_args()
    for option in ("repeats", "canaries"):
        if getattr(args, option) < 1:
            parser.error(f"--{option} must be at least 1, got {getattr(args, option)}")
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    names = args.architectures.split(",")
    for name in names:
        if name not in ARCHITECTURES:
            parser.error(f"unknown architecture {name!r}: choose from {', '.join(ARCHITECTURES)}")
    data = load_dataset("digits")
    cases = {}
    started = time.perf_counter()
    for architecture in names:
        steps = args.steps or ARCHITECTURES[architecture][2]
        params = count_parameters(_model(data, architecture))
        timings = {
            "reference, no audit": lambda n, seed, architecture=architecture: _reference(data, architecture, n, args.canaries, seed, False),
            "reference, audited": lambda n, seed, architecture=architecture: _reference(data, architecture, n, args.canaries, seed, True),
            "reference, paper's two batches per step": lambda n, seed, architecture=architecture: _reference(
                data, architecture, n, args.canaries, seed, False, paired=True
            ),
            "opacus, no audit": lambda n, seed, architecture=architecture: _opacus(data, architecture, n, args.canaries, seed, False),
            "opacus, audited": lambda n, seed, architecture=architecture: _opacus(data, architecture, n, args.canaries, seed, True),
        }
        for run in timings.values():
            run(max(steps // 4, 10), 0)  # warm-up
        samples = {name: [] for name in timings}
        faults = {name: [] for name in timings}
        for repeat in range(args.repeats):  # interleaved, in alternating order, so drifts of a shared machine hit every case alike
            for name in list(timings)[:: 1 if repeat % 2 == 0 else -1]:
                gc.collect()
                before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                samples[name].append(timings[name](steps, 1 + repeat))
                faults[name].append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / steps)
        cases[architecture] = {
            "parameters": params,
            "steps_per_run": steps,
            "seconds_per_step": {name: statistics.median(values) for name, values in samples.items()},
            "overheads": _overheads(samples),
            "minor_page_faults_per_step": {name: statistics.median(values) for name, values in faults.items()},
            "runs": samples,
        }
        print(
            architecture,
            json.dumps({key: cases[architecture][key] for key in ("parameters", "seconds_per_step", "overheads", "minor_page_faults_per_step")}, indent=1),
            flush=True,
        )
    print(f"\n{'model':10s} {'parameters':>10s}  {'case':12s} {'plain':>9s} {'audited':>9s} {'overhead (quartiles)':>24s} {'fixed':>9s}")
    for architecture, case in cases.items():
        for name, (audited, plain) in PAIRS.items():
            overhead = case["overheads"][name]
            low, high = overhead["paired_ratio_quartiles"]
            print(
                f"{architecture:10s} {case['parameters']:10,d}  {name:12s} {1e3 * case['seconds_per_step'][plain]:7.2f}ms {1e3 * case['seconds_per_step'][audited]:7.2f}ms "
                f"{100 * overhead['paired_ratio_median']:+7.1f}% ({100 * low:+6.1f}, {100 * high:+6.1f}) {overhead['fixed_us_per_step']:7.0f}µs"
            )
    print(f"total {time.perf_counter() - started:.0f} s")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "date": time.strftime("%Y-%m-%d"),
                "machine": {"processor": _cpu_name(), "cores": torch.get_num_threads(), "python": platform.python_version()},
                "versions": {**library_versions(), "torch": torch.__version__},
                "repeats": args.repeats,
                "canaries_per_step": args.canaries,
                "audit_coordinates": SLOTS,
                "method": "per model, every case once per repeat in alternating order; overhead = median over repeats of audited/plain time of the same repeat, minus 1; fixed = median paired difference per step",
                "cases": cases,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
