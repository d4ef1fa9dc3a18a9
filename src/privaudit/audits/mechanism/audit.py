"""Mechanism audit: test any DP mechanism's (ε, δ) or ρ-zCDP claim from samples of its output on D and D'.

The mechanism is ``fn(dataset, size, rng) -> samples`` at an import path
(:mod:`privaudit.mechanisms`). Before any sampling the audit imports it,
reads the datasets, checks the neighbour (or the relation to search
under), probes the mechanism on a few samples (shape, finite numbers) and
checks the memory the budget needs. Then:

1. the pair: D' given, or the pair (D, D') searched on ``search_samples``
   samples per candidate, then ``search_steps`` local moves
   (:mod:`privaudit.mechanisms.search`);
2. ``pilot_samples`` samples per side fit the statistics and choose the
   thresholds; ``samples`` fresh samples per side are bounded
   (:mod:`privaudit.mechanisms.tester`);
3. the verdict: the claim is rejected at ``confidence`` when the largest
   ε lower bound (Bonferroni over the ``tests_kept`` tests that the pilot
   found most promising, among every statistic and both directions)
   exceeds the claimed ε.

Each sampling stage has its own seed, spawned from ``seed``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..._core.seeding import child_seeds
from ...mechanisms.neighbours import Candidate
from ...mechanisms.sampling import draw
from ...mechanisms.search import search_pair
from ...mechanisms.tester import DIRECTIONS, bound_samples
from ...stats.ceiling import at_ceiling
from ...stats.metrics import roc_curve
from ...stats.tradeoff import tradeoff_eps_delta
from ...stats.verdict import Claim as VerdictClaim
from ..base import Audit, AuditRun, Progress, no_progress
from ..scores.audit import TRADEOFF_GRID, ScoresCurves
from ..verdicts import bound_ceiling, with_verdict
from .checks import Prepared, prepare
from .config import MechanismAuditConfig, MechanismAuditResult, MechanismTest, NeighbourPair

__all__ = ["AUDIT", "MechanismAudit", "audit_mechanism"]


def run_mechanism_audit(config: MechanismAuditConfig, prepared: Prepared, progress: Progress = no_progress) -> tuple[MechanismAuditResult, dict[str, Any]]:
    """The audit's result and the arrays its figures are drawn from."""
    claim = prepared.claim
    seeds = child_seeds(config.seed, ["search", "pilot", "held-out", "bound"])
    total, budget = 0, ""
    if prepared.neighbour is not None:
        assert prepared.given_pair is not None
        record, how = prepared.given_pair
        chosen = Candidate(how, prepared.neighbour, np.asarray(record))
        scores: tuple[tuple[str, float], ...] = ()
    else:
        progress("searching the pair", detail=f"{config.search_samples} samples per side and candidate, {config.search_steps} local moves")
        outcome = search_pair(
            prepared.mechanism,
            prepared.dataset,
            prepared.relation,
            prepared.low,
            prepared.high,
            shape=prepared.shape,
            claim=claim,
            search_samples=config.search_samples,
            num_random=config.search_random,
            steps=config.search_steps,
            rng=np.random.default_rng(seeds["search"]),
            name="--mechanism",
        )
        chosen, scores = outcome.chosen, outcome.scores
        total += outcome.samples_drawn
        budget = (
            f"{len(scores)} pairs tried ({config.search_steps} local moves), {config.search_samples} samples per side each: {outcome.samples_drawn} samples"
        )
    dataset = prepared.dataset if chosen.dataset is None else chosen.dataset
    progress("sampling", detail=f"{config.pilot_samples} pilot and {config.samples} held-out samples per side")
    pilot, held = np.random.default_rng(seeds["pilot"]), np.random.default_rng(seeds["held-out"])
    name = "--mechanism"
    pilot_d = draw(prepared.mechanism, dataset, config.pilot_samples, pilot, prepared.shape, name)
    pilot_n = draw(prepared.mechanism, chosen.neighbour, config.pilot_samples, pilot, prepared.shape, name, "neighbour")
    total += 2 * config.pilot_samples
    outcome_test, drawn, looks = _held_out_looks(config, prepared, dataset, chosen, pilot_d, pilot_n, held, seeds["bound"])
    total += drawn
    epsilon = outcome_test.epsilon
    rejected = outcome_test.rejected
    verdict = f"claim rejected at confidence {config.confidence:g}" if rejected else "not rejected"
    pair = NeighbourPair(
        how=chosen.how,
        relation=prepared.relation,
        record=tuple(float(v) for v in np.ravel(chosen.record)),
        dataset_size=int(dataset.shape[0]),
        neighbour_size=int(chosen.neighbour.shape[0]),
        searched=prepared.neighbour is None,
        candidates=scores,
        search_budget=budget,
        dataset=() if chosen.dataset is None else tuple(tuple(float(v) for v in np.ravel(row)) for row in dataset),
    )
    result = MechanismAuditResult(
        config=config,
        mechanism=config.mechanism,
        claim=claim.describe(),
        claimed_epsilon=claim.tested_epsilon,
        delta=claim.delta,
        rho=claim.rho,
        epsilon=epsilon,
        fraction_of_claim=epsilon / claim.tested_epsilon,
        rejected=rejected,
        verdict=verdict,
        confidence=config.confidence,
        tests=tuple(MechanismTest(test.statistic, test.direction, test.bound) for test in outcome_test.tests),
        best_test=outcome_test.best,
        statistics_tried=outcome_test.tried,
        pair=pair,
        output_shape=prepared.shape,
        looks=looks,
        total_samples=total,
        conventions=prepared.conventions,
    )
    return _with_verdict(result, claim, prepared.warnings), _figure_data(outcome_test, claim)


