"""The one-run audit of DP fine-tuning (Opacus at ε = 4, δ = 1e-5) beside the same fine-tuning without DP: ``python benchmarks/lm_dp.py [--output FILE]``.

For each seed: the tiny GPT-2 base model of ``lm-one-run``'s embedded default
(:mod:`privaudit.audits.lm.tiny`, trained on privaudit's corpus),
``--canaries`` new-token canaries, half included by fair coins, each included
canary once in the fine-tuning data (the claim is per text), then two
fine-tunings on the same data, Poisson batches and budget
(:func:`~privaudit.audits.lm.tiny.fine_tune_dp`): DP-Adam calibrated by
Opacus' accountant (``--accountant``, PRV by default) to ``--epsilon``, and
the same without clipping or noise (``--no-baseline`` skips it). Per run:
AUC, TPR at 1% FPR, the one-run ε lower bound (δ = 1e-5, 95%, Steinke et
al.'s test, scores calibrated by the base model), the claimed ε (the
accountant's after the run's steps), bound ÷ claimed ε, and the mechanism
(σ, sampling rate, steps, the PLD ε). Panda et al. (ICLR 2025) report a
bound of about 0.25 × ε at ε = 4 with 1000 new-token canaries on real LMs.

The default design is the strongest measured on this model (docs/tightness.md):

* each canary is two new tokens, none shared with another canary, the
  second scored given the first (``prepare_lm_canaries``' default prefix for
  new tokens), so every embedding row its loss reads is its own; behind the
  shared prefix "my secret is " (``--shared-prefix``) 14% of a canary's
  gradient norm reaches its own rows, against 60%;
* full-batch DP-Adam (sampling rate 1, ``--batch-size 0``): every canary is
  in every step. At a fixed ε, the Gaussian signal a final model's score can
  sum, sampling rate × √steps ÷ σ, is 0.92 at rate 1 against 0.58 at rate
  0.1 over 40 steps (PRV, ε = 4); the rest of a subsampled mechanism's ε
  sits in rare batches that one run of the final model cannot see;
* 2000 canaries: Steinke et al.'s test gains from more guesses (0.16 of
  ε = 4 over seeds 0-2, against 0.13 with 1000); more weakened the scores
  on pilot seeds. The full batch runs in pieces of 512 texts
  (``max_physical_batch_size``, Opacus' BatchMemoryManager: the same steps);
* the new tokens' output rows start at the base model's expected row after
  a canary's prefix (``--new-rows expected``, chosen on pilot seeds 10-12),
  where a canary's clipped gradient lands on rows of its own: 0.205 of
  ε = 4 over seeds 0-2, against 0.16 from transformers' start;
* DP-Adam at learning rate 1e-3 (``--learning-rate``), Panda et al.'s
  (chosen on pilot seeds 10-12): 0.27 of ε = 4 over seeds 0-2, against
  0.205 at 1e-2, whose steps move every weight far enough for a score to
  pick up the second-order effects of the noise. The scores are then at
  DP-Adam's own ceiling (docs/tightness.md).

``--batch-size 64 --epochs 4 --shared-prefix --accountant rdp --learning-rate 1e-2`` is the
design before (0.05 of ε = 4 over seeds 0-2), but for its new tokens, which
were drawn with replacement and could be shared by two canaries. ``--append`` adds this run's
seeds to ``--output`` when it holds the same config (one seed per command
on a busy machine), and the summary is recomputed over all of them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
import types
from pathlib import Path

import numpy as np
import torch

from privaudit._core.results import library_versions
from privaudit._core.seeding import child_seeds
from privaudit.audits.family_test import family_plan
from privaudit.audits.lm.result import audit_lm_scores
from privaudit.audits.lm.scores import calibrated_scores
from privaudit.audits.lm.tiny import bpe_tokenizer, fine_tune, fine_tune_dp, tiny_gpt2
from privaudit.canaries.lm import NEW_ROWS
from privaudit.canaries.lm_provenance import prepare_lm_canaries
from privaudit.data.corpus import load_default_corpus
from privaudit.models.hf import HFCausalLMScorer
from privaudit.stats.one_run_combined import one_run_lower_bound


@dataclasses.dataclass(frozen=True)
class Setting:
    epsilon: float = 4.0
    delta: float = 1e-5
    confidence: float = 0.95
    canaries: int = 2000  # pilot seeds 10-12: 1000 gave 0.16 and 0.11 of ε = 4 (seeds 11, 12), 2000 gave 0.23, 0.22 and 0.13, 3000 0.20 and 0.18
    secret_length: int = 1  # new tokens scored per canary, after its own new-token prefix
    shared_prefix: bool = False  # True: every canary starts "my secret is " (the design before)
    new_rows: str = "expected"  # the new tokens' output rows start at the base model's expected row (prepare_lm_canaries' new_rows)
    corpus_chars: int = 5_000
    vocab_size: int = 384
    base_steps: int = 30
    epochs: int = 5  # full-batch steps: 5 and 10 gave the same bound (seed 0: 0.80, 0.76), 5 costs half
    batch_size: int = 0  # 0: the whole data set, sampling rate 1 (every step sees every canary)
    accountant: str = "prv"
    max_grad_norm: float = 1.0
    learning_rate: float = (
        1e-3  # Panda et al.'s (Hugging Face's AdamW default); pilot seeds 10-12 at ε = 4: 0.23, 0.33, 0.29 of ε against 0.15, 0.21, 0.26 at 1e-2
    )
    max_physical_batch_size: int = 512  # Opacus' BatchMemoryManager: the same steps in a fraction of the memory (5000 canaries in 4.9 GB)


def run_seed(setting: Setting, seed: int, *, baseline: bool = True) -> dict:
    """The DP and non-DP runs of one seed: their statistics and mechanisms."""
    seeds = child_seeds(seed, ["model", "base", "canaries", "fine-tune"])
    corpus = load_default_corpus(max_chars=setting.corpus_chars)
    tokenizer = bpe_tokenizer(corpus, vocab_size=setting.vocab_size)
    base = fine_tune(tiny_gpt2(tokenizer, seed=seeds["model"]), tokenizer, corpus, steps=setting.base_steps, seed=seeds["base"])
    provenance, base, tokenizer = prepare_lm_canaries(
        "new-tokens",
        tokenizer,
        count=setting.canaries,
        seed=seeds["canaries"],
        length=setting.secret_length,
        model=base,
        prefix="my secret is " if setting.shared_prefix else None,
        new_rows=setting.new_rows,
    )
    data = list(corpus) + provenance.included_texts()
    reference = HFCausalLMScorer(base, tokenizer, bos="none")  # the BPE tokenizer has no special tokens
    out = {"seed": seed, "texts": len(data), "num_in": int(sum(provenance.included))}
    for name, epsilon in (("dp", setting.epsilon), ("no_dp", None))[: 2 if baseline else 1]:
        started = time.perf_counter()
        tuned = fine_tune_dp(
            base,
            tokenizer,
            data,
            epsilon=epsilon,
            delta=setting.delta,
            epochs=setting.epochs,
            batch_size=setting.batch_size or len(data),
            accountant=setting.accountant,
            max_grad_norm=setting.max_grad_norm,
            learning_rate=setting.learning_rate,
            seed=seeds["fine-tune"],
            max_physical_batch_size=setting.max_physical_batch_size,
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
            **({} if epsilon is None else _family_bound(scores, provenance.included, tuned, setting)),
            "mechanism": tuned.mechanism(),
            "seconds": time.perf_counter() - started,
        }
    return out


def _family_bound(scores, included, tuned, setting: Setting) -> dict:
    """The order-statistics test of Xiang et al. against the run's own family: DP-SGD at the σ, q and steps that ran, μ-GDP in full batches.

    Valid if their transmission dominance holds for canaries that share one
    model (not proven here: ``privaudit.audits.family_test.VALIDITY``);
    compared with the claim in its family, ε(δ) of the null at the σ that
    ran, both built by :func:`~privaudit.audits.family_test.family_plan` as
    ``lm-one-run --family`` builds them.
    """
    if tuned.sample_rate == 1.0:  # full batches: T Gaussian steps compose to exactly μ-GDP, μ = √T / σ
        family = {"family": "gdp", "family_claim": float(np.sqrt(tuned.steps) / tuned.noise_multiplier), "family_sampling_rate": None, "family_steps": None}
    else:
        family = {"family": "dpsgd", "family_claim": tuned.noise_multiplier, "family_sampling_rate": tuned.sample_rate, "family_steps": tuned.steps}
    plan = family_plan(types.SimpleNamespace(delta=setting.delta, **family))
    bound = one_run_lower_bound(
        np.asarray(scores, dtype=np.float64), np.asarray(included, dtype=bool), delta=setting.delta, confidence=setting.confidence,
        null=plan.null, claim=plan.claim,
    )  # fmt: skip
    return {
        "family_bound": bound.epsilon,
        "family_refuted": bound.refuted,
        "family_ceiling": bound.ceiling,
        "family_claim_epsilon": plan.claim_epsilon,
        "family_bound_over_claim": bound.epsilon / plan.claim_epsilon,
    }


def summary_of(runs: list[dict]) -> dict:
    dp = [run["dp"]["epsilon_lower_bound"] for run in runs]
    return {
        "dp_bounds": dp,
        "no_dp_bounds": [run["no_dp"]["epsilon_lower_bound"] for run in runs if "no_dp" in run],
        "claimed_epsilons": [run["dp"]["claimed_epsilon"] for run in runs],
        "dp_aucs": [run["dp"]["auc"] for run in runs],
        "mean_bound_over_claimed": float(np.mean([run["dp"]["bound_over_claimed"] for run in runs])),
        "min_bound_over_claimed": float(np.min([run["dp"]["bound_over_claimed"] for run in runs])),
        "family_bounds_over_claim": [run["dp"].get("family_bound_over_claim") for run in runs],
        "dp_bound_below_claim_on_every_seed": all(run["dp"]["epsilon_lower_bound"] < run["dp"]["claimed_epsilon"] for run in runs),
        "dp_bound_positive_on_some_seed": any(value > 0 for value in dp),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "lm_dp.json")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--canaries", type=int, default=Setting.canaries)
    parser.add_argument("--epsilon", type=float, default=Setting.epsilon)
    parser.add_argument("--secret-length", type=int, default=Setting.secret_length)
    parser.add_argument("--shared-prefix", action="store_true", help='every canary starts "my secret is " (the design before)')
    parser.add_argument("--new-rows", choices=NEW_ROWS, default=Setting.new_rows, help="the new tokens' starting output rows")
    parser.add_argument("--epochs", type=int, default=Setting.epochs)
    parser.add_argument("--batch-size", type=int, default=Setting.batch_size, help="expected batch; 0: the whole data set (sampling rate 1)")
    parser.add_argument("--accountant", choices=("prv", "rdp"), default=Setting.accountant)
    parser.add_argument("--corpus-chars", type=int, default=Setting.corpus_chars)
    parser.add_argument("--no-baseline", action="store_true", help="skip the fine-tuning without DP")
    parser.add_argument("--append", action="store_true", help="add the runs to --output's when it holds the same config")
    parser.add_argument("--learning-rate", type=float, default=Setting.learning_rate, help="DP-Adam's learning rate")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the tiny model's matrices gain nothing from more)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    setting = Setting(
        canaries=args.canaries,
        epsilon=args.epsilon,
        secret_length=args.secret_length,
        shared_prefix=args.shared_prefix,
        new_rows=args.new_rows,
        epochs=args.epochs,
        batch_size=args.batch_size,
        accountant=args.accountant,
        corpus_chars=args.corpus_chars,
        learning_rate=args.learning_rate,
    )
    config = dataclasses.asdict(setting) | {"design": "new-tokens", "torch_threads": args.threads}
    earlier: list[dict] = []
    if args.append and args.output.exists():
        previous = json.loads(args.output.read_text())
        if {key: value for key, value in previous["config"].items() if key != "seeds"} != config:
            raise SystemExit(f"--append: {args.output} holds another config; give another --output")
        earlier = previous["runs"]
    seeds = [int(part) for part in args.seeds.split(",")]
    runs = [run for run in earlier if run["seed"] not in seeds]
    for seed in seeds:
        runs.append(run_seed(setting, seed, baseline=not args.no_baseline))
        print(json.dumps(runs[-1]), flush=True)
    runs.sort(key=lambda run: run["seed"])
    summary = summary_of(runs)
    report = {
        "benchmark": "lm_dp",
        "config": config | {"seeds": [run["seed"] for run in runs]},
        "runs": runs,
        "summary": summary,
        "versions": library_versions(),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
