"""Membership signals of text records under Hugging Face causal LMs, so that the ``mia`` audit's LiRA and RMIA run on text pools.

A record is one text (one line of the pool file). Its signal on a model is
the sequence's log-likelihood L, the **sum** over its tokens of the
natural-log probability of each token given those before it (the whole
text tokenised at once, after the special tokens that
:class:`~privaudit.models.hf.HFCausalLMScorer` decides; without a leading
special token the first token has no context and is not scored). L is the
negative per-sequence loss, and log Pr(x|θ) = L is what RMIA reads; the
audit's attacks take φ = log p − log(1 − p) with p = e^L
(:func:`~privaudit.stats.mia.logit_confidence_from_loss` of −L), so LOSS
scores a text by L itself. The sum, not the mean: the mean is the sum over
a count of tokens that is the same for a text on every model of one
tokenizer, so per-record LiRA ranks alike either way, while only the sum is
the sequence's probability that RMIA's ratio is built from (recorded as the
``sequence signal`` convention, a stated default).

The target and every reference model must share one tokenizer (the same
vocabulary) and the same special-token decision: otherwise their signals
score different token sequences, and the calibration would compare
different things (refused, naming the option).

>>> SEQUENCE_SIGNAL.decided
'default'
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from ..._core.conventions import Convention, default, explicit
from ..._core.extras import require
from ..._core.readers import read_npy
from ...canaries.lm_synthetic import read_synthetic_corpus
from ...models.hf import HFCausalLMScorer, quiet_loading
from ...models.loading import load_model
from ...stats.dataset_inference import MIN_RECORDS
from ...stats.mia import check_membership, logit_confidence_from_loss
from ..base import AuditRun, no_progress
from ..blind_text import blind_text_baseline
from ..lm.dataset_inference import lm_dataset_inference
from .result import MIAResult, evaluate, threat_model
from .summaries import HEADLINE_ATTACK, attack_summaries, most_vulnerable, top_ties
from .training import read_members, user_target_draws

__all__ = ["SEQUENCE_SIGNAL", "checked_references", "read_text_pool", "reference_directories", "run_text_pool_audit", "sequence_signals", "text_pool_signals"]

_LN2 = float(np.log(2.0))

SEQUENCE_SIGNAL = default(
    "sequence signal",
    "sum over the text's tokens of their natural-log probabilities (the negative per-sequence loss, nats); φ = logit of its probability",
    "the sum is the sequence's probability that RMIA's Pr(x|θ) reads; the mean divides by the same token count on every model of one tokenizer",
)


def read_text_pool(path: Any, name: str = "--data") -> list[str]:
    """The records of a text pool: the non-empty lines of a UTF-8 text file (an empty or binary file is refused, naming ``name``)."""
    return read_synthetic_corpus(path, name, what="records (texts)")


def sequence_signals(model: Any, tokenizer: Any, texts: list[str], *, bos: str = "auto", seed: int = 0) -> tuple[np.ndarray, Convention, tuple[int, ...]]:
    """(φ of each text on ``model``, the special-token convention, the leading token ids) — the module docstring's signal."""
    scorer = HFCausalLMScorer(model, tokenizer, bos=bos, seed=seed)
    losses = np.asarray(scorer.log_perplexity(texts, name="--data"), dtype=np.float64) * _LN2  # bits to nats, summed over the text's tokens
    return logit_confidence_from_loss(losses), scorer.special_tokens.convention, tuple(scorer.special_tokens.leading)


def reference_directories(directory: Any) -> list[Path]:
    """The reference models of ``directory``: its subdirectories holding a ``config.json`` (``save_pretrained``), in name order."""
    folder = Path(directory)
    found = sorted(path for path in folder.iterdir() if (path / "config.json").is_file()) if folder.is_dir() else []
    if not found:
        raise ValueError(f"`--reference-models` must be a directory of Hugging Face model directories (save_pretrained), got {str(directory)!r} with none")
    return found


def checked_references(reference_models: Any, reference_membership: Any, count: int) -> tuple[list[Path], np.ndarray]:
    """(the reference model directories, their (k, ``count``) membership), checked before any model loads."""
    directories = reference_directories(reference_models)
    raw = read_npy(reference_membership, "--reference-membership")  # the header bounded by the file's size before anything is allocated
    return directories, check_membership(raw, (len(directories), count), "--reference-membership")


