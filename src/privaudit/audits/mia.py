"""Membership inference with reference models: LOSS, LiRA and RMIA against a trained classifier.

The audit trains ``num_references`` reference models on random halves of a
pool of records (every record IN exactly half of them), and a target model
on a fair-coin half of the records outside the population samples z. Each
model's logit-scaled confidence φ on every record is the signal; the attacks
of :mod:`privaudit.stats.mia` turn the target's signals, calibrated by the
references', into per-record scores, and :mod:`privaudit.stats.mia_metrics`
reports AUC and TPR at 0%, 0.1% and 1% FPR with Clopper–Pearson intervals.

The training is the user's (``--train package.module:fn``, the contract of
``privaudit audit blackbox --train``: ``fn(x_train, y_train, *, seed) ->
model``) or the built-in overfitted scikit-learn MLP; the pool is the
embedded dataset or the user's ``--data`` file. Models train as jobs of
:func:`privaudit.runner.run_all`, each saved as it finishes, so a killed run
resumes with no finished model retrained and gives identical numbers.

What the numbers are: in ``mode="attack"`` (the default), attack statistics
of this target, not bounds on ε. The headline is the TPR at 1% FPR of online
RMIA, an attack fixed in advance (no attack is selected on the data). In
``mode="canary"`` and ``mode="leave-one-out"`` membership is drawn by fair
coins and the headline is an ε lower bound (:mod:`.mia_bounds`).

>>> MIAConfig(num_references=3)
Traceback (most recent call last):
...
ValueError: `num_references` must be an even integer >= 4, got 3
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .._core.conventions import Convention, checked, default, explicit
from .._core.validation import check_choice, check_count, check_fraction, check_positive, check_probability
from ..runner import RunStore, WorkerDiedError, check_backend, reusable_runs, run_all
from ..stats.mia import loss_scores, rmia_fractions
from ..stats.mia_stream import DEFAULT_CHUNK_RECORDS, lira_scores_streamed, rmia_ratios_streamed, working_bytes
from ..stats.one_run_combined import OneRunLowerBound
from .base import Audit, AuditResult, AuditRun, Headline, Progress, no_progress
from .mia_summaries import (
    ATTACKS,
    FRACTION_KEYS,
    HEADLINE_ATTACK,
    AttackSummary,
    VulnerableRecord,
    attack_summaries,
    most_vulnerable,
    top_ties,
)
from .mia_training import TRAIN_INPUTS, draws, job_inputs, pool_of, preflight, record_ids, train_and_score
from .mia_user import user_references, user_target
from .verdicts import check_claim_fields

__all__ = [
    "AUDIT",
    "ATTACKS",
    "FRACTION_KEYS",
    "HEADLINE_ATTACK",
    "AttackSummary",
    "BoundDesign",
    "MIAAudit",
    "MIAConfig",
    "MIAResult",
    "VulnerableRecord",
    "attack_scores",
    "attack_summaries",
    "evaluate",
    "most_vulnerable",
    "threat_model",
    "top_ties",
]

THREAT_MODEL = "black-box: the target's confidence on each record; reference models trained by the auditor on random halves of the pool; population samples known to be non-members"
DATASETS = ("digits", "breast-cancer")
MIN_RECORDS = 20


@dataclasses.dataclass(frozen=True)
class MIAConfig:
    """What to train and attack; every field is checked on construction.

    ``population_fraction`` of the pool are the RMIA population samples z
    (never in the target, left out of the evaluation; RMIA's scores have
    resolution 1/|z|, and on digits 40% beat 10% at TPR at 1% FPR,
    benchmarks/mia.py); ``offline_a`` is
    RMIA's offline parameter a, ``gamma`` its γ; ``global_variance`` makes
    LiRA fit one variance per side (the paper's choice for few references).
    """

    dataset: str = "digits"
    data: str | None = None  # the user's .npz/.csv/.parquet pool instead of `dataset`
    label_col: str | None = None
    train: str | None = None  # "package.module:fn"; None: the built-in overfitted MLP
    train_input: str = "array"  # what `train` gets as x_train: "array" (float32 NumPy) or "dataframe" (pandas, the file's column names)
    epochs: int = 200  # of the built-in MLP (ignored with `train`)
    num_references: int = 8
    population_fraction: float = 0.4
    offline_a: float = 0.3
    gamma: float = 1.0
    global_variance: bool = True
    confidence: float = 0.95
    num_vulnerable: int = 10
    seed: int = 0
    # the user's trained target instead of one trained by the audit (see privaudit.models.loading)
    model: str | None = None
    model_kind: str = "skops"  # --target-kind
    factory: str | None = None  # with model_kind "torch"
    model_output: str = "auto"  # "auto": checked on the model's outputs; or "logits", "probabilities", "log-probabilities"
    trusted: tuple[str, ...] = ()  # types a skops file may hold beyond scikit-learn's and numpy's (only for files the user trusts)
    members: str | None = None  # the target's training records in the pool (with `model`): row indices, or ids of `id_col`
    members_col: str | None = None  # or a column of the pool, 1 for the target's members (instead of `members`)
    id_col: str | None = None  # a column of the pool holding each record's id (else a record's id is its row)
    # the user's reference models (files of `model_kind` in a directory) and their (k, n) membership .npy: nothing is trained
    reference_models: str | None = None
    reference_membership: str | None = None
    # query augmentations of image records (see privaudit.audits.mia_augment): "flip", "shift"; the images' (C, H, W) unless the embedded dataset declares it
    augment: tuple[str, ...] = ()
    image_shape: tuple[int, int, int] | None = None
    shift_pixels: int = 1
    # ε lower bounds (privaudit.audits.mia_bounds): "attack" (statistics only), "canary" or "leave-one-out"
    mode: str = "attack"
    num_canaries: int = 200  # canaries of mode "canary"
    num_trial_models: int = 4  # trial models of mode "leave-one-out"
    delta: float = 1e-5  # δ of the bound
    claimed_epsilon: float | None = None  # bound modes: the user's end-to-end claim for the training (None: no verdict)
    claimed_delta: float | None = None  # its δ; None: `delta`

    def __post_init__(self) -> None:
        check_claim_fields(self.claimed_epsilon, self.claimed_delta)
        if self.claimed_epsilon is not None and self.mode == "attack":
            raise ValueError("`claimed_epsilon` (--claimed-epsilon) needs a bound mode (--mode canary or leave-one-out): attack mode bounds no ε")
        if self.train is not None:
            from ..models.loading import check_import_path

            check_import_path(self.train, "train")
        check_choice(self.dataset, "dataset", DATASETS)
        check_choice(self.train_input, "train_input", TRAIN_INPUTS)
        if self.label_col is not None and self.data is None:  # the embedded datasets have no columns to name: never ignored
            raise ValueError("`label_col` (--label-col) needs `data` (--data) with a .csv or .parquet file")
        if isinstance(self.num_references, bool) or not isinstance(self.num_references, int) or self.num_references < 4 or self.num_references % 2:
            raise ValueError(f"`num_references` must be an even integer >= 4, got {self.num_references!r}")
        check_count(self.epochs, "epochs", minimum=1)
        if not 0.0 < check_fraction(self.population_fraction, "population_fraction") < 0.5:
            raise ValueError(f"`population_fraction` must be in (0, 0.5), got {self.population_fraction:g}")
        check_fraction(self.offline_a, "offline_a")
        check_positive(self.gamma, "gamma")
        check_probability(self.confidence, "confidence")
        check_count(self.num_vulnerable, "num_vulnerable")
        check_count(self.seed, "seed")
        if (self.model is None) != (self.members is None and self.members_col is None) or None not in (self.members, self.members_col):
            raise ValueError(
                "`model` (--model) and `members` (--members) go together: the user's target and the rows it was trained on "
                "(or `members_col` (--members-col) instead of `members`)"
            )
        if (self.reference_models is None) != (self.reference_membership is None) or (self.reference_models is not None and self.model is None):
            raise ValueError(
                "`reference_models` (--reference-models) needs `reference_membership` (--reference-membership) and the user's target (--model, --members)"
            )
        if self.augment or self.image_shape is not None:
            from .mia_augment import check_augment_settings

            check_augment_settings(self)
        from ..models.loading import KINDS
        from ..models.outputs import OUTPUT_KINDS

        # checked whether or not --model is given: a setting that is not one of the choices is a typo, never ignored
        check_choice(self.model_kind, "model_kind", KINDS)
        check_choice(self.model_output, "model_output", ("auto",) + OUTPUT_KINDS)
        if self.model_kind == "huggingface":
            from .mia_signals_lm import check_text_config

            check_text_config(self)
        from .mia_bounds import check_bound_config

        check_bound_config(self)


@dataclasses.dataclass(frozen=True)
class BoundDesign:
    """How a bound mode chose its attack: on pilot slots the bound does not use (:mod:`.mia_bounds`).

    ``attack`` is the attack the bound uses, the best on the ``num_pilot``
    pilot slots by ``pilot`` (each attack's one-run bound there, then its
    AUC there); the bound uses only the ``num_bounded`` held-out slots, and
    ``ceiling`` is the bound a perfect attack (every slot's score its coin)
    gets on them at the same δ and confidence.
    """

    attack: str
    num_pilot: int
    num_bounded: int
    ceiling: float
    pilot: tuple[tuple[str, float, float], ...] = ()  # (attack, bound, AUC) on the pilot slots


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
    bound_design: BoundDesign | None = None  # the bound modes' attack choice, pilot split and ceiling

    def inert_config_fields(self) -> frozenset[str]:
        """The embedded dataset beside the user's --data; the built-in MLP's epochs beside the user's --train or --model."""
        config = self.config
        inert = set()
        if config.data is not None:
            inert.add("dataset")
        if config.train is not None or config.model is not None or config.reference_models is not None:
            inert.add("epochs")
        return frozenset(inert)

    def attack(self, name: str) -> AttackSummary:
        """The summary of attack ``name`` (one of :data:`ATTACKS`)."""
        check_choice(name, "attack", [summary.attack for summary in self.attacks])
        return next(summary for summary in self.attacks if summary.attack == name)

    def headline(self) -> Headline:
        if self.bound is not None:
            from .mia_bounds import bound_headline

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
        from .mia_augment import augmented_attack_scores

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


def trainer_name(config: Any) -> str:
    """The code that trains the audit's models, as the user named it: "`--train` 'mytrain:train'", or the built-in MLP."""
    return f"`--train` {config.train!r}" if config.train else "the built-in MLP"


def _jobs(config: MIAConfig) -> list[dict[str, Any]]:
    pool = pool_of(config)
    num_population = int(round(config.population_fraction * len(pool.y)))
    base = {key: getattr(config, key) for key in ("dataset", "data", "label_col", "id_col", "members_col", "train", "epochs", "num_references", "seed")}
    base.update(job_inputs(config))
    if config.train_input != "array":  # only then: runs stored before the option existed resume unchanged
        base["train_input"] = config.train_input
    if config.augment:  # only then: runs stored without augmentations resume unchanged
        base.update(augment=list(config.augment), image_shape=config.image_shape and list(config.image_shape), shift_pixels=config.shift_pixels)
    if config.reference_models is not None:  # the user's references: nothing to train
        return []
    models = config.num_references + (1 if config.model is None else 0)  # the last job trains the target, unless it is the user's
    return [dict(base, num_population=num_population, index=index) for index in range(models)]


def _conventions(config: MIAConfig, output_kinds: set[tuple[str, str]], target: tuple[Convention, ...]) -> tuple[Convention, ...]:
    if config.data is None:
        label = default("label column", "the embedded dataset's target", f"scikit-learn's {config.dataset} labels")
    else:
        read = pool_of(config).label
        assert read is not None  # the tabular reader records how it decided the label column
        label = read
    if config.id_col is None:
        record_id = default("record id", "row index in the pool (from 0)", "the pool names no id column (--id-col)")
    else:
        record_id = explicit("record id", f"column {config.id_col!r} of --data", "--id-col")
    pool_conventions: tuple[Convention, ...] = (label, record_id)
    if config.augment:
        from .mia_augment import augment_spec

        spec = augment_spec(config, pool_of(config))
        assert spec is not None
        views = explicit("query augmentations", f"{spec.num_views} views ({', '.join(spec.augment)}; shifts of {spec.shift} px, border reflected)", "--augment")
        pool_conventions += (spec.convention, views)
    if config.reference_models is not None:  # the references are read like the target
        membership = explicit("reference membership", "rows of --reference-membership, models in file-name order", "--reference-membership")
        return (*pool_conventions, membership) + target + (default("score direction", "higher is member", "each attack's score is built so"),)
    kinds = sorted(output_kinds)
    if len({kind for kind, _ in kinds}) != 1:
        raise ValueError(f"`--train` must return models of one output kind, got {', '.join(sorted({kind for kind, _ in kinds}))}")
    output = checked("output kind", kinds[0][0], f"every model: {kinds[0][1]}" if len(kinds) == 1 else f"every model ({len(kinds)} checks), e.g. {kinds[0][1]}")
    score = default("score direction", "higher is member", "each attack's score is built so (likelihood ratio, fraction of z dominated, minus the loss)")
    return (*pool_conventions, output, score) + target


def run_mia_audit(config: MIAConfig, directory: Any, *, backend: str = "local", max_workers: int | None = None, address: str | None = None) -> AuditRun:
    """Train (or resume) every model into ``directory``, attack the target, and return the run."""
    if config.mode != "attack":  # membership drawn by fair coins, and an ε lower bound
        from .mia_bounds import run_bound_audit

        return run_bound_audit(config, directory, backend=backend, max_workers=max_workers, address=address)
    store = RunStore(directory)
    jobs = _jobs(config)
    already = len(reusable_runs(store, jobs))
    start = time.perf_counter()
    results = run_all(train_and_score, jobs, store=store, backend=backend, max_workers=max_workers, address=address, who=trainer_name(config))
    wall = time.perf_counter() - start
    pool = pool_of(config)
    num_population = int(round(config.population_fraction * len(pool.y)))
    signals: list[np.ndarray]  # one row per model, the target's last
    if config.reference_models is not None:
        references, membership = user_references(config, pool)
        signals, k = list(references), len(membership)
    else:
        k = config.num_references
        signals = [result["signals"] for result in results]  # rows memory-mapped from the store's .npy files
        population, target_members, membership = draws(config.seed, len(pool.y), k, num_population)
    target_conventions: tuple[Convention, ...] = ()
    if config.model is not None:  # the user's target: its own signals and membership
        target_signals, population, target_members, target_conventions = user_target(config, len(pool.y), num_population)
        signals = [*signals, target_signals]
    observations = evaluate(signals[k], signals[:k], membership, population, target_members, config)
    scores, is_member, ids = observations["scores"], observations["is_member"], observations["record_ids"]
    summaries = attack_summaries(scores, is_member, config.confidence)
    result = MIAResult(
        attacks=tuple(summaries),
        most_vulnerable=most_vulnerable(scores, is_member, ids, record_ids(pool, config.id_col), config.num_vulnerable),
        ties=top_ties(scores, config.num_vulnerable),
        num_references=k,
        num_records=int(ids.size),
        num_members=int(is_member.sum()),
        num_population=int(population.sum()),
        confidence=config.confidence,
        threat_model=threat_model(config),
        seeds=tuple(int(result["seed"]) for result in results),
        num_trained=len(jobs) - already,
        wall_time_s=wall,
        backend=backend,
        config=config,
        conventions=_conventions(config, {(result["output_kind"], result["evidence"]) for result in results}, target_conventions),
    )
    return AuditRun(AUDIT.name, config, result, observations=observations)


class MIAAudit(Audit):
    """LOSS, LiRA and RMIA with reference models trained on random halves of the pool, resumably."""

    name = "mia"
    title = "Membership inference (LiRA, RMIA, reference models)"
    description = "Membership inference with reference models: LOSS, LiRA online/offline and RMIA online/offline against a trained classifier."
    config_type = MIAConfig
    result_type = MIAResult
    default_resource = "mia.json"
    requires = ("sklearn",)
    checkpointed = True
    tiny_overrides = {"num_references": 4, "epochs": 20}

    def memory_estimate(self, config: MIAConfig) -> tuple[int, str]:
        # the models' signals stay in the store's .npy files and are streamed: a chunk of records at a time,
        # plus per record the membership draws (1 byte per reference) and a dozen 8-byte vectors (7 score vectors, indices, ratios)
        if config.model_kind == "huggingface":  # a text pool
            from .mia_signals_lm import read_text_pool

            records = len(read_text_pool(str(config.data)))
        else:
            records = len(pool_of(config).y)
        working = working_bytes(config.num_references, min(records, DEFAULT_CHUNK_RECORDS))
        return working + records * (config.num_references + 96), f"`num_references` = {config.num_references} on {records} records"

    def run(
        self,
        config: MIAConfig,
        *,
        progress: Progress | None = None,
        checkpoints: Any = None,
        backend: str = "local",
        max_workers: int | None = None,
        address: str | None = None,
    ) -> AuditRun:
        """Train and score every model; finished models are kept in ``checkpoints`` (a directory) and resumed from it."""
        check_backend(backend, max_workers, address)
        from .._core.extras import require

        if config.model_kind == "huggingface":  # a text pool under the user's causal LMs: nothing to train
            from .mia_signals_lm import run_text_pool_audit

            return run_text_pool_audit(config, progress=progress)
        require("sklearn", purpose="the mia audit")
        pool = pool_of(config)  # an unreadable --data is refused here
        if round(config.population_fraction * len(pool.y)) < 1 or len(pool.y) < MIN_RECORDS:
            raise ValueError(f"`--data` must hold at least {MIN_RECORDS} records (population samples and members and non-members to attack), got {len(pool.y)}")
        if round(config.population_fraction * len(pool.y)) < 2:  # each z is scored against the others
            raise ValueError(
                f"`population_fraction` must leave at least 2 population samples z in the pool, got {round(config.population_fraction * len(pool.y))} "
                f"of {len(pool.y)} records at {config.population_fraction:g}"
            )
        record_ids(pool, config.id_col)  # unique ids, before any model trains
        from .mia_augment import augment_spec

        augment_spec(config, pool)  # the image shape that --augment needs
        from .mia_bounds import check_bound_pool

        check_bound_pool(config, len(pool.y), int(round(config.population_fraction * len(pool.y))))
        if config.model is not None:  # the user's target and its members, checked (and scored) before any model trains
            user_target(config, len(pool.y), int(round(config.population_fraction * len(pool.y))))
        if config.reference_models is not None:  # and the user's references with their membership matrix
            user_references(config, pool)
        if config.train is not None:  # so is a training function that does not import or returns no model, before any folder exists
            preflight(config.train, pool, config.train_input)
        trainer = f"--train {config.train}" if config.train else "the built-in MLP"
        (progress or no_progress)("training models", detail=f"{config.num_references} references and the target ({trainer}), backend {backend}")
        created = [] if checkpoints is None else [path for path in (Path(checkpoints), *Path(checkpoints).parents) if not path.exists()]
        try:
            with tempfile.TemporaryDirectory() as scratch:
                return run_mia_audit(config, scratch if checkpoints is None else checkpoints, backend=backend, max_workers=max_workers, address=address)
        except WorkerDiedError as error:  # the user's code ended its process: keep the finished models for a rerun
            raise ValueError(str(error)) from error
        except (ValueError, RuntimeError) as error:
            cause = error if isinstance(error, ValueError) else error.__cause__
            if not isinstance(cause, ValueError):  # a crash, not bad settings: keep the finished models for a rerun
                raise
            for path in created:  # bad settings: leave no folder this call created
                shutil.rmtree(path, ignore_errors=True)
            raise ValueError(str(cause)) from cause


AUDIT = MIAAudit()
