"""Black-box audit of DP-SGD (Tight Auditing, Algorithm 1): many models with and without a canary.

Train ``2 × num_models_per_side`` models with the reference DP-SGD (full
batch, ``num_steps`` steps), half of them on the training set with one
canary example appended. Each final model is scored on the canary (its loss,
negated, or its logit log(p / (1 - p)) for the canary's label): higher means
"the canary was in". The scores of the two sides give an ε lower bound
(:func:`privaudit.stats.bounds.epsilon_lower_bound`) to compare with the ε
that DP-SGD's accounting claims.

Every run starts from its own random weights (``init="average"``), or, with
``init="worst-case"`` (``--init worst-case``), from the parameters the auditor
crafted once on records outside the audited set
(:mod:`privaudit.audits.blackbox.worst_case`, after Annamalai and De
Cristofaro 2024): the bound is then for the pipeline under worst-case
initialisation, which is what a DP claim covers, and the result records the
start's seed and digest (``initialisation``). With the user's own training
the start is crafted on the user's architecture (``init_model``, below).

Each run is one job for :func:`privaudit.runner.run_all`, seeded from the
root seed and its own index, so a killed audit resumes where it stopped and
gives the same numbers on any backend.

The user's own training (``train``, ``privaudit audit blackbox --train
package.module:fn``) replaces the built-in model and DP-SGD. The contract::

    fn(x_train, y_train, *, seed) -> model

``x_train`` is a float32 array (n, d) and ``y_train`` an int64 array (n,) of
labels 0 .. classes - 1: the config's dataset, with the canary appended in
half of the runs; ``seed`` is the run's own seed, for all of ``fn``'s
randomness. ``model`` is a ``torch.nn.Module`` returning logits (n, classes),
an object with ``predict_proba(x) -> (n, classes)`` probabilities (as
scikit-learn's), or such a ``predict_proba`` function. Workers import ``fn``
by its path, so it must be importable (a module-level function). No ε is
claimed for the user's training unless ``claimed_epsilon`` says it (the
built-in DP-SGD's accounting describes nothing that ran); without a claim,
√``num_steps`` ÷ ``noise_multiplier`` is only the μ the paired test is
designed for (:func:`design_mu`).

Under ``init="worst-case"`` (``--init worst-case --init-model
package.module:build``) the contract is::

    fn(x_train, y_train, *, seed, init_state) -> model

``build`` (``build()``, or ``build(seed=...)`` when it takes a seed) makes
the untrained ``torch.nn.Module`` that ``fn`` trains; privaudit pre-trains it
on records outside the audited set (:mod:`.worst_case`) and gives every run
the result as ``init_state``, a name → tensor mapping (fresh copies) to load
with ``model.load_state_dict(init_state)`` before training. A run whose
``fn`` never read ``init_state``, or returned anything but a module with the
crafted state's names and shapes, is refused.

The data are the embedded ``dataset`` or the user's own file (``data``,
``privaudit audit blackbox --data pool.csv --label-col y``: ``.npz``,
``.csv`` or ``.parquet``, read by
:func:`privaudit._core.labelled.read_labelled`), split 75/25 into train and
test by the seed as the embedded ones are
(:func:`privaudit.data.tabular.load_dataset_file`); the mislabelled canary
is the first test record with the next label. How the label column was
decided is recorded in the result's conventions.

>>> BlackBoxConfig(score="margin")
Traceback (most recent call last):
...
ValueError: `score` must be one of 'loss', 'logit', got 'margin'
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..._core.conventions import Convention, default
from ..._core.extras import require
from ..._core.seeding import child_seeds
from ..._core.usercode import call_user
from ...models.classifiers import build_classifier
from ...models.loading import import_callable
from ...runner import RunStore, check_backend, input_digests, resume_plan, run_all
from ...stats.bounds import epsilon_lower_bound
from ...stats.conversions import gaussian_epsilon, gdp_mu
from ...stats.gaussian_steps import gaussian_step_bound
from ...training.dpsgd import DPSGDConfig, ReferenceDPSGD
from ..base import Audit, AuditRun, Progress, no_progress
from ..verdicts import bound_verdict, claim_of, own_or_user_claim
from .config import MIN_MODELS_PER_SIDE, THREAT_MODEL, THREAT_MODEL_WORST_CASE, BlackBoxConfig, BlackBoxResult
from .worst_case import craft_initial_state, start_from_crafted, training_set, user_init_state
from .worst_case import dataset_split as _data

__all__ = [
    "AUDIT",
    "GDP_PER_RUN_WARNING",
    "BlackBoxAudit",
    "bound_scores",
    "check_train_function",
    "dataset_conventions",
    "design_mu",
    "pairing_seed",
    "run_blackbox_audit",
    "run_configs",
    "train_one",
]


def _run_seeds(root: int, index: int) -> tuple[int, int]:
    """(model init seed, DP noise seed) of run ``index``, from SeedSequence((root, index))."""
    state = np.random.SeedSequence((int(root), int(index))).generate_state(2, dtype=np.uint32)
    return int(state[0]), int(state[1])


def dataset_conventions(config: BlackBoxConfig) -> tuple[Convention, ...]:
    """How the label column of the audited data was decided: by the reader for the user's file, by name for an embedded dataset."""
    if config.data is not None:
        return tuple(_data(config.dataset, config.seed, config.data, config.label_col).conventions)
    return (default("label column", "the embedded dataset's target", f"scikit-learn's {config.dataset} labels"),)


