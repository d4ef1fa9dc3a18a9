"""The synthetic-data audit: inputs checked before generation, DCR and DOMIAS against independent computations, the bound's coverage, resume, report."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from browser import CONSOLE, chromium, needs_chromium, render, rendered_dom
from cli_helpers import assert_refused, run_cli
from scipy import stats

pd = pytest.importorskip("pandas")
pytest.importorskip("sklearn")
pytest.importorskip("pyarrow")

from privaudit.audits.synthetic_data import AUDIT, HEADLINE_ATTACK, SyntheticDataConfig, embedded_tables  # noqa: E402
from privaudit.audits.synthetic_data.attacks import dcr_distances, dcr_statistics, log_kde  # noqa: E402
from privaudit.audits.synthetic_data.bound import canary_bound  # noqa: E402
from privaudit.audits.synthetic_data.generators import most_outlying  # noqa: E402
from privaudit.audits.synthetic_data.table import Encoder, read_frame  # noqa: E402
from privaudit.stats.one_run_combined import one_run_lower_bound  # noqa: E402


@pytest.fixture(params=[0, 1])
def global_seed(request):
    """Two seeds: the assertions hold for any."""
    return request.param


def _table(rng, n):
    """A table with a string id, a categorical string column, missing values in both kinds, and an integer column."""
    frame = pd.DataFrame(
        {
            "patient": [f"P-{i:04d}-{rng.integers(1000)}" for i in range(n)],
            "age": rng.integers(20, 90, size=n),
            "income": rng.lognormal(10, 0.5, size=n),
            "city": rng.choice(["Lyon", "Oslo", "Porto", "Graz"], size=n).astype(object),
        }
    )
    frame.loc[rng.random(n) < 0.1, "income"] = np.nan
    frame.loc[rng.random(n) < 0.1, "city"] = None
    return frame


@pytest.fixture
def files(tmp_path, global_seed):
    rng = np.random.default_rng(global_seed)
    train, holdout = _table(rng, 80), _table(rng, 60)
    holdout["patient"] = [f"H{i}" for i in range(len(holdout))]
    paths = {name: tmp_path / f"{name}.csv" for name in ("train", "holdout")}
    train.to_csv(paths["train"], index=False)
    holdout.to_parquet(paths["holdout"].with_suffix(".parquet"), index=False)
    paths["holdout"] = paths["holdout"].with_suffix(".parquet")
    return paths, train, holdout


def _brute_dcr(a: pd.DataFrame, b: pd.DataFrame, spans: dict) -> np.ndarray:
    """sdmetrics' definition, cell by cell: |x - y| / range capped at 1 (one missing: 1, both: 0), categories 0/1, mean over columns, min over rows."""
    out = []
    for _, row in a.iterrows():
        best = np.inf
        for _, other in b.iterrows():
            total = 0.0
            for column in a.columns:
                x, y = row[column], other[column]
                if column in spans:
                    total += 0.0 if pd.isna(x) and pd.isna(y) else 1.0 if pd.isna(x) or pd.isna(y) else min(abs(x - y) / spans[column], 1.0)
                else:
                    total += 0.0 if (pd.isna(x) and pd.isna(y)) or x == y else 1.0
            best = min(best, total / len(a.columns))
        out.append(best)
    return np.array(out)


def test_dcr_distances_match_sdmetrics_definition_cell_by_cell(global_seed):
    rng = np.random.default_rng(global_seed)
    a, b = _table(rng, 12).drop(columns="patient"), _table(rng, 15).drop(columns="patient")
    ta, tb = read_frame(a, "a"), read_frame(b, "b")
    encoder = Encoder.fit(tb, ta)
    spans = {c: float(b[c].max() - b[c].min()) for c in ("age", "income")}
    assert dcr_distances(encoder.dcr_arrays(ta), encoder.dcr_arrays(tb)) == pytest.approx(_brute_dcr(a, b, spans))


