"""Audit of released synthetic text: the canaries' echoes in text a fine-tuned LM generated (Meeus et al., "The Canary's Echo", ICML 2025).

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`).
"""

from __future__ import annotations

from ..lm.synthetic import score_synthetic_files
from .audit import AUDIT, SyntheticTextAudit, SyntheticTextConfig, SyntheticTextResult, tiny_synthetic_text

__all__ = ["AUDIT", "SyntheticTextAudit", "SyntheticTextConfig", "SyntheticTextResult", "score_synthetic_files", "tiny_synthetic_text"]
