"""The mia family's result types and the attacks' scores and summaries, shared by the audit, the bounds and the text-pool path."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from ..._core.validation import check_choice
from ...stats.mia import loss_scores, rmia_fractions
from ...stats.mia_stream import lira_scores_streamed, rmia_ratios_streamed
from ...stats.one_run_combined import OneRunLowerBound
from ..base import AuditResult, Headline
from ..blind import BlindBaseline
from ..family_test import FamilyTest
from ..lm.dataset_inference import LMDatasetInference
from .augment import augmented_attack_scores
from .config import THREAT_MODEL, MIAConfig
from .inert import inert_fields
from .summaries import FRACTION_KEYS, HEADLINE_ATTACK, AttackSummary, VulnerableRecord

__all__ = ["BoundDesign", "MIAResult", "attack_scores", "bound_headline", "evaluate", "threat_model"]


def bound_headline(result: Any) -> Headline:
    """The headline of a bound mode: the one-run ε lower bound, with its attack, mode, m, δ, confidence and ceiling in the label."""
    bound, chosen = result.bound, result.bound_design
    what = f"{bound.num_canaries} canaries" if result.mode == "canary" else f"{bound.num_canaries} slots of {result.config.num_trial_models} trial models"
    if chosen is None:  # a result stored before the choice on the references: online RMIA was fixed
        attack = "online RMIA"
    else:
        attack = f"{chosen.attack} and its guess rule chosen on the {chosen.num_replicas} reference models; ceiling {chosen.ceiling:.3g}"
    family = result.family_test
    if family is not None:
        return Headline(
            value=family.epsilon,
            label=(
                f"ε lower bound against the claim's family ({result.mode} mode, {chosen.attack if chosen else 'online RMIA'} scores, order statistics of "
                f"Xiang et al.; refuted: {family.refuted}; {what}, δ = {bound.delta:g}, {bound.confidence:.0%}; generic bound {family.generic_epsilon:.3g} "
                "beside it; valid if transmission dominance holds)"
            ),
            kind=family.bound.kind,
            confidence=bound.confidence,
            valid=family.bound.valid,
            flag=family.verdict.flagged,
        )
    return Headline(
        value=bound.epsilon,
        label=f"ε lower bound ({result.mode} mode, {attack}, one-run test of Steinke et al.; {what}, δ = {bound.delta:g}, {bound.confidence:.0%})",
        kind=bound.kind,
        confidence=bound.confidence,
        valid=bound.valid,
        flag=None if result.claim_verdict is None else result.claim_verdict.flagged,
    )


@dataclasses.dataclass(frozen=True)
class BoundDesign:
    """How a bound mode chose its attack and guess rule: on the reference models, scored as targets (:mod:`.bounds`, :mod:`.guesses`).

    ``attack`` is the attack the bound uses; its rule guesses "out" below
    ``low``, "in" above ``high`` and abstains between, the best rule on the
    ``num_replicas`` references by its worst reference's one-run value.
    ``replicas`` holds, per attack, (name, worst reference's value, mean
    value, AUC over the references), the values at δ = 0 with the counts
    scaled to the target's slots. The bound tests all ``num_bounded`` slots
    once, and ``ceiling`` is the bound a perfect attack gets on them at the
    same δ and confidence.
    """

    attack: str
    num_bounded: int
    ceiling: float
    low: float
    high: float
    num_replicas: int
    replicas: tuple[tuple[str, float, float, float], ...] = ()


@dataclasses.dataclass(frozen=True)
class MIAResult(AuditResult):
    """The attacks' statistics on the target, the most exposed records, and how the run went."""

    attacks: tuple[AttackSummary, ...]
    most_vulnerable: tuple[VulnerableRecord, ...]
    num_references: int
    num_records: int
    num_members: int
    num_population: int
    confidence: float
    threat_model: str
    seeds: tuple[int, ...]
    num_trained: int
    wall_time_s: float
    backend: str
    config: MIAConfig
    mode: str = "attack"
    bound: OneRunLowerBound | None = None  # the ε lower bound of a bound mode (None in mode "attack")
    # (log ratio, records) of each tie that decides the table's order: records equal in online RMIA's log ratio and online LiRA's score
    ties: tuple[tuple[float, int], ...] = ()
    bound_design: BoundDesign | None = None  # the bound modes' attack and guess rule, and their ceiling
    blind_baseline: BlindBaseline | None = None  # the user gave the membership: how well the records alone tell it (privaudit.audits.blind)
    resume_note: str = ""  # why stored models were trained again (their key changed), "" when none was
    dataset_inference: LMDatasetInference | None = None  # a text pool: were the members, as a set, used? (privaudit.audits.lm.dataset_inference)
    family_test: FamilyTest | None = None  # mode "canary" with a family named: the headline, beside the generic bound (privaudit.audits.family_test)

    @property
    def num_runs(self) -> int:
        """The models behind this result, ``num_trained`` of them trained by this call (the rest resumed)."""
        return len(self.seeds)

    def inert_config_fields(self) -> frozenset[str]:
        """The config fields this run did not use (see :data:`INERT_FIELDS`), so results.json records only what applied."""
        return inert_fields(self.config)

    def attack(self, name: str) -> AttackSummary:
        """The summary of attack ``name`` (one of :data:`ATTACKS`)."""
        check_choice(name, "attack", [summary.attack for summary in self.attacks])
        return next(summary for summary in self.attacks if summary.attack == name)

    def headline(self) -> Headline:
        if self.bound is not None:
            return bound_headline(self)
        summary = self.attack(HEADLINE_ATTACK)
        value = summary.tpr[summary.fpr.index(0.01)]
        needs = "" if value is not None else f": n/a (needs >= 100 non-members, got {summary.num_out})"
        return Headline(
            value=value,
            label=f"TPR at 1% FPR of online RMIA with {self.num_references} reference models (attack statistic, not an ε bound){needs}",
            kind="statistic",
            confidence=None,
            valid=True,
        )


