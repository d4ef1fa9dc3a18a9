"""Auditing a user's Opacus setup leaves the user's model, optimizer and accountant bit-for-bit unchanged."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from scipy import stats

torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")

from privaudit.integrations.opacus import (
    OpacusCanaryAuditor,
    audit_opacus,
    check_audit_size,
    opacus_claims,
    read_opacus_settings,
)

SIGMA, CLIP, BATCH, N = 1.3, 0.8, 10, 60


def user_setup(accountant="prv", seed=0):
    """A user's training: momentum SGD through make_private, trained three steps."""
    torch.manual_seed(seed)
    x, y = torch.randn(N, 5), torch.randint(0, 3, (N,))
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=BATCH)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = opacus.PrivacyEngine(accountant=accountant)
        model, optimizer, loader = engine.make_private(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
            data_loader=loader,
            noise_multiplier=SIGMA,
            max_grad_norm=CLIP,
        )
        train(model, optimizer, loader, 3)
    return model, optimizer, loader, engine.accountant


def train(model, optimizer, loader, steps):
    done = 0
    while done < steps:
        for xb, yb in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
            done += 1
            if done == steps:
                return


def snapshot(model, optimizer, accountant):
    inner = optimizer.original_optimizer
    return {
        "model": {k: v.clone() for k, v in model.state_dict().items()},
        "params": [id(p) for p in model.parameters()],
        "groups": [({k: copy.deepcopy(v) for k, v in g.items() if k != "params"}, [id(p) for p in g["params"]]) for g in inner.param_groups],
        "dp_groups": len(optimizer.param_groups),
        "state": {id(p): {k: v.clone() for k, v in st.items()} for p, st in inner.state.items()},
        "history": list(accountant.history),
        "rng": torch.get_rng_state(),
        "training": model.training,
    }


def assert_same(before, after):
    assert before["model"].keys() == after["model"].keys()
    assert all(torch.equal(before["model"][k], after["model"][k]) for k in before["model"])
    assert before["params"] == after["params"] and before["groups"] == after["groups"] and before["dp_groups"] == after["dp_groups"]
    assert before["state"].keys() == after["state"].keys()
    for key, state in before["state"].items():
        assert state.keys() == after["state"][key].keys()
        assert all(torch.equal(state[k], after["state"][key][k]) for k in state)
    assert before["history"] == after["history"] and before["training"] == after["training"]
    assert torch.equal(before["rng"], after["rng"])


@pytest.fixture(scope="module")
def audited():
    model, optimizer, loader, accountant = user_setup()
    before = snapshot(model, optimizer, accountant)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit_opacus(model, optimizer, loader, torch.nn.functional.cross_entropy, accountant=accountant, num_steps=30, canaries_per_step=20, seed=1)
    return model, optimizer, loader, accountant, before, result


def test_the_users_objects_are_unchanged_bit_for_bit(audited):
    model, optimizer, _, accountant, before, _ = audited
    assert before["state"]  # momentum buffers exist: the state comparison is not vacuous
    assert_same(before, snapshot(model, optimizer, accountant))


def test_the_snapshot_sees_what_auditing_in_place_changes():
    """Attaching the auditor to the user's optimizer (the old way) is caught by the same comparison."""
    model, optimizer, loader, accountant = user_setup()
    before = snapshot(model, optimizer, accountant)
    auditor = OpacusCanaryAuditor(optimizer, 4)
    x, y = next(iter(loader))
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    auditor.step(np.zeros((1, 4)))
    with pytest.raises(AssertionError):
        assert_same(before, snapshot(model, optimizer, accountant))


def test_training_after_the_audit_is_the_training_without_it():
    results = []
    for audit in (False, True):
        model, optimizer, loader, accountant = user_setup()
        if audit:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                audit_opacus(model, optimizer, loader, torch.nn.functional.cross_entropy, accountant=accountant, num_steps=5, canaries_per_step=5)
        torch.manual_seed(7)
        optimizer.generator = None  # Opacus draws noise from the global RNG
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            train(model, optimizer, loader, 2)
        results.append((torch.cat([p.detach().flatten() for p in model.parameters()]), list(accountant.history)))
    assert torch.equal(results[0][0], results[1][0]) and results[0][1] == results[1][1]


def test_settings_and_claims_come_from_the_users_objects(audited):
    result = audited[-1]
    settings = result.settings
    assert (settings.noise_multiplier, settings.max_grad_norm, settings.steps, settings.expected_batch_size) == (SIGMA, CLIP, 3, BATCH)
    assert settings.sample_rate == pytest.approx(BATCH / N)
    # the per-step claim: μ-GDP with μ = 1/σ, checked against the closed form δ(ε) (Dong et al., Cor. 2.13)
    mu, eps = 1 / SIGMA, result.claims.step_epsilon
    closed = stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    assert closed == pytest.approx(1e-5, rel=1e-6)
    # end to end: the PLD claim against Opacus' own PRV accountant, an independent implementation
    assert result.claims.opacus_epsilon is not None
    assert result.claims.end_to_end_epsilon == pytest.approx(result.claims.opacus_epsilon, rel=0.05)


def test_an_honest_setup_is_not_flagged(audited):
    result = audited[-1]
    assert not result.flagged and 0.0 <= result.bound.epsilon <= result.claims.step_epsilon
    assert result.bound.num_in == 30 * 20 and result.bound.num_out == 30 * 180


