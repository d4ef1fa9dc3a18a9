"""A zoo of DP-SGD loops as users write them, audited in the loop: ``python benchmarks/loop_bugs.py [--seeds 10] [--output FILE]``.

Each loop trains a digits MLP (scikit-learn's ``load_digits``, 64-16-10)
with Opacus' ``make_private_with_epsilon(target_epsilon=3, target_delta=1e-5)``
for 3 epochs of batches of 64, with :class:`privaudit.integrations.opacus_inloop.OpacusInLoopAuditor`
attached (given the accountant and the loader ``make_private`` returned, as
the guide says) and the user's claim (3, 1e-5). Bugs, each with the words
its finding must hold: shuffled batches accounted as Poisson, the user's own
loader, a ``WeightedRandomSampler``, BatchNorm, σ lowered after
``make_private``, two batches accumulated per noisy step, training past the
calibrated epochs, torch's seed reset before each step (the same noise every
step), the noisy sum divided by the realised batch size, ``make_private``
called again after an epoch (same engine), σ calibrated with Opacus' GDP
accountant. Correct loops: Poisson, ``BatchMemoryManager``, the PRV
accountant (σ calibrated with it), LoRA adapters through peft.
Acceptance: every bug flagged with its cause named in >= 9 of 10 seeds,
correct loops flagged in <= 1 of 20 (0 of 20 for Poisson). The JSON holds
per case the counts, each seed's findings and the wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import time
import warnings
from pathlib import Path

EPSILON, DELTA, EPOCHS, BATCH = 3.0, 1e-5, 3, 64

# case -> words every finding list of a flagged run must hold (None: a correct loop, never flagged)
CASES: dict[str, str | None] = {
    "poisson": None,
    "batch-memory-manager": None,
    "prv-accountant": None,
    "lora": None,
    "shuffled-as-poisson": "poisson_sampling=False",
    "own-loader": "did not come from the DPDataLoader",
    "weighted-sampler": "WeightedRandomSampler",
    "batchnorm": "BatchNorm",
    "sigma-lowered": "lowered after make_private",
    "accumulation": "accumulated into one noisy step",
    "past-calibrated-steps": "past the steps it was calibrated for",
    "noise-reused": "is the same draw",
    "realised-divisor": "expected_batch_size was changed",
    "second-make-private": "when the auditor was attached",
    "gdp-accountant": "central limit theorem",
}
ACCOUNTANT = {"prv-accountant": "prv", "gdp-accountant": "gdp"}  # the others: RDP, make_private_with_epsilon's default


def _data():
    import torch
    from sklearn.datasets import load_digits

    digits = load_digits()
    return torch.tensor(digits.data / 16.0, dtype=torch.float32), torch.tensor(digits.target, dtype=torch.int64)


@functools.cache
def calibrated_sigma(sample_rate: float, accountant: str = "rdp") -> float:
    """σ as ``make_private_with_epsilon`` calibrates it (Opacus' ``get_noise_multiplier`` with ``accountant``) for the claim and EPOCHS; computed once."""
    from opacus.accountants.utils import get_noise_multiplier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(get_noise_multiplier(target_epsilon=EPSILON, target_delta=DELTA, sample_rate=sample_rate, epochs=EPOCHS, accountant=accountant))


def user_loop(case: str, seed: int, *, canaries_per_step: int = 20, audit: bool = True):
    """Train the zoo's ``case`` loop (seeded) with the auditor attached (not attached without ``audit``); the auditor after training.

    torch's global RNG is the caller's again on return (the noise-reuse loop reseeds it at every step, as its bug).
    """
    import torch

    if case not in CASES:
        raise ValueError(f"`case` must be one of {sorted(CASES)}, got {case!r}")
    with torch.random.fork_rng(devices=[]):
        return _user_loop(case, seed, canaries_per_step=canaries_per_step, audit=audit)


def _model(case: str, generator):
    import torch

    layers = [torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10)]
    if case == "batchnorm":
        layers.insert(1, torch.nn.BatchNorm1d(16, affine=False))  # no weights of its own, so Opacus' validator lets it through
    model = torch.nn.Sequential(*layers)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.1)
    if case == "lora":  # LoRA adapters of rank 4 on both layers through peft; the base weights frozen
        import peft

        model = peft.get_peft_model(model, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["0", "2"], init_lora_weights="gaussian"))
    return model