def _canary(data, kind: str) -> tuple[np.ndarray, int]:
    if kind == "mislabeled":
        return np.asarray(data.x_test[0], dtype=np.float32), int((data.y_test[0] + 1) % data.num_classes)
    return np.zeros(data.x_train.shape[1], dtype=np.float32), 0


def _score(logits, label: int, kind: str) -> float:
    """Higher means "member": the negated cross-entropy loss, or log p_y - log(1 - p_y)."""
    import torch

    log_p = torch.log_softmax(logits.double().reshape(-1), dim=0)
    if kind == "loss":
        return float(log_p[label])
    others = torch.cat([log_p[:label], log_p[label + 1 :]])
    # log(1 - p_y) as the log-sum-exp of the other classes' log-probabilities: exact even when p_y rounds to 1
    return float(log_p[label] - torch.logsumexp(others, dim=0))


def run_configs(config: BlackBoxConfig) -> list[dict[str, Any]]:
    """The JSON-ready run configs of an audit: runs alternate with (even index) and without the canary.

    >>> [(c["index"], c["with_canary"]) for c in run_configs(BlackBoxConfig(num_models_per_side=5))][:4]
    [(0, True), (1, False), (2, True), (3, False)]
    """
    base = dataclasses.asdict(config)
    for key in ("train", "data", "label_col", "num_records", "init_model"):
        if base[key] is None:  # unset: runs stored before these options existed resume unchanged
            del base[key]
    if config.init == "average":
        del base["init"]
    else:  # the crafted start is part of each run's key: a changed crafting is a new run, never a stale one resumed
        base["init_digest"] = craft_initial_state(config).record.digest
    # "init-model", the flag's spelling: an edited builder is named in the resume note as --init-model's code
    digests = input_digests(files={"data": config.data}, functions={"train": config.train, "init-model": config.init_model})
    if digests:  # the contents each run reads: a changed file is a new run, never a stale one resumed
        base["inputs"] = digests
    return [dict(base, index=index, with_canary=index % 2 == 0) for index in range(2 * config.num_models_per_side)]


def check_train_function(path: str, worst_case: bool = False):
    """The user's training function at ``path`` ('package.module:fn'), checked to take ``(x_train, y_train, *, seed)``, and ``init_state`` too when ``worst_case``; ValueError naming ``--train``.

    >>> check_train_function("os.path:join", worst_case=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `--train` 'os.path:join' must accept (x_train, y_train, *, seed, init_state) under `--init` worst-case, but its signature is ...
    """
    function = import_callable(path, "--train")
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # no signature to inspect (a builtin): the first run will tell
        return function
    keywords: dict[str, Any] = {"seed": 0, "init_state": {}} if worst_case else {"seed": 0}
    try:
        signature.bind(np.zeros((1, 1), dtype=np.float32), np.zeros(1, dtype=np.int64), **keywords)
    except TypeError as error:
        wanted = "(x_train, y_train, *, seed, init_state) under `--init` worst-case" if worst_case else "(x_train, y_train, *, seed)"
        raise ValueError(f"`--train` {path!r} must accept {wanted}, but its signature is {signature}: {error}") from None
    return function


