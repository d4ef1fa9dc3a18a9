"""The steward's decision on a synthetic table: exact tests of the headline attack's counts, the records named, DCR explained.

The rank test (:func:`privaudit.stats.rank_test.members_above`) is checked
against brute force over every split of a small pool, with and without ties;
the decision against statsmodels' ``fair`` survey as a user holds it (string
ids), a clean release (rows of the same population) and the same release with
20 training rows copied in verbatim and 10 nearly.
"""

from __future__ import annotations

import html
import itertools
import json
import math
import re
import subprocess
import sys
from pathlib import Path

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


def test_where_only_the_1pct_test_rejects_the_members_above_its_threshold_are_named_beside_what_chance_puts_there():
    """A non-member with a twin in the release tops the scores, so no member is above every non-member, and none is copied; 40 members sit
    above the 1% FPR threshold (the 5th highest of 400 non-members). The decision names them, most exposed first, beside the 5.0 a random
    split puts there (the negative hypergeometric's mean, 5 × 400 / 401)."""
    from privaudit.audits.synthetic_data.decision import steward_decision

    rng = np.random.default_rng(0)
    member = np.arange(800) < 400
    scores = rng.normal(0.0, 1.0, 800)
    scores[400] = 10.0  # the non-member with a twin
    scores[:40] += 6.0  # 40 members well above the bulk
    closest = np.where(np.arange(800) == 400, 0.0, 0.3)
    ids = np.char.add("R-", np.arange(800).astype(str))
    decision = steward_decision({"robust-dcr": scores}, member, ids, closest, confidence=0.95)
    cut = np.sort(scores[~member])[::-1][4]  # an independent reading of the threshold
    expected = [f"R-{i}" for i in sorted(np.flatnonzero(member & (scores > cut)), key=lambda i: -scores[i])]
    assert decision.records_exposed and decision.headline.found_ids == () and decision.exact_copies == ()
    assert list(decision.most_exposed_ids) == list(decision.headline.above_1pct_ids) == expected and len(expected) >= 40
    assert decision.headline.at_1pct_expected == pytest.approx(5 * 400 / 401)
    sentence = decision.sentence()
    assert f"the {len(expected)} members above the 1% FPR threshold of the robust DCR are the most exposed, and a random split puts 5.0 there" in sentence
    assert ", ".join(expected[:10]) in sentence and "decision.attacks[0].above_1pct_ids" in sentence
    assert decision.num_exposed == round(len(expected) - 5 * 400 / 401) and f"so about {decision.num_exposed} of them are exposed" in sentence
    # with 20 members above every non-member, that test rejects and names them, and the 1% list is not put forward
    scores[:20] = 20.0
    assert "most exposed" not in steward_decision({"robust-dcr": scores}, member, ids, closest, confidence=0.95).sentence()


def test_a_leak_only_domias_sees_is_caught_and_named_by_domias():
    """The headline at chance, DOMIAS with 30 members above every non-member: the decision rejects on DOMIAS's test (5 tests, each at
    0.05 / 5), names those 30 as near copies and says which attack ranked them; with the headline alone, it is at chance."""
    from privaudit.audits.synthetic_data.decision import steward_decision

    rng = np.random.default_rng(3)
    member = np.arange(600) < 300
    headline, domias = rng.normal(size=600), rng.normal(size=600)
    domias[:30] += 8.0  # 30 members where the release is far denser than the population
    ids = np.char.add("P-", np.arange(600).astype(str))
    closest = np.full(600, 0.3)
    both = steward_decision({"robust-dcr": headline, "domias": domias}, member, ids, closest, confidence=0.95)
    p_domias = math.comb(300, 30) / math.comb(600, 30)  # the first 30 of 600 records all members
    assert both.attacks[1].above_all_p_value == pytest.approx(p_domias, rel=1e-9) and both.level == pytest.approx(0.01)
    assert both.records_exposed and set(both.near_copies) == {f"P-{i}" for i in range(30)} and both.num_exposed == 30
    assert "30 of 300 ranked above every non-member by DOMIAS (1.0 by chance), 30 of them near copies" in both.summary()
    assert not steward_decision({"robust-dcr": headline}, member, ids, closest, confidence=0.95).records_exposed