def attack_scores(
    target: np.ndarray, reference: Any, membership: np.ndarray, population: np.ndarray, config: MIAConfig, *, evaluated: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Every attack's scores of the ``evaluated`` records (default: every record, the population samples z included), from the signals of all.

    ``target`` (n,) and ``reference`` (k, n) are φ on the target and the
    references (``reference`` may be k memory-mapped rows: the attacks read
    it in chunks of records, :mod:`privaudit.stats.mia_stream`);
    ``membership`` (k, n) the references' training sets. With query
    augmentations they are (A, n) and (k, A, n), one row per view.

    RMIA's score is its log ratio r(x) = log Pr(x|θ) − log Pr(x), which
    orders the records as the fraction of z dominated does with every tie
    broken (:mod:`privaudit.stats.mia`); the fractions come beside it under
    :data:`FRACTION_KEYS`, each z's against the other z only (it is scored by
    an RMIA that does not use it), so every z is evaluated as a non-member.
    """
    chosen = np.ones(population.shape, dtype=bool) if evaluated is None else evaluated
    if np.ndim(target) == 2:
        return augmented_attack_scores(target, np.asarray(reference), membership, population, config, evaluated=chosen)
    records, z = np.flatnonzero(chosen), np.flatnonzero(population)
    lira = functools.partial(lira_scores_streamed, target, reference, membership, global_variance=config.global_variance, records=records)
    ratios = functools.partial(rmia_ratios_streamed, target, reference, membership)
    scores = {"loss": loss_scores(target[records]), "lira-online": lira(online=True), "lira-offline": lira(online=False)}
    z_of = np.full(records.size, -1, dtype=np.intp)  # each evaluated z's place among the z, -1 for the other records
    is_z = population[records]
    z_of[is_z] = np.searchsorted(z, records[is_z])
    for name, offline_a in (("rmia-online", None), ("rmia-offline", config.offline_a)):
        ratio_z = ratios(records=z, offline_a=offline_a, name="population_membership")
        scores[name] = ratios(records=records, offline_a=offline_a)
        scores[FRACTION_KEYS[name]] = rmia_fractions(scores[name], ratio_z, z_of, gamma=config.gamma)
    return scores


def threat_model(config: MIAConfig) -> str:
    """The threat model of this run: who trained the target and the references, and what the attacker sees.

    >>> threat_model(MIAConfig()).startswith("black-box")
    True
    """
    if config.model is None:
        return THREAT_MODEL
    references = "reference models given by the user with their membership" if config.reference_models else "reference models trained by the auditor"
    return (
        "black-box: the confidence on each record of the user's trained target (its members as given); "
        f"{references} on random halves of the pool; population samples known to be non-members"
    )


def evaluate(target: np.ndarray, reference: Any, membership: np.ndarray, population: np.ndarray, in_target: np.ndarray, config: MIAConfig) -> dict[str, Any]:
    """Every record scored and evaluated, the population samples z too (each by an RMIA that does not use it).

    Returns ``{"scores", "is_member", "record_ids"}``, the run's observations.
    """
    scores = attack_scores(target, reference, membership, population, config)
    return {"scores": scores, "is_member": np.asarray(in_target, dtype=bool).copy(), "record_ids": np.arange(population.size)}
