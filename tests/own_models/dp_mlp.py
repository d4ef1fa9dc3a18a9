"""A user's training functions for `privaudit audit mia --train`: a small torch MLP, with and without Opacus DP-SGD.

Both follow the contract ``fn(x_train, y_train, *, seed) -> torch.nn.Module``
(logits) and draw every random number from ``seed`` (no global RNG).
``train_dp`` trains at ε = 1, δ = 1e-5 by Opacus' RDP accountant, with the
noise multiplier the accountant picks for the batch size and epochs, and
refuses to return a model whose spent ε exceeds 1.
"""

from __future__ import annotations

import warnings

import torch

EPSILON, DELTA = 1.0, 1e-5
HIDDEN, BATCH, DP_EPOCHS, DP_LEARNING_RATE, CLIP = 64, 128, 15, 1.0, 1.0
OVERFIT_STEPS, OVERFIT_LEARNING_RATE = 150, 3e-2


def _mlp(num_features: int, num_classes: int, generator: torch.Generator) -> torch.nn.Module:
    model = torch.nn.Sequential(torch.nn.Linear(num_features, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, num_classes))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * (0.1 if parameter.ndim > 1 else 0.0))
    return model


def _classes(y_train) -> int:
    return max(int(y_train.max()) + 1, 10)  # digits: 10 classes, even when a small probe lacks some


def train_overfit(x_train, y_train, *, seed):
    """No privacy: full-batch Adam for 150 steps, no weight decay, until the MLP fits every label (mislabeled ones too)."""
    generator = torch.Generator().manual_seed(seed)
    model = _mlp(x_train.shape[1], _classes(y_train), generator)
    optimizer = torch.optim.Adam(model.parameters(), lr=OVERFIT_LEARNING_RATE)
    x, y = torch.from_numpy(x_train), torch.from_numpy(y_train)
    for _ in range(OVERFIT_STEPS):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return model


def train_dp(x_train, y_train, *, seed):
    """Opacus DP-SGD at ε = 1, δ = 1e-5 (RDP accountant, Poisson sampling of batches of 128 on average, 15 epochs, clip 1)."""
    from opacus import PrivacyEngine

    generator = torch.Generator().manual_seed(seed)
    model = _mlp(x_train.shape[1], _classes(y_train), generator)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(x_train), torch.from_numpy(y_train))
    loader = torch.utils.data.DataLoader(dataset, batch_size=min(BATCH, len(dataset)), generator=generator)
    with warnings.catch_warnings():  # Opacus warns that its secure RNG is off: the run is seeded on purpose
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="rdp")
        # the accountant picks the noise multiplier for the loader's own sampling rate and steps
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=DP_LEARNING_RATE),
            data_loader=loader,
            target_epsilon=EPSILON,
            target_delta=DELTA,
            epochs=DP_EPOCHS,
            max_grad_norm=CLIP,
            poisson_sampling=True,
            noise_generator=generator,
        )
        for _ in range(DP_EPOCHS):
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
    spent = engine.get_epsilon(DELTA)
    if spent > EPSILON:
        raise RuntimeError(f"DP-SGD spent ε = {spent:.4f} > {EPSILON} at δ = {DELTA}")
    return model._module
