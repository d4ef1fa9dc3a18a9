"""The order-statistics one-run test when canaries interfere: ``python benchmarks/one_run_interference.py [--games 200] [--fdp-games 50] [--workers 6]``.

The order-statistics test (Xiang et al. 2025, ``null=DPSGD(q, T, δ)``,
``claim=σ``) is proven for independent per-canary observations; when many
canaries share one model its validity rests on Xiang et al.'s "transmission
dominance", which privaudit does not prove (docs/one-run.md). This is the
Monte Carlo check of exactly that case, on privaudit's own trainer
(:class:`privaudit.training.dpsgd.ReferenceDPSGD`, Poisson sampling at q,
per-example clipping to C, N(0, σ²C²) noise, T steps).

One game: m canaries, each in the training set by its own fair coin; train
once; score every canary by the final model's log-probability of its label
(the black-box score of ``audit one-run``); the order-statistics test at the
*true* family, ``DPSGD(q, T, δ)`` with the σ that ran as the claim (r and the
in/out split from its design, one test). The truth is the accountant's ε for
one example at (σ, q, T) (:func:`privaudit.stats.conversions.gaussian_epsilon`).
An exceedance is a game whose 95% bound is above it; a valid test has at
most 5% of them (plus Monte Carlo slack). Beside it, on the same scores, the
generic f-DP recursion (``one_run_lower_bound`` without ``null``: Steinke and
Mahloujifar et al. against the subsampled Gaussian's own curve, Bonferroni),
which is proven for any mechanism that is f-DP for each canary.

Two runs: q = 0.5, T = 4, σ = 1 (ε = 6.68 at δ = 1e-5); and full batches,
q = 1, T = 4, σ = 2, where DP-SGD is exactly μ-GDP with μ = √T/σ = 1
(ε = 4.38; the null is ``GaussianDP``) and a canary's summed update is a
sufficient statistic, so the test is tight (about 5% rejections at the truth
for independent canaries, ``tests/test_order_statistics_validity.py``) and
any excess from interference would show. At q = 0.5 the final model sums
the steps, a coarser view than the null's, so rejections at the truth are
rarer and the check has less power there.

Canary kinds (all in one model, in every batch at rate q, so they interfere):

* ``grouped``: crafted inputs: the model is logistic (one linear layer) and
  the data live on the first ``DATA_DIMS`` coordinates; a canary is ``scale``
  times a unit vector on the other coordinates, where no example lives, with a
  wrong-for-nobody label. Canaries come in groups of ``group`` identical
  inputs (duplicates, each with its own coin): a canary's score carries its
  group mates' inclusion, the adversarial interference (the top scores are
  the groups with most members in). Its clipped gradient is large and
  orthogonal to the data, so the final model's score is, up to a monotone
  map, the white-box sum of the released updates along its direction.
* ``shared``: the same, with every canary its own random direction in a space
  of ``m / 2`` coordinates (overlapping, never orthogonal).
* ``mislabeled``: what ``audit one-run --threat-model black-box`` uses:
  inputs drawn like the data, with the wrong label (weak: the bound is about 0); q = 0.5 only.

Writes JSON to benchmarks/results/one_run_interference.json (or ``--output``),
with the configuration, seeds (game g uses seed g) and library versions.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import functools
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from privaudit import one_run_lower_bound
from privaudit._core.results import library_versions
from privaudit.stats.conversions import gaussian_epsilon
from privaudit.stats.families import GaussianDP
from privaudit.stats.one_run import guess_outcomes
from privaudit.stats.one_run_nulls import DPSGD
from privaudit.stats.order_statistics import design_num_guesses, order_statistics_bound, order_statistics_p_value
from privaudit.stats.pld import SubsampledGaussian

DELTA, CONFIDENCE, DATA_DIMS = 1e-5, 0.95, 4
KINDS = ("grouped", "shared", "mislabeled")
FRACTIONS = (0.01, 0.05, 0.1)  # small fixed r/n, where the top scores (the groups with most members in) would give a failure of dominance away
FULL_BATCH = {"sampling_rate": 1.0, "noise_multiplier": 2.0}  # μ = √4/2 = 1: ε = 4.38 at δ = 1e-5


@dataclasses.dataclass(frozen=True)
class Setting:
    """One DP-SGD run's hyper-parameters and its canaries."""

    kind: str = "grouped"
    canaries: int = 1000
    group: int = 4  # identical canaries per group ("grouped")
    data: int = 100  # training examples besides the canaries
    noise_multiplier: float = 1.0
    sampling_rate: float = 0.5
    steps: int = 4
    clip_norm: float = 1.0
    learning_rate: float = 2.0
    scale: float = 10.0  # canary input norm: its gradient is clipped, so it is C along its direction

    @property
    def null(self) -> Any:
        """DP-SGD at (q, T); at q = 1 that is exactly μ-GDP with μ = √T/σ (dp_accounting's PLD would need an unbounded grid there)."""
        return GaussianDP(DELTA) if self.sampling_rate == 1.0 else DPSGD(self.sampling_rate, self.steps, DELTA)

    @property
    def claim(self) -> float:
        """The null's parameter that ran: σ, or μ = √T/σ at q = 1."""
        return math.sqrt(self.steps) / self.noise_multiplier if self.sampling_rate == 1.0 else self.noise_multiplier

    @property
    def leak(self) -> float:
        return self.claim if self.sampling_rate == 1.0 else 1.0 / self.noise_multiplier

    @property
    def truth(self) -> float:
        """The accountant's ε for one example (one canary) of this run."""
        return float(gaussian_epsilon(self.noise_multiplier, DELTA, sampling_prob=self.sampling_rate, num_steps=self.steps))


