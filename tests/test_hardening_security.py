"""No code run from a model directory, and no user file overwritten: each through the CLI, as a user would hit it.

A save_pretrained directory whose config asks for its own Python (``auto_map``)
is refused before transformers reads it, in one line, with no prompt on
stdout and with the directory's module never imported (it would create a
marker file). An ``--output`` that is, holds or lies inside an input is
refused before any work, and the input is left byte for byte as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile

import pytest
from cli_helpers import run_cli

# a module that would prove it ran: it creates MARKER when imported
EVIL = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\nfrom transformers import GPT2Config as EvilConfig, GPT2LMHeadModel as EvilModel\n"


def _one_error_line(code, stdout, stderr, *needles):
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, stdout, stderr)
    assert "[y/N]" not in stdout and "custom code" not in stdout, stdout
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    """A clean tiny GPT-2 directory built here (no download), a copy whose config maps to its own module, and a corpus."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    from privaudit.audits.lm.tiny import bpe_tokenizer, tiny_gpt2

    root = tmp_path_factory.mktemp("hf")
    texts = [f"record {i} reads {chr(97 + i % 26)} twice" for i in range(40)]
    tokenizer = bpe_tokenizer(texts, vocab_size=300)
    model = tiny_gpt2(tokenizer, seed=0, n_embd=32)
    for name in ("clean", "evil", "evil-tokenizer", "pickled"):
        model.save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
    marker = root / "MARKER"
    for name, file, key in (("evil", "config.json", "auto_map"), ("evil-tokenizer", "tokenizer_config.json", "auto_map")):
        (root / name / "evil_modeling.py").write_text(EVIL.format(marker=str(marker)), encoding="utf-8")
        config = json.loads((root / name / file).read_text())
        mapped = {"AutoConfig": "evil_modeling.EvilConfig", "AutoModelForCausalLM": "evil_modeling.EvilModel"}
        config[key] = mapped if file == "config.json" else {"AutoTokenizer": ["evil_modeling.EvilConfig", None]}
        (root / name / file).write_text(json.dumps(config), encoding="utf-8")
    # torch.save's zip format holds a pickle: a legacy pytorch_model.bin in place of the safetensors weights
    pickled = root / "pickled"
    (pickled / "model.safetensors").unlink()
    with zipfile.ZipFile(pickled / "pytorch_model.bin", "w") as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
        archive.writestr("archive/version", b"3\n")
    (root / "corpus.txt").write_text("".join(text + "\n" for text in texts), encoding="utf-8")
    return root, marker


@pytest.mark.parametrize("answer", [None, "y\n"])
@pytest.mark.parametrize(
    ("directory", "design", "found"),
    [("evil", "new-tokens", "auto_map"), ("evil", "random-tokens", "auto_map"), ("evil-tokenizer", "random-tokens", "auto_map")],
)
def test_canaries_lm_refuses_a_directory_that_asks_to_run_its_code(hf, tmp_path, directory, design, found, answer):
    from typer.testing import CliRunner

    from privaudit.cli import app

    root, marker = hf
    out = tmp_path / "out"
    argv = ["canaries", "lm", "--base-model", root / directory, "--corpus", root / "corpus.txt", "--output", out, "--design", design, "--count", 8]
    result = CliRunner().invoke(app, [str(arg) for arg in argv], input=answer)
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    _one_error_line(result.exit_code, result.stdout, result.stderr, "`--base-model`", found, "trust_remote_code")
    assert not marker.exists() and not out.exists()


def test_lm_one_run_refuses_a_model_directory_that_asks_to_run_its_code(hf, tmp_path):
    root, marker = hf
    prepared = tmp_path / "prepared"
    code, _, stderr = run_cli(
        ["canaries", "lm", "--base-model", root / "clean", "--corpus", root / "corpus.txt", "--output", prepared, "--design", "random-tokens", "--count", 8]
    )
    assert code == 0, stderr
    for option in ("--model", "--base-model"):
        other = "--base-model" if option == "--model" else "--model"
        out = tmp_path / f"audit{option}"
        argv = [
            "audit",
            "lm-one-run",
            option,
            root / "evil",
            other,
            root / "clean",
            "--provenance",
            prepared / "provenance.json",
            "--output",
            out,
            "--no-history",
        ]
        _one_error_line(*run_cli(argv), f"`{option}`", "auto_map")
        assert not marker.exists() and not out.exists()


