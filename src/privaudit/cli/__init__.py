"""The ``privaudit`` command line (typer). ``python -m privaudit`` is the same.

* :mod:`.app`: the application and its one-line error handling;
* :mod:`.options`: the options, tables, progress bars and history recorder the commands share;
* :mod:`.audit`: ``privaudit audit FAMILY``, one command per registered audit;
* :mod:`.stats`: ``exposure`` and ``bound`` on score files;
* :mod:`.canaries`: ``canaries insert``, phase one of the Secret Sharer on the user's corpus;
* :mod:`.runs`: ``demo``, ``report``, ``history`` and ``extract``.

Imports flow one way: the command modules import :mod:`.app` and
:mod:`.options`; :data:`app` imports the command modules when typer first
reads its commands (all of them, or under :func:`main` only the one the
command line names), so that ``privaudit bound`` starts fast.
"""

from __future__ import annotations

import atexit
import os
import sys

from .._core.resources import passive_openmp_waits
from .app import COMMAND_MODULES, MODULE_OF_COMMAND, app

__all__ = ["app", "console_main", "main"]


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``privaudit`` console script; exits with the command's status."""
    passive_openmp_waits()  # before torch or scikit-learn loads OpenMP: on a busy machine spinning threads cost 10x (docs/performance.md)
    words = [word for word in (sys.argv[1:] if argv is None else argv) if not word.startswith("-")]
    command = words[0] if words else None
    previous, app.modules = app.modules, ((MODULE_OF_COMMAND[command],) if command in MODULE_OF_COMMAND else COMMAND_MODULES)
    try:
        app(args=argv, prog_name="privaudit")
    finally:  # in process (tests, notebooks), the app goes on to offer every command
        app.modules = previous


def console_main() -> None:
    """The ``privaudit`` console script and ``python -m privaudit``: :func:`main`, and after Ctrl-C (exit 130) the process ends at once.

    CPython keeps a global "unhandled Ctrl-C" flag that a KeyboardInterrupt
    can set while interpreter-run code is on the stack, even where privaudit
    then handles it; at exit the flag makes the process kill itself with
    SIGINT (status -2, not 130). By then the one line is printed and the
    staging folders are gone, so the process runs its exit handlers
    and ends here with 130. In process
    (tests, notebooks), :func:`main` raises SystemExit as usual.
    """
    try:
        main()
    except SystemExit as stop:
        if stop.code != 130:
            raise
        atexit._run_exitfuncs()  # multiprocessing's finalizers (the runner's pool and its semaphores) run as at a normal exit
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
