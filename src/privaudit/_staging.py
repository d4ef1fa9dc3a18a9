"""Write a command's output directory all at once: nothing partial is left by a failure."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

__all__ = ["staged_output"]


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