@functools.lru_cache(maxsize=4)
def _train_function(path: str, worst_case: bool = False):
    return check_train_function(path, worst_case)


def _check_started_from(trained, init_state, path: str, index: int, builder: str) -> None:
    """Refuse a run whose ``--train`` never read ``init_state``, or returned other than a module of the crafted state's names and shapes."""
    import torch

    if not init_state.read:
        raise ValueError(f"run {index}: `--train` {path!r} never read `init_state`; load it into the model before training (model.load_state_dict(init_state))")
    if not isinstance(trained, torch.nn.Module):
        raise ValueError(
            f"run {index}: under `--init` worst-case `--train` {path!r} must return the torch.nn.Module that `--init-model` {builder!r} builds, got {type(trained).__name__}"
        )
    expected = {name: tuple(init_state[name].shape) for name in init_state}
    got = {name: tuple(value.shape) for name, value in trained.state_dict().items()}
    if got != expected:
        differ = sorted(set(got) ^ set(expected)) or sorted(name for name in got if got[name] != expected[name])
        raise ValueError(
            f"run {index}: the model `--train` {path!r} returned is not the one `--init-model` {builder!r} builds: "
            f"its parameters' names or shapes differ from the crafted start's ({', '.join(differ[:3])}); return the module itself, not a wrapper "
            "such as Opacus' GradSampleModule"
        )


def _user_canary_logits(model, canary_x: np.ndarray, canary_y: int, path: str, index: int):
    """Log-probabilities (or logits) of the canary's classes under the model the user's training returned."""
    import torch

    run = f"run {index}: the model that `--train` {path!r} returned"
    if isinstance(model, torch.nn.Module):
        model.eval()
        with torch.no_grad():
            out = model(torch.from_numpy(canary_x)[None])
        if not isinstance(out, torch.Tensor):
            raise ValueError(f"{run} must return a tensor of logits, got {type(out).__name__}")
        values, kind = out.detach().double().cpu(), "logits"
    else:
        predict = getattr(model, "predict_proba", None)
        if predict is None and callable(model):
            predict = model
        if predict is None:
            raise ValueError(f"{run} must be a torch.nn.Module, an object with predict_proba or a predict_proba function, got {type(model).__name__}")
        out = predict(canary_x[None])
        if isinstance(out, torch.Tensor):
            out = out.detach().cpu().numpy()
        values, kind = torch.as_tensor(np.asarray(out, dtype=np.float64)), "probabilities"
    if values.ndim != 2 or values.shape[0] != 1 or values.shape[1] <= canary_y:
        raise ValueError(f"{run} must give {kind} of shape (n, classes) with a class {canary_y} (the canary's label), got {tuple(values.shape)} for n = 1")
    if not torch.isfinite(values).all():
        raise ValueError(f"{run} gave non-finite {kind} on the canary (training diverged?)")
    if kind == "probabilities":
        if (values < 0).any() or abs(float(values.sum()) - 1.0) > 1e-4:
            raise ValueError(f"{run} must give probabilities (>= 0, summing to 1) from predict_proba, got {values.reshape(-1).tolist()[:5]}")
        values = torch.log(values.clamp_min(np.finfo(np.float64).tiny))
    return values


