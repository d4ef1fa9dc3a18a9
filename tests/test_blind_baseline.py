"""The blind baseline: out-of-fold scores as scikit-learn computes them, a one-column shift flagged and named, a random split flagged at most at the level."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scipy import stats

from privaudit._core.extras import MissingExtraError
from privaudit.audits.blind import (
    BLIND_CONFIDENCE,
    BLIND_FOLDS,
    baseline_from_scores,
    blind_baseline,
    blind_scores,
    encode_columns,
    fold_p_values,
    shuffled_folds,
    split_p_value,
)

pytest.importorskip("sklearn")

SHIFT_SEEDS, RANDOM_SEEDS = 10, 20
FLAKE = 1e-4  # chance that a Monte Carlo bound below fails although the test holds its level exactly


def most_flags(runs, level):
    """The most flags a test of ``level`` may raise in ``runs`` independent random splits: the Binomial(runs, level) quantile at 1 - FLAKE."""
    return int(stats.binom.isf(FLAKE, runs, level))


@pytest.fixture(scope="module")
def diabetes():
    """scikit-learn's diabetes table as a user holds it (``sex`` as text), without its id column: what a blind classifier may see."""
    from privaudit.data.tabular import mixed_table

    return mixed_table("diabetes").drop(columns=["record"])


def shifted_members(values, rng, share=0.75):
    """Members drawn mostly from the upper half of one column's range: P(member) = ``share`` above its median, 1 - ``share`` below."""
    return rng.random(values.size) < np.where(values > np.median(values), share, 1.0 - share)


def test_a_one_column_shift_is_flagged_in_nine_of_ten_seeds_and_the_column_named(diabetes):
    base = int(np.random.default_rng().integers(2**31))
    age = diabetes["age"].to_numpy()
    flagged = named = 0
    for seed in range(base, base + SHIFT_SEEDS):
        result = blind_baseline(diabetes, shifted_members(age, np.random.default_rng(seed)), seed=seed)
        flagged += result.flagged
        named += result.flagged and result.separating[0][0] == "age" and "'age'" in str(result.warning())
    assert flagged >= 9 and named >= 9, f"seeds {base}..: flagged {flagged}, named 'age' first {named} of {SHIFT_SEEDS}"


def test_a_random_split_of_the_diabetes_table_is_rarely_flagged_and_the_flag_is_the_test(diabetes):
    base = int(np.random.default_rng().integers(2**31))
    flags = []
    for seed in range(base, base + RANDOM_SEEDS):
        result = blind_baseline(diabetes, np.random.default_rng(seed).random(len(diabetes)) < 0.5, seed=seed)
        flags.append(result.flagged)
        assert result.flagged == (result.p_value <= 1 - BLIND_CONFIDENCE) and (result.warning() is None) == (not result.flagged)
        assert f"p = {result.p_value:.2g}" in result.describe()
    assert sum(flags) <= most_flags(RANDOM_SEEDS, 1 - BLIND_CONFIDENCE), f"seeds {base}..: {sum(flags)} of {RANDOM_SEEDS} random splits flagged"


def test_a_random_split_is_flagged_at_most_at_the_level_and_each_folds_p_value_is_valid():
    """Fresh random splits of fresh small tables, at a lenient level (20%) so that 60 runs can see a rate above it.

    The flag's rate must stay within binomial slack of the level, and so must
    the first fold's P(p <= level) (one fold per run: the runs are
    independent). The scores are blind_baseline's (the same folds and trees,
    ``test_out_of_fold_scores_and_numbers_are_scikit_learns``), computed once.
    """
    runs, confidence = 60, 0.8
    rng = np.random.default_rng(np.random.SeedSequence())
    flags = first_fold = 0
    for _ in range(runs):
        table = {"a": rng.normal(size=100), "b": rng.choice(["x", "y", "z"], 100), "c": rng.integers(0, 5, 100)}
        members, seed = rng.random(100) < rng.uniform(0.3, 0.7), int(rng.integers(2**31))
        if min(members.sum(), (~members).sum()) < BLIND_FOLDS:
            continue
        scores, held_out = blind_scores(table, members, seed=seed), [test for _, test in shuffled_folds(members.size, BLIND_FOLDS, seed)]
        result = baseline_from_scores(
            scores, members, held_out, folds=BLIND_FOLDS, seed=seed, confidence=confidence, fpr=0.01, columns=("a", "b", "c"), separating=tuple
        )
        fold_p = fold_p_values(scores, members, held_out)
        assert result.p_value == split_p_value(fold_p) and result.flagged == (result.p_value <= 1 - confidence)
        flags += result.flagged
        first_fold += fold_p[0] <= 1 - confidence
    bound = most_flags(runs, 1 - confidence)
    assert flags <= bound and first_fold <= bound, f"{flags} flagged, first fold rejected {first_fold} of {runs}, at most {bound}"


def test_bonferroni_holds_its_level_when_the_folds_reject_on_disjoint_events():
    """The worst dependence for a union of 5 tests: each fold's uniform p-value small on its own fifth of the draws.

    min p x 5 rejects at exactly the level; min p alone (no correction) would reject 5 times as often.
    """
    rng = np.random.default_rng(np.random.SeedSequence())
    draws, level = 20_000, 0.05
    u = rng.random(draws)
    fold_p = np.column_stack([(u + j / BLIND_FOLDS) % 1.0 for j in range(BLIND_FOLDS)])  # each column uniform, their minima disjoint
    rejected = sum(split_p_value(row) <= level for row in fold_p)
    assert rejected <= stats.binom.isf(FLAKE, draws, level), f"{rejected} of {draws}"
    assert sum(row.min() <= level for row in fold_p) > stats.binom.isf(FLAKE, draws, level)  # uncorrected: fails, the test can fail


