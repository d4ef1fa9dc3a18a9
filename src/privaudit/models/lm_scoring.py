"""Log-perplexity of sequences under a character LSTM, with prefix-state reuse (Secret Sharer Def. 1).

Log-perplexity is in bits: Px(x₁…xₙ) = -Σ log2 Pr(xᵢ | x₁…xᵢ₋₁), conditioned on a
``context`` (a newline: canaries are lines of the corpus).

A format's candidates share the text before the first hole, and candidates
that agree on their first k symbols share more. :class:`CharLSTMScorer`
runs the shared part once and carries the LSTM state down the tree of
candidates, so scoring all of R costs about |R| · (1 + 1/|Σ| + …) steps
instead of |R| · (length of a canary).
"""

from __future__ import annotations

import numpy as np

from ..canaries.text import CanaryFormat
from .char_lstm import CharVocabulary
from .device import default_device, pad_rows, require_torch

__all__ = ["CharLSTMScorer"]

_LN2 = np.log(2.0)


def _slot_pieces(fmt: CanaryFormat) -> list[list[str]]:
    """For each slot, the text each symbol appends, literal text after its hole included."""
    import re

    holes = list(re.finditer(r"\{(\w+):(\d+)\}", fmt.template))
    pieces, slots = [], fmt.slots
    slot = 0
    for number, hole in enumerate(holes):
        kind, length = hole.group(1), int(hole.group(2))
        after_end = holes[number + 1].start() if number + 1 < len(holes) else len(fmt.template)
        literal = fmt.template[hole.end() : after_end]
        for position in range(length):
            separator = " " if kind == "words" and position < length - 1 else ""
            tail = literal if position == length - 1 else separator
            pieces.append([symbol + tail for symbol in slots[slot]])
            slot += 1
    return pieces


