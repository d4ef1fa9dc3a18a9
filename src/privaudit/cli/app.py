"""The typer application and its error handling: bad input exits 2 with one "error: ..." line.

Output is built completely before anything is printed, so a failure leaves
no partial output. Every command module registers on :data:`app` or
:data:`audit_app`; nothing here imports a command module.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

import privaudit

from .._core.extras import MissingExtraError, missing_extra_message

__all__ = ["app", "audit_app"]


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
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[misc]
        except ValueError as error:
            typer.echo(f"error: {' '.join(str(error).split())}", err=True)
            sys.exit(2)
        except ImportError as error:
            line = _missing_extra_line(error)
            if line is None:
                raise
            typer.echo(f"error: {line}", err=True)
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
                typer.echo(f"error: {line}", err=True)
            sys.exit(usage.exit_code)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
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
) -> None:
    """Empirical privacy auditing: canary exposure and lower bounds on epsilon."""


audit_app = typer.Typer(help="Run an audit end to end and write results.json and plots.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")
