"""The blackbox family's bottom layer: the config, its choices, and the result."""

from __future__ import annotations

import dataclasses

from ..._core.labelled import LABELLED_SUFFIXES
from ..._core.validation import check_choice, check_count, check_noise_multiplier, check_positive, check_probability
from ...models.loading import check_import_path
from ...stats.bounds import EpsilonLowerBound
from ...stats.gaussian_steps import GaussianStepBound
from ..base import AuditResult, Headline
from ..verdicts import check_claim_fields

__all__ = [
    "ARCHITECTURES",
    "BlackBoxConfig",
    "BlackBoxResult",
    "CANARIES",
    "DATASETS",
    "INIT_SCOPE",
    "INITS",
    "MIN_MODELS_PER_SIDE",
    "SCORES",
    "THREAT_MODEL",
    "THREAT_MODEL_WORST_CASE",
    "WorstCaseInit",
    "check_data_fields",
    "check_init_fields",
]


THREAT_MODEL = "black-box: final model only, canary loss/confidence"
THREAT_MODEL_WORST_CASE = "black-box: final model only, canary loss/confidence; every run starts from the auditor's worst-case initialisation"

INIT_SCOPE = "for the pipeline under worst-case initialisation, which is what a DP claim covers"

INITS = ("average", "worst-case")  # average: each run's own random weights; worst-case: the auditor's crafted start (.worst_case)

DATASETS = ("breast-cancer", "digits")

ARCHITECTURES = ("linear", "mlp")

CANARIES = ("mislabeled", "blank")

SCORES = ("loss", "logit")

MIN_MODELS_PER_SIDE = 5  # the split threshold needs a selection and an evaluation part on each side


def check_data_fields(data: str | None, label_col: str | None) -> None:
    """Refuse a ``data`` file of another kind than the labelled readers take, and a ``label_col`` without a .csv/.parquet ``data``.

    >>> check_data_fields(None, "y")
    Traceback (most recent call last):
    ...
    ValueError: `label_col` (--label-col) needs `data` (--data) with a .csv or .parquet file
    """
    if data is not None and not str(data).lower().endswith(LABELLED_SUFFIXES):
        raise ValueError(f"`data` (--data) must be a .npz, .csv or .parquet file, got {data!r}")
    if label_col is not None and (data is None or not str(data).lower().endswith((".csv", ".parquet"))):
        raise ValueError("`label_col` (--label-col) needs `data` (--data) with a .csv or .parquet file")


def check_init_fields(init: str, train: str | None, init_model: str | None) -> None:
    """Refuse a worst-case start for ``train`` without ``init_model``, and an ``init_model`` with anything but both.

    >>> check_init_fields("average", None, "my_models:build")
    Traceback (most recent call last):
    ...
    ValueError: `init_model` (--init-model) builds the start of your own training; it needs `init` 'worst-case' (--init) and `train` (--train)
    """
    if init_model is not None:
        check_import_path(init_model, "init_model")
        if init != "worst-case" or train is None:
            raise ValueError("`init_model` (--init-model) builds the start of your own training; it needs `init` 'worst-case' (--init) and `train` (--train)")
    elif init == "worst-case" and train is not None:
        raise ValueError(
            "`init` 'worst-case' (--init) with `train` (--train) needs `init_model` (--init-model): package.module:build, "
            "the untrained torch.nn.Module your function loads `init_state` into"
        )


