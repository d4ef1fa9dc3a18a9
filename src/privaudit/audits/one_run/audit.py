"""One-run audit of DP-SGD: m canaries, each kept in or out for the whole of one training run (Steinke et al. 2023).

One training run of the reference DP-SGD (:mod:`privaudit.training.dpsgd`)
on the embedded data and model, the pieces of the DP-SGD audit
(:func:`privaudit.audits.dpsgd.audit.audited_model_and_data`). Before training,
each of ``num_canaries`` canaries is included by an independent coin with
probability ``inclusion_prob``, drawn from a recorded seed
(``inclusion_seed``; :func:`privaudit.observation.one_run.draw_inclusion`).

Threat models:

* ``"white-box"`` (default): gradient canaries on audit coordinates, every
  intermediate update observed. An included canary joins the batch in each
  step with probability ``canary_rate`` (default: the data's sampling rate,
  so it is sampled as an example is and the claimed ε covers it). Its score
  is the sum over the run of the released update along its own coordinate,
  normalised (:mod:`privaudit.observation.one_run`).
  With ``observe="final"`` (``--observe final``, the hidden state) the same
  canaries are inserted but only the final parameters are read: each score
  is its audit coordinate's final minus initial value, rescaled
  (:mod:`.final_model`), and the result adds Steinke et al.'s last-iterate
  heuristic (labelled a heuristic), the test against its pair, and bound ÷
  heuristic.
* ``"black-box"``: input canaries, mislabeled examples (distinct examples of
  the dataset with a random wrong label) appended to the training set; the
  score of a canary is the negated loss of the final model at its label.
  ``train`` (``--train package.module:fn``) replaces the built-in model and
  DP-SGD by the user's training, with the contract of the black-box audit
  (:func:`privaudit.audits.blackbox.audit.check_train_function`).

What the numbers are, all at ``confidence`` and ``delta``:

* ``steinke``: Steinke, Nasr and Jagielski (2023), valid for any (ε, δ)-DP
  mechanism (:func:`privaudit.epsilon_one_run_sweep`);
* ``fdp_gdp``: Mahloujifar, Melis and Chaudhuri (2024) against μ-GDP, and,
  when canaries are subsampled, ``fdp_pld`` against the trade-off curve of
  the subsampled, composed Gaussian mechanism (``SubsampledGaussian(q, T)``,
  the mechanism's own family; the GDP figure then assumes a GDP shape);
* ``gaussian`` (white-box only): the t-based bound on μ from the summed
  observations (:func:`privaudit.stats.one_run_gaussian.epsilon_one_run_gaussian`),
  exact when canaries are in every step (the observations are then Gaussian),
  asymptotic and labelled so otherwise;
* ``bound`` (the headline): white box with ``methods`` unset, the
  order-statistics test against the claim's own DP-SGD family, compared
  like for like (:mod:`.family`); otherwise
  :func:`privaudit.one_run_lower_bound` over the
  methods fixed in advance (``methods``, default every method whose bound is
  exact here), Bonferroni-corrected over all their tests. Each side-by-side
  figure is valid alone; only ``bound`` may be read as the best of them.

``claimed_epsilon`` is the claim tested: the user's (``claimed_epsilon``,
``--claimed-epsilon``), or, for privaudit's own DP-SGD without one, what its
accountant gives the run (noise multiplier, sampling rate, steps); with
``--train`` and no claim it is null and there is no verdict.
``accountant_epsilon`` is that accountant's ε for the config's settings,
evidence beside a user's claim; ``canary_epsilon`` what it gives for a
canary at its own rate (privaudit's claim for its own canaries). A σ that
ran below the least σ the claim allows is a finding (``findings``,
:mod:`.evidence`); ``flagged`` says the bound exceeds the claim or a
finding contradicts it. This audit is the DP-SGD audit's end-to-end lower bound from
one training run (:func:`config_from_dpsgd` sets it up for a DP-SGD config);
the DP-SGD audit's own end-to-end figure is an estimate composed from its
per-step bound.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..._core.resources import check_memory
from ..._core.seeding import child_seeds
from ...canaries.gradient import GradientCanary
from ...canaries.metagradient import optimise_input_canaries, surrogate_memory
from ...integrations.observed import observing_training, typed_settings_status
from ...observation.one_run import collect_one_run_observations, draw_inclusion
from ...stats.conversions import gaussian_epsilon
from ...stats.one_run import epsilon_one_run_sweep
from ...stats.one_run_combined import OneRunLowerBound, one_run_lower_bound
from ...stats.one_run_fdp import epsilon_one_run_fdp
from ...stats.one_run_gaussian import epsilon_one_run_gaussian
from ...stats.pld import SubsampledGaussian
from ...stats.verdict import OWN_ACCOUNTANT, Claim
from ...training.dpsgd import DPSGDConfig, ReferenceDPSGD
from ..base import Audit, AuditRun, Progress, no_progress
from ..blackbox.audit import _score, _user_canary_logits, check_train_function
from ..dpsgd.audit import audited_model_and_data, observation_fits
from ..dpsgd.config import DPSGDAuditConfig
from ..verdicts import bound_verdict, claim_of, own_or_user_claim
from .config import BLACK_BOX_SCORES, FINAL_SCORE, INPUT_CANARIES, OBSERVE, SCORES, THREAT_MODELS, OneRunAuditConfig, OneRunAuditResult, _gaussian_exact
from .evidence import noise_evidence, observed_settings
from .family import dpsgd_null
from .final_model import final_model_observations, heuristic_and_test

__all__ = ["AUDIT", "OneRunAudit", "mislabeled_canaries", "one_run_bounds", "run_one_run_audit"]


def one_run_bounds(
    scores: Any,
    included: Any,
    *,
    delta: float,
    confidence: float = 0.95,
    methods: Any = ("steinke", "fdp"),
    sampling_prob: float = 1.0,
    num_steps: int = 1,
    inclusion_prob: float = 0.5,
    gaussian: bool = False,
    gaussian_exact: bool = True,
) -> dict[str, Any]:
    """Every one-run bound side by side on the same scores, and the headline over ``methods``.

    ``sampling_prob`` and ``num_steps`` describe a canary's mechanism (the
    f-DP PLD family, used when ``sampling_prob`` < 1); ``gaussian`` adds the
    Gaussian bound (white-box sums only), exact or asymptotic.

    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(1000) < 0.5
    >>> bounds = one_run_bounds(3.0 * member + rng.normal(size=1000), member, delta=1e-5, gaussian=True, methods=("steinke", "fdp", "gaussian"))
    >>> sorted(name for name, bound in bounds.items() if bound is not None), bounds["bound"].method
    (['bound', 'fdp_gdp', 'gaussian', 'steinke'], 'gaussian')
    """
    guessing = inclusion_prob == 0.5
    family: Any = SubsampledGaussian(sampling_prob=sampling_prob, num_steps=num_steps) if sampling_prob < 1.0 else "gdp"
    common = dict(delta=delta, confidence=confidence)
    return {
        "steinke": epsilon_one_run_sweep(scores, included, **common) if guessing else None,
        "fdp_gdp": epsilon_one_run_fdp(scores, included, family="gdp", **common) if guessing else None,
        "fdp_pld": epsilon_one_run_fdp(scores, included, family=family, **common) if guessing and sampling_prob < 1.0 else None,
        "gaussian": epsilon_one_run_gaussian(scores, included, gaussian_noise=gaussian_exact, **common) if gaussian else None,
        "bound": one_run_lower_bound(scores, included, methods=methods, family=family, inclusion_prob=inclusion_prob, gaussian_noise=gaussian_exact, **common),
    }


def mislabeled_canaries(y: np.ndarray, num_canaries: int, num_classes: int, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(index, label): ``num_canaries`` distinct examples of a dataset with labels ``y``, each with a uniformly drawn wrong label.

    At least one example is left over for the rest of the training set.

    >>> y = np.arange(10) % 3
    >>> index, label = mislabeled_canaries(y, 4, 3, seed=0)
    >>> len(set(index.tolist())), bool(np.all(label != y[index]))
    (4, True)
    """
    if num_canaries >= len(y):
        raise ValueError(
            f"`num_canaries` must be at most {len(y) - 1} for black-box input canaries (distinct examples of the dataset, "
            f"withheld from the rest of training), got {num_canaries}"
        )
    if num_classes < 2:
        raise ValueError(f"mislabeled canaries need at least 2 classes, got {num_classes}")
    rng = np.random.default_rng(seed)
    index = rng.choice(len(y), size=num_canaries, replace=False)
    labels = (np.asarray(y)[index] + rng.integers(1, num_classes, num_canaries)) % num_classes
    return index, labels.astype(np.int64)


