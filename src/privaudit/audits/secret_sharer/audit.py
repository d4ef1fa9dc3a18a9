"""The Secret Sharer audit (Carlini et al.): insert canaries, train, measure exposure, try extraction.

Steps, each recorded in ``results.json``:

1. draw distinct canaries from a format and insert them on a repetition
   schedule into the corpus (default: CPython's documentation topics);
2. train the character LSTM on the augmented corpus (optionally with DP-SGD);
3. score every canary and the reference candidates (never inserted) by
   log-perplexity, and compute exposure three ways: exact over R (when
   |R| <= 10⁷), among sampled references, and by skew-normal extrapolation;
4. bound ε from the exposures (Jagielski's note; group privacy over the
   largest repetition count) next to the random-guessing baselines;
5. optionally run shortest-path extraction for each canary.

With ``run(..., model=DIR, provenance=FILE)`` steps 1-2 are the user's
(``privaudit canaries insert``, then their own training) and steps 3-5 run
on their Hugging Face model (:mod:`.secret_sharer_own`).
"""

from __future__ import annotations

import dataclasses
import io
import time

import numpy as np

from ..._core.validation import check_choice, check_count
from ...canaries import CanaryFormat, insert_canaries
from ...canaries.insertion import check_schedule
from ...canaries.text import MAX_ENUMERATION
from ...data import load_default_corpus
from ...models.char_lstm import TrainingConfig, train_char_lstm
from ...models.lm_scoring import CharLSTMScorer
from ...models.special_tokens import BOS_CHOICES
from ..base import Audit, AuditResult, AuditRun, Headline, Progress, no_progress
from ..verdicts import check_claim_fields, exposure_verdict
from .measure import MeasuredCanaries, exposure_fields, exposure_headline, exposure_observations, measure_with
from .own_model import run_own_model

__all__ = ["AUDIT", "SecretSharerAudit", "SecretSharerConfig", "SecretSharerResult"]


@dataclasses.dataclass(frozen=True)
class SecretSharerConfig:
    """Everything a Secret Sharer run depends on; serialised into results.json.

    ``bos`` and ``bos_corpus`` apply to the user's model only (``--model``):
    whether a BOS token went before each training line ("auto" checks,
    "prepend", "none"), and the lines the check scores (default: the corpus
    ``privaudit canaries insert`` wrote beside the provenance).
    """

    template: str = "my pin is {digits:6}"
    schedule: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    canaries_per_count: int = 1
    num_references: int = 20_000
    max_corpus_chars: int | None = None
    epochs: int = 20
    hidden: int = 256
    sequence_length: int = 80
    batch_size: int = 64
    learning_rate: float = 3e-3
    patience: int = 3
    target_epsilon: float | None = None
    compare_dp_epsilon: float | None = None
    target_delta: float = 1e-5
    extract: bool = True
    extraction_batch_size: int = 256
    max_extraction_queries: int = 200_000
    seed: int = 0
    secure_canaries: bool = False
    bos: str = "auto"
    bos_corpus: str | None = None
    claimed_epsilon: float | None = None  # the user's claim for a record, end to end; the exposure bound is a pure ε
    claimed_delta: float | None = None  # its δ; None: 0 (a pure bound cannot refute δ > 0)

    def __post_init__(self):
        CanaryFormat(self.template)  # validates the template
        check_claim_fields(self.claimed_epsilon, self.claimed_delta)
        check_choice(self.bos, "bos", BOS_CHOICES)
        if not self.schedule or min(int(count) for count in self.schedule) <= 0:
            raise ValueError(f"`schedule` repetition counts must all be >= 1, got {self.schedule!r}")
        check_schedule(self.schedule)  # integers only: 1.5 would be inserted once while 1.5 is recorded
        if self.max_corpus_chars is not None:
            check_count(self.max_corpus_chars, "max_corpus_chars", minimum=1)
        if self.num_references < 10:
            raise ValueError(f"`num_references` must be >= 10, got {self.num_references}")

    @classmethod
    def from_json(cls, path) -> SecretSharerConfig:
        return AUDIT.load_config(path)


@dataclasses.dataclass(frozen=True)
class SecretSharerResult(AuditResult):
    """Exposure of each canary (exact, sampled, extrapolated), the ε bound they imply, baselines and extraction.

    Each canary's ``log_perplexity_bits`` is the bits of its whole text
    after a newline under the character LSTM (:mod:`privaudit.models.lm_scoring`).
    """

    config: SecretSharerConfig
    canaries: tuple[dict, ...]  # one dict per canary
    space_size: int
    num_references: int
    baselines: dict
    epsilon_bound: dict
    extraction: dict | None
    skewnorm_fit: dict
    training: dict
    dp_comparison: dict | None
    seconds: float
    threat_model: str = "black-box, final model: the auditor scores texts by the model's log-perplexity"

    def headline(self) -> Headline:
        return exposure_headline(self.canaries, self.baselines)


def _reference_secrets(fmt: CanaryFormat, count: int, exclude: set, rng) -> list[tuple]:
    """Distinct secrets drawn uniformly from R, none of them inserted."""
    if count > fmt.space_size - len(exclude):
        raise ValueError(f"`num_references` must be <= |R| - canaries = {fmt.space_size - len(exclude)}, got {count}")
    chosen: dict = {}
    sizes = [len(symbols) for symbols in fmt.slots]
    while len(chosen) < count:
        draws = np.stack([rng.integers(size, size=2 * (count - len(chosen))) for size in sizes], axis=1)
        for row in map(tuple, draws.tolist()):
            if row not in exclude and row not in chosen:
                chosen[row] = None
                if len(chosen) == count:
                    break
    return list(chosen)


