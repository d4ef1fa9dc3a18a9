"""The dpsgd family's bottom layer: the config, the claim it is checked against, and the result types."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..._core.labelled import LABELLED_SUFFIXES
from ..._core.validation import check_choice, check_count, check_noise_multiplier, check_positive, check_probability
from ...canaries.gradient import CANARY_KINDS
from ...canaries.inputs import INPUT_CANARY_KINDS
from ...data.tabular import DATASET_NAMES
from ...models.classifiers import ARCHITECTURES
from ...models.loading import check_import_path
from ...observation.gradient import check_canary_rate
from ...observation.inputs import INPUT_SCORES
from ...stats.auc import GDPAUCLowerBound
from ...stats.bounds import EpsilonLowerBound
from ...stats.conversions import gaussian_epsilon, gdp_epsilon
from ...stats.pld import StepToEndEstimate
from ...training.dpsgd import BUGS
from ..base import AuditResult, Headline
from ..config import load_config
from ..verdicts import check_claim_fields

__all__ = [
    "DPSGDAuditConfig",
    "DPSGDAuditResult",
    "GaussianFit",
    "ObservationFits",
    "PrefixBound",
    "THREAT_MODELS",
    "claimed_step_epsilon",
    "user_data",
    "user_model",
]


THREAT_MODELS = {
    "white-box-gradient": "white-box, gradient canaries, all intermediate updates observed",
    "white-box-input": "white-box, input-space canary, all intermediate updates observed",
}


def claimed_step_epsilon(noise_multiplier: float, delta: float, canary_rate: float = 1.0) -> float:
    """ε(δ) that one step with canary rate q_c claims: exact GDP for q_c = 1, PLD otherwise.

    >>> round(claimed_step_epsilon(3.0023, 1e-5), 3)  # the 1.27 of Tight Auditing §6.3
    1.27
    """
    if canary_rate == 1.0:
        return float(gdp_epsilon(1.0 / noise_multiplier, delta))
    return gaussian_epsilon(noise_multiplier, delta, sampling_prob=canary_rate, num_steps=1)


@dataclasses.dataclass(frozen=True)
class DPSGDAuditConfig:
    """Everything a DP-SGD audit run depends on; JSON round-trips through :meth:`from_dict`.

    >>> DPSGDAuditConfig(canary_kind="spike")
    Traceback (most recent call last):
    ...
    ValueError: `canary_kind` must be one of 'dirac', 'constant', 'random', got 'spike'
    """

    dataset: str = "digits"  # or the path of a .npz, .csv or .parquet file (--data)
    architecture: str = "mlp"  # or "package.module:factory" building the user's torch module (--model)
    noise_multiplier: float = 3.0023  # one step at q_c = 1 claims ε = 1.27 at δ = 1e-5 (§6.3)
    clip_norm: float = 1.0
    sampling_rate: float = 0.05
    learning_rate: float = 0.5
    num_steps: int = 100
    canaries_per_step: int = 100
    num_slots: int = 1000
    canary_kind: str = "dirac"
    canary_moving: bool = True
    canary_slot_size: int = 8
    canary_norm: float = 1.0
    canary_rate: float = 1.0
    audit_groups: int = 2
    bug: str = "none"
    noise_factor: float = 1.0
    delta: float = 1e-5
    confidence: float = 0.95
    threshold: float = 0.5
    seed: int = 0
    threat_model: str = "white-box-gradient"
    input_canary: str = "blank"  # white-box-input only: mislabeled, blank, adversarial, crafted
    input_score: str = "dot"  # white-box-input only: dot (the paper's) or debiased
    weights: str | None = None  # the user's module only: safetensors or a torch.save'd state dict (--weights)
    label_col: str | None = None  # a .csv or .parquet dataset only: the label column (--label-col); unset: decided by check or refused
    claimed_epsilon: float | None = None  # the user's end-to-end claim, converted to per step; None: privaudit's accountant, per step
    claimed_delta: float | None = None  # its δ; None: `delta`

    def __post_init__(self):
        _check_model_and_data(self)
        check_claim_fields(self.claimed_epsilon, self.claimed_delta)
        check_choice(self.threat_model, "threat_model", tuple(THREAT_MODELS))
        check_choice(self.input_canary, "input_canary", INPUT_CANARY_KINDS)
        check_choice(self.input_score, "input_score", INPUT_SCORES)
        if self.threat_model == "white-box-input" and self.bug != "none":
            raise ValueError("`bug` must be 'none' with threat_model 'white-box-input' (bugs are injected into the gradient-canary trainer)")
        check_choice(self.canary_kind, "canary_kind", CANARY_KINDS)
        check_choice(self.bug, "bug", BUGS)
        check_count(self.num_steps, "num_steps", minimum=1)
        check_count(self.num_slots, "num_slots", minimum=2)
        check_count(self.canaries_per_step, "canaries_per_step", minimum=1, maximum=self.num_slots - 1)
        check_canary_rate(self.canary_rate)
        check_positive(self.clip_norm, "clip_norm")
        check_noise_multiplier(self.noise_multiplier)
        check_probability(self.delta, "delta")
        check_probability(self.confidence, "confidence")

    @classmethod
    def from_json(cls, path) -> DPSGDAuditConfig:
        return load_config(cls, path, "--config")


def user_model(architecture: str) -> bool:
    """Whether ``architecture`` is the import path of the user's module factory rather than a built-in name."""
    return ":" in architecture


