"""PANORAMIA (Kazmi et al., Algorithm 1): audit a trained model with generated non-members.

The auditor holds members D_f of the target f's training set, and can score
f: ``target_loss(x, y)`` returns per-example losses. Nothing is retrained.

1. Split the members into D_G (trains the generator), D_in^tr (trains the
   classifiers) and D_in^te (m audit members), at random.
2. Fit the generator on D_G; draw D_out^tr and D_out^te (generated
   non-members, as many as D_in^tr and D_in^te) and D_h (the helper's data).
   Labels come from the *labeller*: each generated record's label is drawn
   from P(y | x) given by a classifier of the real D_G (``labeller=
   "classifier"``, the default), by the target itself (``"target"``:
   p_c = exp(-loss_f(x, c)) for a cross-entropy loss), or kept from a
   generator that models labels, as MST does (``"generator"``).
3. The helper h (same task and architecture as f, from ``train_helper``) is
   trained on D_h. The baseline b sees [x, y, loss_h(x, y)], the MIA
   [x, y, loss_f(x, y)] (the label is part of the record, and the loss needs
   it); both are gradient-boosted trees trained on D_in^tr vs D_out^tr.
4. The game of Definition 2: s ~ Bernoulli(½)^m picks, at each index, the
   real member (s = 1) or the generated point (s = 0). b and the MIA score the
   m audit points, and :func:`privaudit.stats.panoramia.panoramia_bounds`
   returns c_lb (a lower bound on the generator's closeness c), {c+ε}_lb and
   ε̃ = {c+ε}_lb - c_lb, an *estimate* of ε conditional on c_lb being tight.

Comparisons on the same target, when the data allow:

* RM;RN: the same MIA against *real* non-members (c = 0, no baseline), a
  lower bound on ε when the non-members come from the members' distribution;
* O(1): when each of a set of candidates was included in training by an
  independent fair coin, thresholding -loss_f on them gives a lower bound on
  ε from the one training run: :func:`privaudit.one_run_lower_bound`, the
  best of Steinke et al.'s bound and its f-DP tightening (Mahloujifar et
  al.), Bonferroni-corrected over all their tests, at δ =
  ``settings.one_run_delta`` (the paper compares at δ = 0, which the f-DP
  bound cannot take; its ε at δ > 0 is at least the δ = 0 one).

The curves that PANORAMIA's figure draws (precision and the bound over
recall) are computed here too, by :func:`panoramia_curves`, so that the
plotting code holds no statistics.

Readings of the paper that can only lower ε̃ or keep the bounds valid:

* labels are drawn from the labeller's probabilities, not its argmax, so
  generated labels are as noisy as real ones;
* besides h, the baseline also sees the loss of a second helper of the same
  recipe trained on the *real* D_G (``real_data_helper``, on by default):
  f knows the real P(y | x), which tells generated records from real ones
  whatever their membership, and a baseline that knows it too leaves less
  of that to ε̃. D_G is disjoint from the game, so b still depends on x_i
  only, as Proposition 1 requires. How well b knows P(y | x) hinges on the
  size of D_G: f learnt it from all of D_f, and with a small D_G (30% of the
  members on the embedded ``fair`` data) the MIA beat b on targets that do
  not leak (a DP-SGD target at ε = 2) by telling the generator's labels
  (drawn from a model of D_G) from real ones. The embedded default therefore
  gives D_G half of the members (``generator_fraction`` = 0.5), after which
  b is at least as strong as the MIA on such targets. ε̃ stays an estimate.
* the recall levels are fixed in advance and Bonferroni-corrected (not
  picked on the audit data);
* the splits, the generator's samples and the game's coins all come from
  independent child seeds of ``seed``; generated points are drawn i.i.d.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ..._core.results import Result
from ..._core.validation import check_choice, check_count, check_fraction, check_probability
from ...generators import check_generated
from ...generators.images import VAEGenerator
from ...generators.tabular import MSTGenerator
from ...stats.one_run_combined import OneRunLowerBound, one_run_lower_bound
from ...stats.panoramia import PanoramiaResult, RealNonMemberBound, panoramia_bounds, privacy_recall_curve, real_non_member_bound

__all__ = [
    "GENERATORS",
    "make_generator",
    "GameScores",
    "PanoramiaAuditResult",
    "PanoramiaCurves",
    "PanoramiaSettings",
    "PrecisionRecallCurve",
    "fit_classifier",
    "panoramia_curves",
    "run_panoramia",
    "score_losses",
]

LossFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
LABELLERS = ("target", "classifier", "generator")
MIN_TRAIN = 20  # fewest members left to train the baseline and the MIA on


@dataclasses.dataclass(frozen=True)
class PanoramiaSettings:
    """How the members are split and how the game is scored.

    >>> PanoramiaSettings(audit_size=0)
    Traceback (most recent call last):
    ...
    ValueError: `audit_size` must be an integer in [1, inf), got 0
    """

    audit_size: int = 1000
    generator_fraction: float = 0.4
    confidence: float = 0.95
    num_recall_levels: int = 16
    classifier_iterations: int = 200
    labeller: str = "classifier"
    real_data_helper: bool = True
    one_run_delta: float = 1e-5
    seed: int = 0

    def __post_init__(self):
        check_count(self.audit_size, "audit_size", minimum=1)
        fraction = check_fraction(self.generator_fraction, "generator_fraction")
        if not 0.0 < fraction < 1.0:
            raise ValueError(f"`generator_fraction` must be in (0, 1), got {fraction:g}")
        check_probability(self.confidence, "confidence")
        check_count(self.num_recall_levels, "num_recall_levels", minimum=1)
        check_count(self.classifier_iterations, "classifier_iterations", minimum=1)
        check_choice(self.labeller, "labeller", LABELLERS)
        check_probability(self.one_run_delta, "one_run_delta")
        check_count(self.seed, "seed")


@dataclasses.dataclass(frozen=True, eq=False)
class GameScores:
    """The observations of one game: scores of b and of the MIA, and s (True = real member)."""

    baseline: np.ndarray
    mia: np.ndarray
    is_member: np.ndarray
    real_non_member_mia: np.ndarray | None = None
    real_non_member_is_member: np.ndarray | None = None
    one_run_scores: np.ndarray | None = None  # O(1): -loss of each candidate (higher = included), for a test against the claim's family
    one_run_included: np.ndarray | None = None  # O(1): each candidate's fair coin


@dataclasses.dataclass(frozen=True)
class PanoramiaAuditResult(Result):
    """PANORAMIA's bounds and estimate, with the generator c_lb belongs to and the comparisons."""

    target: str
    generator: str
    bounds: PanoramiaResult
    c_lb: float
    epsilon_tilde: float
    real_non_members: RealNonMemberBound | None
    one_run: OneRunLowerBound | None
    settings: PanoramiaSettings
    split_sizes: dict[str, int]
    threat_model: str = "black-box: per-example loss of the final model; no retraining, no canaries"
    epsilon_tilde_kind: str = "estimate conditional on the generator's c (c_lb a lower bound)"


