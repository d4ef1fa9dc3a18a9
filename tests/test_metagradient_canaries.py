"""Input canaries optimised by metagradient descent (privaudit.canaries.metagradient) and the one-run black box that uses them."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cli_helpers import assert_refused  # noqa: E402

from privaudit.audits.one_run.audit import _black_box, _seeds, run_one_run_audit  # noqa: E402
from privaudit.audits.one_run.config import OneRunAuditConfig  # noqa: E402
from privaudit.canaries.metagradient import optimise_input_canaries, surrogate_memory, surrogate_objective  # noqa: E402
from privaudit.observation.one_run import draw_inclusion  # noqa: E402
from privaudit.stats.one_run_combined import one_run_lower_bound  # noqa: E402


def _problem(seed: int = 0, n: int = 30, dims: int = 5, classes: int = 3, canaries: int = 6):
    rng = np.random.default_rng(seed)
    x = rng.random((n, dims))
    y = rng.integers(0, classes, n)
    canary_x = rng.random((canaries, dims))
    canary_y = rng.integers(0, classes, canaries)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = torch.nn.Sequential(torch.nn.Linear(dims, 4), torch.nn.Tanh(), torch.nn.Linear(4, classes)).double()
    return model, x, y, canary_x, canary_y


@pytest.mark.parametrize("clip_norm", [None, 0.3])
def test_the_metagradient_is_the_derivative_of_the_unrolled_objective(clip_norm):
    """Autograd through the unrolled training against central finite differences of the same objective, coordinate by coordinate."""
    model, x, y, canary_x, canary_y = _problem()
    params = {name: p.detach().clone() for name, p in model.named_parameters()}
    features, labels = torch.as_tensor(x), torch.as_tensor(y)
    canary_labels = torch.as_tensor(canary_y)
    included = torch.tensor([True, False, True, True, False, False])
    settings = dict(train_steps=4, learning_rate=0.7, clip_norm=clip_norm, divisor=33.0)

    def objective(values):
        return surrogate_objective(model, params, features, labels, values, canary_labels, included, **settings)

    leaf = torch.as_tensor(canary_x).clone().requires_grad_(True)
    (metagradient,) = torch.autograd.grad(objective(leaf), leaf)
    h = 1e-6
    for row, col in [(0, 0), (0, 3), (1, 2), (3, 4), (5, 1)]:  # canaries in and out
        up, down = torch.as_tensor(canary_x).clone(), torch.as_tensor(canary_x).clone()
        up[row, col] += h
        down[row, col] -= h
        numeric = (float(objective(up).detach()) - float(objective(down).detach())) / (2 * h)
        assert float(metagradient[row, col]) == pytest.approx(numeric, rel=1e-5, abs=1e-9), (row, col)
    assert float(metagradient[1].abs().sum()) > 0.0  # an excluded canary moves through its own final loss


def test_optimising_leaves_the_callers_model_arrays_and_global_random_states():
    model, x, y, canary_x, canary_y = _problem()
    state = copy.deepcopy(model.state_dict())
    arrays = [a.copy() for a in (x, y, canary_x, canary_y)]
    torch_state, numpy_state = torch.get_rng_state(), np.random.get_state()
    out = optimise_input_canaries(model, x, y, canary_x, canary_y, meta_steps=3, train_steps=3, start="fresh", seed=4)
    assert all(torch.equal(state[key], value) for key, value in model.state_dict().items())
    assert all(np.array_equal(a, b) for a, b in zip(arrays, (x, y, canary_x, canary_y), strict=True))
    assert torch.equal(torch_state, torch.get_rng_state())
    assert all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(numpy_state, np.random.get_state(), strict=True))
    again = optimise_input_canaries(model, x, y, canary_x, canary_y, meta_steps=3, train_steps=3, start="fresh", seed=4)
    assert np.array_equal(out.canary_x, again.canary_x) and not np.array_equal(out.canary_x, canary_x)  # seeded, and it moved
    low, high = x.min(), x.max()
    assert out.canary_x.min() >= low and out.canary_x.max() <= high and out.settings["bounds"] == [low, high]


def test_optimised_canaries_widen_the_in_minus_out_gap_on_splits_never_used():
    """The objective on 20 fresh splits and their complements (a seed the optimisation never drew): the optimised canaries separate more.

    Over problem seeds 0-3 and optimisation seeds 0-1 the gap widened 1.24 to 2.1 times; this problem's, 2.0 and 2.1 times.
    """
    model, x, y, canary_x, canary_y = _problem(seed=1, n=60, canaries=20)
    settings = dict(train_steps=10, learning_rate=1.0, clip_norm=None, divisor=70.0)
    out = optimise_input_canaries(model, x, y, canary_x, canary_y, meta_steps=100, step_size=0.02, seed=0, **settings)
    features, labels, canary_labels = torch.as_tensor(x), torch.as_tensor(y), torch.as_tensor(canary_y)
    params = {name: p.detach() for name, p in model.named_parameters()}
    generator = torch.Generator().manual_seed(12345)

    def gap(values) -> float:
        total = 0.0
        for _ in range(20):
            included = torch.randperm(20, generator=generator) < 10
            for side in (included, ~included):
                total += float(surrogate_objective(model, params, features, labels, torch.as_tensor(values), canary_labels, side, **settings).detach())
        return total / 40

    before, after = gap(canary_x), gap(out.canary_x)
    assert before < 0 and after < 1.5 * before, (before, after)  # the loss of a canary in falls below that of one out, by more
    assert out.objective[-1] < out.objective[0]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"meta_steps": 0}, "`meta_steps`"),
        ({"step_size": 0.0}, "`step_size`"),
        ({"bounds": (1.0, 0.0)}, "`bounds`"),
        ({"start": "warm"}, "`start`"),
        ({"clip_norm": -1.0}, "`clip_norm`"),
    ],
)
def test_bad_settings_are_refused_by_name(options, message):
    model, x, y, canary_x, canary_y = _problem()
    with pytest.raises(ValueError, match=message):
        optimise_input_canaries(model, x, y, canary_x, canary_y, **options)


def test_a_model_with_dropout_and_batch_norm_in_train_mode_is_left_as_it_was():
    """The surrogate trains a copy in eval mode: no dropout draw from torch's generator, no running statistics updated, the mode kept."""
    _, x, y, canary_x, canary_y = _problem()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.BatchNorm1d(8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 3)).double()
    state = copy.deepcopy(model.state_dict())
    torch_state = torch.get_rng_state()
    runs = [optimise_input_canaries(model, x, y, canary_x, canary_y, meta_steps=2, train_steps=3, clip_norm=clip, seed=1) for clip in (None, None, 1.0)]
    assert model.training and torch.equal(torch_state, torch.get_rng_state())
    assert all(torch.equal(state[key], value) for key, value in model.state_dict().items())  # running mean and variance too
    assert np.array_equal(runs[0].canary_x, runs[1].canary_x)