def text_pool_signals(
    model: Any,
    reference_models: Any,
    reference_membership: Any,
    texts: list[str],
    *,
    bos: str = "auto",
    seed: int = 0,
    device: Any = None,
    loaded: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[Convention, ...]]:
    """(target φ (n,), reference φ (k, n), membership (k, n), conventions) of a text pool under saved causal LMs.

    ``model`` is the target's ``save_pretrained`` directory;
    ``reference_models`` a directory of such directories (name order), and
    ``reference_membership`` a ``.npy`` (k, n) of booleans, checked before any
    model loads. ValueErrors name ``--reference-models`` or
    ``--reference-membership``. ``loaded``: the target already loaded from
    ``model`` (:func:`~privaudit.models.loading.load_model`), not loaded again.
    """
    directories, membership = checked_references(reference_models, reference_membership, len(texts))
    target = loaded
    if target is None:
        with quiet_loading():
            target = load_model(model, kind="huggingface", device=device, option="--model")
    target_signals, special, leading = sequence_signals(target.model, target.tokenizer, texts, bos=bos, seed=seed)
    tokenizer: Any = target.tokenizer
    vocabulary = tokenizer.get_vocab()
    reference = []
    for directory in directories:
        with quiet_loading():
            loaded = load_model(directory, kind="huggingface", device=device, option="--reference-models")
        its_tokenizer: Any = loaded.tokenizer
        if its_tokenizer.get_vocab() != vocabulary:
            raise ValueError(
                f"`--reference-models`: {directory.name!r} has another tokenizer than the target's (`--model`): its signals would score other tokens"
            )
        signals, _, its_leading = sequence_signals(loaded.model, loaded.tokenizer, texts, bos=bos, seed=seed)
        if its_leading != leading:
            raise ValueError(f"`--reference-models`: {directory.name!r} puts special tokens {list(its_leading)} before each text, the target {list(leading)}")
        reference.append(signals)
    return target_signals, np.array(reference), membership, (special, SEQUENCE_SIGNAL)


def run_text_pool_audit(config: Any, *, progress: Any = None) -> Any:
    """The ``mia`` audit of a text pool: the user's causal LM target and references scored, nothing trained; an :class:`AuditRun`."""
    import time

    require("transformers", purpose="the mia audit of a causal language model")
    texts = read_text_pool(str(config.data))
    members = read_members(str(config.members), len(texts))
    num_population = int(round(config.population_fraction * len(texts)))
    if int((~members).sum()) < num_population + 5 or int(members.sum()) < 5:
        raise ValueError(
            f"`--members` must leave at least 5 members and {num_population + 5} non-members in the pool "
            f"({num_population} population samples and non-members to attack), got {int(members.sum())} members of {len(texts)}"
        )
    (progress or no_progress)("scoring texts", detail=f"{len(texts)} texts under the target and the reference models")
    start = time.perf_counter()
    checked_references(config.reference_models, config.reference_membership, len(texts))  # before the target loads
    with quiet_loading():
        loaded = load_model(config.model, kind="huggingface", option="--model")
    target, reference, membership, conventions = text_pool_signals(
        config.model, config.reference_models, config.reference_membership, texts, seed=config.seed, loaded=loaded
    )
    population, in_target = user_target_draws(config.seed, members, num_population)
    observations = evaluate(target, reference, membership, population, in_target, config)
    scores, is_member, rows = observations["scores"], observations["is_member"], observations["record_ids"]
    blind = blind_text_baseline(texts, is_member, seed=config.seed)  # the user gave the membership: do the texts alone tell it?
    inference = None
    skipped: tuple[str, ...] = ()
    if min(int(members.sum()), int((~members).sum())) >= MIN_RECORDS:
        (progress or no_progress)("dataset inference", detail=f"were the {int(members.sum())} members, as a set, used? (Maini et al.)")
        # the members against every other text of the pool: the blind baseline's two sets, so it checks the test's assumption
        inference = lm_dataset_inference(
            loaded.model, loaded.tokenizer, [texts[i] for i in np.flatnonzero(members)], [texts[i] for i in np.flatnonzero(~members)],
            blind=False, seed=config.seed, names=("--members (their texts in --data)", "--data (the texts not in --members)"),
        )  # fmt: skip
        inference = dataclasses.replace(inference, blind_baseline=blind)
    else:
        skipped = (f"dataset inference not run: it needs at least {MIN_RECORDS} members and {MIN_RECORDS} other texts in the pool",)
    given = (
        default("record id", "row index in the pool (from 0)", "a text pool has one record a line"),
        explicit("target membership", "rows listed in --members", "--members"),
        explicit("reference membership", "rows of --reference-membership, models in directory-name order", "--reference-membership"),
        default("score direction", "higher is member", "each attack's score is built so"),
    )
    result = MIAResult(
        attacks=tuple(attack_summaries(scores, is_member, config.confidence)),
        most_vulnerable=most_vulnerable(scores, is_member, rows, None, config.num_vulnerable),
        ties=top_ties(scores, config.num_vulnerable),
        num_references=len(reference),
        num_records=int(rows.size),
        num_members=int(is_member.sum()),
        num_population=int(population.sum()),
        confidence=config.confidence,
        threat_model=threat_model(config) + f"; the records are texts, each scored by {HEADLINE_ATTACK} from its summed token log-likelihood",
        seeds=(),
        num_trained=0,
        wall_time_s=time.perf_counter() - start,
        backend="local",
        config=config,
        conventions=given + conventions,
        blind_baseline=blind,
        dataset_inference=inference,
        sanity_warnings=(() if blind.warning() is None else (str(blind.warning()),)) + skipped,
    )
    return AuditRun("mia", config, result, observations=observations)
