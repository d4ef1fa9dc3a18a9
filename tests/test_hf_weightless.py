"""A Hugging Face directory with its config.json but no weights, on every command that loads one: one line naming the option typed, exit 2.

transformers' own error for it names no option (and a missing-weights load that went through would be a random model: a wrong number).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from cli_helpers import assert_refused, run_cli  # noqa: E402
from test_lm_canaries import TEXTS  # noqa: E402

from privaudit.audits.lm.tiny import bpe_tokenizer, tiny_gpt2  # noqa: E402

NO_WEIGHTS = "holds a config.json but no weights"


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """A tiny GPT-2 saved whole and without its weights (built here, nothing downloaded), a text pool, and a canary provenance."""
    root = tmp_path_factory.mktemp("weightless")
    tokenizer = bpe_tokenizer(TEXTS, vocab_size=320)
    tiny_gpt2(tokenizer, seed=1, n_embd=32).save_pretrained(root / "whole")
    tokenizer.save_pretrained(root / "whole")
    (root / "weightless").mkdir()
    for item in (root / "whole").iterdir():
        if item.is_file() and item.suffix not in (".safetensors", ".bin"):
            (root / "weightless" / item.name).write_bytes(item.read_bytes())
    lines = sorted(set(TEXTS))
    (root / "corpus.txt").write_text("".join(line + "\n" for line in lines * 4), encoding="utf-8")
    pool = [f"{line} {index}" for index, line in enumerate(lines * 8)]  # 40 records: enough members and non-members to attack
    (root / "pool.txt").write_text("".join(line + "\n" for line in pool), encoding="utf-8")
    for index in range(2):  # the reference models mia needs beside the target: whole, so that only the target is refused
        tiny_gpt2(tokenizer, seed=10 + index, n_embd=32).save_pretrained(root / "refs" / f"ref-{index}")
        tokenizer.save_pretrained(root / "refs" / f"ref-{index}")
    np.save(root / "membership.npy", np.arange(2 * len(pool)).reshape(2, len(pool)) % 2 == 0)
    (root / "members.txt").write_text("".join(f"{index}\n" for index in range(0, len(pool), 4)), encoding="utf-8")  # record indices
    code, _, stderr = run_cli(["canaries", "insert", "--corpus", root / "corpus.txt", "--output", root / "inserted"])
    assert code == 0, stderr
    return root


def test_the_fixture_is_weightless_and_its_whole_twin_is_not(user):
    assert any((user / "whole").glob("*.safetensors")) and (user / "weightless" / "config.json").is_file()
    assert not any((user / "weightless").glob("*.safetensors")) and not any((user / "weightless").glob("*.bin"))


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (
            [
                "audit",
                "mia",
                "--target-kind",
                "huggingface",
                "--model",
                "{dir}",
                "--data",
                "pool.txt",
                "--members",
                "members.txt",
                "--reference-models",
                "refs",
                "--reference-membership",
                "membership.npy",
                "--no-history",
            ],
            "--model",
        ),
        (["audit", "secret-sharer", "--model", "{dir}", "--provenance", "inserted/provenance.json", "--no-history"], "--model"),
        (["canaries", "lm", "--base-model", "{dir}", "--corpus", "corpus.txt"], "--base-model"),
    ],
    ids=["mia", "secret-sharer", "canaries-lm"],
)
def test_a_weightless_directory_is_refused_naming_the_option(user, tmp_path, argv, option):
    filled = [str(user / "weightless") if arg == "{dir}" else (user / arg if arg.endswith((".txt", ".json", ".npy")) or arg == "refs" else arg) for arg in argv]
    line = assert_refused([*filled, "--output", tmp_path / "out"], tmp_path / "out", NO_WEIGHTS)
    assert f"`{option}`" in line and "save_pretrained" in line
