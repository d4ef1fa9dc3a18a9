"""`privaudit report` embeds nothing from outside a run folder: only real PNG files (by their signature), never a symlink, an absolute or a `..` path.

Also a property test: `report` on randomly mutated results.json files either
works or exits 2 with one "error: ..." line; no traceback escapes.
"""

from __future__ import annotations

import base64
import json
import os
import socket
from pathlib import Path

import pytest

from privaudit.report.html import (
    MAX_PLOT_BYTES,
    PNG_SIGNATURE,
    ReportSection,
    embeddable_png,
    plots_in,
    render_report,
)
from privaudit.schemas import stamp_results

SECRET = b"root:x:0:0:secret-line-that-must-not-leak\n"


def png(path: Path, tail: bytes = b"IHDR-fake-image-data") -> bytes:
    data = PNG_SIGNATURE + tail
    path.write_bytes(data)
    return data


def section(plots) -> ReportSection:
    return ReportSection(title="t", audit="x", value=1.0, label="l", kind="statistic", meaning="", not_meaning="", threat_model="", plots=tuple(plots))


def embedded(page: str) -> list[bytes]:
    """The decoded bytes of every data: image of the page, found independently of the renderer's code."""
    marker = 'src="data:image/png;base64,'
    chunks = page.split(marker)[1:]
    return [base64.b64decode(chunk.split('"', 1)[0]) for chunk in chunks]


@pytest.fixture()
def layout(tmp_path):
    """A run folder with one good plot, and outside it a secret text file and a secret PNG."""
    run = tmp_path / "run"
    run.mkdir()
    good = png(run / "good.png", b"inside")
    (tmp_path / "passwd").write_bytes(SECRET)
    secret_png = png(tmp_path / "secret.png", b"outside-the-run-folder")
    return run, good, secret_png


def test_embeddable_png_accepts_only_regular_png_files_inside_the_run(layout, tmp_path):
    run, _, _ = layout
    (run / "sub").mkdir()
    png(run / "sub" / "nested.png")
    (run / "text.png").write_text("not an image")
    (run / "short.png").write_bytes(PNG_SIGNATURE[:7])
    (run / "folder.png").mkdir()
    os.symlink(tmp_path / "secret.png", run / "link.png")
    os.symlink(tmp_path, run / "outside")  # a symlinked folder inside the run
    os.symlink(run / "good.png", run / "inner-link.png")  # even a link to a file inside is refused
    os.mkfifo(run / "fifo.png")  # opening it must not block
    assert embeddable_png(run, "good.png") == run / "good.png"
    assert embeddable_png(run, Path("sub") / "nested.png") == run / "sub" / "nested.png"
    refused = [
        "text.png",
        "short.png",
        "folder.png",
        "link.png",
        "outside/secret.png",
        "inner-link.png",
        "fifo.png",
        "missing.png",
        "../secret.png",
        "sub/../../secret.png",
        str(tmp_path / "secret.png"),
        "/etc/passwd",
        "",
        ".",
    ]
    assert {name: embeddable_png(run, name) for name in refused} == {name: None for name in refused}
    assert embeddable_png(run, 5) is None and embeddable_png(None, "good.png") is None
    assert embeddable_png(tmp_path / "missing-run", "good.png") is None


def test_embeddable_png_refuses_a_socket_and_a_file_over_the_size_limit(layout, monkeypatch):
    run, _, _ = layout
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(run / "s.png"))
        assert embeddable_png(run, "s.png") is None
    finally:
        server.close()
    png(run / "big.png", b"x" * 100)
    monkeypatch.setattr("privaudit.report.html.MAX_PLOT_BYTES", 50)
    assert embeddable_png(run, "big.png") is None and embeddable_png(run, "good.png") is not None
    assert MAX_PLOT_BYTES >= 2**20  # real plots (a few hundred kB) fit


def test_plots_in_keeps_only_embeddable_names(layout):
    run, _, _ = layout
    captions = {"good.png": "Good", "../secret.png": "Up", "/etc/passwd": "Abs", 3: "Number", "missing.png": "Gone"}
    assert plots_in(run, captions) == (("Good", run / "good.png"),)
    assert plots_in(None, captions) == () and plots_in(run, ["good.png"]) == ()


def test_render_refuses_non_png_symlink_and_dotdot_paths_given_directly(layout, tmp_path):
    run, good, secret_png = layout
    os.symlink(tmp_path / "secret.png", run / "link.png")
    page = render_report([section([("a", tmp_path / "passwd"), ("b", run / "link.png"), ("c", run / ".." / "secret.png"), ("d", run / "good.png")])])
    assert embedded(page) == [good]
    assert base64.b64encode(SECRET).decode() not in page and base64.b64encode(secret_png).decode() not in page


def _run_with_results(folder: Path, data: dict) -> Path:
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(data))
    return folder


def _panoramia(figures: dict) -> dict:
    return stamp_results(
        {"result_type": "PanoramiaResults", "versions": {}, "summary": [], "targets": {name: {"figure": figure} for name, figure in figures.items()}},
        audit="panoramia",
    )


def _report(cli, tmp_path, runs) -> tuple[int, str, str, str]:
    out = tmp_path / "report.html"
    code, stdout, stderr = cli(["report", *runs, "--output", out])
    return code, stdout, stderr, out.read_text(encoding="utf-8") if out.exists() else ""


