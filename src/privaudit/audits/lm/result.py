"""The LM canary families' bottom layer: the lm-one-run config, the canary one-run result that
synthetic-text shares (:class:`CanaryOneRunResult`, :func:`canary_result_fields`), and the canaries' copies."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..._core.conventions import Convention, checked, explicit
from ..._core.validation import check_choice, check_count, check_positive, check_probability
from ...canaries.lm import DESIGNS
from ...canaries.lm_provenance import SPANS, LMProvenance
from ...stats.ceiling import make_ceiling, one_run_record_ceiling
from ...stats.metrics import auc_null_margin, roc_auc, tpr_at_fpr
from ...stats.one_run_combined import OneRunLowerBound
from ...stats.one_run_group import per_record_one_run_lower_bound
from ..base import AuditResult, Headline
from ..family_test import FamilyPlan, FamilyTest, check_family_fields, family_headline, inert_family_fields
from ..verdicts import auc_warnings, check_claim_fields, claim_of, verdict_of

__all__ = [
    "BOS",
    "CanaryOneRunResult",
    "EMBEDDED_ONLY",
    "LMOneRunConfig",
    "LMOneRunResult",
    "SIGNALS",
    "SYNTHETIC_THREAT_MODEL",
    "THREAT_MODEL",
    "audit_lm_scores",
    "canary_copies",
    "canary_result_fields",
    "check_family_copies",
    "with_family",
]


BOS = ("auto", "prepend", "none")

SIGNALS = ("ngram", "jaccard")

SYNTHETIC_THREAT_MODEL = "released synthetic text only: the auditor compares each canary with the synthetic corpus (Meeus et al. 2025)"

#: The settings that build the embedded default (its canaries, corpus, tokenizer and training): a provenance and the user's model replace them.
EMBEDDED_ONLY = frozenset(
    {"design", "num_canaries", "secret_length", "span", "canary_repeats", "corpus_chars", "vocab_size", "base_steps", "steps", "learning_rate"}
)

THREAT_MODEL = "black-box, final model: the auditor scores canary texts by the fine-tuned model's log-likelihood (and the base model's, when given)"


@dataclasses.dataclass(frozen=True)
class LMOneRunConfig:
    """Settings of the LM one-run audit; the design and training settings drive the embedded default only (a provenance fixes the canaries).

    >>> LMOneRunConfig(design="shiny")
    Traceback (most recent call last):
    ...
    ValueError: `design` must be one of 'random-tokens', 'new-tokens', 'least-likely', 'bigram', 'high-temperature', 'prefix-suffix', got 'shiny'
    """

    design: str = "new-tokens"
    num_canaries: int = 100
    secret_length: int = 2
    span: str = "secret"
    canary_repeats: int = 4  # the embedded default's copies of each included canary in its fine-tuning data
    canary_copies: int | None = None  # copies in your fine-tuning data; None: read from the provenance `privaudit canaries lm` wrote
    corpus_chars: int = 20_000
    vocab_size: int = 384
    base_steps: int = 30
    steps: int = 40
    learning_rate: float = 3e-3
    claimed_epsilon: float | None = None  # the DP guarantee the user claims for the fine-tuning, end to end, per record (None: no claim)
    claimed_delta: float | None = None  # its δ; None: `delta`
    delta: float = 1e-5
    confidence: float = 0.95
    bos: str = "auto"
    synthetic_signal: str = "ngram"  # with a synthetic corpus: the n-gram likelihood or the best Jaccard match
    ngram_order: int = 2
    seed: int = 0
    # the claim's own family (privaudit.audits.family_test), tested by order statistics beside the generic bound
    family: str | None = None
    family_claim: float | None = None
    family_sampling_rate: float | None = None
    family_steps: int | None = None

    def __post_init__(self) -> None:
        check_choice(self.design, "design", DESIGNS)
        check_count(self.num_canaries, "num_canaries", minimum=4)
        check_count(self.secret_length, "secret_length", minimum=1)
        check_choice(self.span, "span", SPANS)
        check_count(self.canary_repeats, "canary_repeats", minimum=1)
        if self.canary_copies is not None:
            check_count(self.canary_copies, "canary_copies", minimum=1)
        check_count(self.corpus_chars, "corpus_chars", minimum=1000)
        check_count(self.vocab_size, "vocab_size", minimum=260)
        check_count(self.base_steps, "base_steps", minimum=1)
        check_count(self.steps, "steps", minimum=1)
        check_positive(self.learning_rate, "learning_rate")
        check_claim_fields(self.claimed_epsilon, self.claimed_delta)
        check_probability(self.delta, "delta")
        check_probability(self.confidence, "confidence")
        check_choice(self.bos, "bos", BOS)
        check_choice(self.synthetic_signal, "synthetic_signal", SIGNALS)
        check_count(self.ngram_order, "ngram_order", minimum=1, maximum=8)
        check_family_fields(self)


@dataclasses.dataclass(frozen=True)
class CanaryOneRunResult(AuditResult):
    """What every one-run audit of LM canaries reports: AUC, TPR at 1% FPR and the one-run ε lower bound, beside the claimed ε.

    ``scores`` (higher: more likely included) and ``included`` are in the
    provenance's order; ``canary_copies`` is how many times each included
    canary was in the fine-tuning data (the bound is a record's, by group
    privacy). A family says what was scored in :meth:`scored_from`.
    """

    design: str
    span: str
    num_canaries: int
    num_in: int
    auc: float
    tpr_at_1pct_fpr: float
    bound: OneRunLowerBound
    claimed_epsilon: float | None
    flagged: bool | None
    inclusion_seed: int
    canary_seed: int
    included: tuple[bool, ...]
    scores: tuple[float, ...]
    seconds: float
    canary_copies: int = dataclasses.field(default=1, kw_only=True)
    family_test: FamilyTest | None = dataclasses.field(default=None, kw_only=True)  # a family named: the headline, beside the generic bound

    def scored_from(self, copies: str) -> str:
        raise NotImplementedError

    def headline(self) -> Headline:
        family = self.family_test
        if family is not None:
            return Headline(
                value=family.epsilon,
                label=(
                    f"ε lower bound against the claim's family {self.scored_from('')}: order statistics of Xiang et al.; refuted: {family.refuted}; "
                    f"generic bound {family.generic_epsilon:.3g} beside it; valid if transmission dominance holds"
                ),
                kind=family.bound.kind,
                confidence=family.bound.confidence,
                valid=family.bound.valid,
                flag=family.verdict.flagged,
            )
        copies = f"; {self.canary_copies} copies each, a record's ε by group privacy" if self.canary_copies > 1 else ""
        return Headline(
            value=self.bound.epsilon,
            label=f"ε lower bound {self.scored_from(copies)}",
            kind=self.bound.kind,
            confidence=self.bound.confidence,
            valid=self.bound.valid,
            flag=self.flagged,
        )


def canary_result_fields(
    record: LMProvenance, scores: Any, *, delta: float, confidence: float, copies: int, claimed: float | None, claimed_delta: float | None = None
) -> dict[str, Any]:
    """The :class:`CanaryOneRunResult` fields of the provenance's canaries and their scores: the statistics and the bound, computed once.

    With them: the bound's verdict against the user's end-to-end claim on a
    record (none without a claim), its ceiling (a perfect attack's bound on
    the same m, members, confidence and copies) and the AUC's sanity warnings.
    """
    auc, tpr, bound = audit_lm_scores(scores, record.included, delta=delta, confidence=confidence, copies=copies)
    claim = claim_of(claimed, claimed_delta, delta=delta)
    conversion = f"the bound on a group of {copies} copies converted to one record's ε by group privacy" if copies > 1 else None
    num_in = int(sum(record.included))
    value = one_run_record_ceiling(len(record.included), num_in=num_in, copies=copies, delta=delta, confidence=confidence, methods=bound.methods)
    design = f"m = {len(record.included)} canaries, {confidence:.0%}, {bound.num_tests} Bonferroni tests" + (f", {copies} copies" if copies > 1 else "")
    margin = auc_null_margin(num_in, len(record.included) - num_in, confidence)
    verdict = verdict_of(bound.epsilon, bound_delta=bound.delta, quantity="end-to-end", claim=claim, conversion=conversion)
    return {
        "claim_verdict": verdict,
        "ceiling": make_ceiling(bound.epsilon, value, raise_with="more canaries", design=design),
        "sanity_warnings": auc_warnings(auc, margin, members_higher=True, dp_claim=claim is not None, canary_audit=True),
        "design": record.design,
        "span": record.span,
        "num_canaries": len(record.included),
        "num_in": num_in,
        "auc": auc,
        "tpr_at_1pct_fpr": tpr,
        "bound": bound,
        "claimed_epsilon": claimed,
        "flagged": None if verdict is None else verdict.flagged,
        "inclusion_seed": record.inclusion_seed,
        "canary_seed": int(record.settings.get("canary_seed", record.seed)),
        "included": record.included,
        "scores": tuple(float(value) for value in scores),
        "canary_copies": copies,
    }


@dataclasses.dataclass(frozen=True)
class LMOneRunResult(CanaryOneRunResult):
    """The one-run audit of a fine-tuned LM's canaries; ``calibrated`` says whether the base model's log-likelihood was subtracted."""

    config: LMOneRunConfig
    model: str | None  # the --model directory (None: the embedded tiny GPT-2, or the synthetic corpus)
    provenance: str | None
    base_model: str | None
    synthetic: str | None  # the --synthetic corpus whose echoes of the canaries are scored
    calibrated: bool
    model_source: str
    threat_model: str = dataclasses.field(default=THREAT_MODEL, kw_only=True)

    def scored_from(self, copies: str) -> str:
        return f"from one fine-tuning run ({self.design} canaries{copies}; best of {', '.join(self.bound.methods)})"

    def inert_config_fields(self) -> frozenset[str]:
        """With the user's model or synthetic text, the settings that build the embedded default did not apply; without a family, its keys."""
        family = inert_family_fields(self.config)
        if self.model is None and self.provenance is None and self.synthetic is None:
            return family
        return EMBEDDED_ONLY | family


