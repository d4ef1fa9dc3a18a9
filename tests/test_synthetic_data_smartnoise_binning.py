"""The smartnoise-synth adapter's stated binning, which needs no smartnoise-synth: its cells, its homes' values, and its refusals.

Its agreement with smartnoise-synth's own BinTransformer is checked where smartnoise-synth is installed (tests/test_smartnoise_synth.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from privaudit.audits.synthetic_data.smartnoise_generators import smartnoise_aim, smartnoise_mst  # noqa: E402


def test_an_integer_columns_cell_values_are_the_whole_number_nearest_each_bins_centre_among_those_it_holds():
    """Against brute force over every whole number of the bounds: random bounds (some narrower than a bin's worth of integers) and bins."""
    rng = np.random.default_rng(20261203)
    for _ in range(200):
        low = float(rng.integers(-20, 20)) + float(rng.choice([0.0, 0.3, 0.5]))
        high = low + float(rng.choice([0.7, 1.5, 3.0, 7.3, 20.0, 63.0, 200.0]))
        bins = int(rng.integers(2, 30))
        generator = smartnoise_mst(1.0, bins=bins, bounds={"k": (low, high)})
        train = pd.DataFrame({"k": [math.ceil(low)]})
        whole = np.arange(math.ceil(low), math.floor(high) + 1)
        cells = [min(bins - 1, int(bins * (v - low) / (high - low))) for v in whole]  # BinTransformer's rule, written out
        expected = []
        for cell in range(bins):
            inside = [int(v) for v, c in zip(whole, cells, strict=True) if c == cell]
            if inside:
                centre = low + (cell + 0.5) * (high - low) / bins
                expected.append((cell, min(inside, key=lambda v: (abs(v - centre), v))))
        assert generator.cell_values(train)["k"] == expected, (low, high, bins)
        assert generator.marginal_cells(train, pd.DataFrame({"k": whole}))[:, 0].tolist() == cells


def test_a_float_columns_cells_clamp_into_the_bounds_and_its_values_are_the_bin_centres():
    generator = smartnoise_aim(4.0, bins=5, bounds={"x": (-1.0, 1.0)}, categories={"c": ["a", "b"]})
    train = pd.DataFrame({"x": [0.0], "c": ["a"]})
    frame = pd.DataFrame({"x": [-7.0, -1.0, -0.6, 0.19999, 0.2, 1.0, 3.0, np.nan], "c": ["a", "b", "a", "b", "a", "zz", "a", None]})
    assert generator.marginal_cells(train, frame).tolist() == [[0, 0], [0, 1], [1, 0], [2, 1], [3, 0], [4, -2], [4, 0], [-1, -1]]
    values = generator.cell_values(train)
    assert [cell for cell, _ in values["x"]] == list(range(5)) and values["c"] == [(0, "a"), (1, "b")]
    assert [value for _, value in values["x"]] == pytest.approx([-0.8, -0.4, 0.0, 0.4, 0.8], abs=1e-12)
    assert generator.claim == {"epsilon": 4.0, "delta": 1e-5} and generator.model == "aim"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"bounds": {"x": (1.0, 1.0)}}, "`bounds` of column 'x' must be finite"),
        ({"categories": {"c": ["a", "a"]}}, "`categories` of column 'c' must name at least one value, each once"),
        ({"bounds": {"x": (0.0, 1.0)}, "categories": {"x": ["a"]}}, "in both `bounds` and `categories`"),
        ({"bins": 1}, "`bins` must be an integer >= 2"),
    ],
)
def test_a_bad_domain_is_refused_naming_the_argument(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        smartnoise_mst(1.0, **options)


def test_a_table_with_an_undeclared_column_is_refused_naming_it():
    generator = smartnoise_mst(1.0, bounds={"x": (0.0, 1.0)})
    with pytest.raises(ValueError, match=r"undeclared \['y'\], declared but not in the table \[\]"):
        generator.cell_values(pd.DataFrame({"x": [0.5], "y": [1.0]}))
    with pytest.raises(ValueError, match="`epsilon` must be in"):
        smartnoise_mst(float("inf"))
    with pytest.raises(ValueError, match="`model` must be one of mst, aim"):
        from privaudit.audits.synthetic_data.smartnoise_generators import SmartnoiseGenerator

        SmartnoiseGenerator("privbayes", 1.0)


@pytest.mark.parametrize(
    ("column", "value"),
    [("x", np.nan), ("c", None), ("c", pd.NA), ("c", "z")],
    ids=["missing-number", "missing-category", "pandas-NA", "undeclared-category"],
)
def test_a_missing_value_or_an_undeclared_category_is_refused_naming_the_column_before_any_fit(column, value):
    """Cell -1 for a missing value (None, NaN, pandas' NA), -2 for a category the domain lacks; the call refuses both, naming the column, before
    smartnoise-synth is imported (so here, without it, the ValueError and not the missing extra)."""
    generator = smartnoise_mst(1.0, bins=4, bounds={"x": (0.0, 1.0)}, categories={"c": ["a", "b"]})
    train = pd.DataFrame({"x": [0.2, 0.7, 0.9], "c": pd.array(["a", "b", "a"], dtype="string" if value is pd.NA else object)})
    before = train.copy()
    bad = train.copy()
    bad.loc[1, column] = value
    # row 1 is (0.7, "b"): bin int(4 x 0.7) = 2, category 1, unless its value in `column` was replaced
    assert generator.marginal_cells(train, bad)[1].tolist() == ([-1, 1] if column == "x" else [2, -2 if isinstance(value, str) else -1])
    with pytest.raises(ValueError, match=rf"refuses missing values and undeclared categories: columns \['{column}'\]"):
        generator(bad, seed=0, n=3)
    pd.testing.assert_frame_equal(train, before)
