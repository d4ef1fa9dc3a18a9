"""Shared test set-up: audits run by the tests record into a temporary history store, never the home directory, and print no stage lines."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _temporary_history_store(tmp_path_factory):
    # session scope: set before any module-scoped fixture runs an audit command
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PRIVAUDIT_HISTORY", str(tmp_path_factory.mktemp("history") / "history.sqlite"))
        # no "stage: ... started" lines from a slow machine in the consoles the tests read (the stage-line tests set their own delay)
        patch.setenv("PRIVAUDIT_STAGE_LINES_AFTER_S", "3600")
        yield


@pytest.fixture()
def cli():
    """``cli(argv) -> (exit code, stdout, stderr)``: the ``privaudit`` command run in-process, stdout and stderr apart."""
    from typer.testing import CliRunner

    from privaudit.cli import app

    try:  # click < 8.2 mixes stderr into stdout unless told not to
        runner = CliRunner(mix_stderr=False)
    except TypeError:
        runner = CliRunner()

    def invoke(argv):
        result = runner.invoke(app, [str(arg) for arg in argv])
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception  # a traceback is a bug: surface it
        return result.exit_code, result.stdout, result.stderr

    return invoke


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a module of tiny models: a second thread only spins on their small matrices, and on a shared CPU that multiplies the time."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
