"""ε lower bounds from membership-inference observations (Tight Auditing §4).

Score convention: a higher score means "more likely in". At threshold t the
attack predicts "in" when score >= t, so a false positive is an out-score >= t
and a false negative an in-score < t.

Frequentist bounds (``"clopper-pearson"``, ``"jeffreys"``) bound the FPR and
the FNR from above, each at one-sided level 1 - (1 - c)/2, so both hold
together with probability >= c by the union bound (no independence assumed),
and feed the two upper bounds (ᾱ, β̄) to the family:

* ``"gdp"``: μ >= Φ⁻¹(1 - ᾱ) - Φ⁻¹(β̄) (Eq. 12), then ε(δ) by Eq. 6;
* ``"eps-delta"``: ε >= max(log((1 - δ - ᾱ)/β̄), log((1 - δ - β̄)/ᾱ)) (Eq. 9);
* ``"pure"``: the same with δ = 0; its ``"katz-log"`` interval bounds the
  ratios TPR/FPR and TNR/FNR with Katz's asymptotic log interval instead;
* a :class:`~privaudit.stats.pld.SubsampledGaussian`: the PLD trade-off
  curve of a subsampled, composed Gaussian mechanism (Appendix A).

``interval="bayes"`` instead reports the posterior quantile 1 - c of the
family's parameter (Eq. 13), with the two-sided credible interval and the
posterior median; it is a credible bound (``kind="credible bound"``).

Clopper–Pearson bounds hold at the stated confidence for every sample size.
Jeffreys and Katz-log are approximate (``kind="approximate lower bound"``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._core.results import Result
from .._core.seeding import check_seed
from .._core.validation import as_scores, check_choice, check_probability
from .bayes import posterior_quantiles
from .families import EpsilonDelta, GaussianDP
from .intervals import _upper
from .thresholds import Best, Bonferroni, MultiSplit, Split, candidate_thresholds, error_counts, held_out_split, rank_grid, resolve_threshold, top_thresholds

__all__ = ["EpsilonLowerBound", "epsilon_lower_bound"]

METHODS = ("gdp", "eps-delta", "pure")
INTERVALS = ("clopper-pearson", "jeffreys", "bayes", "katz-log")


@dataclasses.dataclass(frozen=True)
class EpsilonLowerBound(Result):
    """An ε lower bound from membership-inference observations, with what produced it.

    ``parameter`` is the bound on the family's own parameter (μ for GDP, ε for
    (ε, δ) and pure DP, the noise multiplier's upper bound for PLD families).
    ``fpr_upper``/``fnr_upper`` are the error-rate bounds the frequentist
    intervals used (None for Bayes). ``num_in``/``num_out`` count the
    observations the bound was computed on; ``num_selection`` those spent on
    choosing the threshold. ``seed`` is the integer seed the randomised
    steps (held-out split, tie-breaking coin) used; None only when the caller
    passed a ``numpy.random.Generator``, whose state the result cannot record.
    """

    epsilon: float
    delta: float
    confidence: float
    method: str
    interval: str
    kind: str
    valid: bool
    threshold: float
    threshold_strategy: str
    num_tests: int
    parameter_name: str
    parameter: float
    false_positives: int
    false_negatives: int
    num_in: int
    num_out: int
    num_selection: int
    fpr_upper: float | None = None
    fnr_upper: float | None = None
    epsilon_credible_interval: tuple[float, float] | None = None
    epsilon_median: float | None = None
    seed: int | None = None


def _resolve_family(method: Any, delta: float) -> Any:
    if hasattr(method, "family_for"):
        return method.family_for(delta)
    method = check_choice(method, "method", METHODS)
    if method == "gdp":
        return GaussianDP(delta)
    return EpsilonDelta(delta if method == "eps-delta" else 0.0)


def _check_interval(interval: Any, family: Any) -> str:
    interval = check_choice(interval, "interval", INTERVALS)
    if interval == "katz-log" and family.name != "pure":
        raise ValueError(f"`interval` 'katz-log' needs method 'pure', got method {family.name!r}")
    if interval == "bayes" and not hasattr(family, "region"):
        raise ValueError(f"`interval` 'bayes' is not available for method {family.name!r}; use 'clopper-pearson'")
    return str(interval)


def _error_bounds(fp: Any, n_out: Any, fn: Any, n_in: Any, confidence: float, method: str) -> Any:
    level = 1.0 - (1.0 - confidence) / 2.0
    return _upper(fp, n_out, level, method), _upper(fn, n_in, level, method)


def _katz_log_epsilon(fp: Any, n_out: Any, fn: Any, n_in: Any, confidence: float) -> float:
    """Lower bound on max(log TPR/FPR, log TNR/FNR), Katz et al.'s log interval."""
    from scipy import stats  # imported where used: scipy.stats alone takes a third of a second

    z = stats.norm.isf((1.0 - confidence) / 2.0)
    best = 0.0
    # each ratio: numerator count x1 of n1 over denominator count x2 of n2
    for x1, n1, x2, n2 in ((n_in - fn, n_in, fp, n_out), (n_out - fp, n_out, fn, n_in)):
        x1, x2 = max(x1, 0.5), max(x2, 0.5)  # zero counts get the usual 0.5 correction
        log_ratio = np.log(x1 / n1) - np.log(x2 / n2)
        se = np.sqrt(max(1.0 / x1 - 1.0 / n1 + 1.0 / x2 - 1.0 / n2, 0.0))
        best = max(best, float(log_ratio - z * se))
    return best


