"""smartnoise-synth's MST (and AIM, through the synthetic-data adapter) through privaudit's mechanism adapter: the tables are MST's, the claim is the one passed, the caller's RNGs are
left alone, and an MST run far above its claim is rejected.

smartnoise-synth 1.0.8 needs opacus < 0.15, which the test extra cannot hold, so these run in the smartnoise extra's own environment
(CI's ``.venv-smartnoise``, with PRIVAUDIT_REQUIRE_LIBRARIES=smartnoise: there they fail instead of skipping) and skip where it is absent.
An MST fit takes 1-3 s, so each test fits a few tables only.
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from libraries import library_available

from privaudit.integrations.dp_libraries import smartnoise_synthesizer

pytestmark = [
    pytest.mark.skipif(not library_available("snsynth", extra="smartnoise"), reason="smartnoise-synth is not installed (the smartnoise extra)"),
    pytest.mark.filterwarnings("ignore"),  # smartnoise-synth and mbi warn about their preprocessing on every fit
]

# 30 records, two categorical columns: one-way counts (20, 8, 2) and (22, 8)
TABLE = np.repeat(np.array([[0, 0], [1, 1], [2, 0]]), [20, 8, 2], axis=0)


def test_the_tables_are_msts_with_the_shape_asked_and_at_a_huge_epsilon_its_marginals_are_the_datas():
    """MST measures every one-way marginal; at ε = 10⁴ its noise (σ about 10⁻³ counts) vanishes and mbi's sampling of 30 rows rounds the
    fitted counts, so each table's one-way counts are the data's exactly (np.bincount, not privaudit); at ε = 0.05 (σ in the hundreds)
    they are not, in at least one of the tables."""
    exact = smartnoise_synthesizer("mst", 1e4, rows=30)
    tables = exact(TABLE, 2, np.random.default_rng(0))
    assert tables.shape == (2, 30, 2)
    for table in tables:
        assert set(np.unique(table)) <= {0.0, 1.0, 2.0}
        assert np.bincount(table[:, 0].astype(int), minlength=3).tolist() == [20, 8, 2]
        assert np.bincount(table[:, 1].astype(int), minlength=2).tolist() == [22, 8]
    noisy = smartnoise_synthesizer("mst", 0.05, rows=30)(TABLE, 3, np.random.default_rng(0))
    assert any(np.bincount(table[:, 0].astype(int), minlength=3).tolist() != [20, 8, 2] for table in noisy)


def test_the_claim_is_the_one_passed_and_the_callers_global_generators_are_left_alone():
    mechanism = smartnoise_synthesizer("mst", 1.5, rows=10, delta=1e-7)
    assert mechanism.claim == {"epsilon": 1.5, "delta": 1e-7} and mechanism.neighbouring == "add-remove"
    np.random.seed(123)
    random.seed(7)
    numpy_state, python_state = np.random.get_state(), random.getstate()
    mechanism(TABLE, 1, np.random.default_rng(0))
    after = np.random.get_state()
    assert all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(after, numpy_state, strict=True))
    assert random.getstate() == python_state
    with pytest.raises(ValueError, match="epsilon"):
        smartnoise_synthesizer("mst", 0.0, rows=10)


def test_msts_noise_comes_from_opendps_secure_sampler_so_the_same_rng_gives_other_tables():
    """smartnoise-synth draws MST's Gaussian measurements from OpenDP (snsynth.utils.gaussian_noise), which no seed reaches: the adapter's
    docstring says its audits are valid but not reproducible table for table. At ε = 1 on 30 records the 3 tables of one rng differ from
    those of the same rng again (σ of several counts on each marginal; equal only with a vanishing chance)."""
    mechanism = smartnoise_synthesizer("mst", 1.0, rows=30)
    first, second = (mechanism(TABLE, 3, np.random.default_rng(5)) for _ in range(2))
    assert not np.array_equal(first, second)


def test_an_mst_run_at_epsilon_1e4_is_rejected_against_a_claim_of_1():
    """D' adds a record of the rarest cell (2, 0): at ε = 10⁴ every table of D has 2 such rows and every table of D' 3, so the audit's
    statistics separate the two sides completely and its ε lower bound exceeds the claim of 1 (the correct run's bound, measured
    in the guide, is 0)."""
    from privaudit.audits.mechanism.audit import audit_mechanism

    broken = smartnoise_synthesizer("mst", 1e4, rows=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit_mechanism(broken, TABLE, np.vstack([TABLE, [2, 0]]), samples=40, pilot_samples=20, search_samples=10, epsilon=1.0, delta=1e-9, seed=0)
    assert result.verdict.startswith("claim rejected") and result.rejected and result.epsilon > 1.0, (result.verdict, result.epsilon)


def test_privaudits_reading_of_smartnoises_bin_transformer_matches_it():
    """marginal_cells bins a number as smartnoise-synth's own BinTransformer does (values on edges, outside the bounds, at the upper bound),
    and each bin's cell value is what BinTransformer releases for it (the centre), read from BinTransformer.inverse_transform."""
    import pandas as pd
    from snsynth.transform import BinTransformer

    from privaudit.audits.synthetic_data.smartnoise_generators import smartnoise_mst

    low, high, bins = -3.6, 7.0, 20
    values = np.r_[np.random.default_rng(3).uniform(-6.0, 9.0, 400), np.linspace(low, high, bins + 1), [low - 1e-9, high + 1e-9]]
    generator = smartnoise_mst(1.0, bins=bins, bounds={"x": (low, high)})
    train = pd.DataFrame({"x": [0.0]})
    theirs = BinTransformer(bins=bins, lower=low, upper=high)
    theirs.fit(values.tolist())
    assert generator.marginal_cells(train, pd.DataFrame({"x": values}))[:, 0].tolist() == [int(v) for v in theirs.transform(values.tolist())]
    centres = theirs.inverse_transform(list(range(bins)))
    assert [value for _, value in generator.cell_values(train)["x"]] == pytest.approx(centres, abs=1e-12)