def _user_loop(case: str, seed: int, *, canaries_per_step: int, audit: bool):
    import opacus
    import torch
    from opacus.utils.batch_memory_manager import BatchMemoryManager

    from privaudit.integrations.opacus_inloop import OpacusInLoopAuditor

    x, y = _data()
    generator = torch.Generator().manual_seed(seed)
    model = _model(case, generator)
    dataset = torch.utils.data.TensorDataset(x, y)
    if case == "weighted-sampler":
        weights = torch.where(y == 0, 20.0, 1.0).double()  # oversample the rare class, as tutorials do
        sampler = torch.utils.data.WeightedRandomSampler(weights, num_samples=len(x), generator=generator)
        loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, sampler=sampler)
    else:
        loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, shuffle=True, generator=generator)
    engine = opacus.PrivacyEngine(accountant=ACCOUNTANT.get(case, "rdp"))
    torch.manual_seed(seed + 2)  # the noise-reuse loop's global RNG (its noise_generator is None), inside the caller's fork
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus' notes on secure RNG and the RDP orders

        def private(module, optimizer, data_loader):  # what make_private_with_epsilon(EPSILON, DELTA, EPOCHS) does, σ cached
            return engine.make_private(
                module=module,
                optimizer=optimizer,
                data_loader=data_loader,
                noise_multiplier=calibrated_sigma(1.0 / len(loader), ACCOUNTANT.get(case, "rdp")),
                max_grad_norm=1.0,
                poisson_sampling=case not in ("shuffled-as-poisson", "weighted-sampler", "accumulation"),  # Opacus refuses accumulation with Poisson
                noise_generator=None if case == "noise-reused" else torch.Generator().manual_seed(seed + 1),
            )

        trainable = [parameter for parameter in model.parameters() if parameter.requires_grad]
        module, optimizer, private_loader = private(model, torch.optim.SGD(trainable, lr=0.5), loader)

        def step(xb, yb, *, update: bool = True):
            if update:
                optimizer.zero_grad()
            torch.nn.functional.cross_entropy(module(xb), yb).backward()

        if case == "second-make-private":  # one epoch, then make_private again on what it returned, as a re-run notebook cell does
            for xb, yb in private_loader:
                step(xb, yb)
                optimizer.step()
            module, optimizer, private_loader = private(module, optimizer, private_loader)
        if case == "sigma-lowered":
            optimizer.noise_multiplier /= 10
        auditor = OpacusInLoopAuditor(
            module, optimizer, canaries_per_step=canaries_per_step, seed=seed, accountant=engine.accountant, data_loader=private_loader
        )
        epochs = 2 * EPOCHS if case == "past-calibrated-steps" else EPOCHS
        feed = loader if case == "own-loader" else private_loader
        with auditor if audit else contextlib.nullcontext():
            for _ in range(epochs):
                if case == "batch-memory-manager":
                    with BatchMemoryManager(data_loader=private_loader, max_physical_batch_size=16, optimizer=optimizer) as physical:
                        for xb, yb in physical:
                            step(xb, yb)
                            optimizer.step()
                    continue
                for index, (xb, yb) in enumerate(feed):
                    if case == "accumulation":  # two batches' gradients, one noisy step: zero only after a step
                        step(xb, yb, update=index % 2 == 0)
                        if index % 2 == 1:
                            optimizer.step()
                        continue
                    step(xb, yb)
                    if case == "noise-reused":
                        torch.manual_seed(seed)  # "for reproducibility", before the step: every step draws the same noise
                    if case == "realised-divisor":
                        optimizer.expected_batch_size = max(1, len(xb))  # "average over the batch that was drawn"
                    optimizer.step()
    return auditor


