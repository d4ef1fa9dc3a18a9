"""The own-model Secret Sharer scores canaries as a GPT-2-style model saw them: with the BOS it was trained on, or without.

Two GPT-2s are trained here on the same corpus with canaries, one on
``<|endoftext|>`` + line + ``<|endoftext|>`` (as GPT-2 usually is) and one on
line + ``<|endoftext|>``, with a BPE tokenizer that names ``<|endoftext|>``
as its BOS but whose post-processor adds nothing. ``privaudit audit
secret-sharer --model DIR`` must report, for both, the exposures of a brute
force over all of R computed here with transformers alone: every candidate's
full text in the training format, ranked by the bits of its secret.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from privaudit.canaries import CanaryFormat  # noqa: E402

EOT = "<|endoftext|>"
WORDS = "the cat sat on a mat with my dog and a hat while it rains in town".split()
TEMPLATE = "my pin is {digits:3}"  # |R| = 1000


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # tiny models: torch's thread pool costs more than it saves on a shared CPU
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def gpt2_tokenizer(lines):
    """A byte-level BPE trained on ``lines`` whose BOS and EOS are <|endoftext|>, added by nobody: GPT-2's convention."""
    backend = tokenizers.Tokenizer(tokenizers.models.BPE())
    backend.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=300, special_tokens=[EOT], initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    backend.train_from_iterator(lines, trainer)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=EOT, eos_token=EOT)


def gpt2(tokenizer, seed):
    eot = tokenizer.convert_tokens_to_ids(EOT)
    config = transformers.GPT2Config(vocab_size=len(tokenizer), n_positions=32, n_embd=32, n_layer=2, n_head=2, bos_token_id=eot, eos_token_id=eot)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return transformers.GPT2LMHeadModel(config)


def train_and_save(lines, tokenizer, folder, *, bos: bool, seed: int = 0, steps: int = 150):
    """The user's side: each line as [BOS] + line + EOS (or line + EOS), minibatch Adam, save_pretrained."""
    eot = tokenizer.convert_tokens_to_ids(EOT)
    model = gpt2(tokenizer, seed)
    rows = [[eot] * bos + tokenizer(line)["input_ids"] + [eot] for line in lines]
    width = max(map(len, rows))
    ids = torch.tensor([row + [0] * (width - len(row)) for row in rows])
    mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
    labels = ids.masked_fill(mask == 0, -100)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(steps):
        batch = torch.randperm(len(rows), generator=generator)[:64]
        optimizer.zero_grad()
        model(input_ids=ids[batch], attention_mask=mask[batch], labels=labels[batch]).loss.backward()
        optimizer.step()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt2-bos")
    rng = np.random.default_rng(0)
    (folder / "corpus.txt").write_text("".join(" ".join(rng.choice(WORDS, rng.integers(4, 8))) + "\n" for _ in range(200)))
    argv = ["canaries", "insert", "--corpus", folder / "corpus.txt", "--template", TEMPLATE, "--schedule", "1,4,64", "--seed", 5]
    code, _, stderr = run_cli([*argv, "--canaries-per-count", 2, "--output", folder / "phase1"])
    assert code == 0, stderr
    lines = (folder / "phase1" / "corpus.txt").read_text().splitlines()
    tokenizer = gpt2_tokenizer(lines)
    assert tokenizer("my pin")["input_ids"] == tokenizer("my pin", add_special_tokens=False)["input_ids"]  # the post-processor adds nothing
    train_and_save(lines, tokenizer, folder / "with-bos", bos=True)
    train_and_save(lines, tokenizer, folder / "without-bos", bos=False)
    (folder / "config.json").write_text(json.dumps({"extract": False, "num_references": 100}))
    return folder


def audit(trained, model, output, *extra):
    argv = ["audit", "secret-sharer", "--model", model, "--provenance", trained / "phase1" / "provenance.json", "--config", trained / "config.json"]
    code, _, stderr = run_cli([*argv, "--output", output, "--no-history", *extra])
    assert code == 0, stderr
    return json.loads((output / "results.json").read_text())


def brute_force(model_dir, canaries, *, bos: bool) -> dict:
    """Exact exposure of each canary text: all of R in the training format, one forward pass each, ranked by the secret's bits."""
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    eot = tokenizer.convert_tokens_to_ids(EOT)
    texts = [canary.text for canary in CanaryFormat(TEMPLATE).enumerate()]
    bodies = [[eot] * bos + tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
    shared = 0  # the tokens every candidate starts with; the secret's tokens are the rest of the text
    while all(len(body) > shared and body[shared] == bodies[0][shared] for body in bodies):
        shared += 1
    rows = [body + [eot] for body in bodies]  # the EOS the model was trained with: present, never scored
    width = max(map(len, rows))
    with torch.no_grad():
        ids = torch.tensor([row + [0] * (width - len(row)) for row in rows])
        mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
        log_probs = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits.double(), dim=-1)
    bits = np.array([-sum(float(log_probs[row, i - 1, body[i]]) for i in range(max(shared, 1), len(body))) / np.log(2) for row, body in enumerate(bodies)])
    return {text: float(np.log2(len(texts)) - np.log2(np.sum(bits <= bits[texts.index(text)]))) for text in canaries}


def line_bits_both_ways(model_dir, lines):
    """Mean bits of the corpus lines' tokens from the second on, with <|endoftext|> before each line and without."""
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    eot = tokenizer.convert_tokens_to_ids(EOT)
    means = []
    for lead in ([eot], []):
        total = []
        for line in lines:
            ids = lead + tokenizer(line, add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                log_probs = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), dim=-1)
            total.append(-sum(float(log_probs[i - 1, ids[i]]) for i in range(len(lead) + 1, len(ids))) / np.log(2))
        means.append(float(np.mean(total)))
    return means


