"""The synthetic-data audit's config and result types: the bottom of the family's package.

>>> SyntheticDataConfig(num_shadows=3)
Traceback (most recent call last):
...
ValueError: `num_shadows` (--shadows) must be 0 or an even integer >= 4, got 3
>>> SyntheticDataConfig(train="t.csv", holdout="h.csv", synthetic="s.csv", generator="m:fn")
Traceback (most recent call last):
...
ValueError: `--synthetic` and `--generator` exclude each other: audit the released table (no-box) or retrain your generator, not both
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..._core.validation import check_choice, check_count, check_fraction, check_positive, check_probability
from ...models.loading import check_import_path
from ...stats.one_run_combined import OneRunLowerBound
from ...stats.verdict import Verdict
from ..base import AuditResult, Headline
from ..blind import BlindBaseline
from ..family_test import FamilyTest, check_family_fields, inert_family_fields
from .decision import StewardDecision, upgraded_decision

__all__ = [
    "ATTACKS",
    "BUILTIN_GENERATOR",
    "HEADLINE_ATTACK",
    "CanaryBound",
    "ColumnSchema",
    "DCRStatistics",
    "ExposedRecord",
    "SyntheticAttack",
    "SyntheticDataConfig",
    "SyntheticDataResult",
]

BUILTIN_GENERATOR = "privaudit.audits.synthetic_data.generators:gaussian_copula"
# every per-record attack, fixed in advance; the headline is the robust DCR, chosen once on pilot seeds that
# no reported figure uses (docs/guide-synthetic-data.md), never per dataset
ATTACKS = ("robust-dcr", "domias", "domias-kde", "marginals", "dcr", "shadow")
HEADLINE_ATTACK = "robust-dcr"
# limits checked before any work: a count of 10^12 is a typo, not a plan (7 TiB of canary rows, shadow runs that never end)
MAX_SHADOWS = 1000
MAX_CANARIES = 100_000
MAX_SYNTHETIC_ROWS = 10_000_000


@dataclasses.dataclass(frozen=True)
class SyntheticDataConfig:
    """What to audit and how; every field is checked on construction.

    ``train`` and ``holdout`` are the real tables (None: the embedded default,
    scikit-learn's wine split in halves by ``seed``); ``synthetic`` the
    released table, or ``generator`` the user's ``fn(train_df, *, seed, n)``.
    ``reference_fraction`` of the holdout is the attacker's knowledge of the
    population (DOMIAS' reference density, the shadow generators' data); the
    rest are the non-members the attacks are evaluated on.
    """

    train: str | None = None
    holdout: str | None = None
    synthetic: str | None = None
    generator: str | None = None  # None without --train: the built-in Gaussian copula on the embedded default
    id_col: str | None = None
    num_synthetic: int | None = None  # rows the generator makes (None: as many as the training table)
    reference_fraction: float = 0.5
    num_shadows: int = 8  # shadow datasets per shadow target, half with it (0: none; a released table alone has none)
    num_shadow_targets: int = 6  # the most outlying records attacked by the shadow attack
    num_canaries: int = 0  # canaries of the ε lower bound (0: no bound; needs a generator)
    canary_records: str | None = None  # or the user's own canaries: a table of the schema (.csv/.parquet), one canary a row
    claimed_epsilon: float | None = None  # the generator's claimed ε per release (None: no claim)
    claimed_delta: float | None = None  # the claim's δ (None: `delta`); the bound is at `delta`, which must be >= it
    # with canaries: the claim's own family (privaudit.audits.family_test), tested by order statistics beside the generic bound
    family: str | None = None
    family_claim: float | None = None
    family_sampling_rate: float | None = None
    family_steps: int | None = None
    delta: float = 1e-5
    confidence: float = 0.95
    num_vulnerable: int = 10
    seed: int = 0
    categorical: tuple[str, ...] = ()  # columns read as categories whatever their dtype (integer codes)
    numeric: tuple[str, ...] = ()  # columns read as numbers (text holding numbers)
    sdmetrics: bool = True  # sdmetrics' own two DCR scores beside privaudit's, where sdmetrics is installed

    def __post_init__(self) -> None:
        object.__setattr__(self, "categorical", tuple(self.categorical))
        object.__setattr__(self, "numeric", tuple(self.numeric))
        both = sorted(set(self.categorical) & set(self.numeric))
        if both:
            raise ValueError(f"`categorical` and `numeric` both name {both}: a column is read one way")
        if not isinstance(self.sdmetrics, bool):
            raise ValueError(f"`sdmetrics` must be true or false, got {self.sdmetrics!r}")
        if self.synthetic is not None and self.generator is not None:
            raise ValueError("`--synthetic` and `--generator` exclude each other: audit the released table (no-box) or retrain your generator, not both")
        if self.generator is not None:
            check_import_path(self.generator, "--generator")
        if (self.train is None) != (self.holdout is None):
            raise ValueError("`--train` and `--holdout` go together: your real training table and a holdout from the same population")
        if self.train is None and self.synthetic is not None:
            raise ValueError("`--synthetic` needs `--train` and `--holdout`, the real tables it was made from")
        if self.train is not None and self.synthetic is None and self.generator is None:
            raise ValueError("`--train` needs `--synthetic` (the released table) or `--generator` (your generator package.module:fn)")
        if self.synthetic is not None and (self.num_canaries or self.canary_records is not None):
            raise ValueError("`--canaries` and `--canary-records` need `--generator`: a released table alone cannot be regenerated with canaries")
        if self.num_canaries and self.canary_records is not None:
            raise ValueError("`--canaries` and `--canary-records` exclude each other: privaudit's outliers, or your own records")
        if self.num_synthetic is not None:
            if self.synthetic is not None:
                raise ValueError("`--num-synthetic` sets how many rows `--generator` makes; `--synthetic` is a released table whose rows are given")
            check_count(self.num_synthetic, "num_synthetic (--num-synthetic)", minimum=10)
            if self.num_synthetic > MAX_SYNTHETIC_ROWS:
                raise ValueError(f"`num_synthetic` (--num-synthetic) must be at most {MAX_SYNTHETIC_ROWS:,}, got {self.num_synthetic:,}")
        fraction = check_fraction(self.reference_fraction, "reference_fraction (--reference-fraction)")
        if not 0.0 < fraction < 1.0:
            raise ValueError(f"`reference_fraction` (--reference-fraction) must be in (0, 1), got {fraction:g}")
        if (
            isinstance(self.num_shadows, bool)
            or not isinstance(self.num_shadows, int)
            or self.num_shadows % 2
            or 0 < self.num_shadows < 4
            or self.num_shadows < 0
        ):
            raise ValueError(f"`num_shadows` (--shadows) must be 0 or an even integer >= 4, got {self.num_shadows!r}")
        if self.num_shadows > MAX_SHADOWS:  # each is a generator trained on the pool: refused before the first, not after days
            raise ValueError(f"`num_shadows` (--shadows) must be at most {MAX_SHADOWS}, got {self.num_shadows:,}")
        check_count(self.num_shadow_targets, "num_shadow_targets (--shadow-targets)", minimum=2)
        canaries = check_count(self.num_canaries, "num_canaries (--canaries)")
        if 0 < canaries < 10:
            raise ValueError(f"`num_canaries` (--canaries) must be 0 or >= 10, got {canaries}")
        if canaries > MAX_CANARIES:  # a row each in every release: refused before anything is allocated
            raise ValueError(f"`num_canaries` (--canaries) must be at most {MAX_CANARIES:,}, got {canaries:,}")
        if self.claimed_epsilon is not None:
            check_positive(self.claimed_epsilon, "claimed_epsilon (--claimed-epsilon)")
            if not canaries and self.canary_records is None:  # without canaries there is no bound, so nothing to compare the claim with
                raise ValueError(
                    "`--claimed-epsilon` is compared with the ε lower bound, which needs `--canaries` (with `--generator`) or `--canary-records`; "
                    "without them there is no bound and no verdict"
                )
        check_probability(self.delta, "delta (--delta)")
        has_canaries = bool(canaries) or self.canary_records is not None
        check_family_fields(self, refused=None if has_canaries else "needs canaries: `num_canaries` (--canaries) with --generator, or --canary-records")
        if self.claimed_delta is not None:
            if self.claimed_epsilon is None:
                raise ValueError("`--claimed-delta` needs `--claimed-epsilon`")
            if isinstance(self.claimed_delta, bool) or not isinstance(self.claimed_delta, (int, float)) or not 0.0 <= self.claimed_delta < 1.0:
                raise ValueError(f"`claimed_delta` (--claimed-delta) must be in [0, 1), got {self.claimed_delta!r}")  # 0: a pure-ε claim
            if self.delta < self.claimed_delta:
                raise ValueError(f"`--delta` ({self.delta:g}) must be >= `--claimed-delta` ({self.claimed_delta:g}): the claim says nothing at a smaller δ")
        check_probability(self.confidence, "confidence")
        check_count(self.num_vulnerable, "num_vulnerable")
        check_count(self.seed, "seed")


@dataclasses.dataclass(frozen=True)
class ColumnSchema:
    """One column of the checked schema: its kind, its categories (categorical) and its missing values in the training table."""

    name: str
    kind: str  # "numeric" or "categorical"
    num_categories: int
    missing_in_train: int


@dataclasses.dataclass(frozen=True)
class SyntheticAttack:
    """One attack's AUC and TPR at each FPR target (Clopper–Pearson intervals), on the records it scored: in-sample statistics.

    A TPR is None where the attack's non-members are fewer than 1/FPR
    (:func:`privaudit.stats.mia_metrics.supported_fpr`): with 45 of them the
    TPR "at 1% FPR" would be the TPR at zero false positives.
    """

    attack: str
    auc: float
    fpr: tuple[float, ...]
    tpr: tuple[float | None, ...]
    tpr_low: tuple[float | None, ...]
    tpr_high: tuple[float | None, ...]
    num_members: int
    num_non_members: int
    description: str

    def tpr_at(self, fpr: float) -> float | None:
        return self.tpr[self.fpr.index(fpr)]

    @property
    def num_out(self) -> int:
        """The non-members, under the name :func:`privaudit.report.mia.tpr_text` reads."""
        return self.num_non_members


@dataclasses.dataclass(frozen=True)
class DCRStatistics:
    """DCR's aggregate verdict on the same data, after sdmetrics' definitions (a proxy statistic, not an attack).

    ``baseline_protection``: min(1, median DCR of the synthetic rows to the
    training rows / the same median for uniformly random rows);
    ``overfitting_protection``: min(1, 2 (1 - p)), p the share of synthetic
    rows strictly closer to a training row than to any holdout row, with
    the training table subsampled to the holdout's size. ``passes``: p not
    significantly above ½ (one-sided binomial test at 5%). ``sdmetrics_*``:
    sdmetrics' own scores when it is installed (None otherwise).
    """

    median_dcr_synthetic: float
    median_dcr_random: float
    baseline_protection: float
    share_closer_to_training: float
    overfitting_protection: float
    binomial_p_value: float
    passes: bool
    sdmetrics_baseline_protection: float | None = None
    sdmetrics_overfitting_protection: float | None = None


@dataclasses.dataclass(frozen=True)
class ExposedRecord:
    """A record the headline attack scores highest, by the user's id, with every attack's score (None: not scored by it)."""

    record_id: str
    member: bool
    score: float
    outlier_score: float
    attack_scores: tuple[float | None, ...]


@dataclasses.dataclass(frozen=True)
class CanaryBound:
    """The one-run ε lower bound from canaries inserted by fair coins, beside its ceiling and the verdict on the claim (per release, like for like).

    ``ceiling`` is the bound of a perfect attack (every included canary
    scored above every other) on the same canaries, coins and confidence
    (:func:`privaudit.stats.ceiling.one_run_ceiling`).
    """

    bound: OneRunLowerBound
    ceiling: float
    at_ceiling: bool  # within 10% of the ceiling: "at least this, maybe much more"
    verdict: Verdict | None  # against the user's per-release claim (None: no claim)
    canaries: str  # how the canaries were made
    coins_seed: int
    signal: str


@dataclasses.dataclass(frozen=True)
class SyntheticDataResult(AuditResult):
    """The attacks on the released synthetic table, DCR's verdict beside them, the most exposed records, and the bound when asked for."""

    config: SyntheticDataConfig
    source: str
    schema: tuple[ColumnSchema, ...]
    num_train: int
    num_reference: int
    num_non_members: int
    num_synthetic: int
    attacks: tuple[SyntheticAttack, ...]
    dcr: DCRStatistics
    most_exposed: tuple[ExposedRecord, ...]
    shadow_targets: tuple[str, ...]
    selection: str
    bound: CanaryBound | None
    threat_model: str
    seconds: float
    num_shadow_runs: int = 0  # shadow releases the attack used
    num_trained: int = 0  # of them, generated by this call (the rest: finished runs in --output reused)
    blind_baseline: BlindBaseline | None = None  # the user's --train against --holdout, without the synthetic table (privaudit.audits.blind)
    resume_note: str = ""  # why stored shadow runs were generated again (their key changed), "" when none was
    decision: StewardDecision | None = None  # the steward's decision on the decision attacks (privaudit.audits.synthetic_data.decision)
    family_test: FamilyTest | None = None  # canaries with a family named: the headline, beside the generic bound (privaudit.audits.family_test)

    @classmethod
    def validate(cls, data: Mapping[str, Any]):
        """The result from a results dict, a decision written before DOMIAS joined it read in today's layout (``upgraded_decision``)."""
        decision = data.get("decision") if isinstance(data, Mapping) else None
        if isinstance(decision, Mapping) and "attacks" not in decision and "found_ids" in decision:
            data = {**data, "decision": upgraded_decision(decision)}
        return super().validate(data)

    @property
    def num_runs(self) -> int:
        """The shadow releases behind this result, ``num_trained`` of them generated by this call."""
        return self.num_shadow_runs

    def inert_config_fields(self) -> frozenset[str]:
        """With a released table (no-box) nothing is generated: the generator's settings did not apply."""
        family = inert_family_fields(self.config)  # no family named: its keys stay out, as before they existed
        if self.config.synthetic is None:
            return family
        return family | {"num_synthetic", "num_shadows", "num_shadow_targets", "num_canaries"}

    def attack(self, name: str) -> SyntheticAttack:
        """The summary of attack ``name``."""
        check_choice(name, "attack", [summary.attack for summary in self.attacks])
        return next(summary for summary in self.attacks if summary.attack == name)

    def headline(self) -> Headline:
        family = self.family_test
        if family is not None and self.bound is not None:
            return Headline(
                value=family.epsilon,
                label=(
                    f"ε lower bound of the generator per release against the claim's family ({family.bound.num_canaries} canaries by fair coins, "
                    f"order statistics of Xiang et al.; refuted: {family.refuted}; generic bound {family.generic_epsilon:.3g} beside it; "
                    "valid if transmission dominance holds)"
                ),
                kind=family.bound.kind,
                confidence=family.bound.confidence,
                valid=family.bound.valid,
                flag=family.verdict.flagged,
            )
        if self.bound is not None:
            bound = self.bound.bound
            return Headline(
                value=bound.epsilon,
                label=f"ε lower bound of the generator per release ({bound.num_canaries} canaries by fair coins, Steinke et al.)",
                kind="lower bound",
                confidence=bound.confidence,
                valid=bound.valid,
                flag=None if self.bound.verdict is None else self.bound.verdict.flagged,
            )
        headline = self.attack(HEADLINE_ATTACK)
        value = headline.tpr_at(0.01)
        needs = "" if value is not None else f": n/a (needs >= 100 non-members, got {headline.num_non_members})"
        at_zero = headline.tpr_at(0.0)  # beside it, the members above every non-member: where a few copies show
        beside = "" if at_zero is None else f"; at FPR 0: {round(at_zero * headline.num_members)} of {headline.num_members} members above every non-member"
        return Headline(
            value=value,
            label="TPR at 1% FPR of the robust DCR (closest synthetic row on the population's IQR scales, plus a tenth of the distance to the population) on the released synthetic table "
            f"(attack statistic, not an ε bound{beside}){needs}",
            kind="statistic",
            confidence=None,
            valid=True,
        )
