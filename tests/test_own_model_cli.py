"""The user's own model from the CLI, no Python glue (issue 17): each run writes a schema-valid results.json that `report` renders.

(a) a Hugging Face GPT-2 built from a config, with a BPE tokenizer trained
offline, audited in two phases (``canaries insert``, the user's training,
``audit secret-sharer --model --provenance``); (b) DP-SGD on the user's
ReLU module and data; (c) PANORAMIA on a scikit-learn random forest saved
with skops. Bad input exits 2 with one ``error:`` line and no output folder.
"""

from __future__ import annotations

import json
import pickle
import sys
import textwrap

import numpy as np
import pytest
from cli_helpers import assert_refused as refused
from cli_helpers import run_cli as run

from privaudit.schemas import validate_results

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # tiny models: torch's thread pool costs more than it saves on a shared CPU
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def check_written(output, tmp_path, audit):
    data = json.loads((output / "results.json").read_text())
    assert validate_results(data, "results")["audit"] == audit
    code, stdout, stderr = run(["report", output, "--output", tmp_path / f"{output.name}.html"])
    assert code == 0, stderr
    assert (tmp_path / f"{output.name}.html").stat().st_size > 0
    return data


# -- (a) Hugging Face GPT-2, two phases ------------------------------------------------
WORDS = "the cat sat on a mat with my dog and a hat".split()


