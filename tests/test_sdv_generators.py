"""SDV's GaussianCopula and CTGAN through privaudit's adapters, and sdmetrics' own DCR scores beside privaudit's (the sdv extra, its own environment).

Where SDV is not installed these tests skip, and one checks instead that the command names the sdv extra; in CI's SDV
environment (PRIVAUDIT_REQUIRE_LIBRARIES=sdv) a missing SDV fails them instead.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli
from libraries import library_available
from rng_helpers import assert_same_rng_states, global_rng_states, seed_everything

HAS_SDV = library_available("sdv.single_table") and library_available("sdmetrics.single_table", extra="sdv")
needs_sdv = pytest.mark.skipif(not HAS_SDV, reason="SDV (the sdv extra) does not import here")
pd = pytest.importorskip("pandas")
pytest.importorskip("sklearn")
from scipy.spatial.distance import cdist  # noqa: E402

if HAS_SDV:
    from sdmetrics.single_table import DCRBaselineProtection, DCROverfittingProtection
    from sdmetrics.single_table.privacy.dcr_utils import calculate_dcr
    from sdv.metadata import Metadata

from privaudit.audits.synthetic_data import AUDIT, SyntheticDataConfig  # noqa: E402
from privaudit.audits.synthetic_data import sdv_generators as sdv  # noqa: E402
from privaudit.audits.synthetic_data.attacks import dcr_distances  # noqa: E402
from privaudit.audits.synthetic_data.generators import MEMORISED_SHARE  # noqa: E402
from privaudit.audits.synthetic_data.table import Encoder, read_frame  # noqa: E402

# sdmetrics' metadata of _table's columns, written here from the table's definition
METADATA = {
    "columns": {"height": {"sdtype": "numerical"}, "weight": {"sdtype": "numerical"}, "visits": {"sdtype": "numerical"}, "grade": {"sdtype": "categorical"}}
}
CTGAN_TEST_EPOCHS = 3  # the adapter's contract, not CTGAN's quality: a few epochs keep each fit to seconds


def _ctgan(train_df, *, seed, n):
    return sdv.ctgan(train_df, seed=seed, n=n, epochs=CTGAN_TEST_EPOCHS, batch_size=50)


ADAPTERS = [pytest.param(sdv.gaussian_copula, id="gaussian-copula"), pytest.param(_ctgan, id="ctgan")]


def _table(seed: int, n: int = 60) -> pd.DataFrame:
    """Floats, an integer column with a missing value, a categorical string column: no column SDV could take for an id or PII."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "height": rng.normal(170.0, 10.0, size=n),
            "weight": rng.lognormal(4.2, 0.2, size=n),
            "visits": rng.integers(0, 12, size=n).astype(float),
            "grade": rng.choice(["low", "mid", "high"], size=n).astype(object),
        }
    )
    frame.loc[3, "visits"] = np.nan
    return frame


def _kinds(frame: pd.DataFrame) -> list[tuple[str, str]]:
    return [(column.name, column.kind) for column in read_frame(frame, "table").schema]


@needs_sdv
@pytest.mark.parametrize("generate", ADAPTERS)
def test_adapters_keep_the_schema_and_leave_the_table_and_every_global_rng_unchanged(generate):
    train = _table(0)
    before_table = train.copy()
    seed_everything(11)
    before = global_rng_states()
    synthetic = generate(train, seed=5, n=37)
    assert_same_rng_states(before, global_rng_states())
    pd.testing.assert_frame_equal(train, before_table)
    assert list(synthetic.columns) == list(train.columns) and len(synthetic) == 37
    assert _kinds(synthetic) == _kinds(train)
    assert set(synthetic["grade"].dropna()) <= {"low", "mid", "high"}
    # the user's seeded stream goes on as if nothing had run: the next draws are those of a fresh seed 11
    drawn = np.random.random(3)
    seed_everything(11)
    assert np.array_equal(drawn, np.random.random(3))


@needs_sdv
@pytest.mark.parametrize("generate", ADAPTERS)
def test_the_same_seed_gives_the_same_table_and_another_seed_another(generate):
    train = _table(1)
    first, again, other = generate(train, seed=3, n=40), generate(train, seed=3, n=40), generate(train, seed=4, n=40)
    pd.testing.assert_frame_equal(first, again)
    assert not np.allclose(first["height"].to_numpy(), other["height"].to_numpy())
    # the global generators' state before the call does not leak into the table
    np.random.seed(99)
    pd.testing.assert_frame_equal(first, generate(train, seed=3, n=40))