def _seeds(config: OneRunAuditConfig) -> dict[str, int]:
    """Child seeds of ``config.seed``: the inclusion draw, the canaries, the DP noise (data and model use the seed itself, as the DP-SGD audit)."""
    return child_seeds(config.seed, ["inclusion", "canaries", "training", "metagradient", "reference"])  # appended names leave the first seeds as they were


def typed_settings(config: OneRunAuditConfig) -> dict[str, tuple[str, float]]:
    """The settings the claim is computed from, by key: (the option that sets them, the value typed)."""
    return {
        "noise_multiplier": ("config `noise_multiplier`", config.noise_multiplier),
        "sampling_rate": ("config `sampling_rate`", config.sampling_rate),
        "num_steps": ("`--steps`", config.num_steps),
    }


def _model_and_data(config: OneRunAuditConfig):
    """The built-in model and the data: the embedded ``dataset``, or the user's ``data`` file read as every family reads it (``--data``)."""
    dataset = config.dataset if config.data is None else config.data
    return audited_model_and_data(DPSGDAuditConfig(dataset=dataset, label_col=config.label_col, architecture=config.architecture, seed=config.seed))


def _training(config: OneRunAuditConfig):
    return DPSGDConfig(
        noise_multiplier=config.noise_multiplier, clip_norm=config.clip_norm, sampling_rate=config.sampling_rate, learning_rate=config.learning_rate
    )


