"""The order-statistics one-run test when the canaries interfere: real DP-SGD runs of privaudit's own trainer.

``tests/test_order_statistics_validity.py`` checks the test where it is
proven (independent canaries). Here many canaries share one model, in every
batch at rate q, the case whose validity rests on Xiang et al.'s
"transmission dominance" (docs/one-run.md). The games are those of
``benchmarks/one_run_interference.py`` (which plays more of them): 500
canaries, each in by a fair coin, one run of :class:`~privaudit.training.dpsgd.ReferenceDPSGD`
(q = 0.5, T = 4, σ = 1, and full batches), every canary scored by the final model's
log-probability of its label, and the order-statistics test against
``DPSGD(q, T, δ)`` at the σ that ran, with the r and in/out split of its
design, as ``one_run_lower_bound(null=..., claim=σ)`` runs it. The canaries
are crafted inputs in groups of 4 identical ones (each with its own coin),
so a canary's score carries its group mates' inclusion. In full batches
(q = 1, σ = 2) DP-SGD is exactly 1-GDP and the summed update sufficient:
there the test is tight for independent canaries, and excess rejections
from interference would show.

Valid at 95% means the true null (σ that ran) is rejected in at most 5% of
games. A bound above the accountant's ε implies that rejection, so counting
rejections is the stricter check. 200 games: P[Bin(200, 0.05) > 21] < 0.001,
the slack of the validity tests. The bound is a function of the counts alone
(guesses, right guesses): integers, so training's floats enter only through
which canaries rank highest, and the check compares counts.

And the check can fail: the median game's bound is positive (the test
rejects nulls near the truth in typical games, so excess rejections at the
truth would show).
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

GAMES = 200


def _benchmark():
    spec = importlib.util.spec_from_file_location("one_run_interference", Path(__file__).parents[1] / "benchmarks" / "one_run_interference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up while it is built
    spec.loader.exec_module(module)
    return module


BENCH = _benchmark()


@pytest.mark.parametrize("batches", ["subsampled", "full"])
def test_interfering_canaries_reject_the_true_dpsgd_in_at_most_five_percent_of_games(batches: str) -> None:
    setting = BENCH.Setting(kind="grouped", canaries=500, **(BENCH.FULL_BATCH if batches == "full" else {}))
    counts = []
    for seed in range(GAMES):
        scores, included = BENCH.play(setting, seed)
        _, r, correct = BENCH.order_statistics_epsilon(setting, scores, included)
        counts.append((r, correct))
    rejected = sum(BENCH.rejects_truth(setting, r, correct) for r, correct in counts)
    assert BENCH.allowed_exceedances(GAMES) == 21
    assert rejected <= 21
    # power: the typical game refutes a DP-SGD not far from the truth
    r, correct = sorted(counts, key=lambda pair: pair[1])[GAMES // 2]
    median_bound = BENCH._bound(setting.null, setting.canaries, r, correct)
    assert 0.0 < median_bound < setting.truth
    assert statistics.median(correct / r for r, correct in counts) > 0.5