def train_gpt2(corpus, folder, *, steps=60, vocab_size=300):
    """The user's side: a BPE tokenizer trained offline on the corpus, a GPT-2 from a config, a few epochs, save_pretrained."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    lines = corpus.read_text().splitlines()
    backend = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="[UNK]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = tokenizers.decoders.ByteLevel()
    alphabet = tokenizers.pre_tokenizers.ByteLevel.alphabet()
    backend.train_from_iterator(lines, tokenizers.trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[UNK]"], initial_alphabet=alphabet))
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=len(tokenizer), n_positions=32, n_embd=16, n_layer=1, n_head=2, bos_token_id=None, eos_token_id=None)
    )
    rows = [tokenizer(line)["input_ids"] for line in lines]
    width = max(map(len, rows))
    ids = torch.tensor([row + [0] * (width - len(row)) for row in rows])
    mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
    labels = ids.masked_fill(mask == 0, -100)  # padding is not trained on
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):  # full batch: the corpus is tiny
        optimizer.zero_grad()
        model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        optimizer.step()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model, tokenizer


@pytest.fixture(scope="module")
def hf_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hf")
    rng = np.random.default_rng(0)
    (folder / "corpus.txt").write_text("".join(" ".join(rng.choice(WORDS, 5)) + "\n" for _ in range(40)))
    code, stdout, stderr = run(
        [
            "canaries",
            "insert",
            "--corpus",
            folder / "corpus.txt",
            "--template",
            "pin {digits:2}",
            "--schedule",
            "1,8",
            "--seed",
            3,
            "--output",
            folder / "phase1",
        ]
    )
    assert code == 0, stderr
    train_gpt2(folder / "phase1" / "corpus.txt", folder / "model")
    return folder


def test_hf_gpt2_two_phase_secret_sharer(hf_run, tmp_path):
    from privaudit.canaries.corpus import read_provenance
    from privaudit.models.hf import HFCausalLMScorer
    from privaudit.models.loading import load_model

    record = read_provenance(hf_run / "phase1")
    lines = (hf_run / "phase1" / "corpus.txt").read_text().splitlines()
    assert [lines.count(c["text"]) for c in record.provenance.canaries] == [1, 8] and len(lines) == 49
    out = tmp_path / "ss"
    code, stdout, stderr = run(
        ["audit", "secret-sharer", "--model", hf_run / "model", "--provenance", hf_run / "phase1" / "provenance.json", "--output", out, "--no-history"]
    )
    assert code == 0, stderr
    data = check_written(out, tmp_path, "secret-sharer")
    assert data["result_type"] == "OwnModelSecretSharerResult" and data["space_size"] == 100 and data["num_references"] == 98
    assert data["config"]["template"] == "pin {digits:2}" and data["config"]["schedule"] == [1, 8]
    # exact exposure, independently: every candidate's full-text log-perplexity, ranked by brute force
    loaded = load_model(hf_run / "model", kind="huggingface", device="cpu")
    scorer = HFCausalLMScorer(loaded.model, loaded.tokenizer)
    bits = scorer.log_perplexity([f"pin {i:02d}" for i in range(100)])
    for canary in data["canaries"]:
        own = bits[int(canary["text"][-2:])]
        rank = int(np.sum(bits <= own + 1e-9))  # ties count against the canary
        assert canary["exposure_exact"] == pytest.approx(np.log2(100) - np.log2(rank))
    assert {"exposure_vs_insertions.png", "perplexity_histogram.png"} <= {p.name for p in out.iterdir()}


def test_hf_bad_inputs_exit_2_with_nothing_written(hf_run, tmp_path):
    transformers = pytest.importorskip("transformers")
    prov = hf_run / "phase1" / "provenance.json"
    out = tmp_path / "out"
    base = ["audit", "secret-sharer", "--output", out, "--no-history"]
    refused(base + ["--model", hf_run / "model"], out, "`--model` and `--provenance` must be given together")
    refused(base + ["--model", hf_run / "corpus.txt", "--provenance", prov], out, "is not a huggingface directory")
    refused(base + ["--model", hf_run / "model", "--provenance", prov, "--template", "code {digits:3}"], out, "`--template` comes from the provenance")
    # a tokenizer with more tokens than the model has embeddings
    small = tmp_path / "small"
    transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=50, n_positions=32, n_embd=16, n_layer=1, n_head=2)).save_pretrained(small)
    transformers.AutoTokenizer.from_pretrained(hf_run / "model").save_pretrained(small)
    refused(base + ["--model", small, "--provenance", prov], out, "does not match the model")
    # a pickled weights file beside the config
    (small / "pytorch_model.bin").write_bytes(pickle.dumps({"weights": 1}, protocol=2))
    refused(base + ["--model", small, "--provenance", prov], out, "is a pickle file")


def test_canaries_insert_bad_inputs(tmp_path):
    out = tmp_path / "out"
    (tmp_path / "c.jsonl").write_text('{"text": "a"}\n')
    refused(["canaries", "insert", "--corpus", tmp_path / "missing.txt", "--output", out], out, "`--corpus` must be an existing file")
    refused(["canaries", "insert", "--corpus", tmp_path / "c.jsonl", "--format", "jsonl", "--output", out], out, "`--column` must name")
    refused(["canaries", "insert", "--corpus", tmp_path / "c.jsonl", "--format", "xml", "--output", out], out, "`--format` must be one of")
    refused(
        ["canaries", "insert", "--corpus", tmp_path / "c.jsonl", "--format", "jsonl", "--column", "text", "--schedule", "1,x", "--output", out],
        out,
        "`--schedule`",
    )


# -- (c) PANORAMIA on a scikit-learn random forest saved with skops ------------------------
@pytest.fixture(scope="module")
def forest(tmp_path_factory):
    skops_io = pytest.importorskip("skops.io")
    ensemble = pytest.importorskip("sklearn.ensemble")
    folder = tmp_path_factory.mktemp("forest")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=(600, 3)).astype(np.float64)
    y = (x[:, 0] + rng.integers(0, 2, 600) > 2).astype(np.int64)
    model = ensemble.RandomForestClassifier(n_estimators=5, max_depth=6, random_state=0).fit(x, y)
    skops_io.dump(model, folder / "forest.skops")
    np.savetxt(folder / "members.csv", np.column_stack([x, y]), delimiter=",", header="a,b,c,label", comments="")
    return folder, model


def test_panoramia_on_a_skops_random_forest(forest, tmp_path):
    folder, model = forest
    out = tmp_path / "pan"
    code, stdout, stderr = run(
        [
            "audit",
            "panoramia",
            "--model",
            folder / "forest.skops",
            "--model-kind",
            "skops",
            "--members",
            folder / "members.csv",
            "--label-col",  # its features are whole numbers too: any of its columns could be the label
            "label",
            "--audit-size",
            150,
            "--helper-epochs",
            1,
            "--output",
            out,
            "--no-history",
        ]
    )
    assert code == 0, stderr
    data = check_written(out, tmp_path, "panoramia")
    assert data["config"]["model_kind"] == "skops"
    target = data["targets"]["forest"]
    assert target["audit"]["bounds"]["num_members"] + target["audit"]["bounds"]["num_generated"] == 150


FACTORY = """
import torch

