"""White-box audit of DP-SGD with gradient canaries (Tight Auditing Algorithm 2, §5.5, §6.3).

``AUDIT.run(config)`` (:class:`DPSGDAudit`) trains a small model on embedded data with the
reference DP-SGD (:mod:`privaudit.training.dpsgd`), optionally with a bug,
collects canary observations (:mod:`privaudit.observation.gradient`) and hands
them to the statistical core. :func:`bound_step_observations` is the part
that any audited implementation (Opacus, a user's step function) shares.

What the numbers are:

* ``step``: lower bounds on the ε(δ) of *one step* (the mechanism with
  canary rate q_c): GDP and (ε, δ) with Clopper–Pearson, valid at the stated
  confidence; GDP with the Bayesian interval, a credible bound. The threshold
  is fixed in advance (default 0.5, halfway between the normalised means 0
  and 1), so no observation is spent on choosing it. For q_c = 1 also the
  rank-based GDP bound (:mod:`privaudit.stats.auc`): it uses every
  observation rather than one ROC point, so it is tighter for weak leakage
  (small ε), but its interval is asymptotic (an approximate lower bound).
* ``flagged``: the Clopper–Pearson GDP bound exceeds the claimed per-step ε,
  i.e. the claim is rejected at the stated confidence.
* ``end_to_end``: §5.5's composition of the per-step bound over the training
  run (PLD with the data sampling rate): an *estimate*, labelled so.

The audited model and data are the embedded ones (``dataset`` "digits" or
"breast-cancer", ``architecture`` "linear", "mlp" or "cnn"), or the user's:
``architecture`` may be an import path ``package.module:factory`` of a
function that builds a ``torch.nn.Module`` returning class logits (optionally
with ``weights``, loaded strictly; see :mod:`privaudit.models.loading`), and
``dataset`` a ``.npz``, ``.csv`` or ``.parquet`` file (label column
``label_col``, else the one column that could be the label, else refused; see
:mod:`privaudit._core.labelled`), whose label decision the result records in
``conventions``.
The user's module is trained by the same reference DP-SGD with the config's
DP settings; ``privaudit audit dpsgd --model ... --data ...`` sets these.

Threat models: ``white-box-gradient`` (gradient canaries on audit
coordinates, the reference DP-SGD, optionally with a bug) and
``white-box-input`` (an input-space canary, :mod:`privaudit.observation.inputs`);
every intermediate update is seen in both. The black-box audit (Algorithm 1)
trains many models and lives in :mod:`privaudit.audits.blackbox`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import numpy as np

from ..._core.validation import as_scores, check_count, check_positive, check_probability
from ...canaries.gradient import GradientCanary
from ...canaries.inputs import make_input_canary
from ...data.tabular import load_dataset, load_dataset_file
from ...models.classifiers import build_classifier, count_parameters
from ...models.loading import build_torch_module
from ...observation.gradient import GradientObservations, collect_gradient_observations
from ...observation.inputs import collect_input_observations
from ...stats.auc import gdp_auc_lower_bound
from ...stats.bounds import EpsilonLowerBound, epsilon_lower_bound
from ...stats.claim_conversion import conversion_text, per_step_claim
from ...stats.conversions import gaussian_epsilon, gdp_mu
from ...stats.metrics import roc_curve
from ...stats.pld import SubsampledGaussian, step_to_end_epsilon
from ...stats.tradeoff import tradeoff_eps_delta, tradeoff_gdp
from ...training.dpsgd import BUGS, DPSGDConfig, ReferenceDPSGD
from ..base import Audit, AuditRun, Progress, no_progress
from ..scores.audit import TRADEOFF_GRID, ScoresCurves
from ..verdicts import bound_verdict, claim_of, own_or_user_claim
from .config import (
    THREAT_MODELS,
    DPSGDAuditConfig,
    DPSGDAuditResult,
    GaussianFit,
    ObservationFits,
    PrefixBound,
    claimed_step_epsilon,
    user_data,
    user_model,
)

__all__ = [
    "AUDIT",
    "DPSGDAudit",
    "audited_model_and_data",
    "bound_step_observations",
    "bounds_on_prefixes",
    "detect_bugs",
    "observation_fits",
    "prefix_sizes",
    "tradeoff_curves",
]


def bound_step_observations(
    observations: GradientObservations, *, noise_multiplier: float, delta: float, confidence: float = 0.95, threshold=0.5, seed=0
) -> dict:
    """Per-step ε bounds from normalised observations, beside the claimed per-step ε."""
    rate = observations.canary_rate
    family = "gdp" if rate == 1.0 else SubsampledGaussian(sampling_prob=rate, num_steps=1)
    common = dict(delta=delta, confidence=confidence, threshold=threshold, seed=seed)
    bounds: dict[str, Any] = {
        "gdp_clopper_pearson": epsilon_lower_bound(observations.in_scores, observations.out_scores, method=family, **common),
        "eps_delta_clopper_pearson": epsilon_lower_bound(observations.in_scores, observations.out_scores, method="eps-delta", **common),
    }
    if rate == 1.0:
        bounds["gdp_bayes"] = epsilon_lower_bound(observations.in_scores, observations.out_scores, method="gdp", interval="bayes", **common)
        bounds["gdp_rank"] = gdp_auc_lower_bound(observations.in_scores, observations.out_scores, delta=delta, confidence=confidence)
    claimed = claimed_step_epsilon(noise_multiplier, delta, rate)
    return {"claimed_epsilon": claimed, "bounds": bounds, "flagged": bounds["gdp_clopper_pearson"].epsilon > claimed}


_PREFIX_START, _PREFIX_STEPS = 100, 12


def prefix_sizes(num_in: int, num_out: int, sizes=None) -> list[tuple[int, int]]:
    """(n_in, n_out) pairs, increasing, with n_out the same fraction of ``num_out`` as n_in is of ``num_in``.

    >>> prefix_sizes(1000, 500)[:3], prefix_sizes(1000, 500)[-1]
    ([(100, 50), (123, 62), (152, 76)], (1000, 500))
    >>> prefix_sizes(30, 30, [10, 30, 10])
    [(10, 10), (30, 30)]
    """
    if sizes is None:
        in_sizes = np.rint(np.geomspace(min(_PREFIX_START, num_in), num_in, _PREFIX_STEPS)).astype(int)
    else:
        in_sizes = np.array([check_count(size, "sizes", minimum=1, maximum=num_in) for size in np.atleast_1d(sizes)], dtype=int)
        if not in_sizes.size:
            raise ValueError("`sizes` must hold at least one value, got none")
    # rounding can repeat sizes for short arrays; each prefix is computed once, in increasing order
    return [(n, max(1, int(np.rint(n * num_out / num_in)))) for n in sorted({int(n) for n in in_sizes})]


def bounds_on_prefixes(in_scores, out_scores, *, delta: float, threshold: float = 0.5, confidence: float = 0.95, sizes=None) -> tuple[PrefixBound, ...]:
    """GDP / Clopper–Pearson lower bound on growing prefixes of the observations (Tight Auditing Figure 3).

    Prefixes, not resamples: each point reuses the previous observations, as more runs come in.
    """
    in_scores, out_scores = as_scores(in_scores, "in_scores"), as_scores(out_scores, "out_scores")
    return tuple(
        PrefixBound(
            n_in,
            n_out,
            float(epsilon_lower_bound(in_scores[:n_in], out_scores[:n_out], delta=delta, method="gdp", threshold=threshold, confidence=confidence).epsilon),
        )
        for n_in, n_out in prefix_sizes(len(in_scores), len(out_scores), sizes)
    )


def observation_fits(in_scores, out_scores, *, bins: int = 60, points: int = 400) -> ObservationFits:
    """Shared histogram bins and the Gaussian fitted to each set of observations, its density on a grid.

    Under the Gaussian mechanism the two sets should look like N(0, σ²) and
    N(μσ, σ²), so the fits show at a glance whether the GDP reading is sensible.

    >>> fits = observation_fits(np.array([1.0, 2.0, 3.0]), np.zeros(3))
    >>> fits.bins.size, round(fits.fits["in"].mean, 3), fits.fits["out"].density is None
    (61, 2.0, True)
    """
    from scipy import stats

    in_scores, out_scores = as_scores(in_scores, "in_scores"), as_scores(out_scores, "out_scores")
    edges = np.histogram_bin_edges(np.concatenate([in_scores, out_scores]), bins=bins)
    low, high = edges[0], edges[-1]
    if low == high:  # every observation equal: widen the grid so the figure is not empty
        low, high = low - 0.5, high + 0.5
    grid = np.linspace(low, high, points)
    fits = {}
    for name, scores in (("out", out_scores), ("in", in_scores)):
        mean, std = float(np.mean(scores)), float(np.std(scores))
        fits[name] = GaussianFit(mean=mean, std=std, density=stats.norm.pdf(grid, loc=mean, scale=std) if std > 0 else None)
    return ObservationFits(bins=edges, grid=grid, fits=fits)


def tradeoff_curves(in_scores, out_scores, *, claimed_epsilon: float, delta: float):
    """The attack's empirical ROC and the claimed guarantee's trade-off curves, as μ-GDP and as (ε, δ)-DP.

    The attack is "in iff observation >= t", one point per threshold; the μ
    is the one that implies the claimed (ε, δ). An attack whose curve dips
    below the claimed curves refutes the claim (up to sampling error).
    Returns a :class:`privaudit.audits.scores.audit.ScoresCurves`.

    >>> curves = tradeoff_curves(np.array([1.0, 2.0]), np.array([0.0, 1.5]), claimed_epsilon=1.0, delta=1e-5)
    >>> list(curves.references), curves.alpha.size
    (['claimed 0.268-GDP', 'claimed (1, 1e-05)-DP'], 1001)
    """
    in_scores, out_scores = as_scores(in_scores, "in_scores"), as_scores(out_scores, "out_scores")
    claimed_epsilon = check_positive(claimed_epsilon, "claimed_epsilon", allow_zero=True)
    delta = check_probability(delta, "delta")
    curve = roc_curve(in_scores, out_scores)
    mu = gdp_mu(claimed_epsilon, delta)
    alpha = np.linspace(0.0, 1.0, TRADEOFF_GRID)
    references = {
        f"claimed {mu:.3g}-GDP": np.asarray(tradeoff_gdp(alpha, mu)),
        f"claimed ({claimed_epsilon:.3g}, {delta:.2g})-DP": np.asarray(tradeoff_eps_delta(alpha, claimed_epsilon, delta)),
    }
    return ScoresCurves(roc_fpr=curve.fpr, roc_tpr=curve.tpr, alpha=alpha, references=references)


def _train_and_audit(config: DPSGDAuditConfig) -> tuple[DPSGDAuditResult, GradientObservations]:
    """Train with the reference DP-SGD while auditing every step; the result and the observations (for :meth:`DPSGDAudit.run`)."""
    import torch

    model, data, audited = audited_model_and_data(config)
    training = DPSGDConfig(
        noise_multiplier=config.noise_multiplier,
        clip_norm=config.clip_norm,
        sampling_rate=config.sampling_rate,
        learning_rate=config.learning_rate,
        bug=config.bug,
        noise_factor=config.noise_factor,
    )
    if config.threat_model == "white-box-input":
        observations = _input_observations(model, data, config)
    else:
        observations = _gradient_observations(model, data, training, config)
    step = bound_step_observations(
        observations, noise_multiplier=config.noise_multiplier, delta=config.delta, confidence=config.confidence, threshold=config.threshold, seed=config.seed
    )
    end_to_end = step_to_end_epsilon(
        step["bounds"]["gdp_clopper_pearson"].epsilon, delta=config.delta, num_steps=config.num_steps, sampling_prob=config.sampling_rate
    )
    with torch.no_grad():
        predictions = model(torch.as_tensor(data.x_test)).argmax(1).numpy()
    result = DPSGDAuditResult(
        config=config,
        threat_model=THREAT_MODELS[config.threat_model],
        claimed_step_epsilon=step["claimed_epsilon"],
        step_bounds=step["bounds"],
        flagged=bool(step["flagged"]),
        end_to_end=end_to_end,
        claimed_end_to_end_epsilon=gaussian_epsilon(config.noise_multiplier, config.delta, sampling_prob=config.sampling_rate, num_steps=config.num_steps),
        num_in=int(observations.in_scores.size),
        num_out=int(observations.out_scores.size),
        num_twinned_blocks=observations.num_twinned_blocks,
        test_accuracy=float(np.mean(predictions == data.y_test)),
        bound_vs_observations=bounds_on_prefixes(
            observations.in_scores, observations.out_scores, delta=config.delta, threshold=config.threshold, confidence=config.confidence
        ),
        model=audited,
        conventions=data.conventions,
    )
    return _with_step_verdict(result, config), observations


def _with_step_verdict(result: DPSGDAuditResult, config: DPSGDAuditConfig) -> DPSGDAuditResult:
    """The per-step bound against a per-step claim: the user's end-to-end claim converted with q and T, or privaudit's accountant's per step."""
    user, conversion = claim_of(config.claimed_epsilon, config.claimed_delta, delta=config.delta), None
    if user is not None:
        step = per_step_claim(user, sampling_rate=config.sampling_rate, num_steps=config.num_steps, canary_rate=config.canary_rate, delta=config.delta)
        conversion = conversion_text(user, step, sampling_rate=config.sampling_rate, num_steps=config.num_steps, canary_rate=config.canary_rate)
        user = step
    claim = own_or_user_claim(user, result.claimed_step_epsilon, delta=config.delta, quantity="per-step")
    bound = cast(EpsilonLowerBound, result.step_bounds["gdp_clopper_pearson"])
    family: Any = "gdp" if config.canary_rate == 1.0 else SubsampledGaussian(sampling_prob=config.canary_rate, num_steps=1)
    result = bound_verdict(
        result,
        bound,
        claim=claim,
        raise_with="more canary observations (more steps or canaries per step)",
        method=family,
        quantity="per-step",
        conversion=conversion,
    )
    return dataclasses.replace(result, flagged=bool(result.claim_verdict is not None and result.claim_verdict.flagged))


