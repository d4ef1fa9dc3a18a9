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

from .._core.seeding import check_seed
from .._core.validation import check_count, check_positive
from ..canaries.gradient import GradientCanary

__all__ = ["GradientObservations", "collect_gradient_observations", "find_twins"]


@dataclasses.dataclass(frozen=True)
class GradientObservations:
    """In/out observations of a white-box gradient-canary run, normalised to N(·, σ²), and the seed they were drawn from."""

    in_scores: np.ndarray
    out_scores: np.ndarray
    num_steps: int
    num_twinned_blocks: int
    canary_rate: float
    seed: int = 0


def check_canary_rate(value) -> float:
    rate = check_positive(value, "canary_rate")
    if rate > 1.0:
        raise ValueError(f"`canary_rate` (q_c) must be in (0, 1], got {rate:g}")
    return rate


_HASH_MULTIPLIERS = tuple(
    np.uint64(m) for m in (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53)
)  # odd 64-bit constants (golden ratio, xxHash, MurmurHash3)


def _maybe_repeated(values: np.ndarray) -> np.ndarray:
    """Indices of the values that may equal another: a superset of those that do.

    Equal values have equal bit patterns once -0.0 is folded into 0.0, so
    they land in the same bucket of any hash of the bits; a value alone in its
    bucket is set aside. A few rounds of multiplicative hashing, with about
    four buckets per remaining value (at most 2²¹), leave mostly the repeated
    values. (NaN, equal to nothing, may be kept: the caller compares the
    values themselves.)
    """
    keys = (values + 0.0).view(np.uint64)
    kept = np.arange(values.size)
    for multiplier in _HASH_MULTIPLIERS:
        if kept.size < 64:
            break
        bits = min(kept.size.bit_length() + 2, 21)
        buckets = ((keys[kept] * multiplier) >> np.uint64(64 - bits)).astype(np.intp)  # the top bits of the product mix all bits of the key
        survivors = kept[np.bincount(buckets, minlength=1 << bits)[buckets] > 1]
        done = 2 * survivors.size > kept.size and kept.size << 2 <= 1 << bits  # few set aside at a low load: mostly repeated values left
        kept = survivors
        if done:
            break
    return kept


def find_twins(blocks: np.ndarray) -> np.ndarray:
    """For each row, the index of another row equal to it on >= half the coordinates, else -1.

    Only values that occur in more than one row are paired (a sort, then the
    runs of equal values). A hash of every value first sets aside those that
    cannot be repeated (their hash bucket holds no other value), so only the
    few others are sorted: the cost is a pass over the values.

    >>> blocks = np.array([[1.0, 2.0, 3.0, 4.0], [9.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    >>> find_twins(blocks).tolist()
    [1, 0, -1]
    """
    num_rows, width = blocks.shape
    flat = np.ascontiguousarray(blocks, dtype=np.float64).ravel()
    candidates = _maybe_repeated(flat)
    rows = candidates // width
    order = np.lexsort((rows, flat[candidates]))
    values, owners = flat[candidates[order]], rows[order]
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


def _choose_slots(rng: np.random.Generator, num_steps: int, num_slots: int, count: int) -> np.ndarray:
    """A (steps × slots) mask with ``count`` slots drawn uniformly without replacement in each step.

    Floyd's algorithm, run for all steps at once: ``count`` (or ``num_slots - count``,
    whichever is smaller, then complemented) vectorised draws instead of one
    generator call per step.
    """
    picks = min(count, num_slots - count)
    mask = np.zeros((num_steps, num_slots), dtype=bool)
    steps = np.arange(num_steps)
    for top in range(num_slots - picks, num_slots):
        draw = rng.integers(0, top + 1, num_steps)
        draw[mask[steps, draw]] = top  # already chosen: take the new top slot instead
        mask[steps, draw] = True
    return mask if picks == count else ~mask


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
    canary_rate = check_canary_rate(canary_rate)
    num_groups = check_count(num_groups, "num_groups", minimum=1, maximum=num_slots)
    seed = check_seed(seed)
    if num_slots % num_groups:
        raise ValueError(f"`num_slots` must be a multiple of `num_groups` ({num_groups}), got {num_slots}")
    size = canary.slot_size
    width = num_slots * size

    # every random choice is drawn up front, vectorised over the steps
    rng = np.random.default_rng([seed, 2])
    directions = canary.draw(num_steps, num_slots, seed=seed)
    in_world = _choose_slots(rng, num_steps, num_slots, canaries_per_step)
    chosen = np.nonzero(in_world)[1].reshape(num_steps, canaries_per_step)  # the "in" slots of each step, ascending
    coins = rng.random((num_steps, canaries_per_step)) < canary_rate if canary_rate < 1.0 else np.ones((num_steps, canaries_per_step), dtype=bool)
    inserted = np.zeros((num_steps, num_slots), dtype=bool)
    np.put_along_axis(inserted, chosen, coins, axis=1)
    columns = (chosen[:, :, None] * size + np.arange(size)).reshape(num_steps, -1)  # audit coordinates of each chosen slot
    values = (canary.norm * clip_norm * directions[np.arange(num_steps)[:, None], chosen]).reshape(num_steps, -1)
    row_of = np.repeat(np.arange(canaries_per_step), size)  # the canary row each of those coordinates belongs to
    if canary_rate < 1.0:  # only the slots whose coin came up carry their canary
        kept, counts = np.repeat(coins, size, axis=1), coins.sum(axis=1)

    released = np.empty((num_steps, width))
    for step in range(num_steps):
        if canary_rate < 1.0:
            rows = np.zeros((counts[step], width))
            rows[row_of[: counts[step] * size], columns[step, kept[step]]] = values[step, kept[step]]
        else:
            rows = np.zeros((canaries_per_step, width))
            rows[row_of, columns[step]] = values[step]
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
        other = int(twins[block])
        step, group = divmod(int(block), num_groups)
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
        seed=seed,
    )
