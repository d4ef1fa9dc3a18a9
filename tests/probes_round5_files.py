"""The input files of round 5's hostile probes (tests/test_probes_round5.py), written once into one folder.

Good files beside each broken one, so that each probe breaks one thing: a
scores pair, tiny tables for ``audit synthetic-data`` and ``audit mia``,
YAML configs in YAML 1.1's ambiguous spellings, Hugging Face directories
with forged files, and ``--output`` folders the user already filled.
"""

from __future__ import annotations

import json
import os
import pickle
import struct
from pathlib import Path

import numpy as np

ESCAPE = "\x1b[2J\x1b]0;pwned\x07"  # clears the screen and retitles the terminal when printed raw
BIDI = "\u202e"  # right-to-left override: 'abc\u202etxt.exe' shows as 'abcexe.txt'


def _write(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(text, encoding="utf-8")


def _scores(folder: Path) -> None:
    rng = np.random.default_rng(0)
    np.savetxt(folder / "in.txt", rng.normal(1.0, 1.0, 60))
    np.savetxt(folder / "out.txt", rng.normal(0.0, 1.0, 60))
    rows = "".join(f"{value:.4f},{index % 2}\n" for index, value in enumerate(rng.normal(size=40)))
    _write(folder, "scores.csv", "score,member\n" + rows)
    _write(folder, "scores_escape.csv", f"sc{ESCAPE}ore{BIDI}txt,member\n" + rows)
    _write(folder, "canary_table.csv", f"lo{ESCAPE}ss,text\n1.5,a\n2.5,b\n")


def _tables(folder: Path) -> None:
    """``audit synthetic-data``'s tables: 30 training and 30 holdout records with an id, a number and a category."""
    rng = np.random.default_rng(1)
    rows = [f"{index},{int(rng.integers(20, 70))},{'abc'[int(rng.integers(3))]}" for index in range(60)]
    _write(folder, "train.csv", "pid,age,city\n" + "\n".join(rows[:30]) + "\n")
    _write(folder, "holdout.csv", "pid,age,city\n" + "\n".join(rows[30:]) + "\n")
    _write(folder, "synthetic.csv", "age,city\n" + "\n".join(row.split(",", 1)[1] for row in rows[:30]) + "\n")
    _write(folder, "train_header.csv", "pid,age,city\n")
    _write(folder, "train_empty_id.csv", "pid,age,city\n" + "\n".join(rows[:29]) + "\n,33,a\n")
    big = 2**53
    _write(
        folder, "train_big_ids.csv", "pid,age,city\n" + "\n".join(f"{big + index},{row.split(',', 1)[1]}" for index, row in enumerate(rows[:29])) + "\n,40,b\n"
    )
    with_inf = rows[:30]
    with_inf[4] = "4,inf,a"
    _write(folder, "train_inf.csv", "pid,age,city\n" + "\n".join(with_inf) + "\n")
    holdout = rows[30:]
    holdout[2] = "32,-inf,b"
    _write(folder, "holdout_inf.csv", "pid,age,city\n" + "\n".join(holdout) + "\n")
    synthetic = [row.split(",", 1)[1] for row in rows[:30]]
    synthetic[7] = "inf,c"
    _write(folder, "synthetic_inf.csv", "age,city\n" + "\n".join(synthetic) + "\n")
    # one column name typed composed (NFC) in --train and decomposed (NFD) in --holdout, which also has a column too many
    _write(folder, "train_cafe.csv", "pid,caf\u00e9,city\n" + "\n".join(rows[:30]) + "\n")
    _write(folder, "holdout_cafe.csv", "pid,cafe\u0301,city,extra\n" + "\n".join(f"{row},1" for row in rows[30:]) + "\n")
    # a header holding terminal escapes and a bidi override
    _write(folder, "train_escape.csv", f"pid,a{ESCAPE}ge{BIDI},city\n" + "\n".join(rows[:30]) + "\n")
    _write(folder, "holdout_escape.csv", f"pid,a{ESCAPE}ge{BIDI},city\n" + "\n".join(f"{row.split(',')[0]},x,{row.split(',')[2]}" for row in rows[30:]) + "\n")
    _write(folder, "wide.csv", ",".join(f"c{index}" for index in range(20_000)) + "\n" + ("\n".join(",".join(["1"] * 20_000) for _ in range(3))) + "\n")
    _write(folder, "train.txt", "not a table\n")
    try:
        import pandas as pd

        pd.DataFrame({"age": [1, 2, 3], "tags": [[1, 2], [3], [4, 5]]}).to_parquet(folder / "nested.parquet")
    except ImportError:  # pyarrow missing: the case is skipped
        pass


def _labelled(folder: Path) -> None:
    """``audit mia``'s pools."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 2))
    rows = [f"{u:.4f},{v:.4f},{int(u > 0)}" for u, v in x]
    _write(folder, "pool.csv", "a,b,label\n" + "\n".join(rows) + "\n")
    _write(folder, "pool_ids.csv", "pid,a,b,label\n" + "\n".join(f"P{index},{row}" for index, row in enumerate(rows)) + "\n")
    respelled = [f"{u:.4f},{v:.4f},{'01' if index % 3 == 0 and u > 0 else int(u > 0)}" for index, (u, v) in enumerate(x)]
    _write(folder, "pool_01.csv", "a,b,label\n" + "\n".join(respelled) + "\n")
    _write(folder, "pool_escape.csv", f"a{ESCAPE},b{BIDI},label\n" + "\n".join(rows) + "\n")
    (folder / "bad.skops").write_bytes(b"PK\x05\x06" + b"\x00" * 18)  # an empty zip archive: no schema.json
    import zipfile

    with zipfile.ZipFile(folder / "broken.skops", "w") as archive:
        archive.writestr("schema.json", '{"__class__": "Nope", "__module__": "nowhere", "protocol": 99, "_skops_version": "0"}')
    _write(folder, "members.txt", "".join(f"{index}\n" for index in range(10)))


def _configs(folder: Path) -> None:
    """YAML 1.1's readings that differ from what the text says, duplicate keys, and a config too large to parse."""
    configs = {
        "sexagesimal.yaml": "num_references: 1:30\n",
        "octal.yaml": "num_references: 010\n",
        "hexadecimal.yaml": "num_references: 0x10\n",
        "underscore.yaml": "num_references: 1_6\n",
        "yes.yaml": "dataset: breast-cancer\nmode: canary\ntrain_input: yes\n",
        "duplicate.yaml": "num_references: 8\nnum_references: 16\n",
        "duplicate_nested.yaml": "training:\n  epochs: 3\n  epochs: 4\n",
        "duplicate_synthetic.yaml": "num_shadows: 4\nnum_shadows: 8\n",
        "sexagesimal_float.yaml": "delta: 1:30.5\n",
        "octal_synthetic.yaml": "num_canaries: 012\n",
    }
    for name, text in configs.items():
        _write(folder, name, text)
    _write(folder, "large.yaml", "# " + "x" * (2 * 2**20) + "\nnum_references: 8\n")
    _write(folder, "deep.json", "[" * 200_000 + "]" * 200_000)


def _model_directories(folder: Path) -> None:
    """Hugging Face directories with one forged file each (nothing a model loader should ever allocate or unpickle)."""
    gpt2 = {"model_type": "gpt2", "n_layer": 1, "n_head": 1, "n_embd": 4, "vocab_size": 10, "n_positions": 8}
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    good_weights = struct.pack("<Q", len(header)) + header + b"\x00" * 16
    forged = {
        "deep_config": ("config.json", "[" * 200_000 + "]" * 200_000),
        "deep_tokenizer": ("tokenizer_config.json", '{"a":' * 200_000 + "1" + "}" * 200_000),
        "nested_text_config": ("config.json", json.dumps({**gpt2, "text_config": {"text_config": {"text_config": gpt2}}})),
        "header_2_63": ("model.safetensors", struct.pack("<Q", 2**63) + b"{}"),
        "tensor_4tb": ("model.safetensors", None),
        "pickle_weights": ("model.safetensors", pickle.dumps({"w": [0.0] * 4})),
    }
    for name, (file, content) in forged.items():
        directory = folder / name
        directory.mkdir()
        (directory / "config.json").write_text(json.dumps(gpt2))
        (directory / "model.safetensors").write_bytes(good_weights)
        if name == "tensor_4tb":
            huge = json.dumps({"w": {"dtype": "F32", "shape": [1_000_000, 1_000_000], "data_offsets": [0, 4 * 10**12]}}).encode()
            (directory / file).write_bytes(struct.pack("<Q", len(huge)) + huge)
        elif isinstance(content, bytes):
            (directory / file).write_bytes(content)
        else:
            (directory / file).write_text(content)
    _write(folder, "corpus.txt", "".join(f"line {index} of the corpus\n" for index in range(40)))
    from privaudit.canaries.lm_provenance import LMProvenance

    LMProvenance(
        design="prefix-suffix",
        span="secret",
        prefixes=tuple(f"w{index} w{index + 1} " for index in range(8)),
        secrets=tuple(f"s{index}" for index in range(8)),
        included=(True, False) * 4,
        seed=0,
        inclusion_seed=0,
        tokenizer={"vocab_size": 1, "vocab_sha256": "0" * 64},
    ).write(folder / "provenance.json")


def _outputs(folder: Path) -> None:
    """``--output`` folders the user filled: their own report and figure, a folder named like a figure, a symlink loop, a file."""
    own = folder / "own_report"
    own.mkdir()
    (own / "report.html").write_text("<html>my own report</html>")
    (own / "roc.png").write_bytes(b"\x89PNG my own figure")
    own_results = folder / "own_results"
    own_results.mkdir()
    (own_results / "results.json").write_text('{"mine": true}')
    folder_figure = folder / "folder_figure"
    (folder_figure / "roc.png").mkdir(parents=True)
    folder_report = folder / "folder_report"
    (folder_report / "report.html").mkdir(parents=True)
    os.symlink(folder / "loop_b", folder / "loop_a")
    os.symlink(folder / "loop_a", folder / "loop_b")
    os.symlink(folder / "nowhere" / "at_all", folder / "dangling")
    _write(folder, "a_file", "a file, not a folder\n")
    (folder / "a_directory.txt").mkdir()
    (folder / "a_directory.csv").mkdir()
    os.mkfifo(folder / "fifo.txt")
    os.mkfifo(folder / "fifo.csv")


def write_files(folder: Path) -> None:
    """Every input of round 5's probes, into ``folder``."""
    _scores(folder)
    _tables(folder)
    _labelled(folder)
    _configs(folder)
    _model_directories(folder)
    _outputs(folder)
