"""Loading the user's model: one convention for every command, and never pickle.

=================  ==============================================================
kind               what ``path`` is
=================  ==============================================================
``huggingface``    a directory written by ``save_pretrained`` (model and tokenizer),
                   loaded offline; on the GPU when one is present
``torch``          weights (safetensors, or a state dict saved with ``torch.save``,
                   read with ``weights_only=True``) for the module that
                   ``factory="package.module:callable"`` builds; a strict load
``torch-export``   a ``torch.export`` program (``.pt2``)
``skops``          a scikit-learn model saved with skops, whose types must all be
                   in :data:`TRUSTED_SKOPS_TYPES` or in ``trusted``
``onnx``           any other framework, through onnxruntime
=================  ==============================================================

A file that is a pickle, or not of the declared kind, is a ValueError; so are
weights that do not fit the architecture and a tokenizer with more tokens
than the model has embeddings. :class:`LoadedModel` scores classifiers of
every kind alike: :meth:`LoadedModel.loss` gives per-example cross-entropy,
read from logits, probabilities or log-probabilities as the model's outputs
show them (checked, :mod:`privaudit.models.outputs`) or as ``output`` says.
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any

import numpy as np

from .._core.conventions import Convention, checked, explicit
from .._core.extras import require
from .._core.imports import check_not_shadowed
from .._core.messages import describe_value
from .._core.usercode import call_user, raised_by_user
from .._core.validation import check_choice
from .device import seeded_torch
from .model_files import (
    HF_LOAD_OPTIONS,
    SAVE_ADVICE,
    check_hf_directory,
    check_safetensors,
    check_weights_present,
    existing_file,
    is_safetensors,
    not_of_kind,
    refuse_pickle,
    zip_names,
)
from .outputs import OUTPUT_KINDS, cross_entropy, logit_confidence, machine_epsilon, output_kind

__all__ = [
    "KINDS",
    "SAVE_ADVICE",
    "TRUSTED_SKOPS_TYPES",
    "LoadedModel",
    "build_torch_module",
    "check_import_path",
    "import_callable",
    "load_model",
    "read_state_dict",
]

KINDS = ("huggingface", "torch", "torch-export", "skops", "onnx")

#: Types a skops file may hold beyond what skops trusts by default: scikit-learn's own and numpy's numbers.
TRUSTED_SKOPS_TYPES = ("sklearn.",) + tuple(
    f"numpy.{name}" for name in ("dtype", "ndarray", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool_", "str_")
)


@dataclasses.dataclass(frozen=True)
class LoadedModel:
    """A loaded model, what it was loaded from, and (for classifiers) what its outputs are.

    ``output`` is ``"auto"`` (checked on the outputs: :mod:`privaudit.models.outputs`),
    ``"logits"``, ``"probabilities"`` or ``"log-probabilities"``;
    ``output_convention`` records how it was decided. Call
    :meth:`decide_output` once per audit, on the audit's inputs, to fix the
    kind and record it; until then each :meth:`loss` checks its own batch.
    skops models give probabilities (``predict_proba``).
    """

    kind: str
    model: Any
    tokenizer: object = None
    source: str = ""
    output: str = "auto"
    output_convention: Convention | None = None

    def _outputs(self, x) -> tuple[np.ndarray, float]:
        """The model's outputs on ``x`` as float64, and the machine epsilon of the precision the model computed them in."""
        if self.kind == "skops":
            raw = np.asarray(self.model.predict_proba(np.asarray(x)))
            return raw.astype(np.float64), machine_epsilon(raw.dtype)
        if self.kind == "onnx":
            session, name = self.model
            feed = {session.get_inputs()[0].name: np.asarray(x, dtype=np.float32)}
            raw = np.asarray(session.run([name], feed)[0])
            return raw.astype(np.float64), machine_epsilon(raw.dtype)
        if self.kind == "huggingface":
            raise ValueError("`loss` scores classifiers; score a Hugging Face language model with privaudit.models.hf.HFCausalLMScorer")
        torch = require("torch", purpose="scoring a PyTorch model")
        module = self.model
        device = next(iter(module.parameters()), torch.empty(0)).device if hasattr(module, "parameters") else torch.device("cpu")
        with torch.no_grad():
            out = module(torch.as_tensor(np.asarray(x), dtype=torch.float32, device=device))
        eps = torch.finfo(out.dtype).eps if out.dtype.is_floating_point else machine_epsilon(np.float64)
        return out.detach().double().cpu().numpy(), float(eps)

    def _kind_of(self, outputs: np.ndarray, eps: float) -> str:
        return self.output if self.output != "auto" else output_kind(outputs, eps=eps).value

    def decide_output(self, x) -> LoadedModel:
        """This model with its output kind fixed and recorded: checked on its outputs on ``x``, unless already decided.

        >>> import numpy as np
        >>> class Net:
        ...     def predict_proba(self, x):
        ...         return np.full((len(x), 2), 0.5)
        >>> LoadedModel("onnx", None, output="auto")._kind_of(np.array([[0.5, 0.5]]), 1e-7)
        'probabilities'
        >>> LoadedModel("skops", Net()).decide_output(np.zeros((3, 1))).output_convention.describe()
        'output kind: probabilities (checked: all 3 rows are >= 0 and sum to 1 (largest |sum - 1| 0, tolerance 7.1e-15))'
        """
        if self.output != "auto":
            return self
        outputs, eps = self._outputs(x)
        convention = output_kind(outputs, eps=eps)
        return dataclasses.replace(self, output=convention.value, output_convention=convention)

    def loss(self, x, y) -> np.ndarray:
        """Per-example cross-entropy (nats) of labels ``y`` given inputs ``x``, as a numpy array.

        >>> import numpy as np
        >>> class Uniform:
        ...     def predict_proba(self, x):
        ...         return np.full((len(x), 4), 0.25)
        >>> LoadedModel("skops", Uniform(), output="probabilities").loss(np.zeros((2, 3)), [0, 3]).round(4).tolist()
        [1.3863, 1.3863]
        """
        outputs, eps = self._outputs(x)
        return cross_entropy(outputs, y, self._kind_of(outputs, eps))

    def logit_confidence(self, x, y) -> np.ndarray:
        """Per-example logit-scaled confidence log(p_y / (1 - p_y)) of labels ``y`` (see :func:`privaudit.models.outputs.logit_confidence`)."""
        outputs, eps = self._outputs(x)
        return logit_confidence(outputs, y, self._kind_of(outputs, eps))


