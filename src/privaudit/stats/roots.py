"""Brent's root finder, the algorithm of scipy's ``brentq`` step for step, without importing scipy.optimize.

``scipy.optimize`` costs about a tenth of a second to import, more than the
rest of ``privaudit bound``'s work after numpy and scipy.special; the GDP
conversions on that path need only this one function. The code follows
scipy's ``brentq.c`` operation by operation, so that it returns the same
float; ``tests/test_roots.py`` checks that on thousands of brackets.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["brentq"]


def brentq(f: Callable[[float], float], a: float, b: float, *, xtol: float = 2e-12, rtol: float = 8.881784197001252e-16, maxiter: int = 100) -> float:
    """A root of ``f`` in [a, b], where f(a) and f(b) differ in sign, to ``xtol + rtol |x|``: ``scipy.optimize.brentq``'s answer.

    >>> root = brentq(lambda x: x * x - 2.0, 0.0, 2.0, xtol=1e-12)
    >>> abs(root - 2.0 ** 0.5) < 1e-12
    True
    """
    previous, current, xtol, rtol = float(a), float(b), float(xtol), float(rtol)
    f_previous, f_current = float(f(previous)), float(f(current))  # Python floats: a zero denominator below is handled, not warned about
    if f_previous == 0.0:
        return previous
    if f_current == 0.0:
        return current
    if math.copysign(1.0, f_previous) == math.copysign(1.0, f_current):
        raise ValueError("f(a) and f(b) must have different signs")
    block = f_block = step_previous = step_current = 0.0
    for _ in range(maxiter):
        if f_previous != 0.0 and f_current != 0.0 and math.copysign(1.0, f_previous) != math.copysign(1.0, f_current):
            block, f_block = previous, f_previous
            step_previous = step_current = current - previous
        if abs(f_block) < abs(f_current):
            previous, current, block = current, block, current
            f_previous, f_current, f_block = f_current, f_block, f_current
        delta = (xtol + rtol * abs(current)) / 2.0
        bisection = (block - current) / 2.0
        if f_current == 0.0 or abs(bisection) < delta:
            return current
        if abs(step_previous) > delta and abs(f_current) < abs(f_previous):
            if previous == block:  # secant
                trial = -f_current * (current - previous) / (f_current - f_previous)
            else:  # inverse quadratic interpolation
                slope_previous = (f_previous - f_current) / (previous - current)
                slope_block = (f_block - f_current) / (block - current)
                denominator = slope_block * slope_previous * (f_block - f_previous)
                # C's division gives inf or nan here, which fails the test below and bisects: the same step
                trial = -f_current * (f_block * slope_block - f_previous * slope_previous) / denominator if denominator != 0.0 else math.nan
            if 2.0 * abs(trial) < min(abs(step_previous), 3.0 * abs(bisection) - delta):
                step_previous, step_current = step_current, trial
            else:
                step_previous = step_current = bisection
        else:
            step_previous = step_current = bisection
        previous, f_previous = current, f_current
        current += step_current if abs(step_current) > delta else (delta if bisection > 0 else -delta)
        f_current = float(f(current))
    raise RuntimeError(f"brentq did not converge in {maxiter} iterations")