def train_one(config: dict[str, Any]) -> dict[str, Any]:
    """Train one model with DP-SGD, with or without the canary, and score the canary.

    ``config`` holds the :class:`BlackBoxConfig` fields plus ``index`` and
    ``with_canary``; returns ``{"index", "with_canary", "seed", "score"}``
    where ``seed`` is the run's DP-noise seed (the ``seed`` given to the
    user's ``train`` function, when there is one) and ``score`` is higher for
    "member" (negated loss, or the logit of the canary's label).

    >>> run = dict(run_configs(BlackBoxConfig(num_steps=2))[0])
    >>> out = train_one(run)
    >>> sorted(out), out == train_one(run)
    (['index', 'score', 'seed', 'with_canary'], True)
    """
    import torch

    data = _data(config["dataset"], int(config["seed"]), config.get("data"), config.get("label_col"))
    model_seed, noise_seed = _run_seeds(config["seed"], config["index"])
    x, y = training_set(data, config.get("num_records"))
    records = len(x)  # the public size both worlds divide by: the canary's presence must not move DP-SGD's divisor
    canary_x, canary_y = _canary(data, config["canary"])
    if config["with_canary"]:
        x = np.concatenate([x, canary_x[None]])
        y = np.concatenate([y, [canary_y]])
    if config.get("train") is not None:  # the user's training function, with its own seed
        context = f" in training run {config['index']}"
        worst_case = config.get("init", "average") == "worst-case"
        extra = {"init_state": user_init_state(config)} if worst_case else {}
        trained = call_user("--train", config["train"], _train_function(config["train"], worst_case), x, y, seed=noise_seed, context=context, **extra)
        if worst_case:
            _check_started_from(trained, extra["init_state"], config["train"], int(config["index"]), str(config["init_model"]))
        logits = _user_canary_logits(trained, canary_x, canary_y, config["train"], int(config["index"]))
        return {
            "index": int(config["index"]),
            "with_canary": bool(config["with_canary"]),
            "seed": noise_seed,
            "score": _score(logits, canary_y, config["score"]),
        }

    model = build_classifier(
        config["architecture"],
        input_dim=x.shape[1],
        num_classes=data.num_classes,
        image_shape=data.image_shape,
        seed=model_seed,
    )
    if config.get("init", "average") == "worst-case":
        start_from_crafted(model, config)
    dp = DPSGDConfig(
        noise_multiplier=config["noise_multiplier"],
        clip_norm=config["clip_norm"],
        sampling_rate=1.0,
        learning_rate=config["learning_rate"],
    )
    trainer = ReferenceDPSGD(model, torch.from_numpy(x), torch.from_numpy(y), dp, audit_size=0, seed=noise_seed, expected_size=records)
    empty = np.zeros((0, 0))
    for _ in range(int(config["num_steps"])):
        trainer.step(empty)
    with torch.no_grad():
        logits = model(torch.from_numpy(canary_x)[None])
    if not torch.isfinite(logits).all():
        raise ValueError(
            f"run {int(config['index'])}: training diverged (the model's outputs are not finite after {int(config['num_steps'])} steps); "
            f"lower `learning_rate` (got {config['learning_rate']:g})"
        )
    return {
        "index": int(config["index"]),
        "with_canary": bool(config["with_canary"]),
        "seed": noise_seed,
        "score": _score(logits, canary_y, config["score"]),
    }


GDP_PER_RUN_WARNING = (
    "the headline holds if each run of --train is mu-GDP in the canary, as full-batch DP-SGD is; a pipeline that is not (Poisson "
    "sampling, Laplace noise) can be mu-GDP-refuted while meeting its (epsilon, delta) claim: for it, hold the (epsilon, delta) "
    "bound (epsilon_lower_bound_eps_delta) against the claim"
)


def design_mu(config: BlackBoxConfig) -> float:
    """The μ per training run the paired test is designed for: the user's claim as μ-GDP, else √T/σ of the config's full-batch DP-SGD.

    It fixes only the test's guess count: the bound is valid whatever it is.

    >>> round(design_mu(BlackBoxConfig(noise_multiplier=0.5, num_steps=4)), 6), round(design_mu(BlackBoxConfig(claimed_epsilon=10.0)), 2)
    (4.0, 2.0)
    """
    if config.claimed_epsilon is not None:
        return max(float(gdp_mu(config.claimed_epsilon, config.delta if config.claimed_delta is None else config.claimed_delta)), 1e-3)
    return math.sqrt(config.num_steps) / config.noise_multiplier


def pairing_seed(seed: int) -> int:
    """The seed of the pairs' coins and tie-breaks: the audit's ``seed``'s second child, so neither a run's (seed, index) stream nor the worst-case start's (the first child) is theirs.

    >>> from privaudit.audits.blackbox.worst_case import init_seed
    >>> pairing_seed(0) == child_seeds(0, ["worst-case init", "paired coins"])["paired coins"] != init_seed(0)
    True
    """
    return child_seeds(seed, ["worst-case init", "paired coins"])["paired coins"]


