"""Tests for the reference classifiers (privaudit.models.classifiers)."""

import pytest

torch = pytest.importorskip("torch")

# Opacus' hooks fire on module outputs when the inputs need no gradient: expected, and harmless.
pytestmark = pytest.mark.filterwarnings("ignore:Full backward hook is firing:UserWarning")

from privaudit.models.classifiers import ARCHITECTURES, build_classifier, count_parameters  # noqa: E402

# architecture -> build keyword arguments
CONFIGS = {
    "linear": dict(input_dim=30, num_classes=2),
    "mlp": dict(input_dim=30, num_classes=3, hidden=16),
    "cnn": dict(input_dim=64, num_classes=10, image_shape=(1, 8, 8)),
}
CNN_RGB = dict(input_dim=3 * 6 * 10, num_classes=4, image_shape=(3, 6, 10))


def _build(architecture, seed=0, **overrides):
    return build_classifier(architecture, seed=seed, **{**CONFIGS[architecture], **overrides})


def _inputs(input_dim, n=7, seed=123):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n, input_dim, generator=generator)


def test_architectures_listed():
    assert set(ARCHITECTURES) == set(CONFIGS)


@pytest.mark.parametrize("architecture", sorted(CONFIGS))
def test_output_shape(architecture):
    config = CONFIGS[architecture]
    model = _build(architecture)
    assert isinstance(model, torch.nn.Module)
    for n in (1, 5):
        out = model(_inputs(config["input_dim"], n=n))
        assert out.shape == (n, config["num_classes"])
        assert out.dtype == torch.float32


def test_cnn_non_square_multichannel_and_image_input():
    model = build_classifier("cnn", **CNN_RGB)
    x = _inputs(CNN_RGB["input_dim"], n=4)
    out = model(x)
    assert out.shape == (4, 4)
    # The flat input is reshaped to (N, C, H, W) inside; image input gives the same result.
    torch.testing.assert_close(model(x.reshape(4, 3, 6, 10)), out)
    conv = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    linear = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert len(conv) == 1 and conv[0].in_channels == 3 and conv[0].out_channels == 8
    assert conv[0].kernel_size == (3, 3) and conv[0].padding == (1, 1)
    assert len(linear) == 1 and linear[0].in_features == 8 * 3 * 5


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_mlp_depth_is_the_number_of_hidden_layers(depth):
    mlp = _build("mlp", depth=depth)
    linears = [m for m in mlp.modules() if isinstance(m, torch.nn.Linear)]
    # depth hidden Linear-Tanh layers of width 16, then the output layer
    assert [(m.in_features, m.out_features) for m in linears] == [(30, 16)] + [(16, 16)] * (depth - 1) + [(16, 3)]
    assert sum(isinstance(m, torch.nn.Tanh) for m in mlp.modules()) == depth
    assert count_parameters(mlp) == (30 * 16 + 16) + (depth - 1) * (16 * 16 + 16) + (16 * 3 + 3)
    assert mlp(_inputs(30)).shape == (7, 3)


def test_default_depth_keeps_the_one_hidden_layer_state_dict():
    # models saved before ``depth`` existed load unchanged
    assert list(_build("mlp").state_dict()) == ["1.weight", "1.bias", "3.weight", "3.bias"]
    assert _build("mlp").state_dict().keys() == _build("mlp", depth=1).state_dict().keys()


def test_layer_structure_and_parameter_counts():
    linear = _build("linear")
    assert [type(m) for m in linear.modules() if isinstance(m, torch.nn.Linear)] == [torch.nn.Linear]
    assert count_parameters(linear) == 30 * 2 + 2

    mlp = _build("mlp")
    assert any(isinstance(m, torch.nn.Tanh) for m in mlp.modules())
    assert count_parameters(mlp) == (30 * 16 + 16) + (16 * 3 + 3)

    cnn = _build("cnn")
    assert any(isinstance(m, torch.nn.AvgPool2d) for m in cnn.modules())
    assert count_parameters(cnn) == (1 * 8 * 9 + 8) + (8 * 4 * 4 * 10 + 10)


@pytest.mark.parametrize("architecture", sorted(CONFIGS))
def test_no_batch_norm(architecture):
    model = _build(architecture)
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())
    assert not list(model.buffers())


def test_count_parameters_on_any_module():
    assert count_parameters(torch.nn.Tanh()) == 0
    assert count_parameters(torch.nn.Sequential()) == 0
    assert count_parameters(torch.nn.Linear(3, 2)) == 8
    frozen = torch.nn.Linear(3, 2)
    frozen.bias.requires_grad_(False)
    assert count_parameters(frozen) == 6
    assert isinstance(count_parameters(torch.nn.Linear(3, 2)), int)


@pytest.mark.parametrize("architecture", sorted(CONFIGS))
def test_same_seed_same_weights_and_global_rng_untouched(architecture):
    torch.manual_seed(2024)
    state = torch.random.get_rng_state().clone()
    first = _build(architecture, seed=5)
    second = _build(architecture, seed=5)
    other = _build(architecture, seed=6)
    assert torch.equal(torch.random.get_rng_state(), state)
    first_params = dict(first.named_parameters())
    second_params = dict(second.named_parameters())
    other_params = dict(other.named_parameters())
    assert first_params.keys() == second_params.keys() == other_params.keys()
    for name in first_params:
        assert torch.equal(first_params[name], second_params[name])
    assert any(not torch.equal(first_params[name], other_params[name]) for name in first_params)
    # The global stream continues exactly as if no model had been built.
    after = torch.rand(3)
    torch.random.set_rng_state(state)
    torch.testing.assert_close(after, torch.rand(3), rtol=0, atol=0)


