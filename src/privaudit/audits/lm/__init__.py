"""One-run audit of a causal LM's fine-tuning from canaries included by fair coins (Panda et al. 2025; Steinke et al. 2023).

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`, :mod:`.result`, :mod:`.scores`, :mod:`.synthetic`, :mod:`.tiny`).
"""

from __future__ import annotations

from .audit import AUDIT, LMOneRunAudit
from .result import LMOneRunConfig, LMOneRunResult, audit_lm_scores
from .scores import calibrated_scores, canary_log_likelihoods, span_convention
from .tiny import PoissonFineTuning, bpe_tokenizer, fine_tune, fine_tune_dp, tiny_gpt2

__all__ = [
    "AUDIT",
    "LMOneRunAudit",
    "LMOneRunConfig",
    "LMOneRunResult",
    "PoissonFineTuning",
    "audit_lm_scores",
    "bpe_tokenizer",
    "calibrated_scores",
    "canary_log_likelihoods",
    "fine_tune",
    "fine_tune_dp",
    "span_convention",
    "tiny_gpt2",
]
