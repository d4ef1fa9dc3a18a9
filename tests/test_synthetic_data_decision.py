"""The steward's decision on a synthetic table: exact tests of the headline attack's counts, the records named, DCR explained.

The rank test (:func:`privaudit.stats.rank_test.members_above`) is checked
against brute force over every split of a small pool, with and without ties;
the decision against statsmodels' ``fair`` survey as a user holds it (string
ids), a clean release (rows of the same population) and the same release with
20 training rows copied in verbatim and 10 nearly.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from privaudit.audits.synthetic_data.decision import dcr_explanation
from privaudit.stats.rank_test import members_above

pd = pytest.importorskip("pandas")
pytest.importorskip("sklearn")
pytest.importorskip("statsmodels")


def _brute(scores: np.ndarray, num_in: int, fpr: float) -> dict[int, float]:
    """P[count >= x] over every split of ``scores`` into ``num_in`` members and the rest, from the definition (strictly above the cut)."""
    counts = []
    for chosen in itertools.combinations(range(scores.size), num_in):
        member = np.zeros(scores.size, dtype=bool)
        member[list(chosen)] = True
        out = np.sort(scores[~member])[::-1]
        rank = math.floor(fpr * out.size + 1e-9) + 1
        counts.append(int(np.sum(scores[member] > out[rank - 1])))
    counts_array = np.array(counts)
    return {x: float(np.mean(counts_array >= x)) for x in range(num_in + 1)}


@pytest.mark.parametrize("fpr", [0.0, 0.2])
def test_rank_test_p_value_is_the_share_of_splits_with_as_many_members_above(fpr):
    scores = np.arange(9.0)
    tail = _brute(scores, 4, fpr)
    for chosen in itertools.combinations(range(9), 4):
        member = np.zeros(9, dtype=bool)
        member[list(chosen)] = True
        found = members_above(scores[member], scores[~member], fpr=fpr)
        assert found.p_value == pytest.approx(tail[found.count], abs=1e-12)


def test_rank_test_stays_valid_with_ties():
    scores = np.array([0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0])  # copies tie at one distance
    p_values = []
    for chosen in itertools.combinations(range(9), 4):
        member = np.zeros(9, dtype=bool)
        member[list(chosen)] = True
        p_values.append(members_above(scores[member], scores[~member], fpr=0.0).p_value)
    p_values_array = np.array(p_values)
    for level in (0.05, 0.1, 0.2, 0.5):
        assert np.mean(p_values_array <= level) <= level


def test_dcr_explanation_states_the_count_the_binomial_test_needs():
    for n in (120, 1000, 2999):
        line = dcr_explanation(type("D", (), {"share_closer_to_training": 0.5, "binomial_p_value": 0.5, "passes": True})(), n, 0)
        needed = int(line.split("needs ")[1].split(" ")[0])
        assert stats.binomtest(needed, n, 0.5, alternative="greater").pvalue < 0.05 <= stats.binomtest(needed - 1, n, 0.5, alternative="greater").pvalue


def _fair() -> pd.DataFrame:
    from statsmodels.datasets import fair

    frame = fair.load_pandas().data
    frame.insert(0, "record", [f"R-{i:06d}" for i in range(len(frame))])
    return frame


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """400 training, 400 holdout rows of fair; a clean release of 400 other rows; and it with 20 verbatim and 10 near copies of training rows."""
    directory = tmp_path_factory.mktemp("fair-decision")
    frame = _fair()
    rows = np.random.default_rng(1).permutation(len(frame))
    train, holdout, clean = (frame.iloc[np.sort(rows[a:b])] for a, b in ((0, 400), (400, 800), (800, 1200)))
    copied, nudged = train.iloc[:20], train.iloc[20:30].copy()
    nudged["yrs_married"] = nudged["yrs_married"] + 0.01  # a near copy: one number moved by 0.2% of its range
    leaky = pd.concat([clean.iloc[30:], copied, nudged])
    paths = {"train": directory / "train.csv", "holdout": directory / "holdout.csv", "clean": directory / "clean.csv", "leaky": directory / "leaky.csv"}
    for name, table in (("train", train), ("holdout", holdout), ("clean", clean), ("leaky", leaky)):
        table.to_csv(paths[name], index=False)
    return paths, tuple(copied["record"]), tuple(nudged["record"])


def _audit(paths, release, output):
    argv = ["audit", "synthetic-data", "--train", paths["train"], "--holdout", paths["holdout"], "--synthetic", paths[release], "--id-col", "record"]
    done = subprocess.run(
        [sys.executable, "-m", "privaudit", *map(str, argv), "--output", str(output), "--no-history", "--no-sdmetrics"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads((output / "results.json").read_text())["decision"]


def test_a_release_with_copies_gets_a_decision_that_names_them(releases, tmp_path):
    paths, copied, nudged = releases
    console, decision = _audit(paths, "leaky", tmp_path / "leaky")
    assert decision["records_exposed"]
    assert set(copied) <= set(decision["exact_copies"])  # distance 0 on every column
    assert not set(nudged) & set(decision["exact_copies"])  # moved by 0.01: not verbatim
    assert set(decision["near_copies"]) == set(decision["found_ids"]) - set(decision["exact_copies"])
    train, holdout, leaky = (pd.read_csv(paths[name]) for name in ("train", "holdout", "leaky"))
    columns = [c for c in train.columns if c != "record"]
    released = set(map(tuple, leaky[columns].to_numpy().tolist()))
    verbatim = {r for r, row in zip(train["record"], train[columns].to_numpy().tolist(), strict=True) if tuple(row) in released}
    assert set(decision["exact_copies"]) == verbatim  # from the definition: the training rows found whole in the release
    # chance: 400 members before the first of 200 non-members in a random order puts 400/201 there on average
    assert decision["above_all_expected"] == pytest.approx(400 / 201)
    assert decision["above_all_p_value"] == pytest.approx(math.comb(400, len(decision["found_ids"])) / math.comb(600, len(decision["found_ids"])), rel=1e-9)
    first = console.split("Decision: ")[1].splitlines()[0]
    assert first.startswith("The release exposes training records") and f"{len(verbatim)} of the 400 training records appear verbatim" in first
    assert all(record in first for record in decision["exact_copies"][:10])  # named by id, most exposed first, the rest in results.json
    assert "DCR's holdout test" in console.split("Decision: ")[1].splitlines()[1]


def test_a_clean_release_gets_a_decision_that_the_attacks_are_at_chance(releases, tmp_path):
    paths, _, _ = releases
    console, decision = _audit(paths, "clean", tmp_path / "clean")
    assert not decision["records_exposed"]
    # fair's common rows recur in any sample: some members appear verbatim, at the non-members' rate
    assert decision["copies_p_value"] > 0.05 / 3
    assert (
        f"{len(decision['exact_copies'])} of the 400 training records appear verbatim in the release, against {decision['non_member_copies']} of the 200"
        in console
    )
    first = console.split("Decision: ")[1].splitlines()[0]
    assert first.startswith("The attacks are at chance on this release") and "leak" not in first and "expos" not in first
    low, high = decision["tpr_at_1pct_interval"]
    assert low <= 0.01 <= high or decision["at_1pct_p_value"] > 0.025


def test_the_verbatim_copies_p_value_is_the_share_of_splits_with_as_many_member_copies():
    from privaudit.audits.synthetic_data.decision import steward_decision

    closest = np.array([0.0, 0.0, 0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])  # three records recur verbatim in the release
    member_copies, p_values = [], []
    for chosen in itertools.combinations(range(9), 4):
        member = np.zeros(9, dtype=bool)
        member[list(chosen)] = True
        decision = steward_decision(-closest, member, np.arange(9).astype(str), closest, attack="robust DCR", confidence=0.95)
        member_copies.append(len(decision.exact_copies))
        p_values.append(decision.copies_p_value)
    counts = np.array(member_copies)
    for count, p_value in zip(counts, p_values, strict=True):
        assert p_value == pytest.approx(float(np.mean(counts >= count)), abs=1e-12)
