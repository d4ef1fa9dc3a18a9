"""How much memory a PANORAMIA audit holds, estimated before any model is built, so that sizes beyond the machine are refused up front."""

from __future__ import annotations

from pathlib import Path

from ..._core.files import read_json

__all__ = ["classifier_parameters", "peak_memory", "spec_memory_estimate", "training_memory"]


def classifier_parameters(architecture: str, *, input_dim: int, num_classes: int, hidden: int = 64, depth: int = 1) -> int:
    """The number of weights of :func:`~privaudit.models.classifiers.build_classifier`'s model, without building it.

    Exact for "linear" and "mlp"; for "cnn" an upper bound (one input channel).

    >>> classifier_parameters("mlp", input_dim=30, num_classes=2, hidden=16), classifier_parameters("mlp", input_dim=30, num_classes=2, hidden=16, depth=3)
    (530, 1074)
    >>> classifier_parameters("mlp", input_dim=10**6, num_classes=2, hidden=10**6) > 10**12
    True
    """
    if architecture == "linear":
        return (input_dim + 1) * num_classes
    if architecture == "cnn":  # Conv2d(C, 8, 3) and Linear(8 (H // 2) (W // 2), classes), with C * H * W = input_dim
        return 8 * 9 * input_dim + 8 + (2 * input_dim + 1) * num_classes
    return (input_dim + 1) * hidden + (depth - 1) * (hidden + 1) * hidden + (hidden + 1) * num_classes


def training_memory(parameters: int, *, dp_batch_size: int = 0) -> int:
    """Bytes of float32 weights of a model being trained: weights, gradients and Adam's two moments, plus DP-SGD's per-example gradients."""
    return 4 * parameters * (4 + dp_batch_size)


def peak_memory(target: int, helper: int, *, target_dp_batch: int = 0, helper_dp_batch: int = 0, trained: bool = True) -> int:
    """The larger of: training the target (``trained``), and the target beside the helper while the real-data helper trains."""
    training = training_memory(target, dp_batch_size=target_dp_batch) if trained else 0
    return max(training, 4 * target + 4 * helper + training_memory(helper, dp_batch_size=helper_dp_batch))


def spec_memory_estimate(model_path, spec_path=None) -> tuple[int, str]:
    """A lower estimate of the bytes an audit of the privaudit classifier described by ``--spec`` holds, and the sizes that drive it.

    Read before the model is built, so that ``input_dim``, ``hidden`` or
    ``depth`` beyond the machine's memory are refused up front. A spec this
    cannot read, or a model whose spec only its state dict records, is left
    to :func:`~privaudit.audits.panoramia.targets.load_model` (0: no
    estimate), which names what is wrong with it.
    """
    if spec_path is None and not Path(model_path).with_suffix(".json").exists():
        return 0, ""  # the spec the state dict records, if any: its size bounds the model's
    spec_path = Path(spec_path) if spec_path is not None else Path(model_path).with_suffix(".json")
    spec = read_json(spec_path, "--spec")  # size and nesting checked before parsing
    if not isinstance(spec, dict):
        return 0, ""
    values = {key: spec.get(key, default) for key, default in (("input_dim", None), ("num_classes", None), ("hidden", 64), ("depth", 1))}
    sizes: dict[str, int] = {key: value for key, value in values.items() if isinstance(value, int) and not isinstance(value, bool) and value >= 1}
    if len(sizes) < len(values):
        return 0, ""
    architecture = spec.get("architecture")
    parameters = classifier_parameters(architecture if isinstance(architecture, str) else "mlp", **sizes)
    shown = ", ".join(f"`{key}` = {sizes[key]}" for key in ("input_dim", "hidden", "depth") if key in spec)
    return peak_memory(parameters, parameters, trained=False), f"the `--spec` model ({shown})"
