"""Wall times of the slow paths, for two source trees side by side: ``python benchmarks/speed_paths.py --base DIR [--repeats N] [--output FILE]``.

``--base`` is the ``src`` folder of the code to compare against (e.g. a
``git worktree add /tmp/base-speed <commit>`` checkout's ``/tmp/base-speed/src``);
the other side is this checkout's ``src``. Every measurement runs in a fresh
interpreter per side, the two sides alternating, so that both see the same
load on a shared machine. Cases:

* ``fdp_pld``: ``epsilon_one_run_fdp`` against ``SubsampledGaussian(q, T)`` at
  m = 1,000 canaries (each in with probability ½, score μ·member + N(0, 1)),
  for (q, T, μ) = (0.01, 1000, 2) and (0.05, 100, 1), and ``one_run_lower_bound``
  with the first family; one warm-up call (imports, caches) on another seed,
  then one timed call per seed;
* ``gdp_split``: ``epsilon_lower_bound`` with its default (GDP, split) on 10⁴
  scores per side, N(1, 1) in against N(0, 1) out, one seed per call after a
  warm-up;
* ``cli_bound``: the whole process ``python -m privaudit bound --in IN --out OUT``
  on 10⁴ scores per side (the table output), wall and CPU (user + sys) seconds;
  and the ten largest cumulative import costs from ``python -X importtime``.

Medians (and minima) over the repeats; the ε values of each side are kept so
that the numbers can be compared as well as the times. Writes
benchmarks/results/speed_paths.json (or ``--output``). Bad arguments: one line
on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

HERE = Path(__file__).resolve().parent
CURRENT_SRC = HERE.parent / "src"

FDP_CASES = ((0.01, 1000, 2.0), (0.05, 100, 1.0))

# Run in a fresh interpreter with PYTHONPATH set to one side's src; prints one JSON line.
TIMED = r"""
import json, sys, time
import numpy as np
import privaudit
case, seeds = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]

def canaries(seed, mu, m=1000):
    rng = np.random.default_rng(seed)
    member = rng.random(m) < 0.5
    return mu * member + rng.normal(size=m), member

def scores(seed, n=10_000):
    rng = np.random.default_rng(seed)
    return rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)

if case.startswith("fdp_pld") or case.startswith("one_run_lower_bound"):
    q, steps, mu = (float(x) for x in case.split(":")[1].split("/"))
    family = privaudit.SubsampledGaussian(q, int(steps))
    function = privaudit.epsilon_one_run_fdp if case.startswith("fdp_pld") else privaudit.one_run_lower_bound
    call = lambda seed: function(*canaries(seed, mu), delta=1e-5, family=family).epsilon
else:
    call = lambda seed: privaudit.epsilon_lower_bound(*scores(seed), delta=1e-5, seed=seed).epsilon
call(10_000)  # warm-up: imports and caches
out = []
for seed in seeds:
    start = time.perf_counter()
    value = call(seed)
    out.append((time.perf_counter() - start, value))
print(json.dumps(out))
"""


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr, exit status 2."""

    def error(self, message: str):  # noqa: D102 - argparse hook
        self.exit(2, f"{self.prog}: error: {message}\n")


def _environment(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(src)}


def _timed(src: Path, case: str, seeds: list[int]) -> list[tuple[float, float]]:
    done = subprocess.run([sys.executable, "-c", TIMED, case, ",".join(map(str, seeds))], capture_output=True, text=True, env=_environment(src), check=True)
    return [tuple(pair) for pair in json.loads(done.stdout.strip().splitlines()[-1])]


def _process(src: Path, arguments: list[str]) -> tuple[float, float]:
    """(wall, user + sys CPU) seconds of one whole ``python -m privaudit`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "privaudit", *arguments], capture_output=True, env=_environment(src), check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _import_costs(src: Path, arguments: list[str], top: int = 10) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "privaudit", *arguments], capture_output=True, text=True, env=_environment(src), check=True
    )
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit():
                rows.append({"module": name.strip(), "cumulative_s": int(cumulative) / 1e6})
    return sorted(rows, key=lambda row: -row["cumulative_s"])[:top]


def _summary(times: list[float]) -> dict[str, float]:
    return {"median_s": statistics.median(times), "min_s": min(times)}


def main() -> None:
    parser = _Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the src folder of the code to compare against")
    parser.add_argument("--repeats", type=int, default=5, help="seeds (or processes) per case and side")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "speed_paths.json")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    if not (args.base / "privaudit" / "__init__.py").is_file():
        parser.error(f"--base must be a src folder holding privaudit/, got {str(args.base)!r}")
    sides = {"base": args.base.resolve(), "current": CURRENT_SRC}
    seeds = list(range(args.repeats))
    started = time.perf_counter()
    cases: dict[str, dict[str, object]] = {}

    timed_cases = [f"fdp_pld:{q}/{t}/{mu}" for q, t, mu in FDP_CASES] + [
        f"one_run_lower_bound:{FDP_CASES[0][0]}/{FDP_CASES[0][1]}/{FDP_CASES[0][2]}",
        "gdp_split",
    ]
    for case in timed_cases:
        entry: dict[str, object] = {}
        for seed in seeds:  # alternate the sides seed by seed
            for side, src in sides.items():
                pairs = _timed(src, case, [seed])
                slot = entry.setdefault(side, {"seconds": [], "epsilons": []})
                slot["seconds"].append(pairs[0][0])  # type: ignore[index]
                slot["epsilons"].append(pairs[0][1])  # type: ignore[index]
        for side in sides:
            slot = entry[side]
            slot.update(_summary(slot["seconds"]))  # type: ignore[union-attr, arg-type]
        entry["speedup_median"] = entry["base"]["median_s"] / entry["current"]["median_s"]  # type: ignore[index]
        cases[case] = entry
        print(f"{case}: base {entry['base']['median_s']:.4f} s, current {entry['current']['median_s']:.4f} s (median of {args.repeats})", flush=True)  # type: ignore[index]

    with tempfile.TemporaryDirectory() as folder:
        rng = np.random.default_rng(0)
        np.savetxt(Path(folder) / "in.txt", rng.normal(1.0, 1.0, 10_000))
        np.savetxt(Path(folder) / "out.txt", rng.normal(0.0, 1.0, 10_000))
        arguments = ["bound", "--in", str(Path(folder) / "in.txt"), "--out", str(Path(folder) / "out.txt")]
        entry = {side: {"wall_s": [], "cpu_s": []} for side in sides}
        for _ in seeds:
            for side, src in sides.items():
                wall, cpu = _process(src, arguments)
                entry[side]["wall_s"].append(wall)
                entry[side]["cpu_s"].append(cpu)
        for side, src in sides.items():
            entry[side]["median_wall_s"] = statistics.median(entry[side]["wall_s"])
            entry[side]["median_cpu_s"] = statistics.median(entry[side]["cpu_s"])
            entry[side]["largest_imports"] = _import_costs(src, arguments)
        cases["cli_bound"] = entry
        print(
            f"cli_bound: base {entry['base']['median_wall_s']:.3f} s wall / {entry['base']['median_cpu_s']:.3f} s CPU, "
            f"current {entry['current']['median_wall_s']:.3f} s wall / {entry['current']['median_cpu_s']:.3f} s CPU",
            flush=True,
        )

    load = os.getloadavg()
    report = {
        "command": " ".join([sys.executable, *sys.argv]),
        "sides": {side: str(src) for side, src in sides.items()},
        "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(), "platform": platform.platform(), "load_average_1_5_15_min": load},
        "python": sys.version.split()[0],
        "wall_time_s": time.perf_counter() - started,
        "cases": cases,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