def test_a_fold_without_both_classes_gives_no_evidence_and_a_single_class_training_part_scores_a_constant():
    member = np.arange(10) < 5
    assert fold_p_values(np.arange(10.0), member, [np.arange(5), np.arange(5, 10)]).tolist() == [1.0, 1.0]
    assert fold_p_values(np.ones(10), member, [np.arange(10)]).tolist() == [1.0]
    assert split_p_value(np.array([1.0, 0.3])) == 0.6 and split_p_value(np.array([0.4, 0.9])) == 0.8


def test_out_of_fold_scores_and_numbers_are_scikit_learns(diabetes):
    """cross_val_predict with the same folds and trees gives the same scores; AUC and TPR at 1% FPR as roc_auc_score and roc_curve read them."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score, roc_curve
    from sklearn.model_selection import KFold, cross_val_predict

    rng = np.random.default_rng()
    seed = int(rng.integers(1000))
    members = shifted_members(diabetes["bmi"].to_numpy(), rng, share=0.6)
    x = diabetes.assign(sex=(diabetes["sex"] == "sex-2").astype(float)).to_numpy(dtype=float)  # the text column's sorted codes
    trees = HistGradientBoostingClassifier(
        max_iter=50,
        max_leaf_nodes=15,
        min_samples_leaf=20,
        l2_regularization=1.0,
        early_stopping=False,
        random_state=seed,
        categorical_features=[name == "sex" for name in diabetes.columns],
    )
    folds = KFold(n_splits=BLIND_FOLDS, shuffle=True, random_state=seed)
    expected = cross_val_predict(trees, x, members, cv=folds, method="predict_proba")[:, 1]
    assert np.allclose(blind_scores(diabetes, members, seed=seed), expected, rtol=0, atol=1e-12)

    result = blind_baseline(diabetes, members, seed=seed)
    assert result.auc == pytest.approx(roc_auc_score(members, expected), abs=1e-12)
    fpr, tpr, _ = roc_curve(members, expected, drop_intermediate=False)
    assert result.tpr == pytest.approx(tpr[fpr <= 0.01].max(), abs=1e-12)
    assert result.auc_low < result.auc < result.auc_high and result.tpr_low <= result.tpr <= result.tpr_high
    assert result.confidence == BLIND_CONFIDENCE and result.folds == BLIND_FOLDS and result.seed == seed
    assert result.columns == tuple(diabetes.columns) and result.num_in == int(members.sum())
    split = list(folds.split(x))
    one_sided = [stats.mannwhitneyu(expected[t][members[t]], expected[t][~members[t]], alternative="greater").pvalue for _, t in split]
    assert result.p_value == pytest.approx(min(1.0, BLIND_FOLDS * min(one_sided)), rel=1e-12)


def test_the_users_table_is_unchanged_and_a_seed_repeats_the_result(diabetes):
    table = diabetes.copy()
    members = shifted_members(table["bmi"].to_numpy(), np.random.default_rng())
    state = np.random.get_state()[1].copy()
    first, second = blind_baseline(table, members, seed=3), blind_baseline(table, members, seed=3)
    assert first == second and table.equals(diabetes) and np.array_equal(np.random.get_state()[1], state)


def test_text_columns_are_categories_and_missing_cells_stay_missing():
    names, x, categorical = encode_columns({"town": np.array(["b", None, "a", "b"], dtype=object), "n": np.array([1, 2, 3, 4])})
    assert names == ("town", "n") and categorical.tolist() == [True, False]
    assert np.array_equal(x[:, 0], [1.0, np.nan, 0.0, 1.0], equal_nan=True)


@pytest.mark.parametrize(
    "table, members, match",
    [
        ({"a": np.arange(10.0)}, np.arange(9) < 5, "`is_member` must be 10 booleans"),
        ({"a": np.arange(10.0)}, np.arange(10) < 3, "`is_member` must hold at least `folds` = 5 members and non-members, got 3 of 10"),
        ([1, 2, 3], np.arange(3) < 1, "`table` must be a pandas DataFrame or a mapping"),
    ],
)
def test_bad_input_names_the_argument(table, members, match):
    with pytest.raises(ValueError, match=match.replace("(", r"\(").replace(")", r"\)")):
        blind_baseline(table, members)


def test_without_scikit_learn_it_says_which_extra_installs_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(MissingExtraError, match="blind baseline.*pip install"):
        blind_baseline({"a": np.arange(20.0)}, np.arange(20) < 10)


def test_a_wide_table_shuffles_only_its_most_separating_columns_and_still_names_the_shifted_one():
    """200 noise columns beside one shifted column: the warning still names it, having shuffled MAX_SHUFFLED columns, not 201."""
    from privaudit.audits import blind

    rng = np.random.default_rng()
    table = {f"noise {i}": rng.normal(size=300) for i in range(200)}
    table["shifted"] = rng.normal(size=300)
    members = shifted_members(table["shifted"], rng, share=0.85)
    assert blind.MAX_SHUFFLED < len(table)
    candidates = blind._candidates(blind.encode_columns(table)[1], members)
    assert candidates.size == blind.MAX_SHUFFLED and 200 in candidates.tolist()
    result = blind_baseline(table, members, seed=int(rng.integers(1000)))
    assert result.flagged and result.separating[0][0] == "shifted"
