"""The in-loop Opacus audit touches no global RNG state and leaves the user's loop unchanged: proven bit for bit.

Each test runs the user's seeded loop twice, without and with privaudit in it,
and compares with exact equality the user's weights, the optimizer's state
for the user's parameters, the accountant's history and every global RNG:
torch (CPU, and CUDA when present), numpy's legacy global state and ``random``.
The loops draw from those RNGs themselves (Poisson batches, noise, dropout, a
user's own numpy and ``random`` draws), so one extra draw anywhere shows.
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")

from rng_helpers import assert_same_rng_states, global_rng_states, seed_everything  # noqa: E402

from privaudit.integrations.opacus_hidden import OpacusHiddenStateAuditor  # noqa: E402
from privaudit.integrations.opacus_inloop import OpacusInLoopAuditor  # noqa: E402

SIGMA, CLIP, N, STEPS = 1.1, 0.7, 48, 5


def opacus_loop(audit: bool, *, seed: int, optimizer: str = "sgd", own_generator: bool = False, device: str = "cpu", hidden: bool = False):
    """A user's Opacus loop: Poisson batches and noise from torch's global RNG (or the optimizer's own), dropout, own draws."""
    seed_everything(seed)
    x, y = torch.randn(N, 6), torch.randint(0, 3, (N,))
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 3)).to(device)
    inner = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if optimizer == "sgd" else torch.optim.Adam(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
    generator = torch.Generator(device=device).manual_seed(seed + 1) if own_generator else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = opacus.PrivacyEngine(accountant="rdp")
        model, dp_optimizer, loader = engine.make_private(
            module=model, optimizer=inner, data_loader=loader, noise_multiplier=SIGMA, max_grad_norm=CLIP, noise_generator=generator
        )
        auditor = None
        if audit:
            auditor = (
                OpacusHiddenStateAuditor(model, dp_optimizer, num_canaries=40, seed=seed)
                if hidden
                else OpacusInLoopAuditor(model, dp_optimizer, canaries_per_step=3, seed=seed)
            )
        done = 0
        while done < STEPS:
            if auditor is not None:
                auditor.__enter__()
            for xb, yb in loader:
                dp_optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(xb.to(device)), yb.to(device)).backward()
                dp_optimizer.step()
                np.random.random(), random.random()  # the user's own draws, in the same loop
                done += 1
                if done in (2, STEPS):  # leave and enter again mid-training: both must be invisible
                    break
            if auditor is not None:
                auditor.__exit__(None, None, None)
    parameters = list(model.parameters())
    state = [{k: v.clone() if torch.is_tensor(v) else v for k, v in inner.state[p].items()} for p in parameters]
    return {
        "weights": [p.detach().clone() for p in parameters],
        "state": state,
        "history": list(engine.accountant.history),
        "rng": global_rng_states(),
        "auditor": auditor,
        "groups": len(inner.param_groups),
    }


def assert_same_training(plain: dict, audited: dict) -> None:
    assert all(torch.equal(a, b) for a, b in zip(plain["weights"], audited["weights"], strict=True))
    assert len(plain["state"]) == len(audited["state"])
    for a, b in zip(plain["state"], audited["state"], strict=True):
        assert a.keys() == b.keys() and a  # momentum buffers / Adam moments exist for every user parameter
        assert all(torch.equal(a[k], b[k]) if torch.is_tensor(a[k]) else a[k] == b[k] for k in a)
    assert plain["history"] == audited["history"] and plain["groups"] == audited["groups"]
    assert_same_rng_states(plain["rng"], audited["rng"])


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("optimizer", "own_generator"), [("sgd", False), ("adam", False), ("sgd", True)])
def test_opacus_in_loop_audit_leaves_the_users_loop_bit_for_bit(optimizer, own_generator, device):
    seed = int(np.random.default_rng().integers(2**31))
    plain = opacus_loop(False, seed=seed, optimizer=optimizer, own_generator=own_generator, device=device)
    audited = opacus_loop(True, seed=seed, optimizer=optimizer, own_generator=own_generator, device=device)
    assert_same_training(plain, audited)
    assert audited["auditor"].num_steps == STEPS  # the audit did observe every step of both blocks


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_the_hidden_state_audit_leaves_the_users_loop_bit_for_bit(optimizer):
    seed = int(np.random.default_rng().integers(2**31))
    plain = opacus_loop(False, seed=seed, optimizer=optimizer)
    audited = opacus_loop(True, seed=seed, optimizer=optimizer, hidden=True)
    assert_same_training(plain, audited)
    assert audited["auditor"].num_steps == STEPS


