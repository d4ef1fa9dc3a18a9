"""smartnoise-synth's MST and AIM in the ``--generator`` contract, on a declared domain whose binning the audit reads.

:func:`smartnoise_mst` and :func:`smartnoise_aim` build a
:class:`SmartnoiseGenerator`, a callable ``fn(train_df, *, seed, n) ->
synthetic_df`` that fits smartnoise-synth's synthesizer (the ``smartnoise``
extra, in its own environment: smartnoise-synth 1.0.8 needs opacus < 0.15)
and samples ``n`` rows. Its ``claim`` is the (ε, δ) given to smartnoise-synth,
per release and for one record added or removed: evidence, never the
yardstick (the audit holds its bound against ``--claimed-epsilon`` only).

The domain is declared for every column, so the claim covers the whole
release (``preprocessor_eps`` is 0: no budget spent on the domain, nothing
read from the table):

* a numeric column gets smartnoise-synth's own ``BinTransformer`` with the
  declared ``bounds`` and ``bins``: a value is clamped into the bounds and
  falls in bin ``min(bins - 1, int(bins (v - lower) / (upper - lower)))``;
  a synthetic row gets its bin's centre (:meth:`SmartnoiseGenerator.marginal_cells`
  reads the same rule; ``tests/test_smartnoise_synth.py`` checks it against
  ``BinTransformer`` itself);
* a categorical column's values are coded by their position among the
  declared ``categories`` and handed to smartnoise-synth as a
  ``BinTransformer`` of one bin per category, so its domain holds every
  declared category, present in the table or not (smartnoise-synth's own
  ``LabelTransformer`` would take the categories from the table, outside ε).

Missing values are refused, as are values outside a declared category
list. The generator states its binning (``marginal_cells``,
``cell_values``), so ``--canaries`` places cell canaries in the bins the
table leaves empty and scores them by the marginal attack.

Randomness: smartnoise-synth selects and samples with numpy's global
generator, which each call seeds from ``seed`` and restores afterwards; it
draws MST's and AIM's measurements from OpenDP's secure sampler, which no
seed reaches, so the same seed need not give the same rows. The bound needs
no reproducibility: its coins have their own seed.

>>> generator = smartnoise_mst(1.0, bounds={"age": (0, 100)}, categories={"sex": ["F", "M"]}, bins=4)
>>> generator.claim, generator.neighbouring
({'epsilon': 1.0, 'delta': 1e-05}, 'add-remove')
>>> import pandas as pd
>>> train = pd.DataFrame({"age": [10.0, 99.0], "sex": ["F", "M"]})
>>> generator.marginal_cells(train, pd.DataFrame({"age": [0.0, 25.0, 100.0, 150.0], "sex": ["M", "F", "F", "M"]})).tolist()
[[0, 1], [1, 0], [3, 0], [3, 1]]
>>> generator.cell_values(train)["age"]
[(0, 12.5), (1, 37.5), (2, 62.5), (3, 87.5)]
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..._core.extras import require
from .declared_domain import is_integer_column, settle_settings

__all__ = ["SMARTNOISE_MODELS", "SmartnoiseGenerator", "smartnoise_aim", "smartnoise_mst"]

SMARTNOISE_MODELS = ("mst", "aim")


@dataclasses.dataclass(frozen=True)
class SmartnoiseGenerator:
    """smartnoise-synth's ``model`` at (``epsilon``, ``delta``) on the declared domain: ``bounds`` for every numeric column, ``categories`` for every other."""

    model: str
    epsilon: float
    delta: float = 1e-5
    bins: int = 20
    bounds: Mapping[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    categories: Mapping[str, Sequence[Any]] = dataclasses.field(default_factory=dict)

    neighbouring: ClassVar[str] = "add-remove"
    #: the audit skips its probe call: a fit costs the domain, not the rows; every output is still checked
    known_contract: ClassVar[str] = "privaudit's smartnoise-synth adapter, whose fit costs the domain, not the rows"

    def __post_init__(self) -> None:
        settle_settings(self, SMARTNOISE_MODELS)

    @property
    def claim(self) -> dict[str, float]:
        """The (ε, δ) given to smartnoise-synth: per release, one record added or removed, on the declared domain."""
        return {"epsilon": self.epsilon, "delta": self.delta}

    def _check(self, train_df: Any) -> None:
        columns = [str(column) for column in train_df.columns]
        undeclared = [column for column in columns if column not in self.bounds and column not in self.categories]
        unknown = sorted((set(self.bounds) | set(self.categories)) - set(columns))
        if undeclared or unknown:
            raise ValueError(
                f"smartnoise-synth's adapter needs the domain of every column declared (`bounds` or `categories`): undeclared {undeclared}, "
                f"declared but not in the table {unknown}"
            )

    def marginal_cells(self, train_df: Any, frame: Any) -> np.ndarray:
        """(rows of ``frame``, columns) of one-way cells: a number's bin as smartnoise-synth's ``BinTransformer`` computes it, a category's position.

        A category the domain lacks gets -2, a missing value -1.
        """
        self._check(train_df)
        cells = np.empty((len(frame), len(train_df.columns)), dtype=np.int64)
        for j, column in enumerate(train_df.columns):
            if column in self.bounds:
                low, high = self.bounds[column]
                x = frame[column].to_numpy(dtype=float, na_value=np.nan)
                clamped = np.clip(np.nan_to_num(x, nan=low), low, high)
                binned = np.minimum(self.bins - 1, np.floor(self.bins * (clamped - low) / (high - low))).astype(np.int64)
                cells[:, j] = np.where(np.isnan(x), -1, binned)
            else:
                index = {value: position for position, value in enumerate(self.categories[column])}
                missing = frame[column].isna().to_numpy()
                cells[:, j] = [-1 if gap else index.get(value, -2) for value, gap in zip(frame[column], missing, strict=True)]
        return cells

    def cell_values(self, train_df: Any) -> dict[str, list[tuple[int, Any]]]:
        """Per column, (cell, a value inside it): a bin's centre (what smartnoise-synth releases there), or the category.

        An integer column's record holds a whole number: its bins are those
        that hold one, at the whole number nearest the centre.

        >>> import pandas as pd
        >>> smartnoise_mst(1.0, bins=4, bounds={"kids": (0, 2)}).cell_values(pd.DataFrame({"kids": [1]}))["kids"]  # bins of width 1/2
        [(0, 0), (2, 1), (3, 2)]
        """
        self._check(train_df)
        values: dict[str, list[tuple[int, Any]]] = {}
        for column in train_df.columns:
            if column in self.categories:
                values[column] = list(enumerate(self.categories[column]))
                continue
            low, high = self.bounds[column]
            centres = [(cell, low + (cell + 0.5) * (high - low) / self.bins) for cell in range(self.bins)]
            if not is_integer_column(train_df[column]):
                values[column] = centres
                continue
            width = (high - low) / self.bins  # a bin's whole numbers nearest its centre are among these candidates
            candidates = sorted({int(v) for cell, centre in centres for v in (math.floor(centre), math.ceil(centre), math.ceil(low + cell * width))})
            candidates = [v for v in candidates if low <= v <= high]
            rows = train_df.iloc[[0] * len(candidates)].reset_index(drop=True)
            rows[column] = np.array(candidates, dtype=np.int64)
            cells = self.marginal_cells(train_df, rows)[:, list(train_df.columns).index(column)]
            values[column] = [
                (cell, min((v for v, c in zip(candidates, cells, strict=True) if c == cell), key=lambda v: (abs(v - centre), v)))
                for cell, centre in centres
                if np.any(cells == cell)
            ]
        return values

    def __call__(self, train_df: Any, *, seed: int, n: int) -> Any:
        cells = self.marginal_cells(train_df, train_df)  # the table is checked before smartnoise-synth is imported
        bad = [str(column) for j, column in enumerate(train_df.columns) if np.any(cells[:, j] < 0)]
        if bad:
            raise ValueError(f"smartnoise-synth's adapter refuses missing values and undeclared categories: columns {bad}")
        snsynth = require("snsynth", purpose="smartnoise-synth's MST and AIM generators")
        pandas = require("pandas", purpose="smartnoise-synth's MST and AIM generators")
        from snsynth.transform import BinTransformer, TableTransformer

        coded, transformers = {}, []
        for j, column in enumerate(train_df.columns):
            if column in self.bounds:
                low, high = self.bounds[column]
                coded[column] = train_df[column].to_numpy(dtype=float)
                transformers.append(BinTransformer(bins=self.bins, lower=low, upper=high))
            else:  # positions among the declared categories: one bin each, so the domain is the declared one
                coded[column] = cells[:, j].astype(float)
                size = len(self.categories[column])
                transformers.append(BinTransformer(bins=size, lower=0.0, upper=float(size)))
        saved = np.random.get_state()
        try:
            np.random.seed(int(np.random.default_rng(seed).integers(2**31 - 1)))
            synthesizer = snsynth.Synthesizer.create(self.model, epsilon=self.epsilon, delta=self.delta, verbose=False)
            synthesizer.fit(pandas.DataFrame(coded), transformer=TableTransformer(transformers), preprocessor_eps=0.0)
            rows = synthesizer.sample(int(n))
        finally:
            np.random.set_state(saved)
        out = pandas.DataFrame(rows).reset_index(drop=True)  # smartnoise-synth returns a frame of the fitted one's columns
        out.columns = list(train_df.columns)
        for column in train_df.columns:
            if column in self.categories:  # a category's bin centre is its position + 1/2
                out[column] = pandas.Series([self.categories[column][int(v)] for v in out[column]], dtype=object)
            else:
                out[column] = out[column].astype(float)
        return out


def smartnoise_mst(epsilon: float, delta: float = 1e-5, **options: Any) -> SmartnoiseGenerator:
    """smartnoise-synth's MST at (``epsilon``, ``delta``); ``options``: ``bins``, ``bounds``, ``categories`` (every column declared)."""
    return SmartnoiseGenerator("mst", epsilon, delta, **options)


def smartnoise_aim(epsilon: float, delta: float = 1e-5, **options: Any) -> SmartnoiseGenerator:
    """smartnoise-synth's AIM at (``epsilon``, ``delta``); ``options`` as for :func:`smartnoise_mst`."""
    return SmartnoiseGenerator("aim", epsilon, delta, **options)
