"""Score files: .npy, .csv with or without header, one number per line; errors name the option."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit._core.readers import read_numbers


def test_formats_give_the_same_numbers(tmp_path):
    values = np.array([0.25, -1.5, 3.0])
    np.save(tmp_path / "a.npy", values)
    np.save(tmp_path / "column.npy", values[:, None])
    (tmp_path / "b.csv").write_text("loss\n0.25\n-1.5\n3.0\n")
    (tmp_path / "row.csv").write_text("0.25, -1.5, 3.0\n")
    (tmp_path / "c.txt").write_text("# header comment\n0.25\n\n-1.5\n3\n")
    (tmp_path / "bom.csv").write_text("\ufeff0.25\n-1.5\n3.0\n", encoding="utf-8")  # the BOM is no header
    (tmp_path / "quoted.csv").write_text('"loss"\n"0.25"\n"-1.5"\n"3.0"\n')
    (tmp_path / "header_row.csv").write_text("a,b,c\n0.25,-1.5,3\n")
    for name in ("a.npy", "column.npy", "b.csv", "row.csv", "c.txt", "bom.csv", "quoted.csv", "header_row.csv"):
        assert read_numbers(tmp_path / name, "--in").tolist() == values.tolist()


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("two.csv", "1,2\n3,4\n", "one column or one row"),
        ("bad.txt", "1\nx\n", "line 2: expected a number"),
        ("inf.txt", "1\ninf\n", "finite"),
        ("blank.txt", "\n\n", "at least 1"),
        ("typo.csv", "1.5x\n2\n", "line 1: expected a number"),  # a typo is not a header
        ("nan.csv", "score\n1\nnan\n", "finite"),
    ],
)
def test_bad_files_name_the_option(tmp_path, name, content, match):
    (tmp_path / name).write_text(content)
    with pytest.raises(ValueError, match=match) as error:
        read_numbers(tmp_path / name, "--out")
    assert str(error.value).startswith("`--out`")


def test_missing_file_and_directory_and_matrix(tmp_path):
    with pytest.raises(ValueError, match="file not found"):
        read_numbers(tmp_path / "none.npy", "--in")
    with pytest.raises(ValueError, match="is a directory"):
        read_numbers(tmp_path, "--in")
    np.save(tmp_path / "m.npy", np.ones((2, 2)))
    with pytest.raises(ValueError, match="`--in` must be a 1-D array"):
        read_numbers(tmp_path / "m.npy", "--in")
    np.save(tmp_path / "complex.npy", np.array([1 + 1j]))
    with pytest.raises(ValueError, match="`--in`: cannot read .* expected real numbers"):
        read_numbers(tmp_path / "complex.npy", "--in")
    np.save(tmp_path / "text.npy", np.array(["a", "b"]))
    with pytest.raises(ValueError, match="`--in`"):
        read_numbers(tmp_path / "text.npy", "--in")
    (tmp_path / "binary.npy").write_bytes(b"\x00\x01garbage")
    with pytest.raises(ValueError, match="`--in`: cannot read"):
        read_numbers(tmp_path / "binary.npy", "--in")
