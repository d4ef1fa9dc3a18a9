"""Real tabular datasets that ship inside statsmodels: loaded offline, never downloaded.

* ``"fair"``: Fair's 1978 survey of extramarital affairs (Redbook, 1974),
  6,366 women, 8 ordinal features (marriage rating, age, years married,
  children, religiousness, education, own and husband's occupation). The
  label is whether the reported time in affairs is positive (32% are).
* ``"randhie"``: the RAND Health Insurance Experiment, 20,190 person-years,
  9 features (coinsurance, deductible, income, physical limitation, disease
  count, health ratings). The label is whether the person made at least one
  outpatient visit to a physician (``mdvis > 0``).

Both are public-domain data sets bundled with statsmodels' ``datasets``
subpackage; the ``panoramia`` extra installs statsmodels.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._core.extras import require
from .._core.validation import check_choice

__all__ = ["STATSMODELS_DATASETS", "TabularData", "load_statsmodels_dataset"]

STATSMODELS_DATASETS = ("fair", "randhie")
_LABELS = {"fair": "affairs", "randhie": "mdvis"}


@dataclasses.dataclass(frozen=True, eq=False)
class TabularData:
    """Features (float64, shape (n, d)), binary labels (int64) and the column names."""

    name: str
    x: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]

    @property
    def num_classes(self) -> int:
        """The number of label values (2 for both embedded data sets)."""
        return 2


def load_statsmodels_dataset(name: str = "fair") -> TabularData:
    """Load ``"fair"`` or ``"randhie"`` from statsmodels, with a binary label.

    >>> data = load_statsmodels_dataset("fair")
    >>> data.x.shape, round(float(data.y.mean()), 3), data.feature_names[0]
    ((6366, 8), 0.322, 'rate_marriage')
    >>> load_statsmodels_dataset("adult")
    Traceback (most recent call last):
    ...
    ValueError: `name` must be one of 'fair', 'randhie', got 'adult'
    """
    check_choice(name, "name", STATSMODELS_DATASETS)
    datasets = require("statsmodels.datasets", purpose="the statsmodels datasets")
    frame = getattr(datasets, name).load_pandas().data
    label = _LABELS[name]
    features = frame.drop(columns=label)
    return TabularData(
        name=name,
        x=np.ascontiguousarray(features.to_numpy(dtype=np.float64)),
        y=(frame[label].to_numpy() > 0).astype(np.int64),
        feature_names=tuple(str(column) for column in features.columns),
    )
