"""privaudit against jax_privacy on the same scores and seeds: ``python benchmarks/one_run_vs_jax_privacy.py [--seeds N] [--big-seeds N] [--small-seeds N] [--parts LIST] [--output FILE]``.

Needs jax_privacy, which is not a privaudit dependency: run it from a separate
benchmark environment, e.g.::

    python3 -m venv /tmp/jaxbench
    /tmp/jaxbench/bin/pip install jax-privacy==2.0.0 -e .
    /tmp/jaxbench/bin/python benchmarks/one_run_vs_jax_privacy.py --seeds 10

δ = 1e-5 and 95% confidence (significance 0.05) throughout. Cases:

* one-run, m ∈ {1e3, 1e4} canaries, μ ∈ {1, 2, 4}: each canary included with
  probability ½ (``rng.random(m) < 0.5``), score ``μ·member + N(0, 1)``.
  privaudit's ``one_run_lower_bound``, ``epsilon_one_run_fdp`` and
  ``epsilon_one_run_sweep`` against jax_privacy's ``epsilon_one_run_fdp`` and
  ``epsilon_one_run``.
* threshold bounds on 1e6 scores per side, N(1, 1) in against N(0, 1) out:
  privaudit's ``epsilon_lower_bound`` ("eps-delta" and "gdp") with each
  threshold strategy against jax_privacy's ``epsilon_clopper_pearson`` and
  ``epsilon_from_gdp``.
* the same on 1e4 scores per side, μ ∈ {0, 1}, over more seeds; at μ = 0 any
  positive ε is invalid, so the fraction of seeds with ε > 0 is recorded
  (a valid 95% bound has it at most 5%, up to binomial noise).

``--parts`` picks the cases: ``one-run``, ``big`` (1e6 per side), ``small``
(1e4 per side), comma-separated; all by default. To compare two versions of
privaudit, run the script twice with ``PYTHONPATH`` set to each one's ``src``.

Each seed's inputs come from ``np.random.default_rng(seed)``. Wall times are
``time.perf_counter`` around each call only, after one untimed warm-up call per
function; jax_privacy's ``CanaryScoreAuditor`` sorts the scores in its
constructor, so its construction time is recorded separately, and also added
to each call's time (``median_s_with_construction``), which is what a single
bound costs a user.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

import privaudit
from privaudit._core.results import library_versions, to_plain

DELTA = 1e-5
CONFIDENCE = 0.95
SIGNIFICANCE = 1 - CONFIDENCE
ONE_RUN_SIZES = (1_000, 10_000)
ONE_RUN_MUS = (1.0, 2.0, 4.0)
BIG_SIZE = 1_000_000
SMALL_SIZE = 10_000
SMALL_MUS = (0.0, 1.0)


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr, exit status 2."""

    def error(self, message: str):  # noqa: D102 - argparse hook
        self.exit(2, f"{self.prog}: error: {message}\n")


def _load_jax_privacy():
    try:
        from jax_privacy.auditing import CanaryScoreAuditor
    except ImportError as error:
        sys.stderr.write(
            f"one_run_vs_jax_privacy.py: error: the benchmark needs the package jax-privacy "
            f"(pip install jax-privacy==2.0.0 in a separate environment): {error}\n"
        )
        raise SystemExit(2) from None
    return CanaryScoreAuditor


def _timed(call, *args):
    start = time.perf_counter()
    value = call(*args)
    return value, time.perf_counter() - start


def _summary(values, seconds, extra_seconds=None):
    values = [float(v) for v in values]
    entry = {
        "values": values,
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "fraction_positive": sum(v > 0 for v in values) / len(values),
        "median_s": statistics.median(seconds),
        "seconds": seconds,
    }
    if extra_seconds is not None:
        total = [a + b for a, b in zip(seconds, extra_seconds)]
        entry["median_s_with_construction"] = statistics.median(total)
    return entry


def _one_run_scores(seed: int, m: int, mu: float):
    rng = np.random.default_rng(seed)
    member = rng.random(m) < 0.5
    scores = mu * member + rng.normal(size=m)
    return scores, member


def _threshold_strategies():
    """(name, strategy or None for the default, skip reason or None)."""
    strategies = [("default (split)", None, None)]
    try:
        strategies.append(("Bonferroni(over='ranks')", privaudit.Bonferroni(over="ranks"), None))
    except (TypeError, ValueError) as error:
        strategies.append(("Bonferroni(over='ranks')", None, f"unavailable: {error}"))
    if hasattr(privaudit, "MultiSplit"):
        strategies.append(("MultiSplit()", privaudit.MultiSplit(), None))
    else:
        strategies.append(("MultiSplit()", None, "privaudit has no MultiSplit at the time of this run"))
    return strategies