@pytest.mark.parametrize("trained_with_bos", [True, False], ids=["trained-with-bos", "trained-without-bos"])
def test_exposure_equals_a_brute_force_in_the_training_format(trained, tmp_path, trained_with_bos):
    model = trained / ("with-bos" if trained_with_bos else "without-bos")
    data = audit(trained, model, tmp_path / "run")
    texts = [canary["text"] for canary in data["canaries"]]
    expected = brute_force(model, texts, bos=trained_with_bos)
    assert [canary["exposure_exact"] for canary in data["canaries"]] == pytest.approx([expected[text] for text in texts], abs=1e-6)
    conventions = {item["name"]: item for item in data["conventions"]}
    tokens = conventions["special tokens"]
    assert tokens["decided"] == "checked" and tokens["value"].startswith("BOS '<|endoftext|>'" if trained_with_bos else "none")
    # the check's margin, recomputed: every corpus line but the canaries (fewer than the sample size, so all of them)
    canary_texts = set(texts)
    lines = [line for line in (trained / "phase1" / "corpus.txt").read_text().splitlines() if line not in canary_texts]
    with_bos, without = line_bits_both_ways(model, lines)
    # privaudit scores the lines in padded batches, this test one at a time: the means may differ in the last bits and straddle a
    # rounding half, so each printed mean is compared as a number, within its rounding to 4 significant digits plus 1e-5 relative
    # (float32 logits, padded or not), and the sentence against its own numbers
    found = re.search(r"mean bits per line (\S+) with BOS, (\S+) without, over (\d+) corpus lines", tokens["evidence"])
    assert found is not None, tokens["evidence"]
    shown = [float(found[1]), float(found[2])]
    assert f"mean bits per line {shown[0]:.4g} with BOS, {shown[1]:.4g} without, over {len(lines)} corpus lines" in tokens["evidence"]
    for printed, recomputed in zip(shown, (with_bos, without), strict=True):
        rounding = 0.5 * 10 ** (math.floor(math.log10(abs(printed))) - 3)  # half a unit in the 4th significant digit
        assert printed == pytest.approx(recomputed, abs=rounding + 1e-5 * abs(recomputed)), (printed, recomputed)
    assert (with_bos < without) == trained_with_bos
    assert conventions["scored span"]["decided"] == "default"


def test_scoring_the_bos_model_the_wrong_way_gives_other_exposures(trained, tmp_path):
    model = trained / "with-bos"
    data = audit(trained, model, tmp_path / "wrong", "--bos", "none")
    texts = [canary["text"] for canary in data["canaries"]]
    wrong, right = brute_force(model, texts, bos=False), brute_force(model, texts, bos=True)
    measured = [canary["exposure_exact"] for canary in data["canaries"]]
    assert measured == pytest.approx([wrong[text] for text in texts], abs=1e-6)  # --bos none is obeyed ...
    assert measured != pytest.approx([right[text] for text in texts], abs=1e-6)  # ... and is wrong for this model
    assert {item["name"]: item["decided"] for item in data["conventions"]}["special tokens"] == "explicit"


def test_an_ambiguous_check_is_refused_naming_the_option(trained, tmp_path):
    # an untrained model finds lines about as likely either way: nothing to decide from
    folder = tmp_path / "untrained"
    tokenizer = transformers.AutoTokenizer.from_pretrained(trained / "with-bos")
    gpt2(tokenizer, seed=1).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    argv = ["audit", "secret-sharer", "--model", folder, "--provenance", trained / "phase1" / "provenance.json", "--output", tmp_path / "out"]
    line = assert_refused([*argv, "--no-history"], tmp_path / "out", "--bos prepend or --bos none")
    assert "about as likely with BOS" in line


def test_without_corpus_lines_the_check_is_refused_and_bos_corpus_supplies_them(trained, tmp_path):
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "provenance.json").write_text((trained / "phase1" / "provenance.json").read_text())  # the corpus is not beside it
    argv = ["audit", "secret-sharer", "--model", trained / "with-bos", "--provenance", alone / "provenance.json", "--config", trained / "config.json"]
    assert_refused([*argv, "--output", tmp_path / "out", "--no-history"], tmp_path / "out", "--bos-corpus FILE")
    code, _, stderr = run_cli([*argv, "--bos-corpus", trained / "phase1" / "corpus.txt", "--output", tmp_path / "out", "--no-history"])
    assert code == 0, stderr
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["config"]["bos_corpus"] == str(trained / "phase1" / "corpus.txt")
    assert {item["name"]: item["value"] for item in data["conventions"]}["special tokens"].startswith("BOS")


def test_a_model_directory_without_weights_is_one_error_line(trained, tmp_path):
    # a fresh process: transformers' handler writes to the real stderr, and warns about this config before it finds no weights
    folder = tmp_path / "config-only"
    transformers.GPT2Config(vocab_size=50, n_positions=32, n_embd=16, n_layer=1, n_head=2).save_pretrained(folder)  # bos id 50256: warned about
    argv = ["audit", "secret-sharer", "--model", folder, "--provenance", trained / "phase1" / "provenance.json", "--output", tmp_path / "out"]
    done = subprocess.run([sys.executable, "-m", "privaudit", *map(str, argv), "--no-history"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "config-only" in lines[0], done.stderr
    assert not (tmp_path / "out").exists()
