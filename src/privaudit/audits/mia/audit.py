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

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..._core.conventions import Convention
from ..._core.extras import require
from ...runner import RunStore, WorkerDiedError, resume_plan, run_all
from ...stats.mia_stream import DEFAULT_CHUNK_RECORDS, working_bytes
from ..base import AuditRun, BackendAudit, Progress, no_progress
from .augment import augment_spec
from .bounds import check_bound_pool, run_bound_audit
from .config import MIN_RECORDS, MIAConfig
from .conventions import pool_conventions
from .result import MIAResult, evaluate, threat_model
from .signals_lm import read_text_pool, run_text_pool_audit
from .summaries import ATTACKS, FRACTION_KEYS, HEADLINE_ATTACK, AttackSummary, VulnerableRecord, attack_summaries, most_vulnerable, top_ties
from .training import applied_job_fields, draws, job_inputs, pool_of, preflight, record_ids, train_and_score
from .user import user_blind_baseline, user_references, user_target

__all__ = [
    "ATTACKS",
    "AUDIT",
    "AttackSummary",
    "FRACTION_KEYS",
    "HEADLINE_ATTACK",
    "MIAAudit",
    "VulnerableRecord",
    "attack_summaries",
    "most_vulnerable",
    "top_ties",
]


def trainer_name(config: Any) -> str:
    """The code that trains the audit's models, as the user named it: "`--train` 'mytrain:train'", or the built-in MLP."""
    return f"`--train` {config.train!r}" if config.train else "the built-in MLP"


def _jobs(config: MIAConfig) -> list[dict[str, Any]]:
    pool = pool_of(config)
    num_population = int(round(config.population_fraction * len(pool.y)))
    base = applied_job_fields(config, ("dataset", "data", "label_col", "id_col", "members_col", "train", "epochs", "num_references", "seed"))
    base.update(job_inputs(config))
    if config.train_input != "array":  # only then: runs stored before the option existed resume unchanged
        base["train_input"] = config.train_input
    if config.augment:  # only then: runs stored without augmentations resume unchanged
        base.update(augment=list(config.augment), image_shape=config.image_shape and list(config.image_shape), shift_pixels=config.shift_pixels)
    if config.reference_models is not None:  # the user's references: nothing to train
        return []
    models = config.num_references + (1 if config.model is None else 0)  # the last job trains the target, unless it is the user's
    return [dict(base, num_population=num_population, index=index) for index in range(models)]


def run_mia_audit(config: MIAConfig, directory: Any, *, backend: str = "local", max_workers: int | None = None, address: str | None = None) -> AuditRun:
    """Train (or resume) every model into ``directory``, attack the target, and return the run."""
    if config.mode != "attack":  # membership drawn by fair coins, and an ε lower bound
        return run_bound_audit(config, directory, backend=backend, max_workers=max_workers, address=address)
    start = time.perf_counter()  # the whole audit's wall time, reused models included (a rerun's own time, not only its training's)
    store = RunStore(directory)
    jobs = _jobs(config)
    plan = resume_plan(store, jobs)
    results = run_all(train_and_score, jobs, store=store, backend=backend, max_workers=max_workers, address=address, who=trainer_name(config))
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
    ranked = most_vulnerable(scores, is_member, ids, record_ids(pool, config.id_col), config.num_vulnerable)
    # the user gave the membership: can the records alone, without the model, tell the members from the rest?
    blind = user_blind_baseline(pool, config, is_member) if config.model is not None else None
    wall = time.perf_counter() - start
    result = MIAResult(
        attacks=tuple(summaries),
        most_vulnerable=ranked,
        ties=top_ties(scores, config.num_vulnerable),
        num_references=k,
        num_records=int(ids.size),
        num_members=int(is_member.sum()),
        num_population=int(population.sum()),
        confidence=config.confidence,
        threat_model=threat_model(config),
        seeds=tuple(int(result["seed"]) for result in results),
        num_trained=len(jobs) - len(plan.reused),
        resume_note=plan.explanation(),
        wall_time_s=wall,
        backend=backend,
        config=config,
        conventions=pool_conventions(config, {(result["output_kind"], result["evidence"]) for result in results}, target_conventions),
        blind_baseline=blind,
        sanity_warnings=() if blind is None or blind.warning() is None else (str(blind.warning()),),
    )
    return AuditRun(AUDIT.name, config, result, observations=observations)


class MIAAudit(BackendAudit):
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
            records = len(read_text_pool(str(config.data)))
        else:
            records = len(pool_of(config).y)
        working = working_bytes(config.num_references, min(records, DEFAULT_CHUNK_RECORDS))
        return working + records * (config.num_references + 96), f"`num_references` = {config.num_references} on {records} records"

    def run_on(self, config: MIAConfig, *, progress: Progress | None, checkpoints: Any, backend: str, max_workers: int | None, address: str | None) -> AuditRun:
        """Train and score every model; finished models are kept in ``checkpoints`` (a directory) and resumed from it."""
        if config.model_kind == "huggingface":  # a text pool under the user's causal LMs: nothing to train
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

        augment_spec(config, pool)  # the image shape that --augment needs

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
