"""User training functions for `privaudit audit blackbox --train ... --init worst-case --init-model ...` (tests/test_blackbox_worst_case_train.py).

``train_dpsgd`` is privaudit's own built-in training written as a user's
function: the built-in architecture from ``build_classifier``, loaded from
``init_state``, then ``ReferenceDPSGD`` exactly as ``train_one`` runs it.
The settings are module constants, as a user's own script would hold them.
"""

from __future__ import annotations

import numpy as np
import torch

from privaudit.models.classifiers import build_classifier
from privaudit.training.dpsgd import DPSGDConfig, ReferenceDPSGD

# the audit the tests run: the built-in one's settings, which these functions repeat as a user would
SETTINGS = {
    "dataset": "breast-cancer",
    "architecture": "mlp",
    "num_records": 100,
    "noise_multiplier": 0.5,
    "clip_norm": 1.0,
    "learning_rate": 0.5,
    "num_steps": 2,
    "num_models_per_side": 5,
    "seed": 3,
}
FEATURES, CLASSES = 30, 2  # breast-cancer

CALLS: list[dict] = []  # what the recording builder was called with


def build(*, seed):
    """The built-in crafting's model: the same arguments as ``worst_case._craft`` gives ``build_classifier``."""
    return build_classifier(SETTINGS["architecture"], input_dim=FEATURES, num_classes=CLASSES, image_shape=None, seed=seed)


def build_recording(*, seed):
    CALLS.append({"seed": seed})
    return build(seed=seed)


def build_unseeded():
    """No seed: the weights come from torch's global RNG, which privaudit seeds inside fork_rng."""
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 8), torch.nn.Tanh(), torch.nn.Linear(8, CLASSES))


class WithBatchNorm(torch.nn.Module):
    """A class constructor as the builder, with an integer buffer (BatchNorm's num_batches_tracked)."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.BatchNorm1d(FEATURES)
        self.linear = torch.nn.Linear(FEATURES, CLASSES)

    def forward(self, x):
        return self.linear(self.norm(x))


def build_not_module():
    return lambda x: x


def build_wrong_shape():
    return torch.nn.Linear(FEATURES, CLASSES + 1)


def build_needs_arguments(width):
    return torch.nn.Linear(FEATURES, width)


def _started(init_state):
    model = build(seed=0)  # any seed: the crafted start overwrites every parameter
    model.load_state_dict(init_state)
    return model


def train_dpsgd(x_train, y_train, *, seed, init_state):
    """Full-batch reference DP-SGD from ``init_state``, as ``train_one`` runs it for the built-in model."""
    model = _started(init_state)
    dp = DPSGDConfig(noise_multiplier=SETTINGS["noise_multiplier"], clip_norm=SETTINGS["clip_norm"], sampling_rate=1.0, learning_rate=SETTINGS["learning_rate"])
    # the divisor: the audited records without the canary, in both worlds (as the built-in audit)
    trainer = ReferenceDPSGD(model, torch.from_numpy(x_train), torch.from_numpy(y_train), dp, audit_size=0, seed=seed, expected_size=SETTINGS["num_records"])
    for _ in range(SETTINGS["num_steps"]):
        trainer.step(np.zeros((0, 0)))
    return model


def train_zero_steps(x_train, y_train, *, seed, init_state):
    """No training at all: the crafted start itself."""
    return _started(init_state)


def train_batchnorm(x_train, y_train, *, seed, init_state):
    model = WithBatchNorm()
    model.load_state_dict(init_state)
    return model


def train_ignoring_init_state(x_train, y_train, *, seed, init_state):
    return build(seed=seed)


def train_other_shapes(x_train, y_train, *, seed, init_state):
    _started(init_state)
    return build_classifier("mlp", input_dim=FEATURES, num_classes=CLASSES, hidden=8, seed=seed)


def train_returning_a_function(x_train, y_train, *, seed, init_state):
    model = _started(init_state)
    return lambda x: torch.softmax(model(torch.from_numpy(x)), 1).detach().numpy()


def train_without_init_state(x_train, y_train, *, seed):
    return build(seed=seed)


def train_mutating(x_train, y_train, *, seed, init_state):
    """Writes into the tensors it was given: no other run's start may change."""
    for value in init_state.values():
        value.add_(1.0)
    return _started(init_state)