def test_the_optimised_features_are_floats_whatever_the_canaries_dtype():
    model, x, y, canary_x, canary_y = _problem()
    out = optimise_input_canaries(model, x, y, np.round(canary_x).astype(np.int64), canary_y, meta_steps=2, train_steps=2, step_size=0.02, seed=0)
    assert out.canary_x.dtype == np.float64 and np.any(out.canary_x % 1 != 0)  # 0.02 steps are kept, not floored


def test_a_fresh_start_that_cannot_draw_every_parameter_and_a_diverging_surrogate_are_refused():
    model, x, y, canary_x, canary_y = _problem()
    model.register_parameter("offset", torch.nn.Parameter(torch.zeros(3, dtype=torch.float64)))
    with pytest.raises(ValueError, match="`start` 'fresh'.*offset"):
        optimise_input_canaries(model, x, y, canary_x, canary_y, start="fresh", meta_steps=1, train_steps=1)
    model, x, y, canary_x, canary_y = _problem()
    with pytest.raises(ValueError, match="diverged.*`learning_rate`"):  # float32 logits overflow to inf, and the loss to NaN
        optimise_input_canaries(model.float(), x, y, canary_x, canary_y, learning_rate=1e38, meta_steps=2, train_steps=5)


def test_canaries_of_another_shape_or_features_that_are_not_finite_are_refused():
    model, x, y, canary_x, canary_y = _problem()
    with pytest.raises(ValueError, match="`canary_x` must hold examples of shape"):
        optimise_input_canaries(model, x, y, canary_x[:, :3], canary_y)
    for name, bad in (("x", x.copy()), ("canary_x", canary_x.copy())):
        bad[1, 2] = np.nan
        arrays = {"x": x, "canary_x": canary_x, name: bad}
        with pytest.raises(ValueError, match=f"`{name}` must hold finite features"):
            optimise_input_canaries(model, arrays["x"], y, arrays["canary_x"], canary_y)


