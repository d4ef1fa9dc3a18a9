"""Phase two of the Secret Sharer on the user's corpus and Hugging Face model, and a Trainer callback.

:func:`measure_canaries` reads the provenance that
:func:`privaudit.canaries.corpus.insert_into_corpus` wrote, scores the
canaries and references under the user's model (full-text tokenisation,
:class:`~privaudit.models.hf.HFCausalLMScorer`), and reports exposure three
ways (exact over R when it is small, among sampled references, extrapolated),
the ε lower bound the exposures imply, and optionally shortest-path extraction.

:class:`CanaryExposureCallback` logs the canaries' sampled exposure during
``transformers.Trainer`` training, against references fixed at its creation.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from .._core.extras import require
from .._core.results import Result
from .._core.seeding import check_seed
from .._core.validation import check_count
from ..canaries.corpus import CorpusProvenance, read_provenance, reference_secrets

try:  # the callback subclasses transformers' base class when it is installed
    from transformers import TrainerCallback as _CallbackBase
except ImportError:  # pragma: no cover - exercised only without the hf extra
    _CallbackBase = object  # type: ignore[misc,assignment]

__all__ = ["CanaryExposureCallback", "CanaryMeasurement", "measure_canaries", "measure_canaries_with_scores"]


@dataclasses.dataclass(frozen=True)
class CanaryMeasurement(Result):
    """Exposure of each inserted canary under the user's model, the ε it implies, and extraction."""

    canaries: tuple  # one dict per canary
    space_size: int
    num_references: int
    epsilon_bound: dict  # stats.exposure.EpsilonFromExposure, group privacy over the largest repetition count
    skewnorm_fit: dict
    extraction: dict | None
    model_source: str
    corpus_sha256: str


def _scorer(model, tokenizer, batch_size, device, bos="auto", bos_lines=None, seed=0):
    from ..models.hf import HFCausalLMScorer
    from ..models.loading import LoadedModel, load_model

    if isinstance(model, (str, Path)):
        model = load_model(model, kind="huggingface", device=device, option="model")
    if isinstance(model, LoadedModel):
        if model.kind != "huggingface":
            raise ValueError(f"`model` must be a Hugging Face causal LM, got a {model.kind} model")
        return HFCausalLMScorer(model.model, model.tokenizer, bos=bos, bos_lines=bos_lines, seed=seed, batch_size=batch_size), model.source
    if tokenizer is None:
        raise ValueError("`tokenizer` must be given with a model object (or pass a save_pretrained directory)")
    return HFCausalLMScorer(model, tokenizer, bos=bos, bos_lines=bos_lines, seed=seed, batch_size=batch_size, device=device), type(model).__name__


def measure_canaries(model, provenance, **options) -> CanaryMeasurement:
    """Measure the inserted canaries under ``model`` (a save_pretrained directory, a LoadedModel, or a model with ``tokenizer``).

    ``provenance`` is the directory or ``provenance.json`` of phase one, or a
    :class:`~privaudit.canaries.corpus.CorpusProvenance`. Exact exposure
    scores all of R when |R| <= ``max_exact``; references are ``num_references``
    distinct non-canary secrets (all of them when R is smaller). The options
    are those of :func:`measure_canaries_with_scores`.
    """
    return measure_canaries_with_scores(model, provenance, **options)[0]


def measure_canaries_with_scores(
    model,
    provenance,
    *,
    tokenizer=None,
    num_references: int = 20_000,
    max_exact: int = 100_000,
    extract: bool = False,
    max_extraction_queries: int = 100_000,
    reuse: str = "tree",
    batch_size: int = 64,
    seed: int = 0,
    device=None,
    bos: str = "auto",
    bos_lines=None,
) -> tuple:
    """:func:`measure_canaries`, and the scores it ranked: ``(measurement, canary_bits, reference_bits, fit)``.

    ``bos`` and ``bos_lines`` decide the special tokens scored before each
    text, as :class:`~privaudit.models.hf.HFCausalLMScorer` does: "prepend"
    or "none" explicitly, or "auto" (checked on the tokenizer and, when it
    names a BOS it does not add, on ``bos_lines``: lines you trained on).

    ``fit`` is the skew-normal fit of the references
    (:func:`privaudit.stats.exposure.exposure_extrapolated`); the arrays are
    what figures are drawn from.
    """
    from ..observation.canary_exposure import measure_canaries as measure
    from ..stats.exposure import epsilon_from_exposure

    record = provenance if isinstance(provenance, CorpusProvenance) else read_provenance(provenance)
    num_references = check_count(num_references, "num_references", minimum=10)
    fmt = record.canary_format
    scorer, source = _scorer(model, tokenizer, batch_size, device, bos, bos_lines, seed)
    entries = record.provenance.canaries
    secrets = [tuple(entry["secret"]) for entry in entries]
    references = reference_secrets(fmt, min(num_references, fmt.space_size - len(set(secrets))), exclude=secrets, seed=seed)
    measured = measure(
        scorer,
        fmt,
        entries,
        references,
        max_exact=max_exact,
        extract=extract,
        extraction_batch_size=batch_size,
        max_extraction_queries=max_extraction_queries,
        reuse=reuse,
    )
    canary_bits, reference_bits, extrapolated = measured.canary_bits, measured.reference_bits, measured.fit
    bound = epsilon_from_exposure(canary_bits, reference_bits, duplicates=max(entry["repetitions"] for entry in entries))
    measurement = CanaryMeasurement(
        canaries=measured.canaries,
        space_size=fmt.space_size,
        num_references=len(references),
        epsilon_bound=bound.to_dict(),
        skewnorm_fit={"shape": extrapolated.shape, "loc": extrapolated.loc, "scale": extrapolated.scale, "ks_statistic": extrapolated.ks_statistic},
        extraction=measured.extraction,
        model_source=source,
        corpus_sha256=record.corpus_sha256,
    )
    return measurement, canary_bits, reference_bits, extrapolated