def test_log_kde_is_scipys_gaussian_kde_in_one_dimension(global_seed):
    data = np.random.default_rng(global_seed).normal(size=(300, 1))
    points = np.linspace(-4, 4, 9)[:, None]
    assert log_kde(points, data) == pytest.approx(stats.gaussian_kde(data[:, 0]).logpdf(points[:, 0]), rel=1e-9)


def test_dcr_holdout_test_fails_a_copy_and_scores_by_its_formula(global_seed):
    rng = np.random.default_rng(global_seed)
    train, holdout = read_frame(_table(rng, 60).drop(columns="patient"), "t"), read_frame(_table(rng, 60).drop(columns="patient"), "h")
    encoder = Encoder.fit(train, holdout)
    arrays = encoder.dcr_arrays
    copied = dcr_statistics(arrays(train), arrays(train), arrays(holdout), tuple(map(len, encoder.categories)), np.random.default_rng(0))
    # every synthetic row is a training row: distance 0 to training, > 0 to the holdout (continuous incomes)
    assert copied.share_closer_to_training == pytest.approx(np.mean(dcr_distances(arrays(train), arrays(holdout)) > 0))
    assert copied.overfitting_protection == pytest.approx(min(1.0, 2 * (1 - copied.share_closer_to_training)))
    assert not copied.passes and copied.median_dcr_synthetic == 0.0 and copied.baseline_protection == 0.0


def test_embedded_default_passes_inputs_through_and_leaves_them_unchanged():
    train, holdout = embedded_tables(3)
    assert len(train) + len(holdout) == 178 and not set(train.ids) & set(holdout.ids)
    kinds = {column.name: column.kind for column in train.schema}
    assert kinds["target"] == "categorical" and kinds["alcohol"] == "numeric" and "id" not in kinds


def test_user_tables_with_categories_missing_values_and_string_ids_run_end_to_end(files, tmp_path):
    paths, train, holdout = files
    before = (train.copy(), holdout.copy())
    output = tmp_path / "out"
    code, stdout, stderr = run_cli(
        ["audit", "synthetic-data", "--train", paths["train"], "--holdout", paths["holdout"], "--generator", "synthetic_generators:copying",
         "--id-col", "patient", "--shadows", "0", "--output", output, "--no-history"]
    )  # fmt: skip
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text())
    assert {r["record_id"] for r in data["most_exposed"]} <= set(train["patient"]) | set(holdout["patient"])
    # a copy of the training table: every member is at DCR 0, a non-member only if it equals a training record
    dcr = next(a for a in data["attacks"] if a["attack"] == "dcr")
    assert dcr["auc"] > 0.95 and not data["dcr"]["passes"] and data["dcr"]["median_dcr_synthetic"] == 0.0
    names = {c["name"] for c in data["conventions"]}
    assert {"schema", "categorical encoding", "holdout's role", "record id", "generator contract"} <= names
    pd.testing.assert_frame_equal(train, before[0])
    pd.testing.assert_frame_equal(holdout, before[1])


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda h: h.drop(columns="city"), "`--holdout` must have the columns of `--train`: missing ['city']"),
        (lambda h: h.assign(age=h["age"].astype(str) + "y"), "`--holdout` has columns of another kind than in `--train`: age (categorical, not numeric)"),
        (lambda h: h.iloc[:0], "has a header but no records"),
    ],
)
def test_bad_holdout_is_refused_in_one_line_before_any_generation(files, tmp_path, monkeypatch, change, match):
    paths, _, holdout = files
    bad = tmp_path / "bad.csv"
    change(holdout).to_csv(bad, index=False)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("SYNTHETIC_CALL_LOG", str(log))
    argv = ["audit", "synthetic-data", "--train", paths["train"], "--holdout", bad, "--generator", "synthetic_generators:counting_copula",
            "--id-col", "patient", "--output", tmp_path / "out", "--no-history"]  # fmt: skip
    assert_refused(argv, tmp_path / "out", match)
    assert not log.exists()  # the generator was never called


