"""Text generator: the Secret Sharer character LSTM, sampled at a fixed length with top-k and temperature.

The LSTM of :mod:`privaudit.models.char_lstm` is trained on D_G's lines;
each sample starts from the newline context and draws ``length``
characters, each from the ``top_k`` most likely next characters with
probabilities proportional to exp(logit / ``temperature``). Sampling is
batched and seeded by a ``torch.Generator``. Needs PyTorch.
"""

from __future__ import annotations

import numpy as np

from .._core.validation import check_count, check_positive
from ..models.device import require_torch

__all__ = ["CharLMGenerator"]


class CharLMGenerator:
    """Fixed-length text records from a character LSTM trained on real lines.

    >>> lines = ["abab abab", "baba baba"] * 40
    >>> generator = CharLMGenerator(length=12, top_k=3, hidden=32, epochs=5, sequence_length=20).fit(lines, seed=0)
    >>> texts, labels = generator.sample(4, seed=1)
    >>> [len(text) for text in texts], labels
    ([12, 12, 12, 12], None)
    """

    def __init__(self, *, length: int = 40, top_k: int = 10, temperature: float = 1.0, hidden: int = 256, epochs: int = 20, sequence_length: int = 80):
        self.length = check_count(length, "length", minimum=1)
        self.top_k = check_count(top_k, "top_k", minimum=1)
        self.temperature = check_positive(temperature, "temperature")
        self.hidden = check_count(hidden, "hidden", minimum=1)
        self.epochs = check_count(epochs, "epochs", minimum=1)
        self.sequence_length = check_count(sequence_length, "sequence_length", minimum=1)

    def fit(self, lines, y=None, *, seed: int = 0) -> CharLMGenerator:
        """Train the character LSTM on ``lines`` (strings); ``y`` is ignored."""
        from ..models.char_lstm import CharVocabulary, TrainingConfig, train_char_lstm

        config = TrainingConfig(epochs=self.epochs, hidden=self.hidden, sequence_length=self.sequence_length, seed=seed)
        self._vocabulary = CharVocabulary()
        self._model, self.training_report = train_char_lstm(list(lines), config, vocabulary=self._vocabulary, device="cpu")
        return self

    def sample(self, n: int, *, seed: int = 0) -> tuple[list[str], None]:
        """``n`` texts of exactly ``length`` characters (newlines excluded); returns (texts, None)."""
        torch = require_torch()
        n = check_count(n, "n", minimum=1)
        if not hasattr(self, "_model"):
            raise ValueError("the generator must be fitted before sampling: call fit(lines) first")
        generator = torch.Generator().manual_seed(seed)
        banned = torch.tensor([self._vocabulary.encode("\n")[0], 0])  # no line breaks, no unknown symbol
        tokens = torch.full((n, 1), self._vocabulary.encode("\n")[0], dtype=torch.long)
        state, out = None, []
        with torch.no_grad():
            for _ in range(self.length):
                logits, state = self._model(tokens, state)
                logits = logits[:, -1].double() / self.temperature
                logits[:, banned] = -np.inf
                top = torch.topk(logits, min(self.top_k, logits.shape[1] - banned.numel()), dim=1)
                choice = torch.multinomial(torch.softmax(top.values, dim=1), 1, generator=generator)
                tokens = top.indices.gather(1, choice)
                out.append(tokens)
        codes = torch.cat(out, dim=1).numpy()
        return [self._vocabulary.decode(row) for row in codes], None
