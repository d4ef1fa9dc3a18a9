"""Query augmentations of the ``mia`` audit: each image record queried as its mirror and shifted views, as LiRA and RMIA query them.

``--augment flip,shift`` makes A views of every record: the identity first,
then the horizontal mirror (``flip``) and the shifts by ``--shift-pixels``
s in each direction (``shift``: the 8 offsets (dy, dx) in {−s, 0, s}², the
image reflected at its border, as LiRA's reference code pads), and every
combination: 2 views for ``flip``, 9 for ``shift``, 18 for both. Every model
(target and references) is queried on every view, giving signals of shape
(A, n); :mod:`privaudit.stats.mia_augmented` turns them into scores.

The features must be images: their shape (channels, height, width) is
never guessed from the feature count. It is the embedded dataset's own
(digits: 1 × 8 × 8, checked), or given with ``--image-shape C,H,W``, the
features being each image flattened in (C, H, W) order (numpy's row-major
reshape); a shape whose size is not the feature count is refused.

>>> x = np.arange(4.0).reshape(1, 4)  # one 1 x 2 x 2 image [[0, 1], [2, 3]]
>>> augmented_views(x, (1, 2, 2), ("flip",), 1)[:, 0].tolist()
[[0.0, 1.0, 2.0, 3.0], [1.0, 0.0, 3.0, 2.0]]
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._core.conventions import Convention, checked, explicit
from ...stats.mia import rmia_fractions, rmia_log_ratios
from ...stats.mia_augmented import lira_offline_augmented, lira_online_augmented, loss_augmented, view_averaged_signal
from .summaries import FRACTION_KEYS

__all__ = ["AugmentSpec", "augment_spec", "augmented_attack_scores", "augmented_views", "signals_on_views", "view_offsets"]


@dataclasses.dataclass(frozen=True)
class AugmentSpec:
    """The views to query: ``augment`` names, the (C, H, W) ``image_shape``, the shift in pixels, and how the shape was decided."""

    augment: tuple[str, ...]
    image_shape: tuple[int, int, int]
    shift: int
    convention: Convention

    @property
    def num_views(self) -> int:
        return len(view_offsets(self.augment, self.shift))


def view_offsets(augment: tuple[str, ...], shift: int) -> list[tuple[bool, int, int]]:
    """(mirrored, dy, dx) of every view, the identity first.

    >>> len(view_offsets(("flip", "shift"), 4)), view_offsets(("flip",), 1)
    (18, [(False, 0, 0), (True, 0, 0)])
    """
    flips = (False, True) if "flip" in augment else (False,)
    steps = (0, -shift, shift) if "shift" in augment else (0,)
    return [(flip, dy, dx) for flip in flips for dy in steps for dx in steps]


def augmented_views(x: np.ndarray, image_shape: tuple[int, int, int], augment: tuple[str, ...], shift: int) -> np.ndarray:
    """The (A, n, d) views of the flat images ``x`` (n, d): mirrored along the width, shifted with the border reflected."""
    channels, height, width = image_shape
    images = np.asarray(x).reshape(len(x), channels, height, width)
    padded = np.pad(images, ((0, 0), (0, 0), (shift, shift), (shift, shift)), mode="reflect") if "shift" in augment else None
    views = []
    for flip, dy, dx in view_offsets(augment, shift):
        if dy or dx:
            assert padded is not None
            view = padded[:, :, shift + dy : shift + dy + height, shift + dx : shift + dx + width]
        else:
            view = images
        views.append((view[..., ::-1] if flip else view).reshape(len(x), -1))
    return np.ascontiguousarray(np.stack(views), dtype=np.asarray(x).dtype)


def augment_spec(config: Any, pool: Any) -> AugmentSpec | None:
    """The views a config asks for, checked against the pool (None without ``augment``); ValueError naming the option."""
    get = config.get if isinstance(config, dict) else functools.partial(getattr, config)
    augment = tuple(get("augment", ()) or ())
    if not augment:
        return None
    shape, shift = get("image_shape", None), int(get("shift_pixels", 1))
    features = pool.x.shape[1]
    if shape is None:
        if getattr(pool, "image_shape", None) is None:
            raise ValueError(
                f"`--image-shape` (`image_shape`) must give the images' (channels, height, width) for `--augment`: "
                f"it is never guessed from the {features} features"
            )
        shape = tuple(pool.image_shape)
        convention = checked("image layout", f"{shape[0]} x {shape[1]} x {shape[2]} (C, H, W)", f"the embedded dataset {pool.source!r} declares it")
    else:
        shape = tuple(int(side) for side in shape)
        convention = explicit("image layout", f"{shape[0]} x {shape[1]} x {shape[2]} (C, H, W), flattened row-major", "--image-shape")
    if int(np.prod(shape)) != features:
        raise ValueError(f"`--image-shape` (`image_shape`) {shape} must hold as many values as the pool's {features} features, got {int(np.prod(shape))}")
    if "shift" in augment and not 1 <= shift < min(shape[1], shape[2]):
        raise ValueError(f"`--shift-pixels` (`shift_pixels`) must be in [1, {min(shape[1], shape[2]) - 1}] for {shape[1]} x {shape[2]} images, got {shift}")
    return AugmentSpec(augment, (int(shape[0]), int(shape[1]), int(shape[2])), shift, convention)


def signals_on_views(signal: Callable[[np.ndarray], np.ndarray], x: np.ndarray, spec: AugmentSpec | None) -> np.ndarray:
    """``signal(x)`` (n,) without augmentations; else (A, n), ``signal`` of every view."""
    if spec is None:
        return signal(x)
    return np.stack([signal(view) for view in augmented_views(x, spec.image_shape, spec.augment, spec.shift)])


def augmented_attack_scores(
    target: np.ndarray, reference: np.ndarray, membership: np.ndarray, population: np.ndarray, config: Any, *, evaluated: np.ndarray
) -> dict[str, np.ndarray]:
    """Every attack's scores of the ``evaluated`` records from view signals: ``target`` (A, n), ``reference`` (k, A, n).

    The readings of :mod:`privaudit.stats.mia_augmented`; RMIA ranks by its
    log ratio on the view-averaged signal, its fractions beside it, as
    :func:`privaudit.audits.mia.result.attack_scores` does.
    """
    x = (target[:, evaluated], reference[:, :, evaluated], membership[:, evaluated])
    averaged_target, averaged_reference = view_averaged_signal(target), view_averaged_signal(reference)
    x_mean = (averaged_target[evaluated], averaged_reference[:, evaluated], membership[:, evaluated])
    z_mean = (averaged_target[population], averaged_reference[:, population], membership[:, population])
    z_of = np.where(population, np.cumsum(population) - 1, -1)[evaluated]
    scores = {
        "loss": loss_augmented(x[0]),
        "lira-online": lira_online_augmented(*x, global_variance=config.global_variance),
        "lira-offline": lira_offline_augmented(*x, global_variance=config.global_variance),
    }
    for name, offline_a in (("rmia-online", None), ("rmia-offline", config.offline_a)):
        scores[name] = rmia_log_ratios(*x_mean, offline_a=offline_a)
        scores[FRACTION_KEYS[name]] = rmia_fractions(scores[name], rmia_log_ratios(*z_mean, offline_a=offline_a), z_of, gamma=config.gamma)
    return scores
