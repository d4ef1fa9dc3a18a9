"""The ``mia`` audit on the user's own target and reference models: their signals on the pool, and how their membership and outputs were decided."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..._core.conventions import Convention
from ...models.loading import load_model
from ...stats.mia import logit_confidence_from_loss
from ..blind import blind_baseline
from ..blind_image import blind_image_baseline
from .augment import augment_spec, signals_on_views
from .training import clip_votes, pool_of, read_reference_models, target_members, user_target_draws

__all__ = ["pool_table", "target_conventions", "user_blind_baseline", "user_references", "user_target"]


def target_conventions(output: Convention, membership: Convention) -> tuple[Convention, ...]:
    """The target's membership (given) and output kind (checked on its outputs, or given with --model-output)."""
    return (membership, dataclasses.replace(output, name="target output kind"))


def user_target(config: Any, num_records: int, num_population: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[Convention, ...]]:
    """(φ of every record on the user's target, population mask, target membership, how its membership and output kind were decided)."""
    pool = pool_of(config)
    members, membership = target_members(pool, members=config.members, members_col=config.members_col, id_col=config.id_col)
    if int((~members).sum()) < num_population + 5 or int(members.sum()) < 5:
        raise ValueError(
            f"`--members` (or `--members-col`) must leave at least 5 members and {num_population + 5} non-members in the pool "
            f"({num_population} population samples, `population_fraction` = {config.population_fraction:g}, and non-members to attack), "
            f"got {int(members.sum())} members of {num_records}"
        )
    target = load_model(config.model, kind=config.model_kind, factory=config.factory, output=config.model_output, trusted=config.trusted).decide_output(pool.x)
    clipped = ""

    def signal(x: np.ndarray) -> np.ndarray:
        nonlocal clipped
        values, clipped = clip_votes(logit_confidence_from_loss(target.loss(x, pool.y)), target.model)
        return values

    signals = signals_on_views(signal, pool.x, augment_spec(config, pool))
    population, in_target = user_target_draws(config.seed, members, num_population)
    assert target.output_convention is not None  # decide_output records it
    output = dataclasses.replace(target.output_convention, evidence=target.output_convention.evidence + clipped)
    return signals, population, in_target, target_conventions(output, membership)


def user_references(config: Any, pool: Any) -> tuple[np.ndarray, np.ndarray]:
    return read_reference_models(
        str(config.reference_models),
        str(config.reference_membership),
        pool,
        kind=config.model_kind,
        factory=config.factory,
        output=config.model_output,
        trusted=config.trusted,
        views=augment_spec(config, pool),
    )


def pool_table(pool: Any, config: Any) -> dict[str, np.ndarray]:
    """The records as the blind baseline sees them: each feature by its file's name (``x[i]`` without a header) and the label as a category.

    >>> from .training import Pool
    >>> table = pool_table(Pool(np.zeros((2, 2), np.float32), np.array([0, 1]), "p.npz"), None)
    >>> list(table), table["label"].tolist()
    (['x[0]', 'x[1]', 'label'], ['0', '1'])
    """
    names = pool.feature_names or tuple(f"x[{i}]" for i in range(pool.x.shape[1]))
    table = {str(name): pool.x[:, i] for i, name in enumerate(names)}
    table[getattr(config, "label_col", None) or "label"] = pool.y.astype(str)  # a class, not a quantity
    return table


def user_blind_baseline(pool: Any, config: Any, is_member: np.ndarray) -> Any:
    """The blind baseline of the user's membership: a pixel embedding for images (``--image-shape``, or an embedded image set), else trees on the table."""
    shape = config.image_shape or getattr(pool, "image_shape", None)
    if shape is not None:
        return blind_image_baseline(pool.x, pool.y, is_member, image_shape=tuple(shape), seed=config.seed)
    return blind_baseline(pool_table(pool, config), is_member, seed=config.seed)
