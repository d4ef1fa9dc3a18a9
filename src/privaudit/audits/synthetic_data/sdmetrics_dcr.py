"""sdmetrics' own DCRBaselineProtection and DCROverfittingProtection, shown beside privaudit's DCR statistics when sdmetrics is installed.

privaudit computes DCR's verdict itself (:func:`.attacks.dcr_statistics`),
so the audit needs no sdmetrics; where it is installed (the ``sdv``
extra), its own two scores are computed on the same tables and reported
beside privaudit's, labelled as sdmetrics'. They differ from privaudit's
by sdmetrics' own choices: each DCR's numbers are scaled by the range of
the table measured against (the holdout's for the holdout distances), and
DCROverfittingProtection does not subsample the training table to the
holdout's size.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from .table import Table

__all__ = ["sdmetrics_dcr", "sdmetrics_installed", "sdmetrics_metadata"]


def sdmetrics_installed() -> bool:
    """Whether sdmetrics can be imported here (the ``sdv`` extra)."""
    return importlib.util.find_spec("sdmetrics") is not None


def sdmetrics_metadata(table: Table) -> dict[str, Any]:
    """sdmetrics' single-table metadata of ``table``'s checked schema: numeric columns numerical, the others categorical.

    >>> import pandas as pd
    >>> from privaudit.audits.synthetic_data.table import read_frame
    >>> sdmetrics_metadata(read_frame(pd.DataFrame({"age": [30, 40], "city": ["a", "b"]}), "--train"))
    {'columns': {'age': {'sdtype': 'numerical'}, 'city': {'sdtype': 'categorical'}}}
    """
    return {"columns": {column.name: {"sdtype": "numerical" if column.kind == "numeric" else "categorical"} for column in table.schema}}


def sdmetrics_dcr(train: Table, holdout: Table, released: Table, *, seed: int) -> tuple[float | None, float | None]:
    """(DCRBaselineProtection, DCROverfittingProtection) by sdmetrics itself, or (None, None) where sdmetrics is not installed.

    sdmetrics draws DCRBaselineProtection's uniformly random rows from
    ``numpy.random.default_rng(cls._seed)``, fresh entropy by default (never
    the global generator): a subclass fixes ``_seed`` to ``seed``, so the
    same seed gives the same score.
    """
    if not sdmetrics_installed():
        return None, None
    from sdmetrics.single_table import DCRBaselineProtection, DCROverfittingProtection  # optional (the sdv extra)

    metadata = sdmetrics_metadata(train)
    seeded: Any = type("SeededDCRBaselineProtection", (DCRBaselineProtection,), {"_seed": int(seed)})
    baseline = seeded.compute(train.frame, released.frame, metadata, table_name=None)
    overfitting = DCROverfittingProtection.compute(train.frame, released.frame, holdout.frame, metadata, table_name=None)
    return float(baseline), float(overfitting)
