"""A character-level LSTM language model, trained with early stopping, optionally with DP-SGD.

Text is a stream of lines joined by newlines; the model predicts each next
character. With ``target_epsilon`` set, training goes through Opacus'
``PrivacyEngine.make_private_with_epsilon`` as shipped (Poisson sampling,
per-sample clipping, Gaussian noise), with Opacus' ``DPLSTM`` layer.
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Callable, Sequence

import numpy as np

from .device import default_device, require_torch, seeded_torch

__all__ = ["CharVocabulary", "TrainingConfig", "TrainingReport", "build_char_lstm", "train_char_lstm"]


@dataclasses.dataclass(frozen=True)
class CharVocabulary:
    """Printable ASCII plus newline; anything else maps to index 0 ("unknown").

    >>> vocab = CharVocabulary()
    >>> vocab.decode(vocab.encode("pin 42\\n"))
    'pin 42\\n'
    """

    symbols: tuple[str, ...] = tuple("\x00\n" + "".join(ch for ch in string.printable if ch not in "\t\r\x0b\x0c\n"))

    @property
    def size(self) -> int:
        return len(self.symbols)

    def encode(self, text: str) -> list[int]:
        index = {symbol: i for i, symbol in enumerate(self.symbols)}
        return [index.get(ch, 0) for ch in text]

    def decode(self, indices: Sequence[int]) -> str:
        return "".join(self.symbols[i] for i in indices)


def build_char_lstm(vocab_size: int, *, embedding: int = 32, hidden: int = 256, layers: int = 1, dp: bool = False):
    """An embedding → LSTM → linear next-character model (Opacus' DPLSTM when ``dp``)."""
    torch = require_torch()
    nn = torch.nn
    if dp:
        from opacus.layers import DPLSTM as LSTM
    else:
        LSTM = nn.LSTM

    class CharLSTM(nn.Module):  # type: ignore[name-defined]
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, embedding)
            self.lstm = LSTM(embedding, hidden, num_layers=layers, batch_first=True)
            self.head = nn.Linear(hidden, vocab_size)

        def forward(self, tokens, state=None):
            output, state = self.lstm(self.embedding(tokens), state)
            return self.head(output), state

    return CharLSTM()


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
    """How to train; ``target_epsilon`` switches on DP-SGD (at ``target_delta``)."""

    epochs: int = 20
    batch_size: int = 64
    sequence_length: int = 80
    learning_rate: float = 3e-3
    hidden: int = 256
    embedding: int = 32
    validation_fraction: float = 0.05
    patience: int = 3
    seed: int = 0
    target_epsilon: float | None = None
    target_delta: float = 1e-5
    max_grad_norm: float = 1.0

    def __post_init__(self):
        for name in ("epochs", "batch_size", "sequence_length", "hidden", "embedding", "patience"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"`{name}` must be >= 1, got {getattr(self, name)}")
        if not 0.0 < self.validation_fraction < 1.0:
            raise ValueError(f"`validation_fraction` must be in (0, 1), got {self.validation_fraction}")
        if self.target_epsilon is not None and self.target_epsilon <= 0:
            raise ValueError(f"`target_epsilon` must be > 0, got {self.target_epsilon}")


@dataclasses.dataclass
class TrainingReport:
    train_losses: list
    validation_losses: list
    best_epoch: int
    epsilon: float | None
    device: str


def _windows(encoded: np.ndarray, length: int) -> tuple[np.ndarray, int]:
    count = (encoded.size - 1) // length
    return encoded[: count * length + 1], count