def _bos_for_training(tokenizer, bos: str) -> str:
    """``bos``, refused when it is "auto" and only a trained model could settle it (a BOS declared but not added)."""
    from .._core.validation import check_choice
    from ..models.special_tokens import BOS_CHOICES, added_tokens

    check_choice(bos, "bos", BOS_CHOICES)
    if bos == "auto" and not added_tokens(tokenizer)[0] and getattr(tokenizer, "bos_token_id", None) is not None:
        raise ValueError(
            f"`bos` must be 'prepend' or 'none' for this tokenizer: it declares BOS {tokenizer.bos_token!r} but does not add it, "
            "and a model still in training cannot show which way it is trained; say whether your training texts start with it"
        )
    return bos


class CanaryExposureCallback(_CallbackBase):
    """A ``transformers.TrainerCallback`` that measures the canaries' sampled exposure every ``every_steps`` steps.

    Each measurement is appended to :attr:`history` as ``{"step", "exposures"}``
    and its mean and max are added to the Trainer's next log. The model's
    train mode is restored after each measurement, and nothing is trained.
    Nothing draws from a global RNG: the references come from a numpy
    Generator seeded with ``seed`` (kept in :attr:`seed`), and scoring runs in
    eval mode without gradients (no dropout draws), so the Trainer's run is bit
    for bit the run without the callback.
    """

    def __init__(
        self,
        provenance,
        tokenizer,
        *,
        every_steps: int = 100,
        num_references: int = 1000,
        seed: int = 0,
        batch_size: int = 64,
        bos: str = "auto",
    ):
        require("transformers", purpose="the Trainer callback")
        self.record = provenance if isinstance(provenance, CorpusProvenance) else read_provenance(provenance)
        self.tokenizer = tokenizer
        self.every_steps = check_count(every_steps, "every_steps", minimum=1)
        fmt = self.record.canary_format
        self.secrets = [tuple(entry["secret"]) for entry in self.record.provenance.canaries]
        count = min(check_count(num_references, "num_references", minimum=10), fmt.space_size - len(set(self.secrets)))
        self.seed = check_seed(seed)
        self.references = reference_secrets(fmt, count, exclude=self.secrets, seed=self.seed)
        self.batch_size = batch_size
        self.bos = _bos_for_training(tokenizer, bos)
        self.history: list[dict] = []
        self._unlogged: dict | None = None

    def measure(self, model, step: int) -> dict:
        """Sampled exposure (bits) of each canary under ``model`` now."""
        from ..models.hf import HFCausalLMScorer
        from ..stats.exposure import exposure

        scorer = HFCausalLMScorer(model, self.tokenizer, bos=self.bos, seed=self.seed, batch_size=self.batch_size)
        fmt = self.record.canary_format
        canary_bits = scorer.format_log_perplexities(fmt, secrets=self.secrets, reuse="prefix")
        reference_bits = scorer.format_log_perplexities(fmt, secrets=self.references, reuse="prefix")
        entry = {"step": int(step), "exposures": exposure(canary_bits, reference_bits).exposures.tolist()}
        self.history.append(entry)
        self._unlogged = entry
        return entry

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if model is not None and state.global_step % self.every_steps == 0:
            self.measure(model, state.global_step)
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is not None and self._unlogged is not None:
            exposures = self._unlogged["exposures"]
            logs["canary_exposure_mean"] = float(np.mean(exposures))
            logs["canary_exposure_max"] = float(np.max(exposures))
            self._unlogged = None
        return control
