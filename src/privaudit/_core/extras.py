"""The one map from optional package to the extra that installs it, and the lazy import that uses it.

Every "missing optional dependency" message in privaudit, from the Python API
and from the CLI, comes from here, so a package always names the same extra.

>>> EXTRAS["opacus"]
'dpsgd'
>>> require("surely_not_a_package_name", purpose="this example")
Traceback (most recent call last):
...
privaudit._core.extras.MissingExtraError: missing dependency `surely_not_a_package_name` (needed by this example)
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

__all__ = ["EXTRAS", "MissingExtraError", "check_installed", "missing_extra_message", "require"]

# import name -> extra of pyproject.toml that installs it
EXTRAS: dict[str, str] = {
    "torch": "dpsgd",
    "opacus": "dpsgd",
    "sklearn": "dpsgd",
    "matplotlib": "plots",
    "ray": "ray",
    "transformers": "hf",
    "tokenizers": "hf",
    "peft": "hf",
    "safetensors": "dpsgd",
    "skops": "sklearn",
    "onnxruntime": "onnx",
    "flwr": "flower",
    "mbi": "panoramia",
    "statsmodels": "panoramia",
    "pandas": "parquet",
    "pyarrow": "parquet",
    "opendp": "mechanisms",
    "pydp": "mechanisms",
    "diffprivlib": "diffprivlib",
    "snsynth": "smartnoise",
    "sdv": "sdv",
    "sdmetrics": "sdv",
    "dpmm": "dpmm",
}  # core dependencies (numpy, scipy, dp_accounting, pydantic, yaml, jsonschema, typer, rich) have no extra: they are always installed


class MissingExtraError(ImportError):
    """An optional dependency is missing; the message names the extra that installs it."""


def missing_extra_message(package: str, purpose: str | None = None) -> str | None:
    """One line that says which extra installs ``package``; None when it is not an optional dependency."""
    root = package.split(".")[0]
    if root not in EXTRAS:
        return None
    needed = f" (needed by {purpose})" if purpose else ""
    return f"missing optional dependency `{root}`{needed}: install it with pip install 'privaudit[{EXTRAS[root]}]'"


def require(package: str, *, purpose: str | None = None) -> ModuleType:
    """Import ``package``, or raise an ImportError whose message names the extra that installs it."""
    try:
        return importlib.import_module(package)
    except ImportError as error:
        message = missing_extra_message(package, purpose)
        if message is None:
            message = f"missing dependency `{package}`" + (f" (needed by {purpose})" if purpose else "")
        raise MissingExtraError(message, name=package.split(".")[0]) from error


def check_installed(packages: tuple[str, ...], *, purpose: str) -> None:
    """Raise :class:`MissingExtraError` naming the extra when one of ``packages`` is not installed; nothing is imported (a check before the work).

    >>> check_installed(("importlib",), purpose="a check")
    """
    for package in packages:
        if importlib.util.find_spec(package.split(".")[0]) is None:
            message = missing_extra_message(package, purpose) or f"missing dependency `{package}` (needed by {purpose})"
            raise MissingExtraError(message, name=package.split(".")[0])
