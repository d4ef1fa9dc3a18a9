"""A user's own code, as `privaudit audit dpsgd --model` and `audit blackbox --train` import it.

``make`` builds an Opacus-compatible ReLU classifier (4 features, 3 classes);
the other callables are the wrong things a user may name by mistake.
"""

from __future__ import annotations

import numpy as np
import torch

NUM_FEATURES, NUM_CLASSES, HIDDEN = 4, 3, 16
NOT_CALLABLE = 3


class ReLUNet(torch.nn.Module):
    """Linear - ReLU - Linear, returning logits; every layer has per-example gradients (no BatchNorm)."""

    def __init__(self, hidden: int = HIDDEN):
        super().__init__()
        self.fc1 = torch.nn.Linear(NUM_FEATURES, hidden)
        self.fc2 = torch.nn.Linear(hidden, NUM_CLASSES)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def make() -> ReLUNet:
    return ReLUNet()


def wide() -> ReLUNet:
    """The same network with a wider hidden layer: its weights do not fit ``make``'s."""
    return ReLUNet(hidden=HIDDEN + 1)


def not_a_module():
    return [1, 2, 3]


def regressor():
    """One output per example: not a classifier."""
    return torch.nn.Linear(NUM_FEATURES, 1)


def with_batchnorm():
    """BatchNorm mixes the examples of a batch: no per-example gradients, as Opacus refuses it."""
    return torch.nn.Sequential(torch.nn.Linear(NUM_FEATURES, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, NUM_CLASSES))


# -- black-box training functions: fn(x_train, y_train, *, seed) -> model -----------------------
class NearestNeighbour:
    """Memorises its training set: predict_proba puts all mass on the label of the nearest training example."""

    def __init__(self, x, y, num_classes):
        self.x, self.y, self.num_classes = np.asarray(x, dtype=np.float64), np.asarray(y), num_classes

    def predict_proba(self, x):
        distances = ((np.asarray(x, dtype=np.float64)[:, None, :] - self.x[None]) ** 2).sum(-1)
        probabilities = np.zeros((len(x), self.num_classes))
        probabilities[np.arange(len(x)), self.y[distances.argmin(1)]] = 1.0
        return probabilities


def train_memoriser(x_train, y_train, *, seed):
    """No privacy at all: the canary's own label is returned with probability 1 whenever it was trained on."""
    return NearestNeighbour(x_train, y_train, int(y_train.max()) + 1)


def train_torch(x_train, y_train, *, seed):
    """A few full-batch SGD steps of a linear torch model, seeded; returns the module (logits)."""
    generator = torch.Generator().manual_seed(seed)
    model = torch.nn.Linear(x_train.shape[1], int(y_train.max()) + 1)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.01)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    x, y = torch.from_numpy(x_train), torch.from_numpy(y_train)
    for _ in range(5):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return model


def train_no_seed(x_train, y_train):
    return NearestNeighbour(x_train, y_train, 2)


def train_returns_number(x_train, y_train, *, seed):
    return 0.5
