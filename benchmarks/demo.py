"""Wall time of the README's first command: ``python benchmarks/demo.py [--seed S]``.

Runs ``privaudit demo`` (every registered audit on its embedded default) as a
subprocess into a fresh temporary directory, as a user would, and writes the
wall time, each audit's headline number, the report's size, the machine and
the versions to ``benchmarks/results/demo.json`` (and prints the same JSON).
The acceptance target is 10 minutes on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

from privaudit._core.results import library_versions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "demo.json")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="demo-") as directory:
        folder = Path(directory) / "demo"
        environment = {**os.environ, "PRIVAUDIT_HISTORY": str(Path(directory) / "history.sqlite")}
        started = time.perf_counter()
        completed = subprocess.run(
            [sys.executable, "-m", "privaudit", "demo", "--output", str(folder), "--seed", str(args.seed)],
            capture_output=True,
            text=True,
            env=environment,
            check=False,
        )
        wall = time.perf_counter() - started
        if completed.returncode != 0:
            sys.exit(f"privaudit demo failed ({completed.returncode}): {completed.stderr[-2000:]}")
        summary = json.loads((folder / "results.json").read_text())
        report_bytes = (folder / "report.html").stat().st_size
    entry = {
        "command": f"privaudit demo --output DIR --seed {args.seed}",
        "wall_time_s": wall,
        "demo_seconds": summary["seconds"],
        "report_html_bytes": report_bytes,
        "headlines": [{key: audit[key] for key in ("directory", "label", "value", "kind", "confidence", "flag")} for audit in summary["audits"]],
        "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(), "platform": platform.platform()},
        "versions": dict(library_versions()),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(entry, indent=2) + "\n")
    print(json.dumps(entry, indent=2))


if __name__ == "__main__":
    main()
