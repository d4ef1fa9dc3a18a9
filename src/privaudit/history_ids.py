"""What :mod:`privaudit.history` files an audit under: its lineage and the identity of its release.

A *lineage* is what the releases of one model share: the schema of the data
it learned (column names and label column, array names and shapes, or the
embedded dataset's name), the task (the label column) and the embedded
architecture or the user's module factory, never the training function's
name nor any content hash. :func:`lineage_of` gives it; it is the default
``--model-id``, so two releases of one model on one table are compared with
no ``--model-id``, and a new dataset or architecture starts a new lineage.

The *identity* of a release (:func:`model_identity`) tells releases apart:
the user's model is its file or directory's name and a hash of its
contents; the user's training function (``--train``) is its import path and
the hash of the data it trained on; released synthetic text is its file's
name and hash. Only privaudit's embedded models are named by their embedded
dataset and architecture (or the family's embedded default).

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> for name, text in (("a.skops", "one"), ("b.skops", "two")):
...     _ = open(os.path.join(folder, name), "w").write(text)
>>> ids = {model_identity({"audit": "mia", "config": {"model": os.path.join(folder, name)}}) for name in ("a.skops", "b.skops")}
>>> len(ids), sorted(ids)[0].startswith("a.skops@")
(2, True)
>>> model_identity({"audit": "dpsgd", "config": {"dataset": "digits", "architecture": "mlp"}})
'digits/mlp'
>>> table = os.path.join(folder, "v1.csv")
>>> _ = open(table, "w").write("age,income,label\\n1,2,0\\n")
>>> lineage_of({"audit": "mia", "config": {"data": table, "label_col": "label", "train": "releases:train_v1"}})
'table(3 columns; label label)#...'
"""

from __future__ import annotations

import csv
import hashlib
import zipfile
from pathlib import Path
from typing import Any

__all__ = ["content_digest", "data_schema", "lineage_of", "model_identity"]

_DIGITS = 12
_CHUNK = 1 << 20


def content_digest(path: Any) -> str | None:
    """The first hex digits of the sha256 of a file, or of a directory's files (relative names and contents, in name order); None if absent."""
    root = Path(str(path))
    if root.is_file():
        files = [root]
    elif root.is_dir():
        files = sorted(item for item in root.rglob("*") if item.is_file() and not item.is_symlink())
    else:
        return None
    digest = hashlib.sha256()
    for item in files:
        if root.is_dir():
            digest.update(str(item.relative_to(root)).encode("utf-8", "surrogateescape") + b"\0")
        try:
            with open(item, "rb") as handle:
                while chunk := handle.read(_CHUNK):
                    digest.update(chunk)
        except OSError:  # unreadable now: its name still counts, its content cannot
            digest.update(b"unreadable")
    return digest.hexdigest()[:_DIGITS]


def _named(path: str) -> str:
    digest = content_digest(path)
    return f"{Path(path).name}@{digest}" if digest else f"{Path(path).name}@(missing)"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def model_identity(data: dict[str, Any]) -> str:
    """The audited model's id in a results dict (see the module docstring)."""
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    assert isinstance(config, dict)
    parts: list[str] = []
    model = _text(config.get("model")) or _text(data.get("model")) or _text(data.get("synthetic"))
    if model is not None:
        parts.append(_named(model))
    architecture = _text(config.get("architecture"))
    if architecture is not None and ":" in architecture:  # the user's module factory, with its weights
        parts.append(f"module={architecture}")
        if _text(config.get("weights")):
            parts.append(f"weights={_named(config['weights'])}")
    for key in ("train", "synthetic_train", "mechanism"):
        if _text(config.get(key)):
            parts.append(f"{key}={config[key]}")
    data_file = _text(config.get("data")) or next((config[key] for key in ("dataset",) if _text(config.get(key)) and Path(config[key]).suffix), None)
    if data_file is not None:
        parts.append(f"data={_named(data_file)}")
    if not parts:  # privaudit's embedded model: its dataset and architecture, else the family's embedded default
        parts = [str(config[key]) for key in ("dataset", "architecture") if key in config]
    return "/".join(parts) or str(data.get("audit", "model"))


