"""dpmm's MST, AIM and PrivBayes through privaudit's adapters: the train schema kept, seeds, ε reaching dpmm, and the noise-free MST's bound.

dpmm pins numpy 1.26, so these run in the dpmm extra's own environment
(CI's ``.venv-dpmm``, with PRIVAUDIT_REQUIRE_LIBRARIES=dpmm: there they fail
instead of skipping) and skip where dpmm is absent.
"""

from __future__ import annotations

import numpy as np
import pytest
from libraries import library_available as available

from privaudit.audits.synthetic_data.dpmm_generators import NO_NOISE_EPSILON, DpmmGenerator, aim, mst, privbayes

pytestmark = pytest.mark.skipif(not available("dpmm.pipelines"), reason="dpmm is not installed (the dpmm extra, its own environment)")

CATEGORIES = ["alpha", "beta", "gamma"]
BOUNDS = {"x": (-4.0, 4.0), "k": (0.0, 60.0)}  # declared: wider than the data, never read from it
ITERATIONS = 300  # dpmm's inference iterations: post-processing, no effect on the claim


def _table(seed: int, n: int = 150):
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 1.0, n)
    return pd.DataFrame(
        {
            "x": np.clip(x, -3.5, 3.5),
            "k": rng.integers(0, 50, n),
            "c": np.array(CATEGORIES, dtype=object)[(x > 0).astype(int) + (x > 1).astype(int)],  # c depends on x
        }
    )


def _declared(model: str, epsilon: float, **options) -> DpmmGenerator:
    return DpmmGenerator(model, epsilon, 1e-5, bounds=BOUNDS, categories={"c": CATEGORIES}, iterations=ITERATIONS, **options)


@pytest.mark.parametrize("make", [mst, aim, privbayes], ids=["mst", "aim", "privbayes"])
def test_adapter_returns_the_train_schema_within_the_declared_domain(make):
    train = _table(0)
    before = train.copy()
    synthetic = make(1.0, bounds=BOUNDS, categories={"c": CATEGORIES}, iterations=ITERATIONS)(train, seed=3, n=70)
    assert list(synthetic.columns) == list(train.columns) and len(synthetic) == 70
    assert synthetic.dtypes.to_dict() == train.dtypes.to_dict()
    assert set(synthetic["c"]) <= set(CATEGORIES)
    for column, (low, high) in BOUNDS.items():
        assert synthetic[column].between(low, high).all()
    assert train.equals(before)  # the caller's frame is left as it was


def test_seeds_differ_and_the_global_random_state_is_left_alone():
    # OpenDP's measurement noise cannot be seeded, so the same seed need not give the same rows (see the module's docstring)
    generator = _declared("privbayes", NO_NOISE_EPSILON)
    train = _table(1)
    state = np.random.get_state()
    first, other = (generator(train, seed=seed, n=60) for seed in (5, 6))
    after = np.random.get_state()
    assert not first.equals(other)
    assert state[0] == after[0] and np.array_equal(state[1], after[1]) and state[2:] == after[2:]


def _total_variation(a, b) -> float:
    p, q = a.value_counts(normalize=True), b.value_counts(normalize=True)
    return 0.5 * float(p.sub(q, fill_value=0.0).abs().sum())


def test_epsilon_reaches_dpmm_noise_free_marginals_match_and_tiny_epsilon_drowns_them():
    import pandas as pd

    train = _table(2, n=200)
    edges = np.linspace(*BOUNDS["x"], 21)  # the generator's own 20 bins of x

    def binned(values):
        return pd.cut(values, edges, right=False)

    n = 2000
    exact = _declared("mst", NO_NOISE_EPSILON)(train, seed=0, n=n)
    # noise-free: each 1-way marginal is the table's, up to the sampling of n rows; 4 binomial standard errors summed over the cells
    for column, real, out in (("c", train["c"], exact["c"]), ("x", binned(train["x"]), binned(exact["x"]))):
        p = real.value_counts(normalize=True).to_numpy()
        tolerance = 0.5 * np.sum(4 * np.sqrt(p * (1 - p) / n)) + 1e-9
        assert _total_variation(real, out) <= tolerance, column
    # ε = 0.01 at δ = 1e-5: ρ ≈ 2e-6, a Gaussian σ in the hundreds on counts that sum to 200: x's 20-bin marginal is the noise's
    # (random, or uniform where dpmm merges the cells the noise buries), far from the table's bell shape; 0.59-0.76 in 3 runs
    noisy = _declared("mst", 0.01)(train, seed=0, n=n)
    assert _total_variation(binned(train["x"]), binned(noisy["x"])) > 0.3 + _total_variation(binned(train["x"]), binned(exact["x"]))


def test_generator_refuses_a_domain_that_does_not_fit_the_table():
    train = _table(3)
    with pytest.raises(ValueError, match="`categories` of column 'c' must hold every value"):
        mst(1.0, categories={"c": ["alpha"]})(train, seed=0, n=10)
    with pytest.raises(ValueError, match="`bounds` names categorical column 'c'"):
        mst(1.0, bounds={"c": (0, 1)})(train, seed=0, n=10)