TINY = dict(threat_model="black-box", num_canaries=60, num_steps=3, meta_steps=2, input_canaries="metagradient")


def test_the_canaries_are_optimised_before_and_apart_from_the_inclusion_draw(monkeypatch):
    """Two inclusion draws, one seed: the optimisation gets the same inputs and returns the same features, which the run trains on."""
    import privaudit.audits.one_run.audit as one_run

    seen = []

    def recording(*args, **kwargs):
        out = optimise_input_canaries(*args, **kwargs)
        seen.append((args[1].copy(), args[3].copy(), out.canary_x.copy()))
        return out

    monkeypatch.setattr(one_run, "optimise_input_canaries", recording)
    config = OneRunAuditConfig(**TINY)
    seeds = _seeds(config)
    progress = lambda *args, **kwargs: None  # noqa: E731
    first = _black_box(config, draw_inclusion(60, 0.5, 1), seeds, progress)[2]["canary_optimisation"]
    second = _black_box(config, draw_inclusion(60, 0.5, 2), seeds, progress)[2]["canary_optimisation"]
    (data_a, start_a, out_a), (data_b, start_b, out_b) = seen
    assert np.array_equal(data_a, data_b) and np.array_equal(start_a, start_b) and np.array_equal(out_a, out_b)
    assert not np.array_equal(out_a, start_a) and first == second and first["seed"] == seeds["metagradient"] and first["meta_steps"] == 2
    assert first["train_steps"] == config.num_steps and first["start"] == "fresh" and first["clip_norm"] is None


def test_the_calibrated_score_is_the_runs_minus_a_reference_from_the_same_start_without_canaries():
    """Recomputed by hand: the reference is the built-in DP-SGD from the model's start on the data alone, with its own noise seed."""
    from privaudit.audits.one_run.audit import _model_and_data, _training, mislabeled_canaries
    from privaudit.training.dpsgd import ReferenceDPSGD

    loss = run_one_run_audit(OneRunAuditConfig(threat_model="black-box", num_canaries=60, num_steps=3))
    config = OneRunAuditConfig(threat_model="black-box", num_canaries=60, num_steps=3, black_box_score="calibrated")
    calibrated = run_one_run_audit(config)
    seeds = _seeds(config)
    model, data, _ = _model_and_data(config)
    pool_x, pool_y = np.concatenate([data.x_train, data.x_test]), np.concatenate([data.y_train, data.y_test])
    index, canary_y = mislabeled_canaries(pool_y, 60, data.num_classes, seed=seeds["canaries"])
    kept = np.ones(len(pool_y), dtype=bool)
    kept[index] = False
    train_kept = kept[: len(data.y_train)]
    x, y = data.x_train[train_kept].astype(np.float32), data.y_train[train_kept].astype(np.int64)
    trainer = ReferenceDPSGD(model, x, y, _training(config), seed=seeds["reference"], expected_size=len(y) + 30)
    for _ in range(3):
        trainer.step(None)
    with torch.no_grad():
        log_p = torch.log_softmax(model(torch.as_tensor(pool_x[index], dtype=torch.float32)).double(), dim=1)
    reference = log_p[torch.arange(60), torch.as_tensor(canary_y)].numpy()
    np.testing.assert_allclose(np.asarray(calibrated.observations), np.asarray(loss.observations) - reference, rtol=0, atol=1e-12)
    assert calibrated.included == loss.included and calibrated.score.startswith("negated cross-entropy loss") and "reference" in calibrated.score


