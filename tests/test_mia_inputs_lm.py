"""mia on a text pool: the per-sequence signal of saved causal LMs against a brute-force forward pass, LiRA/RMIA on it, bad references refused."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from privaudit.audits.lm.tiny import bpe_tokenizer, fine_tune, tiny_gpt2  # noqa: E402
from privaudit.audits.mia.audit import ATTACKS
from privaudit.audits.mia.config import MIAConfig
from privaudit.audits.mia.result import MIAResult, attack_scores  # noqa: E402
from privaudit.audits.mia.signals_lm import read_text_pool, text_pool_signals  # noqa: E402

WORDS = ("amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron", "iris", "jade", "kelp", "lumen")
NUM_TEXTS, NUM_REFERENCES, NUM_MEMBERS = 40, 4, 12  # 12 members; the 28 non-members are all attacked, the 16 population samples among them


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A text pool, a target fine-tuned on a random half, four references on balanced halves, another tokenizer's model; all saved."""
    rng = np.random.default_rng()
    texts = [f"note {i}: " + " ".join(rng.choice(WORDS, 5)) for i in range(NUM_TEXTS)]
    root = tmp_path_factory.mktemp("lm-mia")
    (root / "pool.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    tokenizer = bpe_tokenizer(texts, vocab_size=300)
    base = tiny_gpt2(tokenizer, seed=1, n_embd=32)
    members = np.isin(np.arange(NUM_TEXTS), rng.choice(NUM_TEXTS, NUM_MEMBERS, replace=False))
    (root / "members.txt").write_text("\n".join(map(str, np.flatnonzero(members))) + "\n", encoding="utf-8")
    membership = np.argsort(rng.random((NUM_TEXTS, NUM_REFERENCES)), axis=1).T < NUM_REFERENCES // 2

    def save(rows, seed, directory):
        model = fine_tune(base, tokenizer, [t for t, keep in zip(texts, rows, strict=True) if keep], steps=3, seed=seed, learning_rate=1e-2)
        model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)

    save(members, 0, root / "target")
    for index, rows in enumerate(membership):
        save(rows, index + 1, root / "refs" / f"ref-{index}")
    np.save(root / "membership.npy", membership)
    np.save(root / "wrong.npy", membership[:, :-1])
    other = bpe_tokenizer(texts, vocab_size=280)
    (root / "mixed").mkdir()
    for index in range(NUM_REFERENCES):
        (root / "mixed" / f"ref-{index}").symlink_to(root / "refs" / f"ref-{index}", target_is_directory=True)
    other_model = tiny_gpt2(other, seed=5, n_embd=32)
    other_model.save_pretrained(root / "mixed" / "ref-9")
    other.save_pretrained(root / "mixed" / "ref-9")
    np.save(root / "membership5.npy", np.vstack([membership, membership[:1]]))
    return root, texts, members, membership


def _brute_log_likelihoods(directory, texts):
    """Σ log p(token_t | tokens_<t) over each text's tokens from its second on, by one forward pass per text and explicit indexing."""
    model = transformers.AutoModelForCausalLM.from_pretrained(directory).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    totals = []
    for text in texts:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].double()
        totals.append(sum(float(logits[t - 1][ids[t]] - torch.logsumexp(logits[t - 1], dim=0)) for t in range(1, len(ids))))
    return totals


