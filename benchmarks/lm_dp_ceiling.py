"""The ceiling of ``benchmarks/lm_dp.py``'s black box, set by the training itself: ``python benchmarks/lm_dp_ceiling.py [--output FILE]``.

Three measurements, each against the row's own settings (``lm_dp.Setting``):

* **the canaries' signal per step**: at the base model of ``--seed`` (a
  pilot seed), each of ``--gradient-canaries`` included canaries' per-text
  gradient norm (against the clip) and the share of its squared norm on
  the embedding rows of its own tokens (GPT-2 ties input and output rows).
  A norm above the clip with nearly all of it on rows of its own means that
  every step carries a whole clipped gradient to where only that canary
  writes: the noisy sums then hold the Gaussian signal √steps ÷ σ;
* **what DP-Adam keeps of it**: ``torch.optim.Adam`` (as shipped) run for
  the row's steps on coordinates whose gradients are a canary's share plus
  Opacus' noise (σ from Opacus' PRV accountant at the row's ε, full
  batches), with and without the share, on the same noise. Adam's updates
  do not depend on the gradients' scale, and its learning rate scales them
  all alike, so the result holds at any learning rate: what the rate
  changes (docs/tightness.md) is how far the steps move the model, which
  this linear view does not see. Its updates' matched filter keeps ``efficiency`` of the
  amplitude of the noisy sums' (0.77; a single sign keeps √(2/π)), so
  the signal a final model can carry is μ = efficiency × √steps ÷ σ;
* **what Steinke et al.'s test gives on such scores**: Gaussian scores of
  shift μ for the row's 2,000 canaries, half included by fair coins, the
  audit's test (δ = 1e-5, 95%), over ``--draws`` draws (their mean and its
  standard error), for the full signal and for DP-Adam's; ``lm_dp.py``'s
  bound is 0.27 of ε = 4 over seeds 0-2, its scores' AUC 0.69 to 0.70.

A bound near the DP-Adam row says that the canaries leave nothing to gain:
what stays below ε is the optimiser's post-processing and the test's gap.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import torch
from lm_dp import Setting  # benchmarks/: the script's own folder is on sys.path
from results_io import write_results
from scipy import stats

from privaudit._core.results import library_versions
from privaudit._core.seeding import child_seeds
from privaudit.audits.lm.tiny import _per_text_mean_loss, _token_rows, bpe_tokenizer, fine_tune, tiny_gpt2
from privaudit.canaries.lm_provenance import prepare_lm_canaries
from privaudit.data.corpus import load_default_corpus
from privaudit.models.device import pad_rows
from privaudit.stats.one_run_combined import one_run_lower_bound


def canary_gradients(setting: Setting, seed: int, count: int) -> dict:
    """Per-text gradient norms of ``count`` included canaries at the base model of ``seed``, and the share of each on its own token rows."""
    seeds = child_seeds(seed, ["model", "base", "canaries", "fine-tune"])  # lm_dp.run_seed's, so the base model and canaries are the row's
    corpus = load_default_corpus(max_chars=setting.corpus_chars)
    tokenizer = bpe_tokenizer(corpus, vocab_size=setting.vocab_size)
    base = fine_tune(tiny_gpt2(tokenizer, seed=seeds["model"]), tokenizer, corpus, steps=setting.base_steps, seed=seeds["base"])
    provenance, base, tokenizer = prepare_lm_canaries(
        "new-tokens", tokenizer, count=setting.canaries, seed=seeds["canaries"], length=setting.secret_length, model=base, new_rows=setting.new_rows
    )
    embedding = base.get_input_embeddings().weight
    if base.get_output_embeddings().weight is not embedding:
        raise SystemExit("the base model does not tie its input and output rows; the own-row share below assumes it")
    norms, shares = [], []
    base.train()  # as fine_tune_dp trains it (the tiny GPT-2 has no dropout draw at p = 0)
    for text in provenance.included_texts()[:count]:
        rows = _token_rows(base, tokenizer, [text])
        tokens, mask = pad_rows(rows, torch.device("cpu"))
        base.zero_grad()
        _per_text_mean_loss(base, tokens, mask.long()).backward()
        total = sum(float((parameter.grad**2).sum()) for parameter in base.parameters() if parameter.grad is not None)
        own = float((embedding.grad[sorted(set(rows[0]))] ** 2).sum())
        norms.append(math.sqrt(total))
        shares.append(own / total)
    return {
        "seed": seed,
        "canaries": len(norms),
        "clip": setting.max_grad_norm,
        "norm_min": min(norms),
        "norm_median": float(np.median(norms)),
        "own_row_share_min": min(shares),
        "own_row_share_median": float(np.median(shares)),
    }


def adam_efficiency(setting: Setting, sigma: float, *, coordinates: int, share: float, seed: int) -> float:
    """The amplitude DP-Adam's updates keep of the noisy sums' signal: the matched filter's SNR over √steps × share ÷ σ (1 for plain sums)."""
    generator = torch.Generator().manual_seed(seed)
    noise = torch.randn(setting.epochs, coordinates, generator=generator, dtype=torch.float64) * sigma
    updates = {}
    for name, signal in (("in", share), ("out", 0.0)):
        weights = torch.zeros(coordinates, dtype=torch.float64, requires_grad=True)
        optimizer = torch.optim.Adam([weights], lr=setting.learning_rate)
        for step in range(setting.epochs):
            weights.grad = signal + noise[step]  # the same noise with and without the canary: the difference is the canary's alone
            optimizer.step()
        updates[name] = weights.detach().clone()
    shift = float((updates["out"] - updates["in"]).mean())  # Adam steps against the gradient
    return shift / float(updates["out"].std()) / (math.sqrt(setting.epochs) * share / sigma)