# -- loaders -------------------------------------------------------------------------
def _device(device):
    torch = require("torch", purpose="loading a PyTorch model")
    return torch.device(device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu"))


def _load_huggingface(directory, device, task: str, option: str) -> LoadedModel:
    transformers = require("transformers", purpose="loading a Hugging Face model")
    directory = Path(directory)
    if not directory.is_dir() or not (directory / "config.json").is_file():
        raise ValueError(f"`{option}`: {str(directory)!r} is not a huggingface directory (save_pretrained writes config.json there)")
    check_hf_directory(directory, option)  # before transformers reads it: no code of the directory's, no pickle
    check_weights_present(directory, option)
    auto = {"causal-lm": transformers.AutoModelForCausalLM, "sequence-classification": transformers.AutoModelForSequenceClassification}[task]
    try:
        model, info = auto.from_pretrained(directory, **HF_LOAD_OPTIONS, use_safetensors=any(directory.glob("*.safetensors")) or None, output_loading_info=True)
        tokenizer = transformers.AutoTokenizer.from_pretrained(directory, **HF_LOAD_OPTIONS)
    except (OSError, ValueError, KeyError) as error:
        raise ValueError(f"`{option}`: {str(directory)!r} is not a loadable huggingface {task} directory: {error}") from None
    # transformers fills weights missing from the checkpoint with random ones and only logs it: a model that is not the user's
    unfit = {kind: sorted(info.get(f"{kind}_keys") or ()) for kind in ("missing", "mismatched")}
    if any(unfit.values()):
        found = "; ".join(
            f"{kind}: {', '.join(map(str, keys[:3]))}" + (f" (+{len(keys) - 3} more)" if len(keys) > 3 else "") for kind, keys in unfit.items() if keys
        )
        raise ValueError(f"`{option}`: the weights in {str(directory)!r} do not fit the {task} architecture of its config.json ({found})")
    rows = model.get_input_embeddings().num_embeddings
    largest = max(tokenizer.get_vocab().values())
    if len(tokenizer) > rows or largest >= rows:
        raise ValueError(
            f"`{option}`: the tokenizer in {str(directory)!r} does not match the model: {len(tokenizer)} tokens (largest id {largest}) for {rows} embeddings"
        )
    return LoadedModel("huggingface", model.to(_device(device)).eval(), tokenizer=tokenizer, source=str(directory))


def check_import_path(path, name: str = "factory") -> str:
    """``path`` if it reads 'package.module:attribute' (uvicorn's ``app:app`` style); ValueError naming ``name`` otherwise.

    >>> check_import_path("my_models:build", "--model")
    'my_models:build'
    >>> check_import_path("my_models.build", "--model")
    Traceback (most recent call last):
    ...
    ValueError: `--model` must be 'package.module:callable', got 'my_models.build'
    """
    module_name, _, attribute = str(path).partition(":")
    if not isinstance(path, str) or not module_name.strip() or not attribute.strip() or ":" in attribute:
        raise ValueError(f"`{name}` must be 'package.module:callable', got {path!r}")
    return path


def import_callable(path: str, name: str = "factory"):
    """The callable that the import path ``package.module:attribute`` names; ValueError naming ``name`` when it cannot be imported or called."""
    check_import_path(path, name)
    module_name, _, attribute = path.partition(":")
    check_not_shadowed(module_name, name, path)  # ./utils.py named, the installed utils found: refused, never swapped
    try:
        target = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"`{name}` {path!r}: cannot import {module_name!r}: {error}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - the user's module raised (or called sys.exit) while importing
        raise raised_by_user(name, path, error, context=f" while importing {module_name!r}") from error
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"`{name}` {path!r}: {module_name!r} has no attribute {attribute!r}")
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"`{name}` {path!r} is not callable")
    return target


