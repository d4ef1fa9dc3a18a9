"""Scores of LM canaries: the natural-log likelihood of each canary's scored span, through :class:`~privaudit.models.hf.HFCausalLMScorer`.

The span is the provenance's: ``"secret"``, the canary's tokens after the
tokens its prefix and its full text share (the secret given the prefix,
:meth:`HFCausalLMScorer.completion_log_perplexities` with the canary alone,
so the span does not depend on the other canaries), or ``"text"``, every
token of the full text after the special tokens
(:meth:`HFCausalLMScorer.log_perplexity`). Either way the text is tokenised
whole, with the special tokens decided by :mod:`privaudit.models.special_tokens`.
With a base model, the score is calibrated: the fine-tuned model's
log-likelihood less the base model's.
"""

from __future__ import annotations

import numpy as np

from ..._core.conventions import Convention, default, explicit
from ...canaries.lm_provenance import LMProvenance

__all__ = ["canary_log_likelihoods", "calibrated_scores", "span_convention"]

_LN2 = float(np.log(2.0))


def canary_log_likelihoods(scorer, provenance: LMProvenance) -> np.ndarray:
    """Sum of the natural-log probabilities of each canary's scored span under ``scorer``'s model."""
    if provenance.span == "text":
        bits = scorer.log_perplexity(provenance.texts)
    else:
        bits = np.array(
            [
                scorer.completion_log_perplexities(prefix, [secret], reuse="none")[0]
                for prefix, secret in zip(provenance.prefixes, provenance.secrets, strict=True)
            ]
        )
    return -np.asarray(bits, dtype=np.float64) * _LN2


def calibrated_scores(scorer, provenance: LMProvenance, base_scorer=None) -> np.ndarray:
    """The membership score of each canary (higher: more likely included): its log-likelihood, less the base model's when given."""
    scores = canary_log_likelihoods(scorer, provenance)
    if base_scorer is not None:
        scores = scores - canary_log_likelihoods(base_scorer, provenance)
    return scores


def span_convention(provenance: LMProvenance) -> Convention:
    """The scored-span convention: the secret given its prefix is the stated default; the whole text is the user's explicit choice."""
    value = {
        "secret": "the secret given its prefix: the full text's tokens after those it shares with the prefix alone",
        "text": "the whole text: every token after the special tokens",
    }[provenance.span]
    if provenance.span == "text":
        return explicit("scored span", value, "span (prepare_lm_canaries), recorded in the provenance")
    return default(
        "scored span",
        value,
        "Panda et al. (2025) found the secret given its prefix the strongest signal; the one-run bound holds for any score, so the choice moves power, not validity",
    )