@needs_sdv
def test_ctgan_releases_no_training_row_and_no_near_copy():
    train = _table(2, n=80)
    synthetic = _ctgan(train, seed=0, n=80)
    numeric = ["height", "weight"]
    distances = cdist(synthetic[numeric].to_numpy(), train[numeric].to_numpy())
    # continuous columns: an exact or near copy (within 0.1% of a column's spread) would be memorisation
    assert distances.min() > 1e-3 * float(train[numeric].std().min())


@needs_sdv
def test_memorising_variant_copies_the_most_outlying_training_records():
    train = _table(3, n=80)
    synthetic = sdv.memorising_gaussian_copula(train, seed=0, n=60)
    count = int(round(MEMORISED_SHARE * 60))
    numbers = ["height", "weight", "visits"]
    values, released = train[numbers].to_numpy(), synthetic[numbers].to_numpy(dtype=float)
    same = ((released[:, None, :] == values[None, :, :]) | (np.isnan(released[:, None, :]) & np.isnan(values[None, :, :]))).all(axis=2)
    assert same.any(axis=1).sum() == count  # exactly the memorised share of rows are training rows (a copula row never is)
    # brute force: the training rows farthest from their 5th nearest neighbour (standardised numbers, one-hot grade), computed here with scipy
    x = np.hstack(
        [((train[numbers] - train[numbers].mean()) / train[numbers].std(ddof=0)).fillna(0.0).to_numpy(), pd.get_dummies(train["grade"]).to_numpy(float)]
    )
    kth = np.sort(cdist(x, x), axis=1)[:, 5]
    expected = set(np.argsort(-kth, kind="stable")[:count].tolist())
    copied = set(np.flatnonzero(same.any(axis=0)).tolist())
    assert copied == expected


@needs_sdv
@pytest.mark.parametrize(
    ("column", "values", "detected"),
    [
        pytest.param("patient_id", [f"P-{i:04d}" for i in range(60)], "'patient_id' as 'id'", id="id"),
        pytest.param("city", ["Lyon", "Oslo", "Porto"] * 20, "'city' as 'city' (PII)", id="pii"),
    ],
)
def test_an_id_or_pii_column_is_refused_in_one_line_naming_it(column, values, detected):
    train = _table(4)
    train[column] = values
    # SDV's own detection, called here: the adapter refuses exactly what SDV would make up values for
    spec = Metadata.detect_from_dataframes({"t": train}).to_dict()["tables"]["t"]["columns"][column]
    assert spec["sdtype"] not in sdv.SAFE_SDTYPES or spec.get("pii")
    before = global_rng_states()
    with pytest.raises(ValueError) as error:
        sdv.gaussian_copula(train, seed=0, n=10)
    message = str(error.value)
    assert "\n" not in message and message.startswith("`--generator` (SDV)") and detected in message and "--id-col" in message
    assert_same_rng_states(before, global_rng_states())


@needs_sdv
def test_the_command_refuses_an_unsafe_column_before_any_generation(tmp_path):
    train, holdout = _table(5), _table(6)
    for frame in (train, holdout):
        frame["city"] = ["Lyon", "Oslo", "Porto"] * 20
    train.to_csv(tmp_path / "train.csv", index=False)
    holdout.to_csv(tmp_path / "holdout.csv", index=False)
    argv = ["audit", "synthetic-data", "--train", tmp_path / "train.csv", "--holdout", tmp_path / "holdout.csv"]
    argv += ["--generator", "privaudit.audits.synthetic_data.sdv_generators:gaussian_copula", "--shadows", "0", "--output", tmp_path / "out", "--no-history"]
    assert_refused(argv, tmp_path / "out", "'city' as 'city' (PII)")


@pytest.fixture(scope="module")
def released_audit(tmp_path_factory):
    """The audit of SDV's GaussianCopula on a 60-row table by the command, and the tables it read."""
    folder = tmp_path_factory.mktemp("sdv-audit")
    train, holdout = _table(7), _table(8)
    train.to_csv(folder / "train.csv", index=False)
    holdout.to_csv(folder / "holdout.csv", index=False)
    argv = ["audit", "synthetic-data", "--train", folder / "train.csv", "--holdout", folder / "holdout.csv", "--shadows", "0"]
    argv += ["--generator", "privaudit.audits.synthetic_data.sdv_generators:gaussian_copula", "--output", folder / "out", "--no-history"]
    code, stdout, stderr = run_cli(argv)
    assert code == 0, stderr
    return folder, train, holdout, stdout