def audited_model_and_data(config: DPSGDAuditConfig):
    """(model, dataset, description) that ``config`` audits: the embedded ones, or the user's module and file, checked.

    The user's module is built by its factory with ``torch.manual_seed(config.seed)``
    (its weights then loaded strictly, when ``weights`` is set), and must map a
    batch of the data's features to logits of shape (n, classes), with a class
    for every label, and have per-example gradients (no BatchNorm), before any
    training starts.
    """
    if user_data(config.dataset):
        data = load_dataset_file(config.dataset, name="--data", label_col=config.label_col, seed=config.seed)
    else:
        data = load_dataset(config.dataset, seed=config.seed)
    if user_model(config.architecture):
        model = build_torch_module(config.architecture, config.weights, seed=config.seed, factory_name="--model", weights_name="--weights")
        _check_user_module(model, data, config.architecture)
    else:
        model = build_classifier(config.architecture, input_dim=data.num_features, num_classes=data.num_classes, image_shape=data.image_shape, seed=config.seed)
    audited = {
        "architecture": config.architecture,
        "weights": config.weights,
        "dataset": config.dataset,
        "label_col": config.label_col,
        "num_parameters": count_parameters(model),
        "num_features": data.num_features,
        "num_classes": data.num_classes,
        "num_train": int(len(data.y_train)),
        "num_test": int(len(data.y_test)),
    }
    return model, data, audited