def _canaries(setting: Setting, rng: np.random.Generator, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, labels) of the m canaries, on ``width`` input coordinates."""
    m = setting.canaries
    x = np.zeros((m, width))
    if setting.kind == "mislabeled":
        labels = rng.integers(0, 2, m)
        x[:, :DATA_DIMS] = rng.normal(size=(m, DATA_DIMS)) + (2 * labels[:, None] - 1)
        return x, 1 - labels  # drawn like class y, labelled the other class
    space = width - DATA_DIMS
    if setting.kind == "grouped":
        groups = math.ceil(m / setting.group)
        own = np.repeat(np.eye(space)[:groups], setting.group, axis=0)[:m]  # group k owns coordinate k
        labels = np.repeat(rng.integers(0, 2, groups), setting.group)[:m]
    else:
        own = rng.normal(size=(m, space))
        own /= np.linalg.norm(own, axis=1, keepdims=True)
        labels = rng.integers(0, 2, m)
    x[:, DATA_DIMS:] = setting.scale * own
    return x, labels


def play(setting: Setting, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One game: (scores, included) of m canaries after one DP-SGD run of privaudit's trainer, all from ``seed``."""
    import torch

    from privaudit.training.dpsgd import DPSGDConfig, ReferenceDPSGD

    rng = np.random.default_rng(seed)
    m = setting.canaries
    width = DATA_DIMS + (m // 2 if setting.kind == "shared" else math.ceil(m / setting.group) if setting.kind == "grouped" else 0)
    y_data = rng.integers(0, 2, setting.data)
    x_data = np.zeros((setting.data, width))
    x_data[:, :DATA_DIMS] = rng.normal(size=(setting.data, DATA_DIMS)) + (2 * y_data[:, None] - 1)
    x_canary, y_canary = _canaries(setting, rng, width)
    included = rng.random(m) < 0.5
    x = torch.from_numpy(np.concatenate([x_data, x_canary[included]]))
    y = torch.from_numpy(np.concatenate([y_data, y_canary[included]]).astype(np.int64))
    model = torch.nn.Linear(width, 2).double()
    with torch.no_grad():  # logistic regression from zero: a random start would hide the canaries' signal in its spread
        model.weight.zero_()
        model.bias.zero_()
    config = DPSGDConfig(
        noise_multiplier=setting.noise_multiplier,
        clip_norm=setting.clip_norm,
        sampling_rate=setting.sampling_rate,
        learning_rate=setting.learning_rate,
    )
    trainer = ReferenceDPSGD(model, x, y, config, seed=seed)
    # the trainer divides by q·(its data set size), which would tell how many canaries are in; fix it at the expected size
    trainer.denominator = setting.sampling_rate * (setting.data + m / 2)
    for _ in range(setting.steps):
        trainer.step(None)
    with torch.no_grad():
        log_p = torch.log_softmax(model(torch.from_numpy(x_canary)), dim=1)
    scores = log_p[torch.arange(m), torch.from_numpy(y_canary.astype(np.int64))].numpy()
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"training diverged at learning rate {setting.learning_rate:g}")
    return scores, included


