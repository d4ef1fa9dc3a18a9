"""LOSS, LiRA and RMIA against brute-force loops written from the papers' formulas, and LiRA against the Neyman–Pearson oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats
from sklearn.metrics import roc_auc_score

from privaudit.stats.metrics import tpr_at_fpr
from privaudit.stats.mia import lira_offline_scores, lira_online_scores, logit_confidence, logit_confidence_from_loss, loss_scores, rmia_scores
from privaudit.stats.mia_metrics import attack_metrics


def random_setting(seed, k=8, n=12, m=9, balanced=True):
    """Signals (target, references) with per-record IN/OUT shifts, a membership matrix, and population samples."""
    rng = np.random.default_rng(seed)
    if balanced:  # each record IN exactly k/2 references, as in both papers' experiments
        membership = np.stack([rng.permutation(k) < k // 2 for _ in range(n)], axis=1)
    else:
        membership = rng.random((k, n)) < 0.5
        membership[0], membership[1] = True, False  # at least one of each per record
        membership[2], membership[3] = True, False
    shift = rng.normal(1.0, 0.5, size=n)
    reference = rng.normal(size=(k, n)) * rng.uniform(0.5, 2.0, size=n) + shift * membership
    target = rng.normal(size=n) + rng.random(n) * shift
    z_membership = rng.random((k, m)) < 0.5
    z_membership[0], z_membership[1] = True, False
    z_reference = rng.normal(size=(k, m)) + 0.8 * z_membership
    z_target = rng.normal(size=m)
    return target, reference, membership, z_target, z_reference, z_membership


# --- brute force, one record at a time, straight from the papers ---------------------------------


def gaussian_fit(values):
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def pooled_std(reference, membership, side):
    squares, count = 0.0, 0
    for i in range(reference.shape[1]):
        values = [reference[j, i] for j in range(reference.shape[0]) if membership[j, i] == side]
        mean, _ = gaussian_fit(values)
        squares += sum((v - mean) ** 2 for v in values)
        count += len(values)
    return math.sqrt(squares / count)


def normal_logpdf(x, mean, std):
    return -0.5 * ((x - mean) / std) ** 2 - math.log(std) - 0.5 * math.log(2 * math.pi)


def brute_lira(target, reference, membership, *, online, global_variance):
    """LiRA Algorithm 1: Gaussian likelihood ratio (online), or 1 - Pr[Z > φ] under the OUT Gaussian (offline, logged)."""
    scores = []
    for i in range(target.size):
        ins = [reference[j, i] for j in range(reference.shape[0]) if membership[j, i]]
        outs = [reference[j, i] for j in range(reference.shape[0]) if not membership[j, i]]
        (mean_in, std_in), (mean_out, std_out) = gaussian_fit(ins), gaussian_fit(outs)
        if global_variance:
            std_in, std_out = pooled_std(reference, membership, True), pooled_std(reference, membership, False)
        if online:
            scores.append(normal_logpdf(target[i], mean_in, std_in) - normal_logpdf(target[i], mean_out, std_out))
        else:
            scores.append(math.log(0.5 * math.erfc(-(target[i] - mean_out) / (std_out * math.sqrt(2)))))  # 1 - Pr[Z > φ] = Φ
    return np.array(scores)


def sigmoid(phi):
    return 1.0 / (1.0 + math.exp(-phi))


def brute_prior(signals, members, a):
    """Pr(x) over the reference models: ½(mean IN + mean OUT) online, ½((1 + a) mean OUT + 1 − a) offline."""
    p_in = [sigmoid(s) for s, m in zip(signals, members) if m]
    p_out = [sigmoid(s) for s, m in zip(signals, members) if not m]
    mean_out = sum(p_out) / len(p_out)
    if a is None:
        return 0.5 * (sum(p_in) / len(p_in) + mean_out)
    return 0.5 * ((1 + a) * mean_out + (1 - a))


def brute_rmia(target, reference, membership, z_target, z_reference, z_membership, *, gamma, a):
    """Score(x) = Pr_z[ (Pr(x|θ)/Pr(x)) / (Pr(z|θ)/Pr(z)) >= γ ], pair by pair."""
    scores = []
    for i in range(target.size):
        ratio_x = sigmoid(target[i]) / brute_prior(reference[:, i], membership[:, i], a)
        hits = 0
        for z in range(z_target.size):
            ratio_z = sigmoid(z_target[z]) / brute_prior(z_reference[:, z], z_membership[:, z], a)
            hits += ratio_x / ratio_z >= gamma
        scores.append(hits / z_target.size)
    return np.array(scores)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("global_variance", [False, True])
@pytest.mark.parametrize("balanced", [True, False])
def test_lira_equals_brute_force(seed, global_variance, balanced):
    target, reference, membership, *_ = random_setting(seed, balanced=balanced)
    for online, attack in ((True, lira_online_scores), (False, lira_offline_scores)):
        expected = brute_lira(target, reference, membership, online=online, global_variance=global_variance)
        got = attack(target, reference, membership, global_variance=global_variance)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("gamma", "a"), [(1.0, None), (2.0, None), (1.0, 0.0), (1.0, 0.3), (2.0, 0.7), (1.0, 1.0)])
def test_rmia_equals_brute_force(seed, gamma, a):
    setting = random_setting(seed, balanced=seed % 2 == 0)
    got = rmia_scores(*setting, gamma=gamma, offline_a=a)
    np.testing.assert_allclose(got, brute_rmia(*setting, gamma=gamma, a=a), rtol=0, atol=1e-10)
    # the z terms matter: with every Pr(z) replaced by 1 the scores differ
    target, reference, membership, z_target, z_reference, z_membership = setting
    ratio_x = [sigmoid(target[i]) / brute_prior(reference[:, i], membership[:, i], a) for i in range(target.size)]
    no_prior = np.array([np.mean([r / sigmoid(z) >= gamma for z in z_target]) for r in ratio_x])
    assert not np.array_equal(got, no_prior)


def test_rmia_offline_population_out_of_every_reference():
    target, reference, membership, z_target, z_reference, _ = random_setting(7)
    out_everywhere = np.zeros(z_reference.shape, dtype=bool)
    got = rmia_scores(target, reference, membership, z_target, z_reference, offline_a=0.3)
    np.testing.assert_allclose(got, brute_rmia(target, reference, membership, z_target, z_reference, out_everywhere, gamma=1.0, a=0.3), atol=1e-10)
    with pytest.raises(ValueError, match="`population_membership` is needed for online RMIA"):
        rmia_scores(target, reference, membership, z_target, z_reference)


def test_loss_and_logit_confidence_against_softmax():
    rng = np.random.default_rng(3)
    logits = rng.normal(scale=3.0, size=(50, 4))
    labels = rng.integers(0, 4, size=50)
    softmax = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    p = softmax[np.arange(50), labels]
    expected = np.log(p / (1 - p))
    np.testing.assert_allclose(logit_confidence(logits, labels, kind="logits"), expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(logit_confidence(softmax, labels, kind="probabilities"), expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(loss_scores(expected), np.log(p), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(logit_confidence_from_loss(-np.log(p)), expected, rtol=1e-8, atol=1e-8)
    # a tiny loss: p = 1 - 1e-20 rounds to 1, yet φ = log(1 / 1e-20) to first order
    assert logit_confidence_from_loss([1e-20])[0] == pytest.approx(20 * np.log(10), rel=1e-12)
    # far beyond float64's softmax: φ = z_y - logsumexp(others) exactly, and no overflow in the loss
    assert logit_confidence([[0.0, 2000.0, 1990.0]], [1], kind="logits")[0] == pytest.approx(2000.0 - np.logaddexp(0.0, 1990.0), abs=1e-12)
    assert loss_scores([2000.0])[0] == 0.0 and loss_scores([-2000.0])[0] == -2000.0
    # probabilities that round to exactly 1: φ stays finite and large
    assert 700.0 < logit_confidence([[1.0, 0.0]], [0], kind="probabilities")[0] < 710.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: lira_online_scores([0.0, 1.0], np.zeros((4, 3)), np.zeros((4, 3), bool)), "`reference_signals` must have shape"),
        (lambda: lira_online_scores([0.0], np.zeros((4, 1)), np.zeros((3, 1), bool)), r"`membership` must have shape \(references, records\) = \(4, 1\)"),
        (lambda: lira_online_scores([0.0], [[0.0], [1.0], [2.0]], [[1], [1], [0]]), "OUT of at least 2 reference model"),
        (lambda: lira_offline_scores([0.0], [[0.0], [1.0]], [[1], [0]]), "OUT of at least 2 reference model"),
        (lambda: lira_offline_scores([0.0], [[1.0], [1.0]], [[0], [0]]), "must vary across the OUT reference models"),
        (lambda: rmia_scores([0.0], [[0.0]], [[0]], [0.0], [[0.0]], offline_a=1.5), r"`offline_a` must be in \[0, 1\]"),
        (lambda: rmia_scores([0.0], [[0.0]], [[0]], [0.0], [[0.0]], offline_a=0.5, gamma=0), "`gamma` must be > 0"),
        (lambda: rmia_scores([0.0], [[0.0], [1.0]], [[1], [0]], [0.0], [[0.0], [1.0]], [[0], [0]]), "`population_membership` must put every record IN"),
        (lambda: logit_confidence([[0.5, 0.6]], [0], kind="probabilities"), "rows summing to 1"),
        (lambda: logit_confidence([[0.5, 0.5]], [2], kind="logits"), r"`labels` must be 1 integers in \[0, 1\]"),
        (lambda: logit_confidence([[0.5, 0.5]], [0], kind="log-probabilities"), "`kind` must be one of"),
    ],
)
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --- the oracle: Gaussian mean estimation, where the likelihood ratio is known -------------------
#
# Records x lie on the sphere of radius √d in R^d; a model releases θ = (1/n) Σ_{its n training records} x
# + N(0, σ² I) with the other records drawn uniformly, and its signal on record x is b_x + ⟨θ, x⟩, where b_x
# is the record's fixed difficulty (the same on every model). Given x the signal is exactly Gaussian:
#   OUT: b_x + N(0, d s²_out),  s²_out = 1/n + σ²;    IN: b_x + N(d/n, d s²_in),  s²_in = (n − 1)/n² + σ²
# (⟨x', x⟩ of a uniform x' has variance d, and ⟨x, x⟩ = d). The Neyman–Pearson test thresholds the exact
# likelihood ratio of signal − b_x; log LR is a concave quadratic, so {LR >= e^t} is an interval whose
# IN and OUT probabilities are closed forms, and the ROC's slope there is e^t.

N_TRAIN, DIM, NOISE = 4, 80, 1.0
MEAN_IN = DIM / N_TRAIN
S_OUT, S_IN = math.sqrt(DIM * (1 / N_TRAIN + NOISE**2)), math.sqrt(DIM * ((N_TRAIN - 1) / N_TRAIN**2 + NOISE**2))


def draw_signals(rng, member):
    return np.where(member, MEAN_IN, 0.0) + np.where(member, S_IN, S_OUT) * rng.normal(size=np.shape(member))


def true_log_ratio(signal):
    return stats.norm.logpdf(signal, MEAN_IN, S_IN) - stats.norm.logpdf(signal, 0.0, S_OUT)


def neyman_pearson(fpr):
    """(TPR, ROC slope) of the likelihood-ratio test at ``fpr``, in closed form."""
    a = 1 / (2 * S_OUT**2) - 1 / (2 * S_IN**2)
    b = MEAN_IN / S_IN**2
    c = -(MEAN_IN**2) / (2 * S_IN**2) + math.log(S_OUT / S_IN)

    def region(t):  # {s : a s² + b s + c >= t}, a < 0
        root = math.sqrt(b * b - 4 * a * (c - t))
        return sorted(((-b + root) / (2 * a), (-b - root) / (2 * a)))

    def rates(t):
        lo, hi = region(t)
        return stats.norm.cdf(hi, 0, S_OUT) - stats.norm.cdf(lo, 0, S_OUT), stats.norm.cdf(hi, MEAN_IN, S_IN) - stats.norm.cdf(lo, MEAN_IN, S_IN)

    top = c - b * b / (4 * a)  # the largest log LR
    t = optimize.brentq(lambda t: rates(t)[0] - fpr, -50.0, top - 1e-12, xtol=1e-14)
    return rates(t)[1], math.exp(t)


def test_online_lira_reaches_the_neyman_pearson_tpr(seed=None):  # any seed: None draws a fresh one
    rng = np.random.default_rng(seed)
    records, refs, fpr = 20_000, 64, 0.01
    difficulty = rng.normal(0.0, 3.0 * S_OUT, size=records)
    membership = np.stack([rng.permutation(refs) < refs // 2 for _ in range(records)], axis=1)  # each IN 32 of 64
    reference = draw_signals(rng, membership) + difficulty
    is_member = rng.random(records) < 0.5
    target = draw_signals(rng, is_member) + difficulty

    optimal, slope = neyman_pearson(fpr)
    n_in, n_out = int(is_member.sum()), int((~is_member).sum())
    # Monte Carlo error of an empirical TPR at an empirical 1% FPR (delta method): the binomial error of
    # the TPR plus the slope times that of the FPR
    error = math.sqrt(optimal * (1 - optimal) / n_in + slope**2 * fpr * (1 - fpr) / n_out)

    def tpr(scores):
        return float(tpr_at_fpr(scores[is_member], scores[~is_member], fpr)[0])

    # the oracle's own sample reaches it (this checks the closed form), and so does LiRA with one global
    # variance per side (the variances here are the same for every record)
    assert abs(tpr(true_log_ratio(target - difficulty)) - optimal) <= 4 * error
    assert abs(tpr(lira_online_scores(target, reference, membership, global_variance=True)) - optimal) <= 4 * error
    # per-record variances, 32 samples each, lose a little (about 3 errors below the optimum at 64
    # references); the uncalibrated signal (LOSS) loses most of it: the test has power
    per_record = tpr(lira_online_scores(target, reference, membership))
    assert optimal - 8 * error <= per_record <= optimal + 4 * error
    assert tpr(target) < optimal - 8 * error


@pytest.mark.parametrize("seed", range(3))
def test_attack_metrics_against_sklearn_and_clopper_pearson(seed):
    rng = np.random.default_rng(seed)
    is_member = rng.random(3000) < 0.4
    scores = rng.normal(size=3000) + 1.5 * is_member
    scores[::7] = np.round(scores[::7], 1)  # some ties
    metrics = attack_metrics(scores, is_member, fpr=(0.0, 0.001, 0.01), confidence=0.9)
    assert metrics.auc == pytest.approx(roc_auc_score(is_member, scores), abs=1e-12)
    members, others = scores[is_member], scores[~is_member]
    for target, tpr, low, high in zip(metrics.fpr, metrics.tpr, metrics.tpr_low, metrics.tpr_high, strict=True):
        # brute force: the best threshold among the observed scores whose FPR is at most the target
        best = max([0] + [int((members >= t).sum()) for t in np.unique(scores) if (others >= t).mean() <= target])
        assert tpr == best / members.size
        # two-sided 90% Clopper–Pearson from the beta quantiles
        expected_low = stats.beta.ppf(0.05, best, members.size - best + 1) if best else 0.0
        expected_high = stats.beta.ppf(0.95, best + 1, members.size - best) if best < members.size else 1.0
        assert (low, high) == pytest.approx((expected_low, expected_high), abs=1e-9)
    assert (metrics.num_in, metrics.num_out) == (members.size, others.size)