def test_report_command_does_not_embed_etc_passwd_dotdot_or_symlinks(cli, tmp_path, layout):
    _, _, secret_png = layout
    (tmp_path / "sub").mkdir()
    dotdot = png(tmp_path / "sub" / "dotdot.png", b"reached-through-dotdot")
    pano = _run_with_results(
        tmp_path / "pano",
        _panoramia({"a": "/etc/passwd", "b": str(tmp_path / "passwd"), "c": "../secret.png", "d": "../sub/dotdot.png", "e": "../../" * 30 + "etc/passwd"}),
    )
    generic = _run_with_results(tmp_path / "generic", stamp_results({"result_type": "R", "versions": {}}, audit="x"))
    os.symlink(tmp_path / "secret.png", generic / "leak.png")
    os.symlink(tmp_path / "passwd", generic / "passwd.png")
    png(generic / "own.png", b"the-generic-run's-own-plot")
    code, _, stderr, page = _report(cli, tmp_path, [pano, generic])
    assert code == 0, stderr
    images = embedded(page)
    assert images == [(generic / "own.png").read_bytes()]
    for secret in (SECRET, secret_png, dotdot, Path("/etc/passwd").read_bytes() if Path("/etc/passwd").is_file() else SECRET):
        assert secret not in images and base64.b64encode(secret).decode() not in page


def test_report_command_does_not_embed_a_real_png_given_by_absolute_path(cli, tmp_path, layout):
    _, good, _ = layout
    pano = _run_with_results(tmp_path / "pano", _panoramia({"a": str(tmp_path / "secret.png"), "b": "good.png"}))
    png(pano / "good.png", b"inside")
    code, _, stderr, page = _report(cli, tmp_path, [pano])
    assert code == 0, stderr
    assert embedded(page) == [good]


def test_report_command_does_not_follow_a_symlinked_folder_inside_the_run(cli, tmp_path, layout):  # layout: the secret files outside the run folder
    pano = _run_with_results(tmp_path / "pano", _panoramia({"a": "elsewhere/secret.png"}))
    os.symlink(tmp_path, pano / "elsewhere")
    code, _, stderr, page = _report(cli, tmp_path, [pano])
    assert code == 0, stderr
    assert embedded(page) == []


# --- property test: mutated results.json files --------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

BASES = [
    stamp_results(
        {
            "result_type": "BlackBoxResult",
            "versions": {},
            "epsilon_lower_bound": 1.2,
            "confidence": 0.95,
            "bound": {"kind": "lower bound", "valid": True},
            "num_in": 5,
            "num_out": 5,
            "config": {"dataset": "digits", "seed": 1},
        },
        audit="blackbox",
    ),
    stamp_results(
        {
            "result_type": "DPSGDAuditResult",
            "versions": {},
            "step_bounds": {"gdp_clopper_pearson": {"epsilon": 0.5, "kind": "lower bound", "confidence": 0.95}},
            "claimed_step_epsilon": 1.0,
            "flagged": False,
            "end_to_end": {"epsilon": 2.0},
            "config": {"bug": "none"},
        },
        audit="dpsgd",
    ),
    _panoramia({"t": "pr_t.png"}),
    stamp_results({"result_type": "R", "versions": {}, "epsilon": 0.3, "kind": "estimate"}, audit="other"),
]
JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))
JSON_VALUES = st.recursive(
    JSON_LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=8
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _mutate(data: dict, choice: int, replacement):
    data = json.loads(json.dumps(data))
    paths = [path for path in _paths(data) if path]
    path = paths[choice % len(paths)]
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = replacement
    return data


def _report_line(cli, folder: Path, data) -> None:
    import shutil

    if folder.exists():
        shutil.rmtree(folder)
    run = _run_with_results(folder, data) if isinstance(data, dict) else folder
    if not isinstance(data, dict):
        folder.mkdir()
        (folder / "results.json").write_text(json.dumps(data))
    out = folder.parent / f"{folder.name}.html"
    code, stdout, stderr = cli(["report", run, "--output", out])  # cli() re-raises any exception: a traceback fails the test
    if code == 0:
        assert out.is_file() and stderr == ""
    else:
        assert code == 2 and stdout == "" and not out.exists(), (code, stderr)
        lines = stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), stderr


@settings(max_examples=60, deadline=None, derandomize=True, phases=(Phase.generate,), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(range(len(BASES))), choice=st.integers(0, 10**6), replacement=JSON_VALUES)
def test_report_on_mutated_results_works_or_exits_2_with_one_line(cli, tmp_path_factory, base, choice, replacement):
    _report_line(cli, tmp_path_factory.mktemp("mutated") / "run", _mutate(BASES[base], choice, replacement))


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    provenance=st.fixed_dictionaries({"configuration": JSON_VALUES, "seeds": JSON_VALUES, "versions": JSON_VALUES, "machine": JSON_VALUES}),
    value=st.one_of(st.none(), st.floats()),
    plots=st.lists(st.tuples(st.text(max_size=10), st.text(max_size=30)), max_size=3),
)
def test_render_report_never_raises_on_provenance_of_any_json_type(provenance, value, plots):
    page = render_report(
        [
            ReportSection(
                title="t", audit="x", value=value, label="l", kind="estimate", meaning="", not_meaning="", threat_model="", plots=tuple(plots), **provenance
            )
        ]
    )
    assert page.startswith("<!DOCTYPE html>") and embedded(page) == []


@pytest.mark.parametrize("field", ["versions", "machine"])
@pytest.mark.parametrize("value", [True, 3, "text", [1, 2]])
def test_report_command_renders_provenance_that_is_not_an_object(cli, tmp_path, field, value):
    data = stamp_results({"result_type": "R", "versions": {}, "epsilon": 0.3}, audit="other")
    data[field] = value
    run = _run_with_results(tmp_path / "run", data)
    code, _, stderr, page = _report(cli, tmp_path, [run])
    assert code == 0, stderr
    assert "(not a mapping)" in page