def _one_run_case(auditor_class, m: int, mu: float, seeds: int):
    privaudit_calls = {
        "one_run_lower_bound": lambda s, b: privaudit.one_run_lower_bound(s, b, delta=DELTA, confidence=CONFIDENCE),
        "epsilon_one_run_fdp": lambda s, b: privaudit.epsilon_one_run_fdp(s, b, delta=DELTA, confidence=CONFIDENCE),
        "epsilon_one_run_sweep": lambda s, b: privaudit.epsilon_one_run_sweep(s, b, delta=DELTA, confidence=CONFIDENCE),
    }
    jax_calls = {
        "epsilon_one_run_fdp": lambda a: a.epsilon_one_run_fdp(SIGNIFICANCE, DELTA),
        "epsilon_one_run": lambda a: a.epsilon_one_run(SIGNIFICANCE, DELTA),
    }
    # Warm-up, untimed: imports and caches.
    scores, member = _one_run_scores(seeds, m, mu)
    for call in privaudit_calls.values():
        call(scores, member)
    warm = auditor_class(scores[member], scores[~member])
    for call in jax_calls.values():
        call(warm)

    values = {("privaudit", name): [] for name in privaudit_calls} | {("jax_privacy", name): [] for name in jax_calls}
    seconds = {key: [] for key in values}
    construct = []
    winners = []
    for seed in range(seeds):
        scores, member = _one_run_scores(seed, m, mu)
        for name, call in privaudit_calls.items():
            result, took = _timed(call, scores, member)
            values[("privaudit", name)].append(result.epsilon)
            seconds[("privaudit", name)].append(took)
            if name == "one_run_lower_bound":
                winners.append(result.method)
        auditor, took = _timed(auditor_class, scores[member], scores[~member])
        construct.append(took)
        for name, call in jax_calls.items():
            value, took = _timed(call, auditor)
            values[("jax_privacy", name)].append(value)
            seconds[("jax_privacy", name)].append(took)

    entry = {
        "case": f"one-run, m = {m}, mu = {mu:g}",
        "m": m,
        "mu": mu,
        "seeds": seeds,
        "privaudit": {name: _summary(values[("privaudit", name)], seconds[("privaudit", name)]) for name in privaudit_calls},
        "jax_privacy": {name: _summary(values[("jax_privacy", name)], seconds[("jax_privacy", name)], construct) for name in jax_calls},
        "jax_privacy_construction_median_s": statistics.median(construct),
    }
    entry["privaudit"]["one_run_lower_bound"]["methods_won"] = {name: winners.count(name) for name in sorted(set(winners))}
    ours = entry["privaudit"]["one_run_lower_bound"]["median"]
    theirs = entry["jax_privacy"]["epsilon_one_run_fdp"]["median"]
    entry["ratio_one_run_lower_bound_to_jax_fdp"] = ours / theirs if theirs > 0 else None
    entry["privaudit_below_jax"] = ours < theirs
    return entry


