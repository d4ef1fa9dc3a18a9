"""A directory of finished runs: one JSON file per run, written atomically.

Each finished run ``i`` is the file ``run-{i:06d}.json`` holding
``{"index": i, "config": ..., "result": ...}``. A file is first written to a
temporary file in the same directory, flushed and fsync'ed, then moved into
place with :func:`os.replace`, so a crash (or a killed job) leaves either the
whole file or none of it. Only JSON and ``.npy`` are read or written, never pickle.

A result's numpy arrays (a model's signals on every record) are kept beside
the JSON as ``run-{i:06d}.{key}.npy``, written the same atomic way before the
JSON that commits the run; the JSON holds each array's file name, shape,
dtype and SHA-256. :meth:`RunStore.load` gives them back memory-mapped
(read-only), so a caller can stream through many runs' arrays without
holding them all in memory, and a changed or truncated file is an error.

>>> import tempfile
>>> store = RunStore(tempfile.mkdtemp())
>>> store.save(3, {"score": 1.5, "signals": np.arange(3.0)}, config={"seed": 7})
>>> store.done(), store.load(3)["score"], store.load(3)["signals"].tolist()
({3}, 1.5, [0.0, 1.0, 2.0])
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np

from .._core.files import read_json
from .._core.messages import describe_value

__all__ = ["RunStore"]

_NAME = re.compile(r"^run-(\d{6,})\.json$")
_ARRAY_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: the JSON stand-in of an array kept in its own file
_ARRAY_MARK = "$npy"


class RunStore:
    """Finished runs of one experiment, kept as ``run-{index:06d}.json`` files in ``directory``.

    The directory is created if missing. ``save`` writes one run atomically;
    ``done`` lists the finished indices; ``load``/``load_all`` read results
    back; ``load_config`` reads the configuration the run was saved with.
    """

    def __init__(self, directory):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def __repr__(self) -> str:
        return f"RunStore({str(self.directory)!r})"

    def path(self, index: int) -> Path:
        """The file of run ``index``."""
        return self.directory / f"run-{_check_index(index):06d}.json"

    def save(self, index: int, result: dict[str, Any], *, config: dict[str, Any] | None = None) -> None:
        """Write run ``index`` (its result and, optionally, its config) atomically; numpy arrays of ``result`` go to ``.npy`` files first."""
        index = _check_index(index)
        stored = dict(result)
        for key, value in result.items():
            if isinstance(value, np.ndarray):
                stored[key] = self._save_array(index, key, value)
        try:
            text = json.dumps({"index": index, "config": config, "result": stored}, allow_nan=False, sort_keys=True)
        except (TypeError, ValueError) as error:
            raise ValueError(f"`result` of run {index} must be JSON-ready (finite numbers, str, list, dict) or numpy arrays: {error}") from error
        self._write_atomic(self.path(index), lambda file: file.write((text + "\n").encode("utf-8")))

    def _save_array(self, index: int, key: str, array: np.ndarray) -> dict[str, Any]:
        """Write ``array`` to its own ``.npy`` file (atomically) and return the JSON that stands for it."""
        if not _ARRAY_KEY.match(key) or array.dtype.hasobject:
            raise ValueError(
                f"`result` of run {index}: an array's key must be 1-64 letters, digits, _ or -, and its dtype not object, got {key!r} of {array.dtype}"
            )
        path = self.directory / f"{self.path(index).stem}.{key}.npy"
        self._write_atomic(path, lambda file: np.save(file, array, allow_pickle=False))
        return {_ARRAY_MARK: path.name, "shape": list(array.shape), "dtype": array.dtype.str, "sha256": _sha256(path)}

    def _write_atomic(self, path: Path, write: Callable[[IO[bytes]], Any]) -> None:
        """Write a temporary file in the store's directory, flush and fsync it, then move it to ``path``."""
        handle, temp = tempfile.mkstemp(prefix=".run-", suffix=".tmp", dir=self.directory)
        try:
            with os.fdopen(handle, "wb") as file:
                write(file)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, path)
        except BaseException:
            try:
                os.unlink(temp)
            except FileNotFoundError:
                pass
            raise
        _fsync_directory(self.directory)

    def _read(self, index: int) -> dict[str, Any]:
        """The checked JSON of run ``index``; a damaged file (empty, not JSON, wrong shape) is a ValueError naming it."""
        path = self.path(index)
        try:
            data = read_json(path, "store")
        except ValueError:
            if not path.exists():
                raise KeyError(f"run {index} is not finished: no file {path.name} in {self.directory}") from None
            raise
        if not isinstance(data, dict) or not {"index", "config", "result"} <= set(data) or data["index"] != index:
            keys = sorted(map(str, data)) if isinstance(data, dict) else type(data).__name__
            raise ValueError(
                f"`store`: the run file {str(path)!r} must hold an object with index {index}, config and result, got {describe_value(keys)}; "
                "delete it to train that run again"
            )
        if not isinstance(data["result"], dict) or not (data["config"] is None or isinstance(data["config"], dict)):
            raise ValueError(f"`store`: the run file {str(path)!r} must hold a result object and a config object; delete it to train that run again")
        return data

    def load(self, index: int) -> dict[str, Any]:
        """The result of finished run ``index`` (KeyError if it is not finished), its arrays memory-mapped read-only."""
        result = dict(self._read(index)["result"])
        for key, value in result.items():
            if isinstance(value, dict) and _ARRAY_MARK in value:
                result[key] = self._load_array(index, value)
        return result

    def _load_array(self, index: int, entry: dict[str, Any]) -> np.ndarray:
        """The array that ``entry`` stands for, checked against its recorded SHA-256, shape and dtype."""
        name = entry.get(_ARRAY_MARK)
        path = self.directory / str(name)
        if not isinstance(name, str) or path.name != name or not path.name.startswith(f"{self.path(index).stem}.") or not path.is_file():
            raise ValueError(f"`store`: run {index}'s array file {str(path)!r} is missing; delete {self.path(index).name} to train that run again")
        array = np.load(path, mmap_mode="r", allow_pickle=False) if _sha256(path) == entry.get("sha256") else None
        if array is None or list(array.shape) != entry.get("shape") or array.dtype.str != entry.get("dtype"):
            raise ValueError(
                f"`store`: run {index}'s array file {str(path)!r} has changed since it was saved; delete {self.path(index).name} to train that run again"
            )
        return array

    def load_config(self, index: int) -> dict[str, Any] | None:
        """The config that finished run ``index`` was saved with (None if none was given)."""
        return self._read(index)["config"]

    def done(self) -> set[int]:
        """The indices of the finished runs."""
        found = set()
        for entry in os.scandir(self.directory):
            match = _NAME.match(entry.name)
            if match and entry.is_file():
                found.add(int(match.group(1)))
        return found

    def load_all(self) -> dict[int, dict[str, Any]]:
        """All finished results, keyed by index, in index order."""
        return {index: self.load(index) for index in sorted(self.done())}


def _check_index(index) -> int:
    try:
        number = operator.index(index)
    except TypeError:
        number = -1
    if isinstance(index, bool) or number < 0:
        raise ValueError(f"`index` must be an integer >= 0, got {index!r}")
    return number


def _sha256(path: Path) -> str:
    """The SHA-256 of a file, read in blocks of 1 MiB."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable where the platform allows it (POSIX)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)
