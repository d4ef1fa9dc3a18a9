"""A directory of finished runs: one JSON file per run, written atomically.

Each finished run ``i`` is the file ``run-{i:06d}.json`` holding
``{"index": i, "config": ..., "result": ...}``. A file is first written to a
temporary file in the same directory, flushed and fsync'ed, then moved into
place with :func:`os.replace`, so a crash (or a killed job) leaves either the
whole file or none of it. Only JSON is read or written, never pickle.

>>> import tempfile
>>> store = RunStore(tempfile.mkdtemp())
>>> store.save(3, {"score": 1.5}, config={"seed": 7})
>>> store.done(), store.load(3)
({3}, {'score': 1.5})
"""

from __future__ import annotations

import json
import operator
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from .._core.files import read_json
from .._core.messages import describe_value

__all__ = ["RunStore"]

_NAME = re.compile(r"^run-(\d{6,})\.json$")


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
        """Write run ``index`` (its result and, optionally, its config) atomically."""
        index = _check_index(index)
        try:
            text = json.dumps({"index": index, "config": config, "result": result}, allow_nan=False, sort_keys=True)
        except (TypeError, ValueError) as error:
            raise ValueError(f"`result` of run {index} must be JSON-ready (finite numbers, str, list, dict): {error}") from error
        handle, temp = tempfile.mkstemp(prefix=".run-", suffix=".tmp", dir=self.directory)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text + "\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, self.path(index))
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
        """The result of finished run ``index`` (KeyError if it is not finished)."""
        return self._read(index)["result"]

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