def _threshold_case(auditor_class, n: int, mu: float, seeds: int):
    strategies = _threshold_strategies()
    methods = (("eps-delta", "epsilon_clopper_pearson"), ("gdp", "epsilon_from_gdp"))
    privaudit_calls = {}
    skipped = {}
    for method, _ in methods:
        for name, strategy, reason in strategies:
            key = f"{method}, {name}"
            if reason is not None:
                skipped[key] = reason
                continue
            threshold = "split" if strategy is None else strategy
            privaudit_calls[key] = lambda i, o, seed, method=method, threshold=threshold: (
                privaudit.epsilon_lower_bound(i, o, delta=DELTA, method=method, confidence=CONFIDENCE, threshold=threshold, seed=seed).epsilon
            )
    jax_calls = {
        "epsilon_clopper_pearson": lambda a: a.epsilon_clopper_pearson(SIGNIFICANCE, DELTA),
        "epsilon_from_gdp": lambda a: a.epsilon_from_gdp(SIGNIFICANCE, DELTA),
    }

    def draw(seed):
        rng = np.random.default_rng(seed)
        return rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)

    # Warm-up on a small draw, untimed.
    warm_in, warm_out = np.random.default_rng(seeds).normal(mu, 1.0, 1000), np.random.default_rng(seeds + 1).normal(0.0, 1.0, 1000)
    for call in privaudit_calls.values():
        call(warm_in, warm_out, 0)
    warm = auditor_class(warm_in, warm_out)
    for call in jax_calls.values():
        call(warm)

    values = {key: [] for key in privaudit_calls}
    seconds = {key: [] for key in privaudit_calls}
    jax_values = {key: [] for key in jax_calls}
    jax_seconds = {key: [] for key in jax_calls}
    construct = []
    for seed in range(seeds):
        in_scores, out_scores = draw(seed)
        for key, call in privaudit_calls.items():
            value, took = _timed(call, in_scores, out_scores, seed)
            values[key].append(value)
            seconds[key].append(took)
        auditor, took = _timed(auditor_class, in_scores, out_scores)
        construct.append(took)
        for key, call in jax_calls.items():
            value, took = _timed(call, auditor)
            jax_values[key].append(value)
            jax_seconds[key].append(took)
    entry = {
        "case": f"threshold bounds, {n} per side, in N({mu:g}, 1) vs out N(0, 1)",
        "n_per_side": n,
        "mu": mu,
        "seeds": seeds,
        "privaudit": {key: _summary(values[key], seconds[key]) for key in privaudit_calls},
        "privaudit_skipped": skipped,
        "jax_privacy": {key: _summary(jax_values[key], jax_seconds[key], construct) for key in jax_calls},
        "jax_privacy_construction_median_s": statistics.median(construct),
    }
    if mu == 0.0:
        entry["note"] = "null data: any positive epsilon is invalid; a valid 95% bound is positive in at most ~5% of seeds"
    return entry


def main() -> None:
    parser = _Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds of each one-run case")
    parser.add_argument("--big-seeds", type=int, default=3, help="seeds of the 1e6-per-side threshold case")
    parser.add_argument("--small-seeds", type=int, default=100, help="seeds of the 1e4-per-side threshold cases (mu = 0 and 1)")
    parser.add_argument("--parts", default="one-run,big,small", help="comma-separated: one-run, big, small")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "one_run_vs_jax_privacy.json")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if not parts or not parts <= {"one-run", "big", "small"}:
        parser.error(f"--parts must be a comma-separated list of one-run, big, small, got {args.parts!r}")
    for option in ("seeds", "big_seeds", "small_seeds"):
        if getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be at least 1, got {getattr(args, option)}")

    auditor_class = _load_jax_privacy()
    started = time.perf_counter()
    cases = []
    for m in ONE_RUN_SIZES if "one-run" in parts else ():
        for mu in ONE_RUN_MUS:
            entry = _one_run_case(auditor_class, m, mu, args.seeds)
            cases.append(entry)
            ours, theirs = entry["privaudit"]["one_run_lower_bound"], entry["jax_privacy"]["epsilon_one_run_fdp"]
            print(
                f"m={m:>6} mu={mu:g}: privaudit one_run_lower_bound {ours['median']:.3f} "
                f"({ours['median_s'] * 1e3:.1f} ms), jax_privacy epsilon_one_run_fdp {theirs['median']:.3f} "
                f"({theirs['median_s_with_construction'] * 1e3:.1f} ms with construction)",
                flush=True,
            )
    for part, n, mus, seeds in (("big", BIG_SIZE, (1.0,), args.big_seeds), ("small", SMALL_SIZE, SMALL_MUS, args.small_seeds)):
        for mu in mus if part in parts else ():
            entry = _threshold_case(auditor_class, n, mu, seeds)
            cases.append(entry)
            for library in ("privaudit", "jax_privacy"):
                for key, summary in entry[library].items():
                    print(
                        f"n={n:>7} mu={mu:g} {library} {key}: median {summary['median']:.3f}, "
                        f"positive in {summary['fraction_positive']:.0%} of seeds, "
                        f"{summary.get('median_s_with_construction', summary['median_s']) * 1e3:.1f} ms",
                        flush=True,
                    )

    versions = library_versions()
    for package in ("jax-privacy", "jax", "jaxlib"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    report = {
        "command": " ".join([sys.executable, *sys.argv]),
        "privaudit": str(Path(privaudit.__file__).parent),
        "delta": DELTA,
        "confidence": CONFIDENCE,
        "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(), "platform": platform.platform()},
        "versions": versions,
        "wall_time_s": time.perf_counter() - started,
        "cases": cases,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(to_plain(report), indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
