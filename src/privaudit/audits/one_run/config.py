"""The one-run family's bottom layer: the config (and its reading of a dpsgd config), the methods, and the result."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..._core.validation import check_choice, check_count, check_noise_multiplier, check_positive, check_probability
from ...canaries.gradient import CANARY_KINDS
from ...data.tabular import DATASET_NAMES
from ...models.classifiers import ARCHITECTURES
from ...models.loading import check_import_path
from ...observation.gradient import check_canary_rate
from ...observation.one_run import MIN_CANARIES, check_inclusion_prob
from ...stats.last_iterate import LastIterateHeuristic
from ...stats.one_run import OneRunSweep
from ...stats.one_run_combined import METHODS, OneRunLowerBound
from ...stats.one_run_fdp import OneRunFDPBound
from ...stats.one_run_gaussian import OneRunGaussianBound
from ..base import AuditResult, Headline
from ..blackbox.config import check_data_fields
from ..dpsgd.config import user_data, user_model
from ..verdicts import check_claim_fields

__all__ = [
    "BLACK_BOX_SCORES",
    "INPUT_CANARIES",
    "OBSERVE",
    "OneRunAuditConfig",
    "OneRunAuditResult",
    "SCORES",
    "THREAT_MODELS",
    "config_from_dpsgd",
    "default_methods",
]


THREAT_MODELS = {
    "white-box": "white-box: gradient canaries on audit coordinates, every intermediate update observed, one training run",
    "black-box": "black-box: final model only, losses of mislabeled input canaries, one training run",
}

SCORES = {
    "white-box": "sum over the steps of the released update along the canary's audit coordinate, in units of one clipped canary",
    "black-box": "negated cross-entropy loss of the final model at the canary's (wrong) label",
}

_GUESSING = ("steinke", "fdp")

#: What a white-box run observes (``observe``, ``--observe``): every released update, or the final parameters alone (the hidden state).
OBSERVE = {
    "updates": "every intermediate update",
    "final": (
        "hidden state: gradient canaries on audit coordinates inserted in every step, only the final parameters observed "
        "(Cebere, Bellet and Papernot 2025), one training run"
    ),
}
#: The black box's input canaries (``input_canaries``, ``--input-canaries``).
INPUT_CANARIES = {
    "mislabeled": "mislabeled examples of either split, withheld from the rest",
    "metagradient": (
        "mislabeled examples of either split, withheld from the rest, whose features are then optimised by metagradient descent "
        "on a non-private surrogate (Boglioni et al. 2025; privaudit.canaries.metagradient), before the inclusion draw"
    ),
}
#: What a black-box canary's score is (``black_box_score``, ``--black-box-score``).
BLACK_BOX_SCORES = {
    "loss": SCORES["black-box"],
    "calibrated": (
        "negated cross-entropy loss of the final model at the canary's (wrong) label, minus the same of a reference model "
        "trained by the same pipeline on the data without any canary (its own noise seed; the built-in model from the same start)"
    ),
}
FINAL_SCORE = (
    "final value minus initial value of the canary's audit coordinate (a parameter the trainer descends), times "
    "-denominator / (learning rate × clip norm): in units of one clipped canary"
)


@dataclasses.dataclass(frozen=True)
class OneRunAuditConfig:
    """Everything a one-run audit depends on; every field is checked on construction.

    The default trains the embedded MLP on digits with full-batch DP-SGD for
    100 steps at a noise multiplier that claims ε = 4 at δ = 1e-5.

    >>> OneRunAuditConfig(num_canaries=3)
    Traceback (most recent call last):
    ...
    ValueError: `num_canaries` must be an integer in [4, inf), got 3
    >>> OneRunAuditConfig(threat_model="grey-box")
    Traceback (most recent call last):
    ...
    ValueError: `threat_model` must be one of 'white-box', 'black-box', got 'grey-box'
    """

    threat_model: str = "white-box"
    dataset: str = "digits"
    architecture: str = "mlp"
    num_canaries: int = 1000
    inclusion_prob: float = 0.5
    noise_multiplier: float = 10.8116  # full batch, 100 steps: ε = 4 at δ = 1e-5
    clip_norm: float = 1.0
    sampling_rate: float = 1.0
    learning_rate: float = 0.5
    num_steps: int = 100
    canary_rate: float | None = None  # white-box: chance an included canary is in a step; None: the sampling rate
    canary_kind: str = "dirac"
    canary_moving: bool = False
    canary_slot_size: int = 1
    canary_norm: float = 1.0
    methods: tuple[str, ...] | None = None  # of the headline; None: every method exact here (see default_methods)
    delta: float = 1e-5
    confidence: float = 0.95
    seed: int = 0
    train: str | None = None  # black-box only: "package.module:fn", the user's training (see privaudit.audits.blackbox)
    data: str | None = None  # the user's .npz/.csv/.parquet dataset instead of `dataset` (--data), read as the blackbox audit reads it
    label_col: str | None = None  # its label column (--label-col; .csv/.parquet only)
    claimed_epsilon: float | None = None  # the user's end-to-end claim; None: privaudit's accountant when it ran the DP-SGD, else no verdict
    claimed_delta: float | None = None  # its δ; None: `delta`
    observe: str = "updates"  # white-box: "updates" (every released update) or "final" (the final parameters alone, the hidden state)
    input_canaries: str = "mislabeled"  # black-box: "mislabeled" or "metagradient" (see INPUT_CANARIES)
    meta_steps: int = 200  # black-box, input_canaries "metagradient": the meta steps of the optimisation
    black_box_score: str = "loss"  # black-box: "loss" or "calibrated" (see BLACK_BOX_SCORES)

    def __post_init__(self):
        check_choice(self.threat_model, "threat_model", tuple(THREAT_MODELS))
        check_choice(self.observe, "observe", tuple(OBSERVE))
        if self.observe == "final" and (self.threat_model != "white-box" or self.canary_moving):
            raise ValueError(
                "`observe` 'final' (the hidden state) needs white-box gradient canaries that do not move (threat_model 'white-box', "
                "canary_moving false): the final model shows only the sum of the updates"
            )
        check_choice(self.input_canaries, "input_canaries", tuple(INPUT_CANARIES))
        check_count(self.meta_steps, "meta_steps", minimum=1)
        check_choice(self.black_box_score, "black_box_score", tuple(BLACK_BOX_SCORES))
        if self.threat_model != "black-box" and (self.input_canaries != "mislabeled" or self.black_box_score != "loss"):
            raise ValueError(
                "`input_canaries` and `black_box_score` are for threat_model 'black-box' (input canaries read from the final model's losses); "
                "leave them at 'mislabeled' and 'loss' for the white box"
            )
        check_choice(self.dataset, "dataset", DATASET_NAMES)
        check_data_fields(self.data, self.label_col)
        check_choice(self.architecture, "architecture", ARCHITECTURES)
        check_count(self.num_canaries, "num_canaries", minimum=MIN_CANARIES)
        check_inclusion_prob(self.inclusion_prob)
        check_noise_multiplier(self.noise_multiplier)
        check_positive(self.clip_norm, "clip_norm")
        rate = check_positive(self.sampling_rate, "sampling_rate")
        if rate > 1.0:
            raise ValueError(f"`sampling_rate` must be in (0, 1], got {rate:g}")
        check_positive(self.learning_rate, "learning_rate")
        check_count(self.num_steps, "num_steps", minimum=1)
        if self.canary_rate is not None:
            if self.threat_model != "white-box":
                raise ValueError("`canary_rate` is for white-box gradient canaries; input canaries are sampled as examples (leave it null)")
            check_canary_rate(self.canary_rate)
        check_choice(self.canary_kind, "canary_kind", CANARY_KINDS)
        check_count(self.canary_slot_size, "canary_slot_size", minimum=1)
        check_positive(self.canary_norm, "canary_norm")
        check_probability(self.delta, "delta")
        check_probability(self.confidence, "confidence")
        check_claim_fields(self.claimed_epsilon, self.claimed_delta)
        if self.train is not None:
            check_import_path(self.train, "train")
            if self.threat_model != "black-box":
                raise ValueError("`train` (`--train`) needs threat_model 'black-box': the user's training is observed through its final model only")
        default_methods(self)  # refuses settings under which no method is valid
        if self.methods is not None:
            _check_methods(self)

    @property
    def effective_canary_rate(self) -> float:
        """The chance that an included canary is in a given step (the sampling rate for input canaries)."""
        return self.sampling_rate if self.canary_rate is None else self.canary_rate

    @property
    def headline_methods(self) -> tuple[str, ...]:
        return default_methods(self) if self.methods is None else tuple(self.methods)


def _gaussian_exact(config: OneRunAuditConfig) -> bool:
    """Whether the summed observations are exactly Gaussian: white-box canaries in every step."""
    return config.threat_model == "white-box" and config.effective_canary_rate == 1.0


def default_methods(config: OneRunAuditConfig) -> tuple[str, ...]:
    """The headline's methods when ``methods`` is null: the guessing methods (inclusion ½), and the Gaussian one when it is exact.

    >>> default_methods(OneRunAuditConfig()), default_methods(OneRunAuditConfig(threat_model="black-box"))
    (('steinke', 'fdp', 'gaussian'), ('steinke', 'fdp'))
    """
    chosen = (_GUESSING if config.inclusion_prob == 0.5 else ()) + (("gaussian",) if _gaussian_exact(config) else ())
    if not chosen:
        raise ValueError(
            f"`inclusion_prob` must be 0.5 here (got {config.inclusion_prob:g}): the guessing bounds need it, and the Gaussian bound, "
            "which does not, is exact only for white-box canaries in every step (canary_rate 1)"
        )
    return chosen


def _check_methods(config: OneRunAuditConfig) -> None:
    methods = config.methods or ()
    if not methods or any(name not in METHODS for name in methods) or len(set(methods)) != len(methods):
        raise ValueError(f"`methods` must be distinct names among {', '.join(METHODS)}, got {list(methods)!r}")
    if "gaussian" in methods and config.threat_model != "white-box":
        raise ValueError("`methods`: 'gaussian' needs threat_model 'white-box' (black-box scores are not Gaussian)")
    if "gaussian" in methods and not _gaussian_exact(config):
        raise ValueError(
            "`methods`: 'gaussian' is exact only with canaries in every step (canary_rate 1); with sampling it is approximate and reported beside the headline"
        )
    guessing = [name for name in methods if name in _GUESSING]
    if guessing and config.inclusion_prob != 0.5:
        raise ValueError(f"`methods`: {', '.join(guessing)} need inclusion_prob 0.5, got {config.inclusion_prob:g}")


def config_from_dpsgd(config: Any, *, num_canaries: int = 1000) -> OneRunAuditConfig:
    """The one-run white-box audit of the training a DP-SGD audit config describes: the end-to-end lower bound from one run.

    Same data, model and DP settings; canaries sampled as examples are, so the
    claimed end-to-end ε of the DP-SGD audit is what the bound is checked against.

    >>> from privaudit.audits.dpsgd import DPSGDAuditConfig
    >>> one_run = config_from_dpsgd(DPSGDAuditConfig())
    >>> one_run.sampling_rate, one_run.num_steps, one_run.effective_canary_rate
    (0.05, 100, 0.05)
    """
    if user_model(config.architecture) or user_data(config.dataset) or config.bug != "none":
        raise ValueError("`config`: the one-run audit runs the correct reference DP-SGD on an embedded dataset and architecture")
    return OneRunAuditConfig(
        dataset=config.dataset,
        architecture=config.architecture,
        num_canaries=num_canaries,
        noise_multiplier=config.noise_multiplier,
        clip_norm=config.clip_norm,
        sampling_rate=config.sampling_rate,
        learning_rate=config.learning_rate,
        num_steps=config.num_steps,
        canary_kind=config.canary_kind,
        canary_norm=config.canary_norm,
        delta=config.delta,
        confidence=config.confidence,
        seed=config.seed,
    )


@dataclasses.dataclass(frozen=True)
class OneRunAuditResult(AuditResult):
    """A one-run audit: the headline bound, each method's bound beside it, the claims, the inclusion draw and the scores.

    ``included`` is the inclusion draw, reproducible as
    ``draw_inclusion(num_canaries, config.inclusion_prob, inclusion_seed)``;
    ``observations`` the canaries' scores in the same order (higher: more
    likely included; what they are: ``score``). A bound that does not apply
    (the guessing bounds for an inclusion probability other than ½, the PLD
    family without subsampling, the Gaussian one for black-box scores) is null.
    """

    config: OneRunAuditConfig
    threat_model: str
    score: str
    bound: OneRunLowerBound
    steinke: OneRunSweep | None
    fdp_gdp: OneRunFDPBound | None
    fdp_pld: OneRunFDPBound | None
    gaussian: OneRunGaussianBound | None
    claimed_epsilon: float | None  # the claim tested: the user's; privaudit's accountant only for its own DP-SGD without one; None: no claim
    canary_epsilon: float | None  # the accountant's ε for a canary at its own rate (None: not computed, see accountant_epsilon)
    flagged: bool
    num_canaries: int
    num_in: int
    inclusion_seed: int
    included: tuple[bool, ...]
    observations: tuple[float, ...]
    test_accuracy: float | None  # None for the user's --train model
    model: dict[str, Any] = dataclasses.field(default_factory=dict)
    accountant_epsilon: float | None = None  # evidence: the accountant's ε for the σ, q and T of the config (None: σ is below what the claim needs)
    findings: tuple[str, ...] = ()  # evidence that contradicts the claim, each with its cause; each flags the run
    observe: str = "updates"
    heuristic: LastIterateHeuristic | None = None  # observe "final": Steinke et al.'s last-iterate heuristic, never a bound
    last_iterate: OneRunLowerBound | None = None  # observe "final": the test against the heuristic's own pair (refutes the heuristic, not DP-SGD)
    bound_over_heuristic: float | None = None  # observe "final": the headline bound ÷ the heuristic

    def headline(self) -> Headline:
        return Headline(
            value=self.bound.epsilon,
            label=(
                f"end-to-end ε lower bound from one run ({self.bound.refuted}; order statistics, one test)"
                if self.bound.refuted
                else f"end-to-end ε lower bound from one run (best of {', '.join(self.bound.methods)}; Bonferroni)"
            ),
            kind=self.bound.kind,
            confidence=self.bound.confidence,
            valid=self.bound.valid,
            flag=self.flagged if self.claim_verdict is not None or self.findings else None,
        )

    def inert_config_fields(self) -> frozenset[str]:
        """The embedded dataset beside the user's --data; the built-in model's settings beside the user's --train; the black box's options in a white box."""
        inert = {"dataset"} if self.config.data is not None else set()
        if self.config.train is not None:  # the metagradient surrogate still trains the built-in architecture at the learning rate
            inert |= {"clip_norm"} | (set() if self.config.input_canaries == "metagradient" else {"architecture", "learning_rate"})
        if self.config.threat_model != "black-box":
            inert |= {"input_canaries", "black_box_score"}
        if self.config.input_canaries != "metagradient":
            inert.add("meta_steps")
        return frozenset(inert)

    def side_by_side(self) -> dict[str, Any]:
        """Each method's bound, by name (those that apply), then the headline."""
        bounds = {"steinke": self.steinke, "fdp_gdp": self.fdp_gdp, "fdp_pld": self.fdp_pld, "gaussian": self.gaussian}
        return {name: bound for name, bound in bounds.items() if bound is not None} | {"headline": self.bound}