def _frame(seed: int):
    """400 training and 200 holdout records of two numbers on [0, 40) and a plan of two of the three declared categories (as tests/
    test_synthetic_data_cell_canaries.py): the declared domain [0, 100] in 25 bins leaves 15 + 15 bins and `gold` empty, 31 homes."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "record": [f"R-{i:04d}" for i in range(600)],
            "age": rng.uniform(0.0, 40.0, 600),
            "income": rng.uniform(0.0, 40.0, 600),
            "plan": rng.choice(["basic", "plus"], 600),
        }
    )


@pytest.mark.parametrize(("model", "epsilon", "tolerance"), [("mst", 1e4, 3), ("aim", 10.0, 15)])
def test_the_adapter_releases_the_declared_domain_and_keeps_the_schema_and_the_callers_rngs(model, epsilon, tolerance):
    """MST and AIM through the adapter: the schema and declared categories kept, every number a declared bin's centre inside [0, 100], the
    caller's frame and RNGs untouched, and every one-way count near the table's. MST at ε = 10⁴: up to mbi's rounding of its fitted counts
    when it samples (a row or two a cell). AIM at ε = 10: within 15 (7 fits on this machine: at most 5 off; at ε = 1, 50 off, so a binning
    that misreads the table fails here)."""
    import pandas as pd
    from synthetic_generators import MARGINAL_DOMAIN

    from privaudit.audits.synthetic_data.smartnoise_generators import SmartnoiseGenerator

    generator = SmartnoiseGenerator(model, epsilon, 1e-5, **MARGINAL_DOMAIN)
    train = _frame(1).drop(columns="record").iloc[:400]
    before = train.copy()
    np.random.seed(11)
    state = np.random.get_state()
    released = generator(train, seed=0, n=400)
    assert np.array_equal(np.random.get_state()[1], state[1]) and np.random.get_state()[2] == state[2]
    pd.testing.assert_frame_equal(train, before)
    assert list(released.columns) == ["age", "income", "plan"] and set(released["plan"]) <= {"basic", "plus", "gold"}
    centres = {value for _, value in generator.cell_values(train)["age"]}
    assert set(released["age"]) <= centres and set(released["income"]) <= centres and min(centres) > 0.0 and max(centres) < 100.0
    ours, theirs = (generator.marginal_cells(train, frame) for frame in (train, released))
    for j in range(3):
        assert np.abs(np.bincount(ours[:, j], minlength=25) - np.bincount(theirs[:, j], minlength=25)).max() <= tolerance


def test_cell_canaries_flag_msts_run_at_1e4_against_a_claim_of_1_and_not_the_correct_run(tmp_path):
    """The audit reads the adapter's binning: 31 canaries, one in each empty one-way cell, scored by the marginal attack. MST at ε = 10⁴
    claiming 1 keeps each kept canary's home (its count of 1, σ about 10⁻³) and is flagged near its ceiling; MST at ε = 1 (σ about 22 on
    a count of 1, merged by MST's domain compression) is not."""
    from privaudit.audits.synthetic_data import AUDIT, SyntheticDataConfig
    from privaudit.audits.synthetic_data.cell_canaries import MARGINAL_SIGNAL

    frame = _frame(5)
    frame.iloc[:400].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[400:].to_csv(tmp_path / "holdout.csv", index=False)
    common = {"train": str(tmp_path / "train.csv"), "holdout": str(tmp_path / "holdout.csv"), "id_col": "record", "num_shadows": 0}
    common |= {"num_synthetic": 1600, "claimed_epsilon": 1.0, "seed": 0, "sdmetrics": False, "num_canaries": 31}
    broken = AUDIT.run(SyntheticDataConfig(generator="synthetic_generators:smartnoise_mst_1e4", **common)).result.bound
    assert broken.signal == MARGINAL_SIGNAL and broken.canaries.startswith("31 canaries in cells of the generator's binning")
    assert broken.verdict.flagged and broken.bound.epsilon >= 0.8 * broken.ceiling, (broken.bound.epsilon, broken.ceiling)
    correct = AUDIT.run(SyntheticDataConfig(generator="synthetic_generators:smartnoise_mst_1", **common)).result.bound
    assert not correct.verdict.flagged and correct.bound.epsilon <= 1.0
