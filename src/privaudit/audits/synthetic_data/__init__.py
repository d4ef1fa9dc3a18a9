"""Audit of released synthetic tabular data: strong per-record membership inference, DCR's proxy verdict beside it, and a valid ε lower bound.

The family's pieces, one module each, imports flowing one way down this list:

* :mod:`.types`: the config and the result types;
* :mod:`.table`: the user's tables read, their schemas checked, encoded once;
* :mod:`.attacks`: the robust DCR (the headline), DCR (per record and
  sdmetrics' aggregate tests), DOMIAS, the outlier scores of the vulnerable-record selection;
* :mod:`.generators`: numpy generators of the ``--generator`` contract (the
  embedded default's Gaussian copula, and memorising variants);
* :mod:`.sdv_generators`: SDV's GaussianCopula and CTGAN with that contract
  (the ``sdv`` extra, imported inside each call);
* :mod:`.generation`: the user's generator imported, probed and checked;
  the canaries of the bound;
* :mod:`.shadow`: shadow-generator attacks on the runner;
* :mod:`.bound`: the one-run ε lower bound from canaries, and its ceiling;
* :mod:`.sdmetrics_dcr`: sdmetrics' own DCR scores beside privaudit's, when installed;
* :mod:`.audit`: the run, and the family on the audit interface (:data:`AUDIT`).
"""

from __future__ import annotations

from .audit import AUDIT, SyntheticDataAudit, embedded_tables, run_synthetic_data
from .types import (
    ATTACKS,
    HEADLINE_ATTACK,
    CanaryBound,
    ColumnSchema,
    DCRStatistics,
    ExposedRecord,
    SyntheticAttack,
    SyntheticDataConfig,
    SyntheticDataResult,
)

__all__ = [
    "ATTACKS",
    "AUDIT",
    "HEADLINE_ATTACK",
    "CanaryBound",
    "ColumnSchema",
    "DCRStatistics",
    "ExposedRecord",
    "SyntheticAttack",
    "SyntheticDataAudit",
    "SyntheticDataConfig",
    "SyntheticDataResult",
    "embedded_tables",
    "run_synthetic_data",
]
