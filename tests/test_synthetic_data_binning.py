"""Canaries against a marginal generator's binning: the cells privaudit reads, and the warning when no canary has a cell of its own."""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from privaudit.audits.synthetic_data.bound import binning_power_warning  # noqa: E402
from privaudit.audits.synthetic_data.dpmm_generators import mst  # noqa: E402
from privaudit.audits.synthetic_data.generation import make_canaries  # noqa: E402
from privaudit.audits.synthetic_data.table import Table, read_frame  # noqa: E402


def _train(rng, size=400):
    ages = rng.uniform(20, 60, size)
    ages = np.where((ages >= 40) & (ages < 44), ages - 10, ages)  # the bin [40, 44) left empty
    return pd.DataFrame({"age": ages, "plan": rng.choice(["basic", "plus"], size)})


def test_the_cells_are_equal_width_bins_between_the_bounds_with_the_ends_clipped():
    rng = np.random.default_rng(0)
    generator = mst(epsilon=1.0, bins=10, bounds={"age": (20.0, 60.0)}, categories={"plan": ["basic", "plus", "gold"]})
    frame = pd.DataFrame({"age": rng.uniform(0, 80, 500), "plan": rng.choice(["basic", "plus", "gold"], 500)})
    cells = generator.marginal_cells(frame, frame)
    edges = np.linspace(20.0, 60.0, 11)  # an independent reading: np.digitize on the 11 edges, clipped into the 10 bins
    assert cells[:, 0].tolist() == np.clip(np.digitize(frame["age"], edges) - 1, 0, 9).tolist()
    assert cells[:, 1].tolist() == [["basic", "plus", "gold"].index(value) for value in frame["plan"]]


def test_outlier_canaries_clipped_into_filled_end_bins_are_warned_of_and_canaries_in_an_empty_bin_are_not():
    rng = np.random.default_rng(1)
    train = _train(rng)
    generator = mst(epsilon=1.0, bins=10, bounds={"age": (20.0, 60.0)}, categories={"plan": ["basic", "plus"]})
    outliers = make_canaries(Table(train, np.arange(len(train)).astype(str), read_frame(train, "train").schema), 30, np.random.default_rng(2))
    warning = binning_power_warning(generator, train, outliers)
    assert warning is not None and warning.startswith("30 of 30 canaries have no one-way cell of their own in the generator's binning (10 bins")
    in_the_gap = pd.DataFrame({"age": rng.uniform(40, 44, 30), "plan": rng.choice(["basic", "plus"], 30)})
    assert binning_power_warning(generator, train, in_the_gap) is None
    mixed = pd.concat([in_the_gap.iloc[:20], outliers.iloc[:10]], ignore_index=True)
    assert binning_power_warning(generator, train, mixed).startswith("10 of 30 canaries")


def test_a_generator_without_a_binning_gets_no_warning():
    train = _train(np.random.default_rng(3))
    assert binning_power_warning(lambda frame, *, seed, n: frame, train, train.iloc[:5]) is None
