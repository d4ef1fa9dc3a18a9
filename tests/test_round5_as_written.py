"""Round 5 (issue 44): what the hostile probes refuse, the good inputs beside them still pass, exactly as written.

* ids are read as text as they come: 2^53 + 1 and '0045' survive (no float on the way);
* one column name typed composed or decomposed is one column;
* YAML: a quoted '1:30' is the text, plain decimals and true/false are what they say;
* a previous run's ``--output`` may be written again (its results.json marks it as privaudit's);
* a pure-ε claim (``--claimed-delta 0``) is taken by ``audit synthetic-data`` as by the other commands;
* a well-formed safetensors file passes the header check.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from cli_helpers import run_cli

pd = pytest.importorskip("pandas")


def test_ids_are_kept_as_written(tmp_path):
    from privaudit.audits.synthetic_data.table import read_table

    big = 2**53
    ids = [str(big + 1), str(big), "0045", "45"]
    (tmp_path / "t.csv").write_text("pid,age\n" + "".join(f"{value},{index}\n" for index, value in enumerate(ids)))
    table = read_table(tmp_path / "t.csv", "--train", id_col="pid")
    assert table.ids.tolist() == ids  # float would make the first two equal and the last two '45.0'
    assert len(set(table.ids.tolist())) == 4


def test_a_column_name_composed_or_decomposed_is_one_column():
    from privaudit.audits.synthetic_data.table import check_same_schema, read_frame

    train = read_frame(pd.DataFrame({"caf\u00e9": [1.0, 2.0], "x": ["a", "b"]}), "--train")
    holdout = read_frame(pd.DataFrame({"cafe\u0301": [3.0], "x": ["c"]}), "--holdout")
    assert [column.name for column in check_same_schema(train, holdout, "--holdout").schema] == ["caf\u00e9", "x"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: '1:30'\n", {"a": "1:30"}),
        ("a: 90\nb: 0\nc: 10.5\n", {"a": 90, "b": 0, "c": 10.5}),
        ("a: true\nb: false\n", {"a": True, "b": False}),
        ("a: [1, 2]\nb:\n  c: 1e-5\n", {"a": [1, 2], "b": {"c": "1e-5"}}),  # PyYAML reads 1e-5 as text: the config's checks then refuse it
        ("a: -3\nb: '010'\n", {"a": -3, "b": "010"}),
    ],
)
def test_yaml_reads_plain_values_as_they_look(text, expected):
    from privaudit.audits.config import parse_config_text

    assert parse_config_text(text, "c.yaml") == expected


def test_a_duplicate_key_in_a_list_item_is_named_by_its_path():
    from privaudit.audits.config import parse_config_text

    with pytest.raises(ValueError, match=r"gives key 'runs\.1' the key 'seed' twice \(lines 3 and 4\)"):
        parse_config_text("runs:\n  - seed: 1\n  - seed: 2\n    seed: 3\n", "c.yaml")


def test_a_previous_runs_output_is_written_again(tmp_path):
    rng = np.random.default_rng(0)
    np.savetxt(tmp_path / "in.txt", rng.normal(1.0, 1.0, 60))
    np.savetxt(tmp_path / "out.txt", rng.normal(0.0, 1.0, 60))
    argv = ["bound", "--in", tmp_path / "in.txt", "--out", tmp_path / "out.txt", "--output", tmp_path / "run"]
    assert run_cli(argv)[0] == 0
    code, _, stderr = run_cli(argv)
    assert code == 0, stderr
    assert json.loads((tmp_path / "run" / "results.json").read_text())["schema_version"] == 1


def test_a_pure_epsilon_claim_is_taken_by_synthetic_data():
    from privaudit.audits.synthetic_data.types import BUILTIN_GENERATOR, SyntheticDataConfig

    config = SyntheticDataConfig(generator=BUILTIN_GENERATOR, num_canaries=10, claimed_epsilon=1.0, claimed_delta=0.0)
    assert config.claimed_delta == 0.0


def test_a_well_formed_safetensors_file_passes_the_header_check(tmp_path):
    from privaudit.models.model_files import check_safetensors

    header = json.dumps({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}, "__metadata__": {"format": "pt"}}).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\x00" * 16)
    check_safetensors(path, "--model")
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\x00" * 15)  # one byte short
    with pytest.raises(ValueError, match="declares tensor 'w' of 16 bytes but holds 15 bytes"):
        check_safetensors(path, "--model")


def test_an_error_line_escapes_what_a_terminal_would_run():
    from privaudit._core.messages import error_line, has_control_characters

    line = error_line("column 'a\x1b]0;title\x07b\u202ec'\nnext")
    assert not has_control_characters(line) and "\n" not in line
    assert line == "column 'a\\x1b]0;title\\x07b\\u202ec' next"