def _evaluate(family: Any, interval: str, fp: Any, n_out: Any, fn: Any, n_in: Any, confidence: float) -> Any:
    """Bound at one threshold: (epsilon, parameter, extras) at confidence ``confidence``."""
    if interval == "bayes":
        low, lower_two, median, upper_two = posterior_quantiles(
            family, fp, n_out, fn, n_in, [1.0 - confidence, (1.0 - confidence) / 2.0, 0.5, (1.0 + confidence) / 2.0]
        )
        extras = {
            "epsilon_credible_interval": (family.epsilon(lower_two), family.epsilon(upper_two)),
            "epsilon_median": family.epsilon(median),
        }
        return family.epsilon(low), float(low), extras
    if interval == "katz-log":
        epsilon = _katz_log_epsilon(fp, n_out, fn, n_in, confidence)
        return epsilon, epsilon, {}
    fpr_upper, fnr_upper = _error_bounds(fp, n_out, fn, n_in, confidence, interval)
    parameter = float(family.parameter_from_errors(fpr_upper, fnr_upper))
    return family.epsilon(parameter), parameter, {"fpr_upper": float(fpr_upper), "fnr_upper": float(fnr_upper)}


def _rank_thresholds(proxy: Any, in_sorted: Any, out_sorted: Any, confidence: float, count: int, eval_sizes: Any = None) -> Any:
    """The ``count`` most promising candidate thresholds, the most promising first.

    Each threshold is scored by the Clopper–Pearson bound that an evaluation
    on ``eval_sizes`` = (n_in, n_out) observations would give if the error
    rates were the upper bounds seen here. Using upper bounds rather than
    point estimates keeps the noisy extreme thresholds, which win a plain
    maximum by chance, from being chosen. The score falls as either error
    count rises, which lets :func:`~privaudit.stats.thresholds.top_thresholds`
    skip most of the (costly) beta quantiles and still return the same ranking.
    """
    candidates = candidate_thresholds(in_sorted, out_sorted)
    fp, fn = error_counts(in_sorted, out_sorted, candidates)

    def bounds_of(false_positives: Any, false_negatives: Any) -> Any:
        fpr_upper, fnr_upper = _error_bounds(false_positives, out_sorted.size, false_negatives, in_sorted.size, confidence, "clopper-pearson")
        if eval_sizes is not None:
            n_in, n_out = eval_sizes
            fpr_upper, fnr_upper = _error_bounds(fpr_upper * n_out, n_out, fnr_upper * n_in, n_in, confidence, "clopper-pearson")
        return fpr_upper, fnr_upper

    return candidates[top_thresholds(bounds_of, proxy.parameter_from_errors, fp, fn, count)]