def gaussian_bounds(mu: float, canaries: int, draws: int, epsilon: float, delta: float, confidence: float) -> dict:
    """Steinke et al.'s test (the audit's) on Gaussian scores of shift ``mu``, ``canaries`` fair coins, over ``draws`` draws: bound ÷ ``epsilon``."""
    ratios = []
    for draw in range(draws):
        rng = np.random.default_rng(draw)
        included = rng.random(canaries) < 0.5
        scores = rng.standard_normal(canaries) + mu * included
        bound = one_run_lower_bound(scores, included, delta=delta, confidence=confidence, methods=("steinke",))
        ratios.append(bound.epsilon / epsilon)
    return {
        "mu": mu,
        "auc": float(stats.norm.cdf(mu / math.sqrt(2))),
        "bound_over_epsilon": ratios,
        "mean": float(np.mean(ratios)),
        "standard_error": float(np.std(ratios, ddof=1) / math.sqrt(len(ratios))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "lm_dp_ceiling.json")
    parser.add_argument("--seed", type=int, default=10, help="the pilot seed whose base model and canaries give the gradients")
    parser.add_argument("--gradient-canaries", type=int, default=50)
    parser.add_argument("--coordinates", type=int, default=2_000_000, help="simulated coordinates for DP-Adam's efficiency")
    parser.add_argument("--draws", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from opacus.accountants.utils import get_noise_multiplier

    setting = Setting()
    started = time.perf_counter()
    sigma = float(
        get_noise_multiplier(target_epsilon=setting.epsilon, target_delta=setting.delta, sample_rate=1.0, steps=setting.epochs, accountant=setting.accountant)
    )
    gradients = canary_gradients(setting, args.seed, args.gradient_canaries)
    # share ÷ σ = 0.03: a unit clipped gradient over a canary's 128 own coordinates gives 0.09 per coordinate, ÷ σ = 2.43 about 0.04;
    # the efficiency is flat in this small-signal regime (tests/test_lm_dp_ceiling.py checks one step against its closed form there)
    share = 0.03 * sigma
    efficiency = adam_efficiency(setting, sigma, coordinates=args.coordinates, share=share, seed=args.seed)
    full = math.sqrt(setting.epochs) / sigma
    bounds = {
        name: gaussian_bounds(mu, setting.canaries, args.draws, setting.epsilon, setting.delta, setting.confidence)
        for name, mu in (("full_signal", full), ("dp_adam", efficiency * full))
    }
    out = {
        "benchmark": "lm_dp_ceiling",
        "config": dataclasses.asdict(setting)
        | {"seed": args.seed, "gradient_canaries": args.gradient_canaries, "coordinates": args.coordinates, "draws": args.draws},
        "noise_multiplier": sigma,
        "canary_gradients": gradients,
        "dp_adam_efficiency": efficiency,
        "mu_full_signal": full,
        "mu_dp_adam": efficiency * full,
        "gaussian_scores": bounds,
        "seconds": time.perf_counter() - started,
        "versions": library_versions(),
    }
    write_results(out, args.output)


if __name__ == "__main__":
    main()