@needs_sdv
def test_the_result_records_the_sdtypes_sdv_detected(released_audit):
    folder, train, _, _ = released_audit

    result = json.loads((folder / "out" / "results.json").read_text(encoding="utf-8"))
    conventions = {c["name"]: c for c in result["conventions"]}
    detected = Metadata.detect_from_dataframes({"t": train}).to_dict()["tables"]["t"]["columns"]
    assert conventions["SDV metadata (sdtypes)"]["value"] == ", ".join(f"{name}: {spec['sdtype']}" for name, spec in detected.items())
    assert conventions["SDV metadata (sdtypes)"]["decided"] == "checked"


@needs_sdv
def test_the_console_and_the_report_show_sdmetrics_scores_beside_privaudits(released_audit):
    folder, *_, stdout = released_audit
    dcr = json.loads((folder / "out" / "results.json").read_text(encoding="utf-8"))["dcr"]
    shown = f"{dcr['sdmetrics_overfitting_protection']:.3f} / {dcr['sdmetrics_baseline_protection']:.3f}"
    assert "sdmetrics' DCROverfittingProtection / DCRBaselineProtection" in stdout
    page = (folder / "out" / "report.html").read_text(encoding="utf-8")
    assert "sdmetrics&#x27; own DCROverfittingProtection / DCRBaselineProtection</td><td>" + shown in page


def _released(folder, holdout):
    synthetic = sdv.gaussian_copula(holdout, seed=0, n=50)  # any table of the schema: here the holdout's copula
    synthetic.to_csv(folder / "synthetic.csv", index=False)
    return synthetic


@needs_sdv
def test_sdmetrics_scores_in_the_result_are_sdmetrics_own_on_the_same_tables(released_audit):
    folder, _, holdout, _ = released_audit
    _released(folder, holdout)
    config = SyntheticDataConfig(train=str(folder / "train.csv"), holdout=str(folder / "holdout.csv"), synthetic=str(folder / "synthetic.csv"))
    first, second = AUDIT.run(config).result.dcr, AUDIT.run(config).result.dcr
    assert first.sdmetrics_baseline_protection == second.sdmetrics_baseline_protection  # the random baseline is seeded
    read = [pd.read_csv(folder / name) for name in ("train.csv", "synthetic.csv", "holdout.csv")]
    overfitting = DCROverfittingProtection.compute(read[0], read[1], read[2], METADATA, table_name=None)
    assert first.sdmetrics_overfitting_protection == pytest.approx(overfitting, abs=1e-12)
    # sdmetrics' baseline draws its random rows by default_rng(cls._seed): the same seed in sdmetrics' own call gives the same score
    seeded = type("Seeded", (DCRBaselineProtection,), {"_seed": _dcr_seed(config)})
    assert first.sdmetrics_baseline_protection == pytest.approx(seeded.compute(read[0], read[1], METADATA, table_name=None), abs=1e-12)
    assert 0.0 <= first.sdmetrics_baseline_protection <= 1.0


def _dcr_seed(config):
    from privaudit._core.seeding import child_seeds

    return child_seeds(config.seed, ["release", "split", "dcr"])["dcr"]


@needs_sdv
def test_a_released_copy_of_the_training_table_scores_zero_on_both_sdmetrics_scores(released_audit):
    folder, train, _, _ = released_audit
    train.to_csv(folder / "copy.csv", index=False)
    config = SyntheticDataConfig(train=str(folder / "train.csv"), holdout=str(folder / "holdout.csv"), synthetic=str(folder / "copy.csv"))
    dcr = AUDIT.run(config).result.dcr
    # every synthetic row is at distance 0 from the training table: median DCR 0 (baseline 0) and every row closer to training (overfitting 0)
    assert dcr.sdmetrics_baseline_protection == 0.0 and dcr.sdmetrics_overfitting_protection == 0.0


@needs_sdv
def test_privaudits_dcr_distances_equal_sdmetrics_calculate_dcr(released_audit):
    folder, train, holdout, _ = released_audit
    synthetic = _released(folder, holdout)
    tables = [read_frame(frame, name) for frame, name in ((train, "--train"), (synthetic, "--synthetic"))]
    encoder = Encoder.fit(*tables)
    ours = dcr_distances(encoder.dcr_arrays(tables[1]), encoder.dcr_arrays(tables[0]))
    np.testing.assert_allclose(ours, calculate_dcr(synthetic, train, METADATA).to_numpy(), atol=1e-12)