def _train(config: SecretSharerConfig, lines, target_epsilon, say, device):
    training = TrainingConfig(
        epochs=config.epochs,
        batch_size=config.batch_size,
        sequence_length=config.sequence_length,
        learning_rate=config.learning_rate,
        hidden=config.hidden,
        patience=config.patience,
        seed=config.seed,
        target_epsilon=target_epsilon,
        target_delta=config.target_delta,
    )
    label = "DP-SGD" if target_epsilon is not None else "training"
    say(label, 0, config.epochs, f"{len(lines)} lines")
    return train_char_lstm(lines, training, device=device, progress=lambda e, t, v: say(label, e, config.epochs, f"validation {v:.3f} nats"))


def _measure(model, fmt, records, references, config, say, device) -> MeasuredCanaries:
    """Score canaries and references under the character LSTM ``model``; exposures three ways; optional extraction."""
    return measure_with(config, CharLSTMScorer(model, device=device), fmt, records, references, max_exact=MAX_ENUMERATION, say=say)


def _run(config, say, started: float, device) -> AuditRun:
    import torch

    fmt = CanaryFormat(config.template)
    rng = np.random.default_rng(config.seed)
    corpus = load_default_corpus(max_chars=config.max_corpus_chars)
    inserted = insert_canaries(
        corpus, fmt, schedule=config.schedule, canaries_per_count=config.canaries_per_count, seed=config.seed, secure=config.secure_canaries
    )
    records = inserted.provenance.canaries
    canary_secrets = {tuple(record["secret"]) for record in records}
    # small formats cannot supply the default number of references: use every other candidate
    num_references = min(config.num_references, fmt.space_size - len(canary_secrets))
    references = _reference_secrets(fmt, num_references, canary_secrets, rng)

    model, report = _train(config, inserted.lines, config.target_epsilon, say, device)
    weights = io.BytesIO()
    torch.save({"state_dict": model.state_dict(), "hidden": config.hidden}, weights)
    measured = _measure(model, fmt, records, references, config, say, device)

    dp = None
    if config.compare_dp_epsilon is not None:
        dp_model, dp_report = _train(config, inserted.lines, config.compare_dp_epsilon, say, device)
        dp_canaries = _measure(dp_model, fmt, records, references, dataclasses.replace(config, extract=False), say, device).canaries
        dp = {"target_epsilon": config.compare_dp_epsilon, "epsilon": dp_report.epsilon, "canaries": dp_canaries}

    result = SecretSharerResult(
        config=config,
        **exposure_fields(measured, fmt, num_references=len(references), num_canaries=len(records), duplicates=max(int(c) for c in config.schedule)),
        training={
            "train_losses": report.train_losses,
            "validation_losses": report.validation_losses,
            "best_epoch": report.best_epoch,
            "epsilon": report.epsilon,
            "device": report.device,
        },
        dp_comparison=dp,
        seconds=time.perf_counter() - started,
    )
    result = exposure_verdict(result, result.epsilon_bound, claimed_epsilon=config.claimed_epsilon, claimed_delta=config.claimed_delta)
    observations = exposure_observations(measured)
    if dp is not None:
        observations["dp_canaries"] = dp_canaries
    return AuditRun(
        "secret-sharer",
        config,
        result,
        observations=observations,
        artifacts={"provenance.json": inserted.provenance.to_json().encode("utf-8"), "model.pt": weights.getvalue()},
        reproducible=not config.secure_canaries,  # OS-drawn canaries cannot be drawn again from the seed
    )


class SecretSharerAudit(Audit):
    """Secret Sharer: insert canaries, train a character LSTM, measure exposure, try extraction."""

    name = "secret-sharer"
    title = "Secret Sharer (canary exposure)"
    description = "Secret Sharer: insert canaries, train a character LSTM, measure exposure, try extraction."
    config_type = SecretSharerConfig
    result_type = SecretSharerResult
    default_resource = "secret-sharer.json"
    requires = ("torch",)

    def memory_estimate(self, config: SecretSharerConfig) -> tuple[int, str]:
        # LSTM weights with gradients and Adam's two moments (float32), and one batch of gate activations
        hidden, vocabulary = config.hidden, 128
        weights = 4 * hidden * (hidden + vocabulary + 1) + hidden * vocabulary
        activations = config.batch_size * config.sequence_length * 4 * hidden
        return 4 * (4 * weights + 2 * activations), f"`hidden` = {hidden}"

    tiny_overrides = {
        "template": "pin {digits:2}",
        "schedule": (1, 2),
        "num_references": 20,
        "max_corpus_chars": 2000,
        "epochs": 1,
        "hidden": 16,
        "extract": False,
    }

    def run(self, config: SecretSharerConfig, *, progress: Progress | None = None, device=None, model=None, provenance=None) -> AuditRun:
        """Insert, train, measure; the model and the provenance record come back as the run's artifacts.

        With ``model`` (a ``save_pretrained`` directory) and ``provenance``
        (what ``privaudit canaries insert`` wrote), nothing is inserted or
        trained: the canaries are measured under the user's model
        (:mod:`privaudit.audits.secret_sharer.own_model`).
        """
        if model is not None or provenance is not None:
            return run_own_model(config, self.default_config(), model, provenance, progress or no_progress, device)
        if config.bos != "auto" or config.bos_corpus is not None:
            raise ValueError("`--bos` and `--bos-corpus` describe your model's training format: they go with `--model`")
        return _run(config, progress or no_progress, time.perf_counter(), device)


AUDIT = SecretSharerAudit()