def run_case(case: str, seed: int) -> dict:
    """One seed of one case: flagged, whether its cause was named, the findings and the bound."""
    start = time.perf_counter()
    result = user_loop(case, seed).result(delta=DELTA, claimed_epsilon=EPSILON, claimed_delta=DELTA)
    findings = list(result.verdict.findings)
    words = CASES[case]
    return {
        "seed": seed,
        "flagged": bool(result.flagged),
        "cause_named": words is not None and any(words in line for line in findings),
        "findings": findings,
        "per_step_bound": result.bound.epsilon,
        "end_to_end_ratio": result.verdict.end_to_end.ratio,
        "checks": {check.name: check.p_value for check in result.loop_checks},
        "seconds": time.perf_counter() - start,
    }


def timing(repeats: int = 3) -> dict:
    """CPU seconds of the Poisson loop alone and with the auditor (its result and verdict included); audit_opacus on σ/10 with PRV."""
    import opacus
    import torch

    from privaudit.integrations.opacus import audit_opacus

    def cpu(work) -> float:
        start = time.process_time()
        work()
        return time.process_time() - start

    from privaudit.stats import dpsgd_claims

    def audited_run():
        dpsgd_claims._optimistic_epsilon.cache_clear()  # each repeat pays the verdict's conversions, as a first result would
        user_loop("poisson", 0).result(delta=DELTA, claimed_epsilon=EPSILON, claimed_delta=DELTA)

    alone = min(cpu(lambda: user_loop("poisson", 0, audit=False)) for _ in range(repeats))
    audited = min(cpu(audited_run) for _ in range(repeats))
    x, y = _data()
    module = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=BATCH, generator=torch.Generator().manual_seed(0))
    engine = opacus.PrivacyEngine(accountant="prv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = engine.make_private(
            module=module, optimizer=torch.optim.SGD(module.parameters(), lr=0.5), data_loader=loader,
            noise_multiplier=calibrated_sigma(1.0 / len(loader)) / 10, max_grad_norm=1.0,
        )  # fmt: skip
        for _ in range(EPOCHS):
            for xb, yb in loader:
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
                optimizer.step()
        model.eval()  # left in eval mode after an accuracy check
        start, cpu_start = time.perf_counter(), time.process_time()
        result = audit_opacus(
            model, optimizer, loader, torch.nn.functional.cross_entropy, accountant=engine.accountant, num_steps=100, canaries_per_step=20,
            claimed_epsilon=EPSILON, claimed_delta=DELTA,
        )  # fmt: skip
    return {
        "inloop_cpu_s_alone": alone,
        "inloop_cpu_s_audited": audited,
        "inloop_overhead_ratio": audited / alone,
        "audit_opacus_sigma_over_10_wall_s": time.perf_counter() - start,
        "audit_opacus_sigma_over_10_cpu_s": time.process_time() - cpu_start,
        "audit_opacus_sigma_over_10_flagged": bool(result.flagged),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per bug; correct loops get twice as many")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--timing", action="store_true", help="only the timings: auditor overhead and audit_opacus on σ/10")
    args = parser.parse_args()
    from privaudit._core.results import library_versions

    if args.timing:
        print(json.dumps({"benchmark": "loop_bugs timing", **timing(), "versions": library_versions()}, indent=2))
        return

    cases = {}
    for case, words in CASES.items():
        seeds = range(args.seeds * (2 if words is None else 1))
        rows = [run_case(case, seed) for seed in seeds]
        cases[case] = {
            "bug": words is not None,
            "flagged": sum(row["flagged"] for row in rows),
            "cause_named": sum(row["cause_named"] for row in rows),
            "seeds": len(rows),
            "seconds": sum(row["seconds"] for row in rows),
            "runs": rows,
        }
        print(f"{case}: flagged {cases[case]['flagged']}/{len(rows)}, cause named {cases[case]['cause_named']}")
    out = {"benchmark": "loop_bugs", "epsilon": EPSILON, "delta": DELTA, "epochs": EPOCHS, "batch": BATCH, "cases": cases, "versions": library_versions()}
    text = json.dumps(out, indent=2)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    else:
        print(text)


if __name__ == "__main__":
    main()