class CharLSTMScorer:
    """Scores texts and format candidates with a trained character LSTM.

    ``batch_size`` bounds how many sequences go through the LSTM at once.
    """

    def __init__(self, model, vocabulary: CharVocabulary | None = None, *, context: str = "\n", device=None, batch_size: int = 8192):
        self.torch = require_torch()
        vocabulary = vocabulary or CharVocabulary()
        self.device = default_device(device)
        self.model = model.to(self.device).eval()
        self.vocabulary = vocabulary
        self.context = context
        self.batch_size = batch_size
        self.steps = 0  # characters run through the LSTM: the cost that prefix reuse saves

    # -- low level -----------------------------------------------------------------
    def _run(self, tokens, state):
        """Run token rows (n, L) from states; return (log-probs of each next char (n, L, V), final state)."""
        torch = self.torch
        with torch.no_grad():
            logits, state = self.model(tokens.to(self.device), state)
            self.steps += tokens.numel()
            return torch.log_softmax(logits.double(), dim=-1), state

    def _initial(self, text: str):
        tokens = self.torch.as_tensor([self.vocabulary.encode(self.context + text)])
        log_probs, state = self._run(tokens, None)
        return log_probs[:, -1], state  # next-char log-probs after the text, and the state

    def _pieces_log_probs(self, last, state, pieces: list[str]):
        """log P(piece | node) for every node × piece, and the states after each piece.

        ``last``: (n, V) next-char log-probs at each node; ``state``: LSTM state at each node.
        Returns (n, len(pieces)) log-probs and, per piece, (last, state) after it.
        """
        torch = self.torch
        n = last.shape[0]
        out = torch.zeros((n, len(pieces)), dtype=torch.float64, device=self.device)
        after = []
        for j, piece in enumerate(pieces):
            codes = torch.as_tensor(self.vocabulary.encode(piece), device=self.device)
            out[:, j] = last[:, codes[0]]
            if len(piece) == 1:
                after.append((codes, None))  # type: ignore[arg-type]
                continue
            log_probs, new_state = self._run(codes[None, :].expand(n, -1), state)
            out[:, j] += log_probs[:, :-1].gather(2, codes[1:][None, :, None].expand(n, -1, 1)).squeeze(-1).sum(1)
            after.append((codes, (log_probs[:, -1], new_state)))  # type: ignore[arg-type]
        return out, after

    @staticmethod
    def _expand_state(state, repeats: int, torch):
        return tuple(part.repeat_interleave(repeats, dim=1) for part in state)

    # -- public --------------------------------------------------------------------
    def log_perplexity(self, texts) -> np.ndarray:
        """Log-perplexity (bits) of each full text after the context, each text run from scratch."""
        torch = self.torch
        texts = list(texts)
        out = np.empty(len(texts))
        context = self.vocabulary.encode(self.context)
        for start in range(0, len(texts), self.batch_size):
            chunk = texts[start : start + self.batch_size]
            encoded = [context + self.vocabulary.encode(text) for text in chunk]
            width = max(len(row) for row in encoded)
            tokens = torch.zeros((len(chunk), width), dtype=torch.long)
            mask = torch.zeros((len(chunk), width - 1), dtype=torch.float64)
            for row, codes in enumerate(encoded):
                tokens[row, : len(codes)] = torch.as_tensor(codes)
                mask[row, len(context) - 1 : len(codes) - 1] = 1.0
            log_probs, _ = self._run(tokens[:, :-1], None)
            picked = log_probs.gather(2, tokens[:, 1:, None].to(self.device)).squeeze(-1).cpu()
            out[start : start + len(chunk)] = -(picked * mask).sum(1).numpy() / _LN2
        return out

    def format_log_perplexities(self, fmt: CanaryFormat, secrets=None) -> np.ndarray:
        """Log-perplexity (bits) of format candidates, with prefix reuse.

        ``secrets=None`` scores all of R (in the order of ``fmt.enumerate()``),
        walking the candidate tree level by level; a list of secrets is scored
        from the shared format-prefix state only.
        """
        torch = self.torch
        pieces = _slot_pieces(fmt)
        last, state = self._initial(fmt.prefix)
        prefix_bits = float(self.log_perplexity([fmt.prefix])[0]) if fmt.prefix else 0.0
        if secrets is not None:
            return prefix_bits + self._score_secrets(last, state, pieces, [tuple(s) for s in secrets])
        totals = torch.zeros(1, dtype=torch.float64, device=self.device)
        for slot, slot_pieces in enumerate(pieces):
            final = slot == len(pieces) - 1
            new_totals, new_last, new_state = [], [], []
            for start in range(0, totals.shape[0], max(1, self.batch_size // len(slot_pieces))):
                stop = start + max(1, self.batch_size // len(slot_pieces))
                chunk_state = tuple(part[:, start:stop] for part in state)
                log_p, after = self._pieces_log_probs(last[start:stop], chunk_state, slot_pieces)
                new_totals.append((totals[start:stop, None] - log_p / _LN2).reshape(-1))
                if final:
                    continue
                # children in (node, symbol) order: advance every node by every piece
                n = log_p.shape[0]
                lasts, states = [], []
                for codes, advanced in after:
                    if advanced is None:
                        step_log_probs, step_state = self._run(codes[None, :].expand(n, -1), chunk_state)
                        advanced = (step_log_probs[:, -1], step_state)
                    lasts.append(advanced[0])
                    states.append(advanced[1])
                new_last.append(torch.stack(lasts, 1).reshape(n * len(slot_pieces), -1))
                new_state.append(tuple(torch.stack([s[k] for s in states], 2).reshape(s0.shape[0], -1, s0.shape[-1]) for k, s0 in enumerate(states[0])))
            totals = torch.cat(new_totals)
            if not final:
                last = torch.cat(new_last)
                state = tuple(torch.cat([s[k] for s in new_state], 1) for k in range(len(new_state[0])))
        return prefix_bits + totals.cpu().numpy()

    def _score_secrets(self, last, state, pieces, secrets) -> np.ndarray:
        texts = ["".join(pieces[slot][symbol] for slot, symbol in enumerate(secret)) for secret in secrets]
        out = np.empty(len(texts))
        torch = self.torch
        for start in range(0, len(texts), self.batch_size):
            chunk = texts[start : start + self.batch_size]
            tokens, mask = pad_rows([self.vocabulary.encode(text) for text in chunk])
            width, n = tokens.shape[1], len(chunk)
            first = last.expand(n, -1).gather(1, tokens[:, :1].to(self.device)).squeeze(1).cpu()
            expanded = tuple(part.expand(-1, n, -1).contiguous() for part in state)
            log_probs, _ = self._run(tokens[:, :-1], expanded) if width > 1 else (None, None)
            rest = torch.zeros(n, dtype=torch.float64)
            if log_probs is not None:
                rest = (log_probs.gather(2, tokens[:, 1:, None].to(self.device)).squeeze(-1).cpu() * mask[:, 1:]).sum(1)
            out[start : start + n] = -(first + rest).numpy() / _LN2
        return out

    def extraction_scorer(self, fmt: CanaryFormat):
        """A scorer(prefixes, slot) → natural-log probabilities of slot symbols, for :mod:`privaudit.extraction`.

        One call runs the LSTM once for all new nodes (each advanced from its
        parent's cached state by its last piece) and once more for the next
        slot's pieces, so a batch of nodes costs two batched model calls.
        """
        torch = self.torch
        pieces = _slot_pieces(fmt)
        cache = {(): self._initial(fmt.prefix)}

        def stack(entries):
            last = torch.cat([entry[0] for entry in entries], 0)
            state = tuple(torch.cat([entry[1][k] for entry in entries], 1) for k in range(len(entries[0][1])))
            return last, state

        def ensure(prefixes):
            missing = sorted({p for p in prefixes if p not in cache}, key=len)
            if not missing:
                return
            ensure([p[:-1] for p in missing])  # parents first (already cached during a search)
            by_length: dict = {}
            for prefix in missing:
                piece = pieces[len(prefix) - 1][prefix[-1]]
                by_length.setdefault(len(piece), []).append((prefix, piece))
            for group in by_length.values():
                parent_last, parent_state = stack([cache[prefix[:-1]] for prefix, _ in group])
                del parent_last  # the piece's first character is scored at the parent, not here
                tokens = torch.as_tensor([self.vocabulary.encode(piece) for _, piece in group], device=self.device)
                log_probs, state = self._run(tokens, parent_state)
                for row, (prefix, _) in enumerate(group):
                    cache[prefix] = (log_probs[row : row + 1, -1], tuple(part[:, row : row + 1] for part in state))

        def scorer(prefixes, slot):
            prefixes = [tuple(prefix) for prefix in prefixes]
            ensure(prefixes)
            last, state = stack([cache[prefix] for prefix in prefixes])
            log_p, _ = self._pieces_log_probs(last, state, pieces[slot])
            return log_p.cpu().numpy()

        return scorer