def check_family_copies(config: Any, copies: int) -> None:
    """Refuse a family with k > 1 copies of each included canary: the group of k is not in the claimed family, and privaudit does not convert it."""
    if config.family is not None and copies > 1:
        raise ValueError(
            f"`family` {config.family!r} needs one copy of each included canary, got {copies}: k copies bound a group of k, whose family is not "
            "the claimed one; give canaries inserted once (`canary_copies` 1, or `canary_repeats` 1 for the embedded default), or drop `family`"
        )


def with_family(fields: dict[str, Any], plan: FamilyPlan | None, config: Any) -> dict[str, Any]:
    """``fields`` of :func:`canary_result_fields` with, given a family ``plan``, its test on the same scores as the headline's verdict and ceiling."""
    if plan is None:
        return fields
    design = f"m = {fields['num_canaries']} canaries, {config.confidence:.0%}, 1 test"
    family, ceiling = family_headline(
        plan, config, fields["scores"], fields["included"], generic=fields["bound"], generic_verdict=fields["claim_verdict"],
        raise_with="more canaries", design=design,
    )  # fmt: skip
    # `flagged` stays the generic claim's against the generic bound; the headline's flag is the family verdict
    return {**fields, "family_test": family, "claim_verdict": family.verdict, "ceiling": ceiling}


