"""benchmarks/tightness.py's Opacus LM rows: each row reads its own benchmark's JSON files, and the user loop's black box is never read as its white box."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("scipy")
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def tightness():
    sys.path.insert(0, str(BENCHMARKS))  # tightness.py imports its sibling run.py
    try:
        import tightness

        yield tightness
    finally:
        sys.path.remove(str(BENCHMARKS))


def _write(path: Path, config: dict, runs: list[dict]) -> None:
    path.write_text(json.dumps({"config": config, "runs": runs}), encoding="utf-8")


def test_user_loop_black_box_rows_read_their_own_files(tightness, tmp_path):
    # opacus_verdict_lm.py --black-box: bound_over_claimed is the black box's, the white box's is nested
    black = [0.01, 0.004, 0.025]
    _write(
        tmp_path / "lm_userloop_blackbox_eps4.json",
        {"epsilon": 4.0, "black_box": {"canaries": 150, "copies": 12}},
        [{"seed": seed, "bound_over_claimed": ratio, "seconds": 10.0 + seed, "white_box": {"end_to_end_ratio": 0.9}} for seed, ratio in enumerate(black)],
    )
    # a --black-box file under the white box's name must not become the white box's row
    _write(tmp_path / "opacus_verdict_lm_eps8.json", {"epsilon": 8.0, "black_box": {"canaries": 150}}, [{"seed": 0, "bound_over_claimed": 0.002}])
    white = [0.84, 0.86]
    _write(tmp_path / "opacus_verdict_lm_eps4.json", {"epsilon": 4.0}, [{"seed": seed, "bound_over_claimed": ratio} for seed, ratio in enumerate(white)])
    rows = {row["case"]: row for row in tightness.lm_rows(tmp_path)}
    user_black = rows["Opacus LM fine-tune (user loop, tiny GPT-2 + LoRA), black box, ε = 4"]["default"]
    assert user_black["ratio"]["mean"] == pytest.approx(sum(black) / 3)
    assert user_black["ratio"]["min"] == pytest.approx(0.004)
    assert user_black["seconds_per_run"] == pytest.approx(11.0)
    assert rows["Opacus LM fine-tune (user loop, tiny GPT-2 + LoRA), white box, ε = 4"]["default"]["ratio"]["mean"] == pytest.approx(0.85)
    white8 = rows["Opacus LM fine-tune (user loop, tiny GPT-2 + LoRA), white box, ε = 8"]["default"]
    assert "opacus_verdict_lm.py --seeds 3 --epsilon 8" in white8["not_measured"]
    black8 = rows["Opacus LM fine-tune (user loop, tiny GPT-2 + LoRA), black box, ε = 8"]["default"]
    assert "--black-box --epsilon 8" in black8["not_measured"] and "lm_userloop_blackbox_eps8.json" in black8["not_measured"]
    own_loop = rows[
        "Opacus LM fine-tune (tiny GPT-2, full-batch DP-Adam at learning rate 10⁻³, 2000 new-token canaries with prefixes of their own), black box, ε = 4"
    ]
    assert "lm_dp.py --epsilon 4" in own_loop["default"]["not_measured"]
    assert len(rows) == 8
    # a ratio below 0.1 keeps three decimals in the table: the mean (0.01 + 0.004 + 0.025) / 3 = 0.013 is not 0.01
    assert "| 0.013 (min 0.004) |" in tightness.table(list(rows.values()))


def test_the_full_fine_tune_loop_and_the_lora_loop_keep_their_own_rows(tightness, tmp_path):
    # opacus_verdict_lm.py --full writes "full": true; a --full file under the LoRA row's name must not become the LoRA row
    _write(
        tmp_path / "lm_userloop_full_blackbox_eps4.json",
        {"epsilon": 4.0, "black_box": {"canaries": 500}, "full": True},
        [{"seed": 0, "bound_over_claimed": 0.06}],
    )
    _write(
        tmp_path / "lm_userloop_blackbox_eps8.json", {"epsilon": 8.0, "black_box": {"canaries": 500}, "full": True}, [{"seed": 0, "bound_over_claimed": 0.04}]
    )
    rows = {row["case"]: row for row in tightness.lm_rows(tmp_path)}
    full4 = rows[
        "Opacus LM fine-tune (user loop, tiny GPT-2, every weight trained, 500 new-token canaries with prefixes of their own, 2 copies), black box, ε = 4"
    ]
    assert full4["default"]["ratio"]["mean"] == pytest.approx(0.06)
    assert "not_measured" in rows["Opacus LM fine-tune (user loop, tiny GPT-2 + LoRA), black box, ε = 8"]["default"]
    full8 = rows[
        "Opacus LM fine-tune (user loop, tiny GPT-2, every weight trained, 500 new-token canaries with prefixes of their own, 2 copies), black box, ε = 8"
    ]
    assert "--full --design new-tokens" in full8["default"]["not_measured"]


def test_the_own_loop_row_reads_only_runs_at_its_learning_rate(tightness, tmp_path):
    # lm_dp.py's files record their learning rate; the row is DP-Adam at 10⁻³, so a file from 10⁻² is not its
    case = "Opacus LM fine-tune (tiny GPT-2, full-batch DP-Adam at learning rate 10⁻³, 2000 new-token canaries with prefixes of their own), black box, ε = 4"
    _write(tmp_path / "lm_dp_eps4.json", {"epsilon": 4.0, "learning_rate": 1e-2}, [{"seed": 0, "dp": {"bound_over_claimed": 0.2, "seconds": 80.0}}])
    assert "not_measured" in {row["case"]: row for row in tightness.lm_rows(tmp_path)}[case]["default"]
    _write(tmp_path / "lm_dp_eps4.json", {"epsilon": 4.0, "learning_rate": 1e-3}, [{"seed": 0, "dp": {"bound_over_claimed": 0.28, "seconds": 80.0}}])
    assert {row["case"]: row for row in tightness.lm_rows(tmp_path)}[case]["default"]["ratio"]["mean"] == pytest.approx(0.28)