def test_a_model_that_never_saw_the_optimised_canaries_bounds_zero_in_at_least_95_percent_of_draws():
    """The null: optimised canaries scored by a model trained without any of them, 500 inclusion draws: a 95% bound is 0 in ≥ 95%."""
    config = OneRunAuditConfig(**dict(TINY, num_canaries=200, num_steps=20, meta_steps=5))
    seeds = _seeds(config)
    nobody = np.zeros(200, dtype=bool)  # the trained model sees no canary
    scores = _black_box(config, nobody, seeds, lambda *args, **kwargs: None)[0]
    rng = np.random.default_rng(0)
    positive = 0
    for _ in range(500):
        included = rng.random(200) < 0.5
        positive += one_run_lower_bound(scores, included, delta=1e-5, confidence=0.95, methods=("steinke", "fdp"), inclusion_prob=0.5).epsilon > 0
    assert positive <= 25 + 3 * np.sqrt(500 * 0.05 * 0.95), positive  # at most 5% in expectation, with three binomial sds of slack


def test_white_box_refuses_the_black_box_options():
    with pytest.raises(ValueError, match="`input_canaries` and `black_box_score`"):
        OneRunAuditConfig(input_canaries="metagradient")
    with pytest.raises(ValueError, match="`black_box_score`"):
        OneRunAuditConfig(threat_model="black-box", black_box_score="ratio")
    with pytest.raises(ValueError, match="`meta_steps`"):
        OneRunAuditConfig(threat_model="black-box", meta_steps=0)


def test_the_cli_records_the_optimisation_and_leaves_the_black_box_options_out_of_a_white_box(cli, tmp_path):
    flags = ["--threat-model", "black-box", "--canaries", "60", "--steps", "3", "--input-canaries", "metagradient", "--meta-steps", "2"]
    code, stdout, stderr = cli(["audit", "one-run", "--output", tmp_path / "run", "--no-history", "--json", *flags, "--black-box-score", "calibrated"])
    assert code == 0, stderr
    data = json.loads(stdout)
    assert data["config"]["input_canaries"] == "metagradient" and data["config"]["meta_steps"] == 2
    assert data["config"]["black_box_score"] == "calibrated" and "reference model" in data["score"]
    assert data["model"]["canary_optimisation"]["meta_steps"] == 2 and "metagradient" in data["model"]["canaries"]
    page = (tmp_path / "run" / "report.html").read_text()
    assert "2 meta steps of metagradient descent before the inclusion draw" in page and "input canaries" in page
    code, stdout, stderr = cli(["audit", "one-run", "--output", tmp_path / "white", "--no-history", "--json", "--canaries", "60", "--steps", "3"])
    assert code == 0, stderr
    assert not {"input_canaries", "black_box_score", "meta_steps"} & set(json.loads(stdout)["config"])
    code, _, stderr = cli(["audit", "one-run", "--output", tmp_path / "bad", "--no-history", "--input-canaries", "metagradient"])
    assert code == 2 and "`--input-canaries`" in stderr and not (tmp_path / "bad").exists()


def test_the_users_training_takes_the_optimised_canaries_and_a_reference_run_on_the_data_alone_at_its_own_seed(monkeypatch):
    """--train with both options: the run trains on the data plus the optimised canaries drawn in, the reference on the data alone."""
    from own_models.relu_net import train_memoriser

    import privaudit.audits.one_run.audit as one_run

    calls = []

    def recording(x, y, *, seed):
        calls.append((np.array(x), seed))
        return train_memoriser(x, y, seed=seed)

    monkeypatch.setattr(one_run, "check_train_function", lambda path: recording)
    config = OneRunAuditConfig(**dict(TINY, train="own_models.relu_net:train_memoriser", black_box_score="calibrated"))
    seeds = _seeds(config)
    included = draw_inclusion(60, 0.5, 3)
    scores, _, audited = _black_box(config, included, seeds, lambda *args, **kwargs: None)
    (reference, reference_seed), (run, run_seed) = calls  # the reference first: nothing the draw decides has run before it
    assert run_seed == seeds["training"] and reference_seed == seeds["reference"] and len(run) == len(reference) + int(included.sum())
    np.testing.assert_array_equal(run[: len(reference)], reference)  # the same data, the canaries drawn in appended to the run's alone
    from privaudit.audits.one_run.audit import _model_and_data, mislabeled_canaries

    data = _model_and_data(config)[1]
    pool_x, pool_y = np.concatenate([data.x_train, data.x_test]), np.concatenate([data.y_train, data.y_test])
    index, _ = mislabeled_canaries(pool_y, 60, data.num_classes, seed=seeds["canaries"])
    moved = np.abs(run[len(reference) :] - pool_x[index][included]).max(axis=1)
    assert np.all(moved > 0) and np.all(moved <= 2 * 0.02 + 1e-6)  # every canary drawn in was optimised: 2 signed steps of 0.02
    assert audited["canary_optimisation"]["meta_steps"] == 2 and np.all(scores[included] >= -1e-9)  # the memoriser: in is log 1 - ref ≥ 0
    calls.clear()
    _black_box(config, draw_inclusion(60, 0.5, 4), seeds, lambda *args, **kwargs: None)
    assert np.array_equal(calls[0][0], reference) and calls[0][1] == reference_seed  # another draw, the same reference


