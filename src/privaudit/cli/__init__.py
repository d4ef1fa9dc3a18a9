"""The ``privaudit`` command line (typer). ``python -m privaudit`` is the same.

* :mod:`.app`: the application and its one-line error handling;
* :mod:`.options`: the options, tables, progress bars and history recorder the commands share;
* :mod:`.audit`: ``privaudit audit FAMILY``, one command per registered audit;
* :mod:`.stats`: ``exposure`` and ``bound`` on score files;
* :mod:`.canaries`: ``canaries insert``, phase one of the Secret Sharer on the user's corpus;
* :mod:`.runs`: ``demo``, ``report``, ``history`` and ``extract``.

Imports flow one way: the command modules import :mod:`.app` and
:mod:`.options`, and this module imports the command modules.
"""

from __future__ import annotations

from . import audit, canaries, runs, stats  # noqa: F401  (each registers its commands)
from .app import app

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``privaudit`` console script; exits with the command's status."""
    app(args=argv, prog_name="privaudit")
