"""Explicit randomness: no public callable defaults its seed to None, and every public random function is deterministic by default.

The walk covers ``privaudit.__all__`` and every public module (no part of its
name starting with "_"). Each random function of the statistical core, the
canaries, the generators, the observation collectors, the trainers and
``privaudit.testing`` has a case below: called twice with no seed it gives
the same output, equal to an explicit ``seed=0`` call, and a result that
records seeds records 0. A new public function with a ``seed`` parameter in
those packages fails :func:`test_every_random_function_has_a_determinism_case`
until it gets a case.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import types

import numpy as np
import pytest

import privaudit
from privaudit.stats.bounds import epsilon_lower_bound
from privaudit.stats.thresholds import Bonferroni, MultiSplit

SEED_PARAMETERS = ("seed", "rng", "generator", "random_state")
# where another team owns the code: named here, with the reason, until it is changed there
OWNED_ELSEWHERE: dict[str, str] = {}
# packages whose random functions this file holds to a fixed default seed
RANDOM_PACKAGES = ("privaudit.stats", "privaudit.canaries", "privaudit.generators", "privaudit.observation", "privaudit.training", "privaudit.testing")


def _is_seed(name: str) -> bool:
    return name in SEED_PARAMETERS or name.endswith(("_seed", "_rng"))


def _public_modules() -> list[types.ModuleType]:
    modules = [privaudit]
    for info in pkgutil.walk_packages(privaudit.__path__, "privaudit."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        modules.append(importlib.import_module(info.name))  # privaudit imports optional packages lazily: every module imports
    return modules


def _is_record(obj) -> bool:
    """A result, config or provenance dataclass: its ``seed`` field records a value and draws nothing."""
    from privaudit._core.results import Result

    return inspect.isclass(obj) and (issubclass(obj, Result) or (dataclasses.is_dataclass(obj) and obj.__name__.endswith(("Config", "Settings", "Provenance"))))


def _callables(module: types.ModuleType):
    """(qualified name, callable) of the module's own public functions, classes and their public methods."""
    names = getattr(module, "__all__", None) or [name for name in vars(module) if not name.startswith("_")]
    for name in names:
        obj = getattr(module, name, None)
        if obj is None or getattr(obj, "__module__", None) != module.__name__:
            continue  # re-exports are checked where they are defined
        if inspect.isclass(obj):
            yield f"{module.__name__}:{name}", obj
            for attribute, member in vars(obj).items():
                function = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
                if not attribute.startswith("_") and inspect.isfunction(function):
                    yield f"{module.__name__}:{name}.{attribute}", function
        elif inspect.isfunction(obj):
            yield f"{module.__name__}:{name}", obj


