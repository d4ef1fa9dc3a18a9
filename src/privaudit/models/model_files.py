"""What a model file is, read from its first bytes: a pickle (refused, with advice for its kind), safetensors, a zip archive.

privaudit never unpickles: a pickle file is refused with the way to save a
model of the declared kind without pickle (:data:`SAVE_ADVICE`).

>>> import os, pickle, tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     path = os.path.join(folder, "model.skops")
...     _ = open(path, "wb").write(pickle.dumps({"coef": 1.0}, protocol=4))
...     refuse_pickle(Path(path), "skops")
Traceback (most recent call last):
...
ValueError: '...model.skops' is a pickle file, which can run code when loaded, and privaudit never unpickles; save the scikit-learn model with skops.io.dump
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

__all__ = [
    "HF_LOAD_OPTIONS",
    "SAVE_ADVICE",
    "WEIGHT_PATTERNS",
    "check_hf_directory",
    "check_safetensors",
    "check_weights_present",
    "existing_file",
    "is_pickle",
    "is_safetensors",
    "not_of_kind",
    "read_head",
    "refuse_pickle",
    "zip_names",
]

#: What every transformers load passes: offline, and never the directory's own code (no prompt either: an explicit False raises).
HF_LOAD_OPTIONS = {"local_files_only": True, "trust_remote_code": False}
# the keys by which a save_pretrained directory asks for its own code (peft's `auto_mapping` names an installed library's class: no code of the directory's)
_CODE_KEYS = ("auto_map", "custom_pipelines")
_CONFIG_FILES = (
    "config.json",
    "tokenizer_config.json",
    "adapter_config.json",
    "preprocessor_config.json",
    "processor_config.json",
    "generation_config.json",
    "special_tokens_map.json",
)
_PICKLE_SUFFIXES = (".bin", ".pkl", ".pt", ".pth", ".ckpt", ".pickle")


def read_head(path: Path, size: int = 16) -> bytes:
    """The first ``size`` bytes of the file ``path``."""
    with open(path, "rb") as handle:
        return handle.read(size)


def is_pickle(path: Path) -> bool:
    """Whether ``path`` starts as a pickle of protocol 2 to 5 does, and not as safetensors.

    Both checks read the first bytes: a safetensors header of 384, 640, 896,
    1152 or 1408 bytes starts with the two bytes of a pickle's PROTO opcode
    (0x80, then 1 to 5), and only the '{' at byte 8 tells it apart.

    >>> import struct, tempfile
    >>> file = Path(tempfile.mkdtemp()) / "adapter_model.safetensors"
    >>> header = b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'.ljust(640)
    >>> _ = file.write_bytes(struct.pack("<Q", 640) + header + bytes(4))
    >>> struct.pack("<Q", 640)[:2] == bytes([0x80, 2]), is_pickle(file)
    (True, False)
    """
    head = read_head(path, 2)
    # the PROTO opcode of pickle protocols 2-5
    return len(head) == 2 and head[0] == 0x80 and 1 <= head[1] <= 5 and not is_safetensors(path)


def is_safetensors(path: Path) -> bool:
    """Whether ``path`` starts as safetensors does: an 8-byte header length that fits the file, then a JSON object."""
    head = read_head(path, 9)
    if len(head) < 9:
        return False
    (length,) = struct.unpack("<Q", head[:8])
    return 0 < length <= path.stat().st_size - 8 and head[8:9] == b"{"


def zip_names(path: Path) -> list[str]:
    """The names in the zip archive ``path`` (torch.save, torch.export and skops write one); [] for any other file."""
    if not zipfile.is_zipfile(path):
        return []
    with zipfile.ZipFile(path) as archive:
        return archive.namelist()


#: How to save a model of each kind without pickle: the advice a pickle file gets.
SAVE_ADVICE = {
    "torch weights": "save the weights with safetensors or torch.save(model.state_dict())",
    "torch-export": "save the program with torch.export.save",
    "skops": "save the scikit-learn model with skops.io.dump",
    "onnx": "export the model to ONNX (e.g. torch.onnx.export or skl2onnx)",
    "huggingface": "save it with save_pretrained(..., safe_serialization=True)",
}


def refuse_pickle(path: Path, kind: str = "torch weights") -> None:
    """A ValueError, with the way to save a model of ``kind`` (a key of :data:`SAVE_ADVICE`) without pickle, if ``path`` is a pickle."""
    if is_pickle(path):
        raise ValueError(f"{str(path)!r} is a pickle file, which can run code when loaded, and privaudit never unpickles; {SAVE_ADVICE[kind]}")


def not_of_kind(path: Path, kind: str, expected: str) -> ValueError:
    """The error for a file that is not of the declared ``kind``; ``expected`` says what that kind is."""
    return ValueError(f"{str(path)!r} is not a {kind} file ({expected})")


def existing_file(path, kind: str) -> Path:
    """``path`` as a Path, checked to be an existing file and not a pickle; ValueError otherwise."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"`path` must be an existing {kind} file, got {str(path)!r}")
    refuse_pickle(path, kind)
    return path


