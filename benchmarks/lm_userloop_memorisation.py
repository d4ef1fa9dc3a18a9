"""Is a canary's memorisation by the user's loop a property of the canary? ``python benchmarks/lm_userloop_memorisation.py [--seed 10] [--epsilon 4] [--output FILE]``.

Selecting canaries for a loop (``opacus_verdict_lm.py --black-box --pool``)
can only help if the loop memorises some canaries more than others whatever
the run. This draws ``--pool`` random-token canaries as the black box draws
them, estimates each one's memorisation twice with independent shadow runs of
the user's loop (:func:`opacus_verdict_lm.memorisation`: its log-likelihood
under a run that trained on it, ``--copies`` copies, less under one that did
not), and reports the correlation of the two estimates across canaries
(``replicate_correlation``; near 0: nothing stable to select) and the mean
shift of an included canary's score ÷ the spread of one run's scores
(``signal_over_spread``, a Gaussian shift: AUC = Φ(shift/√2)).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from opacus_verdict import write_json  # the sibling benchmark's writer (benchmarks/ is on the path when run as a script)
from opacus_verdict_lm import TEXTS, memorisation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=10, help="the base model's and the canaries' seed")
    parser.add_argument("--epsilon", type=float, default=4.0, help="the shadow runs' target ε")
    parser.add_argument("--pool", type=int, default=300, help="canaries (each run trains on about half)")
    parser.add_argument("--length", type=int, default=8, help="tokens per canary")
    parser.add_argument("--copies", type=int, default=12, help="copies of each trained canary")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    from privaudit._core.results import library_versions
    from privaudit._core.seeding import child_seeds
    from privaudit.audits.lm.tiny import bpe_tokenizer, tiny_gpt2
    from privaudit.canaries.lm_provenance import prepare_lm_canaries
    from privaudit.data.corpus import load_default_corpus

    warnings.simplefilter("ignore")  # peft's and Opacus' notes, once per shadow run
    started = time.perf_counter()
    texts = [line for line in load_default_corpus() if line.strip()][:TEXTS]
    tokenizer = bpe_tokenizer(texts, vocab_size=384)
    base = tiny_gpt2(tokenizer, seed=args.seed)
    seeds = child_seeds(args.seed, ["canaries", "first", "second"])
    pool, _, _ = prepare_lm_canaries("random-tokens", tokenizer, count=args.pool, seed=seeds["canaries"], length=args.length, prefix="", span="text")
    estimates = [memorisation(pool, base, tokenizer, texts, copies=args.copies, epsilon=args.epsilon, shadow_seed=seeds[name]) for name in ("first", "second")]
    out = {
        "benchmark": "lm_userloop_memorisation",
        "config": vars(args) | {"output": None},
        "replicate_correlation": float(np.corrcoef(*estimates)[0, 1]),
        # an included canary's expected score shift ÷ the spread of one run's scores: memorisation is the difference of two runs' scores, whose spread is √2 times one's
        "signal_over_spread": [float(estimate.mean() / estimate.std() * np.sqrt(2)) for estimate in estimates],
        "seconds": time.perf_counter() - started,
        "versions": library_versions(),
    }
    print(json.dumps({key: out[key] for key in ("replicate_correlation", "signal_over_spread", "seconds")}), flush=True)
    write_json(out, args.output)


if __name__ == "__main__":
    main()
