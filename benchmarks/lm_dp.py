"""The one-run audit of DP fine-tuning (Opacus at ε = 4, δ = 1e-5) beside the same fine-tuning without DP: ``python benchmarks/lm_dp.py [--output FILE]``.

For each seed: the tiny GPT-2 base model of ``lm-one-run``'s embedded default
(:mod:`privaudit.audits.lm.tiny`, trained on privaudit's corpus),
``--canaries`` new-token canaries (the strongest design in
``benchmarks/lm_canaries.py``), half included by fair coins, each included
canary once in the fine-tuning data (the claim is per text), then two
fine-tunings on the same data, Poisson batches and budget
(:func:`~privaudit.audits.lm.tiny.fine_tune_dp`): DP-Adam calibrated
by Opacus' RDP accountant to ``--epsilon``, and the same without clipping or
noise. Per run: AUC, TPR at 1% FPR, the one-run ε lower bound (δ = 1e-5,
95%, scores calibrated by the base model), the claimed ε (Opacus'
accountant after the run's steps), bound ÷ claimed ε, and the mechanism
(σ, sampling rate, steps, the PLD ε). Panda et al. (ICLR 2025) report a
bound of about 0.25 × ε at ε = 4 with 1000 new-token canaries on real LMs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import torch

from privaudit._core.results import library_versions
from privaudit._core.seeding import child_seeds
from privaudit.audits.lm.result import audit_lm_scores
from privaudit.audits.lm.scores import calibrated_scores
from privaudit.audits.lm.tiny import bpe_tokenizer, fine_tune, fine_tune_dp, tiny_gpt2
from privaudit.canaries.lm_provenance import prepare_lm_canaries
from privaudit.data.corpus import load_default_corpus
from privaudit.models.hf import HFCausalLMScorer


@dataclasses.dataclass(frozen=True)
class Setting:
    epsilon: float = 4.0
    delta: float = 1e-5
    confidence: float = 0.95
    canaries: int = 1000
    secret_length: int = 1  # one new token per canary: a DP-clipped gradient is not split across two (0.17 vs 0.0 at seed 0, 20k chars)
    corpus_chars: int = 5_000
    vocab_size: int = 384
    base_steps: int = 30
    epochs: int = 4
    batch_size: int = 64
    max_grad_norm: float = 1.0
    learning_rate: float = 1e-2


def run_seed(setting: Setting, seed: int) -> dict:
    """The DP and non-DP runs of one seed: their statistics and mechanisms."""
    seeds = child_seeds(seed, ["model", "base", "canaries", "fine-tune"])
    corpus = load_default_corpus(max_chars=setting.corpus_chars)
    tokenizer = bpe_tokenizer(corpus, vocab_size=setting.vocab_size)
    base = fine_tune(tiny_gpt2(tokenizer, seed=seeds["model"]), tokenizer, corpus, steps=setting.base_steps, seed=seeds["base"])
    provenance, base, tokenizer = prepare_lm_canaries(
        "new-tokens", tokenizer, count=setting.canaries, seed=seeds["canaries"], length=setting.secret_length, model=base
    )
    data = list(corpus) + provenance.included_texts()
    reference = HFCausalLMScorer(base, tokenizer, bos="none")  # the BPE tokenizer has no special tokens
    out = {"seed": seed, "texts": len(data), "num_in": int(sum(provenance.included))}
    for name, epsilon in (("dp", setting.epsilon), ("no_dp", None)):
        started = time.perf_counter()
        tuned = fine_tune_dp(
            base,
            tokenizer,
            data,
            epsilon=epsilon,
            delta=setting.delta,
            epochs=setting.epochs,
            batch_size=setting.batch_size,
            max_grad_norm=setting.max_grad_norm,
            learning_rate=setting.learning_rate,
            seed=seeds["fine-tune"],
        )
        scores = calibrated_scores(HFCausalLMScorer(tuned.model, tokenizer, bos="none"), provenance, reference)
        auc, tpr, bound = audit_lm_scores(scores, provenance.included, delta=setting.delta, confidence=setting.confidence)
        out[name] = {
            "auc": auc,
            "tpr_at_1pct_fpr": tpr,
            "epsilon_lower_bound": bound.epsilon,
            "bound_methods": list(bound.methods),
            "claimed_epsilon": tuned.epsilon,
            "bound_over_claimed": None if tuned.epsilon is None else bound.epsilon / tuned.epsilon,
            "mechanism": tuned.mechanism(),
            "seconds": time.perf_counter() - started,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "lm_dp.json")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--canaries", type=int, default=Setting.canaries)
    parser.add_argument("--epsilon", type=float, default=Setting.epsilon)
    parser.add_argument("--secret-length", type=int, default=Setting.secret_length)
    parser.add_argument("--corpus-chars", type=int, default=Setting.corpus_chars)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the tiny model's matrices gain nothing from more)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    setting = Setting(canaries=args.canaries, epsilon=args.epsilon, secret_length=args.secret_length, corpus_chars=args.corpus_chars)
    seeds = [int(part) for part in args.seeds.split(",")]
    started = time.perf_counter()
    runs = []
    for seed in seeds:
        runs.append(run_seed(setting, seed))
        print(json.dumps(runs[-1]), flush=True)
    dp = [run["dp"]["epsilon_lower_bound"] for run in runs]
    summary = {
        "dp_bounds": dp,
        "no_dp_bounds": [run["no_dp"]["epsilon_lower_bound"] for run in runs],
        "claimed_epsilons": [run["dp"]["claimed_epsilon"] for run in runs],
        "mean_bound_over_claimed": float(np.mean([run["dp"]["bound_over_claimed"] for run in runs])),
        "dp_bound_below_claim_on_every_seed": all(run["dp"]["epsilon_lower_bound"] < run["dp"]["claimed_epsilon"] for run in runs),
        "dp_bound_positive_on_some_seed": any(value > 0 for value in dp),
        "seconds": time.perf_counter() - started,
    }
    report = {
        "benchmark": "lm_dp",
        "config": dataclasses.asdict(setting) | {"seeds": seeds, "design": "new-tokens", "torch_threads": args.threads},
        "runs": runs,
        "summary": summary,
        "versions": library_versions(),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
