"""Files of a PANORAMIA run: ``results.json``, ``timings.json`` and one figure per audited target.

``results.json`` depends only on the configuration and seed, apart from its
stamp (``created_at`` and ``machine``); wall times go to ``timings.json``. The
command line writes into a scratch directory and moves it into place only
once everything was written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..schemas import stamp_results
from .._core.results import to_plain, library_versions

__all__ = ["summary_rows", "write_panoramia_outputs"]


def _figure_name(target: str) -> str:
    return "pr_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", target) + ".png"


def summary_rows(results: dict) -> list[dict]:
    """One row per target: c_lb with its generator, {c+ε}_lb, ε̃, and RM;RN and O(1) beside them.

    >>> import types
    >>> audit = types.SimpleNamespace(generator="mst", c_lb=0.3, epsilon_tilde=0.1, real_non_members=None, one_run=None,
    ...                               bounds=types.SimpleNamespace(c_plus_epsilon_lb=0.4))
    >>> summary_rows({"mlp": {"audit": audit}})[0]["epsilon_tilde (estimate)"]
    0.1
    """
    rows = []
    for name, entry in results.items():
        audit = entry["audit"]
        rows.append({
            "target": name,
            "generator": audit.generator,
            "c_lb (lower bound)": audit.c_lb,
            "{c+eps}_lb (lower bound)": audit.bounds.c_plus_epsilon_lb,
            "epsilon_tilde (estimate)": audit.epsilon_tilde,
            "RM;RN epsilon (lower bound)": None if audit.real_non_members is None else audit.real_non_members.epsilon,
            "O(1) epsilon (lower bound)": None if audit.one_run is None else audit.one_run.epsilon,
            "claimed DP epsilon": entry.get("claimed_dp_epsilon"),
        })
    return rows


def write_panoramia_outputs(results: dict, scores: dict, directory, *, config) -> dict:
    """Write ``results.json``, ``timings.json`` and ``pr_<target>.png``; return the results dict."""
    from ..report.panoramia import plot_panoramia

    directory = Path(directory)
    targets, timings = {}, {}
    for name, entry in results.items():
        audit = entry["audit"]
        plot_panoramia(scores[name], audit, directory / _figure_name(name), title=f"PANORAMIA: {name}")
        data = audit.to_dict()
        data.pop("versions")
        data.update({key: to_plain(value) for key, value in entry.items() if key not in ("audit", "timings_s")})
        data["figure"] = _figure_name(name)
        targets[name] = data
        timings[name] = to_plain(entry.get("timings_s", {}))
    out = stamp_results({
        "config": to_plain(config),
        "summary": to_plain(summary_rows(results)),
        "targets": targets,
        "versions": dict(library_versions()),
    }, audit="panoramia")
    (directory / "results.json").write_text(json.dumps(out, indent=2) + "\n")
    (directory / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    return out
