"""Scoring Hugging Face causal language models: log-perplexity in bits of full texts, with KV-cache reuse.

Any ``transformers`` causal LM with a fast tokenizer works. A canary is
scored as the model saw it in training: its *full text*, prefix and secret
tokenised together, after the special tokens the model saw before each text
(decided once per scorer and recorded, :mod:`privaudit.models.special_tokens`).
Tokenising prefix and secret apart is wrong with BPE, whose merges cross the
prefix/secret boundary ("pin:" + "12" is not "pin" + ":1" + "2").

**What "log-perplexity" means here.** A format's score of a candidate is the
bits of its tokens after ``P``, the special tokens and the prefix's tokens
that the prefix alone and the format's candidates tokenise alike
(:meth:`HFCausalLMScorer.shared_prefix`): the secret (and any text of the
format after it) *given the prefix*, not the whole text. The whole text's
log-perplexity is this plus ``bits(P)``, the same for every candidate, so
ranks and exposures are those of whole texts
(:meth:`HFCausalLMScorer.scored_span` records this). Tokens after the text,
such as an EOS the model was trained with, are not scored: a causal LM's
predictions of the text's tokens do not see them.

``P`` runs through the model once and its key/value cache is reused for every
candidate whose tokens start with ``P`` (checked); any other candidate is
scored from its first token and ``P``'s bits are taken off, so differences
between candidates are differences of full-text log-perplexities.

Three ways to run the candidates (``reuse``): ``"none"`` (each full text from
scratch), ``"prefix"`` (the cache of ``P``) and ``"tree"`` (the candidates'
tokens after ``P`` form a trie, walked level by level with the cache, so
candidates sharing their first tokens share their computation).
"""

from __future__ import annotations

import contextlib

import numpy as np

from .._core.conventions import Convention, default
from .._core.validation import check_choice
from ..canaries.text import CanaryFormat
from .device import pad_rows, require_torch
from .lm_scoring import _slot_pieces
from .special_tokens import decide_special_tokens

__all__ = ["HFCausalLMScorer", "quiet_loading"]

_LN2 = np.log(2.0)
REUSE = ("none", "prefix", "tree")


@contextlib.contextmanager
def quiet_loading():
    """Hold back transformers' and torch's log records, Python warnings and progress bars while a model loads.

    If loading fails, they are dropped, so the error is the one line stderr
    shows (transformers warns about a config before it finds no weights). If
    it succeeds, they are shown then: a load report may matter.
    """
    import logging
    import warnings

    from transformers.utils import logging as hf_logging

    held: list[logging.LogRecord] = []

    class Hold(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            held.append(record)

    loggers = [logging.getLogger(name) for name in ("transformers", "torch")]
    saved = [(logger, logger.handlers[:], logger.propagate) for logger in loggers]
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    for logger in loggers:
        logger.handlers, logger.propagate = [Hold()], False
    try:
        with warnings.catch_warnings(record=True) as caught:
            yield
    finally:
        for logger, handlers, propagate in saved:
            logger.handlers, logger.propagate = handlers, propagate
        if bars:
            hf_logging.enable_progress_bar()
    for record in held:  # reached only when loading succeeded
        logging.getLogger(record.name).handle(record)
    for warning in caught:
        warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)


def _common_prefix(rows) -> list[int]:
    first = list(rows[0])
    length = len(first)
    for row in rows[1:]:
        length = min(length, len(row))
        for index in range(length):
            if row[index] != first[index]:
                length = index
                break
    return first[:length]


def _select(cache, index):
    """A new DynamicCache holding rows ``index`` (repeats allowed) of ``cache``."""
    from transformers import DynamicCache

    return DynamicCache(ddp_cache_data=[(layer.keys.index_select(0, index), layer.values.index_select(0, index)) for layer in cache.layers])


def _cache_keyword(model) -> str:
    """The forward argument that takes a KV cache: ``cache`` since transformers renamed it, ``past_key_values`` before."""
    import inspect

    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in parameters else "past_key_values"


