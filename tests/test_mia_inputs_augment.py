"""mia's query augmentations (mirror and shifts, as LiRA and RMIA query images) against brute force, end to end, and refused without an image shape."""

from __future__ import annotations

import json
import math
import statistics
from types import SimpleNamespace

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

from privaudit.audits.mia.augment import augmented_attack_scores, augmented_views
from privaudit.audits.mia.training import load_pool


def _brute_view(image, flip, dy, dx):
    """One view by pixel loops: shifted by (dy, dx) with the border reflected, then mirrored along the width."""
    channels, height, width = image.shape

    def reflect(k, size):
        return -k if k < 0 else 2 * (size - 1) - k if k >= size else k

    out = np.empty_like(image)
    for c in range(channels):
        for i in range(height):
            for j in range(width):
                jj = width - 1 - j if flip else j
                out[c, i, j] = image[c, reflect(i + dy, height), reflect(jj + dx, width)]
    return out


@pytest.mark.parametrize(("augment", "count"), [(("flip",), 2), (("shift",), 9), (("flip", "shift"), 18)])
def test_views_are_the_mirror_and_reflected_shifts_of_each_image(augment, count):
    rng = np.random.default_rng()
    shape, shift = (2, 4, 5), int(rng.integers(1, 4))
    x = rng.normal(size=(3, int(np.prod(shape))))
    views = augmented_views(x, shape, augment, shift)
    assert views.shape == (count, 3, x.shape[1]) and np.array_equal(views[0], x)  # the identity first
    flips = (False, True) if "flip" in augment else (False,)
    steps = (-shift, 0, shift) if "shift" in augment else (0,)
    for record in range(3):
        image = x[record].reshape(shape)
        expected = {_brute_view(image, f, dy, dx).tobytes() for f in flips for dy in steps for dx in steps}
        assert {view[record].tobytes() for view in views} == expected


def _sigmoid(value):
    return 1.0 / (1.0 + math.exp(-value))


def _log_normal(value, mean, std):
    return -0.5 * ((value - mean) / std) ** 2 - math.log(std) - 0.5 * math.log(2 * math.pi)


def test_lira_and_rmia_on_views_match_brute_force():
    rng = np.random.default_rng()
    views, records, k = 3, 12, 8
    membership = np.argsort(rng.random((records, k)), axis=1).T < k // 2
    reference = rng.normal(size=(k, views, records)) + 1.5 * membership[:, None, :]
    target = rng.normal(size=(views, records)) + rng.integers(0, 2, records)
    population = np.zeros(records, dtype=bool)
    population[rng.choice(records, 4, replace=False)] = True
    config = SimpleNamespace(global_variance=False, gamma=float(rng.uniform(0.5, 2.0)), offline_a=0.3)
    scores = augmented_attack_scores(target, reference, membership, population, config, evaluated=~population)
    evaluated = np.flatnonzero(~population)

    # LiRA: a Gaussian per record and view (diagonal covariance), the mean over views of the log-likelihood ratios
    lira = []
    for i in evaluated:
        ratios = []
        for a in range(views):
            inside = [reference[j, a, i] for j in range(k) if membership[j, i]]
            outside = [reference[j, a, i] for j in range(k) if not membership[j, i]]
            ratios.append(
                _log_normal(target[a, i], statistics.fmean(inside), statistics.pstdev(inside))
                - _log_normal(target[a, i], statistics.fmean(outside), statistics.pstdev(outside))
            )
        lira.append(sum(ratios) / views)
    assert scores["lira-online"] == pytest.approx(lira, rel=1e-9, abs=1e-9)
    assert scores["loss"] == pytest.approx([sum(math.log(_sigmoid(target[a, i])) for a in range(views)) / views for i in evaluated], rel=1e-12)

    # RMIA: probabilities averaged over views, then Pr(x) = (mean over IN + mean over OUT references) / 2, LR against every z;
    # ranked by the log ratio log(Pr(x|θ)/Pr(x)), the fraction of z dominated beside it
    def ratio(i, offline):
        p_target = sum(_sigmoid(target[a, i]) for a in range(views)) / views
        p_reference = [sum(_sigmoid(reference[j, a, i]) for a in range(views)) / views for j in range(k)]
        p_in = statistics.fmean(p for j, p in enumerate(p_reference) if membership[j, i])
        p_out = statistics.fmean(p for j, p in enumerate(p_reference) if not membership[j, i])
        prior = ((1 + config.offline_a) * p_out + 1 - config.offline_a) / 2 if offline else (p_in + p_out) / 2
        return p_target / prior

    for name, offline in (("rmia-online", False), ("rmia-offline", True)):
        z = [ratio(i, offline) for i in np.flatnonzero(population)]
        expected = [sum(ratio(i, offline) / r >= config.gamma for r in z) / len(z) for i in evaluated]
        assert scores[f"{name} fraction"] == pytest.approx(expected, abs=1e-12)
        assert scores[name] == pytest.approx([math.log(ratio(i, offline)) for i in evaluated], rel=1e-9, abs=1e-12)