def _short(error: Exception) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"


def _check_user_module(model, data, factory: str) -> None:
    """Refuse, before training, a module that does not take the data, is not a classifier or has no per-example gradients."""
    import copy

    import torch

    x, y = data.x_train[:2], data.y_train[:2]
    try:
        with torch.no_grad():
            out = model(torch.as_tensor(x))
    except Exception as error:  # the user's forward on inputs of the wrong shape or dtype
        raise ValueError(f"`--data` does not fit the module of `--model` {factory!r} ({data.num_features} features): {_short(error)}") from None
    classes = max(2, data.num_classes)
    if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[0] != len(x) or out.shape[1] < classes or not out.is_floating_point():
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(
            f"`--model` {factory!r} must return class logits of shape (n, classes) with classes >= {classes} "
            f"(the labels of `--data` go up to {data.num_classes - 1}), got {got} for n = {len(x)}"
        )
    try:  # one step of the reference DP-SGD on a copy: per-example gradients through torch.func
        ReferenceDPSGD(copy.deepcopy(model), x, y, DPSGDConfig(noise_multiplier=1.0, sampling_rate=1.0), audit_size=0).step()
    except Exception as error:
        raise ValueError(
            f"`--model` {factory!r}: DP-SGD cannot compute per-example gradients of this module ({_short(error)}); "
            "use layers that treat each example on its own (no BatchNorm), as Opacus requires"
        ) from None