def relu_net():
    return torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

def wide_net():
    return torch.nn.Sequential(torch.nn.Linear(3, 9), torch.nn.ReLU(), torch.nn.Linear(9, 2))
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "own_cli_models.py").write_text(textwrap.dedent(FACTORY))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("own_cli_models", None)
    import own_cli_models

    return own_cli_models


def test_panoramia_bad_model_files_exit_2(forest, user_module, tmp_path):
    folder, _ = forest
    out = tmp_path / "out"
    base = ["audit", "panoramia", "--members", folder / "members.csv", "--label-col", "label", "--output", out, "--no-history"]
    torch.save(user_module.relu_net().state_dict(), tmp_path / "relu.pt")
    # a file not of the declared kind
    refused(base + ["--model", tmp_path / "relu.pt", "--model-kind", "skops"], out, "is not a skops file")
    refused(base + ["--model", folder / "forest.skops", "--model-kind", "onnx"], out, "is not a onnx file")
    # weights that do not fit the architecture
    refused(base + ["--model", tmp_path / "relu.pt", "--model-kind", "torch", "--factory", "own_cli_models:wide_net"], out, "do not fit the architecture")
    # a pickle
    (tmp_path / "model.pkl").write_bytes(pickle.dumps({"a": 1}, protocol=4))
    refused(base + ["--model", tmp_path / "model.pkl", "--model-kind", "torch", "--factory", "own_cli_models:relu_net"], out, "is a pickle file")
    refused(base + ["--model", tmp_path / "model.pkl", "--model-kind", "skops"], out, "is a pickle file")
    # members that do not fit the model, and options of the wrong kind
    np.savetxt(tmp_path / "wide.csv", np.zeros((10, 6)), delimiter=",", header="a,b,c,d,e,label", comments="")
    refused(
        [
            "audit",
            "panoramia",
            "--members",
            tmp_path / "wide.csv",
            "--label-col",
            "label",
            "--output",
            out,
            "--no-history",
            "--model",
            tmp_path / "relu.pt",
            "--model-kind",
            "torch",
            "--factory",
            "own_cli_models:relu_net",
        ],
        out,
        "do not fit the model",
    )
    refused(base + ["--model", tmp_path / "relu.pt", "--model-kind", "keras"], out, "`--model-kind` must be one of")


# -- (d) bad score CSVs for `bound --scores` ---------------------------------------------
def test_bound_scores_csv_bad_inputs(tmp_path):
    out = tmp_path / "out"
    (tmp_path / "s.csv").write_text("score,member\n0.1,1\n0.2,0\n")
    refused(["bound", "--scores", tmp_path / "s.csv", "--score-col", "loss", "--member-col", "member", "--output", out], out, "loss")
    refused(["bound", "--scores", tmp_path / "s.csv", "--score-col", "score", "--member-col", "is_member", "--output", out], out, "is_member")
    (tmp_path / "t.csv").write_text("score,member\n0.1,1\nhigh,0\n")
    refused(["bound", "--scores", tmp_path / "t.csv", "--score-col", "score", "--member-col", "member", "--output", out], out, "score")