@functools.lru_cache(maxsize=4096)
def _bound(null: DPSGD, n: int, r: int, correct: int) -> float:
    return float(order_statistics_bound(null, num_canaries=n, num_guesses=r, num_correct=correct, confidence=CONFIDENCE).epsilon)


def rejects_truth(setting: Setting, r: int, correct: int) -> bool:
    """Whether the 95% test rejects the true null (DP-SGD at the σ that ran): implied by a bound above the truth, so the stricter count."""
    p = order_statistics_p_value(setting.null, setting.leak, num_canaries=setting.canaries, num_guesses=r, num_correct=correct)
    return p < 1.0 - CONFIDENCE


def rejects_truth_at_fractions(setting: Setting, scores: np.ndarray, included: np.ndarray) -> list[bool]:
    """For each r/n in ``FRACTIONS`` (each its own 95% test, fixed in advance, split by the null's share): whether the true null is rejected."""
    n, out = scores.size, []
    for fraction in FRACTIONS:
        r = max(1, round(fraction * n))
        made, correct = guess_outcomes(scores, included, np.array([r]), setting.null.positive_share(setting.leak, r / n))
        out.append(bool(made[0]) and rejects_truth(setting, int(made[0]), int(correct[0])))
    return out


def order_statistics_epsilon(setting: Setting, scores: np.ndarray, included: np.ndarray) -> tuple[float, int, int]:
    """(bound, r, correct): the test ``one_run_lower_bound(null=DPSGD(q, T, δ), claim=σ)`` runs, cached by its counts.

    The same guesses as :func:`privaudit.stats.order_statistics.order_statistics_lower_bound`
    (r and the "in" share from the claim's design); the bound depends on the
    counts alone, so each distinct count is bounded once.
    """
    null, n = setting.null, scores.size
    r = design_num_guesses(null, setting.claim, n, confidence=CONFIDENCE)
    made, correct = guess_outcomes(scores, included, np.array([r]), null.positive_share(setting.leak, r / n))
    return _bound(null, n, int(made[0]), int(correct[0])), int(made[0]), int(correct[0])


def fdp_epsilon(setting: Setting, scores: np.ndarray, included: np.ndarray) -> float:
    """The generic bound on the same scores: Steinke and the f-DP recursion against the subsampled Gaussian's curve, Bonferroni."""
    family: Any = "gdp" if setting.sampling_rate == 1.0 else SubsampledGaussian(sampling_prob=setting.sampling_rate, num_steps=setting.steps)
    return float(one_run_lower_bound(scores, included, delta=DELTA, confidence=CONFIDENCE, family=family).epsilon)


def allowed_exceedances(games: int, level: float = 1.0 - CONFIDENCE, slack: float = 1e-3) -> int:
    """Most exceedances a valid test shows in ``games`` games but with probability < ``slack``: the (1 - slack) quantile of Bin(games, level).

    >>> allowed_exceedances(1_000), allowed_exceedances(200)
    (66, 21)
    """
    return int(stats.binom.ppf(1.0 - slack, games, level))