def test_a_zip_format_pickle_in_a_model_directory_is_refused_for_safetensors(hf, tmp_path):
    root, marker = hf
    out = tmp_path / "out"
    argv = ["canaries", "lm", "--base-model", root / "pickled", "--corpus", root / "corpus.txt", "--output", out, "--count", 8]
    line = _one_error_line(*run_cli(argv), "`--base-model`", "pytorch_model.bin", "pickle", "safetensors")
    assert "Traceback" not in line and not out.exists()


def test_the_library_loader_refuses_auto_map_naming_the_option(hf):
    from privaudit.models.loading import load_model

    root, marker = hf
    with pytest.raises(ValueError, match="`--reference-models`.*auto_map"):
        load_model(root / "evil", kind="huggingface", option="--reference-models")
    assert not marker.exists()


# -- never overwrite a user file -------------------------------------------------------------
@pytest.fixture()
def scores_run(tmp_path):
    """A finished run directory (privaudit bound) and its score files."""
    (tmp_path / "in.txt").write_text("\n".join(str(0.5 + i / 100) for i in range(60)) + "\n")
    (tmp_path / "out.txt").write_text("\n".join(str(i / 100) for i in range(60)) + "\n")
    run = tmp_path / "run"
    code, _, stderr = run_cli(["bound", "--in", tmp_path / "in.txt", "--out", tmp_path / "out.txt", "--output", run])
    assert code == 0 and (run / "results.json").is_file(), stderr
    return run


@pytest.mark.parametrize("target", ["results.json", "report.html", "."])
def test_report_never_writes_over_a_file_of_the_run(scores_run, target):
    before = {path.name: _digest(path) for path in scores_run.iterdir() if path.is_file()}
    needles = ("`--output`", "RUN") if target != "." else ("`--output`",)  # the run directory itself: not a file path
    _one_error_line(*run_cli(["report", scores_run, "--output", scores_run / target]), *needles)
    assert {path.name: _digest(path) for path in scores_run.iterdir() if path.is_file()} == before


def test_report_may_write_a_new_file_beside_the_run_files(scores_run):
    code, _, stderr = run_cli(["report", scores_run, "--output", scores_run / "summary.html"])
    assert code == 0 and (scores_run / "summary.html").read_text().startswith("<!DOCTYPE html>"), stderr


@pytest.mark.parametrize("command", ["lm", "insert"])
def test_canaries_output_holding_the_corpus_is_refused_and_the_corpus_kept(tmp_path, command):
    folder = tmp_path / "cx"
    folder.mkdir()
    corpus = folder / "corpus.txt"
    corpus.write_text("".join(f"line {i}\n" for i in range(50)), encoding="utf-8")
    before = _digest(corpus)
    argv = ["canaries", command, "--corpus", corpus, "--output", folder]
    if command == "lm":
        argv += ["--base-model", tmp_path / "no-model"]  # refused before the model is looked at
    _one_error_line(*run_cli(argv), "`--output`", "`--corpus`")
    assert _digest(corpus) == before and sorted(path.name for path in folder.iterdir()) == ["corpus.txt"]


