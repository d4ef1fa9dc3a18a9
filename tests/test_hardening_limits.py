"""Limits checked before the work, through the CLI: one line naming the flag and its range, exit 2, nothing written, and at once.

Each case once broke a user's machine or gave a silent wrong answer: a 1 KB
YAML alias bomb, a forged .npy header claiming 4e6 x 2e7 values, a billion
LM canaries, a secret longer than the model's context, provenance values of
the wrong JSON type, choices ignored when --model is absent, a pool of one
class, and a library call that would have audited the built-in dataset.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

BOMB = "".join(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n" for prev, name in zip([None, *"abcdefgh"], "abcdefghi"))


def test_a_yaml_alias_bomb_is_refused_in_one_line(tmp_path):
    config = tmp_path / "bomb.yaml"
    config.write_text(BOMB, encoding="utf-8")
    assert len(BOMB) < 1024
    output = tmp_path / "out"
    line = assert_refused(["audit", "mechanism", "--config", config, "--output", output, "--no-history"], output, "`--config`")
    assert "alias" in line


def test_a_yaml_python_tag_is_still_refused(tmp_path):
    config = tmp_path / "tag.yaml"
    marker = tmp_path / "ran"
    config.write_text(f'seed: !!python/object/apply:os.system ["touch {marker}"]\n', encoding="utf-8")
    output = tmp_path / "out"
    assert_refused(["audit", "mechanism", "--config", config, "--output", output, "--no-history"], output, "`--config`")
    assert not marker.exists()


def _forged_npy(path: Path) -> None:
    """An 800-byte .npy whose header claims 4e6 x 2e7 float64 values (about 580 TiB)."""
    header = repr({"descr": "<f8", "fortran_order": False, "shape": (4_000_000, 20_000_000)}).encode("latin1")
    header += b" " * (64 - (10 + len(header) + 1) % 64) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"\0" * (800 - 10 - len(header)))
    assert ast.literal_eval(header.decode("latin1").strip())["shape"] == (4_000_000, 20_000_000)


def test_a_forged_npy_header_as_mechanism_dataset_is_one_line(tmp_path):
    _forged_npy(tmp_path / "forged.npy")
    output = tmp_path / "out"
    line = assert_refused(["audit", "mechanism", "--dataset", tmp_path / "forged.npy", "--output", output, "--no-history"], output, "`--dataset`")
    assert "forged" in line and "Unable to allocate" not in line


def test_a_forged_npy_header_as_reference_membership_is_one_line(tmp_path):
    skops_io = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(200, 3)), rng.integers(0, 2, 200)
    (tmp_path / "pool.csv").write_text("a,b,c,label\n" + "".join(f"{r[0]:.4f},{r[1]:.4f},{r[2]:.4f},{c}\n" for r, c in zip(x, y)), encoding="utf-8")
    skops_io.dump(LogisticRegression().fit(x[:100], y[:100]), tmp_path / "target.skops")
    (tmp_path / "members.txt").write_text("\n".join(map(str, range(100))) + "\n", encoding="utf-8")
    (tmp_path / "refs").mkdir()
    for index in range(4):
        skops_io.dump(LogisticRegression().fit(x[index::4], y[index::4]), tmp_path / "refs" / f"ref-{index}.skops")
    _forged_npy(tmp_path / "forged.npy")
    output = tmp_path / "out"
    argv = ["audit", "mia", "--data", tmp_path / "pool.csv", "--label-col", "label", "--model", tmp_path / "target.skops"]
    argv += ["--members", tmp_path / "members.txt", "--reference-models", tmp_path / "refs", "--reference-membership", tmp_path / "forged.npy"]
    line = assert_refused([*argv, "--output", output, "--no-history"], output, "`--reference-membership`")
    assert "forged" in line


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny GPT-2 directory (context 64 tokens) built here, a corpus, and the provenance `canaries lm` writes for them."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    from privaudit.audits.lm.tiny import bpe_tokenizer, tiny_gpt2

    root = tmp_path_factory.mktemp("tiny")
    texts = [f"note {i} says {chr(97 + i % 26)} and {chr(98 + i % 20)}" for i in range(40)]
    tokenizer = bpe_tokenizer(texts, vocab_size=300)
    tiny_gpt2(tokenizer, seed=0, n_embd=32, n_positions=64).save_pretrained(root / "model")
    tokenizer.save_pretrained(root / "model")
    (root / "corpus.txt").write_text("".join(text + "\n" for text in texts), encoding="utf-8")
    code, _, stderr = run_cli(
        [
            "canaries",
            "lm",
            "--base-model",
            root / "model",
            "--corpus",
            root / "corpus.txt",
            "--output",
            root / "prepared",
            "--design",
            "random-tokens",
            "--count",
            8,
        ]
    )
    assert code == 0, stderr
    return root


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--count", "1000000000"], "`--count` must be in [4, "),
        (["--count", "1000000000", "--design", "new-tokens"], "`--count` must be in [4, "),
        (["--length", "100000"], "`--length` must be in [1, 32] (half the context of --base-model (64 tokens)"),
        (["--length", "33"], "`--length` must be in [1, 32]"),
    ],
)
def test_canaries_lm_counts_and_lengths_are_bounded_before_any_work(tiny, tmp_path, flags, match):
    output = tmp_path / "out"
    argv = ["canaries", "lm", "--base-model", tiny / "model", "--corpus", tiny / "corpus.txt", "--output", output, "--design", "random-tokens", *flags]
    assert_refused(argv, output, match)


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("included", lambda n: ["0"] * n, 'included must hold JSON booleans (true/false), got "0" at position 0'),
        ("included", lambda n: [0, 1] * (n // 2), "included must hold JSON booleans (true/false), got 0 at position 0"),
        ("secrets", lambda n: [None] * n, "secrets must hold strings, got null at position 0"),
        ("tokenizer", lambda n: {"vocab_size": "300", "vocab_sha256": "x"}, "tokenizer must be {vocab_size: an integer"),
    ],
)
def test_provenance_values_of_the_wrong_type_are_refused_never_coerced(tiny, tmp_path, key, value, match):
    data = json.loads((tiny / "prepared" / "provenance.json").read_text(encoding="utf-8"))
    data[key] = value(len(data["included"]))
    provenance = tmp_path / "provenance.json"
    provenance.write_text(json.dumps(data), encoding="utf-8")
    output = tmp_path / "out"
    argv = ["audit", "lm-one-run", "--model", tiny / "model", "--provenance", provenance, "--output", output, "--no-history"]
    assert_refused(argv, output, f"`--provenance`: {match}")


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["audit", "mia", "--target-kind", "bogus"], "`--target-kind` must be one of 'huggingface'"),
        (["audit", "mia", "--model-output", "bogus"], "`--model-output` must be one of 'auto'"),
        (["audit", "panoramia", "--model-output", "bogus"], "`--model-output` must be one of 'auto'"),
        (["audit", "panoramia", "--model-kind", "bogus"], "`--model-kind` must be one of 'privaudit'"),
    ],
)
def test_choices_are_checked_even_without_a_model(tmp_path, argv, match):
    output = tmp_path / "out"
    assert_refused([*argv, "--output", output, "--no-history"], output, match)


def test_a_single_class_pool_is_refused_naming_the_label_column(tmp_path):
    rows = "".join(f"{i},{i % 7},{(i * 3) % 11},1\n" for i in range(120))
    (tmp_path / "dd.csv").write_text("record,a,b,label\n" + rows, encoding="utf-8")
    output = tmp_path / "out"
    line = assert_refused(
        ["audit", "mia", "--data", tmp_path / "dd.csv", "--label-col", "label", "--output", output, "--no-history"], output, "`--label-col` 'label'"
    )
    assert "single class" in line


def test_assert_mechanism_dp_refuses_a_missing_dataset():
    from privaudit.testing import assert_mechanism_dp

    def laplace_count(dataset, size, rng):
        return len(dataset) + rng.laplace(0.0, 1.0, size)

    with pytest.raises(ValueError, match="`dataset` must be the records your mechanism runs on"):
        assert_mechanism_dp(laplace_count, None, None, epsilon=1.0)


def test_ids_beyond_2_53_are_never_shown_as_other_numbers(tmp_path):
    ids = [2**60 + 1000 * i + 1 for i in range(120)]  # a float64 rounds each to a multiple of 256: another id
    assert all(int(float(i)) != i for i in ids)
    rng = np.random.default_rng(1)
    rows = "".join(f"{i},{rng.normal():.4f},{rng.normal():.4f},{n % 2}\n" for n, i in enumerate(ids))
    (tmp_path / "dd.csv").write_text("record,a,b,label\n" + rows, encoding="utf-8")
    output = tmp_path / "out"
    argv = ["audit", "mia", "--data", tmp_path / "dd.csv", "--label-col", "label", "--id-col", "record", "--output", output, "--no-history"]
    code, stdout, stderr = run_cli(argv)
    if code == 2:  # refused before any work, naming the option
        assert len(stderr.strip().splitlines()) == 1 and "`--id-col`" in stderr and not output.exists(), stderr
    else:  # or read exactly: every id shown is one of the file's
        assert code == 0, stderr
        shown = [record["record_id"] for record in json.loads((output / "results.json").read_text())["most_vulnerable"]]
        assert shown and {str(value) for value in shown} <= {str(i) for i in ids}, shown
