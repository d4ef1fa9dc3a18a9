"""Content hashes of what a run reads, for the runner's resume key: a changed input is a new run, never a stale one reused.

A run is resumed only when its stored config equals the new one; putting the
SHA-256 of the data file, the model file or directory and the training
function's module source in that config makes "the same path, other
contents" a different run.

>>> import tempfile, os
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "dd.csv")
>>> _ = open(path, "w").write("a,label\\n1,0\\n")
>>> first = content_sha256(path)
>>> _ = open(path, "w").write("a,label\\n2,0\\n")
>>> first == content_sha256(path)
False
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

__all__ = ["content_sha256", "input_digests", "source_sha256"]

_CHUNK = 1 << 20


def _file_sha256(path: Path, digest) -> None:
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)


def content_sha256(path) -> str:
    """SHA-256 of a file's bytes, or of a directory's files (their relative names and bytes, in name order).

    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> content_sha256(folder) == content_sha256(tempfile.mkdtemp())
    True
    """
    path = Path(path)
    digest = hashlib.sha256()
    if path.is_dir():
        for root, folders, files in os.walk(path):
            folders.sort()
            for name in sorted(files):
                item = Path(root) / name
                digest.update(str(item.relative_to(path)).encode("utf-8", "surrogateescape") + b"\0")
                _file_sha256(item, digest)
    else:
        _file_sha256(path, digest)
    return digest.hexdigest()


def source_sha256(import_path: str) -> str | None:
    """SHA-256 of the source file of the module that ``package.module:function`` names; None when it has no file."""
    module = import_path.partition(":")[0]
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec is not None else None
    return content_sha256(origin) if origin and os.path.isfile(origin) else None


def input_digests(*, files: dict[str, object] | None = None, functions: dict[str, object] | None = None) -> dict[str, str | None]:
    """The content hash of each given input: ``files`` (data, model: a file or directory) and ``functions`` (import paths); None values skipped."""
    digests: dict[str, str | None] = {}
    for name, path in (files or {}).items():
        if path is not None and os.path.exists(str(path)):
            digests[name] = content_sha256(path)
    for name, import_path in (functions or {}).items():
        if import_path is not None:
            digests[name] = source_sha256(str(import_path))
    return digests