def test_the_memory_estimate_counts_every_layers_output_and_with_clipping_the_parameters():
    # _problem's MLP: Linear(5, 4), Tanh, Linear(4, 3) outputs 4 + 4 + 3 = 11 numbers per example; 5·4 + 4 + 4·3 + 3 = 39 parameters;
    # float64 (8 bytes) × (2 antithetic splits × T steps × (rows + ⌈m/2⌉) × 2.5 × per example + 2 × (rows + m) × 5 features)
    model, x, *_ = _problem()
    example = torch.from_numpy(x[0])
    data = 2 * (30 + 7) * 5
    assert surrogate_memory(model, example, rows=30, canaries=7, train_steps=7, clip_norm=None) == 8 * (2 * 7 * 34 * 11 * 5 // 2 + data)
    assert surrogate_memory(model, example, rows=30, canaries=7, train_steps=7, clip_norm=1.0) == 8 * (2 * 7 * 34 * (11 + 39) * 5 // 2 + data)


@pytest.mark.parametrize("hidden, rows, steps", [(16, 200, 10), (128, 300, 4)])
def test_what_autograd_keeps_for_the_metagradient_is_below_the_estimate(hidden, rows, steps):
    """An independent count: the bytes of every tensor autograd saves (each storage once) while both splits' φ are built, before the metagradient."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 5)).eval()
    rng = np.random.default_rng(0)
    x, y = torch.tensor(rng.random((rows, 16)), dtype=torch.float32), torch.tensor(rng.integers(0, 5, rows))
    canary_x, canary_y = torch.tensor(rng.random((41, 16)), dtype=torch.float32, requires_grad=True), torch.tensor(rng.integers(0, 5, 41))
    included = torch.arange(41) < 20
    saved: dict[tuple, int] = {}

    def pack(tensor):
        saved.setdefault((tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape)), tensor.numel() * tensor.element_size())
        return tensor

    params = {name: p.detach() for name, p in model.named_parameters()}
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        for side in (included, ~included):
            surrogate_objective(model, params, x, y, canary_x, canary_y, side, train_steps=steps, learning_rate=0.5, clip_norm=None, divisor=rows)
    estimate = surrogate_memory(model, x[0], rows=rows, canaries=41, train_steps=steps, clip_norm=None)
    assert 0.5 * estimate < sum(saved.values()) < estimate  # an upper estimate, and not one that refuses runs that fit twice over


def test_a_surrogate_beyond_the_memory_available_is_refused_before_any_meta_step(monkeypatch, tmp_path):
    import privaudit._core.resources as resources

    monkeypatch.setattr(resources, "available_memory", lambda: 2**20)  # 1 MiB
    model, x, y, canary_x, canary_y = _problem()
    with pytest.raises(ValueError, match=r"`train_steps` = 500 steps on 30 examples needs about .* GiB of memory"):
        optimise_input_canaries(model, x, y, canary_x, canary_y, train_steps=500, meta_steps=1, progress=lambda *a, **k: pytest.fail("a meta step ran"))
    flags = ["--threat-model", "black-box", "--canaries", "60", "--steps", "3", "--input-canaries", "metagradient", "--meta-steps", "2"]
    assert_refused(
        ["audit", "one-run", "--output", tmp_path / "run", "--no-history", *flags],
        tmp_path / "run",
        "`--input-canaries` 'metagradient' (a surrogate unrolled over `--steps` = 3",
    )