def test_canaries_output_that_is_the_corpus_file_or_inside_a_symlinked_input_is_refused(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a line\n" * 20, encoding="utf-8")
    (tmp_path / "link").symlink_to(tmp_path, target_is_directory=True)
    for output in (tmp_path / "link", corpus):
        _one_error_line(*run_cli(["canaries", "insert", "--corpus", corpus, "--output", output]), "`--output`")
    assert corpus.read_text() == "a line\n" * 20


def test_audit_output_holding_its_data_or_config_is_refused_before_any_work(tmp_path):
    rows = "".join(f"{i % 7},{(i * 3) % 5},{i % 2}\n" for i in range(60))
    data = tmp_path / "dd.csv"
    data.write_text("a,b,label\n" + rows, encoding="utf-8")
    before = _digest(data)
    _one_error_line(*run_cli(["audit", "mia", "--data", data, "--output", tmp_path, "--no-history"]), "`--output`", "`--data`")
    _one_error_line(*run_cli(["audit", "mia", "--data", data, "--output", data, "--no-history"]), "`--output`")
    config = tmp_path / "conf" / "c.json"
    config.parent.mkdir()
    config.write_text("{}")
    _one_error_line(*run_cli(["audit", "mechanism", "--config", config, "--output", config.parent, "--no-history"]), "`--output`", "`--config`")
    assert _digest(data) == before and sorted(path.name for path in tmp_path.iterdir()) == ["conf", "dd.csv"]


def test_bound_output_holding_its_scores_is_refused(tmp_path):
    (tmp_path / "in.txt").write_text("1\n2\n3\n")
    (tmp_path / "out.txt").write_text("0\n1\n2\n")
    _one_error_line(*run_cli(["bound", "--in", tmp_path / "in.txt", "--out", tmp_path / "out.txt", "--output", tmp_path]), "`--output`", "`--in`")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.txt", "out.txt"]


def test_an_output_holding_a_folder_named_results_json_is_refused_in_one_line(tmp_path):
    (tmp_path / "in.txt").write_text("\n".join(str(i) for i in range(40)) + "\n")
    (tmp_path / "out.txt").write_text("\n".join(str(i / 2) for i in range(40)) + "\n")
    out = tmp_path / "run"
    (out / "results.json").mkdir(parents=True)
    _one_error_line(*run_cli(["bound", "--in", tmp_path / "in.txt", "--out", tmp_path / "out.txt", "--output", out]), "`--output`", "results.json")
    _one_error_line(*run_cli(["audit", "mechanism", "--output", out, "--no-history"]), "`--output`", "results.json")
    assert sorted(path.name for path in out.iterdir()) == ["results.json"] and not any((out / "results.json").iterdir())


# -- report reads only inside its run ----------------------------------------------------------
def test_report_refuses_a_results_json_linked_from_another_run(scores_run, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "results.json").symlink_to(scores_run / "results.json")
    _one_error_line(*run_cli(["report", other, "--output", tmp_path / "r1.html"]), "`run`", "symlink")
    linked = tmp_path / "linked"
    linked.mkdir()
    os.link(scores_run / "results.json", linked / "results.json")
    _one_error_line(*run_cli(["report", linked, "--output", tmp_path / "r2.html"]), "`run`", "hard link")
    assert not (tmp_path / "r1.html").exists() and not (tmp_path / "r2.html").exists()


def test_report_skips_a_hard_linked_figure_with_a_note(scores_run, tmp_path):
    from test_report_security import PNG_SIGNATURE, embedded

    outside = tmp_path / "outside.png"
    outside.write_bytes(PNG_SIGNATURE + b"a private image from outside the run")
    (scores_run / "roc.png").unlink()
    os.link(outside, scores_run / "roc.png")
    code, stdout, stderr = run_cli(["report", scores_run, "--output", tmp_path / "page.html"])
    assert code == 0, stderr
    assert f"note: {scores_run / 'roc.png'} was not embedded" in stdout
    images = embedded((tmp_path / "page.html").read_text(encoding="utf-8"))
    assert outside.read_bytes() not in images and len(images) == len([p for p in scores_run.glob("*.png") if p.name != "roc.png"])


def test_lm_one_run_refuses_an_adapter_directory_that_asks_to_run_its_code(hf, tmp_path):
    pytest.importorskip("peft")
    root, marker = hf
    prepared = tmp_path / "prepared"
    argv = ["canaries", "lm", "--base-model", root / "clean", "--corpus", root / "corpus.txt", "--output", prepared, "--design", "random-tokens", "--count", 8]
    assert run_cli(argv)[0] == 0
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "evil_modeling.py").write_text(EVIL.format(marker=str(marker)), encoding="utf-8")
    config = {"peft_type": "LORA", "r": 2, "target_modules": ["c_attn"], "auto_map": {"AutoModelForCausalLM": "evil_modeling.EvilModel"}}
    (adapter / "adapter_config.json").write_text(json.dumps(config), encoding="utf-8")
    out = tmp_path / "out"
    argv = [
        "audit",
        "lm-one-run",
        "--model",
        adapter,
        "--base-model",
        root / "clean",
        "--provenance",
        prepared / "provenance.json",
        "--output",
        out,
        "--no-history",
    ]
    _one_error_line(*run_cli(argv), "`--model`", "adapter_config.json", "auto_map")
    assert not marker.exists() and not out.exists()