def user_data(dataset: str) -> bool:
    """Whether ``dataset`` is the path of the user's dataset file rather than an embedded name."""
    return dataset not in DATASET_NAMES


def _check_model_and_data(config: DPSGDAuditConfig) -> None:
    if user_model(config.architecture):
        check_import_path(config.architecture, "architecture")
    else:
        check_choice(config.architecture, "architecture", ARCHITECTURES)
        if config.weights is not None:
            raise ValueError("`--weights` (`weights`) needs `--model package.module:factory` (`architecture`), the module the weights are for")
    if user_data(config.dataset):
        if not config.dataset.lower().endswith(LABELLED_SUFFIXES):
            names = ", ".join(repr(name) for name in DATASET_NAMES)
            raise ValueError(f"`dataset` must be one of {names} or a .npz, .csv or .parquet file, got {config.dataset!r}")
    if config.label_col is not None and not (user_data(config.dataset) and config.dataset.lower().endswith((".csv", ".parquet"))):
        raise ValueError("`--label-col` (`label_col`) needs `--data` (`dataset`) with a .csv or .parquet file")


@dataclasses.dataclass(frozen=True)
class PrefixBound:
    """The GDP / Clopper–Pearson bound on the first ``num_in`` and ``num_out`` observations."""

    num_in: int
    num_out: int
    epsilon: float


@dataclasses.dataclass(frozen=True)
class DPSGDAuditResult(AuditResult):
    """A DP-SGD audit: per-step bounds, the flag, the end-to-end estimate and the configuration."""

    config: DPSGDAuditConfig
    threat_model: str
    claimed_step_epsilon: float
    step_bounds: dict[str, EpsilonLowerBound | GDPAUCLowerBound]
    flagged: bool
    end_to_end: StepToEndEstimate
    claimed_end_to_end_epsilon: float
    num_in: int
    num_out: int
    num_twinned_blocks: int
    test_accuracy: float
    bound_vs_observations: tuple[PrefixBound, ...] = ()
    model: dict[str, Any] = dataclasses.field(default_factory=dict)  # what was audited: architecture or factory, weights, data, sizes

    def headline(self) -> Headline:
        bound = self.step_bounds["gdp_clopper_pearson"]
        return Headline(
            value=bound.epsilon,
            label="per-step ε lower bound (GDP, Clopper–Pearson)",
            kind=bound.kind,
            confidence=bound.confidence,
            valid=bound.valid,
            flag=None if self.claim_verdict is None else self.claim_verdict.flagged,
        )


@dataclasses.dataclass(frozen=True, eq=False)
class GaussianFit:
    """The normal distribution fitted to one set of observations: its mean, standard deviation and density.

    ``density`` is the fitted density on :attr:`ObservationFits.grid`; None for
    a point mass (standard deviation 0), which has no density to draw.
    """

    mean: float
    std: float
    density: np.ndarray | None


@dataclasses.dataclass(frozen=True, eq=False)
class ObservationFits:
    """What the observation histograms draw (Tight Auditing Figure 4), computed here so that plotting holds no statistics.

    ``bins``: histogram bin edges shared by both sets of observations;
    ``grid``: the observation values the fitted densities are evaluated at;
    ``fits``: "out" and "in" -> the Gaussian fitted to that set.
    """

    bins: np.ndarray
    grid: np.ndarray
    fits: dict[str, GaussianFit]