def test_generator_with_the_wrong_columns_is_refused_after_one_probe_call(files, tmp_path, monkeypatch):
    paths, *_ = files
    log = tmp_path / "calls.log"
    monkeypatch.setenv("SYNTHETIC_CALL_LOG", str(log))
    argv = ["audit", "synthetic-data", "--train", paths["train"], "--holdout", paths["holdout"], "--generator", "synthetic_generators:wrong_columns",
            "--id-col", "patient", "--output", tmp_path / "out", "--no-history"]  # fmt: skip
    assert_refused(argv, tmp_path / "out", "--generator's output")
    assert log.read_text().splitlines() == ["50 10"]  # the probe: 50 training rows, 10 asked for


def test_released_table_with_another_schema_is_refused(files, tmp_path):
    paths, train, _ = files
    synthetic = tmp_path / "synthetic.csv"
    train.drop(columns=["patient", "age"]).to_csv(synthetic, index=False)
    argv = ["audit", "synthetic-data", "--train", paths["train"], "--holdout", paths["holdout"], "--synthetic", synthetic,
            "--id-col", "patient", "--output", tmp_path / "out", "--no-history"]  # fmt: skip
    assert_refused(argv, tmp_path / "out", "`--synthetic` must have the columns of `--train`: missing ['age']")


def test_memorised_outliers_are_found_by_the_headline_at_low_fpr_and_named_by_id(global_seed, tmp_path):
    """The memorising copula's copied records are members, and the headline attack ranks them first."""
    train, _ = embedded_tables(global_seed)
    copied = set(train.ids[most_outlying(train.frame, 5)])
    config = SyntheticDataConfig(generator="privaudit.audits.synthetic_data.generators:memorising_copula", num_shadows=0, seed=global_seed)
    result = AUDIT.run(config).result
    top = {r.record_id for r in result.most_exposed[:5]}
    assert len(top & copied) >= 3, (top, copied)
    headline = result.attack(HEADLINE_ATTACK)
    assert result.num_non_members < 100 and headline.tpr_at(0.01) is None  # too few non-members to read 1% FPR: n/a, never TPR at 0 FP renamed
    assert headline.tpr_at(0.0) >= 3 / result.num_train
    assert "shadow" not in result.threat_model and "canaries" not in result.threat_model  # names only what ran: the release alone
    assert result.threat_model.endswith("only for the release, after one call on at most 50 training rows that checks its contract (not part of any attack)")


def _randomized_response(epsilon, included, rng):
    """Each canary appears in the release with probability e^ε/(1+e^ε) if included, 1/(1+e^ε) if not: ε-DP for every canary."""
    keep = np.exp(epsilon) / (1 + np.exp(epsilon))
    return (rng.random(included.size) < np.where(included, keep, 1 - keep)).astype(float)


@pytest.mark.parametrize("epsilon", [0.0, 2.0])
def test_canary_bound_covers_the_true_epsilon_of_a_randomized_response_generator(epsilon, global_seed):
    rng = np.random.default_rng(global_seed)
    trials, m = 500, 200
    bounds = []
    for _ in range(trials):
        included = rng.random(m) < 0.5
        result = canary_bound(_randomized_response(epsilon, included, rng), included, delta=1e-5, confidence=0.95, claim=None, canaries="rr", coins_seed=0)
        assert result.bound.epsilon <= result.ceiling + 1e-12
        bounds.append(result.bound.epsilon)
    bounds = np.array(bounds)
    slack = stats.binom.ppf(0.999, trials, 0.05)  # at most 5% above the truth, plus Monte Carlo slack
    assert np.sum(bounds > epsilon + 1e-9) <= slack
    if epsilon == 0.0:
        assert np.sum(bounds == 0.0) >= trials - slack  # a null generator gets 0 in >= 95%
    else:
        assert np.median(bounds) > 0.5  # and the test has power


