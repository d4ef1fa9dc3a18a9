"""Input checks shared by every public function of the statistical core.

Each public function validates its arguments once, through these helpers, and
private functions then trust their input. Every message names the argument and
its allowed range, in the form "`delta` must be in (0, 1), got 1.5".
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from typing import Any, cast

import numpy as np

from .messages import describe_value

__all__ = [
    "NOISE_MULTIPLIER_RANGE",
    "check_noise_multiplier",
    "as_real_array",
    "as_scores",
    "check_choice",
    "check_count",
    "check_fraction",
    "check_positive",
    "check_probability",
    "check_real",
]

#: Largest count accepted where no maximum is given: the int64 range numpy works in.
MAX_COUNT = 2**63 - 1


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    return describe_value(value)


def as_real_array(values: Any, name: str) -> np.ndarray:
    """Return ``values`` as a float64 array of any shape (NaN and inf kept), or raise ValueError.

    Complex, date and non-numeric input is refused, and so are integers too
    large for a float64, rather than converted with a loss.

    >>> as_real_array(3, "mu")
    array(3.)
    >>> as_real_array([1j], "mu")
    Traceback (most recent call last):
    ...
    ValueError: `mu` must be an array of real numbers, got dtype complex128
    """
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError, OverflowError) as error:  # ragged nesting, unconvertible objects
        raise ValueError(f"`{name}` must be an array of numbers, got {_describe(values)}") from error
    if raw.dtype.kind in "cMmV":  # complex would lose its imaginary part; dates are not scores
        raise ValueError(f"`{name}` must be an array of real numbers, got dtype {raw.dtype}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)  # complex objects in an object array
            array = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError, OverflowError, np.exceptions.ComplexWarning) as error:
        raise ValueError(f"`{name}` must be an array of real numbers that fit a float64, got {_describe(values)}") from error
    return array


def as_scores(values: Any, name: str, *, min_size: int = 1, ndim: int = 1) -> np.ndarray:
    """Return ``values`` as a finite float64 array, or raise ValueError.

    >>> as_scores([1, 2.5], "in_scores")
    array([1. , 2.5])
    >>> as_scores([1.0, float("nan")], "in_scores")
    Traceback (most recent call last):
    ...
    ValueError: `in_scores` must contain only finite numbers, got 1 NaN or infinite value(s)
    """
    array = as_real_array(values, name)
    if ndim == 1 and array.ndim == 0:
        raise ValueError(f"`{name}` must be a 1-D array of numbers, got a scalar")
    if array.ndim != ndim:
        raise ValueError(f"`{name}` must be a {ndim}-D array of numbers, got shape {array.shape}")
    if array.size < min_size:
        raise ValueError(f"`{name}` must hold at least {min_size} value(s), got {array.size}")
    bad = int(np.count_nonzero(~np.isfinite(array)))
    if bad:
        raise ValueError(f"`{name}` must contain only finite numbers, got {bad} NaN or infinite value(s)")
    return array


def _as_float(value: Any, name: str) -> float:
    if isinstance(value, (bool, np.bool_, complex, np.complexfloating)):
        raise ValueError(f"`{name}` must be a real number, got {describe_value(value)}")
    if isinstance(value, np.ndarray) and (value.ndim or value.dtype.kind == "c"):
        raise ValueError(f"`{name}` must be a real number, got {_describe(value)}")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError) as error:
        raise ValueError(f"`{name}` must be a real number that fits a float64, got {_describe(value)}") from error
    if math.isnan(number):
        raise ValueError(f"`{name}` must be a real number, got nan")
    return number


def check_real(value: Any, name: str) -> float:
    """Return ``value`` as a finite float.

    >>> check_real(2, "threshold")
    2.0
    >>> check_real(1 + 2j, "threshold")
    Traceback (most recent call last):
    ...
    ValueError: `threshold` must be a real number, got (1+2j)
    """
    number = _as_float(value, name)
    if not math.isfinite(number):
        raise ValueError(f"`{name}` must be finite, got {number}")
    return number


def check_probability(value: Any, name: str) -> float:
    """Return ``value`` if it lies in the open interval (0, 1).

    >>> check_probability(1.5, "delta")
    Traceback (most recent call last):
    ...
    ValueError: `delta` must be in (0, 1), got 1.5
    """
    number = _as_float(value, name)
    if not 0.0 < number < 1.0:
        raise ValueError(f"`{name}` must be in (0, 1), got {number:g}")
    return number


def check_fraction(value: Any, name: str) -> float:
    """Return ``value`` if it lies in the closed interval [0, 1].

    >>> check_fraction(0.0, "quantile")
    0.0
    """
    number = _as_float(value, name)
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"`{name}` must be in [0, 1], got {number:g}")
    return number


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` if it is a finite number > 0 (or >= 0 with ``allow_zero``).

    >>> check_positive(-1, "sigma")
    Traceback (most recent call last):
    ...
    ValueError: `sigma` must be > 0, got -1
    """
    number = check_real(value, name)
    if number < 0.0 or (number == 0.0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"`{name}` must be {bound}, got {number:g}")
    return number


def check_count(value: Any, name: str, *, minimum: int = 0, maximum: int | None = None) -> int:
    """Return ``value`` as an int in [minimum, maximum].

    >>> check_count(3, "num_correct", maximum=2)
    Traceback (most recent call last):
    ...
    ValueError: `num_correct` must be an integer in [0, 2], got 3
    """
    upper = "inf)" if maximum is None else f"{maximum}]"
    allowed = f"an integer in [{minimum}, {upper}"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float, np.floating)):
        raise ValueError(f"`{name}` must be {allowed}, got {_describe(value)}")
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        raise ValueError(f"`{name}` must be {allowed}, got {describe_value(value)}")
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        raise ValueError(f"`{name}` must be {allowed}, got {number}")
    if number > MAX_COUNT:
        raise ValueError(f"`{name}` must be an integer in [{minimum}, {MAX_COUNT}], got {_describe(number)}")
    return number


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``.

    >>> check_choice("gpd", "method", ["gdp", "eps-delta"])
    Traceback (most recent call last):
    ...
    ValueError: `method` must be one of 'gdp', 'eps-delta', got 'gpd'
    """
    options = list(choices)
    if value not in options:
        listed = ", ".join(repr(option) for option in options)
        raise ValueError(f"`{name}` must be one of {listed}, got {describe_value(value)}")
    return cast(str, value)  # equal to one of the str choices


#: Noise multipliers an audit accepts: beyond them ε is 0 or astronomically large to every digit reported.
NOISE_MULTIPLIER_RANGE = (1e-4, 1e6)


def check_noise_multiplier(value: Any, name: str = "noise_multiplier") -> float:
    """``value`` as a DP-SGD noise multiplier in [1e-4, 1e6], where the accounting is meaningful and finite.

    >>> check_noise_multiplier(1e-300)
    Traceback (most recent call last):
    ...
    ValueError: `noise_multiplier` must be in [0.0001, 1e+06], got 1e-300
    """
    number = check_positive(value, name)
    low, high = NOISE_MULTIPLIER_RANGE
    if not low <= number <= high:
        raise ValueError(f"`{name}` must be in [{low:g}, {high:g}], got {describe_value(value)}")
    return number
