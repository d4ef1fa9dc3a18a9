"""Result objects: frozen dataclasses that serialise to JSON-ready dicts.

Every result records what produced it: the versions of privaudit and of the
numerical libraries it relied on, next to its own configuration fields (seed,
confidence, method, ...). Statistical results also say whether they are a
*lower bound* (valid at the stated confidence) or an *estimate*.
"""

from __future__ import annotations

import dataclasses
import math
from functools import cache
from importlib import metadata
from typing import Any

import numpy as np

__all__ = ["Result", "library_versions", "to_plain"]


@cache
def library_versions() -> dict[str, str]:
    """Versions of privaudit and the libraries its numbers depend on.

    >>> sorted(library_versions())
    ['dp-accounting', 'numpy', 'privaudit', 'python', 'scipy']
    """
    import platform

    versions = {"python": platform.python_version()}
    for package in ("privaudit", "numpy", "scipy", "dp-accounting"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def to_plain(value: Any) -> Any:
    """Convert numpy scalars/arrays and nested containers to JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: to_plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(key): to_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(item) for item in value]
    if isinstance(value, np.ndarray):
        return [to_plain(item) for item in value.tolist()]
    if isinstance(value, np.generic):
        return to_plain(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no inf/nan; keep the meaning readable
    return value


@dataclasses.dataclass(frozen=True)
class Result:
    """Base class of every result: adds ``to_dict()`` with provenance.

    >>> @dataclasses.dataclass(frozen=True)
    ... class Example(Result):
    ...     epsilon: float
    >>> d = Example(epsilon=np.float64(1.5)).to_dict()
    >>> d["epsilon"], d["result_type"], "numpy" in d["versions"]
    (1.5, 'Example', True)
    """

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as plain Python values, plus type and versions."""
        out: dict[str, Any] = {"result_type": type(self).__name__}
        out.update(to_plain(self))
        out["versions"] = dict(library_versions())
        return out
