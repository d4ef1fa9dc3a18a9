"""Worst-case initialisation of the black-box audit (Annamalai and De Cristofaro, NeurIPS 2024).

DP-SGD's accounting holds for every starting point, so the auditor may pick
the one that makes the target stand out. :func:`craft_initial_state`
pre-trains the audit's architecture, without noise, on records the audited
training set never holds (the test split without the canary, and the train
split's records past ``num_records``). From there the audited records fit
well: their gradients are small and nearly constant, while the canary's
stays clipped at C in the same direction step after step, so its loss in the
final model carries close to the whole composition of the T noisy steps.

The crafting is deterministic given the audit's seed (its own child seed,
recorded) and is keyed by a SHA-256 digest of the parameters: the parent
crafts once and records the digest, every worker crafts again (cached per
process) and refuses to train from parameters whose digest differs.

With the user's own training (``train``), the architecture is the user's:
``init_model`` ('package.module:build') builds the untrained
``torch.nn.Module``, which is pre-trained here exactly as the built-in one
(:func:`build_init_model`), and every run's ``fn`` receives the crafted
parameters as ``init_state`` (:func:`user_init_state`).

>>> from privaudit.audits.blackbox.config import BlackBoxConfig
>>> config = BlackBoxConfig(dataset="digits", architecture="mlp", init="worst-case", num_records=1000)
>>> crafted = craft_initial_state(config)
>>> crafted.record.pool_size, crafted.record.seed == init_seed(config.seed), len(crafted.record.digest)
(796, True, 64)
>>> crafted.record.digest == craft_initial_state(config).record.digest
True
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ..._core.seeding import child_seeds
from ..._core.usercode import call_user
from ...data.tabular import load_dataset, load_dataset_file
from ...models.classifiers import build_classifier
from ...models.loading import import_callable
from .config import BlackBoxConfig, WorstCaseInit

__all__ = [
    "PRETRAIN_STEPS",
    "CraftedInit",
    "InitState",
    "build_init_model",
    "checked_crafted",
    "dataset_split",
    "state_digest",
    "craft_initial_state",
    "init_seed",
    "pretraining_pool",
    "start_from_crafted",
    "training_set",
    "user_init_state",
]

PRETRAIN_STEPS = 300  # full-batch Adam steps: the pool's loss falls below 0.01 on digits (MLP)
PRETRAIN_LEARNING_RATE = 1e-2


@dataclasses.dataclass(frozen=True)
class CraftedInit:
    """The crafted state (name → array, each entry's own dtype: float32 parameters, integer buffers) and its record."""

    state: dict[str, np.ndarray]
    record: WorstCaseInit


def init_seed(seed: int) -> int:
    """The crafted initialisation's own seed, a child of the audit's ``seed`` (never a run's)."""
    return child_seeds(seed, ["worst-case init"])["worst-case init"]


@functools.lru_cache(maxsize=4)
def dataset_split(dataset: str, seed: int, data: str | None = None, label_col: str | None = None):
    """The embedded dataset ``dataset``, or the user's file ``data``, split by ``seed``."""
    if data is not None:
        return load_dataset_file(data, name="--data", label_col=label_col, seed=seed)
    return load_dataset(dataset, seed=seed)


def training_set(data, num_records: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The audited records: the first ``num_records`` of the train split (all of it for None)."""
    stop = None if num_records is None else int(num_records)
    return np.asarray(data.x_train[:stop], dtype=np.float32), np.asarray(data.y_train[:stop], dtype=np.int64)


def pretraining_pool(data, num_records: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The records the auditor may craft from: the test split past its first record (the canary's) and the train split past ``num_records``."""
    stop = len(data.x_train) if num_records is None else int(num_records)
    x = np.concatenate([np.asarray(data.x_train[stop:]), np.asarray(data.x_test[1:])]).astype(np.float32)
    y = np.concatenate([np.asarray(data.y_train[stop:]), np.asarray(data.y_test[1:])]).astype(np.int64)
    return x, y


def state_digest(state: dict[str, np.ndarray]) -> str:
    """SHA-256 over the entries' names, shapes and bytes, in name order: float32 as before, any other dtype named too.

    >>> state_digest({"w": np.zeros(2, np.float32)}) == state_digest({"w": np.zeros(2, np.float64)})
    False
    """
    digest = hashlib.sha256()
    for name in sorted(state):
        array = np.ascontiguousarray(state[name])
        if array.dtype == np.float32:  # the built-in models' only dtype: their digests stay the ones recorded before other dtypes were kept
            digest.update(f"{name}:{array.shape};".encode())
        else:  # an integer buffer (BatchNorm's num_batches_tracked) or a float64 parameter: its exact bytes, dtype named
            digest.update(f"{name}:{array.shape}:{array.dtype.str};".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def craft_initial_state(config: BlackBoxConfig) -> CraftedInit:
    """Pre-train ``config.architecture``, or the module ``config.init_model`` builds, on :func:`pretraining_pool`, deterministically from :func:`init_seed`; cached per process."""
    return _craft(config.dataset, config.seed, config.data, config.label_col, config.num_records, config.architecture, config.init_model)


def _builder_takes_seed(build, path: str) -> bool:
    """Whether ``build`` takes a ``seed`` keyword; ValueError naming ``--init-model`` when it can be called neither with it nor without arguments."""
    try:
        signature = inspect.signature(build)
    except (TypeError, ValueError):  # no signature to inspect (a builtin): called without arguments
        return False
    seed = signature.parameters.get("seed")
    if seed is not None and seed.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
        return True
    try:
        signature.bind()
    except TypeError as error:
        raise ValueError(f"`--init-model` {path!r} must be callable as build() or build(*, seed), but its signature is {signature}: {error}") from None
    return False


def build_init_model(path: str, seed: int, probe_x: np.ndarray, num_classes: int):
    """The untrained ``torch.nn.Module`` that ``path`` ('package.module:build') builds, checked to map float32 (n, d) to logits (n, ``num_classes``) on ``probe_x``.

    ``build(seed=seed)`` when it takes a ``seed`` keyword, else ``build()``;
    either way inside ``torch.random.fork_rng`` after ``torch.manual_seed(seed)``,
    so the weights are the seed's and the caller's global RNG is as it was.
    ValueError naming ``--init-model`` otherwise.

    >>> model = build_init_model("torch.nn:Identity", 0, np.zeros((3, 2), np.float32), 2)
    >>> type(model).__name__
    'Identity'
    >>> build_init_model("torch.nn:Identity", 0, np.zeros((3, 2), np.float32), 10)
    Traceback (most recent call last):
    ...
    ValueError: `--init-model` 'torch.nn:Identity' must build a torch.nn.Module returning logits of shape (n, 10) for a float32 batch (n, 2), got shape (3, 2)
    """
    import torch

    build = import_callable(path, "--init-model")
    kwargs = {"seed": int(seed)} if _builder_takes_seed(build, path) else {}
    with torch.random.fork_rng(devices=[]):  # the user's global RNG is never drawn from, whatever the builder does
        torch.manual_seed(int(seed))
        model = call_user("--init-model", path, build, context=" while building the initial model", **kwargs)
        if not isinstance(model, torch.nn.Module):
            raise ValueError(f"`--init-model` {path!r} must build a torch.nn.Module, got {type(model).__name__}")
        _check_logits(model, path, probe_x, num_classes)
    return model


def _check_logits(model, path: str, probe_x: np.ndarray, num_classes: int) -> None:
    import torch

    training = model.training
    model.eval()  # no BatchNorm statistics move: the check leaves the crafted start as it would be without it
    try:
        with torch.no_grad():
            out = call_user("--init-model", path, model, torch.from_numpy(probe_x), context=" on the pre-training pool")
    finally:
        model.train(training)
    shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
    if shape != (len(probe_x), num_classes):
        raise ValueError(
            f"`--init-model` {path!r} must build a torch.nn.Module returning logits of shape (n, {num_classes}) for a float32 batch (n, {probe_x.shape[1]}), got "
            + (f"shape {shape}" if isinstance(shape, tuple) else shape)
        )


def _pretrain(model, pool_x: np.ndarray, pool_y: np.ndarray, train_x: np.ndarray, train_y: np.ndarray) -> tuple[dict[str, np.ndarray], float, float]:
    """Full-batch Adam on the pool, one thread; the state (each entry's own dtype) and the accuracies on the pool and the audited records."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one reduction order: every worker crafts the same bytes
    try:
        optimizer = torch.optim.Adam(model.parameters(), lr=PRETRAIN_LEARNING_RATE)
        x, y = torch.from_numpy(pool_x), torch.from_numpy(pool_y)
        for _ in range(PRETRAIN_STEPS):  # full batch: no sampling, so no randomness past the initial weights
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        # the state before any evaluation: a forward pass in training mode would move BatchNorm's statistics
        state = {name: value.detach().cpu().numpy().copy() for name, value in model.state_dict().items()}
        training = model.training
        model.eval()
        with torch.no_grad():
            pool_accuracy = float((model(x).argmax(1) == y).double().mean())
            training_accuracy = float((model(torch.from_numpy(train_x)).argmax(1) == torch.from_numpy(train_y)).double().mean())
        model.train(training)
    finally:
        torch.set_num_threads(threads)
    return state, pool_accuracy, training_accuracy


@functools.lru_cache(maxsize=4)
def _craft(
    dataset: str, seed: int, data: str | None, label_col: str | None, num_records: int | None, architecture: str, init_model: str | None = None
) -> CraftedInit:
    import torch

    split = dataset_split(dataset, seed, data, label_col)
    pool_x, pool_y = pretraining_pool(split, num_records)
    if len(pool_x) < 2:
        raise ValueError(f"`init` 'worst-case' (--init) needs records outside the audited set to craft from, got {len(pool_x)}; lower `num_records`")
    train_x, train_y = training_set(split, num_records)
    own_seed = init_seed(seed)
    if init_model is None:
        model = build_classifier(architecture, input_dim=pool_x.shape[1], num_classes=split.num_classes, image_shape=split.image_shape, seed=own_seed)
    else:
        model = build_init_model(init_model, own_seed, pool_x, split.num_classes)
    with torch.random.fork_rng(devices=[]):  # a user's dropout draws from the seed's stream, never from the caller's
        torch.manual_seed(own_seed)
        state, pool_accuracy, training_accuracy = _pretrain(model, pool_x, pool_y, train_x, train_y)
    record = WorstCaseInit(
        seed=own_seed,
        digest=state_digest(state),
        pool_size=len(pool_x),
        steps=PRETRAIN_STEPS,
        learning_rate=PRETRAIN_LEARNING_RATE,
        pool_accuracy=pool_accuracy,
        training_accuracy=training_accuracy,
        model=init_model or "",
    )
    return CraftedInit(state, record)


def _config_of_run(config: dict[str, Any]) -> BlackBoxConfig:
    fields = {field.name for field in dataclasses.fields(BlackBoxConfig)}
    return BlackBoxConfig(**{key: value for key, value in config.items() if key in fields})


def checked_crafted(config: dict[str, Any]) -> CraftedInit:
    """The crafted start of run ``config``, crafted again here (cached), after checking its digest is the one the audit recorded."""
    crafted = craft_initial_state(_config_of_run(config))
    if crafted.record.digest != config["init_digest"]:
        raise RuntimeError(
            f"run {int(config['index'])}: this worker crafted initial parameters of digest {crafted.record.digest[:12]}…, "
            f"not the audit's {str(config['init_digest'])[:12]}… (a different torch or CPU?); run every worker on the same installation"
        )
    return crafted


def _tensors(crafted: CraftedInit) -> dict[str, Any]:
    """Fresh tensors of the crafted state: whoever changes them changes no other run's start, nor the cache."""
    import torch

    return {name: torch.from_numpy(value.copy()) for name, value in crafted.state.items()}


def start_from_crafted(model, config: dict[str, Any]) -> None:
    """Load the auditor's crafted start into ``model``, after checking it is the one the audit recorded."""
    model.load_state_dict(_tensors(checked_crafted(config)))


class InitState(Mapping):
    """A read-only name → tensor mapping that records whether any value was read (``load_state_dict`` reads every one).

    >>> state = InitState({"w": 1})
    >>> list(state), state.read
    (['w'], False)
    >>> state["w"], state.read
    (1, True)
    """

    def __init__(self, tensors: dict[str, Any]):
        self._tensors = dict(tensors)
        self.read = False

    def __getitem__(self, name: str):
        value = self._tensors[name]
        self.read = True
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)


def user_init_state(config: dict[str, Any]) -> InitState:
    """The ``init_state`` that run ``config``'s ``--train`` function receives: copies of the checked crafted start, reads recorded."""
    return InitState(_tensors(checked_crafted(config)))