def _import_factory(factory: str):
    return import_callable(factory, "factory")


def _state_dict(path: Path) -> dict:
    torch = require("torch", purpose="loading PyTorch weights")
    if is_safetensors(path):
        safetensors_torch = require("safetensors.torch", purpose="loading safetensors weights")
        check_safetensors(path, "weights")  # a forged header (a 4 TB tensor) refused before anything is allocated
        try:
            return safetensors_torch.load_file(str(path))
        except Exception as error:  # noqa: BLE001 - safetensors' own error type for a damaged file
            raise ValueError(f"{str(path)!r} is not readable safetensors: {describe_value(str(error))}") from None
    if not any(name.endswith("data.pkl") for name in zip_names(path)):
        raise not_of_kind(path, "torch weights", "safetensors, or a state dict saved with torch.save")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)  # weights only: a weights file cannot run code
    except Exception as error:  # torch raises many types for objects beyond tensors
        raise ValueError(f"{str(path)!r} holds more than tensors ({type(error).__name__}); save model.state_dict(), not the model") from None
    if not isinstance(state, dict) or not all(isinstance(key, str) and isinstance(value, torch.Tensor) for key, value in state.items()):
        raise ValueError(f"{str(path)!r} must hold a state dict (names to tensors), got {type(state).__name__}")
    return state