def _accuracy(model, x: np.ndarray, y: np.ndarray) -> float | None:
    import torch

    if not len(y):
        return None
    with torch.no_grad():
        predictions = model(torch.as_tensor(x)).argmax(1).numpy()
    return float(np.mean(predictions == y))


def _white_box(config: OneRunAuditConfig, included: np.ndarray, seeds: dict[str, int], progress: Progress) -> tuple[np.ndarray, float | None, dict]:
    model, data, audited = _model_and_data(config)
    canary = GradientCanary(kind=config.canary_kind, moving=config.canary_moving, slot_size=config.canary_slot_size, norm=config.canary_norm)
    trainer = ReferenceDPSGD(model, data.x_train, data.y_train, _training(config), audit_size=config.num_canaries * canary.slot_size, seed=seeds["training"])
    if config.observe == "final":  # the hidden state: the same canaries, only the final parameters read (:mod:`.final_model`)
        observations = final_model_observations(trainer, included=included, config=config, canary=canary, seed=seeds["canaries"], progress=progress)
        return observations, _accuracy(model, data.x_test, data.y_test), audited
    done = [0]

    def release(rows: np.ndarray) -> np.ndarray:
        out = trainer.step(rows)
        done[0] += 1
        progress("training with DP-SGD (one run)", completed=done[0], total=config.num_steps)
        return out

    observations = collect_one_run_observations(
        release,
        included=included,
        num_steps=config.num_steps,
        clip_norm=config.clip_norm,
        denominator=trainer.denominator,
        canary=canary,
        canary_rate=config.effective_canary_rate,
        seed=seeds["canaries"],
    )
    return observations, _accuracy(model, data.x_test, data.y_test), audited


def _negated_losses(model, canary_x: np.ndarray, canary_y: np.ndarray, config: OneRunAuditConfig) -> np.ndarray:
    """Each canary's log-probability of its label under the built-in ``model``; refuses outputs that are not finite."""
    import torch

    with torch.no_grad():
        log_p = torch.log_softmax(model(torch.from_numpy(canary_x)).double(), dim=1)
    scores = log_p[torch.arange(len(canary_y)), torch.from_numpy(canary_y)].numpy()
    if not np.all(np.isfinite(scores)):
        raise ValueError(
            f"training diverged (the model's outputs are not finite after {config.num_steps} steps); lower `learning_rate` (got {config.learning_rate:g})"
        )
    return scores