def _gradient_observations(model, data, training: DPSGDConfig, config: DPSGDAuditConfig) -> GradientObservations:
    canary = GradientCanary(kind=config.canary_kind, moving=config.canary_moving, slot_size=config.canary_slot_size, norm=config.canary_norm)
    trainer = ReferenceDPSGD(
        model, data.x_train, data.y_train, training, audit_size=config.num_slots * canary.slot_size, audit_groups=config.audit_groups, seed=config.seed
    )
    return collect_gradient_observations(
        trainer.step,
        num_steps=config.num_steps,
        canaries_per_step=config.canaries_per_step,
        num_slots=config.num_slots,
        clip_norm=config.clip_norm,
        denominator=trainer.denominator,
        canary=canary,
        canary_rate=config.canary_rate,
        num_groups=config.audit_groups,
        seed=config.seed,
    )


def _input_observations(model, data, config: DPSGDAuditConfig) -> GradientObservations:
    canary_x, canary_y = make_input_canary(config.input_canary, model, data.x_train, data.y_train, seed=config.seed)
    return collect_input_observations(
        model,
        data.x_train,
        data.y_train,
        canary_x,
        canary_y,
        noise_multiplier=config.noise_multiplier,
        clip_norm=config.clip_norm,
        sampling_rate=config.sampling_rate,
        learning_rate=config.learning_rate,
        num_steps=config.num_steps,
        canary_rate=config.canary_rate,
        score=config.input_score,
        seed=config.seed,
    )


