"""PANORAMIA's audit (Algorithm 1) on toy targets whose leakage is known, and its bad-input errors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from privaudit.audits.panoramia import PanoramiaSettings, run_panoramia
from privaudit.stats.panoramia import panoramia_bounds

NUM_FEATURES = 3


def _records(rng, n):
    x = rng.normal(size=(n, NUM_FEATURES))
    y = (rng.random(n) < special.expit(2 * x[:, 0])).astype(np.int64)
    return x, y


def true_model_loss(x, y):
    """Cross-entropy of the data's true P(y | x): a model that generalises perfectly and memorises nothing."""
    p = special.expit(2 * x[:, 0])
    return -np.log(np.where(y == 1, p, 1 - p))


class OracleGenerator:
    """Samples the real data distribution itself, so its closeness c is 0."""

    def fit(self, x, y, *, seed=0):
        return self

    def sample(self, n, *, seed=0):
        return _records(np.random.default_rng(seed), n)


def memorising_loss(members_x):
    """Loss 0 on the members (perfect memorisation), the true-model loss elsewhere."""
    known = {row.tobytes() for row in members_x}

    def loss(x, y):
        seen = np.array([row.tobytes() in known for row in np.asarray(x, dtype=np.float64)])
        return np.where(seen, 0.0, true_model_loss(x, y))

    return loss


def _helper(x, y, seed):
    return true_model_loss


SETTINGS = PanoramiaSettings(audit_size=300, generator_fraction=0.3, confidence=0.999, labeller="generator", classifier_iterations=50)


@pytest.fixture(scope="module")
def members():
    return _records(np.random.default_rng(11), 1200)


def test_a_model_that_leaks_nothing_gets_zero_with_an_exact_generator(members):
    x, y = members
    result, scores = run_panoramia(true_model_loss, x, y, generator=OracleGenerator(), train_helper=_helper, settings=SETTINGS)
    # c = 0 and ε = 0: each bound is 0 except with probability <= β/2 = 0.0005
    assert result.c_lb == 0.0 and result.bounds.c_plus_epsilon_lb == 0.0 and result.epsilon_tilde == 0.0
    assert result.bounds.valid and "estimate" in result.epsilon_tilde_kind
    recomputed = panoramia_bounds(scores.baseline, scores.mia, scores.is_member, confidence=0.999)
    assert recomputed.epsilon_tilde == result.epsilon_tilde


def test_a_memorising_model_is_caught_by_the_mia_and_rm_rn_and_o1(members):
    x, y = members
    rng = np.random.default_rng(5)
    candidates_x, candidates_y = _records(rng, 400)
    included = rng.random(400) < 0.5
    trained_on = np.concatenate([x, candidates_x[included]])
    non_members = (candidates_x[~included], candidates_y[~included])
    result, scores = run_panoramia(
        memorising_loss(trained_on),
        x,
        y,
        generator=OracleGenerator(),
        train_helper=_helper,
        settings=SETTINGS,
        non_members=non_members,
        one_run_candidates=(candidates_x, candidates_y, included),
    )
    # oracle: the MIA ranks every member first, so at the largest tested count r <= #members all r guesses
    # are right and the bound is logit of the Clopper–Pearson bound alpha^(1/r), alpha = β/(2k)
    m = SETTINGS.audit_size
    counts = np.unique(np.geomspace(1, m, SETTINGS.num_recall_levels).round().astype(int))
    r = counts[counts <= scores.is_member.sum()].max()
    alpha = (1 - SETTINGS.confidence) / 2 / counts.size
    assert result.bounds.c_plus_epsilon_lb >= special.logit(alpha ** (1 / r)) - 1e-9
    assert result.c_lb == 0.0  # c = 0 except with probability <= 0.0005
    assert result.epsilon_tilde == result.bounds.c_plus_epsilon_lb
    assert result.real_non_members.epsilon > 1.0 and result.real_non_members.kind == "lower bound"
    assert result.one_run.epsilon > 1.0 and result.one_run.kind == "lower bound"


def test_results_are_reproducible_from_the_seed(members):
    x, y = members
    from privaudit.generators.tabular import MSTGenerator

    discrete = np.round(x)  # MST models discrete columns
    runs = [
        run_panoramia(
            true_model_loss,
            discrete,
            y,
            generator=MSTGenerator(iterations=200),
            train_helper=_helper,
            settings=PanoramiaSettings(audit_size=200, classifier_iterations=30, seed=3),
        )[0].to_dict()
        for _ in range(2)
    ]
    runs[0].pop("versions"), runs[1].pop("versions")
    assert runs[0] == runs[1]


class WrongSchemaGenerator(OracleGenerator):
    def sample(self, n, *, seed=0):
        x, y = super().sample(n, seed=seed)
        return x[:, :2], y


def test_bad_input_gives_clear_errors(members):
    x, y = members
    with pytest.raises(ValueError, match=r"`members` must hold at least \d+ examples for audit_size=1100"):
        run_panoramia(true_model_loss, x, y, generator=OracleGenerator(), train_helper=_helper, settings=PanoramiaSettings(audit_size=1100))
    with pytest.raises(ValueError, match="`generator` must produce .* rows of 3 features, got shape"):
        run_panoramia(true_model_loss, x, y, generator=WrongSchemaGenerator(), train_helper=_helper, settings=SETTINGS)

    def broken(x, y):
        raise RuntimeError("shape mismatch in layer 1")

    with pytest.raises(ValueError, match="`model` cannot score: RuntimeError: shape mismatch"):
        run_panoramia(broken, x, y, generator=OracleGenerator(), train_helper=_helper, settings=SETTINGS)
    with pytest.raises(ValueError, match="one loss per example"):
        run_panoramia(lambda x, y: np.zeros((len(x), 2)), x, y, generator=OracleGenerator(), train_helper=_helper, settings=SETTINGS)
    with pytest.raises(ValueError, match="`labeller` must be one of"):
        PanoramiaSettings(labeller="oracle")
