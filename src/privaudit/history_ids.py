"""The identity of the audited model, the key under which :mod:`privaudit.history` files an audit.

The history compares consecutive audits of *one* model, so the key must
tell models apart: the user's model is its file or directory's name and a
hash of its contents; the user's training function (``--train``) is its
import path and the hash of the data it trained on; released synthetic text
is its file's name and hash. Only privaudit's embedded models are named by
their embedded dataset and architecture (or the family's embedded default).
Two different models audited by the same family are two ids, and a changed
file under the same path is another id too.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> for name, text in (("a.skops", "one"), ("b.skops", "two")):
...     _ = open(os.path.join(folder, name), "w").write(text)
>>> ids = {model_identity({"audit": "mia", "config": {"model": os.path.join(folder, name)}}) for name in ("a.skops", "b.skops")}
>>> len(ids), sorted(ids)[0].startswith("a.skops@")
(2, True)
>>> model_identity({"audit": "dpsgd", "config": {"dataset": "digits", "architecture": "mlp"}})
'digits/mlp'
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

__all__ = ["content_digest", "model_identity"]

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