def run(setting: Setting, games: int, *, fdp_games: int = 0, first_seed: int = 0) -> dict[str, Any]:
    """Play ``games`` seeded games and summarise the order-statistics bounds against the truth (and the f-DP recursion's in the first ``fdp_games``)."""
    import torch

    torch.set_num_threads(1)
    start = time.perf_counter()
    truth = setting.truth
    bounds: list[float] = []
    fdps: list[float] = []
    counts: list[tuple[int, int]] = []
    small: list[list[bool]] = []
    for seed in range(first_seed, first_seed + games):
        scores, included = play(setting, seed)
        bound, r, correct = order_statistics_epsilon(setting, scores, included)
        if seed == first_seed:  # the cached path is the library's own call
            direct = one_run_lower_bound(scores, included, delta=DELTA, confidence=CONFIDENCE, null=setting.null, claim=setting.claim)
            if direct.epsilon != bound:
                raise AssertionError(f"one_run_lower_bound gives {direct.epsilon}, the cached counts {bound}")
        bounds.append(bound)
        counts.append((r, correct))
        small.append(rejects_truth_at_fractions(setting, scores, included))
        if seed < first_seed + fdp_games:
            fdps.append(fdp_epsilon(setting, scores, included))
    out: dict[str, Any] = {
        "setting": dataclasses.asdict(setting),
        "true_epsilon": truth,
        "games": games,
        "seeds": [first_seed, first_seed + games - 1],
        "num_guesses": sorted({r for r, _ in counts}),
        "order_statistics": _summary(bounds, truth, games),
        "order_statistics_rejects_true_sigma": sum(rejects_truth(setting, r, correct) for r, correct in counts),
        "rejects_true_sigma_at_fixed_fraction": {str(fraction): sum(row[i] for row in small) for i, fraction in enumerate(FRACTIONS)},
        "guesses_and_correct": counts,
    }
    if fdps:
        out["fdp_recursion"] = _summary(fdps, truth, len(fdps))
    out["seconds"] = time.perf_counter() - start
    return out


def _summary(bounds: list[float], truth: float, games: int) -> dict[str, Any]:
    above = sum(bound > truth for bound in bounds)
    return {
        "exceedances": above,
        "exceedance_rate": above / games,
        "allowed": allowed_exceedances(games),
        "positive_games": sum(bound > 0.0 for bound in bounds),
        "mean_bound_over_epsilon": statistics.fmean(bounds) / truth,
        "median_bound_over_epsilon": statistics.median(bounds) / truth,
        "max_bound_over_epsilon": max(bounds) / truth,
        "bounds": bounds,
    }


def settings(kinds: list[str]) -> list[Setting]:
    """Each kind at q = 0.5 (σ = 1, T = 4); the crafted kinds also in full batches (q = 1, σ = 2), where the test is tight, beside a control without interference."""
    found = [Setting(kind=kind) for kind in kinds]
    found += [Setting(kind=kind, **FULL_BATCH) for kind in kinds if kind != "mislabeled"]  # type: ignore[arg-type]
    if "grouped" in kinds:  # the control: one canary per coordinate, no interference but the shared bias
        found.append(Setting(kind="grouped", group=1, **FULL_BATCH))  # type: ignore[arg-type]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated among {', '.join(KINDS)}")
    parser.add_argument("--fdp-games", type=int, default=50, help="games that also get the f-DP recursion (about 1 s each)")
    parser.add_argument("--workers", type=int, default=1, help="processes, one setting each")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "one_run_interference.json")
    args = parser.parse_args(argv)
    kinds = [kind for kind in args.kinds.split(",") if kind]
    if args.games < 1 or args.fdp_games < 0 or args.workers < 1 or not kinds or any(kind not in KINDS for kind in kinds):
        print(
            f"error: `--games` and `--workers` must be >= 1, `--fdp-games` >= 0 and `--kinds` among {', '.join(KINDS)}, "
            f"got {args.games}, {args.workers}, {args.fdp_games} and {args.kinds!r}",
            file=sys.stderr,
        )
        return 2
    import torch

    out: dict[str, Any] = {
        "delta": DELTA,
        "confidence": CONFIDENCE,
        "games": args.games,
        "fdp_games": min(args.fdp_games, args.games),
        "versions": {**library_versions(), "torch": torch.__version__},
    }
    fdp_games = out["fdp_games"]
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.workers) as pool:
        out["runs"] = list(pool.map(functools.partial(run, games=args.games, fdp_games=fdp_games), settings(kinds)))
    for found in out["runs"]:
        kind = f"{found['setting']['kind']} (group {found['setting']['group']}), q = {found['setting']['sampling_rate']:g}"
        brief = {k: found[k] for k in ("true_epsilon", "num_guesses", "order_statistics_rejects_true_sigma", "rejects_true_sigma_at_fixed_fraction", "seconds")}
        tests = {name: {k: v for k, v in found[name].items() if k != "bounds"} for name in ("order_statistics", "fdp_recursion") if name in found}
        print(json.dumps({"kind": kind, **brief, **tests}), file=sys.stderr)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