def _is_torch_pickle_zip(path: Path) -> bool:
    """Whether ``path`` is torch.save's zip archive, which holds a pickle (``data.pkl``)."""
    return any(name.endswith(".pkl") for name in zip_names(path))


#: the files save_pretrained writes the weights to (one file, or shards with an index)
WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "*.safetensors.index.json", "pytorch_model.bin.index.json")


def check_weights_present(directory, option: str) -> None:
    """A ValueError naming ``option`` when ``directory`` (with its config.json) holds no weights file.

    transformers would otherwise fail with its own long message that names no option.
    """
    folder = Path(directory)
    if (folder / "config.json").is_file() and not any(any(folder.glob(pattern)) for pattern in WEIGHT_PATTERNS):
        raise ValueError(
            f"`{option}` {str(folder)!r} holds a config.json but no weights (model.safetensors, pytorch_model.bin or their sharded index): "
            "save the trained model with model.save_pretrained(directory)"
        )


def check_hf_directory(directory, option: str) -> Path:
    """``directory`` if nothing in it asks to run its own code or to be unpickled; a one-line ValueError naming ``option`` otherwise.

    Called before every Hugging Face load: a config that maps classes to the
    directory's own Python (``auto_map``) is refused, never imported, and
    weights saved as a pickle (raw, or torch.save's zip) are refused for
    safetensors.

    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> _ = open(os.path.join(folder, "config.json"), "w").write('{"model_type": "gpt2", "auto_map": {"AutoModel": "x_modeling.M"}}')
    >>> check_hf_directory(folder, "--model")
    Traceback (most recent call last):
    ...
    ValueError: `--model`: '...config.json' has `auto_map`: it asks to run the directory's own Python code, which privaudit never runs (trust_remote_code is never set); save a model of a class transformers ships
    """
    directory = Path(directory)
    for name in _CONFIG_FILES:
        path = directory / name
        if not path.is_file():
            continue
        config = _read_config(path, option)
        found = [key for key in _CODE_KEYS if isinstance(config, dict) and config.get(key)]
        if found:
            raise ValueError(
                f"`{option}`: {str(path)!r} has `{found[0]}`: it asks to run the directory's own Python code, which privaudit never runs "
                "(trust_remote_code is never set); save a model of a class transformers ships"
            )
    for item in sorted(directory.iterdir()) if directory.is_dir() else ():
        if item.is_file() and item.suffix in _PICKLE_SUFFIXES and (is_pickle(item) or _is_torch_pickle_zip(item)):
            raise ValueError(
                f"`{option}`: {str(item)!r} is a pickle file (torch.save), which can run code when loaded, and privaudit never unpickles; "
                f"it accepts safetensors weights: {SAVE_ADVICE['huggingface']}"
            )
        if item.is_file() and item.suffix == ".safetensors":
            check_safetensors(item, option)
    return directory


