"""privaudit's Brent root finder returns scipy.optimize.brentq's float, bit for bit.

Oracle: scipy.optimize.brentq itself, on thousands of random brackets of
smooth monotone functions (including the log-domain normal tails the GDP
conversions solve), at tolerances from 1e-14 to 1e-3.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

from privaudit.stats.roots import brentq

FUNCTIONS = (
    lambda x, c, s: math.tanh(s * (x - c)),
    lambda x, c, s: (x - c) ** 3 + s * (x - c),
    lambda x, c, s: float(special.log_ndtr(-(x - c) * s)) - math.log(0.5),
    lambda x, c, s: math.expm1(s * (x - c) / 10),
)


@pytest.mark.parametrize("seed", [0, 1])
def test_brentq_is_scipys_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    for trial in range(1000):
        centre, scale = rng.uniform(-5, 5), rng.uniform(0.1, 10)
        function = FUNCTIONS[trial % len(FUNCTIONS)]

        def f(x, centre=centre, scale=scale, function=function):
            return function(x, centre, scale)

        a, b = centre - rng.uniform(0.01, 20), centre + rng.uniform(0.01, 20)
        if rng.random() < 0.5:
            a, b = b, a
        xtol = 10 ** rng.uniform(-14, -3)
        assert brentq(f, a, b, xtol=xtol) == optimize.brentq(f, a, b, xtol=xtol)


def test_brentq_refuses_a_bracket_without_a_sign_change():
    with pytest.raises(ValueError, match="different signs"):
        brentq(lambda x: x * x + 1.0, -1.0, 1.0)
    assert brentq(lambda x: x - 1.0, 1.0, 3.0) == 1.0  # a root at an end is returned as is


def test_an_interpolation_step_that_divides_by_zero_bisects_without_a_warning():
    import warnings

    from privaudit.stats.conversions import gdp_delta, gdp_mu

    # gdp_mu(1, 1e-5) passes a numpy rtol and meets a zero denominator in the inverse quadratic step, where scipy's C code bisects
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mu = gdp_mu(1.0, 1e-5)
    assert gdp_delta(1.0, mu) == pytest.approx(1e-5, rel=1e-9)