def bound_scores(in_scores: np.ndarray, out_scores: np.ndarray, config: BlackBoxConfig):
    """The audit's bounds from the final models' scores: (paired, GDP split threshold, (ε, δ) split threshold), seeded by ``config.seed``.

    The headline (``paired``): run i with the canary and run i without form
    a pair, fixed by index before any score is seen; a fair coin from
    :func:`pairing_seed` orients each pair's difference (:func:`~privaudit.stats.gaussian_steps.gaussian_step_bound`,
    ``test="order-statistics"``). The runs are independent, so the oriented
    pair is exactly a pair mechanism whose coin chose which run held the
    canary: under μ-GDP per run it is (√2 μ)-GDP with a fair coin, the proven
    case of Xiang et al.'s test; the refuted μ_pair / √2 is the bound on μ
    per run, its ε(δ) the headline. The other two are Clopper–Pearson at a
    threshold chosen on a held-out fifth of the scores, the headline before.

    >>> rng = np.random.default_rng(0)
    >>> paired, gdp, _ = bound_scores(rng.normal(2, 1, 200), rng.normal(0, 1, 200), BlackBoxConfig(claimed_epsilon=10.0))
    >>> paired.method, gdp.method, bool(0 < paired.epsilon < 10 and 0 < gdp.epsilon < 10)  # scores of 2-GDP: the truth is ε(1e-5) = 10.0
    ('order-statistics', 'gdp', True)
    """
    common: dict[str, Any] = dict(delta=config.delta, confidence=config.confidence, threshold="split", seed=config.seed)
    paired = gaussian_step_bound(
        in_scores,
        out_scores,
        delta=config.delta,
        confidence=config.confidence,
        test="order-statistics",
        claim=design_mu(config),
        seed=pairing_seed(config.seed),
    )
    return (
        paired,
        epsilon_lower_bound(in_scores, out_scores, method="gdp", **common),
        epsilon_lower_bound(in_scores, out_scores, method="eps-delta", **common),
    )


def run_blackbox_audit(
    config: BlackBoxConfig,
    directory,
    *,
    backend: str = "local",
    max_workers: int | None = None,
    address: str | None = None,
) -> BlackBoxResult:
    """Run the black-box audit (Tight Auditing, Algorithm 1), saving each model's score in ``directory``.

    Runs already saved in ``directory`` (by an earlier, interrupted call with
    the same config) are not trained again. See :func:`privaudit.runner.run_all`
    for ``backend``, ``max_workers`` and ``address``.

    >>> import tempfile
    >>> cfg = BlackBoxConfig(noise_multiplier=0.5, num_steps=2, num_models_per_side=5)
    >>> result = run_blackbox_audit(cfg, tempfile.mkdtemp(), max_workers=1)
    >>> result.num_in, result.num_out, result.epsilon_lower_bound >= 0
    (5, 5, True)
    """
    if not isinstance(config, BlackBoxConfig):
        raise ValueError(f"`config` must be a BlackBoxConfig, got {type(config).__name__}")
    if config.train is not None:  # a bad path or signature is refused before any run starts
        check_train_function(config.train, config.init == "worst-case")
    available = len(_data(config.dataset, config.seed, config.data, config.label_col).x_train)
    if config.num_records is not None and config.num_records > available:
        raise ValueError(f"`num_records` (--num-records) must be at most the train split's {available} records, got {config.num_records}")
    configs = run_configs(config)  # crafts the worst-case start: a bad --init-model is refused before the store's folder exists
    store = RunStore(directory)
    plan = resume_plan(store, configs)
    start = time.perf_counter()
    who = f"`--train` {config.train!r}" if config.train else "the built-in DP-SGD training"
    results = run_all(train_one, configs, store=store, backend=backend, max_workers=max_workers, address=address, who=who)
    wall = time.perf_counter() - start
    in_scores = np.array([r["score"] for r in results if r["with_canary"]], dtype=np.float64)
    out_scores = np.array([r["score"] for r in results if not r["with_canary"]], dtype=np.float64)
    paired, gdp, eps_delta = bound_scores(in_scores, out_scores, config)
    # the built-in DP-SGD's accounting: with --train it did not run, and its ε would say nothing of the user's training
    claimed = None if config.train else gaussian_epsilon(config.noise_multiplier, config.delta, sampling_prob=1.0, num_steps=config.num_steps)
    trained = len(configs) - len(plan.reused)
    initialisation = craft_initial_state(config).record if config.init == "worst-case" else None
    result = BlackBoxResult(
        epsilon_lower_bound=paired.epsilon,
        epsilon_lower_bound_eps_delta=eps_delta.epsilon,
        claimed_epsilon=claimed,
        delta=config.delta,
        confidence=config.confidence,
        threat_model=THREAT_MODEL if initialisation is None else THREAT_MODEL_WORST_CASE,
        num_in=int(in_scores.size),
        num_out=int(out_scores.size),
        mean_in_score=float(in_scores.mean()),
        mean_out_score=float(out_scores.mean()),
        num_trained=trained,
        wall_time_s=wall,
        models_per_minute=60.0 * trained / wall if wall > 0 else float("inf"),
        backend=backend,
        bound=gdp,
        bound_eps_delta=eps_delta,
        config=config,
        conventions=dataset_conventions(config),
        resume_note=plan.explanation(),
        initialisation=initialisation,
        paired_bound=paired,
    )
    claim = own_or_user_claim(claim_of(config.claimed_epsilon, config.claimed_delta, delta=config.delta), claimed, delta=config.delta)
    warnings = (GDP_PER_RUN_WARNING,) if config.train is not None else ()
    return bound_verdict(result, paired, claim=claim, raise_with="more trained models per side (num_models_per_side)", warnings=warnings)


