"""Every ``--output``: results.json and a report.html that shows the conventions decided and every seed the results record.

Each registered audit family runs from the command line on its tiny config
with ``--seed 7`` (so a seed shown as 7 comes from the run, not a default),
then ``extract`` on the secret-sharer run, ``bound`` and ``exposure`` on
score files. The page is read twice: its text as an HTML parser sees it, and
the DOM headless Chromium builds from it (when Chromium is installed).
"""

from __future__ import annotations

import dataclasses
import html
import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest
from browser import CONSOLE, chromium, needs_chromium, rendered_dom
from cli_helpers import assert_refused, run_cli

from privaudit._core.conventions import checked, default, explicit
from privaudit.audits.config import config_text
from privaudit.audits.registry import get_audit, names
from privaudit.report.runs import write_run

SEED = 7
COMMANDS = (*names(), "extraction", "bound", "exposure")
# families whose runs are spread over worker processes: one worker is enough for a tiny run
_ONE_WORKER = {"blackbox": ["--workers", "1"]}


def _missing(audit) -> list[str]:
    return [package for package in (*audit.requires, "matplotlib") if importlib.util.find_spec(package) is None]


def _run(argv) -> None:
    code, _, stderr = run_cli(argv)
    assert code == 0, stderr


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, Path]:
    """The --output folder of every command that could run here, by command."""
    root = tmp_path_factory.mktemp("outputs")
    folders: dict[str, Path] = {}
    for name in names():
        audit = get_audit(name)
        if _missing(audit):
            continue
        config = root / f"{name}.json"
        config.write_text(config_text(audit.tiny_config()), encoding="utf-8")
        folders[name] = root / name
        _run(["audit", name, "--config", config, "--seed", SEED, "--output", folders[name], "--no-history", *_ONE_WORKER.get(name, [])])
    if "secret-sharer" in folders:
        folders["extraction"] = root / "extraction"
        _run(["extract", "--run", folders["secret-sharer"], "--output", folders["extraction"]])
    rng = np.random.default_rng(SEED)
    for side, centre in (("in", 1.0), ("out", 0.0)):
        np.savetxt(root / f"{side}.txt", np.round(rng.normal(centre, 1.0, 300), 2))
    folders["bound"] = root / "bound"
    _run(["bound", "--in", root / "in.txt", "--out", root / "out.txt", "--seed", SEED, "--output", folders["bound"]])
    np.savetxt(root / "canaries.txt", rng.normal(0.0, 1.0, 3))
    np.savetxt(root / "references.txt", rng.normal(1.0, 1.0, 200))
    folders["exposure"] = root / "exposure"
    _run(["exposure", "--canaries", root / "canaries.txt", "--references", root / "references.txt", "--insertions", 2, "--output", folders["exposure"]])
    return folders


def _folder(outputs, command) -> Path:
    if command not in outputs:
        pytest.skip(f"{command} needs {', '.join(_missing(get_audit('secret-sharer' if command == 'extraction' else command)))}")
    return outputs[command]


