"""The demo's PANORAMIA stage on a quiet and on a busy machine: ``python benchmarks/busy_machine.py [--seed 0] [--tiny]``.

Runs exactly what ``privaudit demo --seed SEED`` runs for PANORAMIA (the
registry's panoramia audit with its embedded default config and the demo's
child seed for the family; ``--tiny``: the family's tiny config, with the
same seed, for a machine too busy for the demo's), without writing files,
three times: once to warm up (imports and JAX's compilation of the
generator), once as the machine is, and once beside a CPU hog (one
busy-loop process per CPU this process may use, killed afterwards whatever
happens). Issue 34 asks the busy time to stay within 3x the quiet one:
privaudit sizes its torch threads to the usable CPUs
(``_core/resources.py``), so a hog slows it down by sharing the cores, not
by oversubscribing them.

The quiet run is only as quiet as the machine: on a shared machine both
times include everyone else's load. Prints JSON and writes it to
benchmarks/results/busy_machine.json. A benchmark, not a test: timings stay
out of the unit tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

from privaudit._core.resources import threads_per_worker, torch_threads, usable_cpus
from privaudit._core.results import library_versions
from privaudit._core.seeding import child_seeds
from privaudit.audits.registry import get_audit
from privaudit.demo_full import DEMO_AUDITS

ROOT = Path(__file__).resolve().parents[1]
# a busy loop that also ends by itself when the benchmark dies (its parent changes), even on SIGKILL
HOG = "import os, sys\nparent = int(sys.argv[1])\nwhile os.getppid() == parent:\n    pass"


def panoramia_stage(seed: int, *, tiny: bool = False) -> float:
    """Seconds of the demo's PANORAMIA stage with the demo's root ``seed`` (the same config and child seed as ``privaudit demo``).

    ``tiny``: the registry's tiny config of the family (``Audit.tiny_config``) with the same child seed, for a machine too busy for the demo's.
    """
    audit = get_audit("panoramia")
    family_seed = child_seeds(seed, DEMO_AUDITS)["panoramia"]
    started = time.perf_counter()
    if tiny:
        audit.run(audit.with_seed(audit.tiny_config(), family_seed))
    else:
        for demo_run in DEMO_AUDITS["panoramia"].runs:
            audit.run(demo_run.configure(audit.default_config(), family_seed))
    seconds = time.perf_counter() - started
    print(f"panoramia stage: {seconds:.1f} s", file=sys.stderr, flush=True)
    return seconds


def with_hog(count: int, work):
    """``work()`` with ``count`` busy-loop processes running beside it; they are killed afterwards, on error too."""
    hogs: list[subprocess.Popen] = []
    try:
        for _ in range(count):
            hogs.append(subprocess.Popen([sys.executable, "-c", HOG, str(os.getpid())], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        time.sleep(1.0)  # the hogs are spinning before the clock starts
        return work()
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="the demo's root seed")
    parser.add_argument("--tiny", action="store_true", help="the registry's tiny panoramia config instead of the demo's (minutes less)")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "busy_machine.json")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout` or kill: the finally that kills the hogs still runs
    warnings.filterwarnings("ignore")
    cpus = usable_cpus()
    with torch_threads() as threads:  # what privaudit's own training uses for one worker
        import torch

        torch_now = torch.get_num_threads()
    warm_up = panoramia_stage(args.seed, tiny=args.tiny)  # untimed: imports and JAX's compilation of the generator fall on the first run
    quiet = panoramia_stage(args.seed, tiny=args.tiny)
    busy = with_hog(cpus, lambda: panoramia_stage(args.seed, tiny=args.tiny))
    out = {
        "benchmark": "busy_machine",
        "stage": "the registry's panoramia audit, "
        + ("its tiny config (Audit.tiny_config)" if args.tiny else "the embedded default config as the demo runs it")
        + ", with the demo's child seed",
        "seed": args.seed,
        "usable_cpus": cpus,
        "os_cpu_count": os.cpu_count(),
        "threads_per_worker": threads_per_worker(1),
        "torch_threads": threads,
        "torch_get_num_threads_inside": torch_now,
        "hog_processes": cpus,
        "warm_up_s": round(warm_up, 2),
        "quiet_s": round(quiet, 2),
        "busy_s": round(busy, 2),
        "ratio": round(busy / quiet, 3),
        "within_3x": busy <= 3 * quiet,
        "load_average_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "cpu": _cpu_name(),
        "versions": {**library_versions(), "python": platform.python_version()},
    }
    text = json.dumps(out, indent=2)
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
