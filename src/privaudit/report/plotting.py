"""matplotlib, set up once: figures from the object API, never pyplot's global state or ``matplotlib.use``.

A :class:`matplotlib.figure.Figure` made directly needs no backend and no
display, is never registered with pyplot, and so cannot leak between audits.

>>> import tempfile, os
>>> figure, axis = new_figure(figsize=(2, 2))
>>> _ = axis.plot([0, 1], [0, 1])
>>> with tempfile.TemporaryDirectory() as folder:
...     path = save_figure(figure, os.path.join(folder, "line.png"))
...     open(path, "rb").read(8) == b"\\x89PNG\\r\\n\\x1a\\n"
True
"""

from __future__ import annotations

import warnings
from typing import Any

from .._core.extras import require

__all__ = ["new_figure", "save_figure"]


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float] = (6, 4)) -> tuple[Any, Any]:
    """A new figure and its axes (one axis, or an array of them, as ``Figure.subplots`` returns)."""
    figure_module = require("matplotlib.figure", purpose="figures")
    figure = figure_module.Figure(figsize=figsize)
    return figure, figure.subplots(nrows, ncols)


def save_figure(figure: Any, path: Any, *, dpi: int = 120) -> Any:
    """Lay out and write ``figure`` as PNG to ``path``; returns ``path``."""
    with warnings.catch_warnings():
        # matplotlib warns when placing a legend at loc="best" takes over a second, a matter of the machine's load, not of the figure
        warnings.filterwarnings("ignore", message="Creating legend with loc=", category=UserWarning)
        figure.tight_layout()
        figure.savefig(path, dpi=dpi)
    return path
