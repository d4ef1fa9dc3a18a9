"""White-box observations from gradient canaries, and their ε bounds (Tight Auditing Algorithm 2, §5.2).

The mechanism under audit is a callable ``release(canary_rows) -> vector``:
given the per-example canary gradients of one step (rows over the audit
coordinates), it runs one privatized step and returns the audit coordinates
of what it releases. ``denominator`` is what the release divides the noisy
sum by (1 for a sum, the expected batch size for a mean).

Per step, ``canaries_per_step`` of the ``num_slots`` slots are drawn as
"in" slots, and each of them gets its canary with probability ``q_c``; the
others are "out" slots. The observation of slot i is

    o_i = <u_i, released slot i> · denominator / C,

so a correct Gaussian mechanism gives "in" ~ N(1, σ²) (for q_c = 1) and
"out" ~ N(0, σ²): the normalisation of §5.2. Unlike the paper's Algorithm 2,
which privatizes a second batch per step for the "out" observations, the
"out" observations come from slots that no canary uses in the same step, so
auditing costs one extra block of coordinates instead of a second step.
Slots hold independent noise coordinates, so in a correct implementation
every observation is independent of the others.

**Twin differencing.** An implementation that reuses noise (few seeds,
or one key for several parameter groups) releases identical noise on two
blocks of audit coordinates. Blocks (one per step and audit group) that
agree bit for bit on at least half their coordinates are paired, and each
is read as its difference from its twin; canary-bearing slots of the twin
are dropped. Independent Gaussian noise never agrees on half of a block (the
chance is below 2⁻²⁰ per pair of coordinates), so for a correct
implementation the attack reduces to the plain observations above and the
bound keeps its stated confidence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ..canaries.gradient import GradientCanary
from ..stats._validation import check_count, check_positive

__all__ = ["GradientObservations", "collect_gradient_observations", "find_twins"]


@dataclasses.dataclass(frozen=True)
class GradientObservations:
    """In/out observations of a white-box gradient-canary run, normalised to N(·, σ²)."""

    in_scores: np.ndarray
    out_scores: np.ndarray
    num_steps: int
    num_twinned_blocks: int
    canary_rate: float


def _check_canary_rate(value) -> float:
    rate = check_positive(value, "canary_rate")
    if rate > 1.0:
        raise ValueError(f"`canary_rate` (q_c) must be in (0, 1], got {rate:g}")
    return rate


def find_twins(blocks: np.ndarray) -> np.ndarray:
    """For each row, the index of another row equal to it on >= half the coordinates, else -1.

    Only values that occur in more than one row are paired (a sort, then the
    runs of equal values), so the cost is that of sorting all the values.

    >>> blocks = np.array([[1.0, 2.0, 3.0, 4.0], [9.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    >>> find_twins(blocks).tolist()
    [1, 0, -1]
    """
    num_rows, width = blocks.shape
    rows = np.repeat(np.arange(num_rows), width)
    order = np.lexsort((rows, blocks.ravel()))
    values, owners = blocks.ravel()[order], rows[order]
    edges = np.flatnonzero(np.r_[True, values[1:] != values[:-1], True])
    starts, lengths = edges[:-1], np.diff(edges)
    # runs of two (the common case) vectorised; longer runs one by one
    two = starts[lengths == 2]
    first, second = owners[two], owners[two + 1]
    distinct = first != second
    codes = [first[distinct] * num_rows + second[distinct], second[distinct] * num_rows + first[distinct]]
    for start, length in zip(starts[lengths > 2], lengths[lengths > 2]):
        members = np.unique(owners[start : start + length])  # a value repeated inside one row counts once
        pairs = np.array(np.meshgrid(members, members)).reshape(2, -1)
        pairs = pairs[:, pairs[0] != pairs[1]]
        codes.append(pairs[0] * num_rows + pairs[1])
    twins = np.full(num_rows, -1)
    pair_codes, counts = np.unique(np.concatenate(codes).astype(np.int64), return_counts=True)
    if pair_codes.size:
        for code in pair_codes[2 * counts >= width][np.argsort(-counts[2 * counts >= width], kind="stable")][::-1]:
            twins[code // num_rows] = code % num_rows  # ascending counts: the most shared partner is written last
    return twins


def collect_gradient_observations(
    release: Callable[[np.ndarray], np.ndarray],
    *,
    num_steps: int,
    canaries_per_step: int,
    num_slots: int,
    clip_norm: float,
    denominator: float = 1.0,
    canary: GradientCanary = GradientCanary(),
    canary_rate: float = 1.0,
    num_groups: int = 1,
    seed: int = 0,
) -> GradientObservations:
    """Run ``num_steps`` audited steps of ``release`` and read the canary observations.

    ``num_groups`` tells how the audit block is split into equal parameter
    groups (blocks for the twin search). Every random choice derives from ``seed``.

    >>> rng = np.random.default_rng(0)
    >>> def gaussian_sum(rows):  # the Gaussian mechanism on clipped rows, σ = 2, C = 1
    ...     norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
    ...     return (rows / norms).sum(axis=0) + rng.normal(0, 2.0, rows.shape[1])
    >>> obs = collect_gradient_observations(gaussian_sum, num_steps=50, canaries_per_step=20, num_slots=60, clip_norm=1.0)
    >>> obs.in_scores.size, obs.out_scores.size, round(float(obs.in_scores.mean())), round(float(obs.out_scores.std()))
    (1000, 2000, 1, 2)
    """
    num_steps = check_count(num_steps, "num_steps", minimum=1)
    num_slots = check_count(num_slots, "num_slots", minimum=2)
    canaries_per_step = check_count(canaries_per_step, "canaries_per_step", minimum=1, maximum=num_slots - 1)
    clip_norm = check_positive(clip_norm, "clip_norm")
    denominator = check_positive(denominator, "denominator")
    canary_rate = _check_canary_rate(canary_rate)
    num_groups = check_count(num_groups, "num_groups", minimum=1, maximum=num_slots)
    if num_slots % num_groups:
        raise ValueError(f"`num_slots` must be a multiple of `num_groups` ({num_groups}), got {num_slots}")
    size = canary.slot_size
    width = num_slots * size

    rng = np.random.default_rng([seed, 2])
    directions = np.empty((num_steps, num_slots, size))
    in_world = np.zeros((num_steps, num_slots), dtype=bool)
    inserted = np.zeros((num_steps, num_slots), dtype=bool)
    released = np.empty((num_steps, width))
    for step in range(num_steps):
        directions[step] = canary.directions(num_slots, seed=seed, step=step)
        in_world[step, rng.choice(num_slots, canaries_per_step, replace=False)] = True
        inserted[step] = in_world[step] & (rng.random(num_slots) < canary_rate)
        slots = np.flatnonzero(inserted[step])
        rows = np.zeros((slots.size, width))
        for row, slot in enumerate(slots):
            rows[row, slot * size : (slot + 1) * size] = canary.norm * clip_norm * directions[step, slot]
        out = np.asarray(release(rows), dtype=np.float64).ravel()
        if out.shape != (width,):
            raise ValueError(f"`release` must return {width} audit coordinates, got shape {out.shape}")
        released[step] = out

    # twin differencing over blocks = (step, group)
    slots_per_group = num_slots // num_groups
    blocks = released.reshape(num_steps * num_groups, slots_per_group * size).copy()  # twins read the undifferenced values
    twins = find_twins(blocks)
    keep = np.ones((num_steps, num_slots), dtype=bool)
    for block in np.flatnonzero(twins >= 0):
        other = twins[block]
        step, group = divmod(block, num_groups)
        other_step, other_group = divmod(other, num_groups)
        mine = slice(group * slots_per_group, (group + 1) * slots_per_group)
        theirs = slice(other_group * slots_per_group, (other_group + 1) * slots_per_group)
        released[step, mine.start * size : mine.stop * size] = blocks[block] - blocks[other]
        keep[step, mine] &= ~inserted[other_step, theirs]

    per_slot = released.reshape(num_steps, num_slots, size)
    scores = np.einsum("tis,tis->ti", directions, per_slot) * denominator / clip_norm
    return GradientObservations(
        in_scores=scores[in_world & keep],
        out_scores=scores[~in_world & keep],
        num_steps=num_steps,
        num_twinned_blocks=int(np.count_nonzero(twins >= 0)),
        canary_rate=canary_rate,
    )