def test_the_headline_comes_first_whatever_the_callers_order_and_other_attacks_are_refused():
    """The robust DCR is the headline (and orders the exact copies) in either order of the scores; an attack outside the decision's fixed
    pair, or no headline, is refused naming `scores`."""
    from privaudit.audits.synthetic_data.decision import steward_decision

    rng = np.random.default_rng(5)
    member = np.arange(300) < 150
    headline, domias = rng.normal(size=300), rng.normal(size=300)
    closest = np.where(np.arange(300) % 7 == 0, 0.0, 0.3)
    ids = np.arange(300).astype(str)
    given = steward_decision({"robust-dcr": headline, "domias": domias}, member, ids, closest, confidence=0.95)
    swapped = steward_decision({"domias": domias, "robust-dcr": headline}, member, ids, closest, confidence=0.95)
    assert [t.attack for t in swapped.attacks] == ["the robust DCR", "DOMIAS"] and swapped == given
    expected = [str(i) for i in sorted(np.flatnonzero(member & (closest == 0.0)), key=lambda i: (-headline[i], i))]  # by the headline, stable
    assert list(swapped.exact_copies) == expected
    for bad in ({"domias": domias}, {"robust-dcr": headline, "dcr": domias}):
        with pytest.raises(ValueError, match="`scores` must name the headline 'robust-dcr'"):
            steward_decision(bad, member, ids, closest, confidence=0.95)


def test_copies_at_the_non_members_rate_are_not_named_when_another_test_rejects():
    """60 members and 60 non-members recur verbatim (no evidence, p about 0.5) while DOMIAS puts 30 members above every non-member: the
    decision rejects on DOMIAS, names those 30 and counts 30 exposed, and never names the recurring rows."""
    from privaudit.audits.synthetic_data.decision import steward_decision

    rng = np.random.default_rng(3)
    member = np.arange(600) < 300
    headline, domias = rng.normal(size=600), rng.normal(size=600)
    domias[:30] += 8.0
    closest = np.where((np.arange(600) % 300 >= 100) & (np.arange(600) % 300 < 160), 0.0, 0.3)  # rows 100-159 and 400-459 recur
    ids = np.char.add("P-", np.arange(600).astype(str))
    decision = steward_decision({"robust-dcr": headline, "domias": domias}, member, ids, closest, confidence=0.95)
    assert len(decision.exact_copies) == 60 and decision.non_member_copies == 60 and decision.copies_p_value > 0.3
    assert decision.records_exposed and decision.num_exposed == 30 and set(decision.near_copies) == {f"P-{i}" for i in range(30)}
    sentence = decision.sentence()
    assert "60 of the 300 training records appear verbatim in the release, against 60 of the 300 non-members" in sentence
    assert not any(f"P-{i}," in sentence or sentence.endswith(f"P-{i}.") for i in range(100, 160))


def test_a_results_file_written_before_domias_joined_the_decision_still_reads_with_its_headline():
    """The decision's layout before (the headline's tests at its top level, ``attack``: "robust DCR"), built from the recorded run: it reads as
    today's, the same tests under ``attacks[0]``, and the report finds the family's headline."""
    from privaudit.audits.synthetic_data.types import SyntheticDataResult
    from privaudit.report.sections import headline_of

    data = json.loads((Path(__file__).parent / "recorded" / "synthetic-data.json").read_text(encoding="utf-8")) | {"seconds": 1.0}
    (headline,) = [tests for tests in data["decision"]["attacks"] if tests["attack"] == "the robust DCR"]
    old = {key: value for key, value in data["decision"].items() if key != "attacks"}
    old |= {key: value for key, value in headline.items() if key != "ranks_high"} | {"attack": "robust DCR"}
    before = data | {"decision": old}
    read = SyntheticDataResult.validate(before)
    assert len(read.decision.attacks) == 1 and read.decision.headline.found_ids == tuple(headline["found_ids"])
    assert read.decision.headline.above_all_p_value == headline["above_all_p_value"] and read.decision.headline.attack == "the robust DCR"
    assert headline_of(before) is not None and headline_of(before) == headline_of(data)


