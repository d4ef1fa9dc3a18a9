"""Secret Sharer benchmarks: ``python benchmarks/secret_sharer.py [--output FILE]``.

* candidates scored per second by the character LSTM (hidden 256), with and
  without prefix-state reuse;
* extraction of a memorised 6-digit canary: shortest-path search vs. brute
  force, in model queries and wall time.

Runs on the GPU when one is present (``--device`` to force one).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from privaudit._core.results import library_versions
from privaudit.canaries import CanaryFormat, insert_canaries
from privaudit.data import load_default_corpus
from privaudit.extraction import brute_force_search, shortest_path_search
from privaudit.models.char_lstm import CharVocabulary, TrainingConfig, build_char_lstm, train_char_lstm
from privaudit.models.lm_scoring import CharLSTMScorer


def _timed(call):
    start = time.perf_counter()
    value = call()
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "secret_sharer.json")
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    device = torch.device(args.device) if args.device else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    fmt = CanaryFormat("my pin is {digits:6}")
    model = build_char_lstm(CharVocabulary().size, hidden=256).eval()

    reuse = CharLSTMScorer(model, device=device)
    _, reuse_seconds = _timed(lambda: reuse.format_log_perplexities(fmt))  # all 10⁶ candidates
    scratch = CharLSTMScorer(model, device=device)
    sample = [fmt.fill(secret) for secret in np.random.default_rng(0).integers(0, 10, size=(50_000, 6))]
    _, scratch_seconds = _timed(lambda: scratch.log_perplexity(sample))
    scoring = {
        "candidates_per_second_with_reuse": fmt.space_size / reuse_seconds,
        "candidates_per_second_without_reuse": len(sample) / scratch_seconds,
        "speedup": (fmt.space_size / reuse_seconds) / (len(sample) / scratch_seconds),
        "lstm_steps_per_candidate_with_reuse": reuse.steps / fmt.space_size,
        "lstm_steps_per_candidate_without_reuse": scratch.steps / len(sample),
    }
    print(json.dumps(scoring, indent=2), flush=True)

    corpus = insert_canaries(load_default_corpus(max_chars=100_000), fmt, schedule=(64,), seed=3)
    trained, report = train_char_lstm(corpus.lines, TrainingConfig(epochs=15, hidden=256, patience=15), device=device)
    secret = tuple(corpus.provenance.canaries[0]["secret"])
    scorer = CharLSTMScorer(trained, device=device)
    sizes = [10] * 6
    found, search_seconds = _timed(lambda: shortest_path_search(scorer.extraction_scorer(fmt), sizes, batch_size=256))
    brute, brute_seconds = _timed(lambda: brute_force_search(scorer.extraction_scorer(fmt), sizes))
    extraction = {
        "canary_insertions": 64,
        "shortest_path": {"found_canary": found.secret == secret, "queries": found.queries, "calls": found.calls, "seconds": search_seconds},
        "brute_force": {"found_canary": brute.secret == secret, "queries": brute.queries, "seconds": brute_seconds},
        "query_ratio": brute.queries / found.queries,
        "training_epochs": len(report.train_losses),
    }
    print(json.dumps(extraction, indent=2), flush=True)
    result = {
        "machine": {
            "device": str(device),
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "gpu": torch.cuda.get_device_name(0) if device.type == "cuda" else None,
        },
        "versions": {**library_versions(), "torch": torch.__version__},
        "scoring": scoring,
        "extraction": extraction,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