def _plan(strategy: Any, in_scores: Any, out_scores: Any, proxy: Any, confidence: float, rng: Any) -> Any:
    """Return (thresholds to test, in/out for the bound, number of selection observations, valid)."""
    if isinstance(strategy, float):
        return [strategy], in_scores, out_scores, 0, True
    if isinstance(strategy, Bonferroni) and strategy.thresholds is not None:
        return list(strategy.thresholds), in_scores, out_scores, 0, True
    if isinstance(strategy, Best):
        ranked = _rank_thresholds(proxy, np.sort(in_scores), np.sort(out_scores), confidence, 1)
        return [ranked[0]], in_scores, out_scores, in_scores.size + out_scores.size, False
    select_in, eval_in = held_out_split(in_scores, strategy.fraction, rng, "in_scores")
    select_out, eval_out = held_out_split(out_scores, strategy.fraction, rng, "out_scores")
    count = 1 if isinstance(strategy, Split) else strategy.num_thresholds
    per_test_confidence = 1.0 - (1.0 - confidence) / count
    ranked = _rank_thresholds(proxy, np.sort(select_in), np.sort(select_out), per_test_confidence, count, (eval_in.size, eval_out.size))
    return list(ranked[:count]), eval_in, eval_out, select_in.size + select_out.size, True


def _rank_tests(strategy: Bonferroni, in_scores: Any, out_scores: Any, rng: Any) -> tuple[Any, Any, Any, int]:
    """Thresholds at ranks fixed in advance: (threshold values, false positives, false negatives, number of tests).

    A threshold just above the j-th highest out-score makes j - 1 false
    positives, and its false-positive rate is Beta(j, n - j + 1): the
    Clopper–Pearson bound at j - 1 covers it exactly; in the same way a
    threshold at the j-th lowest in-score makes j - 1 false negatives. The
    number of tests is that of the grid, fixed by the sample sizes alone.
    Tied scores are ordered by a seeded coin, so that every threshold is a
    position in one strict order of the pooled observations.
    """
    if strategy.over == "all":
        out_ranks, in_ranks = np.arange(1, out_scores.size + 1), np.arange(1, in_scores.size + 1)
    else:
        half = strategy.num_thresholds // 2
        out_ranks, in_ranks = rank_grid(out_scores.size, strategy.num_thresholds - half), rank_grid(in_scores.size, half)
    num_tests = out_ranks.size + in_ranks.size
    out_sorted, in_sorted = np.sort(out_scores), np.sort(in_scores)
    shared = np.searchsorted(in_sorted, out_sorted).clip(max=in_sorted.size - 1)
    ties = np.any(out_sorted[1:] == out_sorted[:-1]) or np.any(in_sorted[1:] == in_sorted[:-1]) or np.any(in_sorted[shared] == out_sorted)
    if not ties:  # distinct scores: the order is the scores' own, no coin needed
        above_out = out_sorted[::-1][out_ranks - 1]
        at_in = in_sorted[in_ranks - 1]
        values = np.concatenate([np.nextafter(above_out, np.inf), at_in])
        false_positives = np.concatenate([out_ranks - 1, out_scores.size - np.searchsorted(out_sorted, at_in, side="left")])
        false_negatives = np.concatenate([np.searchsorted(in_sorted, above_out, side="right"), in_ranks - 1])
        return values, false_positives, false_negatives, num_tests
    pooled = np.concatenate([out_scores, in_scores])
    order = np.lexsort((rng.random(pooled.size), pooled))
    position = np.empty(pooled.size, dtype=np.int64)
    position[order] = np.arange(pooled.size)
    out_positions = np.sort(position[: out_scores.size])
    in_positions = np.sort(position[out_scores.size :])
    cuts = np.concatenate([out_positions[::-1][out_ranks - 1] + 1, in_positions[in_ranks - 1]])  # "in" at positions >= cut
    false_positives = out_scores.size - np.searchsorted(out_positions, cuts)
    false_negatives = np.searchsorted(in_positions, cuts)
    sorted_pooled = pooled[order]
    values = np.where(cuts < pooled.size, sorted_pooled[np.minimum(cuts, pooled.size - 1)], np.inf)
    return values, false_positives, false_negatives, num_tests