def test_the_decision_over_two_attacks_rejects_at_most_at_its_level_under_random_splits():
    """Correlated scores of two attacks and recurring rows, membership a random split: the share of splits it calls exposed stays at or below
    5% (Bonferroni over the five tests), beyond Monte Carlo slack (binomial 99.9% quantile)."""
    from privaudit.audits.synthetic_data.decision import steward_decision

    rng = np.random.default_rng(7)
    trials, exposed = 1000, 0
    for _ in range(trials):
        base = rng.normal(size=240)
        scores = {"robust-dcr": base + 0.5 * rng.normal(size=240), "domias": np.round(base + 0.5 * rng.normal(size=240), 1)}  # ties too
        closest = np.where(rng.random(240) < 0.05, 0.0, 0.3)
        member = rng.permutation(240) < 120
        exposed += steward_decision(scores, member, np.arange(240).astype(str), closest, confidence=0.95).records_exposed
    assert exposed <= stats.binom.ppf(0.999, trials, 0.05)


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
    headline, domias = decision["attacks"]  # fixed in advance: the robust DCR, then DOMIAS; 5 tests, each at 0.05 / 5
    assert [headline["attack"], domias["attack"]] == ["the robust DCR", "DOMIAS"]
    found = [set(tests["found_ids"]) for tests in decision["attacks"] if tests["above_all_p_value"] <= 0.05 / 5]
    assert found and set(decision["near_copies"]) == set.union(*found) - set(decision["exact_copies"])
    train, holdout, leaky = (pd.read_csv(paths[name]) for name in ("train", "holdout", "leaky"))
    columns = [c for c in train.columns if c != "record"]
    released = set(map(tuple, leaky[columns].to_numpy().tolist()))
    verbatim = {r for r, row in zip(train["record"], train[columns].to_numpy().tolist(), strict=True) if tuple(row) in released}
    assert set(decision["exact_copies"]) == verbatim  # from the definition: the training rows found whole in the release
    # chance: 400 members before the first of 200 non-members in a random order puts 400/201 there on average
    for tests in (headline, domias):
        assert tests["above_all_expected"] == pytest.approx(400 / 201)
        assert tests["above_all_p_value"] == pytest.approx(math.comb(400, len(tests["found_ids"])) / math.comb(600, len(tests["found_ids"])), rel=1e-9)
    first = console.split("Decision: ")[1].splitlines()[0]
    assert first.startswith("The release exposes training records") and f"{len(verbatim)} of the 400 training records appear verbatim" in first
    assert all(record in first for record in decision["exact_copies"][:10])  # named by id, most exposed first, the rest in results.json
    assert "DCR's holdout test" in console.split("Decision: ")[1].splitlines()[1]
    # the first line: the decision, with the TPR at FPR 0 beside the TPR at 1% FPR and the share a random split finds there
    assert console.startswith("Decision: ")
    found, tpr = len(headline["found_ids"]), headline["at_1pct_count"] / 400
    assert f"ranks {found} training records ({found / 400:.1%}, its TPR at FPR 0) above every non-member" in first
    assert f"It finds {tpr:.1%} of the members" in first and f"where a random split finds {headline['at_1pct_expected'] / 400:.1%}" in first
    assert f"{headline['at_1pct_expected'] / 400:.1%}" == f"{3 / 201:.1%}"  # above the 3rd highest of 200 non-members: 3/201 of members by chance
    assert "most exposed (ranked by the robust DCR)" in console


def test_a_clean_release_gets_a_decision_that_the_attacks_are_at_chance(releases, tmp_path):
    paths, _, _ = releases
    console, decision = _audit(paths, "clean", tmp_path / "clean")
    assert not decision["records_exposed"]
    # fair's common rows recur in any sample: some members appear verbatim, at the non-members' rate
    assert decision["copies_p_value"] > 0.05 / 5
    assert (
        f"{len(decision['exact_copies'])} of the 400 training records appear verbatim in the release, against {decision['non_member_copies']} of the 200"
        in console
    )
    first = console.split("Decision: ")[1].splitlines()[0]
    assert first.startswith("The attacks are at chance on this release") and "leak" not in first and "expos" not in first
    for tests in decision["attacks"]:
        low, high = tests["tpr_at_1pct_interval"]
        assert low <= 0.01 <= high or tests["at_1pct_p_value"] > 0.025


def test_the_verbatim_copies_p_value_is_the_share_of_splits_with_as_many_member_copies():
    from privaudit.audits.synthetic_data.decision import steward_decision

    closest = np.array([0.0, 0.0, 0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])  # three records recur verbatim in the release
    member_copies, p_values = [], []
    for chosen in itertools.combinations(range(9), 4):
        member = np.zeros(9, dtype=bool)
        member[list(chosen)] = True
        decision = steward_decision({"robust-dcr": -closest}, member, np.arange(9).astype(str), closest, confidence=0.95)
        member_copies.append(len(decision.exact_copies))
        p_values.append(decision.copies_p_value)
    counts = np.array(member_copies)
    for count, p_value in zip(counts, p_values, strict=True):
        assert p_value == pytest.approx(float(np.mean(counts >= count)), abs=1e-12)