def test_sequence_signal_is_the_summed_log_likelihood_and_the_attacks_run_on_it(saved):
    root, texts, members, membership = saved
    pool = read_text_pool(root / "pool.txt")
    target, reference, read_membership, conventions = text_pool_signals(root / "target", root / "refs", root / "membership.npy", pool)
    assert pool == texts and np.array_equal(read_membership, membership) and reference.shape == (NUM_REFERENCES, NUM_TEXTS)
    names = {convention.name: convention for convention in conventions}
    assert names["sequence signal"].decided == "default" and "sum over the text's tokens" in names["sequence signal"].value
    assert "special tokens" in names  # decided by the scorer: this tokenizer declares none
    # φ is the logit of the sequence probability e^L, L summed by brute force here: L = log p, log(1 - p) = log(-expm1(L))
    for row, directory in ((target, root / "target"), (reference[2], root / "refs" / "ref-2")):
        picked = (0, 7, NUM_TEXTS - 1)
        for i, log_likelihood in zip(picked, _brute_log_likelihoods(directory, [texts[i] for i in picked]), strict=True):
            assert row[i] == pytest.approx(log_likelihood - math.log(-math.expm1(log_likelihood)), rel=1e-6, abs=1e-6)
    population = np.zeros(NUM_TEXTS, dtype=bool)
    population[:6] = True
    scores = attack_scores(target, reference, membership, population, MIAConfig(num_references=NUM_REFERENCES))
    # every text scored, the population samples too; RMIA's fractions beside its log ratios
    assert set(scores) >= set(ATTACKS) and all(values.shape == (NUM_TEXTS,) for values in scores.values())
    # LOSS ranks texts by their summed log-likelihood on the target
    brute = _brute_log_likelihoods(root / "target", texts[6:9])
    assert scores["loss"][6:9] == pytest.approx(brute, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize(
    ("references", "matrix", "match"),
    [
        ("refs", "wrong.npy", "`--reference-membership` must have shape (references, records) = (4, 40), got (4, 39)"),
        ("mixed", "membership5.npy", "`--reference-models`: 'ref-9' has another tokenizer than the target's"),
        ("target", "membership.npy", "`--reference-models` must be a directory of Hugging Face model directories"),
    ],
)
def test_references_that_do_not_match_the_pool_or_the_targets_tokenizer_are_refused(saved, references, matrix, match):
    root, texts, *_ = saved
    with pytest.raises(ValueError) as error:
        text_pool_signals(root / "target", root / references, root / matrix, texts)
    assert match in str(error.value)


def test_an_empty_or_binary_text_pool_is_refused(tmp_path):
    (tmp_path / "empty.txt").write_text("\n  \n", encoding="utf-8")
    (tmp_path / "binary.txt").write_bytes(b"\x00\x01\xff")
    for name, match in (("empty.txt", "is empty: give a text file of records (texts), one a line"), ("binary.txt", "UTF-8")):
        with pytest.raises(ValueError) as error:
            read_text_pool(tmp_path / name)
        assert str(error.value).startswith("`--data`") and match in str(error.value)


def _argv(root, *flags):
    argv = ["audit", "mia", "--target-kind", "huggingface", "--model", root / "target", "--data", root / "pool.txt", "--members", root / "members.txt"]
    return [*argv, *flags]


def test_text_pool_audit_from_the_command_line(saved, tmp_path):
    from sklearn.metrics import roc_auc_score

    root, texts, members, _ = saved
    flags = ["--reference-models", root / "refs", "--reference-membership", root / "membership.npy"]
    code, stdout, stderr = run_cli([*_argv(root, *flags), "--output", tmp_path / "out", "--no-history"])
    assert code == 0, stderr
    data = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert MIAResult.validate(data).to_dict()["dataset_inference"] == data["dataset_inference"]  # results.json reads back whole
    assert "dataset inference (Maini et al." in stdout
    assert (tmp_path / "out" / "report.html").is_file() and data["num_trained"] == 0 and data["num_references"] == NUM_REFERENCES
    assert {item["name"] for item in data["conventions"]} >= {"sequence signal", "target membership", "reference membership", "record id"}
    # LOSS ranks texts by their summed log-likelihood on the target, computed here by brute force
    log_likelihood = np.array(_brute_log_likelihoods(root / "target", texts))
    loss = next(item for item in data["attacks"] if item["attack"] == "loss")
    assert loss["auc"] == pytest.approx(roc_auc_score(members, log_likelihood), abs=1e-9)  # every text, the population samples too
    # dataset inference of the members, as a set, against every other text: the Python API's numbers on the saved target
    from privaudit.audits.lm.dataset_inference import lm_dataset_inference

    model = transformers.AutoModelForCausalLM.from_pretrained(root / "target")
    tokenizer = transformers.AutoTokenizer.from_pretrained(root / "target")
    direct = lm_dataset_inference(
        model, tokenizer, [t for t, m in zip(texts, members, strict=True) if m], [t for t, m in zip(texts, members, strict=True) if not m], blind=False, seed=0
    )
    inference = data["dataset_inference"]
    assert inference["test"]["p_value"] == direct.test.p_value and inference["test"]["num_test"] == [6, 14]
    assert inference["blind_baseline"] == data["blind_baseline"] and inference["finding"] == direct.finding
    report = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "blind baseline (no model: an n-gram logistic regression on the texts, cross-validated)" in report
    assert "dataset inference (Maini et al." in report and direct.finding.split(";")[0].replace("<", "&lt;").replace(">", "&gt;") in report


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        ([], "`--target-kind huggingface` needs `--reference-models`"),
        (["--reference-models", "refs", "--reference-membership", "membership.npy", "--id-col", "n"], "--id-col do not apply"),
        (["--reference-models", "refs", "--reference-membership", "wrong.npy"], "`--reference-membership` must have shape (references, records) = (4, 40)"),
    ],
)
def test_text_pool_audit_refuses_bad_settings_in_one_line(saved, tmp_path, flags, match):
    root, *_ = saved
    flags = [root / flag if flag in ("refs", "membership.npy", "wrong.npy") else flag for flag in flags]
    output = tmp_path / "out"
    assert_refused([*_argv(root, *flags), "--output", output, "--no-history"], output, match)


def test_a_pool_with_too_few_members_for_dataset_inference_runs_the_attacks_and_says_so(saved, tmp_path):
    root, *_ = saved
    (tmp_path / "six.txt").write_text("\n".join(map(str, range(6))) + "\n", encoding="utf-8")
    flags = ["--reference-models", root / "refs", "--reference-membership", root / "membership.npy"]
    argv = ["audit", "mia", "--target-kind", "huggingface", "--model", root / "target", "--data", root / "pool.txt", "--members", tmp_path / "six.txt"]
    code, stdout, stderr = run_cli([*argv, *flags, "--output", tmp_path / "out", "--no-history"])
    assert code == 0, stderr
    data = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert "dataset_inference" not in data and data["attacks"]
    assert "warning: dataset inference not run: it needs at least 8 members and 8 other texts in the pool" in stdout


def test_a_text_longer_than_the_models_context_is_refused_naming_the_pool(saved, tmp_path):
    root, texts, *_ = saved
    long = list(texts)
    long[5] = " ".join(WORDS * 20)  # far beyond the tiny GPT-2's 64 positions
    (tmp_path / "pool.txt").write_text("\n".join(long) + "\n", encoding="utf-8")
    argv = ["audit", "mia", "--target-kind", "huggingface", "--model", root / "target", "--data", tmp_path / "pool.txt", "--members", root / "members.txt"]
    flags = ["--reference-models", root / "refs", "--reference-membership", root / "membership.npy"]
    output = tmp_path / "out"
    line = assert_refused(
        [*argv, *flags, "--output", output, "--no-history"], output, "`--data` must hold texts that each fit the model's context of 64 tokens"
    )
    assert "the first is text 5" in line
