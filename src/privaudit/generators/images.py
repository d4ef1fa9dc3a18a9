"""A small variational auto-encoder for 8 × 8 grey-scale digits (features in [0, 1]).

Encoder ``d → hidden → (μ, log σ²)`` of a ``latent``-dimensional Gaussian,
decoder ``latent → hidden → d`` with a sigmoid; trained with Adam on the
Bernoulli (binary cross-entropy) reconstruction loss plus the KL term.
Samples are the decoder's mean at z ~ N(0, I). The VAE does not model
labels: :meth:`VAEGenerator.sample` returns ``(x, None)`` and the audit's
labeller supplies the labels. Needs PyTorch.
"""

from __future__ import annotations

import numpy as np

from .._core.validation import check_count, check_positive
from ..models.device import require_torch, seeded_torch

__all__ = ["VAEGenerator"]


class VAEGenerator:
    """A seeded VAE generator of flat images with values in [0, 1].

    >>> rng = np.random.default_rng(0)
    >>> x = (rng.random((200, 16)) < np.linspace(0.1, 0.9, 16)).astype(float)
    >>> generator = VAEGenerator(epochs=60, latent=2, hidden=32).fit(x, None, seed=0)
    >>> fake, labels = generator.sample(2000, seed=1)
    >>> fake.shape, labels, bool(np.abs(fake.mean(0) - x.mean(0)).max() < 0.15)
    ((2000, 16), None, True)
    """

    def __init__(self, *, latent: int = 8, hidden: int = 128, epochs: int = 100, batch_size: int = 64, learning_rate: float = 1e-3):
        self.latent = check_count(latent, "latent", minimum=1)
        self.hidden = check_count(hidden, "hidden", minimum=1)
        self.epochs = check_count(epochs, "epochs", minimum=1)
        self.batch_size = check_count(batch_size, "batch_size", minimum=1)
        self.learning_rate = check_positive(learning_rate, "learning_rate")

    def fit(self, x, y=None, *, seed: int = 0) -> VAEGenerator:
        """Train on ``x`` (n, d) with values in [0, 1]; ``y`` is ignored."""
        torch = require_torch()
        nn = torch.nn
        x = np.asarray(x, dtype=np.float32)
        if x.ndim != 2 or x.shape[0] < 2 or x.min() < 0 or x.max() > 1:
            raise ValueError(f"`x` must be (n, d) with n >= 2 and values in [0, 1], got shape {x.shape}")
        d = x.shape[1]
        with seeded_torch(seed):
            self._encoder = nn.Sequential(nn.Linear(d, self.hidden), nn.ReLU(), nn.Linear(self.hidden, 2 * self.latent))
            self._decoder = nn.Sequential(nn.Linear(self.latent, self.hidden), nn.ReLU(), nn.Linear(self.hidden, d))
        parameters = list(self._encoder.parameters()) + list(self._decoder.parameters())
        optimizer = torch.optim.Adam(parameters, lr=self.learning_rate)
        generator = torch.Generator().manual_seed(seed)
        data = torch.as_tensor(x)
        for _ in range(self.epochs):
            for batch in data[torch.randperm(len(data), generator=generator)].split(self.batch_size):
                mean, log_var = self._encoder(batch).chunk(2, dim=1)
                noise = torch.randn(mean.shape, generator=generator)
                z = mean + noise * (0.5 * log_var).exp()
                reconstruction = nn.functional.binary_cross_entropy_with_logits(self._decoder(z), batch, reduction="sum")
                kl = -0.5 * torch.sum(1 + log_var - mean.pow(2) - log_var.exp())
                optimizer.zero_grad()
                ((reconstruction + kl) / len(batch)).backward()
                optimizer.step()
        return self

    def sample(self, n: int, *, seed: int = 0) -> tuple[np.ndarray, None]:
        """Decoder means at ``n`` draws of z ~ N(0, I); returns (x, None)."""
        torch = require_torch()
        n = check_count(n, "n", minimum=1)
        if not hasattr(self, "_decoder"):
            raise ValueError("the generator must be fitted before sampling: call fit(x) first")
        z = torch.randn((n, self.latent), generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            return torch.sigmoid(self._decoder(z)).double().numpy(), None