def train_char_lstm(
    lines: Sequence[str],
    config: TrainingConfig = TrainingConfig(),
    *,
    vocabulary: CharVocabulary = CharVocabulary(),
    device=None,
    progress: Callable[[int, float, float], None] | None = None,
):
    """Train on ``lines`` and return (model, report); the best epoch on validation loss is kept.

    The stream is cut into non-overlapping windows of ``sequence_length``
    characters; a seeded shuffle sends ``validation_fraction`` of them to
    validation. Training stops after ``patience`` epochs without improvement.
    Every draw comes from torch's CPU generator seeded with ``config.seed``
    inside :func:`~privaudit.models.device.seeded_torch`: the caller's
    global random states are as they were.
    """
    with seeded_torch(config.seed):
        return _train_char_lstm(lines, config, vocabulary=vocabulary, device=device, progress=progress)


def _train_char_lstm(lines, config, *, vocabulary, device, progress):
    """:func:`train_char_lstm` inside its seeded block."""
    torch = require_torch()
    if not lines:
        raise ValueError("`lines` must not be empty")
    device = default_device(device)
    rng = np.random.default_rng(config.seed)
    encoded = np.asarray(vocabulary.encode("\n".join(lines) + "\n"), dtype=np.int64)
    stream, count = _windows(encoded, config.sequence_length)
    if count < 2:
        raise ValueError(f"`lines` must hold at least {2 * config.sequence_length + 1} characters, got {encoded.size}")
    starts = np.arange(count) * config.sequence_length
    order = rng.permutation(count)
    num_validation = max(1, int(round(config.validation_fraction * count)))
    index = np.arange(config.sequence_length + 1)
    inputs = torch.as_tensor(stream[starts[:, None] + index[None, :]])
    validation = inputs[order[:num_validation]]
    train = inputs[order[num_validation:]]

    dp = config.target_epsilon is not None
    model = build_char_lstm(vocabulary.size, embedding=config.embedding, hidden=config.hidden, dp=dp).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
    generator = torch.Generator().manual_seed(config.seed)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train), batch_size=config.batch_size, shuffle=True, generator=generator)
    engine = None
    if dp:
        from opacus import PrivacyEngine

        engine = PrivacyEngine(accountant="prv")
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model,
            optimizer=optimizer,
            data_loader=loader,
            target_epsilon=config.target_epsilon,
            target_delta=config.target_delta,
            epochs=config.epochs,
            max_grad_norm=config.max_grad_norm,
        )
    loss_fn = torch.nn.CrossEntropyLoss()

    def evaluate(batch):
        batch = batch.to(device)
        logits, _ = model(batch[:, :-1])
        return loss_fn(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))

    best, best_state, best_epoch, stale = np.inf, None, 0, 0
    train_losses, validation_losses = [], []
    for epoch in range(1, config.epochs + 1):
        model.train()
        total, batches = 0.0, 0
        for (batch,) in loader:
            if batch.shape[0] == 0:  # Poisson sampling can draw an empty batch
                continue
            optimizer.zero_grad()
            loss = evaluate(batch)
            loss.backward()
            optimizer.step()
            total, batches = total + loss.item(), batches + 1
        model.eval()
        with torch.no_grad():
            validation_loss = float(evaluate(validation))
        train_losses.append(total / max(batches, 1))
        validation_losses.append(validation_loss)
        if progress is not None:
            progress(epoch, train_losses[-1], validation_loss)
        if validation_loss < best - 1e-4:
            best, best_epoch, stale = validation_loss, epoch, 0
            best_state = {key: value.detach().clone() for key, value in _plain_module(model).state_dict().items()}
        else:
            stale += 1
            if stale >= config.patience and not dp:  # DP accounting assumes all planned epochs run
                break
    plain = _plain_module(model)
    if not dp and best_state is not None:
        plain.load_state_dict(best_state)
    plain.eval()
    epsilon = float(engine.get_epsilon(config.target_delta)) if engine is not None else None
    report = TrainingReport(train_losses, validation_losses, best_epoch if not dp else len(train_losses), epsilon, str(device))
    return plain, report


def _plain_module(model):
    """The underlying module of an Opacus GradSampleModule, or the model itself."""
    return getattr(model, "_module", model)
