"""A canary's signals from a released synthetic corpus (Meeus et al. 2025): the synthetic-text audit's scores, which lm-one-run's synthetic signal reads too."""

from __future__ import annotations

from ..._core.conventions import explicit
from ..._core.seeding import child_seeds
from ..._core.usercode import call_user
from ...canaries.lm_provenance import LMProvenance, read_lm_provenance
from ...canaries.lm_synthetic import canary_echo_scores, read_synthetic_corpus, signal_convention
from ...models.hf import HFCausalLMScorer
from ...models.loading import import_callable
from ..base import Progress, no_progress
from .result import canary_copies
from .scores import canary_log_likelihoods

__all__ = ["EOS", "MODEL_SIGNAL", "canary_signals", "score_synthetic_files"]


MODEL_SIGNAL = "model"  # the canaries scored by a model the user's function fine-tunes on the synthetic text (Mitchell et al.)

EOS = "<|endoftext|>"


def score_synthetic_files(
    provenance_file, synthetic, *, signal: str, n: int, copies: int | None, train: str | None = None, seed: int = 0, report: Progress = no_progress
):
    """(provenance, corpus, scores, conventions, (copies, its convention)) of the canaries in ``provenance_file`` against the text in ``synthetic``.

    Both files are read and checked, the canaries' copies in the fine-tuning
    data decided (:func:`~privaudit.audits.lm.result.canary_copies`), and
    the user's training function imported, before any scoring or training.
    """
    if provenance_file is None:
        raise ValueError("`--synthetic` needs `--provenance`, the canaries whose echoes are looked for")
    record = read_lm_provenance(provenance_file)
    corpus = read_synthetic_corpus(synthetic)
    decided = canary_copies(record, given=copies)
    return (record, corpus, *canary_signals(record, corpus, signal=signal, n=n, train=train, seed=seed, report=report), decided)


def canary_signals(record: LMProvenance, corpus: list[str], *, signal: str, n: int, train: str | None = None, seed: int = 0, report: Progress = no_progress):
    """(scores, conventions): each canary's signal against ``corpus``, by the text's n-grams or by the model ``train`` fine-tunes on it."""
    if signal == MODEL_SIGNAL:
        return _model_scores(record, corpus, train, seed, report)
    report("comparing the canaries with the synthetic text", detail=f"{len(corpus)} records")
    scores = canary_echo_scores(record.prefixes, record.secrets, record.span, corpus, signal=signal, n=n)
    return scores, (signal_convention(signal, n),)


def _model_scores(record: LMProvenance, corpus: list[str], train, seed: int, report: Progress):
    """The canaries' scored-span log-likelihoods under the model the user's ``train`` fine-tunes on ``corpus`` (Mitchell et al.'s synthetic-data audit)."""
    function = import_callable(train, "--synthetic-train")
    report("fine-tuning your model on the synthetic text", detail=f"{len(corpus)} records")
    returned = call_user("--synthetic-train", train, function, list(corpus), seed=child_seeds(seed, ["synthetic-train"])["synthetic-train"])
    if not (isinstance(returned, tuple) and len(returned) == 2 and hasattr(returned[0], "parameters") and callable(returned[1])):
        raise ValueError(
            f"`--synthetic-train` {train!r} must return (model, tokenizer): a Hugging Face causal LM and its tokenizer, got {type(returned).__name__}"
        )
    scorer = HFCausalLMScorer(*returned, bos="auto", bos_lines=list(corpus), seed=seed)  # the special tokens checked on the text it was trained on
    report("scoring the canaries", detail=f"{len(record.included)} canaries")
    scores = canary_log_likelihoods(scorer, record)
    what = "log-likelihood of the scored span under the model --synthetic-train fine-tuned on the synthetic text"
    return scores, (explicit("membership signal", what, "synthetic_signal 'model' and synthetic_train"), scorer.special_tokens.convention)
