"""File output, all or nothing: staged output directories and atomic JSON writes.

A failure never leaves a partial file or directory behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["MAX_INPUT_BYTES", "read_text_limited", "staged_output", "write_json_atomic"]

MAX_INPUT_BYTES = 64 * 2**20  # configs and results files are small; refuse anything larger before reading it


@contextlib.contextmanager
def staged_output(output):
    """Yield a scratch directory beside ``output``; move its files into ``output`` only on success.

    >>> import os
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     target = Path(folder) / "run"
    ...     try:
    ...         with staged_output(target) as scratch:
    ...             _ = (scratch / "results.json").write_text("{}")
    ...             raise RuntimeError("the audit failed")
    ...     except RuntimeError:
    ...         pass
    ...     print(target.exists(), os.listdir(folder))
    False []
    """
    final = Path(output)
    final.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        yield scratch
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    final.mkdir(exist_ok=True)
    for item in scratch.iterdir():
        item.replace(final / item.name)
    scratch.rmdir()


def write_json_atomic(path, data) -> None:
    """Write ``data`` as indented JSON to ``path`` through a temporary file and a rename.

    >>> with tempfile.TemporaryDirectory() as folder:
    ...     write_json_atomic(Path(folder) / "a.json", {"x": 1})
    ...     print(sorted(os.listdir(folder)), (Path(folder) / "a.json").read_text().strip())
    ['a.json'] {
      "x": 1
    }
    """
    path = Path(path)
    text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def read_text_limited(path, name: str, *, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of the file ``path``, refused with a ValueError naming ``name`` if missing, too large or unreadable."""
    path = Path(path)
    if not path.is_file():
        reason = "is a directory" if path.is_dir() else "file not found"
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {reason}")
    size = path.stat().st_size
    if size > max_bytes:
        raise ValueError(f"`{name}`: {str(path)!r} is {size} bytes; at most {max_bytes} are read")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {error}") from None