def _chance_numbers(attacks: dict, member: np.ndarray, copy: np.ndarray, confidence: float = 0.95) -> dict:
    """The decision's numbers from each decision attack's scores and the records' exact copies, by counting and exact combinatorics (no scipy law).

    ``attacks``: label -> scores, in the decision's order. ``copy`` flags the records whose distance to the closest synthetic row is 0 on any
    per-column scale: DCR's, read from its own curve (its distances are checked against brute force in test_synthetic_data_attacks).
    """
    m, k = int(member.sum()), int((~member).sum())
    total = m + k

    def flagged_tail(member_flagged: int, flagged: int) -> float:  # P[at least this many members among the flagged] (hypergeometric)
        return sum(math.comb(m, x) * math.comb(k, flagged - x) for x in range(member_flagged, min(m, flagged) + 1)) / math.comb(total, flagged)

    def before_rank(count: int, rank: int) -> float:  # P[at least `count` members before the rank-th non-member in a random order]
        exactly = [math.comb(x + rank - 1, x) * math.comb(total - x - rank, k - rank) for x in range(m + 1)]
        return sum(exactly[count:]) / math.comb(total, k)

    alpha = 1 - confidence
    level = alpha / (1 + 2 * len(attacks))  # Bonferroni over the copies' test and each attack's two
    member_copies, out_copies = int(np.sum(copy & member)), int(np.sum(copy & ~member))
    numbers: dict = {"member_copies": member_copies, "out_copies": out_copies, "copies_p": flagged_tail(member_copies, member_copies + out_copies)}
    rank = math.floor(0.01 * k + 1e-9) + 1  # non-members allowed above the 1% FPR threshold, plus one
    numbers["attacks"] = {}
    for label, scores in attacks.items():
        in_scores, out_scores = scores[member], scores[~member]
        above = in_scores > out_scores.max()
        at_1pct = int(np.sum(in_scores > np.sort(out_scores)[::-1][rank - 1]))
        interval = (
            0.0 if at_1pct == 0 else stats.beta.ppf(alpha / 2, at_1pct, m - at_1pct + 1),
            1.0 if at_1pct == m else stats.beta.ppf(1 - alpha / 2, at_1pct + 1, m - at_1pct),
        )  # Clopper–Pearson from its definition
        p_values = (before_rank(int(above.sum()), 1), before_rank(at_1pct, rank))
        numbers["attacks"][label] = {
            "above_all": int(above.sum()),
            "near": int(np.sum(above & ~copy[member])),
            "above_all_chance": m / (k + 1),  # members before the first of k non-members: m / (k + 1) on average
            "at_1pct": at_1pct,
            "at_1pct_chance": rank / (k + 1),  # the share of members above the rank-th highest non-member, on average
            "interval": interval,
            "p_values": p_values,
            "rejects": tuple(p <= level for p in p_values),
        }
    numbers["copies_rejects"] = numbers["copies_p"] <= level
    numbers["any_rejects"] = numbers["copies_rejects"] or any(any(a["rejects"]) for a in numbers["attacks"].values())
    return numbers


def _expected_summary(numbers: dict, m: int = 400, k: int = 200) -> str:
    """The one-line verdict from the numbers: the tests that reject, each attack named, or the headline's numbers at chance."""

    def found(label: str, a: dict, records: str = "") -> str:
        return f"{a['above_all']} of {m}{records} ranked above every non-member by {label} ({a['above_all_chance']:.1f} by chance)"

    def at_1pct(label: str, a: dict) -> str:
        low, high = a["interval"]
        return f"{a['at_1pct'] / m:.1%} [{low:.1%}, {high:.1%}] found at 1% FPR by {label} ({a['at_1pct_chance']:.1%} by chance)"

    headline = next(iter(numbers["attacks"].items()))
    if not numbers["any_rejects"]:
        return f"The attacks are at chance on this release: {found(*headline, ' training records')}; {at_1pct(*headline)}"
    parts = [f"{numbers['member_copies']} of {m} appear verbatim in it ({numbers['out_copies']} of {k} non-members do)"] if numbers["copies_rejects"] else []
    for label, a in numbers["attacks"].items():
        parts += [found(label, a) + (f", {a['near']} of them near copies" if a["near"] else "")] if a["rejects"][0] else []
        parts += [at_1pct(label, a)] if a["rejects"][1] else []
    return "The release exposes training records: " + "; ".join(parts)


