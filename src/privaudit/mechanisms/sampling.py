"""Importing a mechanism, checking what it returns, and drawing its samples.

The contract: ``fn(dataset, size, rng) -> samples``, one vectorised call for
``size`` outputs on one dataset, every random draw from ``rng``. A mechanism
is called on a copy of the dataset, so it cannot change the caller's.
:func:`probe` calls it on a few samples before any real work and refuses a
mechanism that returns the wrong shape, non-numbers, NaN or infinity.

>>> def laplace(dataset, size, rng):
...     return dataset.sum() + rng.laplace(0.0, 1.0, size)
>>> shape = probe(laplace, np.zeros(3), np.zeros(4), "--mechanism")
>>> shape
()
>>> draw(laplace, np.zeros(3), 5, np.random.default_rng(0), shape, "--mechanism").shape
(5,)
>>> probe(lambda d, size, rng: np.full(size, np.nan), np.zeros(3), np.zeros(4), "--mechanism")
Traceback (most recent call last):
...
ValueError: `--mechanism` must return finite numbers, got 2 NaN or infinite value(s) on `dataset`

A function that releases one output per call, ``f(data, rng)``, enters the
contract through :func:`from_release`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.messages import describe_value
from .._core.usercode import call_user
from .._core.validation import as_real_array

__all__ = ["MAX_OUTPUT_DIMENSIONS", "PROBE_SIZE", "Mechanism", "draw", "from_release", "load_mechanism", "probe"]

Mechanism = Callable[[np.ndarray, int, np.random.Generator], Any]

#: samples drawn on each dataset to check the mechanism before any real work
PROBE_SIZE = 2
#: scalars (0), vectors (1) and tables (2): the dimensions of one output
MAX_OUTPUT_DIMENSIONS = 2


def from_release(release: Callable[..., Any]) -> Mechanism:
    """The contract ``fn(dataset, size, rng)`` from ``release(data, rng)``, which returns one output per call.

    When ``release`` takes a ``size`` argument, ``release(data, rng, size=size)``
    must return ``size`` outputs in one call (the vectorised fast path);
    otherwise it is called ``size`` times and the outputs stacked. The
    declared ``claim``, ``neighbouring`` and ``domain`` attributes carry over.

    >>> def noisy_mean(data, rng):
    ...     return float(np.clip(data, 0, 1).mean() + rng.laplace(0.0, 0.1))
    >>> mechanism = from_release(noisy_mean)
    >>> mechanism(np.zeros(5), 3, np.random.default_rng(0)).shape
    (3,)
    >>> def fast_mean(data, rng, size=None):
    ...     return np.clip(data, 0, 1).mean() + rng.laplace(0.0, 0.1, size)
    >>> from_release(fast_mean)(np.zeros(5), 3, np.random.default_rng(0)).shape
    (3,)
    """
    try:
        vectorised = "size" in inspect.signature(release).parameters
    except (TypeError, ValueError):  # a builtin or extension function without a signature: the one-at-a-time path
        vectorised = False

    @functools.wraps(release)
    def mechanism(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        if vectorised:
            return np.asarray(release(dataset, rng, size=size))
        return np.stack([np.asarray(release(dataset, rng)) for _ in range(size)])

    return mechanism  # functools.wraps carried the declared attributes over (it copies __dict__)


def load_mechanism(path: str, name: str = "--mechanism") -> Mechanism:
    """The callable at import path ``package.module:fn``; a ValueError naming ``name`` when it does not import."""
    from ..models.loading import import_callable

    return import_callable(path, name)  # type: ignore[no-any-return]


def _first_items(raw: Any) -> list[Any]:
    """Up to 100 leading elements of a list, tuple or array, nested or ragged."""
    try:
        return list(np.asarray(raw, dtype=object).reshape(-1)[:100])
    except (TypeError, ValueError):  # ragged beyond what NumPy holds as objects
        return []


def _call(mechanism: Mechanism, dataset: np.ndarray, size: int, rng: np.random.Generator, name: str, which: str) -> np.ndarray:
    raw = call_user(name, getattr(mechanism, "__qualname__", type(mechanism).__name__), mechanism, dataset.copy(), size, rng, context=f" on `{which}`")
    expected = f"an array of `size` = {size} numeric outputs (one per sample, along the first axis)"
    if isinstance(raw, (str, bytes)):
        raise ValueError(f"`{name}` must return {expected}, got a {type(raw).__name__} {describe_value(raw)} on `{which}`")
    if isinstance(raw, (list, tuple, np.ndarray)):
        labels = [item for item in _first_items(raw) if isinstance(item, (str, bytes))]
        if labels:
            raise ValueError(
                f"`{name}` must return {expected}, got {type(raw).__name__} of category labels such as {describe_value(labels[0])} "
                f"on `{which}`; encode categories as numbers (e.g. each category's index)"
            )
    try:
        samples = as_real_array(raw, name)
    except ValueError:
        raise ValueError(f"`{name}` must return {expected}, got {type(raw).__name__} on `{which}`") from None
    if samples.ndim == 0 or samples.shape[0] != size:
        raise ValueError(f"`{name}` must return `size` = {size} outputs along the first axis, got shape {samples.shape} on `{which}`")
    if samples.ndim - 1 > MAX_OUTPUT_DIMENSIONS:
        raise ValueError(f"`{name}` must return scalars, vectors or tables (at most 3-D samples), got shape {samples.shape} on `{which}`")
    bad = int(np.count_nonzero(~np.isfinite(samples)))
    if bad:
        raise ValueError(f"`{name}` must return finite numbers, got {bad} NaN or infinite value(s) on `{which}`")
    return samples


def probe(mechanism: Mechanism, dataset: np.ndarray, neighbour: np.ndarray, name: str) -> tuple[int, ...]:
    """The shape of one output, after checking ``PROBE_SIZE`` samples on each dataset (the same shape on both)."""
    rng = np.random.default_rng(0)
    first = _call(mechanism, dataset, PROBE_SIZE, rng, name, "dataset")
    second = _call(mechanism, neighbour, PROBE_SIZE, rng, name, "neighbour")
    if first.shape[1:] != second.shape[1:]:
        raise ValueError(f"`{name}` must return outputs of one shape on both datasets, got {first.shape[1:]} and {second.shape[1:]}")
    return tuple(first.shape[1:])


def draw(
    mechanism: Mechanism, dataset: np.ndarray, size: int, rng: np.random.Generator, shape: tuple[int, ...], name: str, which: str = "dataset"
) -> np.ndarray:
    """``size`` samples of ``mechanism`` on ``dataset`` in one call, checked as :func:`probe` checks them."""
    samples = _call(mechanism, dataset, size, rng, name, which)
    if samples.shape[1:] != shape:
        raise ValueError(f"`{name}` must return outputs of shape {shape} every time, got {samples.shape[1:]} on `{which}`")
    return samples
