"""smartnoise-synth's MST through privaudit's mechanism adapter: the tables are MST's, the claim is the one passed, the caller's RNGs are
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