def test_hidden_state_sums_are_reproduced_from_the_recorded_seeds():
    """Each canary's final sum, recomputed from the result's seeds: its coin, Opacus' clip and the private noise, summed over the steps."""
    seed = int(np.random.default_rng().integers(2**31))
    auditor = opacus_loop(True, seed=seed, hidden=True)["auditor"]
    result = auditor.result(delta=1e-5)
    coins = np.random.default_rng(result.seeds["canaries"]).random(40) < 0.5
    noise = torch.Generator().manual_seed(result.seeds["noise"])
    norm = 100.0 * CLIP
    clipped = norm * min(1.0, CLIP / (norm + 1e-6))  # Opacus' clip factor C / (‖g‖ + 1e-6), capped at 1
    expected = np.zeros(40)
    for _ in range(STEPS):
        expected += (torch.normal(0.0, SIGMA * CLIP, size=(40,), generator=noise).double().numpy() + clipped * coins) / CLIP
    assert np.array_equal(auditor.included, coins) and result.canaries_per_step == int(coins.sum())
    np.testing.assert_allclose(auditor.final_sums(), expected, rtol=1e-5, atol=1e-4)
    assert result.seed == seed and result.num_steps == STEPS and result.num_canaries == 40


def test_in_loop_observations_are_reproduced_from_the_recorded_seeds():
    """Each step's in/out observations, recomputed from the result's seeds: the canaries' slots, Opacus' clip and the private noise."""
    seed = int(np.random.default_rng().integers(2**31))
    run = opacus_loop(True, seed=seed)
    auditor = run["auditor"]
    result = auditor.result(delta=1e-5)
    assert result.seed == seed and result.num_steps == STEPS and result.bound.num_in == 3 * STEPS
    slots_rng = np.random.default_rng(result.seeds["canaries"])
    noise = torch.Generator().manual_seed(result.seeds["noise"])
    norm = 100.0 * CLIP
    clipped = norm * min(1.0, CLIP / (norm + 1e-6))  # Opacus' clip factor C / (‖g‖ + 1e-6), capped at 1
    expected_in, expected_out = [], []
    for _ in range(STEPS):
        slots = slots_rng.choice(30, size=3, replace=False)
        released = torch.normal(0.0, SIGMA * CLIP, size=(30,), generator=noise).double().numpy()
        released[slots] += clipped
        chosen = np.isin(np.arange(30), slots)
        expected_in.append(released[chosen] / CLIP)  # (sum + noise) / B, read back times B / C; in slot order
        expected_out.append(released[~chosen] / CLIP)
    in_scores, out_scores = auditor.observations()
    np.testing.assert_allclose(in_scores, np.concatenate(expected_in), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out_scores, np.concatenate(expected_out), rtol=1e-5, atol=1e-5)
    plain = result.to_dict()
    assert plain["seeds"] == result.seeds and plain["framework_versions"]["opacus"] == opacus.__version__
    assert {c.name: c.value for c in result.conventions}["loss reduction"] == "mean"


def test_in_loop_auditor_refuses_optimizers_whose_noise_it_cannot_split():
    from opacus.optimizers import DPOptimizer, DPOptimizerFastGradientClipping, DPPerLayerOptimizer

    class OneDrawForAll(DPOptimizer):  # a noise step that draws for all parameters at once
        def add_noise(self):
            super().add_noise()

    model = opacus.GradSampleModule(torch.nn.Linear(3, 2))
    for kind in (OneDrawForAll, DPOptimizerFastGradientClipping):
        optimizer = kind(torch.optim.SGD(model.parameters(), lr=0.1), noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=4)
        with pytest.raises(ValueError, match=f"`optimizer` must noise as DPOptimizer does .*got {kind.__name__}"):
            OpacusInLoopAuditor(model, optimizer, canaries_per_step=1)
    per_layer = DPPerLayerOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), noise_multiplier=1.0, max_grad_norm=[1.0, 1.0], expected_batch_size=4)
    with pytest.raises(ValueError, match=r"`optimizer` must clip all parameters together \(flat clipping\), got per-layer clip norms \[1.0, 1.0\]"):
        OpacusInLoopAuditor(model, per_layer, canaries_per_step=1)
    optimizer = DPOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=4)
    with OpacusInLoopAuditor(model, optimizer, canaries_per_step=1):
        with pytest.raises(ValueError, match="`optimizer` must not already have its add_noise, clip_and_accumulate, pre_step wrapped"):
            OpacusInLoopAuditor(model, optimizer, canaries_per_step=1)
    assert "add_noise" not in vars(optimizer) and len(optimizer.param_groups) == 1


def test_auditing_a_copy_between_the_users_steps_leaves_every_global_rng_as_it_was():
    """audit_opacus trains a copy (its dropout draws from torch's RNG); the user's loop must not see it."""
    from privaudit.integrations.opacus import audit_opacus

    seed = int(np.random.default_rng().integers(2**31))
    seed_everything(seed)
    x, y = torch.randn(N, 6), torch.randint(0, 3, (N,))
    module = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 3))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = opacus.PrivacyEngine().make_private(
            module=module, optimizer=torch.optim.SGD(module.parameters(), lr=0.1), data_loader=loader, noise_multiplier=SIGMA, max_grad_norm=CLIP
        )
        before = global_rng_states()
        audit_opacus(model, optimizer, loader, torch.nn.functional.cross_entropy, num_steps=3, canaries_per_step=2, seed=seed)
    assert_same_rng_states(before, global_rng_states())