# the audit's own canaries lie up to 1.5 training ranges beyond each side: the declared bounds cover them, fixed before the coins
AUDIT_BOUNDS = {"x": (-16.0, 16.0), "k": (-80.0, 130.0)}
noise_free = DpmmGenerator("mst", NO_NOISE_EPSILON, 1e-5, bins=100, bounds=AUDIT_BOUNDS, categories={"c": CATEGORIES}, iterations=ITERATIONS)


def test_noise_free_mst_gets_a_positive_bound_held_against_the_claim_given_for_it(tmp_path):
    from privaudit.audits.synthetic_data import AUDIT, SyntheticDataConfig
    from privaudit.audits.synthetic_data.cell_canaries import MARGINAL_SIGNAL

    train, holdout = _table(4, n=120), _table(5, n=60)
    train.to_csv(tmp_path / "train.csv", index=False)
    holdout.to_csv(tmp_path / "holdout.csv", index=False)
    config = SyntheticDataConfig(
        train=str(tmp_path / "train.csv"),
        holdout=str(tmp_path / "holdout.csv"),
        generator="test_dpmm_generators:noise_free",
        num_shadows=0,
        num_canaries=60,
        num_synthetic=480,
        seed=0,
        claimed_epsilon=NO_NOISE_EPSILON,
        claimed_delta=1e-5,
    )
    result = AUDIT.run(config).result
    bound = result.bound
    assert bound is not None and 0.0 < bound.bound.epsilon <= bound.ceiling
    # dpmm's adapter states its binning: cell canaries, scored by the marginal attack on their own cells
    assert bound.signal == MARGINAL_SIGNAL and bound.canaries.startswith("60 canaries in cells of the generator's binning")
    # the claim is the one given (the generator's stated (ε, δ), typed by the user), per release
    assert bound.verdict is not None and bound.verdict.claim.epsilon == NO_NOISE_EPSILON and bound.verdict.claim.delta == 1e-5
    assert bound.verdict.quantity == "per-release" and not bound.verdict.flagged
    assert any(c.name == "claim" and "--claimed-epsilon" in c.evidence for c in result.conventions)


def test_privaudits_reading_of_dpmms_uniform_binner_matches_dpmm():
    """The cells privaudit reads (``marginal_cells``, equal-width bins, the ends clipped) are dpmm's own UniformBinner's, values at the edges
    and outside the bounds included; and a listed integer cell (``cell_values``) receives rows decoded from no other bin."""
    import pandas as pd
    from dpmm.processing.binners import UniformBinner

    rng = np.random.default_rng(0)
    generator = DpmmGenerator("mst", 1.0, bins=20, bounds={"x": (-4.0, 4.0), "k": (0.0, 60.0)})
    edges = np.linspace(-4.0, 4.0, 21)
    x = np.concatenate([rng.uniform(-6.0, 6.0, 2000), edges, [-4.0, 4.0]])
    frame = pd.DataFrame({"x": x, "k": rng.integers(0, 61, len(x))})
    for j, (column, (low, high)) in enumerate([("x", (-4.0, 4.0)), ("k", (0.0, 60.0))]):
        binner = UniformBinner(n_bins=20, lower=low, upper=high, rnd=np.random.RandomState(0))
        values = frame[column].to_numpy()
        binner.fit(values)
        assert generator.marginal_cells(frame, frame)[:, j].tolist() == binner.transform(values).tolist()
    # an integer column in bins 2.5 wide: about half the bins hold their integers' whole rounding intervals; dpmm's own decoding (a uniform
    # draw in the bin, rounded) of every other bin never lands in a listed one
    integer = DpmmGenerator("mst", 1.0, bins=20, bounds={"k": (0.0, 50.0)})
    table = pd.DataFrame({"k": rng.integers(0, 51, 500)})
    binner = UniformBinner(n_bins=20, lower=0.0, upper=50.0, rnd=np.random.RandomState(1))
    binner.fit(table["k"].to_numpy())
    listed = dict(integer.cell_values(table)["k"])
    assert 8 <= len(listed) < 20
    for cell, value in listed.items():
        assert integer.marginal_cells(table, pd.DataFrame({"k": [value]}))[0, 0] == cell
        others = np.repeat([b for b in range(20) if b != cell], 300)
        decoded = binner.inverse_transform(others).astype(np.int64)
        assert cell not in set(integer.marginal_cells(table, pd.DataFrame({"k": decoded}))[:, 0].tolist())
    # and the rule is not vacuous: some unlisted bin does get rows decoded from the bin below it
    spills = []
    for cell in [c for c in range(1, 20) if c not in listed]:
        decoded = binner.inverse_transform(np.full(300, cell - 1)).astype(np.int64)
        spills.append(bool((integer.marginal_cells(table, pd.DataFrame({"k": decoded}))[:, 0] == cell).any()))
    assert any(spills)