def _optimised_canaries(config: OneRunAuditConfig, model, x, y, canary_x, canary_y, divisor: float, seed: int, progress: Progress):
    """The mislabeled canaries' features after metagradient descent on the built-in model's non-private surrogate (fresh starts)."""
    import torch

    estimate = surrogate_memory(model, torch.from_numpy(x[0]), rows=len(y), canaries=len(canary_y), train_steps=config.num_steps, clip_norm=None)
    check_memory(estimate, f"`--input-canaries` 'metagradient' (a surrogate unrolled over `--steps` = {config.num_steps} steps on {len(y)} examples)")
    optimised = optimise_input_canaries(
        model, x, y, canary_x, canary_y,
        meta_steps=config.meta_steps, train_steps=config.num_steps, learning_rate=config.learning_rate,
        clip_norm=None, divisor=divisor, start="fresh", seed=seed, progress=progress,
    )  # fmt: skip
    return optimised.canary_x, optimised.to_dict()


def _black_box(config: OneRunAuditConfig, included: np.ndarray, seeds: dict[str, int], progress: Progress) -> tuple[np.ndarray, float | None, dict]:
    import copy

    model, data, audited = _model_and_data(config)
    # canaries: distinct examples of either split, relabeled, and withheld from the rest of training and from the test accuracy
    pool_x, pool_y = np.concatenate([data.x_train, data.x_test]), np.concatenate([data.y_train, data.y_test])
    index, canary_y = mislabeled_canaries(pool_y, config.num_canaries, data.num_classes, seed=seeds["canaries"])
    canary_x = np.asarray(pool_x[index], dtype=np.float32)
    kept = np.ones(len(pool_y), dtype=bool)
    kept[index] = False
    train_kept, test_kept = kept[: len(data.y_train)], kept[len(data.y_train) :]
    rest_x, rest_y = np.asarray(data.x_train[train_kept], dtype=np.float32), np.asarray(data.y_train[train_kept], dtype=np.int64)
    expected = int(train_kept.sum()) + config.inclusion_prob * config.num_canaries  # the design's, not the draw's: the divisor reveals no count
    audited = dict(audited, num_train=int(len(rest_y) + included.sum()), num_test=int(test_kept.sum()), canaries=INPUT_CANARIES[config.input_canaries])
    if config.input_canaries == "metagradient":  # before training, from the data and the auditor's seed alone: the inclusion draw is never seen
        canary_x, audited["canary_optimisation"] = _optimised_canaries(
            config, model, rest_x, rest_y, canary_x, canary_y, expected, seeds["metagradient"], progress
        )
    # The reference (calibrated score) trains first, on the data alone: whatever it draws from global RNGs or keeps
    # in a stateful --train function, nothing the inclusion draw decides has run before it.
    calibrated = config.black_box_score == "calibrated"
    x = np.concatenate([rest_x, canary_x[included]])
    y = np.concatenate([rest_y, canary_y[included]])
    if config.train is not None:
        train = check_train_function(config.train)
        path = config.train

        def user_scores(fitted) -> np.ndarray:
            return np.array(
                [_score(_user_canary_logits(fitted, canary_x[i], int(canary_y[i]), path, 0), int(canary_y[i]), "loss") for i in range(len(canary_y))]
            )

        baseline: np.ndarray | float = 0.0
        if calibrated:
            progress("training the reference with --train (no canaries)", detail=config.train)
            baseline = user_scores(train(rest_x, rest_y, seed=seeds["reference"]))
        progress("training with --train (one run)", detail=config.train)
        with observing_training() as seen:  # σ, q and the steps, if the function reports its Opacus objects (report_opacus)
            trained = train(x, y, seed=seeds["training"])
        status = typed_settings_status(typed_settings(config), seen)
        audited = dict(audited, train=config.train, architecture=None, num_parameters=None, settings=status)
        if seen:
            audited["observed"] = observed_settings(seen)
        return user_scores(trained) - baseline, None, audited

    baseline = 0.0
    if calibrated:  # from the audited run's start, with the reference's own noise seed
        start = copy.deepcopy(model)
        reference = ReferenceDPSGD(start, rest_x, rest_y, _training(config), audit_size=0, seed=seeds["reference"], expected_size=expected)
        for step in range(config.num_steps):
            reference.step(None)
            progress("training the reference without canaries", completed=step + 1, total=config.num_steps)
        baseline = _negated_losses(start, canary_x, canary_y, config)
    trainer = ReferenceDPSGD(model, x, y, _training(config), audit_size=0, seed=seeds["training"], expected_size=expected)
    for step in range(config.num_steps):
        trainer.step(None)
        progress("training with DP-SGD (one run)", completed=step + 1, total=config.num_steps)
    scores = _negated_losses(model, canary_x, canary_y, config) - baseline
    return scores, _accuracy(model, data.x_test[test_kept], data.y_test[test_kept]), audited