def _with_verdict(result: MechanismAuditResult, claim: Any, warnings: tuple[str, ...]) -> MechanismAuditResult:
    """The claim's verdict as every family records it (per release, at the claim's δ), the best ceiling of the tests, the warnings.

    The claim is the user's (``--epsilon``/``--rho`` and ``--delta``); what
    the mechanism states of itself is only named in ``warnings``.
    """
    verdict_claim = VerdictClaim(epsilon=claim.tested_epsilon, delta=claim.delta, quantity="per-release")
    conversion = f"the ρ = {claim.rho:g} zCDP claim read as (ε, δ)-DP at δ = {claim.delta:g}" if claim.rho is not None else None
    ceilings = [bound_ceiling(test.bound, raise_with="more held-out samples (--samples)") for test in result.tests]
    best = max((item for item in ceilings if item is not None), key=lambda item: item.value, default=None)
    ceiling = None if best is None else dataclasses.replace(best, bound=result.epsilon, at_ceiling=at_ceiling(result.epsilon, best.value))
    return with_verdict(
        result,
        bound=result.epsilon,
        bound_delta=claim.delta,
        quantity="per-release",
        claim=verdict_claim,
        conversion=conversion,
        ceiling=ceiling,
        warnings=warnings,
    )


def _held_out_looks(
    config: MechanismAuditConfig, prepared: Prepared, dataset: np.ndarray, chosen: Any, pilot_d: np.ndarray, pilot_n: np.ndarray, rng: Any, seed: int
) -> Any:
    """The test on the held-out samples, in ``config.stages`` looks: (outcome, held-out samples drawn, looks taken).

    Look k bounds all the held-out samples drawn so far, k/K of the budget,
    at confidence 1 - (1 - c)/K: the error is spent equally on the K looks
    fixed in advance, so by the union bound the chance that any look's bound
    exceeds the truth is at most 1 - c, wherever the audit stops (valid
    under optional stopping). With one stage it is the plain test.
    """
    stages = config.stages
    per_look = 1.0 - (1.0 - config.confidence) / stages
    held_d, held_n, drawn = pilot_d[:0], pilot_n[:0], 0
    for look in range(1, stages + 1):
        size = round(config.samples * look / stages) - held_d.shape[0]
        more_d = draw(prepared.mechanism, dataset, size, rng, prepared.shape, "--mechanism")
        more_n = draw(prepared.mechanism, chosen.neighbour, size, rng, prepared.shape, "--mechanism", "neighbour")
        held_d, held_n, drawn = np.concatenate([held_d, more_d]), np.concatenate([held_n, more_n]), drawn + 2 * size
        outcome = bound_samples(
            pilot_d,
            pilot_n,
            held_d,
            held_n,
            claim=prepared.claim,
            confidence=per_look,
            thresholds_per_test=config.thresholds_per_test,
            target=chosen.record,
            seed=seed,
            learned=config.learned,
            tests_kept=config.tests_kept,
        )
        if outcome.rejected:
            break
    return dataclasses.replace(outcome, confidence=config.confidence), drawn, look


