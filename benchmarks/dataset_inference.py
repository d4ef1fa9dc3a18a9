"""Dataset inference (Maini et al. 2024) on a tiny GPT-2 fine-tuned here: ``PYTHONPATH=src python benchmarks/dataset_inference.py [--seeds N] [--output FILE]``.

For each seed: lines of privaudit's default corpus (CPython's documentation
topics) that fit a 64-token context are drawn at random into a general set
(3,000 lines: the tokenizer and a base model trained 300 steps on it), a
suspect set (200), a validation set (200) and never-seen lines. The target is
the base model fine-tuned on the suspect lines among 300 general ones, for
``EPOCHS`` passes over those 500 lines (batches of 32). Rows:

* ``found``: :func:`privaudit.audits.lm.dataset_inference.lm_dataset_inference`
  of the suspect set against the validation set, with and without the base
  model as reference: the permutation p-value (the decision, at 0.05) and the
  paper's Welch t-test p-value;
* ``null``: 20 disjoint pairs of 40 never-seen lines against 40 others, under
  the target fine-tuned the most, with the reference: how many reject at
  0.05 (an exact test rejects each with probability at most 0.05; 0 of 20
  happens with probability 0.36 at exactly 0.05);
* ``shift``: neither set used, the suspect lines drawn from the corpus's first
  topics and the validation lines from its last ones: the blind baseline's
  AUC and flag, beside the test's p-value, which then measures the split.

Maini et al. report p < 0.1 on every Pile subset for Pythia-12b with 1,000
suspect texts, and no false positive; their models and data are not
reachable from this machine, so the setting is ours. Writes
``benchmarks/results/dataset_inference.json`` (or ``--output``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from results_io import write_results  # benchmarks/results_io.py: the script's own folder is on sys.path

from privaudit._core.results import library_versions
from privaudit.audits.lm.dataset_inference import lm_dataset_inference
from privaudit.audits.lm.tiny import bpe_tokenizer, fine_tune, tiny_gpt2
from privaudit.data.corpus import load_default_corpus

ROOT = Path(__file__).resolve().parents[1]
EPOCHS = (0.5, 1, 2)
NULL_SPLITS, NULL_SIZE = 20, 40


def _fits(tokenizer, line: str) -> bool:
    return len(tokenizer(line, add_special_tokens=False)["input_ids"]) <= 62


def seed_rows(seed: int) -> dict:
    lines = [line for line in load_default_corpus(max_chars=400_000) if 30 <= len(line) <= 90]
    order = np.random.default_rng(seed).permutation(len(lines))
    general = [lines[i] for i in order[:3000]]
    tokenizer = bpe_tokenizer(general, vocab_size=512)
    rest = [i for i in order[3000:] if _fits(tokenizer, lines[i])]
    suspect, validation = [lines[i] for i in rest[:200]], [lines[i] for i in rest[200:400]]
    never = sorted(rest[400:])  # corpus order: topic by topic
    base = fine_tune(tiny_gpt2(tokenizer, seed=seed), tokenizer, general, steps=300, seed=seed)
    training = suspect + general[:300]
    found, target = [], base
    for epochs in EPOCHS:
        target = fine_tune(base, tokenizer, training, steps=int(epochs * len(training) / 32), seed=seed + 1)
        for reference in (None, base):
            result = lm_dataset_inference(target, tokenizer, suspect, validation, reference_model=reference, seed=seed)
            found.append(
                {
                    "epochs": epochs,
                    "reference": reference is not None,
                    "p_value": result.test.p_value,
                    "welch_p_value": result.test.welch_p_value,
                    "found": result.found,
                }
            )
    shuffled = np.random.default_rng(seed).permutation(never)
    null = []
    for split in range(NULL_SPLITS):
        rows = [lines[i] for i in shuffled[2 * split * NULL_SIZE : 2 * (split + 1) * NULL_SIZE]]
        null.append(lm_dataset_inference(target, tokenizer, rows[:NULL_SIZE], rows[NULL_SIZE:], reference_model=base, seed=split, blind=False).test.p_value)
    first, last = [lines[i] for i in never[:200]], [lines[i] for i in never[-200:]]
    shifted = lm_dataset_inference(target, tokenizer, first, last, reference_model=base, seed=seed)
    blind = shifted.blind_baseline
    return {
        "seed": seed,
        "found": found,
        "null": {"p_values": null, "rejected_at_0.05": int(sum(p <= 0.05 for p in null)), "splits": NULL_SPLITS, "size": NULL_SIZE},
        "shift": {"p_value": shifted.test.p_value, "blind_auc": blind.auc, "blind_flagged": blind.flagged, "warning": shifted.warning()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "dataset_inference.json")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = []
    for seed in range(args.seeds):
        rows.append(seed_rows(seed))
        print(json.dumps(rows[-1]), flush=True)
    out = {
        "benchmark": "dataset_inference",
        "command": "PYTHONPATH=src python benchmarks/dataset_inference.py",
        "settings": vars(args) | {"output": str(args.output)},
        "rows": rows,
        "null_rejected_at_0.05": sum(row["null"]["rejected_at_0.05"] for row in rows),
        "null_splits": NULL_SPLITS * args.seeds,
        "seconds": round(time.perf_counter() - started, 1),
        "versions": library_versions(),
    }
    write_results(out, args.output)


if __name__ == "__main__":
    main()