def detect_bugs(base: DPSGDAuditConfig | None = None, *, true_epsilon: float = 1.57) -> dict[str, DPSGDAuditResult]:
    """Audit the correct reference DP-SGD and each bug of §6.3; ``result.flagged`` says which were caught.

    The canary's norm is 100 clip norms, so an implementation that does not
    clip each example shows. "small-noise" gets the noise that makes one step
    ``true_epsilon``-private while ``base`` claims its own noise multiplier.
    """
    base = base or DPSGDAuditConfig(canary_norm=100.0)
    claimed = claimed_step_epsilon(base.noise_multiplier, base.delta)
    factor = gdp_mu(claimed, base.delta) / gdp_mu(true_epsilon, base.delta)  # σ_true / σ_claimed
    results = {}
    for bug in BUGS:
        config = dataclasses.replace(base, bug=bug, noise_factor=factor if bug == "small-noise" else 1.0)
        results[bug] = cast(DPSGDAuditResult, AUDIT.run(config).result)
    return results


class DPSGDAudit(Audit):
    """White-box DP-SGD audit with gradient (or input-space) canaries: per-step bounds, flag, end-to-end estimate."""

    name = "dpsgd"
    title = "DP-SGD (white-box, Tight Auditing)"
    description = "White-box DP-SGD audit with gradient canaries (Tight Auditing §5.5, §6.3): per-step ε bound, flag, end-to-end estimate."
    config_type = DPSGDAuditConfig
    result_type = DPSGDAuditResult
    default_resource = "dpsgd.json"
    requires = ("torch", "sklearn")

    def memory_estimate(self, config: DPSGDAuditConfig) -> tuple[int, str]:
        # canary directions and released audit coordinates for every step, plus one step's canary rows (float64)
        width = config.num_slots * config.canary_slot_size
        return 8 * (
            2 * config.num_steps * width + config.canaries_per_step * width
        ), f"`num_steps` × `num_slots` × `canary_slot_size` = {config.num_steps} × {config.num_slots} × {config.canary_slot_size}"

    tiny_overrides = {"num_steps": 3, "canaries_per_step": 10, "num_slots": 100}

    def run(self, config: DPSGDAuditConfig, *, progress: Progress | None = None) -> AuditRun:
        detail = f"{config.architecture} on {config.dataset}, {config.num_steps} steps, bug: {config.bug}"
        (progress or no_progress)("training with DP-SGD and observing canaries", detail=detail)
        result, observations = _train_and_audit(config)
        in_scores, out_scores = observations.in_scores, observations.out_scores
        drawn = {
            "in_scores": in_scores,
            "out_scores": out_scores,
            "fits": observation_fits(in_scores, out_scores),
            "curves": tradeoff_curves(in_scores, out_scores, claimed_epsilon=result.claimed_step_epsilon, delta=config.delta),
        }
        return AuditRun(self.name, config, result, observations=drawn)


AUDIT = DPSGDAudit()