def score_losses(loss_fn: LossFn, x: np.ndarray, y: np.ndarray, name: str = "model") -> np.ndarray:
    """Per-example losses from ``loss_fn``, checked: one finite float per example.

    >>> score_losses(lambda x, y: np.abs(x[:, 0] - y), np.ones((3, 1)), np.zeros(3))
    array([1., 1., 1.])
    >>> score_losses(lambda x, y: x, np.ones((3, 2)), np.zeros(3))
    Traceback (most recent call last):
    ...
    ValueError: `model` cannot score: it must return one loss per example (shape (3,)), got shape (3, 2)
    """
    try:
        losses = np.asarray(loss_fn(x, y), dtype=np.float64)
    except Exception as error:  # any failure of the user's model is a bad input here
        raise ValueError(f"`{name}` cannot score: {type(error).__name__}: {error}") from error
    if losses.shape != (len(x),):
        raise ValueError(f"`{name}` cannot score: it must return one loss per example (shape ({len(x)},)), got shape {losses.shape}")
    if not np.isfinite(losses).all():
        raise ValueError(f"`{name}` cannot score: it returned NaN or infinite losses")
    return losses


def fit_classifier(features: np.ndarray, labels: np.ndarray, *, iterations: int = 200, seed: int = 0):
    """A gradient-boosted tree classifier (scikit-learn), seeded; returns the fitted model.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(400, 2))
    >>> model = fit_classifier(x, (x[:, 0] > 0).astype(int), iterations=20)
    >>> float(model.score(x, x[:, 0] > 0)) > 0.95
    True
    """
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(max_iter=iterations, early_stopping=True, validation_fraction=0.2, random_state=seed)
    return model.fit(features, labels)