def _returned_cache(output):
    """The KV cache a forward call returned, under either name."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


class HFCausalLMScorer:
    """Batched log-perplexity (bits) of texts and of format candidates under a causal LM.

    The special tokens before each text are decided here, once
    (:func:`~privaudit.models.special_tokens.decide_special_tokens`): ``bos``
    is "auto" (check), "prepend" or "none"; ``bos_lines`` are lines the model
    was trained on (or a function that reads them), scored both ways, with
    ``seed`` drawing a sample, only when the tokenizer declares a BOS that it
    does not add. :attr:`special_tokens` holds the decision.

    The model stays on its device, and its train/eval mode is restored after each call.
    """

    def __init__(self, model, tokenizer, *, bos: str = "auto", bos_lines=None, seed: int = 0, device=None, batch_size: int = 64):
        self.torch = require_torch()
        if device is not None:
            model = model.to(device)
        self.model = model
        self._cache_keyword = _cache_keyword(model)
        self.device = next(model.parameters()).device
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.queries = 0  # sequences (or trie nodes) run through the model
        self._prefix_states: dict = {}
        config = model.config
        self.context_limit = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
        self.special_tokens = decide_special_tokens(tokenizer, bos=bos, lines=bos_lines, line_bits=self._line_bits, max_tokens=self.context_limit, seed=seed)
        self._leading: list[int] = list(self.special_tokens.leading)

    # -- tokens ----------------------------------------------------------------------
    def _ids(self, text: str) -> list[int]:
        """The text's tokens as the model saw them: the decided special tokens, then the text tokenised whole."""
        return self._leading + list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def token_ids(self, text: str) -> list[int]:
        """The ids the model sees for ``text``: the decided special tokens, then the text tokenised whole."""
        return self._ids(text)

    @contextlib.contextmanager
    def _evaluating(self):
        training = self.model.training
        self.model.eval()
        try:
            with self.torch.no_grad():
                yield
        finally:
            self.model.train(training)

    def _check_texts_fit(self, rows, name: str) -> None:
        """Refuse a text longer than the model's context (its position table would be indexed past its end), naming ``name`` and the first such text."""
        if self.context_limit is None:
            return
        long = [index for index, row in enumerate(rows) if len(row) > self.context_limit]
        if long:
            raise ValueError(
                f"`{name}` must hold texts that each fit the model's context of {self.context_limit} tokens, got {len(long)} longer "
                f"(the first is text {long[0]}, {len(rows[long[0]])} tokens, counted from 0): split longer texts into pieces"
            )

    def _check_fits(self, rows) -> None:
        width = max(len(row) for row in rows)
        if self.context_limit is not None and width > self.context_limit:
            raise ValueError(f"canaries must fit the model's context of {self.context_limit} tokens, got {width}")

    def shared_prefix(self, prefix: str, probes) -> list[int]:
        """``P``: the longest run of ``prefix``'s tokens that starts the tokens of every probe text."""
        if not prefix and not self._leading:
            raise ValueError("`prefix` must not be empty: the secret's first token needs a context to be scored")
        shared = _common_prefix([self._ids(prefix)] + [self._ids(text) for text in probes])
        if not shared:
            raise ValueError(f"`prefix` {prefix!r} shares no token with its canaries' full texts; give the format a longer prefix")
        return shared

    def format_prefix(self, fmt: CanaryFormat) -> list[int]:
        """``P`` for a format, from probes that depend on the format only: every symbol of the first slot."""
        first = fmt.slots[0]
        probes = [fmt.fill((symbol,) + (0,) * (fmt.num_slots - 1)) for symbol in range(min(len(first), 256))]
        return self.shared_prefix(fmt.prefix, probes)

    # -- model calls -----------------------------------------------------------------
    def _sum_log_probs(self, logits, targets, mask):
        log_probs = self.torch.log_softmax(logits.double(), dim=-1)
        picked = log_probs.gather(2, targets[:, :, None]).squeeze(-1)
        return (picked * mask).sum(1)

    def _full_bits(self, rows, skip: int = 1) -> np.ndarray:
        """Bits of each token row from its token ``skip`` on (at least 1: the first has no context), each row from scratch."""
        out = np.zeros(len(rows))
        for start in range(0, len(rows), self.batch_size):
            chunk = rows[start : start + self.batch_size]
            tokens, mask = pad_rows(chunk, self.device)
            logits = self.model(input_ids=tokens, attention_mask=mask.long()).logits
            self.queries += len(chunk)
            scored = mask[:, 1:].clone()
            scored[:, : skip - 1] = 0.0
            out[start : start + len(chunk)] = -self._sum_log_probs(logits[:, :-1], tokens[:, 1:], scored).cpu().numpy() / _LN2
        return out

    def _line_bits(self, rows, skip: int) -> np.ndarray:
        with self._evaluating():
            return self._full_bits(rows, skip)

    def _prefix_state(self, shared: list[int]):
        """(cache, next-token log-probs, bits) of ``P``, computed once per ``P``."""
        key = tuple(shared)
        if key not in self._prefix_states:
            out = self.model(input_ids=self.torch.as_tensor([shared], device=self.device), use_cache=True)
            self.queries += 1
            log_probs = self.torch.log_softmax(out.logits[0].double(), dim=-1)
            targets = self.torch.as_tensor(shared[1:], device=self.device, dtype=self.torch.long)
            bits = -float(log_probs[:-1].gather(1, targets[:, None]).sum()) / _LN2 if len(shared) > 1 else 0.0
            self._prefix_states = {key: (_returned_cache(out), log_probs[-1:], bits)}
        return self._prefix_states[key]

    def _tails_prefix(self, state, tails) -> np.ndarray:
        """Bits of each tail after ``P``: padded batches from the repeated cache of ``P``."""
        torch = self.torch
        cache, last, _ = state
        out = np.zeros(len(tails))
        for start in range(0, len(tails), self.batch_size):
            chunk = tails[start : start + self.batch_size]
            n, width = len(chunk), max(len(tail) for tail in chunk)
            tokens, mask = pad_rows(chunk, self.device)
            first = last[0, tokens[:, 0]]
            rest = 0.0
            if width > 1:
                past = cache.get_seq_length()
                attention = torch.ones((n, past + width), dtype=torch.long, device=self.device)
                attention[:, past:] = mask.long()
                repeated = _select(cache, torch.zeros(n, dtype=torch.long, device=self.device))
                logits = self.model(input_ids=tokens, attention_mask=attention, use_cache=True, **{self._cache_keyword: repeated}).logits
                rest = self._sum_log_probs(logits[:, :-1], tokens[:, 1:], mask[:, 1:])
            self.queries += n
            out[start : start + n] = -(first + rest).cpu().numpy() / _LN2
        return out

    def _tails_tree(self, state, tails) -> np.ndarray:
        """Bits of each tail after ``P``, walking the trie of tails depth first, ``batch_size`` nodes a call."""
        torch = self.torch
        children: list[dict] = [{}]
        ends: list[list[int]] = [[]]
        for index, tail in enumerate(tails):
            node = 0
            for token in tail:
                if token not in children[node]:
                    children[node][token] = len(children)
                    children.append({})
                    ends.append([])
                node = children[node][token]
            ends[node].append(index)
        out = np.zeros(len(tails))
        cache, last, _ = state
        stack = [([0], cache, last, torch.zeros(1, dtype=torch.float64, device=self.device))]
        while stack:
            nodes, cache, last, totals = stack.pop()
            rows, tokens, kids = [], [], []
            for row, node in enumerate(nodes):
                for token, child in children[node].items():
                    rows.append(row)
                    tokens.append(token)
                    kids.append(child)
            rows_t = torch.as_tensor(rows, device=self.device)
            tokens_t = torch.as_tensor(tokens, device=self.device)
            child_totals = totals[rows_t] - last[rows_t, tokens_t] / _LN2
            values = child_totals.cpu().numpy()
            for position, child in enumerate(kids):
                out[ends[child]] = values[position]
            inner = [position for position, child in enumerate(kids) if children[child]]
            for start in range(0, len(inner), self.batch_size):
                chosen = torch.as_tensor(inner[start : start + self.batch_size], device=self.device)
                selected = _select(cache, rows_t[chosen])
                logits = self.model(input_ids=tokens_t[chosen][:, None], use_cache=True, **{self._cache_keyword: selected}).logits
                self.queries += len(chosen)
                next_last = torch.log_softmax(logits[:, -1].double(), dim=-1)
                stack.append(([kids[p] for p in chosen.tolist()], selected, next_last, child_totals[chosen]))
        return out

    def _score_rows(self, shared: list[int], rows, reuse: str) -> np.ndarray:
        """``full-text bits(row) − bits(P)`` for each token row; the cache of ``P`` serves rows that start with it."""
        self._check_fits(rows)
        out = np.empty(len(rows))
        cut = len(shared)
        cached = [index for index, row in enumerate(rows) if reuse != "none" and len(row) > cut and list(row[:cut]) == shared]
        scratch = sorted(set(range(len(rows))) - set(cached))
        state = self._prefix_state(shared)
        if cached:
            tails = [tuple(rows[index][cut:]) for index in cached]
            out[cached] = (self._tails_tree if reuse == "tree" else self._tails_prefix)(state, tails)
        if scratch:
            out[scratch] = self._full_bits([list(rows[index]) for index in scratch]) - state[2]
        return out

    # -- public ----------------------------------------------------------------------
    def log_perplexity(self, texts, *, name: str = "texts") -> np.ndarray:
        """Bits for each whole text: all its tokens given the special tokens before it, else from its second token on (``name``: what errors call the texts)."""
        texts = list(texts)
        encoded = [self._ids(text) for text in texts]
        if not encoded or min(len(ids) for ids in encoded) < 2:
            raise ValueError("`texts` must each have at least 2 tokens with the special tokens before them")
        self._check_texts_fit(encoded, name)
        with self._evaluating():
            return self._full_bits(encoded)

    def token_log_probs(self, texts, *, name: str = "texts") -> list[np.ndarray]:
        """Natural-log probability of each scored token of each whole text: the terms :meth:`log_perplexity` sums (in bits)."""
        texts = list(texts)
        encoded = [self._ids(text) for text in texts]
        if not encoded or min(len(ids) for ids in encoded) < 2:
            raise ValueError("`texts` must each have at least 2 tokens with the special tokens before them")
        self._check_texts_fit(encoded, name)
        out: list[np.ndarray] = []
        with self._evaluating():
            for start in range(0, len(encoded), self.batch_size):
                chunk = encoded[start : start + self.batch_size]
                tokens, mask = pad_rows(chunk, self.device)
                logits = self.model(input_ids=tokens, attention_mask=mask.long()).logits
                self.queries += len(chunk)
                picked = self.torch.log_softmax(logits[:, :-1].double(), dim=-1).gather(2, tokens[:, 1:, None]).squeeze(-1).cpu().numpy()
                out.extend(row[: len(ids) - 1] for row, ids in zip(picked, chunk, strict=True))
        return out

    def completion_log_perplexities(self, prefix: str, completions, *, reuse: str = "prefix") -> np.ndarray:
        """Bits of each ``prefix + completion`` after the tokens it shares with the prefix (full-text tokenisation).

        ``P`` is shared by all the texts of this call: compare values within one call, or use
        :meth:`format_log_perplexities`, whose ``P`` depends on the format only.
        """
        texts = [prefix + completion for completion in completions]
        if not texts:
            raise ValueError("`completions` must not be empty")
        return self._score_texts(self.shared_prefix(prefix, texts), texts, reuse)

    def format_log_perplexities(self, fmt: CanaryFormat, secrets=None, *, reuse: str = "tree") -> np.ndarray:
        """Bits of format candidates after ``P``: all of R (in ``fmt.enumerate()`` order) or the given secrets."""
        texts = [canary.text for canary in fmt.enumerate()] if secrets is None else [fmt.fill(secret) for secret in secrets]
        if not texts:
            raise ValueError("`secrets` must not be empty")
        return self._score_texts(self.format_prefix(fmt), texts, reuse)

    def scored_span(self, fmt: CanaryFormat) -> Convention:
        """The span of a canary that :meth:`format_log_perplexities` scores, as a stated default, with ``bits(P)``."""
        shared = self.format_prefix(fmt)
        with self._evaluating():
            prefix_bits = self._prefix_state(shared)[2]
        return default(
            "scored span",
            f"the canary's tokens after P = its first {len(shared)} tokens (special tokens and prefix): the secret given the prefix",
            f"the whole text's log-perplexity adds bits(P) = {prefix_bits:.6g}, the same for every candidate, so ranks and exposures are equal either way; "
            "tokens after the canary (an EOS) are not scored and cannot change a causal LM's scores of the canary",
        )

    def _score_texts(self, shared, texts, reuse) -> np.ndarray:
        check_choice(reuse, "reuse", REUSE)
        with self._evaluating():
            return self._score_rows(shared, [self._ids(text) for text in texts], reuse)

    def extraction_scorer(self, fmt: CanaryFormat):
        """A scorer(prefixes, slot) → natural-log weights of slot symbols, for :mod:`privaudit.extraction`.

        A partial candidate's weight is the score of its settled tokens: those
        of its text but the last (which the next symbol may merge into), all of
        them at a full candidate. Edge weights are differences of these, so a
        full candidate's path sums to its exact :meth:`format_log_perplexities`
        score; an edge can be slightly negative when a merge re-tokenises,
        which the batched search tolerates. Each call scores its new nodes in
        batches from the cache of ``P``.
        """
        pieces = _slot_pieces(fmt)
        shared = self.format_prefix(fmt)
        last_slot = fmt.num_slots - 1
        bits = {(): 0.0}

        def scorer(prefixes, slot):
            prefixes = [tuple(prefix) for prefix in prefixes]
            missing = [prefix + (symbol,) for prefix in prefixes for symbol in range(len(pieces[slot])) if prefix + (symbol,) not in bits]
            if missing:
                rows = []
                for node in missing:
                    ids = self._ids(fmt.prefix + "".join(pieces[j][s] for j, s in enumerate(node)))
                    rows.append(ids if len(node) - 1 == last_slot else ids[:-1])
                with self._evaluating():
                    values = self._score_rows(shared, rows, "prefix")
                bits.update(zip(missing, values.tolist(), strict=True))
            out = np.array([[bits[prefix] - bits[prefix + (symbol,)] for symbol in range(len(pieces[slot]))] for prefix in prefixes])
            return out * _LN2

        return scorer
