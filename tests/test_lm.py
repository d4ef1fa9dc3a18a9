"""Character LSTM, prefix-reuse scoring, extraction through the model, and DP-SGD with Opacus."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from privaudit.audits.secret_sharer.measure import enumeration_index  # noqa: E402
from privaudit.canaries import CanaryFormat, insert_canaries  # noqa: E402
from privaudit.extraction import brute_force_search, shortest_path_search  # noqa: E402
from privaudit.models.char_lstm import CharVocabulary, TrainingConfig, build_char_lstm, train_char_lstm  # noqa: E402
from privaudit.models.lm_scoring import CharLSTMScorer  # noqa: E402
from privaudit.stats.exposure import exact_exposure  # noqa: E402

FORMAT = CanaryFormat("the pin is {digits:4}")


def _filler(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta", "model", "privacy", "audit", "line"]
    return [" ".join(rng.choice(words, size=6)) for _ in range(count)]


@pytest.fixture(scope="module")
def memorising_model():
    corpus = insert_canaries(_filler(300, 0), FORMAT, schedule=(60,), seed=1)
    config = TrainingConfig(epochs=12, hidden=64, sequence_length=40, batch_size=32, learning_rate=1e-2, patience=12)
    model, report = train_char_lstm(corpus.lines, config)
    return model, corpus.provenance.canaries[0], report


def _hand_log_perplexity(model, text: str, context: str = "\n") -> float:
    """Σ -log2 softmax(logits)[next char], one character at a time, no batching."""
    vocab = CharVocabulary()
    codes = vocab.encode(context + text)
    state, total = None, 0.0
    with torch.no_grad():
        for current, following in zip(codes[:-1], codes[1:], strict=True):
            logits, state = model(torch.tensor([[current]]), state)
            total -= float(torch.log_softmax(logits[0, -1].double(), -1)[following]) / np.log(2)
    return total


def test_scoring_paths_agree_with_a_hand_computation():
    torch.manual_seed(0)
    model = build_char_lstm(CharVocabulary().size, hidden=16).eval()
    scorer = CharLSTMScorer(model, batch_size=37)
    fmt = CanaryFormat("code {digits:2}-{letters:1} {words:2}!", vocabulary=("a", "bb", "ccc"))
    texts = [canary.text for canary in fmt.enumerate()]
    secrets = [canary.secret for canary in fmt.enumerate()]
    scratch = scorer.log_perplexity(texts)
    reused_tree = scorer.format_log_perplexities(fmt)
    reused_prefix = scorer.format_log_perplexities(fmt, secrets=secrets)
    assert reused_tree == pytest.approx(scratch, abs=1e-4)
    assert reused_prefix == pytest.approx(scratch, abs=1e-4)
    for index in (0, 777, len(texts) - 1):
        assert scratch[index] == pytest.approx(_hand_log_perplexity(model, texts[index]), abs=1e-4)


def test_prefix_reuse_runs_far_fewer_lstm_steps():
    torch.manual_seed(0)
    model = build_char_lstm(CharVocabulary().size, hidden=16).eval()
    fmt = CanaryFormat("my secret number is {digits:4}")
    reuse, scratch = CharLSTMScorer(model), CharLSTMScorer(model)
    reuse.format_log_perplexities(fmt)
    scratch.log_perplexity([canary.text for canary in fmt.enumerate()])
    assert scratch.steps >= 5 * reuse.steps


def test_a_memorised_canary_ranks_first(memorising_model):
    model, record, _ = memorising_model
    scorer = CharLSTMScorer(model)
    everything = scorer.format_log_perplexities(FORMAT)
    canary = scorer.format_log_perplexities(FORMAT, secrets=[record["secret"]])
    # the two scoring paths agree to rounding; rank by the canary's own entry of R, as the audit does
    own = everything[[enumeration_index(FORMAT, record["secret"])]]
    assert canary == pytest.approx(own, abs=1e-4)
    result = exact_exposure(own, everything)
    assert result.ranks[0] == 1
    assert result.exposures[0] == pytest.approx(np.log2(10_000))


def test_extraction_through_the_model_finds_the_canary(memorising_model):
    model, record, _ = memorising_model
    scorer = CharLSTMScorer(model)
    search = shortest_path_search(scorer.extraction_scorer(FORMAT), [10] * 4, batch_size=8)
    assert search.secret == tuple(record["secret"])
    assert search.queries * 10 <= FORMAT.space_size
    assert brute_force_search(scorer.extraction_scorer(FORMAT), [10] * 4).secret == search.secret


def test_training_stops_early_and_keeps_the_best_epoch(memorising_model):
    _, _, report = memorising_model
    assert report.validation_losses[report.best_epoch - 1] == min(report.validation_losses)


def test_dp_training_through_opacus_reports_its_epsilon():
    pytest.importorskip("opacus")
    config = TrainingConfig(epochs=1, hidden=16, sequence_length=20, batch_size=16, target_epsilon=8.0, target_delta=1e-5)
    model, report = train_char_lstm(_filler(100, 2), config)
    assert report.epsilon is not None and 0 < report.epsilon <= 8.0 * 1.01
    assert isinstance(model, torch.nn.Module) and not hasattr(model, "_module")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [(dict(epochs=0), "`epochs`"), (dict(validation_fraction=1.0), "`validation_fraction`"), (dict(target_epsilon=-1.0), "`target_epsilon`")],
)
def test_bad_training_configs_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TrainingConfig(**kwargs)


def test_empty_corpus_is_refused():
    with pytest.raises(ValueError, match="`lines` must not be empty"):
        train_char_lstm([], TrainingConfig(epochs=1))


def test_training_leaves_the_callers_global_rng_and_repeats_from_its_seed():
    torch.manual_seed(12345)
    before = torch.get_rng_state()
    config = TrainingConfig(epochs=1, hidden=8, sequence_length=20, batch_size=16, seed=3)
    first, _ = train_char_lstm(_filler(60, 1), config)
    assert torch.equal(torch.get_rng_state(), before)  # the caller's next draws are the ones it would have made
    second, _ = train_char_lstm(_filler(60, 1), config)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values(), strict=True))