def _figure_data(outcome: Any, claim: Any) -> dict[str, Any]:
    """The best test's held-out scores (D as "in"), its empirical trade-off curve and the claim's."""
    scores_in, scores_out = outcome.scores_in, outcome.scores_out
    if outcome.tests[outcome.best].direction != DIRECTIONS[0]:  # the reverse direction: D' is "in"
        scores_in, scores_out = -scores_out, -scores_in
    curve = roc_curve(scores_in, scores_out)
    alpha = np.linspace(0.0, 1.0, TRADEOFF_GRID)
    label = f"claimed ({claim.tested_epsilon:.3g}, {claim.delta:.2g})-DP"
    curves = ScoresCurves(
        roc_fpr=curve.fpr, roc_tpr=curve.tpr, alpha=alpha, references={label: np.asarray(tradeoff_eps_delta(alpha, claim.tested_epsilon, claim.delta))}
    )
    return {"scores_in": scores_in, "scores_out": scores_out, "curves": curves}


def audit_mechanism(mechanism: Any, dataset: Any, neighbour: Any = None, **settings: Any) -> MechanismAuditResult:
    """Test ``mechanism`` (a callable ``fn(dataset, size, rng)``) on ``dataset`` and ``neighbour`` (searched when None).

    ``settings`` are :class:`MechanismAuditConfig` fields (``epsilon``,
    ``delta``, ``rho``, ``relation``, ``samples``, ...). Neither the datasets
    nor any global random state are changed.

    >>> def laplace(dataset, size, rng):
    ...     return dataset.sum() + rng.laplace(0.0, 0.5, size)  # half the scale that epsilon = 1 needs
    >>> result = audit_mechanism(laplace, np.zeros(5), np.zeros(6) + [0, 0, 0, 0, 0, 1], epsilon=1.0, samples=3000)
    >>> result.verdict, bool(result.epsilon > 1.0)
    ('claim rejected at confidence 0.95', True)
    """
    name = f"{getattr(mechanism, '__module__', '?')}:{getattr(mechanism, '__qualname__', type(mechanism).__name__)}"
    config = MechanismAuditConfig(mechanism=name, **settings)
    prepared = prepare(config, mechanism=mechanism, dataset=dataset, neighbour=neighbour)
    result, _ = run_mechanism_audit(config, prepared)
    return result


class MechanismAudit(Audit):
    """Mechanism audit: a DP claim tested from samples of the mechanism on neighbouring datasets."""

    name = "mechanism"
    title = "Any DP mechanism from its samples"
    description = "Test a DP mechanism's (epsilon, delta) or rho-zCDP claim from samples on neighbouring datasets; exit status 1 when the claim is rejected."
    config_type = MechanismAuditConfig
    result_type = MechanismAuditResult
    default_resource = "mechanism.json"
    tiny_overrides = {"samples": 500, "pilot_samples": 200, "search_samples": 100, "epsilon": 1.0}

    def memory_estimate(self, config: MechanismAuditConfig) -> tuple[int, str]:
        prepare(config)  # refuses a mechanism, dataset, pair or budget before any sampling
        return 0, ""

    def exit_status(self, result: MechanismAuditResult) -> int:
        """The command's exit status as a test runner's: 0 when the claim stands, 1 when it is rejected."""
        return 1 if result.rejected else 0

    def run(self, config: MechanismAuditConfig, *, progress: Progress | None = None) -> AuditRun:
        report = progress or no_progress
        prepared = prepare(config)
        result, observations = run_mechanism_audit(config, prepared, report)
        return AuditRun(self.name, config, result, observations=observations)


AUDIT = MechanismAudit()
