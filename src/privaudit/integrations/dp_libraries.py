"""DP libraries' mechanisms in the contract ``fn(dataset, size, rng) -> samples``: thin adapters, imported lazily.

Each adapter returns a mechanism with two attributes: ``neighbouring`` (the
relation the library's guarantee is stated under, which the pair search
reads) and ``claim`` (the (ε, δ) the library gives for these settings, from
its own privacy map where it has one). The claim is evidence, never the
yardstick: the audit tests the claim you pass (``**mechanism.claim`` tests
the library's own statement, by your choice) and refuses to run without one
(:mod:`privaudit._core.stated_claims`).

================================  ==========================  =======================================
adapter                           library (extra)             query and noise
================================  ==========================  =======================================
:func:`opendp_laplace_sum`        OpenDP (``mechanisms``)     clamped sum, ``make_laplace``
:func:`pydp_laplace_sum`          python-dp (``mechanisms``)  clamped sum, ``LaplaceMechanism``
:func:`diffprivlib_laplace_sum`   diffprivlib                 clamped sum, ``mechanisms.Laplace``
:func:`diffprivlib_gaussian_sum`  diffprivlib                 clamped sum, ``mechanisms.Gaussian``
:func:`diffprivlib_mean`          diffprivlib                 ``tools.mean`` with public bounds
:func:`smartnoise_synthesizer`    smartnoise-synth            synthetic tables (MST, AIM, ...)
================================  ==========================  =======================================

Randomness: diffprivlib is seeded from ``rng`` (its ``random_state``), so
its audits are reproducible. OpenDP and python-dp draw from their own
secure generators, which cannot be seeded, and so does smartnoise-synth for
its measurements (through OpenDP): their audits are valid but not
reproducible sample for sample.

Sampling is vectorised where the library allows: OpenDP's Laplace
measurement over a vector of ``size`` copies of the query's value returns
``size`` independent draws of the scalar mechanism in one call; python-dp
and diffprivlib are called once per sample.

>>> import numpy as np
>>> mechanism = opendp_laplace_sum(scale=2.0)  # the mechanisms extra
>>> mechanism(np.array([0.2, 0.7]), 3, np.random.default_rng(0)).shape, mechanism.neighbouring
((3,), 'add-remove')
>>> round(mechanism.claim["epsilon"], 6)  # OpenDP's own map: sensitivity 1 / scale 2
0.5
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.extras import require
from .._core.validation import check_positive, check_probability

__all__ = ["diffprivlib_gaussian_sum", "diffprivlib_laplace_sum", "diffprivlib_mean", "opendp_laplace_sum", "pydp_laplace_sum", "smartnoise_synthesizer"]


def _clamped_sum(dataset: np.ndarray, bounds: tuple[float, float]) -> float:
    return float(np.clip(np.asarray(dataset, dtype=np.float64), bounds[0], bounds[1]).sum())


def _check_bounds(bounds: Any) -> tuple[float, float]:
    low, high = (float(value) for value in bounds)
    if not low < high:
        raise ValueError(f"`bounds` must be (low, high) with low < high, got {bounds!r}")
    return low, high


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(2**31 - 1))


def _declare(mechanism: Callable, relation: str, epsilon: float, delta: float = 0.0) -> Callable:
    mechanism.neighbouring = relation  # type: ignore[attr-defined]
    mechanism.claim = {"epsilon": float(epsilon), "delta": float(delta)}  # type: ignore[attr-defined]
    return mechanism


def opendp_laplace_sum(scale: float, bounds: tuple[float, float] = (0.0, 1.0)) -> Callable:
    """OpenDP's clamp, sum and Laplace measurement; the claim is OpenDP's own map of one record added or removed.

    Each sample is the Laplace measurement (``make_laplace`` over a vector
    of ``size`` copies of the clamped sum, coordinates independent) of the
    sum that OpenDP's ``then_clamp >> then_sum`` transformation computes.
    """
    dp = require("opendp.prelude", purpose="the OpenDP adapter")
    dp.enable_features("contrib")
    scale = check_positive(scale, "scale")
    bounds = _check_bounds(bounds)
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    query = space >> dp.t.then_clamp(bounds) >> dp.t.then_sum()
    epsilon = float((query >> dp.m.then_laplace(scale=scale)).map(1))  # one record added or removed
    noise = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float), scale=scale)

    def mechanism(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        value = float(query([float(x) for x in np.ravel(dataset)]))
        return np.asarray(noise([value] * size), dtype=np.float64)

    return _declare(mechanism, "add-remove", epsilon)


def pydp_laplace_sum(epsilon: float, bounds: tuple[float, float] = (0.0, 1.0)) -> Callable:
    """python-dp's (Google's library) ``LaplaceMechanism`` at ``epsilon`` on the clamped sum (sensitivity max(|low|, |high|))."""
    mechanisms = require("pydp.algorithms.numerical_mechanisms", purpose="the python-dp adapter")
    epsilon = check_positive(epsilon, "epsilon")
    bounds = _check_bounds(bounds)
    laplace = mechanisms.LaplaceMechanism(epsilon, max(abs(bounds[0]), abs(bounds[1])))

    def mechanism(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        value = _clamped_sum(dataset, bounds)
        return np.fromiter((laplace.add_noise(value) for _ in range(size)), dtype=np.float64, count=size)

    return _declare(mechanism, "add-remove", epsilon)


def _diffprivlib(module: str) -> Any:
    return require(f"diffprivlib.{module}", purpose="the diffprivlib adapter")


def diffprivlib_laplace_sum(epsilon: float, bounds: tuple[float, float] = (0.0, 1.0)) -> Callable:
    """diffprivlib's ``mechanisms.Laplace`` at ``epsilon`` on the clamped sum, seeded from ``rng``."""
    mechanisms = _diffprivlib("mechanisms")
    epsilon = check_positive(epsilon, "epsilon")
    bounds = _check_bounds(bounds)
    sensitivity = max(abs(bounds[0]), abs(bounds[1]))

    def mechanism(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        laplace = mechanisms.Laplace(epsilon=epsilon, sensitivity=sensitivity, random_state=_seed(rng))
        value = _clamped_sum(dataset, bounds)
        return np.fromiter((laplace.randomise(value) for _ in range(size)), dtype=np.float64, count=size)

    return _declare(mechanism, "add-remove", epsilon)


def diffprivlib_gaussian_sum(epsilon: float, delta: float, bounds: tuple[float, float] = (0.0, 1.0)) -> Callable:
    """diffprivlib's ``mechanisms.Gaussian`` (the classic calibration, ε <= 1) at (``epsilon``, ``delta``) on the clamped sum."""
    mechanisms = _diffprivlib("mechanisms")
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    bounds = _check_bounds(bounds)
    sensitivity = max(abs(bounds[0]), abs(bounds[1]))

    def mechanism(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        gaussian = mechanisms.Gaussian(epsilon=epsilon, delta=delta, sensitivity=sensitivity, random_state=_seed(rng))
        value = _clamped_sum(dataset, bounds)
        return np.fromiter((gaussian.randomise(value) for _ in range(size)), dtype=np.float64, count=size)

    return _declare(mechanism, "add-remove", epsilon, delta)


def diffprivlib_mean(epsilon: float, bounds: tuple[float, float] = (0.0, 1.0)) -> Callable:
    """diffprivlib's ``tools.mean`` at ``epsilon`` with public ``bounds``; its sensitivity uses the size n, so records are replaced, not added."""
    tools = _diffprivlib("tools")
    epsilon = check_positive(epsilon, "epsilon")
    bounds = _check_bounds(bounds)

    def mechanism(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        values = np.asarray(dataset, dtype=np.float64)
        seed = _seed(rng)
        state = np.random.RandomState(seed)
        return np.fromiter((tools.mean(values, epsilon=epsilon, bounds=bounds, random_state=state) for _ in range(size)), dtype=np.float64, count=size)

    return _declare(mechanism, "replace", epsilon)


def smartnoise_synthesizer(name: str, epsilon: float, *, rows: int, delta: float = 1e-9, columns: tuple[str, ...] | None = None) -> Callable:
    """A smartnoise-synth synthesizer (``"mst"``, ``"aim"``, ...) fitted once per sample on the records (integer categories).

    Each sample is a synthetic table of ``rows`` rows, shape (rows, columns):
    the number of rows is fixed, as a table the size of the data would
    reveal it. smartnoise-synth selects and samples with numpy's global
    generator, which the adapter seeds from ``rng`` for each sample and
    restores afterwards, so the caller's global state is unchanged; but it
    draws MST's and AIM's noisy measurements from OpenDP's secure sampler,
    which no seed reaches, so its audits are valid but not reproducible
    table for table (as OpenDP's and python-dp's). smartnoise-synth needs
    opacus < 0.15, which conflicts with the ``dpsgd`` extra: install it in
    an environment of its own (``tests/test_smartnoise_synth.py`` runs there).
    """
    snsynth = require("snsynth", purpose="the smartnoise-synth adapter")
    pandas = require("pandas", purpose="the smartnoise-synth adapter")
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")

    def mechanism(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        records = np.asarray(dataset).reshape(len(dataset), -1).astype(np.int64)
        names = list(columns) if columns is not None else [f"c{j}" for j in range(records.shape[1])]
        frame = pandas.DataFrame(records, columns=names)
        tables = np.empty((size, rows, records.shape[1]))
        saved = np.random.get_state()
        try:
            for index in range(size):
                np.random.seed(_seed(rng))
                synthesizer = snsynth.Synthesizer.create(name, epsilon=epsilon, delta=delta, verbose=False)
                synthesizer.fit(frame, categorical_columns=names, preprocessor_eps=0.0)
                tables[index] = np.asarray(synthesizer.sample(rows)[names], dtype=np.float64)
        finally:
            np.random.set_state(saved)
        return tables

    return _declare(mechanism, "add-remove", epsilon, delta)
