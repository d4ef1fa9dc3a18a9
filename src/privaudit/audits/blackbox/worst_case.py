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
from typing import Any

import numpy as np

from ..._core.seeding import child_seeds
from ...data.tabular import load_dataset, load_dataset_file
from ...models.classifiers import build_classifier
from .config import BlackBoxConfig, WorstCaseInit

__all__ = [
    "PRETRAIN_STEPS",
    "CraftedInit",
    "dataset_split",
    "state_digest",
    "craft_initial_state",
    "init_seed",
    "pretraining_pool",
    "start_from_crafted",
    "training_set",
]

PRETRAIN_STEPS = 300  # full-batch Adam steps: the pool's loss falls below 0.01 on digits (MLP)
PRETRAIN_LEARNING_RATE = 1e-2


@dataclasses.dataclass(frozen=True)
class CraftedInit:
    """The crafted parameters (name → float32 array) and their record."""

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
    """SHA-256 over the parameters' names, shapes and float32 bytes, in name order."""
    digest = hashlib.sha256()
    for name in sorted(state):
        array = np.ascontiguousarray(state[name], dtype=np.float32)
        digest.update(f"{name}:{array.shape};".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def craft_initial_state(config: BlackBoxConfig) -> CraftedInit:
    """Pre-train ``config.architecture`` on :func:`pretraining_pool`, deterministically from :func:`init_seed`; cached per process."""
    return _craft(config.dataset, config.seed, config.data, config.label_col, config.num_records, config.architecture)


@functools.lru_cache(maxsize=4)
def _craft(dataset: str, seed: int, data: str | None, label_col: str | None, num_records: int | None, architecture: str) -> CraftedInit:
    import torch

    split = dataset_split(dataset, seed, data, label_col)
    pool_x, pool_y = pretraining_pool(split, num_records)
    if len(pool_x) < 2:
        raise ValueError(f"`init` 'worst-case' (--init) needs records outside the audited set to craft from, got {len(pool_x)}; lower `num_records`")
    train_x, train_y = training_set(split, num_records)
    own_seed = init_seed(seed)
    model = build_classifier(architecture, input_dim=pool_x.shape[1], num_classes=split.num_classes, image_shape=split.image_shape, seed=own_seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one reduction order: every worker crafts the same bytes
    try:
        optimizer = torch.optim.Adam(model.parameters(), lr=PRETRAIN_LEARNING_RATE)
        x, y = torch.from_numpy(pool_x), torch.from_numpy(pool_y)
        for _ in range(PRETRAIN_STEPS):  # full batch: no sampling, so no randomness past the initial weights
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        with torch.no_grad():
            pool_accuracy = float((model(x).argmax(1) == y).double().mean())
            training_accuracy = float((model(torch.from_numpy(train_x)).argmax(1) == torch.from_numpy(train_y)).double().mean())
    finally:
        torch.set_num_threads(threads)
    state = {name: value.detach().cpu().numpy().astype(np.float32) for name, value in model.state_dict().items()}
    record = WorstCaseInit(
        seed=own_seed,
        digest=state_digest(state),
        pool_size=len(pool_x),
        steps=PRETRAIN_STEPS,
        learning_rate=PRETRAIN_LEARNING_RATE,
        pool_accuracy=pool_accuracy,
        training_accuracy=training_accuracy,
    )
    return CraftedInit(state, record)


def _config_of_run(config: dict[str, Any]) -> BlackBoxConfig:
    fields = {field.name for field in dataclasses.fields(BlackBoxConfig)}
    return BlackBoxConfig(**{key: value for key, value in config.items() if key in fields})


def start_from_crafted(model, config: dict[str, Any]) -> None:
    """Load the auditor's crafted start into ``model``, after checking it is the one the audit recorded."""
    import torch

    crafted = craft_initial_state(_config_of_run(config))
    if crafted.record.digest != config["init_digest"]:
        raise RuntimeError(
            f"run {int(config['index'])}: this worker crafted initial parameters of digest {crafted.record.digest[:12]}…, "
            f"not the audit's {str(config['init_digest'])[:12]}… (a different torch or CPU?); run every worker on the same installation"
        )
    model.load_state_dict({name: torch.from_numpy(value.copy()) for name, value in crafted.state.items()})