def read_state_dict(path, name: str = "weights") -> dict:
    """The state dict in the file ``path``: safetensors, or saved with ``torch.save`` (read with ``weights_only=True``).

    A missing file, a pickle, a file of another kind and one holding more
    than tensors are ValueErrors naming ``name``. A ``torch.save``d state
    dict keeps its ``_metadata`` (what ``Module.state_dict`` records beside
    the tensors).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"`{name}` must be an existing weights file (safetensors or a torch.save'd state dict), got {str(path)!r}")
    try:
        refuse_pickle(path)
        return _state_dict(path)
    except ValueError as error:
        raise ValueError(f"`{name}`: {error}") from None


def _strict_load(module, state: dict, path: Path) -> None:
    expected = module.state_dict()
    missing = [key for key in expected if key not in state]
    unexpected = [key for key in state if key not in expected]
    shapes = [f"{key} {tuple(state[key].shape)} vs {tuple(value.shape)}" for key, value in expected.items() if key in state and state[key].shape != value.shape]
    problems = []
    if shapes:
        problems.append("shape mismatch (file vs model): " + ", ".join(shapes[:3]))
    if missing:
        problems.append("missing: " + ", ".join(missing[:3]))
    if unexpected:
        problems.append("unexpected: " + ", ".join(unexpected[:3]))
    if problems:
        raise ValueError(f"the weights in {str(path)!r} do not fit the architecture; " + "; ".join(problems))
    module.load_state_dict(state, strict=True)


def _load_torch(path, factory, device) -> LoadedModel:
    torch = require("torch", purpose="loading a PyTorch model")
    if factory is None:
        raise ValueError("`factory` must be given for kind 'torch': 'package.module:callable' that builds the architecture")
    path = existing_file(path, "torch weights")
    module = _import_factory(factory)()
    if not isinstance(module, torch.nn.Module):
        raise ValueError(f"`factory` {factory!r} must return a torch.nn.Module, got {type(module).__name__}")
    _strict_load(module, _state_dict(path), path)
    return LoadedModel("torch", module.to(_device(device)).eval(), source=f"{factory} + {path}")


def build_torch_module(factory: str, weights=None, *, seed: int = 0, factory_name: str = "factory", weights_name: str = "weights"):
    """The ``torch.nn.Module`` that ``factory`` ('package.module:callable', called with no arguments) builds, with ``weights`` loaded strictly.

    ``seed`` (default 0) seeds the initial weights, inside
    :func:`~privaudit.models.device.seeded_torch`, so the caller's CPU and
    CUDA random states are untouched. ``weights`` is safetensors or a
    state dict saved with ``torch.save`` (read with ``weights_only=True``);
    a pickle, a file of another kind and weights that do not fit the module
    are ValueErrors naming ``weights_name``; a factory that cannot be
    imported, fails or returns something else is one naming ``factory_name``.
    """
    torch = require("torch", purpose="building a PyTorch model")
    build = import_callable(factory, factory_name)
    with seeded_torch(seed):
        module = call_user(factory_name, factory, build, context=" when called with no arguments")
    if not isinstance(module, torch.nn.Module):
        raise ValueError(f"`{factory_name}` {factory!r} must return a torch.nn.Module, got {type(module).__name__}")
    if weights is not None:
        path = Path(weights)
        if not path.is_file():
            raise ValueError(f"`{weights_name}` must be an existing weights file (safetensors or a torch.save'd state dict), got {str(path)!r}")
        try:
            refuse_pickle(path)
            _strict_load(module, _state_dict(path), path)
        except ValueError as error:
            raise ValueError(f"`{weights_name}`: {error}") from None
    return module


def _load_torch_export(path, device) -> LoadedModel:
    torch = require("torch", purpose="loading a torch.export program")
    path = existing_file(path, "torch-export")
    if not zip_names(path):
        raise not_of_kind(path, "torch-export", "torch.export.save writes a zip archive")
    try:
        program = torch.export.load(str(path))
    except Exception as error:  # torch raises many types for foreign archives
        raise not_of_kind(path, "torch-export", f"torch.export.load failed: {type(error).__name__}") from None
    return LoadedModel("torch-export", program.module().to(_device(device)), source=str(path))


def _load_skops(path, trusted) -> LoadedModel:
    skops_io = require("skops.io", purpose="loading a scikit-learn model")
    path = existing_file(path, "skops")
    if "schema.json" not in zip_names(path):
        raise not_of_kind(path, "skops", f"skops.io.dump writes a zip archive with schema.json; {SAVE_ADVICE['skops']}")
    allowed = TRUSTED_SKOPS_TYPES + tuple(trusted)
    try:
        untrusted = skops_io.get_untrusted_types(file=str(path))
    except Exception as error:  # noqa: BLE001 - skops raises many types for a damaged archive or schema
        raise ValueError(f"{str(path)!r} is not a readable skops file ({type(error).__name__}: {describe_value(str(error))}); {SAVE_ADVICE['skops']}") from None
    refused = [name for name in untrusted if not any(name == rule or (rule.endswith(".") and name.startswith(rule)) for rule in allowed)]
    if refused:
        shown = " ".join(f"--trusted {name}" for name in refused[:5])
        raise ValueError(
            f"{str(path)!r} holds types outside the trusted list: {', '.join(refused[:5])}; if you trust the file, allow them with "
            f"{shown} on the command line (trusted=[...] in load_model)"
        )
    try:
        model = skops_io.load(str(path), trusted=list(untrusted))
    except Exception as error:  # noqa: BLE001 - a schema that lists types but does not rebuild them
        raise ValueError(f"{str(path)!r} is not a readable skops file ({type(error).__name__}: {describe_value(str(error))}); {SAVE_ADVICE['skops']}") from None
    if not hasattr(model, "predict_proba"):
        raise ValueError(f"the model in {str(path)!r} must have predict_proba, got {type(model).__name__}")
    convention = checked("output kind", "probabilities", f"scikit-learn's predict_proba API ({type(model).__name__}.predict_proba) returns probabilities")
    return LoadedModel("skops", model, source=str(path), output="probabilities", output_convention=convention)


def _load_onnx(path, output_name) -> LoadedModel:
    onnxruntime = require("onnxruntime", purpose="loading an ONNX model")
    path = existing_file(path, "onnx")
    if zip_names(path) or is_safetensors(path):
        raise not_of_kind(path, "onnx", "an ONNX protobuf")
    try:
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime raises its own exception types
        raise not_of_kind(path, "onnx", f"onnxruntime could not read it: {type(error).__name__}") from None
    names = [item.name for item in session.get_outputs()]
    if output_name is None:
        tensors = [item.name for item in session.get_outputs() if item.type.startswith("tensor(float") and len(item.shape or ()) == 2]
        if len(tensors) != 1:  # which one holds the class scores cannot be told from the graph: never guess
            which = "no 2-D float output" if not tensors else f"{len(tensors)} 2-D float outputs {tensors}"
            raise ValueError(
                f"{str(path)!r} has {which}; export the model with one 2-D float output (its class scores), "
                f"or name it with `output_name` in load_model (outputs: {names})"
            )
        output_name = tensors[0]
    elif output_name not in names:
        raise ValueError(f"`output_name` must be one of {names}, got {output_name!r}")
    return LoadedModel("onnx", (session, output_name), source=str(path))


def load_model(
    path,
    *,
    kind: str,
    factory: str | None = None,
    device=None,
    trusted=(),
    output: str = "auto",
    task: str = "causal-lm",
    output_name=None,
    option: str = "--model",
) -> LoadedModel:
    """Load a model of the declared ``kind`` (see the module docstring); never unpickle.

    ``factory`` (kind ``torch``) builds the architecture; ``trusted`` extends
    the skops allow-list (``--trusted`` on the command line); ``output``
    says what a torch, torch-export or ONNX classifier returns: "auto"
    (checked on its outputs, :mod:`privaudit.models.outputs`), "logits",
    "probabilities" or "log-probabilities" (``--model-output``); a skops
    model gives probabilities (``predict_proba``). ``task`` picks the
    Hugging Face head; ``output_name`` the ONNX output; ``option`` the
    command-line option a Hugging Face directory came from, for messages.

    >>> load_model("model.bin", kind="keras")
    Traceback (most recent call last):
    ...
    ValueError: `kind` must be one of 'huggingface', 'torch', 'torch-export', 'skops', 'onnx', got 'keras'
    """
    check_choice(kind, "kind", KINDS)
    check_choice(output, "output", ("auto",) + OUTPUT_KINDS)
    check_choice(task, "task", ("causal-lm", "sequence-classification"))
    if isinstance(trusted, str):
        trusted = (trusted,)
    if kind == "skops" and output not in ("auto", "probabilities"):
        raise ValueError(f"`output` must be 'auto' or 'probabilities' for kind 'skops' (predict_proba gives probabilities), got {output!r}")
    if kind == "huggingface":
        return _load_huggingface(path, device, task, option)
    if kind == "skops":
        return _load_skops(path, trusted)
    if kind == "onnx":
        loaded = _load_onnx(path, output_name)
    elif kind == "torch":
        loaded = _load_torch(path, factory, device)
    else:
        loaded = _load_torch_export(path, device)
    if output == "auto":
        return loaded
    return dataclasses.replace(loaded, output=output, output_convention=explicit("output kind", output, f"output={output!r} (--model-output {output})"))
