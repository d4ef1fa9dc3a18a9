"""dpmm's marginal-based DP generators (MST, AIM, PrivBayes) in the ``--generator`` contract, each with the (ε, δ) it claims.

:func:`mst`, :func:`aim` and :func:`privbayes` build a :class:`DpmmGenerator`,
a callable ``fn(train_df, *, seed, n) -> synthetic_df`` that fits dpmm's
pipeline (the ``dpmm`` extra, in its own environment: dpmm pins numpy 1.26)
and samples ``n`` rows. Its ``claim`` attribute is the (ε, δ) given to
dpmm, per release and for one record added or removed
(``neighbouring = "add-remove"``). It is evidence, never the yardstick: the
audit holds its bound against your ``--claimed-epsilon``/``--claimed-delta``
only, and names the adapter's stated (ε, δ) in a warning (with the flags
that would test it) when you give none or another.

The domain. dpmm models discrete tables: each numeric column is cut into
``bins`` equal-width bins between its ``bounds`` (dpmm's uniform binner,
values outside clipped into the end bins, a bin's rows drawn uniformly
within it on the way back), each categorical column keeps its
``categories``. No budget is spent on the domain (dpmm's ``proc_epsilon`` is
off), so the claim covers the whole release only when the domain is
declared, from public knowledge, for every column. A column left out of
``bounds``/``categories`` takes its range or its categories from the
training table: that read is outside ε (a record that widens a range or
brings a category shows in the output's domain), and an audit's bound then
measures that leak too (:attr:`DpmmGenerator.declared` says which case
holds). dpmm's own handling of missing values (a flag column, the gaps
filled with a value drawn from the table) and of single-valued columns
also reads the table outside ε.

Randomness: ``seed`` seeds dpmm's selection, sampling and binning
(their own ``numpy.random.RandomState``; the global one is not drawn
from); dpmm draws its measurement noise from OpenDP's secure generator,
which cannot be seeded, so the same seed need not give the same rows: even
a noise of 1e-3 of a count moves a rounded count and with it every later
draw. The bound needs no reproducibility: its coins have their own seed.

From the command line, the ready-made generators below take the domain
from the data (``--generator
privaudit.audits.synthetic_data.dpmm_generators:mst_epsilon_1``). To
declare it, or set another ε, name your own module's generator::

    # my_generators.py, then --generator my_generators:release
    from privaudit.audits.synthetic_data.dpmm_generators import mst
    release = mst(epsilon=2.0, bounds={"age": (0, 120)}, categories={"sex": ["F", "M"]})

>>> generator = mst(epsilon=2.0, bounds={"age": (0, 120)}, categories={"sex": ["F", "M"]})
>>> generator.claim, generator.neighbouring
({'epsilon': 2.0, 'delta': 1e-05}, 'add-remove')
>>> generator.declared(["age", "sex"]), generator.declared(["age", "sex", "income"])
(True, False)
>>> mst(epsilon=0.0)
Traceback (most recent call last):
...
ValueError: `epsilon` must be in (0, inf), got 0
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..._core.extras import require
from .declared_domain import is_integer_column, settle_settings

__all__ = [
    "DEFAULT_BINS",
    "MODELS",
    "NO_NOISE_EPSILON",
    "DpmmGenerator",
    "aim",
    "aim_epsilon_1",
    "aim_epsilon_4",
    "mst",
    "mst_epsilon_1",
    "mst_epsilon_4",
    "mst_without_noise",
    "privbayes",
    "privbayes_epsilon_1",
    "privbayes_epsilon_4",
]

MODELS = {"mst": "MSTPipeline", "aim": "AIMPipeline", "privbayes": "PrivBayesPipeline"}  # name -> dpmm.pipelines class
DEFAULT_BINS = 20  # dpmm's uniform binner's own default
# MST "with its noise removed": ρ ≈ 10^6 zCDP, σ ≈ 1.2e-3 on counts of 1, the exponential mechanism's choice a hard argmax;
# dpmm has no public switch that turns its noise off (public=True skips the model's fit), so the noise is made negligible
NO_NOISE_EPSILON = 1e6


def _cast(values: Any) -> Any:
    """How dpmm casts a numeric column's bounds, by the column's kind: uint32, int32 or float32."""
    import pandas as pd  # optional (the parquet extra)

    if pd.api.types.is_unsigned_integer_dtype(values):
        return np.uint32
    return np.int32 if is_integer_column(values) else np.float32


def _is_numeric(values: Any) -> bool:
    import pandas as pd  # optional (the parquet extra)

    return bool(pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values))


@dataclasses.dataclass(frozen=True, eq=False)
class DpmmGenerator:
    """One of dpmm's pipelines at ``epsilon``, ``delta``, on a stated domain: ``fn(train_df, *, seed, n) -> synthetic_df``.

    ``bounds`` maps numeric columns to (low, high), ``categories``
    categorical columns to their values; a column in neither takes its
    domain from the data (see the module's docstring). ``iterations`` is
    dpmm's ``n_iters`` of the model's inference (None: dpmm's default).
    """

    model: str
    epsilon: float
    delta: float = 1e-5
    bins: int = DEFAULT_BINS
    bounds: Mapping[str, tuple[float, float]] | None = None
    categories: Mapping[str, Sequence[Any]] | None = None
    iterations: int | None = None

    neighbouring: ClassVar[str] = "add-remove"
    #: the audit skips its probe call: a fit costs the domain, not the rows, so a 50-row probe is as slow as the release; every output is still checked
    known_contract: ClassVar[str] = "privaudit's dpmm adapter, whose fit costs as much on 50 rows as on the table"

    def __post_init__(self) -> None:
        settle_settings(self, tuple(MODELS))
        if self.iterations is not None and (isinstance(self.iterations, bool) or not isinstance(self.iterations, int) or self.iterations < 1):
            raise ValueError(f"`iterations` must be None or an integer >= 1, got {self.iterations!r}")

    @property
    def claim(self) -> dict[str, float]:
        """The (ε, δ) given to dpmm: per release, one record added or removed; the whole release's claim when the domain is declared."""
        return {"epsilon": self.epsilon, "delta": self.delta}

    def declared(self, columns: Sequence[str]) -> bool:
        """Whether every one of ``columns`` has a declared domain (the claim then covers the whole release)."""
        assert self.bounds is not None and self.categories is not None
        return all(str(column) in self.bounds or str(column) in self.categories for column in columns)

    def domain(self, train_df: Any) -> dict[str, dict[str, Any]]:
        """dpmm's ``domain`` for ``train_df``: the declared bounds and categories, the data's for the other columns; a ValueError for a mismatch."""
        assert self.bounds is not None and self.categories is not None
        unknown = sorted((set(self.bounds) | set(self.categories)) - {str(c) for c in train_df.columns})
        if unknown:
            raise ValueError(f"`bounds`/`categories` name columns the table does not have: {unknown}")
        domain: dict[str, dict[str, Any]] = {}
        for column in train_df.columns:
            values = train_df[column]
            if _is_numeric(values):
                if column in self.categories:
                    raise ValueError(f"`categories` names numeric column {column!r}: declare its `bounds` instead")
                x = values.to_numpy(dtype=float, na_value=np.nan)
                low, high = self.bounds.get(column, (float(np.nanmin(x)), float(np.nanmax(x))))
                domain[column] = {"lower": low, "upper": high}
            else:
                if column in self.bounds:
                    raise ValueError(f"`bounds` names categorical column {column!r}: declare its `categories` instead")
                present = list(values.dropna().unique())
                declared = list(self.categories.get(column, present))
                missing = [value for value in present if value not in declared]
                if missing:
                    raise ValueError(f"`categories` of column {column!r} must hold every value of the table, missing {missing[:5]}")
                domain[column] = {"categories": declared}
        return domain

    def marginal_cells(self, train_df: Any, frame: Any) -> np.ndarray:
        """(rows of ``frame``, columns) of one-way cells, on the domain :meth:`domain` reads from ``train_df``, as privaudit reads dpmm's uniform binner.

        A numeric value's cell is its bin [edge, next edge) among ``bins``
        equal-width bins between the bounds, a value outside clipped into the
        end bin (-1 for a missing value); the edges are dpmm's own, from the
        bounds cast as dpmm casts them (float32, int32 or uint32 by kind),
        which ``tests/test_dpmm_generators.py`` checks against dpmm's binner. A
        category's cell is its index among the categories (-2 for one the domain
        lacks).

        >>> import pandas as pd
        >>> generator = mst(epsilon=1.0, bins=4, bounds={"age": (0, 100)})
        >>> generator.marginal_cells(pd.DataFrame({"age": [10, 60]}), pd.DataFrame({"age": [30.0, 250.0, -5.0]})).ravel().tolist()
        [1, 3, 0]
        """
        domain = self.domain(train_df)
        cells = np.empty((len(frame), len(domain)), dtype=np.int64)
        for j, (column, spec) in enumerate(domain.items()):
            if "lower" in spec:
                edges = _edges(spec["lower"], spec["upper"], self.bins, _cast(train_df[column]))
                cells[:, j] = _bin(frame[column].to_numpy(dtype=float, na_value=np.nan), edges)
            else:
                index = {value: position for position, value in enumerate(spec["categories"])}
                cells[:, j] = [index.get(value, -2) for value in frame[column]]
        return cells

    def cell_values(self, train_df: Any) -> dict[str, list[tuple[int, Any]]]:
        """Per column, (cell, a value inside it) for every cell of :meth:`marginal_cells`' binning that a record can hold as its own.

        A numeric cell's value is its bin's centre. dpmm decodes an integer
        column by drawing uniformly within the bin and rounding, so a bin
        receives rows decoded from a neighbour unless the rounding intervals
        [v - 1/2, v + 1/2] of the integers v it holds lie inside it (a domain's
        end is a wall): only such a bin is listed, at its integer nearest the
        centre. A categorical cell's value is its category.

        >>> import pandas as pd
        >>> generator = mst(epsilon=1.0, bins=4, bounds={"age": (0, 100), "kids": (0, 8)})
        >>> values = generator.cell_values(pd.DataFrame({"age": [10.0], "kids": [1]}))
        >>> values["age"], values["kids"]  # kids: bins of width 2; [2, 4) gets 1.5-2 rounded to 2 from [0, 2), so only the first is clean
        ([(0, 12.5), (1, 37.5), (2, 62.5), (3, 87.5)], [(0, 1)])
        >>> mst(epsilon=1.0, bins=4, bounds={"kids": (0, 2)}).cell_values(pd.DataFrame({"kids": [1]}))["kids"]  # width 1/2: [0, 0.5) and [1.5, 2] hold 0's and 2's
        [(0, 0), (3, 2)]
        """
        values: dict[str, list[tuple[int, Any]]] = {}
        for column, spec in self.domain(train_df).items():
            if "categories" in spec:
                values[column] = list(enumerate(spec["categories"]))
                continue
            edges = _edges(spec["lower"], spec["upper"], self.bins, _cast(train_df[column]))
            if not (np.all(np.isfinite(edges)) and edges[-1] > edges[0]):  # a single value (or none) read from the table: no cell to give
                values[column] = []
                continue
            centres = (edges[:-1] + edges[1:]) / 2
            if not is_integer_column(train_df[column]):
                values[column] = [(cell, float(centre)) for cell, centre in enumerate(centres)]
                continue
            values[column] = [(cell, value) for cell in range(self.bins) if (value := _clean_integer(edges, cell)) is not None]
        return values

    def __call__(self, train_df: Any, *, seed: int, n: int) -> Any:
        pipelines = require("dpmm.pipelines", purpose="dpmm's MST, AIM and PrivBayes generators")
        domain = self.domain(train_df)
        fit_seed, sample_seed = (int(s) for s in np.random.default_rng(seed).integers(2**31 - 1, size=2))
        options = {} if self.iterations is None else {"n_iters": self.iterations}
        pipeline = getattr(pipelines, MODELS[self.model])(
            epsilon=self.epsilon,
            delta=self.delta,
            n_jobs=1,  # no process pool: one core per generation, the runner parallelises
            gen_kwargs=options,
            proc_epsilon=None,  # no budget on the domain: the uniform binner on the declared bounds
            binner_type="uniform",
            n_bins=self.bins,
        )
        pipeline.fit(train_df.copy(), domain=domain, random_state=np.random.RandomState(fit_seed))
        return pipeline.generate(n_records=int(n), random_state=np.random.RandomState(sample_seed)).reset_index(drop=True)


def _edges(lower: float, upper: float, bins: int, cast: Any) -> np.ndarray:
    """dpmm's bin edges: its bounds cast as it casts them (``cast``: :func:`_cast`), then ``bins`` equal widths."""
    low, high = (float(cast(bound)) for bound in (lower, upper))
    return low + (high - low) * np.linspace(0, 1, num=bins + 1)


def _clean_integer(edges: np.ndarray, cell: int) -> int | None:
    """The integer nearest the centre of bin ``cell`` when no other bin's decoded rows (a uniform draw, rounded) can land in it, else None."""
    low, high = float(edges[cell]), float(edges[cell + 1])
    last = cell == len(edges) - 2
    held = [v for v in range(math.ceil(low), math.floor(high) + 1) if v < high or last]
    if not held:
        return None
    # draws of the bin below are < low and those of the bin above >= high: they miss held's rounding intervals (up to 1e-9 of float error,
    # a draw of probability about 1e-9 / width)
    below = cell == 0 or held[0] - 0.5 >= low - 1e-9
    above = last or held[-1] + 0.5 <= high + 1e-9
    return min(held, key=lambda v: (abs(v - (low + high) / 2), v)) if below and above else None


def _bin(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Each value's bin [edge, next edge) among ``edges``, values outside clipped into the end bins, -1 for a missing one."""
    cells = np.clip(np.searchsorted(edges, np.nan_to_num(x), side="right") - 1, 0, len(edges) - 2)
    return np.where(np.isnan(x), -1, cells).astype(np.int64)


def mst(epsilon: float, delta: float = 1e-5, **options: Any) -> DpmmGenerator:
    """dpmm's MST (McKenna et al. 2021) at (``epsilon``, ``delta``); ``options``: ``bins``, ``bounds``, ``categories``, ``iterations``."""
    return DpmmGenerator("mst", epsilon, delta, **options)


def aim(epsilon: float, delta: float = 1e-5, **options: Any) -> DpmmGenerator:
    """dpmm's AIM (McKenna et al. 2022) at (``epsilon``, ``delta``); ``options`` as for :func:`mst`."""
    return DpmmGenerator("aim", epsilon, delta, **options)


def privbayes(epsilon: float, delta: float = 1e-5, **options: Any) -> DpmmGenerator:
    """dpmm's PrivBayes (Zhang et al. 2017) at (``epsilon``, ``delta``); ``options`` as for :func:`mst`."""
    return DpmmGenerator("privbayes", epsilon, delta, **options)


# ready-made for --generator: the domain from the data (see the module's docstring), δ = 1e-5
mst_epsilon_1, mst_epsilon_4 = mst(1.0), mst(4.0)
aim_epsilon_1, aim_epsilon_4 = aim(1.0), aim(4.0)
privbayes_epsilon_1, privbayes_epsilon_4 = privbayes(1.0), privbayes(4.0)
mst_without_noise = mst(NO_NOISE_EPSILON)
