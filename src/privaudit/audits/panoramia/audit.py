"""PANORAMIA on the audit interface: the embedded default and the results (a user's model: :mod:`.own_model`).

The default (``configs/panoramia.json``) runs on statsmodels' ``fair`` data:
``num_candidates`` rows are candidates, each put in the training set by an
independent fair coin; every other row (bar a held-out test share) is always
a member. Several targets are trained on the same D_f (by default a
one-hidden-layer MLP for 5 epochs, a 4-hidden-layer MLP for 300 epochs that
overfits clearly, as the paper's tabular target has 4 hidden layers, and a
DP-SGD variant at ε = 2), and each is audited three ways on the same model:
PANORAMIA (generated non-members), RM;RN (the candidates left out are the
real non-members) and O(1) (the candidates with their coins). ``dataset = "digits"`` runs the image variant:
a CNN target and the VAE generator.

Features of tabular data are standardised with D_f's mean and standard
deviation (digits keep their [0, 1] pixels, as the VAE needs).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from ..._core.conventions import Convention
from ..._core.validation import check_choice, check_count, check_probability
from ...data.statsmodels_data import load_statsmodels_dataset
from ...data.tabular import load_dataset
from ...models.outputs import OUTPUT_KINDS
from ..base import Audit, AuditResult, AuditRun, Headline, Progress, no_progress
from ..blind import BlindBaseline
from ..family_test import FamilyPlan, FamilyTest, check_family_fields, family_headline, family_plan
from ..verdicts import bound_verdict, check_claim_fields, claim_of
from .game import PanoramiaAuditResult, PanoramiaSettings, make_generator, panoramia_curves, run_panoramia
from .memory import classifier_parameters, peak_memory
from .own_model import MODEL_KINDS, members_blind_baseline, run_panoramia_on_model
from .targets import TrainingRecipe, train_classifier

__all__ = [
    "AUDIT",
    "PanoramiaAudit",
    "PanoramiaResults",
    "PanoramiaTarget",
    "DEMO_DATASETS",
    "PanoramiaDemoConfig",
    "run_panoramia_default",
]

DEMO_DATASETS = ("fair", "randhie", "digits")
# the widest embedded data: digits' 8 x 8 pixels and 10 classes (fair: 8 features, randhie: 9, both 2 classes)
_DEMO_INPUT_DIM, _DEMO_CLASSES = 64, 10


@dataclasses.dataclass(frozen=True)
class PanoramiaDemoConfig:
    """The embedded default: data, targets (name → training recipe fields) and the audit settings.

    >>> PanoramiaDemoConfig(dataset="adult")
    Traceback (most recent call last):
    ...
    ValueError: `dataset` must be one of 'fair', 'randhie', 'digits', got 'adult'
    """

    dataset: str = "fair"
    targets: dict[str, dict] = dataclasses.field(
        default_factory=lambda: {
            "mlp_few_epochs": {"epochs": 5},
            "mlp_many_epochs": {"epochs": 300, "depth": 4, "learning_rate": 1e-3},
            "mlp_dp_eps2": {"epochs": 20, "dp_epsilon": 2.0},
        }
    )
    helper: dict[str, Any] = dataclasses.field(default_factory=lambda: {"epochs": 20})
    architecture: str = "mlp"
    hidden: int = 256
    batch_size: int = 256
    learning_rate: float = 0.01
    num_candidates: int = 2000
    test_fraction: float = 0.05
    generator_epochs: int = 200
    audit_size: int = 1500
    generator_fraction: float = 0.5
    confidence: float = 0.95
    num_recall_levels: int = 16
    classifier_iterations: int = 200
    seed: int = 0

    def __post_init__(self):
        check_choice(self.dataset, "dataset", DEMO_DATASETS)
        if not isinstance(self.targets, dict) or not self.targets:
            raise ValueError(f"`targets` must be a non-empty object of name -> training fields, got {self.targets!r}")
        for name in self.targets:
            self.recipe(name)  # validates each target's fields
        self.recipe(None)
        check_count(self.num_candidates, "num_candidates", minimum=2)
        check_probability(self.test_fraction, "test_fraction")
        check_count(self.generator_epochs, "generator_epochs", minimum=1)
        self.settings()

    def recipe(self, name: str | None) -> TrainingRecipe:
        """The recipe of target ``name`` (None: the helper's): the shared fields, overridden by its own.

        One helper recipe serves every target, so that targets on the same
        data share one baseline and one c_lb, as in the paper.
        """
        fields = self.helper if name is None else self.targets[name]
        name = "helper" if name is None else f"targets.{name}"
        allowed = {field.name for field in dataclasses.fields(TrainingRecipe)}
        if not isinstance(fields, dict) or set(fields) - allowed:
            raise ValueError(f"`{name}` must be an object with keys among {sorted(allowed)}, got {fields!r}")
        shared = dict(architecture=self.architecture, hidden=self.hidden, batch_size=self.batch_size, learning_rate=self.learning_rate)
        return TrainingRecipe(**{**shared, **fields})

    def settings(self) -> PanoramiaSettings:
        """The audit's settings (split, confidence, classifiers, seed)."""
        return PanoramiaSettings(
            audit_size=self.audit_size,
            generator_fraction=self.generator_fraction,
            confidence=self.confidence,
            num_recall_levels=self.num_recall_levels,
            classifier_iterations=self.classifier_iterations,
            seed=self.seed,
        )

    @classmethod
    def from_json(cls, path) -> PanoramiaDemoConfig:
        """Read the fields from a JSON or YAML file; unknown keys and wrong types are errors."""
        return AUDIT.load_config(path)


def _load(config: PanoramiaDemoConfig):
    if config.dataset == "digits":
        data = load_dataset("digits", seed=config.seed)
        x = np.concatenate([data.x_train, data.x_test]).astype(np.float64)
        return x, np.concatenate([data.y_train, data.y_test]), data.num_classes, data.image_shape

    tabular = load_statsmodels_dataset(config.dataset)
    return tabular.x, tabular.y, tabular.num_classes, None


def run_panoramia_default(config: PanoramiaDemoConfig, progress=None) -> tuple[dict, dict]:
    """Train each target on the embedded data and audit it; return (results by target, game scores by target)."""
    progress = progress or (lambda *args, **kwargs: None)
    x, y, num_classes, image_shape = _load(config)
    if config.num_candidates >= len(x) // 2:
        raise ValueError(f"`num_candidates` must be < {len(x) // 2} (half the {config.dataset} rows), got {config.num_candidates}")
    rng = np.random.default_rng(np.random.SeedSequence(config.seed).spawn(1)[0])
    order = rng.permutation(len(x))
    num_test = int(round(config.test_fraction * len(x)))
    candidates, test, always = np.split(order, [config.num_candidates, config.num_candidates + num_test])
    included = rng.random(candidates.size) < 0.5  # the fair coins of the O(1) audit
    members = np.concatenate([always, candidates[included]])
    if image_shape is None:  # standardise with D_f's statistics only
        mean, std = x[members].mean(0), x[members].std(0)
        x = (x - mean) / np.where(std > 0, std, 1.0)
    results, scores = {}, {}
    for index, name in enumerate(config.targets):
        recipe = config.recipe(name)
        progress(f"training target {name}", detail=f"{recipe.epochs} epochs" + (f", DP ε = {recipe.dp_epsilon:g}" if recipe.dp_epsilon else ""))
        started = time.perf_counter()
        target = train_classifier(x[members], y[members], recipe, num_classes=num_classes, image_shape=image_shape, seed=config.seed + index)
        progress(f"auditing target {name}")
        timings = {"training the target": time.perf_counter() - started}

        def train_helper(hx, hy, seed, recipe=config.recipe(None)):
            return train_classifier(hx, hy, recipe, num_classes=num_classes, image_shape=image_shape, seed=seed).loss

        generator_kind = "vae" if config.dataset == "digits" else "mst"
        result, game = run_panoramia(
            target.loss,
            x[members],
            y[members],
            generator=make_generator(generator_kind, epochs=config.generator_epochs),
            train_helper=train_helper,
            settings=config.settings(),
            num_classes=num_classes,
            non_members=(x[candidates[~included]], y[candidates[~included]]),
            one_run_candidates=(x[candidates], y[candidates], included),
            target_name=name,
            generator_name=f"{generator_kind} on {config.dataset}",
            timings=timings,
        )
        results[name] = {
            "audit": result,
            "training": dataclasses.asdict(recipe),
            "helper_training": dataclasses.asdict(config.recipe(None)),
            "claimed_dp_epsilon": target.epsilon,
            "train_accuracy": target.accuracy(x[members], y[members]),
            "test_accuracy": target.accuracy(x[test], y[test]),
            "timings_s": timings,
        }
        scores[name] = game
    return results, scores


@dataclasses.dataclass(frozen=True)
class PanoramiaTarget:
    """One audited target: PANORAMIA's result, how the target was trained, and its accuracies."""

    audit: PanoramiaAuditResult
    training: dict[str, Any]
    helper_training: dict[str, Any] | None = None
    claimed_dp_epsilon: float | None = None
    train_accuracy: float | None = None
    test_accuracy: float | None = None
    timings_s: dict[str, float] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class PanoramiaResults(AuditResult):
    """Every target of a PANORAMIA audit, with the inputs it ran on (the embedded config or the user's files)."""

    config: dict[str, Any]
    targets: dict[str, PanoramiaTarget]
    threat_model: str = "black-box: per-example loss of the final model; no retraining, no canaries"
    family_test: FamilyTest | None = None  # O(1) with a family named: the headline, beside the generic bound (privaudit.audits.family_test)
    blind_baseline: BlindBaseline | None = None  # your --members against your --non-members, without the model (privaudit.audits.blind)

    def summary_rows(self) -> list[dict[str, Any]]:
        """One row per target: c_lb with its generator, {c+ε}_lb, ε̃, and RM;RN and O(1) beside them."""
        return [
            {
                "target": name,
                "generator": entry.audit.generator,
                "c_lb": entry.audit.c_lb,
                "c_plus_epsilon_lb": entry.audit.bounds.c_plus_epsilon_lb,
                "epsilon_tilde": entry.audit.epsilon_tilde,
                "rm_rn_epsilon": None if entry.audit.real_non_members is None else entry.audit.real_non_members.epsilon,
                "one_run_epsilon": None if entry.audit.one_run is None else entry.audit.one_run.epsilon,
                "claimed_dp_epsilon": entry.claimed_dp_epsilon,
            }
            for name, entry in self.targets.items()
        ]

    def headline(self) -> Headline:
        family = self.family_test
        if family is not None:  # the claim's family: the O(1) candidates' order-statistics test is the headline
            bound = family.bound
            return Headline(
                value=family.epsilon,
                label=(
                    f"ε lower bound against the claim's family (O(1) candidates, -loss scores, order statistics of Xiang et al.; refuted: {family.refuted}; "
                    f"{bound.num_canaries} candidates, δ = {bound.delta:g}, {bound.confidence:.0%}; generic bound {family.generic_epsilon:.3g} beside it; "
                    "valid if transmission dominance holds)"
                ),
                kind=bound.kind,
                confidence=bound.confidence,
                valid=bound.valid,
                flag=family.verdict.flagged,
            )
        name, top = max(self.targets.items(), key=lambda item: item[1].audit.epsilon_tilde)
        return Headline(value=top.audit.epsilon_tilde, label=f"ε̃ estimate, target {name}", kind="estimate", confidence=None, valid=True, flag=None)


def _with_one_run_verdict(
    result: PanoramiaResults, claimed_epsilon: float | None, claimed_delta: float | None, scores: dict, family: tuple[FamilyPlan, Any] | None = None
) -> PanoramiaResults:
    """The O(1) one-run bound of the user's model (the only ε lower bound here) against the user's claim, with its ceiling.

    ε̃ and c_lb are an estimate and a bound on c; neither meets a claim.
    With ``family`` (the plan and its request, :func:`_family_request`) the
    headline becomes the order-statistics test of the same candidates'
    scores against the claim's family, the generic bound beside it.
    """
    bounded = [(name, entry.audit.one_run) for name, entry in result.targets.items() if entry.audit.one_run is not None]
    if len(bounded) != 1:
        return result
    ((name, bound),) = bounded
    claim = claim_of(claimed_epsilon, claimed_delta, delta=bound.delta)
    result = bound_verdict(result, bound, claim=claim, raise_with="more randomised members (--audit-size)")
    if family is None:
        return result
    plan, request = family
    game = scores[name]
    design = f"{bound.num_canaries} candidates, {bound.confidence:.0%}, 1 test"
    tested, ceiling = family_headline(
        plan, request, game.one_run_scores, game.one_run_included, generic=bound, generic_verdict=result.claim_verdict,
        raise_with="more randomised candidates", design=design,
    )  # fmt: skip
    return dataclasses.replace(result, family_test=tested, claim_verdict=tested.verdict, ceiling=ceiling)


def _family_request(family, family_claim, family_sampling_rate, family_steps, *, settings, claimed_epsilon, claimed_delta) -> Any:
    """The family keys with the O(1) bound's δ and confidence, as :mod:`privaudit.audits.family_test` reads them (the run's options, not config keys)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        family=family,
        family_claim=family_claim,
        family_sampling_rate=family_sampling_rate,
        family_steps=family_steps,
        delta=settings.one_run_delta,
        confidence=settings.confidence,
        claimed_epsilon=claimed_epsilon,
        claimed_delta=claimed_delta,
    )


def _targets(results: dict) -> dict[str, PanoramiaTarget]:
    return {name: PanoramiaTarget(**entry) for name, entry in results.items()}


class PanoramiaAudit(Audit):
    """PANORAMIA (Kazmi et al.): audit a trained model with generated non-members; no retraining, no canaries."""

    name = "panoramia"
    title = "PANORAMIA (generated non-members)"
    description = "PANORAMIA (Kazmi et al.): audit a trained model with generated non-members; no retraining, no canaries."
    config_type = PanoramiaDemoConfig
    result_type = PanoramiaResults
    default_resource = "panoramia.json"
    requires = ("torch", "sklearn", "mbi", "statsmodels")

    def memory_estimate(self, config: PanoramiaDemoConfig) -> tuple[int, str]:
        # each target on the widest embedded data, trained, then beside the helpers; named by the larger model's
        # sizes. A user's model (--model with --spec) is checked in run_panoramia_on_model, when its spec is read.
        models = {}  # name -> (parameters, DP-SGD batch size or 0, the settings that size it)
        for name in (None, *config.targets):
            recipe = config.recipe(name)
            prefix, own = ("helper", config.helper) if name is None else (f"targets.{name}", config.targets[name])
            hidden = check_count(recipe.hidden, f"{prefix}.hidden" if "hidden" in own else "hidden", minimum=1)
            depth = check_count(recipe.depth, f"{prefix}.depth", minimum=1)
            parameters = classifier_parameters(recipe.architecture, input_dim=_DEMO_INPUT_DIM, num_classes=_DEMO_CLASSES, hidden=hidden, depth=depth)
            shown = [f"`{prefix}.hidden`" if "hidden" in own else "`hidden`"] + ([f"`{prefix}.depth`"] if "depth" in own else [])
            sizes = ", ".join(f"{key} = {value}" for key, value in zip(shown, (hidden, depth)))
            models[name] = (parameters, recipe.batch_size if recipe.dp_epsilon is not None else 0, sizes)
        helper, helper_dp, helper_sizes = models[None]
        best, what = 0, ""
        for name in config.targets:
            target, target_dp, target_sizes = models[name]
            estimate = peak_memory(target, helper, target_dp_batch=target_dp, helper_dp_batch=helper_dp)
            if estimate > best:
                best, what = estimate, target_sizes if target * (1 + target_dp) >= helper * (1 + helper_dp) else helper_sizes
        return best, what

    tiny_overrides = {
        "targets": {"mlp": {"epochs": 2}},
        "helper": {"epochs": 2},
        "hidden": 16,
        "num_candidates": 200,
        "generator_epochs": 5,
        "audit_size": 200,
        "classifier_iterations": 10,
        "num_recall_levels": 4,
    }

    def run(
        self,
        config: PanoramiaDemoConfig,
        *,
        progress: Progress | None = None,
        model=None,
        members=None,
        spec=None,
        non_members=None,
        inclusion_randomised: bool = False,
        generator: str = "mst",
        helper_epochs: int = 10,
        audit_size: int = 1000,
        confidence: float = 0.95,
        model_kind: str = "privaudit",
        factory: str | None = None,
        label_col: str | None = None,
        model_output: str = "auto",
        trusted=(),
        claimed_epsilon: float | None = None,
        claimed_delta: float | None = None,
        family: str | None = None,
        family_claim: float | None = None,
        family_sampling_rate: float | None = None,
        family_steps: int | None = None,
    ) -> AuditRun:
        """The embedded default (``config``), or the user's saved classifier when ``model`` and ``members`` are given.

        ``family`` and ``family_claim`` (with ``family_sampling_rate`` and
        ``family_steps`` for the subsampled families) test the O(1)
        candidates against the claim's family (:mod:`privaudit.audits.family_test`):
        they need exactly one O(1) audit, of ``--model`` with
        ``--inclusion-randomised`` or of the embedded default's one target.
        """
        say = progress or no_progress
        check_choice(model_kind, "--model-kind", MODEL_KINDS)  # checked with or without --model: a typo is never ignored
        check_choice(model_output, "--model-output", ("auto",) + OUTPUT_KINDS)
        check_claim_fields(claimed_epsilon, claimed_delta)
        if claimed_epsilon is not None and not (model is not None and inclusion_randomised):
            raise ValueError("`--claimed-epsilon` needs `--model` with `--inclusion-randomised`: only the O(1) audit bounds ε (ε̃ is an estimate)")
        if (model is None) != (members is None):
            raise ValueError("`--model` and `--members` must both be given (or neither, for the embedded default)")
        settings = config.settings() if model is None else PanoramiaSettings(audit_size=audit_size, confidence=confidence, seed=config.seed)
        request = _family_request(
            family, family_claim, family_sampling_rate, family_steps, settings=settings, claimed_epsilon=claimed_epsilon, claimed_delta=claimed_delta
        )
        one_target = inclusion_randomised if model is not None else len(config.targets) == 1
        refused = None if one_target else "needs one O(1) audit: `--model` with `--inclusion-randomised`, or the embedded default with one target (`targets`)"
        check_family_fields(request, refused=refused)
        plan = family_plan(request)  # the claim's own family, built (its claim checked) before any training
        conventions: tuple[Convention, ...] = ()
        if model is None:
            if label_col is not None:
                raise ValueError("`--label-col` needs `--model` and `--members` (the embedded default reads no file of yours)")
            results, scores = run_panoramia_default(config, progress=say)
            inputs = dataclasses.asdict(config)
        else:
            say("auditing your model", detail=str(model))
            reader: dict[str, Any] = {"model_kind": model_kind, "factory": factory}  # how --model is read, passed on and recorded as given
            results, scores, conventions = run_panoramia_on_model(
                model,
                members,
                spec_path=spec,
                non_members_path=non_members,
                inclusion_randomised=inclusion_randomised,
                generator=generator,
                helper_epochs=helper_epochs,
                settings=settings,
                **reader,
                label_col=label_col,
                model_output=model_output,
                trusted=tuple(trusted or ()),
            )
            inputs = {
                "model": str(model),
                **reader,
                "members": str(members),
                "non_members": None if non_members is None else str(non_members),
                "label_col": label_col,
                "model_output": model_output,
                "trusted": list(trusted or ()),
                "settings": dataclasses.asdict(settings),
            }
        blind = None
        if model is not None and non_members is not None:  # RM;RN (and O(1)) read your two files as one random split: do the records alone tell them?
            say("blind baseline", detail="your --members against your --non-members, without the model")
            blind = members_blind_baseline(members, non_members, label_col=label_col, seed=settings.seed)
        result = PanoramiaResults(
            config=inputs,
            targets=_targets(results),
            conventions=conventions,
            blind_baseline=blind,
            sanity_warnings=_blind_warnings(blind, inclusion_randomised),
        )
        result = _with_one_run_verdict(result, claimed_epsilon, claimed_delta, scores, None if plan is None else (plan, request))
        # the figures' curves are computed here, with the statistics, so that plotting computes nothing
        curves = {name: panoramia_curves(scores[name], entry.audit) for name, entry in result.targets.items()}
        return AuditRun(self.name, config, result, observations={"scores": scores, "curves": curves})


def _blind_warnings(blind: BlindBaseline | None, inclusion_randomised: bool) -> tuple[str, ...]:
    """The flagged baseline's warning, with what it means here: RM;RN (and O(1)) may measure your split."""
    warning = None if blind is None else blind.warning()
    if warning is None:
        return ()
    meaning = "RM;RN's bound reads them as one random split, so it may measure the split, not the model"
    if inclusion_randomised:
        meaning += "; you declared the split random (--inclusion-randomised), which the records contradict, so O(1) may too"
    return (f"{warning}. {meaning}",)


AUDIT = PanoramiaAudit()
