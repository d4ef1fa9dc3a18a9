"""One-shot privacy estimation for DP-FedAvg (One-shot Algorithms 2 and 3, §5).

``AUDIT.run(config)`` (:class:`FLAudit`) trains the DP-FedAvg simulator
(:mod:`privaudit.training.fedavg`) on the embedded digits data with random
canary clients, once per value of ``participations`` (sampling "fixed"), and
hands the canaries' cosines to the statistical core. Two threat models:

* ``final`` (Algorithm 2): only the final model is seen. Observations: each
  inserted canary's cosine with θ_T − θ₀; null: N(0, 1/d) (Theorems 3.1–3.2).
  ε_lo uses the exact null law (:func:`privaudit.stats.one_shot.epsilon_lower_bound_cosines`).
* ``all`` (Algorithm 3): every iterate is seen. Observations: each canary's
  largest cosine with any round's aggregate; null: the same statistic of
  canaries that were never inserted, fitted by a Gaussian. ε_lo is the
  (ε, δ) bound of :func:`privaudit.stats.bounds.epsilon_lower_bound` with the
  unobserved canaries as "out" scores and a held-out threshold.

Every ε_est is an estimate (``kind="estimate"``), not a bound; each set of
cosines gets an Anderson–Darling check of the Gaussian fit it relies on.

The analytical ε comes from dp_accounting (PLD): Poisson-subsampled Gaussian
composed over the rounds for ``uniform`` sampling; for ``shuffled`` and
``fixed`` no tight amplification is known, so, as One-shot §5.1 does, the
adversary is assumed to know the rounds a client joined: the Gaussian
mechanism composed over its participations (the most any client can have).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..._core.validation import as_scores, check_choice, check_count, check_positive, check_probability
from ...canaries.update import UpdateCanaries
from ...data.tabular import load_dataset
from ...stats.bounds import EpsilonLowerBound, epsilon_lower_bound
from ...stats.conversions import gaussian_epsilon
from ...stats.one_shot import CosineLowerBound, GaussianityCheck, OneShotEstimate, anderson_gaussianity, epsilon_lower_bound_cosines, epsilon_one_shot
from ...training.fedavg import FedAvgConfig, FedAvgRun, model_dimension, simulate_fedavg
from ..base import Audit, AuditResult, AuditRun, Headline, Progress, no_progress
from ..config import config_from_dict
from ..verdicts import bound_ceiling, check_claim_fields, claim_of, own_or_user_claim, with_verdict

__all__ = [
    "AUDIT",
    "CosineDensities",
    "FLAudit",
    "ThreatModelEstimate",
    "FLAuditConfig",
    "FLAuditResult",
    "FLRunResult",
    "analytical_epsilon",
    "cosine_densities",
    "run_labels",
]

THREAT_MODELS = {
    "final": "final model only (Algorithm 2), null N(0, 1/d)",
    "all": "all iterates (Algorithm 3), null fitted to unobserved canaries",
}
INTERVALS = ("jeffreys", "clopper-pearson")


@dataclasses.dataclass(frozen=True)
class FLAuditConfig:
    """An FL audit: the canaries, the estimation settings and the simulator's ``training`` settings.

    ``participations`` lists the runs (one per value, sampling "fixed");
    with other samplings it must hold one value, which is ignored.

    >>> FLAuditConfig.from_dict({"num_canaries": 10, "training": {"noise_multiplier": -1}})
    Traceback (most recent call last):
    ...
    ValueError: `noise_multiplier` must be >= 0, got -1
    """

    dataset: str = "digits"
    num_canaries: int = 500
    num_unobserved: int = 500
    participations: tuple[int, ...] = (1,)
    delta: float = 1e-5
    confidence: float = 0.95
    interval: str = "clopper-pearson"  # exact; "jeffreys" is the paper's (approximate)
    equal_variance: bool = False
    measure_canary_effect: bool = True
    memory_budget_mb: float = 256.0
    seed: int = 0
    training: FedAvgConfig = FedAvgConfig()
    claimed_epsilon: float | None = None  # the user's claim for a client, end to end; None: privaudit's accountant for the simulation it ran
    claimed_delta: float | None = None  # its δ; None: `delta`

    def __post_init__(self):
        check_claim_fields(self.claimed_epsilon, self.claimed_delta)
        check_choice(self.dataset, "dataset", ("digits",))
        check_count(self.num_canaries, "num_canaries", minimum=2)
        check_count(self.num_unobserved, "num_unobserved", minimum=2)
        object.__setattr__(self, "participations", tuple(self.participations))
        if not self.participations:
            raise ValueError("`participations` must hold at least one value")
        for value in self.participations:
            check_count(value, "participations", minimum=1, maximum=self.training.num_rounds)
        if self.training.sampling != "fixed" and len(self.participations) > 1:
            raise ValueError(f"`participations` must hold one value unless sampling is 'fixed', got {list(self.participations)}")
        check_probability(self.delta, "delta")
        check_probability(self.confidence, "confidence")
        check_choice(self.interval, "interval", INTERVALS)
        check_positive(self.memory_budget_mb, "memory_budget_mb")
        check_count(self.seed, "seed")
        dimension = model_dimension(64, 10, self.training.hidden)
        total = self.num_canaries + self.num_unobserved
        if total >= dimension:
            raise ValueError(f"`num_canaries` + `num_unobserved` must be < the model dimension d = {dimension}, got {total}")

    @classmethod
    def from_dict(cls, values: dict, name: str = "config") -> FLAuditConfig:
        """The config from plain values (``training``: a dict of FedAvgConfig fields); keys and JSON types are checked."""
        return config_from_dict(cls, values, name)

    @classmethod
    def from_json(cls, path) -> FLAuditConfig:
        return AUDIT.load_config(path)


def analytical_epsilon(training: FedAvgConfig, population: int, delta: float) -> float:
    """The ε(δ) a canary client is promised, from dp_accounting (see the module docstring).

    >>> round(analytical_epsilon(FedAvgConfig(sampling="fixed", participations=1, noise_multiplier=1.0), 300, 1e-5), 2)
    4.38
    """
    sigma = training.noise_multiplier
    if sigma == 0.0:
        return float("inf")
    if training.sampling == "uniform":
        rate = min(1.0, training.clients_per_round / population)
        return gaussian_epsilon(sigma, delta, sampling_prob=rate, num_steps=training.num_rounds)
    if training.sampling == "shuffled":
        size = min(training.clients_per_round, population)
        count = -(-training.num_rounds * size // population)
    else:
        count = training.participations
    return gaussian_epsilon(sigma, delta, num_steps=count)


@dataclasses.dataclass(frozen=True)
class ThreatModelEstimate:
    """ε_est (an estimate) and ε_lo (a lower bound) under one threat model, with the Gaussianity checks."""

    threat_model: str
    estimate: OneShotEstimate
    lower_bound: CosineLowerBound | EpsilonLowerBound
    gaussianity: GaussianityCheck
    gaussianity_null: GaussianityCheck | None = None


@dataclasses.dataclass(frozen=True)
class FLRunResult(AuditResult):
    """One training run: per threat model ε_est, ε_lo and the Gaussianity checks."""

    participations: int
    sampling: str
    noise_multiplier: float
    dimension: int
    analytical_epsilon: float
    final: ThreatModelEstimate
    all: ThreatModelEstimate
    canary_participations: dict[str, float]
    test_accuracy: float
    test_accuracy_without_canaries: float | None
    seconds: float
    canary_seconds: float


@dataclasses.dataclass(frozen=True)
class FLAuditResult(AuditResult):
    """Every run of an FL audit, with the configuration, threat models and seed."""

    config: FLAuditConfig
    threat_models: dict[str, str]
    runs: tuple[FLRunResult, ...]
    seed: int

    def headline(self) -> Headline:
        worst = max(self.runs, key=lambda run: run.participations)
        return Headline(
            value=worst.final.estimate.epsilon,
            label=f"ε estimate, final model, client with {worst.participations} participation(s)",
            kind="estimate",
            confidence=None,
            valid=True,
            flag=None,
        )


def _estimate_run(run: FedAvgRun, config: FLAuditConfig, training: FedAvgConfig, population: int, accuracy_without) -> FLRunResult:
    k = run.num_observed
    observed_final, observed_max, null_max = run.final_cosines[:k], run.max_cosines[:k], run.max_cosines[k:]
    common: dict[str, Any] = dict(delta=config.delta)
    final = ThreatModelEstimate(
        threat_model=THREAT_MODELS["final"],
        estimate=epsilon_one_shot(observed_final, dimension=run.dimension, equal_variance=config.equal_variance, **common),
        lower_bound=epsilon_lower_bound_cosines(observed_final, dimension=run.dimension, confidence=config.confidence, interval=config.interval, **common),
        gaussianity=anderson_gaussianity(observed_final),
    )
    every = ThreatModelEstimate(
        threat_model=THREAT_MODELS["all"],
        estimate=epsilon_one_shot(observed_max, null_max, equal_variance=config.equal_variance, **common),
        lower_bound=epsilon_lower_bound(
            observed_max, null_max, method="eps-delta", interval=config.interval, confidence=config.confidence, seed=config.seed, **common
        ),
        gaussianity=anderson_gaussianity(observed_max),
        gaussianity_null=anderson_gaussianity(null_max),
    )
    counts = run.participations
    return FLRunResult(
        participations=training.participations,
        sampling=training.sampling,
        noise_multiplier=training.noise_multiplier,
        dimension=run.dimension,
        analytical_epsilon=analytical_epsilon(training, population, config.delta),
        final=final,
        all=every,
        canary_participations={"min": int(counts.min()), "mean": float(counts.mean()), "max": int(counts.max()), "never": int(np.count_nonzero(counts == 0))},
        test_accuracy=run.test_accuracy,
        test_accuracy_without_canaries=accuracy_without,
        seconds=run.seconds,
        canary_seconds=run.canary_seconds,
    )


def _train_and_estimate(config: FLAuditConfig) -> tuple[FLAuditResult, list[FedAvgRun]]:
    """Train once per ``participations`` value and estimate ε under both threat models (for :meth:`FLAudit.run`).

    Returns the result and the raw runs (their cosines). Raises ValueError
    when no canary took part in training.
    """
    data = load_dataset(config.dataset, seed=config.seed)
    dimension = model_dimension(data.num_features, data.num_classes, config.training.hidden)
    canaries = UpdateCanaries(config.num_canaries + config.num_unobserved, dimension, config.seed)
    population = data.x_train.shape[0] // config.training.examples_per_client + config.num_canaries
    budget = int(config.memory_budget_mb * 2**20)
    results, runs = [], []
    for participations in config.participations:
        training = dataclasses.replace(config.training, participations=participations) if config.training.sampling == "fixed" else config.training
        settings: dict[str, Any] = dict(num_observed=config.num_canaries, seed=config.seed, memory_budget_bytes=budget)
        run = simulate_fedavg(data, training, canaries, **settings)
        if run.participations.sum() == 0:
            raise ValueError("no canary participated in training: raise `num_rounds`, `clients_per_round` or `num_canaries`")
        without = None
        if config.measure_canary_effect:  # same schedule and noise, canary updates left out
            without = simulate_fedavg(data, training, canaries, insert_canaries=False, track_all=False, **settings).test_accuracy
        results.append(_estimate_run(run, config, training, population, without))
        runs.append(run)
    result = FLAuditResult(config=config, threat_models=dict(THREAT_MODELS), runs=tuple(results), seed=config.seed)
    return _with_verdict(result, config), runs


def _with_verdict(result: FLAuditResult, config: FLAuditConfig) -> FLAuditResult:
    """The largest ε_lo of the headline run (most participations) against the user's claim, else the accountant's for the simulation privaudit ran.

    The ε_est headline is an estimate and is never held against a claim.
    The ceiling is reported for the all-iterates bound (a Clopper–Pearson
    bound on held-out canaries); the final-model bound's exact null test has none here.
    """
    worst = max(result.runs, key=lambda run: run.participations)
    bound = max((worst.final.lower_bound, worst.all.lower_bound), key=lambda item: item.epsilon)
    claim = own_or_user_claim(claim_of(config.claimed_epsilon, config.claimed_delta, delta=config.delta), worst.analytical_epsilon, delta=config.delta)
    ceiling = bound_ceiling(bound, raise_with="more canaries (num_canaries, num_unobserved)") if isinstance(bound, EpsilonLowerBound) else None
    return with_verdict(result, bound=bound.epsilon, bound_delta=config.delta, quantity="end-to-end", claim=claim, ceiling=ceiling)


def run_labels(result: FLAuditResult) -> list[str]:
    """One label per run of ``result``: its number of participations (sampling "fixed"), else its sampling."""
    return [str(run.participations) if run.sampling == "fixed" else run.sampling for run in result.runs]


@dataclasses.dataclass(frozen=True, eq=False)
class CosineDensities:
    """What a cosine figure draws (One-shot Figures 1 and 3), computed here so that plotting holds no statistics.

    ``grid``: the cosines the densities are evaluated at; ``densities``: label
    -> kernel density estimate of that set of cosines on ``grid``; ``null``:
    the null's density on ``grid``, described by ``null_label``.
    """

    grid: np.ndarray
    densities: dict[str, np.ndarray]
    null: np.ndarray
    null_label: str


def cosine_densities(groups, *, dimension=None, null_cosines=None, points: int = 400) -> CosineDensities:
    """Kernel density estimates of each set of cosines in ``groups`` ({label: cosines}) and the null's density.

    The null is N(0, 1/``dimension``) (final model) or a kernel density
    estimate of ``null_cosines`` (unobserved canaries, all iterates); give one
    of them. The grid spans every cosine and four null standard deviations.

    >>> rng = np.random.default_rng(0)
    >>> drawn = cosine_densities({"1": rng.normal(0.02, 0.01, 100)}, dimension=10_000)
    >>> drawn.grid.size, list(drawn.densities), drawn.null_label
    (400, ['1'], 'null N(0, 1/d)')
    """
    from scipy import stats

    if (dimension is None) == (null_cosines is None):
        raise ValueError("exactly one of `dimension` and `null_cosines` must be given")
    samples = {str(label): as_scores(values, f"groups[{label!r}]", min_size=2) for label, values in groups.items()}
    if not samples:
        raise ValueError("`groups` must hold at least one set of cosines")
    if null_cosines is not None:
        null_cosines = as_scores(null_cosines, "null_cosines", min_size=2)
        spread = float(null_cosines.std())
    else:
        dimension = check_count(dimension, "dimension", minimum=2)
        spread = 1.0 / np.sqrt(dimension)
    everything = np.concatenate(list(samples.values()) + ([null_cosines] if null_cosines is not None else []))
    grid = np.linspace(min(everything.min(), -4 * spread), max(everything.max(), 4 * spread) + spread, points)
    densities = {label: stats.gaussian_kde(values)(grid) for label, values in samples.items()}
    if null_cosines is not None:
        return CosineDensities(grid=grid, densities=densities, null=stats.gaussian_kde(null_cosines)(grid), null_label="null (unobserved canaries)")
    return CosineDensities(grid=grid, densities=densities, null=stats.norm.pdf(grid, 0.0, spread), null_label="null N(0, 1/d)")


class FLAudit(Audit):
    """One-shot FL estimation (Andrew et al.): DP-FedAvg with random canary clients, ε_est and ε_lo per threat model."""

    name = "fl"
    title = "One-shot FL estimation"
    description = "One-shot FL estimation (Andrew et al.): DP-FedAvg with random canary clients, ε_est and ε_lo per threat model."
    config_type = FLAuditConfig
    result_type = FLAuditResult
    default_resource = "fl.json"
    requires = ("sklearn",)

    def memory_estimate(self, config: FLAuditConfig) -> tuple[int, str]:
        # the model's d parameters for every client update of a round (float64)
        dimension = model_dimension(64, 10, config.training.hidden)
        return 8 * dimension * (config.training.clients_per_round + 4), f"`training.hidden` = {config.training.hidden}"

    tiny_overrides = {
        "num_canaries": 20,
        "num_unobserved": 20,
        "participations": (1, 2),
        "measure_canary_effect": False,
        "training": {"num_rounds": 3, "clients_per_round": 10, "hidden": 16},
    }

    def run(self, config: FLAuditConfig, *, progress: Progress | None = None) -> AuditRun:
        detail = f"{len(config.participations)} run(s), {config.training.num_rounds} rounds each"
        (progress or no_progress)("training DP-FedAvg with canary clients", detail=detail)
        result, runs = _train_and_estimate(config)
        labels = run_labels(result)
        final = [run.final_cosines[: run.num_observed] for run in runs]
        every = [run.max_cosines[: run.num_observed] for run in runs]
        null_all = runs[0].max_cosines[runs[0].num_observed :]
        observations = {
            "dimension": runs[0].dimension,
            "final": final,
            "all": every,
            "null_all": null_all,
            # what the cosine figures draw: one density per run, and the null's, under each threat model
            "densities": {
                "final": cosine_densities(dict(zip(labels, final, strict=True)), dimension=runs[0].dimension),
                "all": cosine_densities(dict(zip(labels, every, strict=True)), null_cosines=null_all),
            },
        }
        return AuditRun(self.name, config, result, observations=observations)


AUDIT = FLAudit()