_HEADER_BYTES = 1 << 20  # a header longer than this is not read: the schema is then the file's kind alone


def _npy_shape(handle) -> str:
    """An array's type and trailing shape (a record's), e.g. ``float64[64]``, from its ``.npy`` header."""
    import numpy as np

    version = np.lib.format.read_magic(handle)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = read(handle, max_header_size=10_000)
    return f"{dtype}{list(shape[1:])}"


def data_schema(path: Any, label_col: Any = None) -> str | None:
    """A data file's schema as text: a table's column names, an array file's names, trailing shapes and types; None if unreadable.

    Only the header is read. The rows (their number and values) are not part
    of it: a new release of a table with the same columns has the same schema.
    """
    path = Path(str(path))
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".tsv"):
            with open(path, encoding="utf-8-sig", newline="") as handle:
                first = handle.readline(_HEADER_BYTES)
            columns = next(csv.reader([first], delimiter="\t" if suffix == ".tsv" else ","), [])
            parts = ["table", *columns]
        elif suffix == ".parquet":
            import pyarrow.parquet

            parts = ["table", *pyarrow.parquet.read_schema(path).names]
        elif suffix == ".npy":
            with open(path, "rb") as handle:
                parts = ["array", _npy_shape(handle)]
        elif suffix == ".npz":
            with zipfile.ZipFile(path) as archive:
                parts = ["arrays"]
                for name in sorted(archive.namelist()):
                    with archive.open(name) as handle:
                        parts.append(f"{name}={_npy_shape(handle)}")
        else:
            return None
    except Exception:  # unreadable or malformed: the audit itself has judged the file; the lineage falls back to the file's kind
        return None
    return "\0".join([*parts, f"label={label_col}"])


def lineage_of(data: dict[str, Any]) -> str:
    """The lineage of an audit (see the module docstring): readable, with a hash of the schema when one was read.

    >>> lineage_of({"audit": "dpsgd", "config": {"dataset": "digits", "architecture": "mlp"}})
    'digits/mlp'
    >>> lineage_of({"audit": "secret-sharer", "config": {}})
    'secret-sharer'
    """
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    assert isinstance(config, dict)
    label = _text(config.get("label_col"))
    files = [item for item in (_text(config.get(key)) for key in ("data", "dataset", "train", "holdout")) if item is not None]
    data_file = next((item for item in files if ":" not in item and Path(item).suffix), None)
    architecture = _text(config.get("architecture"))
    parts: list[str] = []
    if data_file is not None:
        schema = data_schema(data_file, label)
        if schema is None:
            parts.append(f"{Path(data_file).suffix.lstrip('.') or 'data'} file")
        else:
            kind, count = schema.split("\0", 1)[0], schema.count("\0") - 1
            what = {"table": "columns", "array": "", "arrays": "arrays"}[kind]
            described = f"{count} {what}" if kind != "array" else schema.split("\0")[1]
            if label is not None:
                described += f"; label {label}"
            fingerprint = hashlib.sha256(("\0".join([schema, architecture or ""])).encode("utf-8", "surrogateescape")).hexdigest()[:8]
            parts.append(f"{kind}({described})#{fingerprint}")
        if architecture is not None:
            parts.append(architecture)
        return "/".join(parts)
    model = _text(config.get("model")) or _text(data.get("model")) or _text(data.get("synthetic"))
    if model is not None:  # no data named: the model's (or released file's) name, without its content hash
        parts.append(Path(model).name)
    parts += [str(config[key]) for key in ("dataset", "architecture") if _text(config.get(key))]
    return "/".join(dict.fromkeys(parts)) or str(data.get("audit", "model"))