def audit_lm_scores(scores: Any, included: Any, *, delta: float, confidence: float, copies: int = 1) -> tuple[float, float, OneRunLowerBound]:
    """(AUC, TPR at 1% FPR, one-run lower bound) of canary scores and their fair-coin inclusion.

    With ``copies`` > 1 (each included canary that many times in the
    training data) the bound is a record's ε, by group privacy
    (:func:`~privaudit.stats.one_run_group.per_record_one_run_lower_bound`).
    """
    scores, member = np.asarray(scores, dtype=np.float64), np.asarray(included, dtype=bool)
    if min(int(member.sum()), int((~member).sum())) < 2:
        raise ValueError(f"the inclusion draw left fewer than 2 canaries on a side ({int(member.sum())} in of {len(member)}); use more canaries")
    auc = roc_auc(scores[member], scores[~member])
    tpr = float(tpr_at_fpr(scores[member], scores[~member], 0.01)[0])
    # Steinke et al.'s test alone: it holds for any (ε, δ)-DP training (the one Panda et al. use); the f-DP test assumes a Gaussian trade-off curve
    bound = per_record_one_run_lower_bound(scores, member, copies=copies, delta=delta, confidence=confidence, methods=("steinke",))
    return float(auc), tpr, bound


def canary_copies(provenance: LMProvenance, *, given: int | None) -> tuple[int, Convention]:
    """How many times each included canary is in the fine-tuning data: the bound on k copies is a group's, so k is never assumed.

    ``privaudit canaries lm`` and the embedded defaults, which build the
    data, record it in the provenance's ``settings["copies"]``; otherwise
    ``given`` (``--canary-copies``) must say, and a value that contradicts
    the provenance is refused.

    >>> from privaudit.canaries.lm_provenance import LMProvenance
    >>> record = LMProvenance("random-tokens", "secret", ("p ",) * 4, ("a", "b", "c", "d"), (True, False, True, False), 0, 1, {})
    >>> canary_copies(record, given=3)[0]
    3
    >>> canary_copies(record, given=None)
    Traceback (most recent call last):
    ...
    ValueError: `--canary-copies` must be given (an integer >= 1): how many times each included canary is in your fine-tuning data; the provenance does not record it (privaudit canaries lm records it), and k copies bound a group of k, not a record
    """
    recorded = provenance.settings.get("copies")
    if recorded is not None and given is not None and int(recorded) != given:
        raise ValueError(f"`--canary-copies` must agree with the provenance, which inserted each included canary {recorded} time(s), got {given}")
    if given is not None:
        return given, explicit("canary copies", str(given), "--canary-copies")
    if recorded is None:
        raise ValueError(
            "`--canary-copies` must be given (an integer >= 1): how many times each included canary is in your fine-tuning data; "
            "the provenance does not record it (privaudit canaries lm records it), and k copies bound a group of k, not a record"
        )
    return int(recorded), checked(
        "canary copies", str(recorded), "recorded in the provenance by what built the fine-tuning data (privaudit canaries lm, an embedded default)"
    )