def _seed_parameters(function) -> dict[str, object]:
    """The seed parameters of ``function`` and their defaults (inspect.Parameter.empty when required)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return {}
    return {name: parameter.default for name, parameter in signature.parameters.items() if _is_seed(name)}


def _none_seeded(modules) -> dict[str, list[str]]:
    found = {}
    for module in modules:
        for name, obj in _callables(module):
            if _is_record(obj):
                continue
            bad = [parameter for parameter, default in _seed_parameters(obj).items() if default is None]
            if bad:
                found[name] = bad
    return found


@pytest.fixture(scope="module")
def public_modules():
    return _public_modules()


def test_the_walk_finds_a_none_seed_and_skips_records():
    fake = types.ModuleType("fake_public")

    def draws(n, *, seed=None):
        return np.random.default_rng(seed).random(n)

    def also_draws(n, rng=None):
        return rng

    def fixed(n, *, seed=0):
        return n

    @dataclasses.dataclass(frozen=True)
    class SomethingConfig:
        seed: int | None = None

    for function in (draws, also_draws, fixed, SomethingConfig):
        function.__module__ = "fake_public"
        setattr(fake, function.__name__, function)
    assert _none_seeded([fake]) == {"fake_public:draws": ["seed"], "fake_public:also_draws": ["rng"]}


def test_no_public_callable_defaults_its_seed_to_none(public_modules):
    names = {module.__name__ for module in public_modules}
    assert {"privaudit.stats.bounds", "privaudit.canaries.text", "privaudit.observation.one_run", "privaudit.training.fedavg"} <= names
    exported = {f"privaudit:{name}": getattr(privaudit, name) for name in privaudit.__all__ if callable(getattr(privaudit, name))}
    lazily = {name: [p for p, default in _seed_parameters(obj).items() if default is None] for name, obj in exported.items() if not _is_record(obj)}
    assert not {name: bad for name, bad in lazily.items() if bad}, "a top-level name defaults its seed to None"
    found = _none_seeded(public_modules)
    offenders = {name: parameters for name, parameters in found.items() if name not in OWNED_ELSEWHERE}
    assert not offenders, f"seed parameters defaulting to None (give them a fixed default, 0): {offenders}"


# --- each public random function: no seed twice == seed=0, and the result records 0 --------------------------------------------------------


def _scores(seed: int, n: int = 400):
    rng = np.random.default_rng(seed)
    return rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)


def _same(first, second) -> None:
    """Equal outputs: arrays element for element, dataclasses field for field (NaN equal to NaN)."""
    if dataclasses.is_dataclass(first) and not isinstance(first, type):
        assert type(first) is type(second)
        for field in dataclasses.fields(first):
            _same(getattr(first, field.name), getattr(second, field.name))
    elif isinstance(first, (tuple, list)) and not isinstance(first, str):
        assert len(first) == len(second)
        for a, b in zip(first, second, strict=True):
            _same(a, b)
    elif isinstance(first, (np.ndarray, float, np.floating)):
        np.testing.assert_array_equal(first, second)
    else:
        assert first == second


@pytest.mark.parametrize(
    "threshold",
    ["split", Bonferroni(over="ranks"), MultiSplit(num_splits=3)],
    ids=["split", "ranks-with-ties", "multi-split"],
)
@pytest.mark.parametrize("data_seed", [0, 1])
def test_epsilon_lower_bound_is_deterministic_by_default_and_records_seed_0(data_seed, threshold):
    in_scores, out_scores = _scores(data_seed)
    if isinstance(threshold, Bonferroni):  # ties make the rank test draw its coin
        in_scores, out_scores = np.round(in_scores, 1), np.round(out_scores, 1)
    method = "eps-delta" if isinstance(threshold, Bonferroni) else "gdp"
    first = epsilon_lower_bound(in_scores, out_scores, delta=1e-5, method=method, threshold=threshold)
    again = epsilon_lower_bound(in_scores, out_scores, delta=1e-5, method=method, threshold=threshold)
    explicit = epsilon_lower_bound(in_scores, out_scores, delta=1e-5, method=method, threshold=threshold, seed=0)
    assert first == again == explicit and first.seed == 0
    # the seed is the only randomness: an explicit Generator seeded 0 gives the same draw, recorded as None (its state is not an integer)
    from_generator = epsilon_lower_bound(in_scores, out_scores, delta=1e-5, method=method, threshold=threshold, seed=np.random.default_rng(0))
    assert from_generator.seed is None and from_generator.epsilon == first.epsilon


def test_epsilon_lower_bound_refuses_a_none_seed_naming_it():
    in_scores, out_scores = _scores(0)
    with pytest.raises(ValueError, match=r"`seed` must be an integer in \[0, 2\*\*63 - 1\] or a numpy.random.Generator, got None"):
        epsilon_lower_bound(in_scores, out_scores, delta=1e-5, seed=None)


def test_canary_format_samples_from_seed_0_by_default():
    from privaudit.canaries.text import CanaryFormat

    fmt = CanaryFormat("pin {digits:4} {letters:2}")
    rng = np.random.default_rng(0)  # oracle: one integer per slot from default_rng(0), in slot order
    secret = tuple(int(rng.integers(len(symbols))) for symbols in fmt.slots)
    assert fmt.sample() == fmt.sample() == fmt.sample(seed=0)
    assert fmt.sample().secret == secret and fmt.sample().text == fmt.fill(secret)
    assert fmt.sample_many(5) == fmt.sample_many(5) == fmt.sample_many(5, seed=0)
    with pytest.raises(ValueError, match="`seed` must be an integer .* got None"):
        fmt.sample(seed=None)


def test_canary_insertion_and_reference_secrets_default_to_seed_0(tmp_path):
    from privaudit.canaries.corpus import insert_into_corpus, reference_secrets
    from privaudit.canaries.insertion import insert_canaries
    from privaudit.canaries.text import CanaryFormat

    fmt, lines = CanaryFormat("pin {digits:4}"), [f"line {i}" for i in range(30)]
    first, explicit = insert_canaries(lines, fmt, schedule=(1, 3)), insert_canaries(lines, fmt, schedule=(1, 3), seed=0)
    assert first.lines == insert_canaries(lines, fmt, schedule=(1, 3)).lines == explicit.lines
    assert first.provenance == explicit.provenance and first.provenance.seed == 0
    assert reference_secrets(fmt, 20) == reference_secrets(fmt, 20) == reference_secrets(fmt, 20, seed=0)
    record = insert_into_corpus(lines, fmt, output_dir=tmp_path / "a", schedule=(2,))
    again = insert_into_corpus(lines, fmt, output_dir=tmp_path / "b", schedule=(2,), seed=0)
    assert record.provenance == again.provenance and record.provenance.seed == 0
    assert (tmp_path / "a" / record.corpus_file).read_text() == (tmp_path / "b" / again.corpus_file).read_text()


def test_gradient_and_update_canaries_default_to_seed_0():
    from privaudit.canaries.gradient import GradientCanary
    from privaudit.canaries.update import UpdateCanaries

    canary = GradientCanary(kind="random", slot_size=3)
    _same(canary.draw(4, 5), canary.draw(4, 5, seed=0))
    _same(canary.directions(5, step=2), canary.directions(5, seed=0, step=2))
    _same(canary.directions(5, step=2), canary.draw(3, 5)[2])
    assert UpdateCanaries(4, 50).seed == 0
    _same(UpdateCanaries(4, 50).direction(1), UpdateCanaries(4, 50, 0).direction(1))


def _gaussian_release(seed: int):
    rng = np.random.default_rng(seed)

    def release(rows):
        norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
        return (rows / norms).sum(axis=0) + rng.normal(0.0, 1.0, rows.shape[1])

    return release


def test_observation_collectors_default_to_seed_0_and_record_it():
    from privaudit.observation.gradient import collect_gradient_observations
    from privaudit.observation.one_run import collect_one_run_observations, draw_inclusion

    def gradient(**seed):
        return collect_gradient_observations(_gaussian_release(5), num_steps=20, canaries_per_step=4, num_slots=12, clip_norm=1.0, **seed)

    first = gradient()
    _same(first, gradient())
    _same(first, gradient(seed=0))
    assert first.seed == 0
    assert draw_inclusion(40, 0.5).tolist() == (np.random.default_rng(0).random(40) < 0.5).tolist()  # oracle: the documented draw
    included = draw_inclusion(40, 0.5)
    one_run = collect_one_run_observations(_gaussian_release(5), included=included, num_steps=5, clip_norm=1.0)
    _same(one_run, collect_one_run_observations(_gaussian_release(5), included=included, num_steps=5, clip_norm=1.0, seed=0))


def test_final_model_observations_and_the_per_step_test_default_to_seed_0():
    from privaudit.observation.one_run import collect_final_model_observations, draw_inclusion
    from privaudit.stats.gaussian_steps import gaussian_step_bound

    included = draw_inclusion(40, 0.5)

    def hidden_state(**seed):
        params, noise = np.zeros(40), np.random.default_rng(7)

        def step(rows):  # one DP-SGD step on the audit coordinates: clipped canary rows plus N(0, 1), learning rate 0.1
            params[:] -= 0.1 * (rows.sum(axis=0) + noise.normal(size=40))

        return collect_final_model_observations(step, params.copy, included=included, num_steps=5, clip_norm=1.0, learning_rate=0.1, canary_rate=0.5, **seed)

    first = hidden_state()
    _same(first, hidden_state(seed=0))
    assert not np.array_equal(first, hidden_state(seed=1))  # the seed draws which steps a canary joins
    inside, outside = _scores(3)
    _same(
        gaussian_step_bound(inside, outside, delta=1e-5, test="order-statistics", claim=1.0),
        gaussian_step_bound(inside, outside, delta=1e-5, test="order-statistics", claim=1.0, seed=0),
    )


def test_the_final_sums_order_statistics_test_breaks_ties_from_seed_0_by_default():
    from privaudit.stats.gaussian_steps import final_sum_step_bound

    coins = np.arange(200) % 2 == 0
    sums = np.where(np.arange(200) % 5 == 0, 3.0, 0.0) + 3.0 * coins  # tied values: the seed breaks the ties
    bounds = [final_sum_step_bound(sums, coins, num_steps=3, delta=1e-5, test="order-statistics", claim=1.0, **seed) for seed in ({}, {"seed": 0})]
    _same(*bounds)
    assert bounds[0].seed == 0


def test_assert_dp_defaults_to_seed_0_and_returns_the_bound_with_it():
    from privaudit.testing import assert_dp

    def run(**seed):
        return assert_dp(_gaussian_release(1), epsilon=50.0, delta=1e-5, num_observations=500, canaries_per_step=50, **seed)

    first = run()
    assert first == run() == run(seed=0) and first.seed == 0


def test_assert_mechanism_dp_defaults_to_seed_0_and_returns_the_result_with_it():
    from privaudit.testing import assert_mechanism_dp

    def laplace_sum(dataset, size, rng):  # epsilon = 1 for one record of value at most 1 added
        return np.asarray(dataset, dtype=float).sum() + rng.laplace(0.0, 1.0, size)

    def run(**seed):
        return assert_mechanism_dp(laplace_sum, np.zeros(4), np.array([0.0, 0.0, 0.0, 0.0, 1.0]), epsilon=1.0, samples=1000, pilot_samples=500, **seed)

    first = run()
    assert first.epsilon == run().epsilon == run(seed=0).epsilon and first.config.seed == 0


def test_lm_canaries_default_to_seed_0_and_the_draws_repeat_from_their_generator():
    pytest.importorskip("torch")
    from privaudit.canaries.lm_provenance import prepare_lm_canaries

    pytest.importorskip("transformers")
    from privaudit.audits.lm.tiny import bpe_tokenizer, tiny_gpt2
    from privaudit.canaries import lm

    texts = ["the quick brown fox jumps over the lazy dog", "a list comprehension builds a new list"] * 6
    tokenizer = bpe_tokenizer(texts, vocab_size=300)
    model = tiny_gpt2(tokenizer, seed=1, n_embd=16, n_layer=1)
    for design in lm.DESIGNS:
        first, *_ = prepare_lm_canaries(design, tokenizer, count=4, model=model, texts=texts)
        again, *_ = prepare_lm_canaries(design, tokenizer, count=4, model=model, texts=texts, seed=0)
        assert first.to_dict() == again.to_dict() and first.seed == 0, design
        assert list(first.included) == (np.random.default_rng(first.inclusion_seed).random(4) < 0.5).tolist()
    assert lm.new_token_names(3) == lm.new_token_names(3, seed=0)
    resized, _ = lm.add_new_tokens(model, tokenizer, lm.new_token_names(2))
    again, _ = lm.add_new_tokens(model, tokenizer, lm.new_token_names(2), seed=0)
    assert all(np.array_equal(a.detach().numpy(), b.detach().numpy()) for a, b in zip(resized.parameters(), again.parameters(), strict=True))
    # the designs' draws take a Generator, never a global RNG: the same generator state gives the same secrets
    calls = {
        "random_token_secrets": lambda rng: lm.random_token_secrets(tokenizer, 3, 2, rng),
        "least_likely_secrets": lambda rng: lm.least_likely_secrets(model, tokenizer, "the ", 3, 2, rng),
        "bigram_secrets": lambda rng: lm.bigram_secrets(tokenizer, texts, "the ", 3, 2, rng),
        "high_temperature_secrets": lambda rng: lm.high_temperature_secrets(model, tokenizer, "the ", 3, 2, rng),
        "draw_secrets": lambda rng: lm.draw_secrets("random-tokens", tokenizer, count=3, length=2, prefix="the ", rng=rng),
    }
    for name, call in calls.items():
        assert call(np.random.default_rng(5)) == call(np.random.default_rng(5)), name


def test_fedavg_simulation_defaults_to_seed_0_and_records_it():
    from privaudit.canaries.update import UpdateCanaries
    from privaudit.training.fedavg import FedAvgConfig, model_dimension, participation_schedule, simulate_fedavg

    rng = np.random.default_rng(3)
    x = rng.normal(size=(60, 3))
    data = types.SimpleNamespace(x_train=x, y_train=(x[:, 0] > 0).astype(np.int64), x_test=x[:10], y_test=(x[:10, 0] > 0).astype(np.int64))
    data.num_features, data.num_classes = 3, 2
    config = FedAvgConfig(num_rounds=4, clients_per_round=3, hidden=4, examples_per_client=5)
    canaries = UpdateCanaries(4, model_dimension(3, 2, 4))

    def run(**seed):
        return simulate_fedavg(data, config, canaries, num_observed=2, **seed)

    first, again, explicit = run(), run(), run(seed=0)
    for result in (again, explicit):
        for field in ("final_cosines", "max_cosines", "participations", "clip_norms"):
            np.testing.assert_array_equal(getattr(first, field), getattr(result, field))
        assert result.test_accuracy == first.test_accuracy
    assert first.seed == 0
    schedule = participation_schedule(10, config)
    _same(schedule, participation_schedule(10, config, 0))
    _same(schedule, participation_schedule(10, config, np.random.default_rng(0)))


def test_mst_generator_defaults_to_seed_0():
    from privaudit.generators.tabular import MSTGenerator

    rng = np.random.default_rng(2)
    x = rng.integers(0, 3, (200, 2)).astype(float)
    y = (x[:, 0] > 1).astype(int)
    fitted, explicit = MSTGenerator().fit(x, y), MSTGenerator().fit(x, y, seed=0)
    _same(fitted.sample(50), fitted.sample(50))
    _same(fitted.sample(50), explicit.sample(50, seed=0))


def test_torch_random_functions_default_to_seed_0():
    torch = pytest.importorskip("torch")
    from privaudit.canaries.inputs import adversarial_canary, blank_canary, crafted_canary, make_input_canary, mean_data_gradient, mislabeled_canary
    from privaudit.generators.images import VAEGenerator
    from privaudit.generators.text import CharLMGenerator
    from privaudit.observation.inputs import collect_input_observations
    from privaudit.training.dpsgd import DPSGDConfig, ReferenceDPSGD

    rng = np.random.default_rng(1)
    x, y = rng.random((30, 4), dtype=np.float32), np.arange(30) % 3

    def model():
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            return torch.nn.Linear(4, 3)

    for maker, options in ((mislabeled_canary, {}), (blank_canary, {}), (adversarial_canary, {"num_steps": 2}), (crafted_canary, {"num_steps": 2})):
        _same(maker(model(), x, y, **options), maker(model(), x, y, seed=0, **options))
    _same(make_input_canary("mislabeled", model(), x, y), make_input_canary("mislabeled", model(), x, y, seed=0))
    _same(mean_data_gradient(model(), x, y, sample_size=10), mean_data_gradient(model(), x, y, sample_size=10, seed=0))
    from privaudit.canaries.metagradient import optimise_input_canaries

    quick = dict(meta_steps=2, train_steps=2, start="fresh")
    _same(
        optimise_input_canaries(model(), x, y, x[:4], y[:4], **quick).canary_x, optimise_input_canaries(model(), x, y, x[:4], y[:4], seed=0, **quick).canary_x
    )

    def observe(**seed):
        canary = (np.zeros(4, dtype=np.float32), 1)
        settings = dict(noise_multiplier=1.0, clip_norm=1.0, sampling_rate=0.3, learning_rate=0.1, num_steps=3)
        return collect_input_observations(model(), x, y, *canary, **settings, **seed)

    first = observe()
    _same(first, observe(seed=0))
    assert first.seed == 0

    def trainer(**seed):
        return ReferenceDPSGD(model(), torch.as_tensor(x), torch.as_tensor(y), DPSGDConfig(noise_multiplier=1.0, sampling_rate=0.5), audit_size=2, **seed)

    default, explicit = trainer(), trainer(seed=0)
    _same(default.step(np.zeros((0, 2))), explicit.step(np.zeros((0, 2))))
    assert default.seed == 0

    images = (rng.random((40, 6)) < 0.5).astype(float)
    vae, vae_explicit = VAEGenerator(epochs=1, hidden=8, latent=2).fit(images), VAEGenerator(epochs=1, hidden=8, latent=2).fit(images, seed=0)
    _same(vae.sample(5), vae_explicit.sample(5, seed=0))
    lines = ["abab abab", "baba baba"] * 5
    text = CharLMGenerator(length=6, top_k=3, hidden=8, epochs=1, sequence_length=10)
    text_explicit = CharLMGenerator(length=6, top_k=3, hidden=8, epochs=1, sequence_length=10)
    _same(text.fit(lines).sample(3), text_explicit.fit(lines, seed=0).sample(3, seed=0))


def test_lm_sampling_and_canary_placement_default_to_seed_0():
    pytest.importorskip("transformers")
    import torch

    from privaudit.audits.lm.tiny import bpe_tokenizer, tiny_gpt2
    from privaudit.canaries.lm_corpus import CorpusRecords, corpus_with_canaries
    from privaudit.canaries.lm_sampling import sample_synthetic_texts, sample_token_ids

    texts = ["the quick brown fox jumps over the lazy dog", "a list comprehension builds a new list"] * 6
    tokenizer = bpe_tokenizer(texts, vocab_size=300)
    model = tiny_gpt2(tokenizer, seed=1, n_embd=16, n_layer=1)
    prompts = [[5, 6], [7]]
    first = sample_token_ids(model, prompts, new_tokens=4)
    assert first == sample_token_ids(model, prompts, new_tokens=4, seed=0)
    assert first == sample_token_ids(model, prompts, new_tokens=4, seed=torch.Generator().manual_seed(0))  # a Generator is drawn from as it stands
    assert sample_synthetic_texts(model, tokenizer, ["the", "a"], max_new_tokens=3) == sample_synthetic_texts(
        model, tokenizer, ["the", "a"], max_new_tokens=3, seed=0
    )
    corpus = CorpusRecords(None, list(texts), list(texts), "lines", None)
    placed = corpus_with_canaries(corpus, ["canary one", "canary two"])
    assert placed == corpus_with_canaries(corpus, ["canary one", "canary two"], seed=0)


def test_shuffled_epsilon_lower_bound_defaults_to_seed_0_and_records_it():
    from privaudit.stats.shuffling import shuffled_epsilon_lower_bound

    first = shuffled_epsilon_lower_bound(1.0, 4, 2, 1e-3, samples=5_000)
    assert first == shuffled_epsilon_lower_bound(1.0, 4, 2, 1e-3, samples=5_000) == shuffled_epsilon_lower_bound(1.0, 4, 2, 1e-3, samples=5_000, seed=0)
    assert first.seed == 0 and first.epsilon != shuffled_epsilon_lower_bound(1.0, 4, 2, 1e-3, samples=5_000, seed=1).epsilon


def test_dataset_inference_defaults_to_seed_0_and_records_it():
    from privaudit.stats.dataset_inference import dataset_inference, split_in_halves

    rng = np.random.default_rng(5)
    suspect, validation = rng.normal(size=(40, 2)), rng.normal(size=(40, 2))
    first = dataset_inference(suspect, validation, num_permutations=199)
    assert first == dataset_inference(suspect, validation, num_permutations=199) == dataset_inference(suspect, validation, num_permutations=199, seed=0)
    assert first.seed == 0 and first.p_value != dataset_inference(suspect, validation, num_permutations=199, seed=1).p_value
    assert all(np.array_equal(a, b) for a, b in zip(split_in_halves(9), split_in_halves(9, seed=0), strict=True))


# every public function or method with a seed in RANDOM_PACKAGES, and the test above that holds it to its default
CASES = {
    "privaudit.stats.bounds:epsilon_lower_bound": test_epsilon_lower_bound_is_deterministic_by_default_and_records_seed_0,
    "privaudit.canaries.text:CanaryFormat.sample": test_canary_format_samples_from_seed_0_by_default,
    "privaudit.canaries.text:CanaryFormat.sample_many": test_canary_format_samples_from_seed_0_by_default,
    "privaudit.canaries.insertion:insert_canaries": test_canary_insertion_and_reference_secrets_default_to_seed_0,
    "privaudit.canaries.corpus:insert_into_corpus": test_canary_insertion_and_reference_secrets_default_to_seed_0,
    "privaudit.canaries.corpus:reference_secrets": test_canary_insertion_and_reference_secrets_default_to_seed_0,
    "privaudit.canaries.gradient:GradientCanary.draw": test_gradient_and_update_canaries_default_to_seed_0,
    "privaudit.canaries.gradient:GradientCanary.directions": test_gradient_and_update_canaries_default_to_seed_0,
    "privaudit.canaries.update:UpdateCanaries": test_gradient_and_update_canaries_default_to_seed_0,
    "privaudit.observation.gradient:collect_gradient_observations": test_observation_collectors_default_to_seed_0_and_record_it,
    "privaudit.observation.one_run:collect_one_run_observations": test_observation_collectors_default_to_seed_0_and_record_it,
    "privaudit.observation.one_run:draw_inclusion": test_observation_collectors_default_to_seed_0_and_record_it,
    "privaudit.observation.one_run:collect_final_model_observations": test_final_model_observations_and_the_per_step_test_default_to_seed_0,
    "privaudit.stats.gaussian_steps:gaussian_step_bound": test_final_model_observations_and_the_per_step_test_default_to_seed_0,
    "privaudit.stats.gaussian_steps:final_sum_step_bound": test_the_final_sums_order_statistics_test_breaks_ties_from_seed_0_by_default,
    "privaudit.stats.shuffling:shuffled_epsilon_lower_bound": test_shuffled_epsilon_lower_bound_defaults_to_seed_0_and_records_it,
    "privaudit.stats.dataset_inference:dataset_inference": test_dataset_inference_defaults_to_seed_0_and_records_it,
    "privaudit.stats.dataset_inference:split_in_halves": test_dataset_inference_defaults_to_seed_0_and_records_it,
    "privaudit.testing:assert_dp": test_assert_dp_defaults_to_seed_0_and_returns_the_bound_with_it,
    "privaudit.testing:assert_mechanism_dp": test_assert_mechanism_dp_defaults_to_seed_0_and_returns_the_result_with_it,
    **{
        f"privaudit.canaries.lm:{name}": test_lm_canaries_default_to_seed_0_and_the_draws_repeat_from_their_generator
        for name in (
            "add_new_tokens",
            "bigram_secrets",
            "draw_secrets",
            "high_temperature_secrets",
            "least_likely_secrets",
            "new_token_names",
            "random_token_secrets",
        )
    },
    "privaudit.canaries.lm_provenance:prepare_lm_canaries": test_lm_canaries_default_to_seed_0_and_the_draws_repeat_from_their_generator,
    "privaudit.canaries.lm_sampling:sample_token_ids": test_lm_sampling_and_canary_placement_default_to_seed_0,
    "privaudit.canaries.lm_sampling:sample_synthetic_texts": test_lm_sampling_and_canary_placement_default_to_seed_0,
    "privaudit.canaries.lm_corpus:corpus_with_canaries": test_lm_sampling_and_canary_placement_default_to_seed_0,
    "privaudit.training.fedavg:simulate_fedavg": test_fedavg_simulation_defaults_to_seed_0_and_records_it,
    "privaudit.training.fedavg:participation_schedule": test_fedavg_simulation_defaults_to_seed_0_and_records_it,
    # records of the seed their maker used, checked in the maker's case
    "privaudit.training.fedavg:FedAvgRun": test_fedavg_simulation_defaults_to_seed_0_and_records_it,
    "privaudit.observation.gradient:GradientObservations": test_observation_collectors_default_to_seed_0_and_record_it,
    "privaudit.generators.tabular:MSTGenerator.fit": test_mst_generator_defaults_to_seed_0,
    "privaudit.generators.tabular:MSTGenerator.sample": test_mst_generator_defaults_to_seed_0,
    "privaudit.generators:Generator.fit": test_mst_generator_defaults_to_seed_0,  # the protocol; each generator is checked
    "privaudit.generators:Generator.sample": test_mst_generator_defaults_to_seed_0,
    "privaudit.canaries.inputs:mislabeled_canary": test_torch_random_functions_default_to_seed_0,
    "privaudit.canaries.inputs:blank_canary": test_torch_random_functions_default_to_seed_0,
    "privaudit.canaries.inputs:adversarial_canary": test_torch_random_functions_default_to_seed_0,
    "privaudit.canaries.inputs:crafted_canary": test_torch_random_functions_default_to_seed_0,
    "privaudit.canaries.inputs:make_input_canary": test_torch_random_functions_default_to_seed_0,
    "privaudit.canaries.inputs:mean_data_gradient": test_torch_random_functions_default_to_seed_0,
    "privaudit.canaries.metagradient:optimise_input_canaries": test_torch_random_functions_default_to_seed_0,
    "privaudit.observation.inputs:collect_input_observations": test_torch_random_functions_default_to_seed_0,
    "privaudit.training.dpsgd:ReferenceDPSGD": test_torch_random_functions_default_to_seed_0,
    "privaudit.generators.images:VAEGenerator.fit": test_torch_random_functions_default_to_seed_0,
    "privaudit.generators.images:VAEGenerator.sample": test_torch_random_functions_default_to_seed_0,
    "privaudit.generators.text:CharLMGenerator.fit": test_torch_random_functions_default_to_seed_0,
    "privaudit.generators.text:CharLMGenerator.sample": test_torch_random_functions_default_to_seed_0,
}


def test_every_random_function_has_a_determinism_case_and_a_fixed_default(public_modules):
    found = {}
    for module in public_modules:
        if not module.__name__.startswith(RANDOM_PACKAGES):
            continue
        for name, obj in _callables(module):
            parameters = _seed_parameters(obj)
            if parameters and not _is_record(obj):
                found[name] = parameters
    missing = sorted(set(found) - set(CASES))
    assert not missing, f"public random functions without a determinism case here: {missing}"
    assert not sorted(set(CASES) - set(found)), "cases for functions that no longer take a seed"
    not_zero = {name: parameters for name, parameters in found.items() if any(default != 0 for default in parameters.values())}
    assert not not_zero, f"seed parameters without the fixed default 0: {not_zero}"
