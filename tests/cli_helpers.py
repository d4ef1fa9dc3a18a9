"""Running the CLI in-process, and the contract for refused input, shared by the command tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from privaudit.cli import app


def run_cli(argv):
    """(exit code, stdout, stderr) of ``privaudit *argv``; an exception other than SystemExit is raised."""
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart by default
        runner = CliRunner()
    result = runner.invoke(app, [str(arg) for arg in argv])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def assert_refused(argv, output, match):
    """The command exits 2 with one error line containing ``match``, prints nothing on stdout and creates no output."""
    code, stdout, stderr = run_cli(argv)
    lines = stderr.strip().splitlines()
    assert code == 2 and stdout == "" and len(lines) == 1 and lines[0].startswith("error: "), (code, stdout, stderr)
    assert match in lines[0], lines[0]
    assert not output.exists()
    return lines[0]


def start_demo(output: Path, *, stderr: int = subprocess.DEVNULL) -> subprocess.Popen:
    """``python -m privaudit demo --output OUTPUT --no-history`` started in a subprocess of this checkout (stdout discarded)."""
    argv = [sys.executable, "-m", "privaudit", "demo", "--output", str(output), "--no-history"]
    return subprocess.Popen(argv, env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=stderr, text=True)


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment of a ``python -m privaudit`` subprocess that imports this checkout's privaudit (its source first on PYTHONPATH)."""
    import privaudit

    source = str(Path(privaudit.__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")])), **extra}