class _PhaseClock:
    """Adds the seconds since the previous call to ``timings[phase]`` (nothing when timings is None)."""

    def __init__(self, timings):
        import time

        self.timings, self.now = timings, time.perf_counter
        self.last = self.now()

    def __call__(self, phase: str) -> None:
        now = self.now()
        if self.timings is not None:
            self.timings[phase] = self.timings.get(phase, 0.0) + now - self.last
        self.last = now


def _member_score(model, features: np.ndarray) -> np.ndarray:
    return model.predict_proba(features)[:, list(model.classes_).index(1)]


def _label_probabilities(target_loss, real_x, real_y, fake_x, num_classes, settings, seed) -> np.ndarray:
    """P(y | x) of each generated record, from the target (p_c = exp(-loss_f(x, c))) or a classifier of D_G."""
    if settings.labeller == "target":
        losses = np.column_stack([score_losses(target_loss, fake_x, np.full(len(fake_x), c)) for c in range(num_classes)])
        probabilities = np.exp(-losses)
        return probabilities / probabilities.sum(1, keepdims=True)
    labeller = fit_classifier(real_x, real_y, iterations=settings.classifier_iterations, seed=seed)
    probabilities = np.zeros((len(fake_x), num_classes))
    probabilities[:, labeller.classes_] = labeller.predict_proba(fake_x)
    return probabilities


