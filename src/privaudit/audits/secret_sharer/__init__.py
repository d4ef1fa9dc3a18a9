"""The Secret Sharer audit (Carlini et al.): insert canaries, train, measure exposure, try extraction.

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`, :mod:`.extract`, :mod:`.measure`, :mod:`.own_model`).
"""

from __future__ import annotations

from .audit import AUDIT, SecretSharerAudit, SecretSharerConfig, SecretSharerResult
from .extract import ExtractionResult, extract_from_run
from .measure import MeasuredCanaries, enumeration_index, exposure_headline, guessing_baselines, guessing_upper, measure_canaries, skewnorm_density
from .own_model import MAX_EXACT, OwnModelSecretSharerResult, run_own_model

__all__ = [
    "AUDIT",
    "ExtractionResult",
    "MAX_EXACT",
    "MeasuredCanaries",
    "OwnModelSecretSharerResult",
    "SecretSharerAudit",
    "SecretSharerConfig",
    "SecretSharerResult",
    "enumeration_index",
    "exposure_headline",
    "extract_from_run",
    "guessing_baselines",
    "guessing_upper",
    "measure_canaries",
    "run_own_model",
    "skewnorm_density",
]