def test_copying_generator_gets_a_positive_bound_flagged_against_its_claim(files, global_seed):
    paths, *_ = files
    config = SyntheticDataConfig(
        train=str(paths["train"]), holdout=str(paths["holdout"]), generator="synthetic_generators:copying", id_col="patient",
        num_shadows=0, num_canaries=100, num_synthetic=200, claimed_epsilon=0.5, seed=global_seed,
    )  # fmt: skip
    bound = AUDIT.run(config).result.bound
    # every canary told apart: the bound of perfect scores on the same coins (redrawn from the recorded seed), below the design's ceiling
    included = np.random.default_rng(bound.coins_seed).random(100) < 0.5
    perfect = one_run_lower_bound(included.astype(float), included, delta=1e-5, confidence=0.95, methods=("steinke",)).epsilon
    assert bound is not None and bound.bound.epsilon == pytest.approx(perfect) and 0 < bound.bound.epsilon <= bound.ceiling
    assert bound.verdict is not None and bound.verdict.flagged and bound.verdict.quantity == "per-release"
    assert bound.verdict.ratio == pytest.approx(bound.bound.epsilon / 0.5)


def test_shadow_generations_resume_with_no_finished_run_repeated(tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("SYNTHETIC_CALL_LOG", str(log))
    config = SyntheticDataConfig(generator="synthetic_generators:counting_copula", num_shadows=4, num_shadow_targets=2)
    first = AUDIT.run(config, checkpoints=tmp_path / "runs", max_workers=1).result
    calls = len(log.read_text().splitlines())
    assert calls == 2 + 4 * 2  # the probe, the release, 4 shadows for each of 2 targets
    second = AUDIT.run(config, checkpoints=tmp_path / "runs", max_workers=1).result
    assert len(log.read_text().splitlines()) == calls + 2  # only the probe and the release again
    assert second.attack("shadow") == first.attack("shadow")


@pytest.fixture(scope="module")
def report_folder(tmp_path_factory):
    output = tmp_path_factory.mktemp("report") / "out"
    code, _, stderr = run_cli(["audit", "synthetic-data", "--shadows", "0", "--canaries", "20", "--output", output, "--no-history"])
    assert code == 0, stderr
    return output


def test_report_page_shows_dcr_beside_the_attacks_the_exposed_ids_and_the_ceiling(report_folder):
    page = (report_folder / "report.html").read_text(encoding="utf-8")
    data = json.loads((report_folder / "results.json").read_text())
    assert "DCR&#x27;s holdout test" in page or "DCR's holdout test" in page
    assert "ROC of every attack on log-log axes" in page and page.count("data:image/png;base64,") >= 2
    assert all(record["record_id"] in page for record in data["most_exposed"]) and "ceiling (every guess right" in page


@needs_chromium
def test_report_renders_in_headless_chromium_with_dcr_beside_the_attacks(report_folder, tmp_path):
    page = report_folder / "report.html"
    dom, log = rendered_dom(chromium(), page)
    assert not CONSOLE.search(log)
    data = json.loads((report_folder / "results.json").read_text())
    assert "DCR's holdout test" in dom and "ROC of every attack on log-log axes" in dom and dom.count("data:image/png;base64,") >= 2
    assert all(record["record_id"] in dom for record in data["most_exposed"])
    assert not CONSOLE.search(render(chromium(), page, tmp_path / "report.png"))


def test_users_own_canary_records_are_inserted_by_coins_and_a_bad_file_is_refused(files, tmp_path, monkeypatch):
    paths, *_ = files
    records = _table(np.random.default_rng(99), 30).drop(columns="patient")
    canaries = tmp_path / "canaries.csv"
    records.to_csv(canaries, index=False)
    common = ["audit", "synthetic-data", "--train", paths["train"], "--holdout", paths["holdout"], "--generator", "synthetic_generators:copying",
              "--id-col", "patient", "--shadows", "0", "--num-synthetic", "200", "--no-history"]  # fmt: skip
    code, _, stderr = run_cli([*common, "--canary-records", canaries, "--output", tmp_path / "out"])
    assert code == 0, stderr
    bound = json.loads((tmp_path / "out" / "results.json").read_text())["bound"]
    assert bound["bound"]["num_canaries"] == 30 and bound["bound"]["epsilon"] > 0 and "--canary-records" in bound["canaries"]
    bad = tmp_path / "bad.csv"
    records.drop(columns="city").to_csv(bad, index=False)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("SYNTHETIC_CALL_LOG", str(log))
    assert_refused(
        [*common, "--canary-records", bad, "--output", tmp_path / "out2"], tmp_path / "out2", "`--canary-records` must have the columns of `--train`"
    )
    assert not log.exists()


class _StatingCopula:
    """The built-in copula with a ``claim`` attribute, as dpmm's adapters carry: the audited object's own statement of its ε."""

    claim = {"epsilon": 0.01, "delta": 1e-5}

    def __call__(self, train_df, *, seed, n):
        from privaudit.audits.synthetic_data.generators import gaussian_copula

        return gaussian_copula(train_df, seed=seed, n=n)


stating_copula = _StatingCopula()


class _KnownContractCopula:
    """The built-in copula declaring ``known_contract``, as privaudit's dpmm and smartnoise adapters do: the audit makes no probe call."""

    known_contract = "a test generator that keeps the contract"

    def __init__(self):
        self.asked: list[int] = []

    def __call__(self, train_df, *, seed, n):
        from privaudit.audits.synthetic_data.generators import gaussian_copula

        self.asked.append(n)
        return gaussian_copula(train_df, seed=seed, n=n)


known_contract_copula = _KnownContractCopula()


def test_the_threat_model_names_the_contract_probe_only_when_the_generator_was_probed(global_seed):
    """A generator declaring its contract is run once, for the release, and the threat model says no more; the probe is named where it ran."""
    known_contract_copula.asked.clear()
    config = SyntheticDataConfig(generator="test_synthetic_data:known_contract_copula", num_shadows=0, seed=global_seed, sdmetrics=False)
    result = AUDIT.run(config).result
    assert known_contract_copula.asked == [result.num_train]  # the release alone: no probe call of <= 50 rows
    assert result.threat_model.endswith("runs the generator (test_synthetic_data:known_contract_copula) only for the release")


def test_a_generators_own_claim_is_named_but_never_used_as_the_claim(global_seed):
    """No --claimed-epsilon: no verdict, and a warning naming the generator's stated ε with the flags that compare it; given, it is the claim, the stated one named beside it."""
    base = SyntheticDataConfig(generator="test_synthetic_data:stating_copula", num_shadows=0, num_canaries=20, seed=global_seed)
    unclaimed = AUDIT.run(base).result
    assert unclaimed.bound is not None and unclaimed.bound.verdict is None
    assert "with canaries, for the bound" in unclaimed.threat_model and "shadow" not in unclaimed.threat_model  # no shadows ran
    (note,) = [w for w in unclaimed.sanity_warnings if "states" in w]
    assert "ε = 0.01, δ = 1e-05" in note and "--claimed-epsilon 0.01 --claimed-delta 1e-05" in note
    claimed = AUDIT.run(dataclasses.replace(base, claimed_epsilon=0.5, claimed_delta=1e-5)).result
    assert claimed.bound.verdict.claim.epsilon == 0.5 and claimed.bound.verdict.claim.source == "user"
    (named,) = [w for w in claimed.sanity_warnings if "states" in w]
    assert "ε = 0.01, δ = 1e-05" in named and "yours, ε = 0.5, δ = 1e-05" in named