NUM_RECORDS = 300  # 30 per class: every half of the pool holds each class (a model missing one has probability < 1e-7)


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """300 digits as a CSV, a scikit-learn target and four references saved with skops, members listed by row."""
    pytest.importorskip("sklearn")
    skops_io = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng()
    pool = load_pool("digits", None, None)
    x, y = pool.x[:NUM_RECORDS].astype(np.float64), pool.y[:NUM_RECORDS]
    folder = tmp_path_factory.mktemp("digits")
    lines = [",".join([*(f"p{i}" for i in range(64)), "digit"])] + [",".join([*(f"{v:g}" for v in row), str(label)]) for row, label in zip(x, y, strict=True)]
    (folder / "pool.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    members = np.flatnonzero(rng.random(NUM_RECORDS) < 0.5)
    target = LogisticRegression(C=50.0, max_iter=300).fit(x[members], y[members])
    skops_io.dump(target, folder / "target.skops")
    (folder / "members.txt").write_text("\n".join(map(str, members)) + "\n", encoding="utf-8")
    references = np.argsort(rng.random((NUM_RECORDS, 4)), axis=1).T < 2
    (folder / "refs").mkdir()
    for index, rows in enumerate(references):
        skops_io.dump(LogisticRegression(C=50.0, max_iter=300).fit(x[rows], y[rows]), folder / "refs" / f"r{index}.skops")
    np.save(folder / "membership.npy", references)
    return folder, target, x, y, np.isin(np.arange(NUM_RECORDS), members)


def _argv(folder, *flags):
    argv = ["audit", "mia", "--data", folder / "pool.csv", "--label-col", "digit", "--model", folder / "target.skops", "--members", folder / "members.txt"]
    return [*argv, "--reference-models", folder / "refs", "--reference-membership", folder / "membership.npy", *flags]


def test_users_images_queried_with_their_mirror(digits, tmp_path):
    from sklearn.metrics import roc_auc_score

    folder, target, x, y, members = digits
    code, _, stderr = run_cli([*_argv(folder, "--augment", "flip", "--image-shape", "1,8,8"), "--output", tmp_path / "out", "--no-history"])
    assert code == 0, stderr
    data = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    conventions = {item["name"]: item for item in data["conventions"]}
    assert conventions["image layout"]["decided"] == "explicit" and conventions["query augmentations"]["value"].startswith("2 views")
    # LOSS on views: the mean of log p(y | image) and log p(y | mirrored image), the mirror made here with numpy
    mirrored = x.reshape(-1, 1, 8, 8)[..., ::-1].reshape(len(x), 64)
    rows = np.arange(len(y))
    mean_log_p = (np.log(target.predict_proba(x)[rows, y]) + np.log(target.predict_proba(mirrored)[rows, y])) / 2
    loss = next(item for item in data["attacks"] if item["attack"] == "loss")
    assert loss["auc"] == pytest.approx(roc_auc_score(members, mean_log_p), abs=1e-9)  # every record, the population samples too


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--augment", "flip"], "`--image-shape` must give the images' (channels, height, width) for `--augment`"),
        (["--augment", "flip", "--image-shape", "1,8,9"], "`--image-shape` (1, 8, 9) must hold as many values as the pool's 64 features"),
        (["--augment", "shift", "--image-shape", "1,8,8", "--shift-pixels", "8"], "`--shift-pixels` must be in [1, 7]"),
        (["--augment", "rotate", "--image-shape", "1,8,8"], "`--augment` must be one of 'flip', 'shift'"),
        (["--augment", "flip", "--image-shape", "8x8"], "`--image-shape` must be three comma-separated integers C,H,W"),
        (["--augment", "flip", "--image-shape", "8,8"], "`--image-shape` must be three comma-separated integers C,H,W"),
        (["--augment", "flip", "--image-shape", "0,8,8"], "`--image-shape` must be three positive integers"),
    ],
)
def test_augmentations_without_a_checked_image_shape_are_refused(digits, tmp_path, flags, match):
    folder, *_ = digits
    output = tmp_path / "out"
    assert_refused([*_argv(folder, *flags), "--output", output, "--no-history"], output, match)


def test_trained_references_on_embedded_digits_are_queried_on_every_view(tmp_path):
    """The embedded digits declare 1 x 8 x 8 (checked, no --image-shape); every trained model's signals hold one row per view."""
    pytest.importorskip("torch")
    from sklearn.metrics import roc_auc_score

    from privaudit.audits.mia.training import draws
    from privaudit.runner import RunStore
    from privaudit.stats.mia import loss_scores

    output = tmp_path / "out"
    argv = ["audit", "mia", "--train", "own_models.relu_net:train_torch", "--references", "4", "--augment", "flip", "--seed", "5"]
    code, _, stderr = run_cli([*argv, "--output", output, "--no-history", "--workers", "1"])
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text(encoding="utf-8"))
    conventions = {item["name"]: item for item in data["conventions"]}
    assert conventions["image layout"]["decided"] == "checked" and conventions["image layout"]["value"].startswith("1 x 8 x 8")
    store = RunStore(output / "runs")
    signals = np.array([store.load(index)["signals"] for index in range(5)])
    assert signals.shape == (5, 2, 1797)  # 4 references and the target, 2 views, every record
    _, target_members, _ = draws(5, 1797, 4, data["num_population"])
    mean_log_p = (loss_scores(signals[4, 0]) + loss_scores(signals[4, 1])) / 2
    loss = next(item for item in data["attacks"] if item["attack"] == "loss")
    assert loss["auc"] == pytest.approx(roc_auc_score(target_members, mean_log_p), abs=1e-9)