@pytest.mark.parametrize("architecture", sorted(CONFIGS))
def test_grad_sample_module_shapes(architecture):
    opacus = pytest.importorskip("opacus")
    config = CONFIGS[architecture]
    n = 6
    model = opacus.GradSampleModule(_build(architecture))
    x = _inputs(config["input_dim"], n=n)
    y = torch.arange(n) % config["num_classes"]
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    parameters = [p for p in model.parameters() if p.requires_grad]
    assert parameters
    for parameter in parameters:
        assert parameter.grad_sample is not None
        assert parameter.grad_sample.shape == (n, *parameter.shape)
        # With a mean loss, the per-example gradients average to the batch gradient.
        torch.testing.assert_close(parameter.grad_sample.mean(dim=0), parameter.grad, rtol=1e-4, atol=1e-6)


def test_grad_sample_module_wraps_multichannel_cnn():
    opacus = pytest.importorskip("opacus")
    model = opacus.GradSampleModule(build_classifier("cnn", **CNN_RGB))
    x = _inputs(CNN_RGB["input_dim"], n=3)
    model(x).sum().backward()
    for parameter in model.parameters():
        assert parameter.grad_sample.shape == (3, *parameter.shape)


@pytest.mark.parametrize("architecture", sorted(CONFIGS))
def test_grad_sample_matches_per_example_autograd(architecture):
    """Opacus' per-example gradients equal those of a loop over examples with plain autograd."""
    opacus = pytest.importorskip("opacus")
    config = CONFIGS[architecture]
    n = 5
    x = _inputs(config["input_dim"], n=n, seed=7)
    y = (torch.arange(n) * 3) % config["num_classes"]

    reference = _build(architecture, seed=9)
    expected = {name: [] for name, _ in reference.named_parameters()}
    for i in range(n):
        reference.zero_grad()
        loss = torch.nn.functional.cross_entropy(reference(x[i : i + 1]), y[i : i + 1])
        loss.backward()
        for name, parameter in reference.named_parameters():
            expected[name].append(parameter.grad.detach().clone())

    wrapped = opacus.GradSampleModule(_build(architecture, seed=9))
    torch.nn.functional.cross_entropy(wrapped(x), y).backward()  # mean over the batch
    got = dict(wrapped._module.named_parameters())
    assert got.keys() == expected.keys()
    for name, parameter in got.items():
        torch.testing.assert_close(parameter.grad_sample, torch.stack(expected[name]), rtol=1e-4, atol=1e-6)


def test_grad_sample_linear_by_hand():
    """For the linear model the per-example gradient has a closed form: (softmax - onehot) x^T."""
    opacus = pytest.importorskip("opacus")
    n, d, k = 8, 30, 2
    x = _inputs(d, n=n, seed=1)
    y = torch.tensor([0, 1, 1, 0, 1, 0, 0, 1])
    model = _build("linear", seed=3)
    (layer,) = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        residual = torch.softmax(x @ layer.weight.T + layer.bias, dim=1) - torch.nn.functional.one_hot(y, k)
    wrapped = opacus.GradSampleModule(model)
    torch.nn.functional.cross_entropy(wrapped(x), y).backward()
    torch.testing.assert_close(layer.weight.grad_sample, residual[:, :, None] * x[:, None, :], rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(layer.bias.grad_sample, residual, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("architecture", ["resnet", "CNN", "", None])
def test_unknown_architecture_is_rejected(architecture):
    with pytest.raises(ValueError, match=r"^`architecture` must be one of 'linear', 'mlp', 'cnn', got "):
        build_classifier(architecture, input_dim=4, num_classes=2)


def test_cnn_needs_image_shape():
    with pytest.raises(ValueError, match=r"`image_shape`"):
        build_classifier("cnn", input_dim=64, num_classes=10)


@pytest.mark.parametrize(
    "image_shape",
    [(8, 8), (1, 8, 8, 1), (1, 4, 4), (0, 8, 8), (1, 1, 64), (1, -8, -8), (1, 8.5, 8), "188", 5],
)
def test_bad_image_shape_is_rejected(image_shape):
    with pytest.raises(ValueError, match=r"`image_shape`"):
        build_classifier("cnn", input_dim=64, num_classes=10, image_shape=image_shape)


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("input_dim", 0),
        ("input_dim", 2.5),
        ("input_dim", "30"),
        ("num_classes", 1),
        ("num_classes", None),
        ("hidden", 0),
        ("depth", 0),
        ("depth", 1.5),
        ("seed", -1),
    ],
)
def test_bad_sizes_are_rejected(argument, value):
    kwargs = dict(input_dim=30, num_classes=2, hidden=8, seed=0)
    kwargs[argument] = value
    with pytest.raises(ValueError, match=f"`{argument}`"):
        build_classifier("mlp", **kwargs)
