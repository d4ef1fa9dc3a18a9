"""HF scoring throughput: ``python benchmarks/hf_scoring.py [--output FILE] [--digits N]``.

Candidates of a format scored per second by :class:`privaudit.models.hf.HFCausalLMScorer`
on the CPU, under a tiny GPT-2 built from a config (random weights, nothing
downloaded) and a byte-level BPE tokenizer trained here, whose merges cross
the prefix/secret boundary. Three ways: every full text from scratch
(``none``), the prefix's KV cache (``prefix``), and the token-trie walk
(``tree``). All three give the same scores; the largest difference is reported.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import transformers

from privaudit._core.results import library_versions
from privaudit.audits.lm.tiny import bpe_tokenizer as trained_bpe_tokenizer
from privaudit.canaries import CanaryFormat
from privaudit.models.hf import HFCausalLMScorer


def bpe_tokenizer(seed: int):
    rng = np.random.default_rng(seed)
    lines = [f"my pin is {rng.integers(0, 10**6):06d}" for _ in range(2000)] + ["the cat sat on the mat", "my pin is safe"] * 50
    return trained_bpe_tokenizer(lines, vocab_size=400)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "hf_scoring.json")
    parser.add_argument("--digits", type=int, default=4, help="the format is 'my pin is {digits:N}': 10^N candidates")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.digits < 1 or args.batch_size < 1 or args.repeats < 1:
        parser.error("`--digits`, `--batch-size` and `--repeats` must be >= 1")
    tokenizer = bpe_tokenizer(0)
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=128, n_layer=4, n_head=4)
    model = transformers.GPT2LMHeadModel(config).eval()
    fmt = CanaryFormat(f"my pin is {{digits:{args.digits}}}")
    results, scores = {}, {}
    for reuse in ("none", "prefix", "tree"):
        times = []
        for _ in range(args.repeats):
            scorer = HFCausalLMScorer(model, tokenizer, device="cpu", batch_size=args.batch_size)
            start = time.perf_counter()
            scores[reuse] = scorer.format_log_perplexities(fmt, reuse=reuse)
            times.append(time.perf_counter() - start)
        median = float(np.median(times))
        results[reuse] = {"seconds_median": median, "candidates_per_second": fmt.space_size / median, "model_rows": scorer.queries}
        print(reuse, json.dumps(results[reuse]), flush=True)
    report = {
        "benchmark": "hf_scoring",
        "format": fmt.template,
        "candidates": fmt.space_size,
        "model": {"n_embd": 128, "n_layer": 4, "n_head": 4, "vocab_size": len(tokenizer)},
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(),
        "results": results,
        "speedup_prefix_vs_none": results["none"]["seconds_median"] / results["prefix"]["seconds_median"],
        "speedup_tree_vs_none": results["none"]["seconds_median"] / results["tree"]["seconds_median"],
        "max_abs_difference_bits": float(max(np.max(np.abs(scores[r] - scores["none"])) for r in ("prefix", "tree"))),
        "versions": {**library_versions(), "torch": torch.__version__, "transformers": transformers.__version__},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
