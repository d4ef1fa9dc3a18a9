"""A user's ``--train`` functions that train with Opacus at σ 0.94, q 0.05 for 100 steps, reporting what ran or not.

``train_reported`` calls :func:`privaudit.integrations.observed.report_opacus`
with its optimizer and accountant after training; ``train_silent`` trains the
same way and reports nothing; ``train_sigma_tenth`` divides σ by 10 after
``make_private`` (the bug) and reports what ran. Every random number comes
from ``seed``.
"""

from __future__ import annotations

import warnings

import torch

SIGMA, RATE, STEPS = 0.94, 0.05, 100


def _train(x_train, y_train, seed, divide_sigma=1.0):
    import opacus

    generator = torch.Generator().manual_seed(seed)
    model = torch.nn.Linear(x_train.shape[1], 10)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(x_train), torch.from_numpy(y_train))
    loader = opacus.data_loader.DPDataLoader(dataset, sample_rate=RATE, generator=generator)
    engine = opacus.PrivacyEngine(accountant="rdp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus' secure-RNG note: the run is seeded on purpose
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5), data_loader=loader, noise_multiplier=SIGMA, max_grad_norm=1.0,
            noise_generator=torch.Generator().manual_seed(seed + 1),
        )  # fmt: skip
        optimizer.noise_multiplier /= divide_sigma  # the bug of train_sigma_tenth: the accountant records what the optimizer holds
        done = 0
        while done < STEPS:
            for xb, yb in loader:
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
                optimizer.step()
                done += 1
                if done == STEPS:
                    break
    return model._module, optimizer, engine.accountant


def train_reported(x_train, y_train, *, seed):
    from privaudit.integrations.observed import report_opacus

    model, optimizer, accountant = _train(x_train, y_train, seed)
    report_opacus(optimizer, accountant=accountant)
    return model


def train_sigma_tenth(x_train, y_train, *, seed):
    from privaudit.integrations.observed import report_opacus

    model, optimizer, accountant = _train(x_train, y_train, seed, divide_sigma=10.0)
    report_opacus(optimizer, accountant=accountant)
    return model


def train_silent(x_train, y_train, *, seed):
    return _train(x_train, y_train, seed)[0]
