"""ε lower bounds for the ``mia`` audit: membership drawn by fair coins, the attack and guess rule chosen on the reference models, every slot bounded.

A bound on ε holds only where membership was randomised, so the bound modes
draw it themselves and train every model (no ``--model``, no
``--reference-models``). Two designs, both bounded by
:func:`privaudit.stats.one_run_combined.one_run_lower_bound` with its own
guess/abstain rule, Steinke, Nasr and Jagielski's test only (valid for any
(ε, δ)-DP training; the f-DP test assumes a Gaussian trade-off curve, which
a user's training need not have).

The bounded attack and its guess rule are fixed before the coins are read,
but they are the strongest for the design. The calibration references are
labelled replicas of the audited slots: each, scored as if it were the
target by the other references and z (:func:`reference_slot_scores`), has
a known membership of every audited record, drawn independently of the
coins. On them every attack (LOSS, LiRA and RMIA, each on the signal at the
label the model may have trained on: a mislabeled canary's wrong label) and
every rule "out below one score, in above another, abstain between" is
ranked by its worst replica's one-run bound (:func:`~privaudit.audits.mia.guesses.choose_rule`),
and the best is applied to every slot of the audited runs: one test, m = all
slots, nothing left out. The choice is a function of the references and z,
never of the coins, so Steinke et al.'s test holds as for an attack fixed in
advance. The ceiling (the bound a perfect attack gets on the same slots) is
reported beside the bound:

``mode="canary"`` (one training run, Steinke et al.'s design)
    ``num_canaries`` records of the pool, each given a uniformly drawn wrong
    label (:func:`privaudit.audits.one_run.audit.mislabeled_canaries`): a model
    fits a wrong label only if it trained on it, so their membership is the
    easiest to read from black-box confidences, and any other canary would
    only loosen the bound. Each is included in the ONE target run by an
    independent fair coin (p = ½); its correctly labelled original is in no
    training set. The rest of the target's training set is a fair-coin half
    of the other records outside the population samples z.

``mode="leave-one-out"`` (the game over models, as in the black-box audit)
    ``num_trial_models`` trial models, each of which includes each record
    outside z by its own fair coin, one coin per (model, record) slot.

In both, ``num_references`` calibration reference models train on balanced
random halves of the whole pool (canaries with their wrong labels included),
from a seed of their own, so RMIA's calibration never depends on the coins.
Each slot's score comes from its own model, the references and z: the scores
are a post-processing of the audited runs' output, and the coins are
independent of everything else. Each coin changes one record of one
training run, so if training is (ε, δ)-DP the released models are
(ε, δ)-DP in each coin: the hypothesis of Steinke et al.'s Theorem 5.2,
with m = the number of slots. All slots are therefore pooled into one
one-run bound. A counting bound (Clopper–Pearson on in/out scores, as the
black-box audit uses) would need independent trials, which slots of one
model are not; a reference model whose membership were itself a coin
(the trial models calibrating each other) would make the guesses depend on
the coins, which the theorem forbids.

Every draw comes from the config's seed through
:func:`privaudit._core.seeding.child_seeds` (names ``canaries``,
``population``, ``references``, ``training``, ``inclusion``), so each job
recomputes its own training set and a killed run resumes unchanged.

>>> design = draw_design(0, np.arange(60) % 3, mode="canary", num_references=4, num_population=10, num_canaries=20, num_trial_models=1)
>>> design.coins.shape, int(design.references[:, design.audited].sum(axis=0).min()), bool((design.population & design.audited).any())
((1, 20), 2, False)
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any

import numpy as np

from ..._core.conventions import Convention, default, explicit
from ..._core.seeding import child_seeds
from ..._core.validation import check_count
from ...observation.one_run import draw_inclusion
from ...runner import RunStore, resume_plan, run_all
from ...stats.ceiling import make_ceiling, one_run_ceiling
from ...stats.metrics import auc_null_margin
from ...stats.one_run_combined import OneRunLowerBound
from ..base import AuditRun
from ..family_test import family_headline, family_plan
from ..one_run.audit import mislabeled_canaries
from ..verdicts import auc_warnings, claim_of, with_verdict
from .config import BOUND_METHODS, DEFAULT_CONFIDENCE, DEFAULT_DELTA, MIN_CANARIES, THREAT_MODELS
from .conventions import pool_conventions
from .guesses import PREFERENCE, ThresholdRule, choose_rule, slot_bound
from .result import BoundDesign, MIAResult, attack_scores
from .summaries import attack_summaries, most_vulnerable, top_ties
from .training import applied_job_fields, fit_user_model, job_inputs, model_signals, pool_of, record_ids, train_input_names, train_mlp

__all__ = [
    "PREFERENCE",
    "Design",
    "ThresholdRule",
    "check_bound_pool",
    "design_bound",
    "draw_design",
    "reference_slot_scores",
    "run_bound_audit",
    "slot_bound",
    "slot_scores",
    "train_and_score_design",
]


def check_bound_pool(config: Any, num_records: int, num_population: int) -> None:
    """Refuse a canary count the pool cannot hold: at most half of the records outside the population samples.

    >>> from privaudit.audits.mia import MIAConfig
    >>> check_bound_pool(MIAConfig(mode="canary", num_canaries=61), 200, 80)
    Traceback (most recent call last):
    ...
    ValueError: `num_canaries` must be an integer in [20, 60], got 61
    """
    if config.mode == "canary":
        check_count(config.num_canaries, "num_canaries", minimum=MIN_CANARIES, maximum=max((num_records - num_population) // 2, MIN_CANARIES - 1))


@dataclasses.dataclass(frozen=True)
class Design:
    """Who trains on what: ``labels`` (n,) every model sees (canaries mislabeled); masks over the n records.

    ``references`` (k, n) and ``trials`` (T, n) are the training sets of the
    calibration references and of the audited models; ``audited`` marks the
    records whose membership is drawn by coins, ``coins`` (T, a) = ``trials[:, audited]``.
    """

    labels: np.ndarray
    population: np.ndarray
    audited: np.ndarray
    references: np.ndarray
    trials: np.ndarray

    @property
    def coins(self) -> np.ndarray:
        return self.trials[:, self.audited]


@functools.lru_cache(maxsize=4)
def _cached_design(seed: int, labels: bytes, mode: str, num_references: int, num_population: int, num_canaries: int, num_trial_models: int) -> Design:
    y = np.frombuffer(labels, dtype=np.int64)
    n = y.size
    seeds = child_seeds(seed, ["canaries", "population", "references", "training", "inclusion"])
    labels_seen, canary = y.copy(), np.zeros(n, dtype=bool)
    if mode == "canary":
        classes = np.unique(y)  # a wrong label is one of the pool's own classes, however they are numbered
        rows, wrong = mislabeled_canaries(np.searchsorted(classes, y), num_canaries, classes.size, seed=seeds["canaries"])
        labels_seen[rows], canary[rows] = classes[wrong], True
    population = np.zeros(n, dtype=bool)
    population[np.random.default_rng(seeds["population"]).choice(np.flatnonzero(~canary), size=num_population, replace=False)] = True
    # balanced halves: every record IN exactly k/2 references (both RMIA's and LiRA's design)
    references = np.argsort(np.random.default_rng(seeds["references"]).random((n, num_references)), axis=1).T < num_references // 2
    if mode == "canary":
        trials = ((np.random.default_rng(seeds["training"]).random(n) < 0.5) & ~population & ~canary)[None]
        trials[0, np.flatnonzero(canary)] = draw_inclusion(num_canaries, 0.5, seeds["inclusion"])
        audited = canary
    else:
        trials = (np.random.default_rng(seeds["inclusion"]).random((num_trial_models, n)) < 0.5) & ~population
        audited = ~population
    for array in (labels_seen, population, audited, references, trials):
        array.setflags(write=False)  # cached and shared: never changed
    return Design(labels_seen, population, audited, references, trials)


def draw_design(seed: int, labels: np.ndarray, *, mode: str, num_references: int, num_population: int, num_canaries: int, num_trial_models: int) -> Design:
    """The :class:`Design` of a bound mode, every draw from ``seed`` (see the module docstring)."""
    y = np.ascontiguousarray(labels, dtype=np.int64)
    return _cached_design(int(seed), y.tobytes(), mode, int(num_references), int(num_population), int(num_canaries), int(num_trial_models))


def _design(config: dict[str, Any]) -> Design:
    pool = pool_of(config)
    keys = ("mode", "num_references", "num_population")
    # a mode's record holds only its own count (canaries, or trial models); the other is unused by the draw
    counts = {key: config.get(key, 0) for key in ("num_canaries", "num_trial_models")}
    return draw_design(int(config["seed"]), pool.y, **{key: config[key] for key in keys}, **counts)


def train_and_score_design(config: dict[str, Any]) -> dict[str, Any]:
    """One job: train model ``index`` (a reference below ``num_references``, else a trial model) and score the pool.

    Every model is scored on every record at the label it may have trained
    on (a canary's wrong label). Returns ``{"index", "seed", "signals",
    "output_kind", "evidence"}``, as :func:`privaudit.audits.mia.training.train_and_score`.
    """
    pool = pool_of(config)
    design = _design(config)
    k, index = int(config["num_references"]), int(config["index"])
    rows = design.references[index] if index < k else design.trials[index - k]
    seed = int(np.random.SeedSequence((int(config["seed"]), index, 0x424E44)).generate_state(1)[0] % 2**31)
    x, y = pool.x[rows], design.labels[rows]
    names = None
    if config["train"] is None:
        model = train_mlp(x, y, seed=seed, epochs=int(config["epochs"]))
    else:
        names = train_input_names(pool, config.get("train_input", "array"))
        model = fit_user_model(config["train"], config.get("train_input", "array"), pool, rows, y, seed, f" in training run {index}")
    who = f"model {index}: the model that `--train` {config['train']!r} returned" if config["train"] else f"model {index}"
    if model is None:
        raise ValueError(f"{who} is None: the training function must return the trained model")
    signals, convention = model_signals(model, pool.x, design.labels, who, names)
    return {"index": index, "seed": seed, "signals": signals.tolist(), "output_kind": convention.value, "evidence": convention.evidence}


def slot_scores(trial_signals: np.ndarray, reference_signals: np.ndarray, design: Design, config: Any) -> dict[str, np.ndarray]:
    """Every attack's scores (T, a) of the audited slots: trial model t's records calibrated by the references and z only.

    >>> rng = np.random.default_rng(0)
    >>> design = draw_design(0, np.arange(60) % 3, mode="leave-one-out", num_references=4, num_population=10, num_canaries=20, num_trial_models=2)
    >>> from privaudit.audits.mia import MIAConfig
    >>> scores = slot_scores(rng.normal(size=(2, 60)), rng.normal(size=(4, 60)), design, MIAConfig())
    >>> scores["rmia-online"].shape
    (2, 50)
    """
    keep = design.audited | design.population  # the audited records, in row order, and z
    per_trial = [
        attack_scores(
            signals[keep], reference_signals[:, keep], design.references[:, keep], design.population[keep], config, evaluated=~design.population[keep]
        )
        for signals in trial_signals
    ]
    return {name: np.array([scores[name] for scores in per_trial]) for name in per_trial[0]}


def reference_slot_scores(reference_signals: np.ndarray, design: Design, config: Any) -> dict[str, np.ndarray]:
    """Every attack's scores (k, a) of the audited records on each reference, scored as if it were the target by the other k - 1 and z.

    The references' membership of the audited records (``design.references[:, design.audited]``)
    is their answer: labelled replicas of the target's slots, drawn
    independently of the coins, on which :func:`~privaudit.audits.mia.guesses.choose_rule`
    chooses the attack and its guess rule.

    >>> rng = np.random.default_rng(0)
    >>> design = draw_design(0, np.arange(60) % 3, mode="canary", num_references=4, num_population=10, num_canaries=20, num_trial_models=1)
    >>> from privaudit.audits.mia import MIAConfig
    >>> reference_slot_scores(rng.normal(size=(4, 60)), design, MIAConfig())["lira-online"].shape
    (4, 20)
    """
    k = reference_signals.shape[0]
    others = [np.arange(k) != index for index in range(k)]
    replicas = [slot_scores(reference_signals[index : index + 1], reference_signals[keep], _without(design, keep), config) for index, keep in enumerate(others)]
    return {name: np.concatenate([replica[name] for replica in replicas]) for name in PREFERENCE}


def _without(design: Design, keep: np.ndarray) -> Design:
    """``design`` with only the references ``keep`` (the one left out is scored as a target)."""
    return dataclasses.replace(design, references=design.references[keep])


def design_bound(
    scores: dict[str, np.ndarray], replica_scores: dict[str, np.ndarray], design: Design, *, delta: float, confidence: float
) -> tuple[OneRunLowerBound, Any]:
    """The attack and guess rule chosen on the references' replicas, bounded on every audited slot: (bound, :class:`~privaudit.audits.mia.result.BoundDesign`).

    ``scores`` maps each attack to its (T, a) slot scores (:func:`slot_scores`),
    ``replica_scores`` to its (k, a) scores of the references as targets
    (:func:`reference_slot_scores`).

    >>> rng = np.random.default_rng(0)
    >>> design = draw_design(0, np.arange(300) % 3, mode="canary", num_references=4, num_population=40, num_canaries=120, num_trial_models=1)
    >>> answers = design.references[:, design.audited]
    >>> noise = {name: 3.0 if name != "lira-online" else 0.1 for name in PREFERENCE}
    >>> replicas = {name: answers + rng.normal(0, noise[name], answers.shape) for name in PREFERENCE}
    >>> scores = {name: design.coins + rng.normal(0, noise[name], design.coins.shape) for name in PREFERENCE}
    >>> bound, chosen = design_bound(scores, replicas, design, delta=1e-5, confidence=0.95)
    >>> chosen.attack, chosen.num_bounded, bound.num_canaries, bound.candidates[0][1:3]
    ('lira-online', 120, 120, (120, 120))
    >>> bound.epsilon == chosen.ceiling
    True
    """
    coins = np.asarray(design.coins, dtype=bool)
    answers = design.references[:, design.audited]
    chosen, table = choose_rule(replica_scores, answers, num_slots=coins.size, confidence=confidence)
    rule = chosen.place(np.asarray(scores[chosen.attack]))  # the target's scores place the thresholds; its coins are read only by the test
    bound = rule.bound(np.asarray(scores[rule.attack]), coins, delta=delta, confidence=confidence)
    # the design's own ceiling: a perfect attack guesses every slot right in the rule's one test
    ceiling = one_run_ceiling(coins.size, delta=delta, confidence=confidence, methods=BOUND_METHODS, num_guesses=[coins.size])
    return bound, BoundDesign(rule.attack, int(coins.size), ceiling, rule.low, rule.high, int(answers.shape[0]), table)


def bound_conventions(config: Any) -> tuple[Convention, ...]:
    """The canary choice, δ and confidence of the bound, each a stated default or the user's value.

    >>> from privaudit.audits.mia import MIAConfig
    >>> [item.decided for item in bound_conventions(MIAConfig(mode="canary", delta=1e-6))]
    ['default', 'explicit', 'default']
    """
    canaries = default(
        "audited records",
        f"{config.num_canaries} mislabeled pool records" if config.mode == "canary" else "every record outside the population samples",
        "each included by a fair coin; the bound holds for any records, mislabeled ones make it tightest",
    )
    delta = (
        default("bound δ", f"{config.delta:g}", "the bound is a lower bound on ε at this δ, whatever δ the training claims")
        if config.delta == DEFAULT_DELTA
        else explicit("bound δ", f"{config.delta:g}", "--delta")
    )
    confidence = (
        default("bound confidence", f"{config.confidence:g}", "the bound holds at the confidence it states")
        if config.confidence == DEFAULT_CONFIDENCE
        else explicit("bound confidence", f"{config.confidence:g}", "config `confidence`")
    )
    return canaries, delta, confidence


def _jobs(config: Any, num_population: int) -> list[dict[str, Any]]:
    keys = ("dataset", "data", "label_col", "id_col", "members_col", "train", "epochs", "num_references", "seed", "mode", "num_canaries", "num_trial_models")

    base = applied_job_fields(config, keys) | job_inputs(config)
    if config.train_input != "array":  # only then: runs stored before the option existed resume unchanged
        base["train_input"] = config.train_input
    models = config.num_references + (1 if config.mode == "canary" else config.num_trial_models)
    return [dict(base, num_population=num_population, index=index) for index in range(models)]


def run_bound_audit(config: Any, directory: Any, *, backend: str = "local", max_workers: int | None = None, address: str | None = None) -> Any:
    """Train (or resume) the references and the audited models into ``directory``, score every slot and bound ε."""
    start = time.perf_counter()  # the whole audit's wall time, reused models included
    pool = pool_of(config)
    num_population = int(round(config.population_fraction * len(pool.y)))
    check_bound_pool(config, len(pool.y), num_population)
    claimed_family = family_plan(config)  # the claim's own family, built (and its claim checked) before any training
    jobs = _jobs(config, num_population)
    store = RunStore(directory)
    plan = resume_plan(store, jobs)
    who = f"`--train` {config.train!r}" if config.train else "the built-in MLP"
    results = run_all(train_and_score_design, jobs, store=store, backend=backend, max_workers=max_workers, address=address, who=who)
    design = _design(jobs[0])
    signals = np.array([result["signals"] for result in results], dtype=np.float64)
    k = config.num_references
    scores = slot_scores(signals[k:], signals[:k], design, config)
    coins = design.coins
    bound, chosen = design_bound(scores, reference_slot_scores(signals[:k], design, config), design, delta=config.delta, confidence=config.confidence)
    member = coins.ravel()
    summaries = attack_summaries(scores, coins, config.confidence)
    ids = np.tile(np.flatnonzero(design.audited), coins.shape[0])
    ranked = most_vulnerable(scores, coins, ids, record_ids(pool, config.id_col), config.num_vulnerable)
    conventions = pool_conventions(config, {(result["output_kind"], result["evidence"]) for result in results}, ()) + bound_conventions(config)
    wall = time.perf_counter() - start
    result = MIAResult(
        attacks=tuple(summaries),
        most_vulnerable=ranked,
        ties=top_ties(scores, config.num_vulnerable),
        num_references=k,
        num_records=int(member.size),
        num_members=int(member.sum()),
        num_population=int(design.population.sum()),
        confidence=config.confidence,
        threat_model=THREAT_MODELS[config.mode],
        seeds=tuple(int(result["seed"]) for result in results),
        num_trained=len(jobs) - len(plan.reused),
        resume_note=plan.explanation(),
        wall_time_s=wall,
        backend=backend,
        config=config,
        mode=config.mode,
        bound=bound,
        bound_design=chosen,
        conventions=conventions,
    )
    result = _with_verdict(result, config, bound, next(summary.auc for summary in summaries if summary.attack == chosen.attack), member, chosen.ceiling)
    if claimed_family is not None:  # the headline becomes the order-statistics test of the chosen attack's scores against the family
        family, ceiling = family_headline(
            claimed_family, config, scores[chosen.attack], member, generic=bound, generic_verdict=result.claim_verdict,
            raise_with="more canaries (--canaries)", design=f"{bound.num_canaries} canaries, {bound.confidence:.0%}, 1 test",
        )  # fmt: skip
        result = dataclasses.replace(result, family_test=family, claim_verdict=family.verdict, ceiling=ceiling)
    observations = {"scores": {name: values.ravel() for name, values in scores.items()}, "is_member": member, "record_ids": ids}
    return AuditRun("mia", config, result, observations=observations)


def _with_verdict(result: Any, config: Any, bound: OneRunLowerBound, auc: float, member: np.ndarray, ceiling: float) -> Any:
    """The bound against the user's end-to-end claim, its ceiling, and the AUC's sanity warnings (which change no number)."""
    margin = auc_null_margin(int(member.sum()), int((~member).sum()), config.confidence)
    claim = claim_of(config.claimed_epsilon, config.claimed_delta, delta=config.delta)
    warnings = auc_warnings(auc, margin, members_higher=True, dp_claim=claim is not None, canary_audit=config.mode == "canary")
    raise_with = "more canaries (--canaries)" if config.mode == "canary" else "more trial models (--trial-models)"
    return with_verdict(
        result,
        bound=bound.epsilon,
        bound_delta=bound.delta,
        quantity="end-to-end",
        claim=claim,
        # the design's own perfect attack (untied, through the same guess rule, on these coins): the headline's ceiling too
        ceiling=make_ceiling(bound.epsilon, ceiling, raise_with=raise_with, design=f"{bound.num_canaries} slots, {bound.confidence:.0%}"),
        warnings=warnings,
    )
