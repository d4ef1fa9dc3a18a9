"""The typer application and its error handling: bad input exits 2 with one "error: ..." line.

Output is built completely before anything is printed, so a failure leaves
no partial output. Every command module registers on :data:`app` or
:data:`audit_app`; :data:`app` imports them when typer first reads its
commands, only the one a command line names when it names one.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

import privaudit

from .._core.extras import MissingExtraError, missing_extra_message
from .._core.messages import error_line

__all__ = ["CommandInterrupted", "app", "audit_app", "interruptible"]


class CommandInterrupted(Exception):
    """Ctrl-C during a command, carried past typer (which turns a KeyboardInterrupt into a silent exit 130); the message says what was kept."""


def _kept_runs(runs: Path | None) -> str:
    """ "8 finished runs are kept in 'out/runs'" for the finished runs under ``runs``; "" when there are none."""
    if runs is None or not runs.is_dir():
        return ""
    count = sum(1 for _ in runs.rglob("run-*.json"))
    return f"{count} finished run{'s are' if count != 1 else ' is'} kept in {str(runs)!r}" if count else ""


@contextlib.contextmanager
def interruptible(runs: Path | None = None):
    """Turn Ctrl-C inside a command into :class:`CommandInterrupted`: one line saying what was kept and how to resume, exit 130.

    The runner's own message says what it kept; Ctrl-C after the runs (while
    scoring, or writing the report) counts the finished runs under ``runs``.
    """
    try:
        yield
    except KeyboardInterrupt as error:
        kept = " ".join(str(error).split()) or _kept_runs(runs)
        resume = f"{kept}; run the same command again to resume them" if kept else "stopped before anything was finished"
        raise CommandInterrupted(resume) from None


def _usage_error_line(error: Exception) -> str | None:
    """The one-line message of a click/typer usage error, or None for other exceptions."""
    # duck-typed: newer typer vendors its own click, older typer uses click itself
    if not (hasattr(error, "format_message") and hasattr(error, "exit_code")):
        return None
    return " ".join(error.format_message().split())


def _missing_extra_line(error: ImportError) -> str | None:
    """ "missing optional dependency ..." for an optional library that failed to import; None for anything else (a bug)."""
    if isinstance(error, MissingExtraError):
        return str(error)
    return missing_extra_message(error.name or "")


class OneLineErrors(TyperGroup):
    """Run the commands so that bad input exits 2 with one "error: ..." line on stderr.

    The same behaviour whether called as the console script, ``python -m privaudit``
    or through ``typer.testing.CliRunner``; with ``standalone_mode=False`` the
    exceptions propagate unchanged.
    """

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:  # type: ignore[override]
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[misc]
        words = kwargs.get("args") or (args[0] if args else None) or sys.argv[1:]
        verbose = "--verbose" in list(words)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[misc]
        except CommandInterrupted as error:  # Ctrl-C: the runner stopped its workers and kept every finished run
            typer.echo(f"interrupted: {error_line(error)}", err=True)
            sys.exit(130)
        except ValueError as error:
            if verbose:  # the traceback of the user's code (or of privaudit) behind the one line
                traceback.print_exception(error, file=sys.stderr)
            typer.echo(f"error: {error_line(error)}", err=True)
            sys.exit(2)
        except ImportError as error:
            line = _missing_extra_line(error)
            if line is None:
                raise
            typer.echo(f"error: {error_line(line)}", err=True)
            sys.exit(2)
        except typer.Abort:
            typer.echo("error: aborted", err=True)
            sys.exit(1)
        except Exception as error:  # click's usage errors, duck-typed (typer may vendor its own click)
            usage: Any = error
            line = _usage_error_line(error)
            if line is None:
                raise
            if type(error).__name__ == "NoArgsIsHelpError":
                if usage.format_message().strip():  # empty when rich already printed the help
                    typer.echo(usage.format_message(), err=True)
            else:
                typer.echo(f"error: {error_line(line)}", err=True)
            sys.exit(usage.exit_code)
        if code == 130:  # typer's silent exit for a Ctrl-C that no command turned into CommandInterrupted
            typer.echo("interrupted: the command stopped before it finished; run it again", err=True)
        sys.exit(code if isinstance(code, int) else 0)


#: The command modules, each registering its commands on :data:`app` or :data:`audit_app` when imported,
#: and the module of each top-level command.
COMMAND_MODULES = ("audit", "canaries", "runs", "stats")
MODULE_OF_COMMAND = {
    "audit": "audit",
    "canaries": "canaries",
    "demo": "runs",
    "report": "runs",
    "history": "runs",
    "extract": "runs",
    "exposure": "stats",
    "bound": "stats",
}


class CommandsOnDemand(typer.Typer):
    """A Typer that imports its command modules the first time its commands are read.

    typer reads ``registered_commands`` when it builds the click group, just
    before running a command; importing the modules there, and only those in
    :attr:`modules`, lets ``privaudit bound`` skip the audits' machinery.
    """

    modules: tuple[str, ...] = COMMAND_MODULES
    _importing = False

    @property
    def registered_commands(self) -> list[Any]:
        if not self._importing:  # the modules' @app.command() decorators read this list too
            self._importing = True
            try:
                for module in self.modules:  # a dictionary lookup once imported
                    importlib.import_module(f"{__package__}.{module}")
            finally:
                self._importing = False
        return self._registered_commands

    @registered_commands.setter
    def registered_commands(self, value: list[Any]) -> None:
        self._registered_commands = value


app = CommandsOnDemand(
    cls=OneLineErrors,
    name="privaudit",
    help="Empirical privacy auditing: canary exposure and lower bounds on epsilon. Higher scores mean 'member'.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(privaudit.__version__)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", help="On an error, also print the traceback behind its one line (e.g. of your --train function's exception).")
    ] = False,
) -> None:
    """Empirical privacy auditing: canary exposure and lower bounds on epsilon."""


audit_app = typer.Typer(help="Run an audit end to end and write results.json and plots.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")
