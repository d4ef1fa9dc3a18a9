"""The order-statistics test as privaudit's one-run default when a family is given: library and CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

from privaudit import one_run_lower_bound
from privaudit.stats.ceiling import ceiling_of
from privaudit.stats.families import GaussianDP, null_family
from privaudit.stats.one_run_nulls import SubsampledGaussianDP
from privaudit.stats.order_statistics import order_statistics_bound

DELTA = 1e-5


def _subsampled_scores(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    member = rng.random(n) < 0.5
    return rng.normal(size=n) + 2.0 * (member & (rng.random(n) < 0.2)), member


def test_family_given_runs_one_designed_test_and_beats_the_old_default() -> None:
    scores, member = _subsampled_scores(4_000, 0)
    old = one_run_lower_bound(scores, member, delta=DELTA)
    new = one_run_lower_bound(scores, member, delta=DELTA, null=SubsampledGaussianDP(0.2, DELTA), claim=0.5)
    assert (new.method, new.num_tests, new.family) == ("order-statistics", 1, "subsampled-gaussian")
    assert new.epsilon > 3 * old.epsilon
    assert new.epsilon <= SubsampledGaussianDP(0.2, DELTA).epsilon(2.0)  # below the truth (σ = 0.5)
    # the result is the order-statistics test on the counts it records
    _, r, v, epsilon = new.candidates[0]
    assert epsilon == order_statistics_bound(SubsampledGaussianDP(0.2, DELTA), num_canaries=4_000, num_guesses=r, num_correct=v).epsilon
    assert new.refuted.startswith("not a subsampled Gaussian with sigma >= ") and new.parameter_name == "sigma"
    assert ceiling_of(new) == new.ceiling and new.ceiling is not None and new.ceiling >= new.epsilon


def test_without_a_claim_two_release_fractions_under_bonferroni() -> None:
    scores, member = _subsampled_scores(2_000, 1)
    result = one_run_lower_bound(scores, member, delta=DELTA, null=GaussianDP(DELTA))
    assert result.num_tests == 2 and result.candidates[0][1] in (200, 1_000)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"null": GaussianDP(1e-6)}, "build the null at the bound's delta"),
        ({"null": GaussianDP(DELTA), "methods": ("steinke",)}, "`methods` cannot be combined with `null`"),
        ({"null": "gdp"}, "`null` must be a one-run null family"),
        ({"null": GaussianDP(DELTA), "claim": -1.0}, "`claim` must be > 0"),
    ],
)
def test_bad_null_arguments_are_named(kwargs: dict, match: str) -> None:
    scores, member = _subsampled_scores(200, 2)
    with pytest.raises(ValueError, match=match):
        one_run_lower_bound(scores, member, delta=DELTA, **kwargs)


def test_null_family_by_name() -> None:
    assert null_family("generic", delta=DELTA).name == "eps-delta"
    with pytest.raises(ValueError, match="`family` must be one of"):
        null_family("gaussian", delta=DELTA)


def _csv(tmp_path: Path) -> Path:
    scores, member = _subsampled_scores(2_000, 3)
    path = tmp_path / "scores.csv"
    path.write_text("score,member\n" + "".join(f"{float(s)!r},{int(m)}\n" for s, m in zip(scores, member, strict=True)))
    return path


def test_cli_family_flag(tmp_path: Path) -> None:
    path = _csv(tmp_path)
    argv = ["bound", "--scores", path, "--delta", DELTA, "--one-run", "--json"]
    code, stdout, _ = run_cli([*argv, "--family", "subsampled-gaussian", "--sampling-prob", 0.2, "--family-claim", 0.5])
    assert code == 0
    one_run = json.loads(stdout)["one_run"]
    assert one_run["method"] == "order-statistics" and one_run["refuted"].startswith("not a subsampled Gaussian")
    _, old, _ = run_cli(argv)
    assert one_run["epsilon"] > 2 * json.loads(old)["one_run"]["epsilon"]


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--family", "foo", "--one-run"], "`--family` must be one of"),
        (["--family", "gdp"], "`--family` needs `--one-run`"),
        (["--family", "gdp", "--one-run", "--family-claim", "-1"], "`--family-claim` must be in (0, inf)"),
        (["--family", "dpsgd", "--one-run", "--sampling-prob", "2"], "`--sampling-prob` must be in (0, 1]"),
        (["--family-claim", "1"], "`--family-claim` needs `--family`"),
    ],
)
def test_cli_bad_family_input_exits_2(tmp_path: Path, extra: list[str], match: str) -> None:
    path = _csv(tmp_path)
    assert_refused(["bound", "--scores", path, "--delta", DELTA, "--output", tmp_path / "out", *extra], tmp_path / "out", match)