def _score_label(config: OneRunAuditConfig, final: bool) -> str:
    if final:
        return FINAL_SCORE
    if config.threat_model == "white-box":
        return SCORES["white-box"]
    label = BLACK_BOX_SCORES[config.black_box_score]
    return label if config.train is None else f"{label}, model from --train {config.train}"


def run_one_run_audit(config: OneRunAuditConfig, *, progress: Progress | None = None) -> OneRunAuditResult:
    """Draw the inclusion, train once, score every canary and bound ε from the scores."""
    if not isinstance(config, OneRunAuditConfig):
        raise ValueError(f"`config` must be a OneRunAuditConfig, got {type(config).__name__}")
    report = progress or no_progress
    if config.train is not None:  # a bad path or signature is refused before any work
        check_train_function(config.train)
    seeds = _seeds(config)
    included = draw_inclusion(config.num_canaries, config.inclusion_prob, seeds["inclusion"])
    if min(int(included.sum()), int((~included).sum())) < 2:
        raise ValueError(
            f"the inclusion draw left fewer than 2 canaries on a side ({int(included.sum())} in, {int((~included).sum())} out); "
            "use more canaries, another seed or an inclusion probability nearer ½"
        )
    collect = _white_box if config.threat_model == "white-box" else _black_box
    scores, accuracy, audited = collect(config, included, seeds, report)
    report("bounding ε")
    rate = config.effective_canary_rate
    bounds = one_run_bounds(
        scores,
        included,
        delta=config.delta,
        confidence=config.confidence,
        methods=config.headline_methods,
        sampling_prob=rate,
        num_steps=config.num_steps,
        inclusion_prob=config.inclusion_prob,
        gaussian=config.threat_model == "white-box",
        gaussian_exact=_gaussian_exact(config),
    )
    user = claim_of(config.claimed_epsilon, config.claimed_delta, delta=config.delta)
    findings, warnings, noise_meets_claim = noise_evidence(config, user, audited.get("observed"))
    claimed = canary = None  # the accountant's ε, evidence: not computed for σ below what the claim needs (the finding says it)
    if noise_meets_claim:
        claimed = float(gaussian_epsilon(config.noise_multiplier, config.delta, sampling_prob=config.sampling_rate, num_steps=config.num_steps))
        canary = (
            claimed
            if rate == config.sampling_rate
            else float(gaussian_epsilon(config.noise_multiplier, config.delta, sampling_prob=rate, num_steps=config.num_steps))
        )
    accountant = None if config.train is not None else canary
    tested = _family_test(config, scores, included, accountant)
    if tested is not None:
        bounds["bound"] = tested[0]
    final = config.observe == "final"
    heuristic, last_iterate = heuristic_and_test(config, scores, included) if final else (None, None)
    result = OneRunAuditResult(
        config=config,
        threat_model=OBSERVE["final"] if final else THREAT_MODELS[config.threat_model],
        score=_score_label(config, final),
        bound=bounds["bound"],
        steinke=bounds["steinke"],
        fdp_gdp=bounds["fdp_gdp"],
        fdp_pld=bounds["fdp_pld"],
        gaussian=bounds["gaussian"],
        claimed_epsilon=user.epsilon if user is not None else (None if config.train is not None else claimed),
        canary_epsilon=canary,
        flagged=False,
        num_canaries=config.num_canaries,
        num_in=int(included.sum()),
        inclusion_seed=seeds["inclusion"],
        included=tuple(bool(value) for value in included),
        observations=tuple(float(value) for value in scores),
        test_accuracy=accuracy,
        model=audited,
        accountant_epsilon=claimed,
        findings=findings,
        sanity_warnings=warnings,
        observe=config.observe,
        heuristic=heuristic,
        last_iterate=last_iterate,
        bound_over_heuristic=None if heuristic is None or heuristic.epsilon <= 0.0 else float(bounds["bound"].epsilon / heuristic.epsilon),
    )
    return _with_verdict(result, config, bounds["bound"], accountant, None if tested is None else tested[1:])