def _draw_labels(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    draws = (rng.random(len(probabilities))[:, None] > np.cumsum(probabilities, axis=1)).sum(1)
    return np.minimum(draws, probabilities.shape[1] - 1).astype(np.int64)


def _split(n: int, settings: PanoramiaSettings, rng: np.random.Generator):
    m = settings.audit_size
    num_generator = int(round(settings.generator_fraction * n))
    if n - m - num_generator < MIN_TRAIN or num_generator < 2:
        needed = int(np.ceil((m + MIN_TRAIN) / (1.0 - settings.generator_fraction)))
        raise ValueError(f"`members` must hold at least {needed} examples for audit_size={m} and generator_fraction={settings.generator_fraction:g}, got {n}")
    order = rng.permutation(n)
    return order[:num_generator], order[num_generator : n - m], order[n - m :]


def _game(rng, baseline_model, mia_model, b_in, b_out, a_in, a_out):
    s = rng.random(len(b_in)) < 0.5
    baseline = np.where(s, _member_score(baseline_model, b_in), _member_score(baseline_model, b_out))
    mia = np.where(s, _member_score(mia_model, a_in), _member_score(mia_model, a_out))
    return baseline, mia, s


def run_panoramia(
    target_loss: LossFn,
    members_x,
    members_y,
    *,
    generator,
    train_helper: Callable[[np.ndarray, np.ndarray, int], LossFn],
    settings: PanoramiaSettings = PanoramiaSettings(),
    num_classes: int | None = None,
    non_members: tuple | None = None,
    one_run_candidates: tuple | None = None,
    target_name: str = "target",
    generator_name: str | None = None,
    timings: dict | None = None,
) -> tuple[PanoramiaAuditResult, GameScores]:
    """Run Algorithm 1 on ``target_loss``; return the result and the game's scores.

    ``non_members`` = (x, y) real non-members enables RM;RN;
    ``one_run_candidates`` = (x, y, included) with ``included`` drawn by fair
    coins before training enables the O(1) comparison. ``train_helper(x, y,
    seed)`` trains the helper and returns its loss function. ``timings``, if
    given, receives the wall time of each phase in seconds.
    """
    clock = _PhaseClock(timings)
    x = np.asarray(members_x, dtype=np.float64)
    y = np.asarray(members_y, dtype=np.int64)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(f"`members_x` must be (n, d) and `members_y` of shape (n,), got {x.shape} and {y.shape}")
    num_classes = int(num_classes if num_classes is not None else y.max() + 1)
    seeds = np.random.SeedSequence(settings.seed).spawn(7)
    split_rng, game_rng, rn_rng = (np.random.default_rng(s) for s in seeds[:3])
    generator_seed, helper_seed, classifier_seed = (int(s.generate_state(1)[0]) for s in seeds[3:6])
    gen_idx, train_idx, test_idx = _split(len(x), settings, split_rng)
    member_losses = score_losses(target_loss, x, y)  # checks the model scores before any training

    clock("scoring the target on members")
    generator.fit(x[gen_idx], y[gen_idx], seed=generator_seed)
    clock("fitting the generator")
    sizes = {"generator": len(gen_idx), "train": len(train_idx), "test": len(test_idx), "helper": len(gen_idx)}
    total = sizes["train"] + sizes["test"] + sizes["helper"]
    fake_x, fake_y = check_generated(*generator.sample(total, seed=generator_seed + 1), num_features=x.shape[1], num_classes=num_classes, n=total)
    if fake_y is None or settings.labeller != "generator":
        probabilities = _label_probabilities(target_loss, x[gen_idx], y[gen_idx], fake_x, num_classes, settings, classifier_seed)
        fake_y = _draw_labels(probabilities, np.random.default_rng(seeds[6]))
    clock("generating non-members")
    out_train, out_test, helper_data = np.split(np.arange(total), [sizes["train"], sizes["train"] + sizes["test"]])

    helper_loss = train_helper(fake_x[helper_data], fake_y[helper_data], helper_seed)
    helpers = [("helper", helper_loss)]
    if settings.real_data_helper:
        helpers.append(("real-data helper", train_helper(x[gen_idx], y[gen_idx], helper_seed)))
    clock("training the helper")
    real_x = np.concatenate([x[train_idx], x[test_idx]])
    real_y = np.concatenate([y[train_idx], y[test_idx]])
    gen_x = np.concatenate([fake_x[out_train], fake_x[out_test]])
    gen_y = np.concatenate([fake_y[out_train], fake_y[out_test]])
    f_real = np.concatenate([member_losses[train_idx], member_losses[test_idx]])
    f_gen = score_losses(target_loss, gen_x, gen_y)
    h_real = np.column_stack([score_losses(loss, real_x, real_y, name) for name, loss in helpers])
    h_gen = np.column_stack([score_losses(loss, gen_x, gen_y, name) for name, loss in helpers])
    n_tr = sizes["train"]
    clock("scoring with the target and the helper")

    def features(points, labels, losses):
        return np.column_stack([points, labels, losses])

    b_real, b_gen = features(real_x, real_y, h_real), features(gen_x, gen_y, h_gen)
    a_real, a_gen = features(real_x, real_y, f_real), features(gen_x, gen_y, f_gen)
    labels = np.r_[np.ones(n_tr, dtype=int), np.zeros(n_tr, dtype=int)]
    baseline_model = fit_classifier(np.r_[b_real[:n_tr], b_gen[:n_tr]], labels, iterations=settings.classifier_iterations, seed=classifier_seed)
    mia_model = fit_classifier(np.r_[a_real[:n_tr], a_gen[:n_tr]], labels, iterations=settings.classifier_iterations, seed=classifier_seed)
    baseline, mia, s = _game(game_rng, baseline_model, mia_model, b_real[n_tr:], b_gen[n_tr:], a_real[n_tr:], a_gen[n_tr:])
    clock("training the baseline and the MIA")
    bounds = panoramia_bounds(baseline, mia, s, confidence=settings.confidence, num_recall_levels=settings.num_recall_levels)
    clock("the game and its bounds")

    rn_result = rn_scores = rn_member = None
    if non_members is not None:
        rn_result, rn_scores, rn_member = _real_non_members(
            target_loss, non_members, x[train_idx], y[train_idx], a_real, member_losses, n_tr, settings, rn_rng, classifier_seed
        )
        clock("RM;RN comparison")
    one_run = one_run_scores = one_run_included = None
    if one_run_candidates is not None:
        cx, cy, included = one_run_candidates
        losses = score_losses(target_loss, np.asarray(cx, dtype=np.float64), np.asarray(cy, dtype=np.int64))
        one_run_scores, one_run_included = -losses, np.asarray(included, dtype=bool)
        one_run = one_run_lower_bound(one_run_scores, one_run_included, delta=settings.one_run_delta, confidence=settings.confidence)
        clock("O(1) comparison")

    result = PanoramiaAuditResult(
        target=target_name,
        generator=generator_name or type(generator).__name__,
        bounds=bounds,
        c_lb=bounds.c_lb,
        epsilon_tilde=bounds.epsilon_tilde,
        real_non_members=rn_result,
        one_run=one_run,
        settings=settings,
        split_sizes=sizes,
    )
    return result, GameScores(baseline, mia, s, rn_scores, rn_member, one_run_scores, one_run_included)


@dataclasses.dataclass(frozen=True, eq=False)
class PrecisionRecallCurve:
    """One attack at every prediction count r = 1..m: precision, recall, and the logit of precision's lower bound at level ``alpha``."""

    recall: np.ndarray
    precision: np.ndarray
    bound: np.ndarray
    alpha: float


@dataclasses.dataclass(frozen=True, eq=False)
class PanoramiaCurves:
    """What PANORAMIA's figure draws for one game, computed by the audit so that the plotting code holds no statistics.

    ``baseline`` (b, in units of c) and ``mia`` (in units of c + ε) are at
    the level each of the game's two tests used, β/(2k) with k the number of
    recall levels; ``real_non_members`` (RM;RN, in units of ε) at its own
    test's level, β/k.
    """

    baseline: PrecisionRecallCurve
    mia: PrecisionRecallCurve
    real_non_members: PrecisionRecallCurve | None = None


def _curve(scores, is_member, alpha: float, method: str) -> PrecisionRecallCurve:
    curve = privacy_recall_curve(scores, is_member, alpha=alpha, method=method)
    return PrecisionRecallCurve(recall=curve["recall"], precision=curve["precision"], bound=curve["bound"], alpha=alpha)


def panoramia_curves(scores: GameScores, result: PanoramiaAuditResult) -> PanoramiaCurves:
    """The precision-recall curves and the bounds over recall of the game ``scores`` that ``result`` reports.

    >>> rng = np.random.default_rng(0)
    >>> s = rng.random(200) < 0.5
    >>> scores = GameScores(baseline=s + rng.normal(size=200), mia=2 * s + rng.normal(size=200), is_member=s)
    >>> bounds = panoramia_bounds(scores.baseline, scores.mia, s)
    >>> result = PanoramiaAuditResult("demo", "mst", bounds, bounds.c_lb, bounds.epsilon_tilde, None, None, PanoramiaSettings(), {})
    >>> curves = panoramia_curves(scores, result)
    >>> bool(np.isclose(curves.mia.alpha, 0.05 / 2 / bounds.num_tests)), curves.mia.recall.size, curves.real_non_members
    (True, 200, None)
    """
    bounds = result.bounds
    alpha = (1.0 - bounds.confidence) / 2.0 / (bounds.num_tests if bounds.correction == "bonferroni" else 1)
    real = None
    rn = result.real_non_members
    if rn is not None and scores.real_non_member_mia is not None:
        real = _curve(scores.real_non_member_mia, scores.real_non_member_is_member, (1.0 - rn.confidence) / rn.num_tests, rn.method)
    return PanoramiaCurves(
        baseline=_curve(scores.baseline, scores.is_member, alpha, bounds.method),
        mia=_curve(scores.mia, scores.is_member, alpha, bounds.method),
        real_non_members=real,
    )


def _real_non_members(target_loss, non_members, train_x, train_y, a_real, member_losses, n_tr, settings, rng, seed):
    """RM;RN: the MIA trained and played against real non-members instead of generated ones."""
    nx = np.asarray(non_members[0], dtype=np.float64)
    ny = np.asarray(non_members[1], dtype=np.int64)
    if nx.ndim != 2 or nx.shape[1] != train_x.shape[1] or ny.shape != (len(nx),) or len(nx) < 4:
        raise ValueError(f"`non_members` must be (n >= 4, {train_x.shape[1]}) features with n labels, got {nx.shape} and {ny.shape}")
    n_losses = score_losses(target_loss, nx, ny)
    order = rng.permutation(len(nx))
    half = len(nx) // 2
    nn_train, nn_test = order[:half], order[half:]
    take = min(n_tr, half)
    pick = rng.permutation(n_tr)[:take]
    train_features = np.r_[a_real[pick], np.column_stack([nx[nn_train[:take]], ny[nn_train[:take]], n_losses[nn_train[:take]]])]
    model = fit_classifier(train_features, np.r_[np.ones(take, int), np.zeros(take, int)], iterations=settings.classifier_iterations, seed=seed)
    test_members = a_real[n_tr:]
    m = min(len(test_members), len(nn_test))
    s = rng.random(m) < 0.5
    non_member_features = np.column_stack([nx[nn_test[:m]], ny[nn_test[:m]], n_losses[nn_test[:m]]])
    scores = np.where(s, _member_score(model, test_members[:m]), _member_score(model, non_member_features))
    bound = real_non_member_bound(scores, s, confidence=settings.confidence, num_recall_levels=settings.num_recall_levels)
    return bound, scores, s


GENERATORS = ("mst", "vae")


def make_generator(kind: str, *, epochs: int = 200):
    """The generator of a modality: ``"mst"`` (tabular) or ``"vae"`` (images in [0, 1])."""
    check_choice(kind, "generator", GENERATORS)
    if kind == "mst":
        return MSTGenerator()

    return VAEGenerator(epochs=epochs)
