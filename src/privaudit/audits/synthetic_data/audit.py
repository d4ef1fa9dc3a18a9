"""The synthetic-data audit's run: tables checked, the release made or read, every attack scored, DCR beside them, the bound.

Order of work: the tables are read and their schemas checked, the
generator imported and probed once on a small sample, and only then is
anything generated. Members are the training table's records, non-members
the holdout's evaluation part; the attacks see only the synthetic table,
the attacker's population sample (the holdout's reference part) and, with a
generator, its retraining on shadow data.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..._core.conventions import Convention, checked, default, explicit
from ..._core.seeding import child_seeds
from ..._core.stated_claims import describe, stated_claim, stated_warning
from ..._core.usercode import call_user
from ...runner import WorkerDiedError
from ...stats.mia_metrics import DEFAULT_FPR, attack_metrics, supported_fpr
from ...stats.verdict import Claim
from ..base import AuditRun, BackendAudit, Progress, no_progress
from ..blind import blind_baseline
from ..family_test import FamilyPlan, FamilyTest, family_plan, family_test
from .attacks import dcr_distances, dcr_statistics, domias_knn_scores, domias_scores, outlier_scores, robust_dcr_scores
from .bound import binning_power_warning, canary_bound, canary_signal, generator_canaries
from .cell_canaries import cell_canaries, has_binning, home_count, shared_homes_warning
from .decision import DECISION_ATTACKS, steward_decision
from .generation import PROBE_ROWS, generate, load_generator, make_canaries, probe_generator
from .kinds import kind_conventions, with_kinds
from .marginals import cells_of, marginal_scores
from .sdmetrics_dcr import sdmetrics_dcr, sdmetrics_installed
from .shadow import shadow_scores
from .table import Encoder, Table, check_same_schema, read_frame, read_table, schema_conventions
from .types import ATTACKS, BUILTIN_GENERATOR, HEADLINE_ATTACK, CanaryBound, ExposedRecord, SyntheticAttack, SyntheticDataConfig, SyntheticDataResult

__all__ = ["AUDIT", "SyntheticDataAudit", "embedded_tables", "run_synthetic_data"]

DESCRIPTIONS = {
    "robust-dcr": "the headline: minus the distance to the closest synthetic row, each number's difference in the population's IQRs capped at 1, "
    "categories 0/1, the mean over columns; plus 0.1 x the same distance to the population sample",
    "domias": "DOMIAS: density of the synthetic table over the population's at the record, by nearest-neighbour distances on the numeric embedding",
    "domias-kde": "DOMIAS with Gaussian KDEs (Scott's bandwidths) on the numeric embedding",
    "marginals": "marginal attack (after Golob et al. 2024): the sum over column pairs of the log ratio of the record's two-way cell, synthetic over population",
    "dcr": "DCR as a per-record score: minus the distance to the closest synthetic row",
    "shadow": "shadow generators (TAPAS): a logistic regression on nearest-neighbour counts and marginal answers, trained on shadow releases",
}
MIN_TRAIN, MIN_HOLDOUT, MIN_CANARIES = 10, 8, 10


def embedded_tables(seed: int) -> tuple[Table, Table]:
    """The embedded default's tables: scikit-learn's wine (its class as a category), split in halves by ``seed``, ids 'wine-000'..."""
    from sklearn.datasets import load_wine  # optional (the sklearn extra); ships with scikit-learn, never downloaded

    frame = load_wine(as_frame=True).frame
    frame["target"] = frame["target"].map(lambda v: f"cultivar_{v}").astype(object)
    frame.insert(0, "id", [f"wine-{i:03d}" for i in range(len(frame))])
    order = np.random.default_rng(seed).permutation(len(frame))
    half = len(frame) // 2
    return (
        read_frame(frame.iloc[np.sort(order[:half])].reset_index(drop=True), "--train", id_col="id"),
        read_frame(frame.iloc[np.sort(order[half:])].reset_index(drop=True), "--holdout", id_col="id"),
    )


def _inputs(config: SyntheticDataConfig) -> tuple[Table, Table, Table | None, str | None, Table | None]:
    """(train, holdout, the released table or None, the generator's import path or None, the user's canaries or None), all checked before any generation."""
    if config.train is None:
        train, holdout = embedded_tables(config.seed)
    else:
        train = read_table(config.train, "--train", id_col=config.id_col)
        holdout = read_table(config.holdout, "--holdout", id_col=config.id_col)
    train = with_kinds(train, config.categorical, config.numeric, "--train")
    holdout = check_same_schema(train, _kinds(config, holdout, "--holdout"), "--holdout")
    if len(train) < MIN_TRAIN or len(holdout) < MIN_HOLDOUT:
        raise ValueError(f"`--train` must hold >= {MIN_TRAIN} records and `--holdout` >= {MIN_HOLDOUT}, got {len(train)} and {len(holdout)}")
    for ids, name in ((train.ids, "--train"), (holdout.ids, "--holdout")):
        if len(set(ids)) != len(ids):
            raise ValueError(f"`--id-col` {config.id_col!r} must be unique in `{name}`, got repeated ids")
    released = None
    if config.synthetic is not None:
        import pandas as pd  # optional (the parquet extra)

        raw = read_table(config.synthetic, "--synthetic")
        frame = raw.frame.drop(columns=[config.id_col]) if config.id_col is not None and config.id_col in raw.frame.columns else raw.frame
        released = check_same_schema(train, _kinds(config, read_frame(pd.DataFrame(frame), "--synthetic"), "--synthetic"), "--synthetic")
    generator = config.generator or (BUILTIN_GENERATOR if config.synthetic is None else None)
    canaries = None
    if config.canary_records is not None:
        canaries = check_same_schema(train, _kinds(config, read_table(config.canary_records, "--canary-records"), "--canary-records"), "--canary-records")
        if len(canaries) < MIN_CANARIES:
            raise ValueError(f"`--canary-records` must hold >= {MIN_CANARIES} records, got {len(canaries)}")
    return train, holdout, released, generator, canaries


def _kinds(config: SyntheticDataConfig, table: Table, name: str) -> Table:
    """``table`` read with the user's --categorical/--numeric, as --train was (its columns are checked against --train's next)."""
    return with_kinds(table, config.categorical, config.numeric, name, check_names=False)


def _summary(name: str, scores: np.ndarray, member: np.ndarray, confidence: float) -> SyntheticAttack:
    metrics = attack_metrics(scores, member, fpr=DEFAULT_FPR, confidence=confidence)
    kept = [supported_fpr(float(f), metrics.num_out) for f in metrics.fpr]
    tpr, low, high = (
        tuple(float(v) if keep else None for v, keep in zip(array, kept, strict=True)) for array in (metrics.tpr, metrics.tpr_low, metrics.tpr_high)
    )
    return SyntheticAttack(
        name,
        float(metrics.auc),
        fpr=tuple(float(v) for v in metrics.fpr),
        tpr=tpr,
        tpr_low=low,
        tpr_high=high,
        num_members=int(member.sum()),
        num_non_members=int((~member).sum()),
        description=DESCRIPTIONS[name],
    )


def run_synthetic_data(
    config: SyntheticDataConfig,
    *,
    progress: Progress | None = None,
    checkpoints: Any = None,
    backend: str = "local",
    max_workers: int | None = None,
    address: str | None = None,
) -> AuditRun:
    """Run the audit (see the module's docstring); shadow generations are kept in ``checkpoints`` and resumed from it."""
    started = time.perf_counter()
    report = progress or no_progress
    seeds = child_seeds(config.seed, ["release", "split", "dcr", "shadows", "canaries", "coins", "bound-release", "probe"])
    claimed_family = family_plan(config)  # the claim's own family, built (its claim checked) before any table is read
    train, holdout, released, generator, user_canaries = _inputs(config)
    function = None
    if generator is not None:
        function = load_generator(generator)
        if config.num_canaries or user_canaries is not None:
            _claim(config)  # a claim the bound cannot be held against is refused before any generation
        if getattr(function, "known_contract", None) is None:  # privaudit's own adapters keep the contract; their fits cost the domain, not the rows
            report("probing your generator", detail="one call on at most 50 training rows")
            probe_generator(function, train, seed=seeds["probe"])
    n = config.num_synthetic or len(train)
    if released is None:
        assert function is not None
        report("generating the synthetic table", detail=f"{n} rows")
        released = generate(function, train.frame, train, seed=seeds["release"], n=n)
    order = np.random.default_rng(seeds["split"]).permutation(len(holdout))
    cut = int(round(config.reference_fraction * len(holdout)))
    if cut < 2 or len(holdout) - cut < 2:
        raise ValueError(f"`--holdout` must leave >= 2 records on each side of --reference-fraction {config.reference_fraction:g}, got {len(holdout)} records")
    reference, outside = (_rows(holdout, np.sort(order[:cut])), _rows(holdout, np.sort(order[cut:])))
    encoder = Encoder.fit(train, holdout, released)
    records = Table(_concat(train, outside), np.concatenate([train.ids, outside.ids]), train.schema)
    member = np.arange(len(records)) < len(train)
    report("scoring every record", detail=f"{member.sum()} members, {(~member).sum()} non-members")
    embedded = encoder.embedding(records)
    robust = encoder.robust_scale(reference)  # the attacker's population sample sets the scales: no scored record does
    cells, sizes = cells_of(encoder, records, reference)  # and the marginal attack's bins
    records_robust, released_robust = encoder.dcr_arrays(records, robust), encoder.dcr_arrays(released, robust)
    closest = dcr_distances(records_robust, released_robust)  # 0: an exact copy in the release
    scores = {
        "robust-dcr": robust_dcr_scores(records_robust, released_robust, encoder.dcr_arrays(reference, robust), closest=closest),
        "domias": domias_knn_scores(embedded, encoder.embedding(released), encoder.embedding(reference)),
        "domias-kde": domias_scores(embedded, encoder.embedding(released), encoder.embedding(reference)),
        "marginals": marginal_scores(cells, cells_of(encoder, released, reference)[0], cells_of(encoder, reference, reference)[0], sizes=sizes),
        "dcr": -dcr_distances(encoder.dcr_arrays(records), encoder.dcr_arrays(released)),
    }
    outlying = outlier_scores(embedded, encoder.embedding(reference))
    summaries = [_summary(name, scores[name], member, config.confidence) for name in scores]
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = {name: (scores[name], member) for name in scores}
    num_categories = tuple(len(c) for c in encoder.categories)
    dcr = dcr_statistics(
        encoder.dcr_arrays(released), encoder.dcr_arrays(train), encoder.dcr_arrays(holdout), num_categories, np.random.default_rng(seeds["dcr"])
    )
    if config.sdmetrics and sdmetrics_installed():
        report(
            "sdmetrics' DCR scores", detail=f"its own DCRBaselineProtection and DCROverfittingProtection on {len(released)} rows (--no-sdmetrics skips them)"
        )
        sdmetrics_baseline, sdmetrics_overfitting = sdmetrics_dcr(train, holdout, released, seed=seeds["dcr"])
        dcr = dataclasses.replace(dcr, sdmetrics_baseline_protection=sdmetrics_baseline, sdmetrics_overfitting_protection=sdmetrics_overfitting)
    shadow_rows: np.ndarray = np.zeros(0, dtype=np.int64)
    shadow_values = np.zeros(0)
    shadow_generated, resume_note = 0, ""
    if generator is not None and config.num_shadows:
        half = config.num_shadow_targets // 2
        by_outlier = np.argsort(-outlying, kind="stable")
        shadow_rows = np.concatenate([by_outlier[member[by_outlier]][: config.num_shadow_targets - half], by_outlier[~member[by_outlier]][:half]])
        report("running the shadow generators", detail=f"{config.num_shadows} per target, {len(shadow_rows)} targets, backend {backend}")
        with tempfile.TemporaryDirectory() as scratch, _worker_death_as_error():
            shadow_values, plan = shadow_scores(
                reference=reference,
                targets=_rows(records, shadow_rows),
                released=released,
                encoder=encoder,
                generator=generator,
                num_shadows=config.num_shadows,
                n=n,
                seed=seeds["shadows"],
                directory=Path(checkpoints) if checkpoints is not None else Path(scratch),
                backend=backend,
                max_workers=max_workers,
                address=address,
            )
        shadow_generated, resume_note = len(shadow_rows) * config.num_shadows - len(plan.reused), plan.explanation()
        summaries.append(_summary("shadow", shadow_values, member[shadow_rows], config.confidence))
        curves["shadow"] = (shadow_values, member[shadow_rows])
    bound = family = None
    if config.num_canaries or user_canaries is not None:
        assert function is not None
        bound, family, power = _bound(config, function, train, user_canaries, seeds, bound_rows(config, function, len(train)), report, claimed_family)
    shadow_of = dict(zip(shadow_rows.tolist(), shadow_values.tolist(), strict=True))
    top = np.argsort(-scores[HEADLINE_ATTACK], kind="stable")[: config.num_vulnerable]
    exposed = tuple(
        ExposedRecord(
            record_id=str(records.ids[i]),
            member=bool(member[i]),
            score=float(scores[HEADLINE_ATTACK][i]),
            outlier_score=float(outlying[i]),
            attack_scores=(*(float(scores[name][i]) for name in ATTACKS if name != "shadow"), shadow_of.get(int(i))),
        )
        for i in top
    )
    source = (
        f"--synthetic {config.synthetic}"
        if config.synthetic is not None
        else f"--generator {generator}" + (" (the embedded default)" if config.train is None else "")
    )
    result = SyntheticDataResult(
        config=config,
        source=source,
        schema=train.schema,
        num_train=len(train),
        num_reference=len(reference),
        num_non_members=len(outside),
        num_synthetic=len(released),
        attacks=tuple(summaries),
        dcr=dcr,
        most_exposed=exposed,
        shadow_targets=tuple(str(records.ids[i]) for i in shadow_rows),
        selection="the most outlying records first (Meeus et al. 2023): highest minus log density under the population's KDE, half members and half non-members",
        bound=bound,
        threat_model=_threat_model(config, generator, probed=function is not None and getattr(function, "known_contract", None) is None),
        seconds=time.perf_counter() - started,
        num_shadow_runs=len(shadow_rows) * config.num_shadows if len(shadow_rows) else 0,
        num_trained=shadow_generated,
        resume_note=resume_note,
        conventions=_conventions(config, train, encoder, generator, function, bound),
        decision=steward_decision({name: scores[name] for name in DECISION_ATTACKS}, member, records.ids, closest, confidence=config.confidence),
        family_test=family,
    )
    if bound is not None:
        result = dataclasses.replace(result, sanity_warnings=(*result.sanity_warnings, *_stated_claim_note(config, function), *filter(None, [power])))
    if config.train is not None:  # the user's split: can the records alone, without the synthetic table, tell --train from --holdout?
        blind = blind_baseline(_concat(train, holdout), np.arange(len(train) + len(holdout)) < len(train), seed=config.seed)
        result = dataclasses.replace(result, blind_baseline=blind, sanity_warnings=(*result.sanity_warnings, *filter(None, [blind.warning()])))
    observations = {"curves": curves}
    return AuditRun("synthetic-data", config, result, observations=observations)


@contextlib.contextmanager
def _worker_death_as_error() -> Iterator[None]:
    """A shadow worker the generator ended (``os._exit`` bound before the call, a crash) is one error line; the finished runs stay."""
    try:
        yield
    except WorkerDiedError as error:
        raise ValueError(str(error)) from error


def _claim(config: SyntheticDataConfig) -> Claim | None:
    """The claim the bound is held against: the user's ``--claimed-epsilon`` (and ``--claimed-delta``), else None.

    A claim is never read from the generator under audit: its own ``claim``
    attribute (dpmm's adapters) is only named in a warning (:func:`_stated_claim_note`).
    """
    if config.claimed_epsilon is None:
        return None
    claim = Claim(config.claimed_epsilon, config.delta if config.claimed_delta is None else config.claimed_delta, quantity="per-release")
    if claim.delta > config.delta:
        raise ValueError(f"`--delta` ({config.delta:g}) must be >= `--claimed-delta` ({claim.delta:g}): the claim says nothing at a smaller δ")
    return claim


def _stated_claim_note(config: SyntheticDataConfig, function: Any) -> tuple[str, ...]:
    """The (ε, δ) a generator states for itself, named as evidence: with no --claimed-epsilon, with the flags that would test it; else when it differs from yours."""
    if config.claimed_epsilon is not None:
        delta = config.delta if config.claimed_delta is None else config.claimed_delta
        warning = stated_warning(function, "your --generator", user_epsilon=config.claimed_epsilon, user_delta=delta)
        return () if warning is None else (warning,)
    stated = stated_claim(function)
    if stated is None or "epsilon" not in stated:
        return ()
    return (
        f"no verdict: your --generator states {describe(stated)} per release in its own `claim` attribute, but a claim is "
        f"yours to give, never read from what is audited: pass --claimed-epsilon {stated['epsilon']:g} --claimed-delta {stated.get('delta', 0.0):g} to compare",
    )


#: the bound's generation from a generator that states its binning, in training rows, unless --num-synthetic says otherwise
BINNED_BOUND_ROWS = 4


def bound_rows(config: SyntheticDataConfig, function: Any, train_rows: int) -> int:
    """Rows of the bound's one generation: ``--num-synthetic``; else, for a generator that states its binning, :data:`BINNED_BOUND_ROWS` × the training rows; else the training rows.

    A marginal-based generator keeps an included canary as a count of about
    1 in its home cell, which a release of n rows shows about n ÷ (training
    rows) times: a few times the training rows show it more surely, and
    sampling more rows from the fitted model is post-processing of it.
    """
    if config.num_synthetic:
        return int(config.num_synthetic)
    return BINNED_BOUND_ROWS * train_rows if has_binning(function) else train_rows


def _bound(
    config: SyntheticDataConfig,
    function: Any,
    train: Table,
    user_canaries: Table | None,
    seeds: dict[str, int],
    n: int,
    report: Progress,
    plan: FamilyPlan | None,
) -> tuple[CanaryBound, FamilyTest | None, str | None]:
    """privaudit's outliers or the user's canaries, by fair coins into the training table, one generation, the one-run bound and, with ``plan``, the family test."""
    cells = user_canaries is None and has_binning(function) and home_count(function, train.frame) > 0  # else the outliers, and the power warning
    if cells:
        canaries = cell_canaries(function, train.frame, config.num_canaries, np.random.default_rng(seeds["canaries"]))
        what = f"{config.num_canaries} canaries in cells of the generator's binning that the training table leaves empty, included by fair coins"
    elif user_canaries is None:
        canaries = make_canaries(train, config.num_canaries, np.random.default_rng(seeds["canaries"]))
        what = f"{config.num_canaries} outliers of the schema (each number beyond the training range, a training category), included by fair coins"
    else:
        canaries = user_canaries.frame
        what = f"the {len(canaries)} records of --canary-records {config.canary_records}, included by fair coins"
    # before the generation: the generator's binning is known now
    power = shared_homes_warning(function, train.frame, config.num_canaries) if cells else binning_power_warning(function, train.frame, canaries)
    report("generating with the canaries", detail=f"{len(canaries)} canaries, each included by a fair coin")
    scores, included = generator_canaries(function, train, canaries, coins_seed=seeds["coins"], release_seed=seeds["bound-release"], n=n)
    bound = canary_bound(
        scores,
        included,
        delta=config.delta,
        confidence=config.confidence,
        claim=_claim(config),
        canaries=what,
        coins_seed=seeds["coins"],
        signal=canary_signal(function),
    )
    if plan is None:
        return bound, None, power
    # the claim's own family: the headline, on the same canaries' scores, the generic bound and its verdict beside it
    return bound, family_test(plan, config, scores, included, generic=bound.bound, generic_verdict=bound.verdict, quantity="per-release"), power


def _rows(table: Table, rows: np.ndarray) -> Table:
    return Table(table.frame.iloc[rows].reset_index(drop=True), table.ids[rows], table.schema)


def _concat(*tables: Table) -> Any:
    import pandas as pd  # optional (the parquet extra)

    return pd.concat([table.frame for table in tables], ignore_index=True)


def _threat_model(config: SyntheticDataConfig, generator: str | None, *, probed: bool) -> str:
    seen = "the released synthetic table and a population sample (the holdout's reference part)"
    if config.synthetic is not None:
        return f"no-box: {seen}; the generator is not available"
    probe = f", after one call on at most {PROBE_ROWS} training rows that checks its contract (not part of any attack)" if probed else ""
    uses = [f"on shadow data ({config.num_shadows} shadow datasets per target)"] if config.num_shadows else []
    if config.num_canaries or config.canary_records is not None:
        uses.append("on the training table with canaries, for the bound")
    if not uses:  # name only what this run did: no shadows, no canaries
        return f"{seen}; the auditor runs the generator ({generator}) only for the release{probe}"
    return f"{seen}, and the generator ({generator}) retrained by the auditor " + " and ".join(uses) + probe


def _conventions(
    config: SyntheticDataConfig, train: Table, encoder: Encoder, generator: str | None, function: Any, bound: CanaryBound | None
) -> tuple[Convention, ...]:
    source = "--synthetic" if config.synthetic is not None else "the generator's output"
    conventions = list(schema_conventions(train, encoder, id_col=config.id_col, reference_fraction=config.reference_fraction, source=source))
    conventions.extend(kind_conventions(train, config.categorical, config.numeric))
    conventions.append(default("score direction", "higher is member", "each attack's score is built so (density ratio, minus a distance, a probability)"))
    if generator is not None:
        how = (
            explicit("generator", generator, "--generator")
            if config.generator
            else default("generator", generator, "the embedded default's built-in Gaussian copula")
        )
        conventions.append(how)
        known = getattr(function, "known_contract", None)
        conventions.append(
            checked(
                "generator contract",
                "fn(train_df, *, seed, n) -> a table of train_df's columns and kinds, n rows",
                "one probe call on <= 50 rows, then every call" if known is None else f"every call (no probe: {known})",
            )
        )
        own = getattr(function, "conventions", None)  # what the generator decided on the table itself (SDV's detected sdtypes)
        if callable(own):
            decided = call_user("--generator", f"{generator} (its conventions attribute)", own, train.frame.copy())
            if not isinstance(decided, (tuple, list)) or not all(isinstance(item, Convention) for item in decided):
                raise ValueError(f"`--generator` {generator!r}: its conventions attribute must return a tuple of Convention, got {type(decided).__name__}")
            conventions.extend(decided)
    if config.num_canaries or config.canary_records is not None:
        conventions.append(
            default(
                "claim's unit", "ε per release, for one record (one canary = one record)", "the bound is of one generation; the claim is compared like for like"
            )
        )
        if config.num_synthetic is None and function is not None and has_binning(function):
            conventions.append(
                default(
                    "rows of the bound's generation",
                    f"{bound_rows(config, function, len(train))} ({BINNED_BOUND_ROWS} × the training rows)",
                    "the generator states its binning: an included canary is a count of about 1 in its home cell, which more rows show more surely "
                    "(sampling more rows from the fitted model is post-processing); --num-synthetic sets it",
                )
            )
    if bound is not None and bound.verdict is not None:
        claim = bound.verdict.claim
        conventions.append(explicit("claim", f"ε = {claim.epsilon:g}, δ = {claim.delta:g} per release", "--claimed-epsilon/--claimed-delta"))
    return tuple(conventions)


class SyntheticDataAudit(BackendAudit):
    """Membership inference on released synthetic tabular data, DCR's verdict beside it, and the one-run ε bound of a DP generator."""

    name = "synthetic-data"
    title = "Released synthetic tabular data (robust DCR, DOMIAS, DCR, shadow generators, one-run ε)"
    description = "Audit of a synthetic table or a tabular generator: per-record attacks (robust DCR, DOMIAS, DCR, shadow generators) at low FPR beside DCR's holdout test, and the one-run ε lower bound from canaries."
    config_type = SyntheticDataConfig
    result_type = SyntheticDataResult
    default_resource = "synthetic-data.json"
    requires = ("pandas", "sklearn", "pyarrow")
    checkpointed = True
    tiny_overrides = {"num_shadows": 4, "num_shadow_targets": 2, "num_canaries": 20}

    def run_on(
        self, config: SyntheticDataConfig, *, progress: Progress | None, checkpoints: Any, backend: str, max_workers: int | None, address: str | None
    ) -> AuditRun:
        return run_synthetic_data(config, progress=progress, checkpoints=checkpoints, backend=backend, max_workers=max_workers, address=address)


AUDIT = SyntheticDataAudit()