def _report(paths, release, directory):
    """The Python API's run of ``release`` (its scores), its results and figures written, and the report page built from the folder."""
    from privaudit.audits.synthetic_data import AUDIT, SyntheticDataConfig
    from privaudit.report.html import render_report
    from privaudit.report.runs import write_run
    from privaudit.report.sections import load_results, section_for

    config = SyntheticDataConfig(train=str(paths["train"]), holdout=str(paths["holdout"]), synthetic=str(paths[release]), id_col="record", sdmetrics=False)
    run = AUDIT.run(config)
    write_run(directory, run)
    data = load_results(directory)
    section = section_for(data, directory)
    curves = run.observations["curves"]
    member = curves["robust-dcr"][1]
    copy = curves["dcr"][0] == 0.0  # minus the distance on the training ranges: 0 only for an exact copy
    numbers = _chance_numbers({"the robust DCR": curves["robust-dcr"][0], "DOMIAS": curves["domias"][0]}, member, copy)
    return run.result, section, render_report([section]), numbers


def _opening(page: str) -> str:
    """The text of the first element after the section's title: what the reader sees first."""
    after_title = page.split('<section id="audit-0">', 1)[1].split("</h2>", 1)[1].lstrip()
    first = after_title.split("</div>", 1)[0] if after_title.startswith("<div") else after_title.split("</p>", 1)[0]
    return re.sub(r"<[^>]+>", " ", html.unescape(first))


def test_the_report_opens_with_a_decision_that_names_the_verbatim_copies(releases, tmp_path):
    paths, copied, _ = releases
    result, section, page, expected = _report(paths, "leaky", tmp_path / "leaky")
    decision, headline = result.decision, expected["attacks"]["the robust DCR"]
    assert expected["member_copies"] == len(decision.exact_copies) >= len(copied) and expected["out_copies"] == decision.non_member_copies
    assert expected["copies_rejects"] and headline["rejects"][0]  # 20 copies among 400 members: both counts far above chance
    opening = _opening(page)
    assert '<div class="decision flagged">' in page.split("</h2>", 1)[1][:40]  # the decision first, in red, above the number
    summary = html.unescape(re.search(r'<p class="summary">(.*?)</p>', page).group(1))
    assert summary == section.decision_summary and opening.strip().startswith(summary)
    assert summary == _expected_summary(expected)  # every rejecting test, each attack named
    assert all(record in opening for record in decision.exact_copies[:10])  # named by id in the full sentence under it
    p_values = [expected["copies_p"], *(p for a in expected["attacks"].values() for p in a["p_values"])]
    assert all(f"(p = {p:.2g})" in opening for p in p_values)  # every test's p-value, the rejecting ones and the others
    # the number beside it: the TPR at 1% FPR, with the members above every non-member in its label
    assert section.value == pytest.approx(headline["at_1pct"] / 400) and f"at FPR 0: {headline['above_all']} of 400 members" in section.label
    assert page.index('class="decision') < page.index('class="headline beside"') < page.index("<h3>Numbers</h3>")
    assert "The records the robust DCR (the headline attack) scores highest" in page  # the most exposed name the attack that ranked them


def test_the_report_of_a_clean_release_opens_with_the_attacks_at_chance(releases, tmp_path):
    paths, _, _ = releases
    result, section, page, expected = _report(paths, "clean", tmp_path / "clean")
    headline = expected["attacks"]["the robust DCR"]
    assert not expected["any_rejects"] and not result.decision.records_exposed
    opening = _opening(page)
    assert '<div class="decision">' in page.split("</h2>", 1)[1][:40] and 'class="flag"' not in page
    assert section.decision_summary == _expected_summary(expected)
    assert "leak" not in opening and "expos" not in opening  # no leak spoken of where the attacks are at chance
    assert all(f"(p = {p:.2g})" in opening for a in expected["attacks"].values() for p in a["p_values"])
    assert section.value == pytest.approx(headline["at_1pct"] / 400) and f"at FPR 0: {headline['above_all']} of 400 members" in section.label
    # the contents line opens with the same verdict
    assert html.unescape(page.split('<ul class="toc">', 1)[1].split("</li>", 1)[0]).split(": ", 1)[1].startswith(section.decision_summary)