#: the deepest a model's JSON config may nest (transformers' configs nest 2 or 3 levels: a text_config in a model config)
MAX_CONFIG_DEPTH = 16
_MAX_CONFIG_BYTES = 64 * 2**20
_MAX_HEADER_BYTES = 100 * 2**20  # safetensors' own limit on its JSON header
_DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "I16": 2, "F16": 2, "BF16": 2, "U32": 4, "I32": 4, "F32": 4}
_DTYPE_BYTES.update({"U64": 8, "I64": 8, "F64": 8})


def _depth(value: object) -> int:
    """How deep ``value`` nests (iterative: a hostile depth cannot overflow the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def _read_config(path: Path, option: str) -> object:
    """A model directory's JSON file, bounded in size and depth; a one-line ValueError naming ``option`` otherwise."""
    if path.stat().st_size > _MAX_CONFIG_BYTES:
        raise ValueError(f"`{option}`: {str(path)!r} is larger than {_MAX_CONFIG_BYTES} bytes")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise ValueError(f"`{option}`: {str(path)!r} is nested too deeply to read") from None
    except (OSError, ValueError) as error:
        raise ValueError(f"`{option}`: {str(path)!r} is not readable JSON: {error}") from None
    if _depth(config) > MAX_CONFIG_DEPTH:
        raise ValueError(f"`{option}`: {str(path)!r} nests more than {MAX_CONFIG_DEPTH} levels deep; a model config nests two or three")
    if isinstance(config, dict) and "text_config" in config:
        text_config = config["text_config"]
        if text_config is not None and not isinstance(text_config, dict) or isinstance(text_config, dict) and "text_config" in text_config:
            raise ValueError(f"`{option}`: {str(path)!r} has a `text_config` that is not one plain object of settings (got it nested or of another type)")
    return config


def check_safetensors(path: Path, option: str) -> None:
    """Refuse, before safetensors or torch allocates anything, a ``.safetensors`` file whose header does not fit the file.

    A pickle under that name, a header length beyond the file (2^63), and a
    tensor declared larger than the bytes the file holds (4 TB) are each a
    one-line ValueError naming ``option``.

    >>> import tempfile, os, struct
    >>> file = Path(tempfile.mkdtemp()) / "model.safetensors"
    >>> _ = file.write_bytes(struct.pack("<Q", 2**63) + b"{}")
    >>> check_safetensors(file, "--model")
    Traceback (most recent call last):
    ...
    ValueError: `--model`: '...model.safetensors' declares a header of 9223372036854775808 bytes but the file holds 10 bytes (truncated or forged)
    """
    size = path.stat().st_size
    if is_pickle(path):
        raise ValueError(f"`{option}`: {str(path)!r} is a pickle file under a .safetensors name; privaudit never unpickles: {SAVE_ADVICE['huggingface']}")
    head = read_head(path, 8)
    if len(head) < 8:
        raise ValueError(f"`{option}`: {str(path)!r} is too short to be safetensors ({size} bytes)")
    (length,) = struct.unpack("<Q", head)
    if length > min(size - 8, _MAX_HEADER_BYTES):
        raise ValueError(f"`{option}`: {str(path)!r} declares a header of {length} bytes but the file holds {size} bytes (truncated or forged)")
    with open(path, "rb") as handle:
        handle.seek(8)
        raw = handle.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        raise ValueError(f"`{option}`: {str(path)!r} does not start with a safetensors header (8 bytes of length, then JSON)") from None
    available = size - 8 - length
    for name, entry in header.items() if isinstance(header, dict) else ():
        if name == "__metadata__":
            continue
        try:
            begin, end = (int(offset) for offset in entry["data_offsets"])
            count = 1
            for extent in entry["shape"]:
                count *= int(extent)
            needed = count * _DTYPE_BYTES.get(str(entry["dtype"]), 1)
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"`{option}`: {str(path)!r} has a malformed entry for tensor {name[:80]!r} in its header") from None
        if not 0 <= begin <= end <= available or needed > available:
            raise ValueError(
                f"`{option}`: {str(path)!r} declares tensor {name[:80]!r} of {max(needed, end - begin)} bytes but holds {available} bytes of data "
                "(truncated or forged)"
            )