class BlackBoxAudit(Audit):
    """Black-box DP-SGD audit (Tight Auditing Algorithm 1): train many models with and without a canary, resumably."""

    name = "blackbox"
    title = "DP-SGD (black-box, many models)"
    description = "Black-box DP-SGD audit (Tight Auditing Algorithm 1): train many models with and without a canary, resumably."
    config_type = BlackBoxConfig
    result_type = BlackBoxResult
    default_resource = "blackbox.json"
    requires = ("torch", "sklearn")
    checkpointed = True

    def memory_estimate(self, config: BlackBoxConfig) -> tuple[int, str]:
        # every model's result (about 1 KiB each, with its config) is held to compute the bounds
        return 1024 * 2 * config.num_models_per_side, f"`num_models_per_side` = {config.num_models_per_side}"

    tiny_overrides = {"num_steps": 2, "num_models_per_side": MIN_MODELS_PER_SIDE}

    def run(
        self,
        config: BlackBoxConfig,
        *,
        progress: Progress | None = None,
        checkpoints=None,
        backend: str = "local",
        max_workers: int | None = None,
        address: str | None = None,
    ) -> AuditRun:
        """Train and score every model; finished models are kept in ``checkpoints`` (a directory) and resumed from it."""
        import tempfile

        check_backend(backend, max_workers, address)

        require("torch", purpose="the black-box audit")  # checked here: a worker's ImportError would come after the store exists
        _data(config.dataset, config.seed, config.data, config.label_col)  # an unreadable --data is refused before any folder is created
        if config.train is not None:
            check_train_function(config.train, config.init == "worst-case")  # before any folder is created
        if config.init == "worst-case":
            craft_initial_state(config)  # a bad --init-model (or too few records to craft from) is refused before any folder too; cached for the runs
        trainer = f"--train {config.train}" if config.train is not None else f"{config.architecture}, DP-SGD"
        (progress or no_progress)("training models", detail=f"{2 * config.num_models_per_side} models ({trainer}), backend {backend}")
        created = [] if checkpoints is None else [path for path in (Path(checkpoints), *Path(checkpoints).parents) if not path.exists()]
        try:
            with tempfile.TemporaryDirectory() as scratch:
                result = run_blackbox_audit(config, scratch if checkpoints is None else checkpoints, backend=backend, max_workers=max_workers, address=address)
        except (ValueError, RuntimeError) as error:
            cause = error if isinstance(error, ValueError) else error.__cause__
            if not isinstance(cause, ValueError):  # a crash, not bad settings: keep the finished runs for a rerun
                raise
            for path in created:  # bad settings (a diverging training, say): leave no folder this call created
                shutil.rmtree(path, ignore_errors=True)
            raise ValueError(str(cause)) from None
        return AuditRun(self.name, config, result)


AUDIT = BlackBoxAudit()