def _claim(config: OneRunAuditConfig, accountant: float | None) -> Claim | None:
    """The user's claim, or, for privaudit's own DP-SGD, its accountant's ε for the canaries."""
    return own_or_user_claim(claim_of(config.claimed_epsilon, config.claimed_delta, delta=config.delta), accountant, delta=config.delta)


def _family_test(config: OneRunAuditConfig, scores: np.ndarray, included: np.ndarray, accountant: float | None) -> tuple[OneRunLowerBound, Claim, str] | None:
    """The headline against the claim's own family (DP-SGD at the claim's σ), or None where the default methods stay.

    Only white-box canaries (own slots: independent observations, the proven
    setting, :mod:`.family`), the default headline (``methods`` null) and a
    claim to take the family from; input canaries interfere and keep the f-DP
    recursion.
    """
    claim = _claim(config, accountant)
    if config.threat_model != "white-box" or config.methods is not None or config.inclusion_prob != 0.5 or claim is None:
        return None
    own = claim.source == OWN_ACCOUNTANT
    null, parameter, in_family, conversion = dpsgd_null(
        claim,
        noise_multiplier=config.noise_multiplier if own else None,
        sampling_rate=config.sampling_rate,
        canary_rate=config.effective_canary_rate,
        num_steps=config.num_steps,
        delta=config.delta,
    )
    bound = one_run_lower_bound(scores, included, delta=config.delta, confidence=config.confidence, null=null, claim=parameter)
    return bound, in_family, conversion


def _with_verdict(
    result: OneRunAuditResult, config: OneRunAuditConfig, bound: OneRunLowerBound, accountant: float | None, in_family: tuple[Claim, str] | None = None
) -> OneRunAuditResult:
    """The end-to-end verdict and the ceiling; a bound against the claim's family meets the claim in that family (``in_family``: the claim there, the conversion).

    The run is flagged when the bound exceeds the claim or a finding (:mod:`.evidence`) contradicts it.
    """
    family: Any = SubsampledGaussian(sampling_prob=config.effective_canary_rate, num_steps=config.num_steps) if config.effective_canary_rate < 1.0 else "gdp"
    if in_family is not None:
        result = bound_verdict(result, bound, claim=in_family[0], raise_with="more canaries", conversion=in_family[1])
    else:
        result = bound_verdict(result, bound, claim=_claim(config, accountant), raise_with="more canaries", method=family)
    return dataclasses.replace(result, flagged=bool(result.findings) or bool(result.claim_verdict is not None and result.claim_verdict.flagged))


class OneRunAudit(Audit):
    """One-run audit: canaries kept in or out of one training run, every one-run bound side by side."""

    name = "one-run"
    title = "DP-SGD in one training run (Steinke, f-DP, Gaussian)"
    description = "One-run audit of DP-SGD: m canaries each in or out of one training run; Steinke, f-DP and Gaussian ε lower bounds side by side."
    config_type = OneRunAuditConfig
    result_type = OneRunAuditResult
    default_resource = "one-run.json"
    requires = ("torch", "sklearn")

    def memory_estimate(self, config: OneRunAuditConfig) -> tuple[int, str]:
        if config.threat_model != "white-box":
            return 0, ""
        # one step's canary rows (up to m × m·slot float64), copied by the trainer, and the canary directions
        width = config.num_canaries * config.canary_slot_size
        directions = config.num_steps * width if config.canary_moving else width
        return 8 * (3 * config.num_canaries * width + directions), (
            f"`num_canaries` × `num_canaries` × `canary_slot_size` = {config.num_canaries} × {config.num_canaries} × {config.canary_slot_size}"
        )

    tiny_overrides = {"num_canaries": 100, "num_steps": 3}

    def run(self, config: OneRunAuditConfig, *, progress: Progress | None = None) -> AuditRun:
        """Run the audit; the figures' histogram bins and Gaussian fits are computed here (:func:`privaudit.audits.dpsgd.audit.observation_fits`)."""
        report = progress or no_progress
        report("one-run audit", detail=f"{config.threat_model}, {config.num_canaries} canaries, {config.num_steps} steps")
        result = run_one_run_audit(config, progress=report)
        scores, member = np.asarray(result.observations), np.asarray(result.included)
        return AuditRun(self.name, config, result, observations={"fits": observation_fits(scores[member], scores[~member])})


AUDIT = OneRunAudit()