@dataclasses.dataclass(frozen=True)
class BlackBoxConfig:
    """What to train and how to bound ε; every field is checked on construction.

    ``num_steps`` full-batch DP-SGD steps (sampling rate 1) per model;
    ``num_models_per_side`` models with the canary and as many without.
    ``num_records``: the audited training set is the first this many records
    of the train split (None: all of it). ``init``: ``"average"`` starts each
    run from its own random weights; ``"worst-case"`` starts every run from
    parameters the auditor crafted on records outside the audited set
    (:mod:`privaudit.audits.blackbox.worst_case`): privaudit's own
    ``architecture``, or, with ``train``, the untrained module that
    ``init_model`` ('package.module:build') builds, which the user's function
    then receives as ``init_state``.

    >>> BlackBoxConfig(num_models_per_side=0)
    Traceback (most recent call last):
    ...
    ValueError: `num_models_per_side` must be an integer in [5, inf), got 0
    """

    dataset: str = "breast-cancer"
    architecture: str = "linear"
    noise_multiplier: float = 1.0
    clip_norm: float = 1.0
    learning_rate: float = 2.0
    num_steps: int = 20
    canary: str = "mislabeled"
    score: str = "loss"
    num_models_per_side: int = 500
    delta: float = 1e-5
    confidence: float = 0.95
    seed: int = 0
    train: str | None = None  # "package.module:fn", the user's training function (see the module docstring)
    data: str | None = None  # the user's .npz/.csv/.parquet dataset instead of `dataset` (--data)
    label_col: str | None = None  # its label column (--label-col; .csv/.parquet only)
    claimed_epsilon: float | None = None  # the user's end-to-end claim; None: the accountant's for privaudit's own DP-SGD, else no verdict
    claimed_delta: float | None = None  # its δ; None: `delta`
    init: str = "average"  # --init: "average" or "worst-case"
    num_records: int | None = None  # --num-records: the audited records, the first this many of the train split; None: all
    init_model: str | None = None  # --init-model: "package.module:build", the user's untrained torch.nn.Module (worst-case with train only)

    def __post_init__(self):
        check_claim_fields(self.claimed_epsilon, self.claimed_delta)
        check_data_fields(self.data, self.label_col)
        if self.train is not None:
            check_import_path(self.train, "train")
        check_choice(self.dataset, "dataset", DATASETS)
        check_choice(self.architecture, "architecture", ARCHITECTURES)
        check_noise_multiplier(self.noise_multiplier)
        check_positive(self.clip_norm, "clip_norm")
        check_positive(self.learning_rate, "learning_rate")
        check_count(self.num_steps, "num_steps", minimum=1)
        check_choice(self.canary, "canary", CANARIES)
        check_choice(self.score, "score", SCORES)
        check_count(self.num_models_per_side, "num_models_per_side", minimum=MIN_MODELS_PER_SIDE)
        check_probability(self.delta, "delta")
        check_probability(self.confidence, "confidence")
        check_count(self.seed, "seed")
        check_choice(self.init, "init", INITS)
        if self.num_records is not None:
            check_count(self.num_records, "num_records", minimum=2)
        check_init_fields(self.init, self.train, self.init_model)


@dataclasses.dataclass(frozen=True)
class WorstCaseInit:
    """What the auditor started every run from: how it was crafted, its seed and its digest.

    ``pool_size`` records, disjoint from the audited ones and from the
    canary, pre-trained the ``architecture`` (or the module that ``model``,
    the user's ``--init-model`` path, builds; "" for the built-in one) for
    ``steps`` full-batch Adam steps; ``digest`` is the SHA-256 of the state
    (names and bytes, in name order). ``scope`` says what the bound then covers.
    """

    seed: int
    digest: str
    pool_size: int
    steps: int
    learning_rate: float
    pool_accuracy: float
    training_accuracy: float
    scope: str = INIT_SCOPE
    model: str = ""  # the --init-model builder of the user's module; "" for the built-in architecture (then absent from results.json)


