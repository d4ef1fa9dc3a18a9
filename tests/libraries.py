"""Whether an optional library imports here; where CI's own environment for it names it in PRIVAUDIT_REQUIRE_LIBRARIES, its absence fails instead of skipping."""

from __future__ import annotations

import importlib
import importlib.util
import os


def library_available(module: str, *, extra: str | None = None) -> bool:
    """True when ``module`` imports; False (the caller skips) when it does not, unless ``extra`` (default: the module's top package) is required.

    CI names the libraries its own environment installed in PRIVAUDIT_REQUIRE_LIBRARIES (comma-separated): there a missing or
    failing import raises, so the test fails instead of skipping.
    """
    required = (extra or module.split(".")[0]) in os.environ.get("PRIVAUDIT_REQUIRE_LIBRARIES", "").split(",")
    try:
        found = importlib.util.find_spec(module) is not None and importlib.import_module(module) is not None
    except ImportError:  # e.g. diffprivlib 0.6.6 fails to import beside scikit-learn >= 1.8
        if required:
            raise
        return False
    if required and not found:
        raise ImportError(f"{module} is required here (PRIVAUDIT_REQUIRE_LIBRARIES) and is not installed")
    return found
