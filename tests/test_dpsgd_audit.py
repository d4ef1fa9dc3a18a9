"""The reference DP-SGD, its bugs, and auditing Opacus as shipped.

Oracles: a per-example gradient loop with plain autograd; the Gaussian
mechanism's exact per-step ε (GDP); Tight Auditing §6.3's claimed ε = 1.27
and true ε = 1.57.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

from privaudit.audits.dpsgd.audit import AUDIT, bound_step_observations, detect_bugs
from privaudit.audits.dpsgd.config import DPSGDAuditConfig, claimed_step_epsilon  # noqa: E402
from privaudit.canaries.gradient import GradientCanary  # noqa: E402
from privaudit.observation.gradient import collect_gradient_observations  # noqa: E402
from privaudit.stats.conversions import gdp_mu  # noqa: E402
from privaudit.training.dpsgd import DPSGDConfig, ReferenceDPSGD  # noqa: E402

DELTA = 1e-5


def test_a_step_is_the_clipped_mean_gradient_plus_calibrated_noise():
    generator = torch.Generator().manual_seed(0)
    x, y = torch.randn(30, 5, generator=generator), torch.randint(0, 3, (30,), generator=generator)
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
    before = [p.detach().clone() for p in model.parameters()]
    clip, lr = 0.05, 0.1  # small clip: every example is clipped
    expected = [torch.zeros_like(p) for p in before]
    for i in range(30):  # oracle: per-example autograd, clipped, averaged over qN = 30
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        grads = [p.grad.detach().clone() for p in model.parameters()]
        norm = torch.sqrt(sum((g**2).sum() for g in grads))
        for total, g in zip(expected, grads, strict=True):
            total += g * min(1.0, clip / float(norm)) / 30
    trainer = ReferenceDPSGD(model, x, y, DPSGDConfig(noise_multiplier=1e-9, clip_norm=clip, sampling_rate=1.0, learning_rate=lr), audit_size=4, seed=1)
    released = trainer.step(np.zeros((0, 4)))
    for old, new, g in zip(before, model.parameters(), expected, strict=True):
        assert torch.allclose(new.detach(), old - lr * g, atol=1e-6)
    assert np.abs(released).max() < 1e-8  # no canary: audit coordinates hold only (tiny) noise


def test_released_noise_has_the_claimed_scale():
    x, y = torch.randn(100, 3), torch.randint(0, 2, (100,))
    trainer = ReferenceDPSGD(torch.nn.Linear(3, 2), x, y, DPSGDConfig(noise_multiplier=2.0, clip_norm=3.0, sampling_rate=0.2), audit_size=20_000, seed=2)
    released = trainer.step(np.zeros((0, 20_000)))
    expected = 2.0 * 3.0 / 20.0  # σ C / (q N)
    assert abs(released.std() / expected - 1.0) < 5 / np.sqrt(2 * 20_000)


def test_a_model_without_parameters_is_refused():
    with pytest.raises(ValueError, match="`model` must have at least one trainable parameter"):
        ReferenceDPSGD(torch.nn.Tanh(), np.zeros((4, 2), np.float32), np.zeros(4, np.int64), DPSGDConfig(noise_multiplier=1.0))


@pytest.mark.parametrize("field, value", [("noise_multiplier", 0.0), ("noise_multiplier", -1.0), ("clip_norm", 0.0), ("sampling_rate", 1.5), ("bug", "typo")])
def test_bad_training_settings_are_named(field, value):
    with pytest.raises(ValueError, match=f"`{field}`"):
        DPSGDConfig(**{"noise_multiplier": 1.0, field: value})


def test_the_claim_of_section_6_3():
    assert claimed_step_epsilon(DPSGDAuditConfig().noise_multiplier, DELTA) == pytest.approx(1.27, abs=1e-3)


def test_every_bug_is_flagged_and_the_correct_implementation_is_not():
    results = detect_bugs()
    assert {bug: result.flagged for bug, result in results.items()} == {
        "none": False,
        "clip-after-averaging": True,
        "few-noise-seeds": True,
        "small-noise": True,
        "reused-key": True,
    }
    correct = results["none"]
    assert 0.85 * 1.27 <= correct.step_bounds["gdp_clopper_pearson"].epsilon <= 1.27
    assert correct.num_in == 10_000 and correct.num_twinned_blocks == 0
    assert results["reused-key"].num_twinned_blocks == 200  # both audit groups of every step


def test_the_correct_implementation_is_not_flagged_for_other_seeds():
    for seed in (1, 2):
        result = AUDIT.run(DPSGDAuditConfig(canary_norm=100.0, seed=seed)).result
        assert not result.flagged
        assert result.end_to_end.kind == "estimate" and result.end_to_end.epsilon <= result.claimed_end_to_end_epsilon * 1.05


def test_subsampled_canaries_are_bounded_with_the_pld_family():
    config = DPSGDAuditConfig(noise_multiplier=1.0, canary_rate=0.5, num_steps=40)
    result = AUDIT.run(config).result
    assert result.step_bounds["gdp_clopper_pearson"].method == "pld"
    assert 0.0 <= result.step_bounds["gdp_clopper_pearson"].epsilon <= claimed_step_epsilon(1.0, DELTA, 0.5)


def test_opacus_is_audited_as_shipped_and_tightly():
    opacus = pytest.importorskip("opacus")
    from privaudit.integrations.opacus import opacus_release

    epsilon = 4.0
    sigma = 1.0 / gdp_mu(epsilon, DELTA)
    generator = torch.Generator().manual_seed(0)
    x, y = torch.randn(1000, 20, generator=generator), torch.randint(0, 3, (1000,), generator=generator)
    model = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = opacus.PrivacyEngine().make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), data_loader=loader, noise_multiplier=sigma, max_grad_norm=1.0
        )
        release, auditor = opacus_release(model, optimizer, loader, torch.nn.functional.cross_entropy, 8000)
        observations = collect_gradient_observations(
            release,
            num_steps=100,
            canaries_per_step=100,
            num_slots=1000,
            clip_norm=1.0,
            denominator=auditor.denominator,
            canary=GradientCanary(norm=100.0),
            seed=1,
        )
    assert auditor.denominator == 50.0
    step = bound_step_observations(observations, noise_multiplier=sigma, delta=DELTA)
    assert not step["flagged"]
    assert 0.85 * epsilon <= step["bounds"]["gdp_clopper_pearson"].epsilon <= epsilon


def _opacus_setup(noise_multiplier):
    opacus = pytest.importorskip("opacus")
    from privaudit.integrations.opacus import OpacusCanaryAuditor

    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(40, 6), torch.zeros(40, dtype=torch.long)), batch_size=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, _ = opacus.PrivacyEngine().make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=1.0), data_loader=loader, noise_multiplier=noise_multiplier, max_grad_norm=1.0
        )
    return model, optimizer, OpacusCanaryAuditor(optimizer, 4)


@pytest.mark.parametrize("noise_multiplier", [0.0, 0.7])
def test_opacus_reserved_buffers_give_the_same_step_as_appending_rows(noise_multiplier):
    """reserve() skips a copy of every per-sample gradient; the step must not change."""
    generator = torch.Generator().manual_seed(5)
    x, y = torch.randn(8, 6, generator=generator), torch.randint(0, 3, (8,), generator=generator)
    rows = np.array([[3.0, 0, 0, 0], [0, 0, -0.5, 0]])
    released, weights = [], []
    for reserve in (False, True):
        model, optimizer, auditor = _opacus_setup(noise_multiplier)
        optimizer.zero_grad()
        if reserve:
            auditor.reserve(len(x), len(rows))
        torch.nn.functional.cross_entropy(model(x), y).backward()
        if reserve:  # Opacus accumulated into the reserved buffers: nothing to append
            assert {p.grad_sample.shape[0] for p in model.parameters()} == {len(x) + len(rows)}
        torch.manual_seed(11)  # the same noise draws in both runs
        released.append(auditor.step(rows))
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    np.testing.assert_array_equal(released[0], released[1])
    torch.testing.assert_close(weights[0], weights[1], rtol=0, atol=0)
    if noise_multiplier == 0.0:  # canary rows clipped to C = 1 each, divided by the expected batch size 8
        np.testing.assert_allclose(released[0], np.array([1.0, 0.0, -0.5, 0.0]) / 8, rtol=1e-6)


def test_opacus_reserved_buffers_are_reused_without_leaking_rows_between_steps():
    """Persistent buffers: batch sizes and canary counts that grow and shrink give the steps of the copy path, bit for bit."""
    generator = torch.Generator().manual_seed(6)
    plan = [(8, 2), (5, 2), (8, 0), (3, 1), (30, 2), (4, 2), (6, 1)]  # (batch, canaries); 30 rows outgrow the first buffers
    steps = []
    for batch, count in plan:
        rows = np.zeros((count, 4))
        rows[np.arange(count), torch.randint(0, 4, (count,), generator=generator).numpy()] = 3.0
        steps.append((torch.randn(batch, 6, generator=generator), torch.randint(0, 3, (batch,), generator=generator), rows))
    results = []
    for reserve in (False, True):
        model, optimizer, auditor = _opacus_setup(0.7)
        released = []
        for number, (x, y, rows) in enumerate(steps):
            optimizer.zero_grad()
            if reserve:
                auditor.reserve(len(x), len(rows))
            torch.nn.functional.cross_entropy(model(x), y).backward()
            if reserve:
                assert {p.grad_sample.shape[0] for p in model.parameters()} == {len(x) + len(rows)}
            torch.manual_seed(100 + number)
            released.append(auditor.step(rows))
        results.append((np.array(released), torch.cat([p.detach().flatten() for p in model.parameters()])))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    torch.testing.assert_close(results[0][1], results[1][1], rtol=0, atol=0)
    model, optimizer, auditor = _opacus_setup(0.0)  # without noise, each step releases exactly its own canaries
    for x, y, rows in steps:
        optimizer.zero_grad()
        auditor.reserve(len(x), len(rows))
        torch.nn.functional.cross_entropy(model(x), y).backward()
        np.testing.assert_allclose(auditor.step(rows), (rows / 3.0).sum(axis=0) / 8, rtol=1e-6)  # clipped to C = 1, over qN = 8


def test_opacus_step_needs_the_canaries_it_reserved_for():
    model, optimizer, auditor = _opacus_setup(1.0)
    optimizer.zero_grad()
    auditor.reserve(8, 2)
    torch.nn.functional.cross_entropy(model(torch.zeros(8, 6)), torch.zeros(8, dtype=torch.long)).backward()
    with pytest.raises(ValueError, match="`canary_rows` must hold the 2 rows given to reserve"):
        auditor.step(np.zeros((3, 4)))


def test_opacus_needs_its_own_optimizer():
    from privaudit.integrations.opacus import OpacusCanaryAuditor

    with pytest.raises(ValueError, match="`optimizer` must be an Opacus DPOptimizer"):
        OpacusCanaryAuditor(torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1), 10)


def test_the_input_space_threat_model_runs_through_the_same_command_config():
    config = DPSGDAuditConfig(threat_model="white-box-input", input_canary="blank", input_score="debiased", noise_multiplier=1.0, clip_norm=0.5, num_steps=200)
    run = AUDIT.run(config)
    result, observations = run.result, run.observations
    assert result.threat_model.startswith("white-box, input-space canary")
    assert observations["in_scores"].size == observations["out_scores"].size == 200
    assert 0.0 <= result.step_bounds["gdp_clopper_pearson"].epsilon <= result.claimed_step_epsilon


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"threat_model": "grey-box"}, "threat_model"),
        ({"input_canary": "noise"}, "input_canary"),
        ({"threat_model": "white-box-input", "bug": "small-noise"}, "bug"),
    ],
)
def test_bad_threat_model_settings_are_named(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        DPSGDAuditConfig(**kwargs)
