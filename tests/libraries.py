"""Whether an optional library imports here; where CI's own environment for it names it in $PRIVAUDIT_REQUIRE_LIBRARIES, a failed import fails instead."""

from __future__ import annotations

import importlib
import importlib.util
import os


def available(module: str) -> bool:
    """True when ``module`` imports; False (the test skips) when it does not, unless its library is required here, where the ImportError is raised."""
    # CI names the libraries its own environment installed: there a missing or broken import fails the test instead of skipping it
    required = module.split(".")[0] in os.environ.get("PRIVAUDIT_REQUIRE_LIBRARIES", "").split(",")
    try:
        found = importlib.util.find_spec(module.split(".")[0]) is not None
        if not found and required:
            raise ImportError(f"{module} is required here ($PRIVAUDIT_REQUIRE_LIBRARIES) but is not installed")
        return found and importlib.import_module(module) is not None
    except ImportError:  # e.g. diffprivlib 0.6.6 fails to import beside scikit-learn >= 1.8
        if required:
            raise
        return False