@pytest.mark.skipif(HAS_SDV, reason="SDV is installed here")
def test_without_sdv_the_command_names_the_sdv_extra_in_one_line_before_any_generation(tmp_path):
    _table(9).to_csv(tmp_path / "train.csv", index=False)
    _table(10).to_csv(tmp_path / "holdout.csv", index=False)
    argv = ["audit", "synthetic-data", "--train", tmp_path / "train.csv", "--holdout", tmp_path / "holdout.csv", "--shadows", "0"]
    argv += ["--generator", "privaudit.audits.synthetic_data.sdv_generators:ctgan", "--output", tmp_path / "out", "--no-history"]
    assert_refused(argv, tmp_path / "out", "privaudit[sdv]")


def _fair_slices(folder, copies: int):
    """statsmodels' fair with its codes as integers (as users hold it): 150 training and 150 holdout rows, and a release of 150 other rows
    of which the first ``copies`` are replaced by training rows, verbatim."""
    from statsmodels.datasets import fair  # installed beside sdv by .ci/run: fails, never skips, where SDV runs

    codes = ("rate_marriage", "religious", "educ", "occupation", "occupation_husb")
    frame = fair.load_pandas().data.astype({column: int for column in codes})
    rows = np.random.default_rng(1).permutation(len(frame))
    train, holdout, release = (frame.iloc[np.sort(rows[i * 150 : (i + 1) * 150])].reset_index(drop=True) for i in range(3))
    release.iloc[:copies] = train.iloc[:copies].to_numpy()
    for name, table in (("train", train), ("holdout", holdout), (f"release-{copies}", release)):
        table.to_csv(folder / f"{name}.csv", index=False)
    return codes, train, holdout, release


@needs_sdv
@pytest.mark.parametrize("copies", [0, 120])
def test_integer_codes_read_as_categories_give_sdmetrics_dcr_verdict(tmp_path, copies):
    """With --categorical on the codes, privaudit's DCR verdict is the one sdmetrics' own DCR distances give (the same binomial test on its share closer to training)."""
    from scipy import stats

    codes, train, holdout, release = _fair_slices(tmp_path, copies)
    metadata = {"columns": {c: {"sdtype": "categorical" if c in codes else "numerical"} for c in train.columns}}
    argv = [
        "audit",
        "synthetic-data",
        "--train",
        tmp_path / "train.csv",
        "--holdout",
        tmp_path / "holdout.csv",
        "--synthetic",
        tmp_path / f"release-{copies}.csv",
    ]
    code, _, stderr = run_cli([*argv, "--categorical", ",".join(codes), "--output", tmp_path / "out", "--no-history"])
    assert code == 0, stderr
    dcr = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["dcr"]
    to_train = calculate_dcr(release.astype({c: str for c in codes}), train.astype({c: str for c in codes}), metadata).to_numpy()
    to_holdout = calculate_dcr(release.astype({c: str for c in codes}), holdout.astype({c: str for c in codes}), metadata).to_numpy()
    closer = int(np.sum(to_train < to_holdout))
    sdmetrics_passes = stats.binomtest(closer, len(to_train), 0.5, alternative="greater").pvalue >= 0.05
    assert dcr["passes"] == sdmetrics_passes and dcr["passes"] == (copies == 0)
    expected = DCROverfittingProtection.compute(
        train.astype({c: str for c in codes}), release.astype({c: str for c in codes}), holdout.astype({c: str for c in codes}), metadata, table_name=None
    )
    assert dcr["sdmetrics_overfitting_protection"] == pytest.approx(expected, abs=1e-12)


@needs_sdv
def test_no_sdmetrics_skips_sdmetrics_scores(tmp_path):
    _, *_ = _fair_slices(tmp_path, 0)
    argv = ["audit", "synthetic-data", "--train", tmp_path / "train.csv", "--holdout", tmp_path / "holdout.csv", "--synthetic", tmp_path / "release-0.csv"]
    code, stdout, stderr = run_cli([*argv, "--no-sdmetrics", "--output", tmp_path / "skipped", "--no-history"])
    assert code == 0, stderr
    dcr = json.loads((tmp_path / "skipped" / "results.json").read_text(encoding="utf-8"))["dcr"]
    assert dcr["sdmetrics_overfitting_protection"] is None and dcr["sdmetrics_baseline_protection"] is None
    assert "sdmetrics' DCROverfittingProtection" not in stdout
    code, stdout, stderr = run_cli([*argv, "--output", tmp_path / "scored", "--no-history"])
    assert code == 0 and "sdmetrics' DCROverfittingProtection" in stdout, stderr
