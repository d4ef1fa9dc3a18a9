"""White-box observations of a one-run audit: gradient canaries kept in or out for the whole training run.

The one-run game (Steinke, Nasr and Jagielski 2023): m canaries, each
included by an independent coin with probability p (½ for the guessing
bounds), drawn once, before training, from a recorded seed
(:func:`draw_inclusion`). Canary i owns slot i of the audit coordinates
(``canary.slot_size`` coordinates that no real example touches, see
:mod:`privaudit.canaries.gradient`). In every step each *included* canary
joins the batch with probability ``canary_rate`` (1: every step; the data's
sampling rate: sampled as an example is), as a per-example gradient of
``canary.norm`` clip norms along its direction; excluded canaries never do.
Unlike :mod:`.gradient`, where canaries are redrawn every step, inclusion is
fixed for the whole run.

The mechanism is the same callable as in :mod:`.gradient`:
``release(canary_rows) -> audit coordinates`` runs one privatised step.
Canary i's observation is the sum over the run of its normalised per-step
observation

    y_i = Σ_t <u_{t,i}, released slot i at step t> · denominator / C,

in units of one step's clipped canary: a correct DP-SGD with noise
multiplier σ gives y_i = n_i + N(0, Tσ²), where n_i is the number of steps
canary i was in the batch (T·s_i for ``canary_rate`` 1). With ``canary_rate``
1 the observations are exactly Gaussian with a shared variance, the setting
of :func:`~privaudit.stats.one_run_gaussian.epsilon_one_run_gaussian`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._core.seeding import check_seed
from .._core.validation import check_count, check_positive, check_real
from ..canaries.gradient import GradientCanary
from .gradient import check_canary_rate

__all__ = ["MIN_CANARIES", "check_inclusion_prob", "collect_final_model_observations", "collect_one_run_observations", "draw_inclusion"]

MIN_CANARIES = 4  # the bounds need at least 2 canaries on each side


def check_inclusion_prob(value) -> float:
    """``value`` as an inclusion probability in the open interval (0, 1).

    >>> check_inclusion_prob(1.0)
    Traceback (most recent call last):
    ...
    ValueError: `inclusion_prob` must be in (0, 1), got 1
    """
    number = check_real(value, "inclusion_prob")
    if not 0.0 < number < 1.0:
        raise ValueError(f"`inclusion_prob` must be in (0, 1), got {number:g}")
    return number


def draw_inclusion(num_canaries: int, inclusion_prob: float, seed: int = 0) -> np.ndarray:
    """Which of ``num_canaries`` canaries are included: ``default_rng(seed).random(m) < inclusion_prob``.

    The draw is the whole record needed to reproduce the inclusion: its seed.

    >>> draw_inclusion(8, 0.5, 3).tolist() == (np.random.default_rng(3).random(8) < 0.5).tolist()
    True
    """
    num_canaries = check_count(num_canaries, "num_canaries", minimum=MIN_CANARIES)
    return np.random.default_rng(check_seed(seed)).random(num_canaries) < check_inclusion_prob(inclusion_prob)


def collect_one_run_observations(
    release: Callable[[np.ndarray], np.ndarray],
    *,
    included,
    num_steps: int,
    clip_norm: float,
    denominator: float = 1.0,
    canary: GradientCanary = GradientCanary(moving=False, slot_size=1),
    canary_rate: float = 1.0,
    seed: int = 0,
) -> np.ndarray:
    """Run ``num_steps`` steps of ``release`` with the included canaries and return each canary's summed observation.

    ``included`` (m booleans) is the inclusion draw; canary directions come
    from ``seed`` and, for ``canary_rate`` < 1, the per-step coins from
    ``seed`` too.

    >>> rng = np.random.default_rng(0)
    >>> def gaussian_sum(rows):  # the Gaussian mechanism on clipped rows, σ = 2, C = 1
    ...     norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
    ...     return (rows / norms).sum(axis=0) + rng.normal(0, 2.0, rows.shape[1])
    >>> included = draw_inclusion(2000, 0.5, seed=1)
    >>> y = collect_one_run_observations(gaussian_sum, included=included, num_steps=25, clip_norm=1.0)
    >>> round(float(y[included].mean())), round(float(y[~included].mean())), round(float(y[~included].std()))  # T = 25, √T·σ = 10
    (25, 0, 10)
    """
    member = np.asarray(included)
    if member.dtype != bool or member.ndim != 1 or member.size < MIN_CANARIES:
        raise ValueError(f"`included` must be a 1-D boolean array of at least {MIN_CANARIES} canaries, got {member.dtype} of shape {member.shape}")
    num_steps = check_count(num_steps, "num_steps", minimum=1)
    clip_norm = check_positive(clip_norm, "clip_norm")
    denominator = check_positive(denominator, "denominator")
    canary_rate = check_canary_rate(canary_rate)
    seed = check_seed(seed)
    num_canaries, size = member.size, canary.slot_size
    width = num_canaries * size
    directions = canary.draw(num_steps, num_canaries, seed=seed)  # (steps, canaries, slot); a read-only view for a static canary
    totals = np.zeros(num_canaries)
    for step, rows in _canary_steps(member, directions, num_steps, clip_norm, canary, canary_rate, seed):
        out = np.asarray(release(rows), dtype=np.float64).ravel()
        if out.shape != (width,):
            raise ValueError(f"`release` must return {width} audit coordinates, got shape {out.shape}")
        totals += np.einsum("is,is->i", directions[step], out.reshape(num_canaries, size))
    return totals * denominator / clip_norm


def _canary_steps(member: np.ndarray, directions: np.ndarray, num_steps: int, clip_norm: float, canary: GradientCanary, canary_rate: float, seed: int):
    """(step, canary rows) for every step: the included canaries present in it, each ``canary.norm`` clip norms along its direction."""
    num_canaries, size = member.size, canary.slot_size
    members = np.flatnonzero(member)
    coins = np.random.default_rng([seed, 4])
    for step in range(num_steps):
        present = members if canary_rate == 1.0 else members[coins.random(members.size) < canary_rate]
        rows = np.zeros((present.size, num_canaries * size))
        columns = present[:, None] * size + np.arange(size)
        rows[np.arange(present.size)[:, None], columns] = canary.norm * clip_norm * directions[step, present]
        yield step, rows


def collect_final_model_observations(
    step: Callable[[np.ndarray], object],
    final_coordinates: Callable[[], np.ndarray],
    *,
    included,
    num_steps: int,
    clip_norm: float,
    learning_rate: float,
    denominator: float = 1.0,
    canary: GradientCanary = GradientCanary(moving=False, slot_size=1),
    canary_rate: float = 1.0,
    seed: int = 0,
) -> np.ndarray:
    """The hidden-state observations: canaries inserted in every step as :func:`collect_one_run_observations` does, only the final parameters read.

    ``step(canary_rows)`` runs one training step (what it returns is
    ignored); ``final_coordinates()`` returns the current audit coordinates
    *as parameters* (the trainer descends them by the learning rate times the
    released update). Canary i's score is its slot's final value minus its
    initial value, along its static direction, times -denominator / (learning
    rate × C): one clipped canary per step it was in, plus N(0, Tσ²) for a
    correct DP-SGD. The same number as the white-box sum, read from the final
    model alone.

    >>> rng = np.random.default_rng(0)
    >>> params = np.zeros(2000)
    >>> def step(rows):  # SGD at learning rate 0.1 on the Gaussian mechanism's release, σ = 2, C = 1
    ...     norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
    ...     params[:] -= 0.1 * ((rows / norms).sum(axis=0) + rng.normal(0, 2.0, rows.shape[1]))
    >>> included = draw_inclusion(2000, 0.5, seed=1)
    >>> y = collect_final_model_observations(step, params.copy, included=included, num_steps=25, clip_norm=1.0, learning_rate=0.1)
    >>> round(float(y[included].mean())), round(float(y[~included].mean())), round(float(y[~included].std()))
    (25, 0, 10)
    """
    member = np.asarray(included)
    if member.dtype != bool or member.ndim != 1 or member.size < MIN_CANARIES:
        raise ValueError(f"`included` must be a 1-D boolean array of at least {MIN_CANARIES} canaries, got {member.dtype} of shape {member.shape}")
    if canary.moving:
        raise ValueError("the final model shows only the sum of the updates: a hidden-state audit needs a static canary (`canary_moving` false)")
    num_steps = check_count(num_steps, "num_steps", minimum=1)
    clip_norm = check_positive(clip_norm, "clip_norm")
    learning_rate = check_positive(learning_rate, "learning_rate")
    denominator = check_positive(denominator, "denominator")
    canary_rate = check_canary_rate(canary_rate)
    seed = check_seed(seed)
    num_canaries, size = member.size, canary.slot_size
    directions = canary.draw(num_steps, num_canaries, seed=seed)
    start = np.array(final_coordinates(), dtype=np.float64).ravel()
    if start.shape != (num_canaries * size,):
        raise ValueError(f"`final_coordinates` must return {num_canaries * size} audit coordinates, got shape {start.shape}")
    for _, rows in _canary_steps(member, directions, num_steps, clip_norm, canary, canary_rate, seed):
        step(rows)
    moved = np.asarray(final_coordinates(), dtype=np.float64).ravel() - start
    return np.einsum("is,is->i", directions[0], moved.reshape(num_canaries, size)) * (-denominator / (learning_rate * clip_norm))
