"""Content hashes of what a run reads, for the runner's resume key: a changed input is a new run, never a stale one reused.

A run is resumed only when its stored config equals the new one; putting the
SHA-256 of the data file, the model file or directory and the user's code
(the training function's module and every module of the user's tree it
imports, :func:`privaudit._core.imports.user_files`) in that config makes
"the same path, other contents" a different run.

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
import os
from pathlib import Path

from .._core.imports import user_files

__all__ = ["code_sha256", "content_sha256", "input_digests"]

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


def code_sha256(import_path: str) -> dict[str, str]:
    """SHA-256 of each file of the user's code behind ``package.module:function``, by module name; {} for code outside the user's tree.

    The module's own file and every module of the user's tree it imports
    (:func:`~privaudit._core.imports.user_files`); privaudit's own
    generators and an installed package's functions give {}.

    >>> code_sha256("json:loads")
    {}
    """
    module = import_path.partition(":")[0]
    return {name: content_sha256(file) for name, file in sorted(user_files(module).items())}


def input_digests(*, files: dict[str, object] | None = None, functions: dict[str, object] | None = None) -> dict[str, object]:
    """The content hash of each given input: ``files`` (data, model: a file or directory) and ``functions`` (import paths: :func:`code_sha256`); None values skipped."""
    digests: dict[str, object] = {}
    for name, path in (files or {}).items():
        if path is not None and os.path.exists(str(path)):
            digests[name] = content_sha256(path)
    for name, import_path in (functions or {}).items():
        if import_path is not None:
            code = code_sha256(str(import_path))
            if code:  # privaudit's own functions and installed packages: nothing of the user's to hash
                digests[name] = code
    return digests