def test_settings_that_disagree_are_refused():
    _, optimizer, loader, accountant = user_setup()
    accountant = copy.deepcopy(accountant)
    accountant.history.append((SIGMA * 2, BATCH / N, 1))
    with pytest.raises(ValueError, match="`accountant` history holds steps with σ = 2.6"):
        read_opacus_settings(optimizer, data_loader=loader, accountant=accountant)
    with pytest.raises(ValueError, match="`data_loader` or an `accountant`"):
        read_opacus_settings(optimizer)
    settings = read_opacus_settings(optimizer, data_loader=loader)
    assert settings.steps == 0 and opacus_claims(settings, delta=1e-5).end_to_end_epsilon is None


def test_audit_size_is_ten_times_the_canaries_per_step_at_the_boundary():
    assert check_audit_size(None, 7) == 70 and check_audit_size(70, 7) == 70
    for wrong in (69, 71):
        with pytest.raises(ValueError, match=r"`audit_size` must be 10 × `canaries_per_step` = 10 × 7 = 70, got " + str(wrong)):
            check_audit_size(wrong, 7)
    model, optimizer, loader, _ = user_setup()
    with pytest.raises(ValueError, match="`audit_size` must be 10 × `canaries_per_step`"):
        audit_opacus(model, optimizer, loader, torch.nn.functional.cross_entropy, canaries_per_step=5, audit_size=49)


def test_missing_per_sample_gradients_are_a_value_error():
    model, optimizer, loader, _ = user_setup()
    model_copy = copy.deepcopy(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        private = opacus.optimizers.DPOptimizer(
            torch.optim.SGD(model_copy.parameters(), lr=0.1), noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=4
        )
    auditor = OpacusCanaryAuditor(private, 4)
    private.zero_grad()
    with pytest.raises(ValueError, match="per-sample gradients are missing"):
        auditor.step(np.zeros((1, 4)))
    with pytest.raises(ValueError, match="`model` must be the GradSampleModule"):
        audit_opacus(model._module, optimizer, loader, torch.nn.functional.cross_entropy)


def inloop_setup(sigma):
    torch.manual_seed(11)
    x, y = torch.randn(N, 5), torch.randint(0, 3, (N,))
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=BATCH)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = opacus.PrivacyEngine().make_private(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
            data_loader=loader,
            noise_multiplier=sigma,
            max_grad_norm=CLIP,
            poisson_sampling=False,
        )
    return model, optimizer, loader


def test_in_loop_without_noise_observes_exact_canaries_and_leaves_training_unchanged():
    from privaudit.integrations.opacus_inloop import OpacusInLoopAuditor

    weights = []
    for audit in (False, True):
        model, optimizer, loader = inloop_setup(0.0)
        groups, hooks = [[id(p) for p in g["params"]] for g in optimizer.param_groups], len(model._forward_pre_hooks)
        auditor = OpacusInLoopAuditor(model, optimizer, canaries_per_step=3, seed=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if audit:
                with auditor:
                    train(model, optimizer, loader, 4)
            else:
                train(model, optimizer, loader, 4)
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
        assert [[id(p) for p in g["params"]] for g in optimizer.param_groups] == groups and len(model._forward_pre_hooks) == hooks
        assert "pre_step" not in vars(optimizer) and len(optimizer.original_optimizer.state) == 4
    assert torch.equal(weights[0], weights[1])
    in_scores, out_scores = auditor.observations()
    assert auditor.num_steps == 4 and in_scores.shape == (12,) and out_scores.shape == (4 * 27,)
    np.testing.assert_allclose(in_scores, 1.0, atol=1e-6)  # a canary clipped to C, summed, over B, times B / C
    np.testing.assert_allclose(out_scores, 0.0, atol=1e-12)


def test_in_loop_observations_are_the_gaussian_the_claim_describes():
    from privaudit.integrations.opacus_inloop import OpacusInLoopAuditor

    model, optimizer, loader = inloop_setup(SIGMA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with OpacusInLoopAuditor(model, optimizer, canaries_per_step=20, seed=0) as auditor:
            train(model, optimizer, loader, 12)
    in_scores, out_scores = auditor.observations()
    # N(1, σ²) and N(0, σ²): means within 5 standard errors, independent of the bound's code
    assert abs(in_scores.mean() - 1.0) < 5 * SIGMA / np.sqrt(in_scores.size)
    assert abs(out_scores.mean()) < 5 * SIGMA / np.sqrt(out_scores.size)
    assert stats.chi2(out_scores.size - 1).cdf(out_scores.var(ddof=1) * (out_scores.size - 1) / SIGMA**2) > 1e-5
    bound = auditor.bound(delta=1e-5)
    assert 0.0 <= bound.epsilon <= opacus_claims(read_opacus_settings(optimizer, data_loader=loader), delta=1e-5).step_epsilon


def test_in_loop_needs_per_sample_gradients_and_the_audit_size_rule():
    from privaudit.integrations.opacus_inloop import OpacusInLoopAuditor

    model, optimizer, _ = inloop_setup(1.0)
    with pytest.raises(ValueError, match="`audit_size` must be 10 × `canaries_per_step` = 10 × 2 = 20, got 21"):
        OpacusInLoopAuditor(model, optimizer, canaries_per_step=2, audit_size=21)
    with OpacusInLoopAuditor(model, optimizer, canaries_per_step=2) as auditor:
        optimizer.zero_grad()
        with pytest.raises(ValueError, match="per-sample gradients are missing"):
            optimizer.step()
    with pytest.raises(ValueError, match="no audited step yet"):
        auditor.observations()