def _recorded_seeds(value, path="") -> dict[str, object]:
    """Oracle: every integer stored under a key named seed / *_seed, and every list of them under seeds / *_seeds, by its path (lists indexed)."""
    found: dict[str, object] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{path}.{key}" if path else key
            if (key == "seed" or key.endswith("_seed")) and (isinstance(item, int) or item is None):
                found[name] = item
            elif (key == "seeds" or key.endswith("_seeds")) and isinstance(item, list) and all(isinstance(seed, int) for seed in item):
                # one row per list: the seeds themselves, or for a long list how many and the first three
                found[name] = item if len(item) <= 8 else f"{len(item)} seeds: {', '.join(map(str, item[:3]))}, … (all in results.json)"
            else:
                found.update(_recorded_seeds(item, name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.update(_recorded_seeds(item, f"{path}[{index}]"))
    return found


def _section(page: str, heading: str) -> str:
    """The markup between ``<h3>heading</h3>`` and the next heading or details block."""
    start = page.index(f"<h3>{heading}</h3>") + len(f"<h3>{heading}</h3>")
    ends = [index for index in (page.find("<h3>", start), page.find("<details>", start)) if index >= 0]
    return page[start : min(ends)]


def _rows(markup: str) -> list[tuple[str, ...]]:
    """The body rows of the first table in ``markup``, unescaped."""
    rows = re.findall(r"<tr>(.*?)</tr>", markup, flags=re.S)
    cells = [tuple(html.unescape(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)) for row in rows]
    return [row for row in cells if row]


@pytest.mark.parametrize("command", COMMANDS)
def test_output_has_results_and_a_report_with_conventions_and_seeds(outputs, command):
    folder = _folder(outputs, command)
    data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    page = (folder / "report.html").read_text(encoding="utf-8")
    recorded = [(item["name"], item["value"], item["decided"], item["evidence"]) for item in data.get("conventions", [])]
    if recorded:  # the page shows exactly what results.json records
        assert _rows(_section(page, "Conventions")) == recorded
    else:  # a family that decides no convention of the user's model or data: the page must say so
        assert "None recorded for this result." in _section(page, "Conventions")
    seeds = dict(_rows(_section(page, "Seeds")))
    expected = {path: "null (not seeded: not reproducible)" if value is None else str(value) for path, value in _recorded_seeds(data).items()}
    assert seeds == expected, (seeds, expected)
    if command == "bound":  # the seed of the held-out split, top level and in each bound
        assert seeds["seed"] == seeds["bound.seed"] == str(SEED)
    elif command in names():
        assert seeds["config.seed"] == str(SEED)
    if not expected:
        assert "None recorded in the results." in _section(page, "Seeds")


@needs_chromium
def test_every_output_report_renders_in_chromium_with_its_sections(outputs, tmp_path):
    browser = chromium()
    for command, folder in outputs.items():
        dom, stderr = rendered_dom(browser, folder / "report.html")
        assert not CONSOLE.search(stderr), (command, stderr[-2000:])
        text = html.unescape(re.sub(r"<[^>]+>", " ", dom))
        data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        assert "Conventions" in text and "Seeds" in text, command
        for path, value in _recorded_seeds(data).items():
            assert re.search(rf"{re.escape(path)}\s+{re.escape(str(value))}(?!\d)", text), (command, path, value)


def _scores_run(conventions=()):
    from privaudit.audits.scores.audit import audit_scores

    rng = np.random.default_rng(SEED)
    run = audit_scores(rng.normal(1.0, 1.0, 200), rng.normal(0.0, 1.0, 200), delta=1e-5, seed=SEED)
    return dataclasses.replace(run, result=dataclasses.replace(run.result, conventions=tuple(conventions)))


def test_report_shows_each_convention_with_its_value_and_how_it_was_decided(tmp_path):
    conventions = (
        checked("output kind", "probabilities", "rows >= 0 summing to 1 (max |sum - 1| = 2e-07)"),
        explicit("score direction", "lower is member", "--lower-is-member"),
        default("scored span", "<the whole canary>", "every span gives a valid exposure"),
    )
    write_run(tmp_path / "run", _scores_run(conventions), report=True)
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    shown = _rows(_section(page, "Conventions"))
    assert shown == [(c.name, c.value, c.decided, c.evidence) for c in conventions]
    assert "None recorded" not in _section(page, "Conventions") and "&lt;the whole canary&gt;" in page
    # the report command reads them back from results.json the same way
    code, _, stderr = run_cli(["report", tmp_path / "run", "--output", tmp_path / "again.html"])
    assert code == 0, stderr
    assert _rows(_section((tmp_path / "again.html").read_text(encoding="utf-8"), "Conventions")) == shown


@needs_chromium
def test_conventions_render_in_chromium(tmp_path):
    conventions = (checked("label column", "y", "the only integer column"), explicit("special tokens", "bos only", "--special-tokens"))
    write_run(tmp_path / "run", _scores_run(conventions), report=True)
    dom, _ = rendered_dom(chromium(), tmp_path / "run" / "report.html")
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", dom)).split())
    for convention in conventions:
        assert f"{convention.name} {convention.value} {convention.decided} {convention.evidence}" in text


def test_report_of_damaged_conventions_is_refused_naming_the_field(tmp_path):
    write_run(tmp_path / "run", _scores_run(), report=False)
    results = tmp_path / "run" / "results.json"
    data = json.loads(results.read_text(encoding="utf-8"))
    data["conventions"] = [{"name": "label column", "value": "y", "decided": "guessed", "evidence": ""}]
    results.write_text(json.dumps(data), encoding="utf-8")
    assert_refused(["report", tmp_path / "run", "--output", tmp_path / "report.html"], tmp_path / "report.html", "conventions")