@dataclasses.dataclass(frozen=True)
class BlackBoxResult(AuditResult):
    """The outcome of a black-box audit.

    ``epsilon_lower_bound`` is the headline: the GDP bound of
    ``paired_bound``, Xiang et al.'s order-statistics test on the runs
    taken in pairs (one with the canary, one without, by index), each pair
    oriented by a seeded fair coin (:func:`~privaudit.audits.blackbox.audit.bound_scores`).
    ``bound`` is the GDP bound at a held-out split threshold (Clopper–Pearson;
    the headline before the paired test) and ``epsilon_lower_bound_eps_delta``
    the (ε, δ) one at that threshold, both kept for comparison; the verdict
    uses the headline. ``claimed_epsilon`` is
    ε(δ) of DP-SGD's accounting for the config's noise and steps (sampling 1),
    the claim when privaudit ran that DP-SGD itself and the user gave none;
    None with ``--train``,
    whose mechanism privaudit does not know (the config's σ and steps were
    never the user's). The verdict (``claim_verdict``) is against the user's claim.
    ``num_trained`` models were trained by this call (the rest were resumed);
    ``models_per_minute`` counts those over ``wall_time_s``.
    """

    epsilon_lower_bound: float
    epsilon_lower_bound_eps_delta: float
    claimed_epsilon: float | None
    delta: float
    confidence: float
    threat_model: str
    num_in: int
    num_out: int
    mean_in_score: float
    mean_out_score: float
    num_trained: int
    wall_time_s: float
    models_per_minute: float
    backend: str
    bound: EpsilonLowerBound
    bound_eps_delta: EpsilonLowerBound
    config: BlackBoxConfig
    resume_note: str = ""  # why stored models were trained again (their key changed), "" when none was
    initialisation: WorstCaseInit | None = None  # the crafted start of every run (--init worst-case); None: each run's own random weights
    paired_bound: GaussianStepBound | None = None  # the headline's test; None only in results written before it

    @property
    def refuted(self) -> str:
        """What the headline refutes, per training run ("" for a result written before the paired test).

        >>> from privaudit.stats.gaussian_steps import GaussianStepBound
        >>> paired = GaussianStepBound(4.8, 1e-5, 0.95, 1.092, 0.9157, "…", "order-statistics", 60, 60, 4.8)
        >>> BlackBoxResult.refuted.fget(type("R", (), {"paired_bound": paired})())
        'not mu-GDP with mu <= 1.092 per training run'
        """
        paired = self.paired_bound
        if paired is None:
            return ""
        if paired.parameter <= 0.0:
            return "nothing refuted"
        return f"not mu-GDP with mu <= {paired.parameter:.4g} per training run"

    @property
    def scope(self) -> str:
        """What the bound covers: the pipeline as it ran, from the auditor's worst-case start where there was one."""
        if self.initialisation is not None:
            return f"ε lower bound {self.initialisation.scope}"
        return "ε lower bound for the pipeline from random initial weights (an average-case start; a DP claim covers every start)"

    def to_dict(self) -> dict:
        out = super().to_dict()
        if out.get("initialisation", 0) is None:  # the default start: results.json stays as it was before the field
            del out["initialisation"]
        elif out.get("initialisation", {}).get("model") == "":  # the built-in architecture: as it was before the field
            del out["initialisation"]["model"]
        return out

    @property
    def num_runs(self) -> int:
        """The models behind this result, ``num_trained`` of them trained by this call (the rest resumed)."""
        return self.num_in + self.num_out

    def inert_config_fields(self) -> frozenset[str]:
        """The embedded dataset beside the user's --data; the built-in model's settings beside the user's --train.

        With --train and no claim, ``noise_multiplier`` and ``num_steps``
        stay: √steps ÷ σ is the μ the paired test is designed for
        (:func:`~privaudit.audits.blackbox.audit.design_mu`). With a claim,
        the claim designs it, and they touched nothing that ran.
        """
        inert = {"dataset"} if self.config.data is not None else set()
        if self.config.train is not None:
            inert |= {"architecture", "clip_norm", "learning_rate"}
            if self.config.claimed_epsilon is not None:
                inert |= {"noise_multiplier", "num_steps"}
        return frozenset(inert)

    def headline(self) -> Headline:
        test: GaussianStepBound | EpsilonLowerBound = self.bound if self.paired_bound is None else self.paired_bound
        return Headline(
            value=self.epsilon_lower_bound,
            label="ε lower bound (GDP, Clopper–Pearson, split threshold)"
            if self.paired_bound is None
            else "ε lower bound (GDP, order-statistics test on coin-oriented pairs of runs)",
            kind=test.kind,
            confidence=self.confidence,
            valid=test.valid,
            flag=None if self.claim_verdict is None else self.claim_verdict.flagged,
        )