def _check_seed_or_generator(seed: Any) -> int:
    """An integer seed; None, which once meant fresh randomness, is refused rather than read as the default."""
    if seed is None:
        raise ValueError("`seed` must be an integer in [0, 2**63 - 1] or a numpy.random.Generator, got None (fresh randomness: numpy.random.default_rng())")
    return check_seed(seed)


def _describe(strategy: Any) -> str:
    return repr(float(strategy)) if isinstance(strategy, float) else repr(strategy)


def epsilon_lower_bound(
    in_scores: Any,
    out_scores: Any,
    *,
    delta: float,
    method: Any = "gdp",
    interval: str = "clopper-pearson",
    confidence: float = 0.95,
    threshold: Any = "auto",
    seed: Any = 0,
) -> EpsilonLowerBound:
    """Lower-bound ε(δ) from the scores of an attack on "in" and "out" observations.

    Parameters
    ----------
    in_scores, out_scores : 1-D arrays of finite numbers
        Attack scores on observations with and without the target (higher
        means "in").
    delta : float in (0, 1)
        The δ at which ε is reported.
    method : {"gdp", "eps-delta", "pure"} or SubsampledGaussian
    interval : {"clopper-pearson", "jeffreys", "bayes", "katz-log"}
        "katz-log" only with ``method="pure"``; "bayes" not with PLD families.
    confidence : float in (0, 1)
    threshold : "auto", float, "split", "bonferroni", "multi-split", "best", or a strategy object
        How the decision threshold is chosen (see :mod:`privaudit.stats.thresholds`).
        "auto" takes the strategy that was tightest in the benchmark against
        jax_privacy: :class:`Split` for GDP and PLD families,
        ``Bonferroni(over="ranks")`` for (ε, δ) and pure DP with a
        Clopper–Pearson or Jeffreys interval (their best thresholds sit in
        the far tails, where a held-out split loses most).
    seed : int in [0, 2**63 - 1] or numpy Generator, default 0
        Randomness of the held-out split and of the coin that orders tied
        scores. The fixed default makes equal input give an equal bound, as
        the command line does; the result records it. For fresh randomness
        pass ``numpy.random.default_rng()`` (then ``result.seed`` is None).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> out_scores, in_scores = rng.normal(0, 1, 5000), rng.normal(2, 1, 5000)
    >>> result = epsilon_lower_bound(in_scores, out_scores, delta=1e-5, seed=1)
    >>> result.valid, result.kind, bool(5.0 < result.epsilon < 9.99)  # true ε(1e-5) of 2-GDP: 9.997
    (True, 'lower bound', True)
    >>> epsilon_lower_bound(in_scores, out_scores, delta=1.5)
    Traceback (most recent call last):
    ...
    ValueError: `delta` must be in (0, 1), got 1.5
    """
    in_scores = as_scores(in_scores, "in_scores")
    out_scores = as_scores(out_scores, "out_scores")
    delta = check_probability(delta, "delta")
    confidence = check_probability(confidence, "confidence")
    family = _resolve_family(method, delta)
    interval = _check_interval(interval, family)
    if isinstance(threshold, str) and threshold == "auto":
        ranks = family.name in ("eps-delta", "pure") and interval in ("clopper-pearson", "jeffreys")
        threshold = Bonferroni(over="ranks") if ranks else "split"
    strategy = resolve_threshold(threshold)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(_check_seed_or_generator(seed))
    proxy = getattr(family, "proxy", family)

    if isinstance(strategy, MultiSplit):
        return _multi_split(strategy, in_scores, out_scores, delta=delta, method=method, interval=interval, confidence=confidence, rng=rng, seed=seed)
    if isinstance(strategy, Bonferroni) and strategy.thresholds is None and strategy.over != "held-out":
        if interval not in ("clopper-pearson", "jeffreys"):
            raise ValueError(f"`threshold` Bonferroni(over={strategy.over!r}) needs interval 'clopper-pearson' or 'jeffreys', got {interval!r}")
        if strategy.over == "all" and not hasattr(family, "region"):
            raise ValueError("`threshold` Bonferroni(over='all') is not available for PLD methods; use over='ranks'")
        thresholds, false_positives, false_negatives, num_tests = _rank_tests(strategy, in_scores, out_scores, rng)
        eval_in, eval_out, num_selection, valid = in_scores, out_scores, 0, True
    else:
        thresholds, eval_in, eval_out, num_selection, valid = _plan(strategy, in_scores, out_scores, proxy, confidence, rng)
        false_positives, false_negatives = error_counts(np.sort(eval_in), np.sort(eval_out), thresholds)
        num_tests = len(thresholds)
    per_test_confidence = 1.0 - (1.0 - confidence) / num_tests
    n_in, n_out = eval_in.size, eval_out.size

    candidates: list[int] = list(range(len(thresholds)))
    if len(thresholds) > 1 and hasattr(family, "region") and interval in ("clopper-pearson", "jeffreys"):  # score all at once, evaluate the best
        fpr_upper, fnr_upper = _error_bounds(false_positives, n_out, false_negatives, n_in, per_test_confidence, interval)
        candidates = [int(np.argmax(family.parameter_from_errors(fpr_upper, fnr_upper)))]
    best: Any = None
    for index in candidates:
        fp, fn = int(false_positives[index]), int(false_negatives[index])
        epsilon, parameter, extras = _evaluate(family, interval, fp, n_out, fn, n_in, per_test_confidence)
        if best is None or epsilon > best[0]:
            best = (epsilon, parameter, extras, float(thresholds[index]), fp, fn)
    epsilon, parameter, extras, chosen, fp, fn = best

    kind = {"clopper-pearson": "lower bound", "bayes": "credible bound"}.get(interval, "approximate lower bound")
    return EpsilonLowerBound(
        epsilon=float(epsilon),
        delta=delta,
        confidence=confidence,
        method=family.name,
        interval=interval,
        kind=kind if valid else f"optimistic {kind}",
        valid=valid,
        threshold=chosen,
        threshold_strategy=_describe(strategy),
        num_tests=num_tests,
        parameter_name=family.parameter_name,
        parameter=parameter,
        false_positives=fp,
        false_negatives=fn,
        num_in=int(n_in),
        num_out=int(n_out),
        num_selection=int(num_selection),
        seed=int(seed) if isinstance(seed, (int, np.integer)) else None,
        **extras,
    )


def _multi_split(strategy: MultiSplit, in_scores: Any, out_scores: Any, *, rng: Any, seed: Any, confidence: float, **options: Any) -> EpsilonLowerBound:
    """Lower median of ``num_splits`` split bounds at confidence 1 - (1 - c)/2 (see :class:`MultiSplit`)."""
    split = Split(fraction=strategy.fraction)
    results = [
        epsilon_lower_bound(in_scores, out_scores, threshold=split, confidence=1.0 - (1.0 - confidence) / 2.0, seed=child, **options)
        for child in rng.spawn(strategy.num_splits)
    ]
    median = sorted(results, key=lambda result: result.epsilon)[(len(results) - 1) // 2]
    return dataclasses.replace(
        median,
        confidence=confidence,
        threshold_strategy=repr(strategy),
        num_tests=strategy.num_splits,
        seed=int(seed) if isinstance(seed, (int, np.integer)) else None,
    )
