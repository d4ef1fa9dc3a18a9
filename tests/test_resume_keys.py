"""Resume keys cover everything a stored run is made from: a changed input, setting or piece of the user's code runs again, the rest is reused.

``synthetic-data``'s shadow runs are made from the shadow pool (reference
rows of ``--holdout`` and targets of ``--train`` and ``--holdout``), the
reference fraction and the generator's code, the module it imports
included. Each case below changes one of them between two runs into the
same checkpoints and counts the shadow generations that ran in the workers
(the generator logs each one) against what the result says was reused. The
pool the new runs read is checked against the new tables, row by row.
``mia``: editing a module that the ``--train`` module imports retrains
every model, and the console says which module changed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import privaudit

pd = pytest.importorskip("pandas")
pytest.importorskip("sklearn")
pytest.importorskip("pyarrow")

from privaudit.audits.synthetic_data import AUDIT, SyntheticDataConfig  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SRC = Path(privaudit.__file__).resolve().parent.parent  # the privaudit under test, for the commands run here
SHADOWS, TARGETS = 4, 2
RUNS = SHADOWS * TARGETS

GENERATOR = """
import multiprocessing, os
from gen_helper import adjust
from privaudit.audits.synthetic_data.generators import gaussian_copula

def generate(train_df, *, seed, n):
    if multiprocessing.current_process().name != "MainProcess":  # a shadow run, in a runner worker
        with open(os.environ["GEN_LOG"], "a", encoding="utf-8") as log:
            log.write("shadow\\n")
    return adjust(gaussian_copula(train_df, seed=seed, n=n))
"""
HELPER = "def adjust(frame):\n    return frame\n"


def _write_table(path: Path, prefix: str, size: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(size, 3))
    rows = [f"{prefix}-{i:03d},{a:.4f},{b:.4f},{c:.4f},{'x' if a > 0 else 'y'}" for i, (a, b, c) in enumerate(x)]
    path.write_text("\n".join(["record,a,b,c,kind", *rows]) + "\n", encoding="utf-8")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """The user's generator (importing a helper module) and tables, importable from ``tmp_path`` by this process and its workers."""
    (tmp_path / "gen.py").write_text(GENERATOR, encoding="utf-8")
    (tmp_path / "gen_helper.py").write_text(HELPER, encoding="utf-8")
    _write_table(tmp_path / "train.csv", "t", 40, seed=0)
    _write_table(tmp_path / "holdout.csv", "h", 40, seed=1)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("GEN_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return tmp_path


def _run(folder: Path, **settings):
    """One audit into ``folder``/runs; (the result, shadow generations run in the workers)."""
    config = SyntheticDataConfig(
        train=str(folder / "train.csv"),
        holdout=str(folder / "holdout.csv"),
        id_col="record",
        generator="gen:generate",
        num_shadows=SHADOWS,
        num_shadow_targets=TARGETS,
        num_canaries=0,
        **settings,
    )
    log = folder / "calls.log"
    result = AUDIT.run(config, checkpoints=folder / "runs", max_workers=1).result
    calls = len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0
    log.unlink(missing_ok=True)
    return result, calls


def _pool_rows(folder: Path) -> set[tuple]:
    """The rows of the one shadow pool the checkpoints keep, as tuples of rounded numbers and the category."""
    (pool,) = (folder / "runs").glob("shadow-pool*.parquet")
    frame = pd.read_parquet(pool)
    return {(round(a, 4), round(b, 4), round(c, 4), kind) for a, b, c, kind in frame[["a", "b", "c", "kind"]].itertuples(index=False)}


def _table_rows(path: Path) -> set[tuple]:
    frame = pd.read_csv(path)
    return {(round(a, 4), round(b, 4), round(c, 4), kind) for a, b, c, kind in frame[["a", "b", "c", "kind"]].itertuples(index=False)}


def test_edited_generator_or_a_module_it_imports_regenerates_every_shadow_and_nothing_else_does(folder):
    first, calls = _run(folder)
    assert calls == RUNS and first.num_trained == RUNS

    with open(folder / "gen_helper.py", "a", encoding="utf-8") as helper:  # the module the generator imports
        helper.write("# the user edited the helper\n")
    edited, calls = _run(folder)
    assert calls == RUNS and edited.num_trained == RUNS
    assert f"ran {RUNS} stored runs again" in edited.resume_note and "'gen_helper'" in edited.resume_note

    (folder / "gen.py").write_text(GENERATOR.replace("return adjust(", "return adjust(  # now edited\n        "), encoding="utf-8")
    edited, calls = _run(folder)
    assert calls == RUNS and edited.num_trained == RUNS and "'gen'" in edited.resume_note and "'gen_helper'" not in edited.resume_note


def test_changed_tables_or_reference_fraction_draw_a_new_shadow_pool_and_regenerate(folder):
    first, calls = _run(folder)
    assert calls == RUNS and first.num_trained == RUNS

    _write_table(folder / "holdout.csv", "h", 40, seed=2)  # --holdout edited in place
    edited, calls = _run(folder)
    assert calls == RUNS and edited.num_trained == RUNS and "the shadow pool" in edited.resume_note
    holdout, train = _table_rows(folder / "holdout.csv"), _table_rows(folder / "train.csv")
    pool = _pool_rows(folder)
    assert pool <= holdout | train and len(pool & holdout) >= edited.num_reference  # the new holdout's reference rows, no old one

    _write_table(folder / "other-train.csv", "t", 40, seed=3)  # --train swapped through a symlink: same path, another table
    (folder / "train.csv").rename(folder / "first-train.csv")
    (folder / "train.csv").symlink_to(folder / "other-train.csv")
    swapped, calls = _run(folder)
    assert calls == RUNS and swapped.num_trained == RUNS and swapped.resume_note.startswith(f"ran {RUNS} stored runs again: the shadow pool")
    targets = _pool_rows(folder) - holdout
    assert targets and targets <= _table_rows(folder / "other-train.csv")  # the member targets come from the new --train

    _write_table(folder / "holdout.csv", "h", 60, seed=2)  # a larger holdout: more reference rows than the old pool holds
    larger, calls = _run(folder)
    assert calls == RUNS and larger.num_trained == RUNS and larger.num_reference == 30

    other, calls = _run(folder, reference_fraction=0.3)
    assert calls == RUNS and other.num_trained == RUNS and other.num_reference == 18
    assert len(list((folder / "runs").glob("shadow-pool*.parquet"))) == 1  # the earlier pools are gone with their runs

    unchanged, calls = _run(folder, reference_fraction=0.3)
    assert calls == 0 and unchanged.num_trained == 0 and unchanged.attack("shadow") == other.attack("shadow")


MIA_HELPER = "C_VALUE = 100.0\n"


def _mia(folder: Path, log: Path) -> tuple[str, dict]:
    argv = [sys.executable, "-m", "privaudit", "audit", "mia", "--data", "dd.csv", "--train", "mytrain:train_logged", "--label-col", "label"]
    argv += ["--references", "4", "--output", "O", "--no-history", "--workers", "1", "--seed", "3"]
    env = dict(os.environ, PYTHONPATH=str(SRC), PRIVAUDIT_TEST_TRAIN_LOG=str(log), OMP_NUM_THREADS="1")
    done = subprocess.run(argv, env=env, cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    calls = [line.split() for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    results = json.loads((folder / "O" / "results.json").read_text(encoding="utf-8"))
    return done.stdout, {"trained": sum(int(rows) > 40 for _, rows in calls), "num_trained": results["num_trained"]}  # the probe left out


def test_mia_retrains_when_a_module_the_train_module_imports_is_edited(tmp_path):
    source = (ROOT / "tests" / "own_models" / "logged_train.py").read_text(encoding="utf-8")
    source = source.replace("import numpy as np\n", "import numpy as np\nfrom mytrain_helper import C_VALUE\n").replace("C=100.0", "C=C_VALUE")
    assert "C=C_VALUE" in source
    (tmp_path / "mytrain.py").write_text(source, encoding="utf-8")
    (tmp_path / "mytrain_helper.py").write_text(MIA_HELPER, encoding="utf-8")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 4))
    y = (x[:, 0] > 0).astype(int)
    (tmp_path / "dd.csv").write_text("a,b,c,d,label\n" + "".join(",".join(f"{v:.5f}" for v in row) + f",{label}\n" for row, label in zip(x, y)))
    log = tmp_path / "train.log"
    models = 5  # 4 references and the target

    _, first = _mia(tmp_path, log)
    assert first == {"trained": models, "num_trained": models}
    (tmp_path / "mytrain_helper.py").write_text("C_VALUE = 0.01  # the user changed the helper\n", encoding="utf-8")
    stdout, edited = _mia(tmp_path, log)
    assert edited == {"trained": models, "num_trained": models}
    line = " ".join(stdout.split())
    assert f"ran {models} stored runs again: the source of 'mytrain_helper' (--train's code) changed" in line
    shutil.rmtree(tmp_path / "O" / "runs")  # (keeps the folder small; the rerun above is what is tested)


def test_the_users_code_is_the_module_and_every_module_of_the_users_tree_it_imports(tmp_path, monkeypatch):
    from privaudit.runner.digests import code_sha256

    files = {
        "app.py": "import json\nimport numpy\nfrom privaudit import stats\nimport pkg.sub\nfrom pkg import other\n",
        "pkg/__init__.py": "from .deep import value\n",
        "pkg/deep.py": "value = 1\n",
        "pkg/sub.py": "def f():\n    import helpers  # an import inside a function counts too\n",
        "pkg/other.py": "from . import deep\n",
        "helpers.py": "X = 1\n",
        "unused.py": "Y = 2\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    key = code_sha256("app:main")
    assert sorted(key) == ["app", "helpers", "pkg", "pkg.deep", "pkg.other", "pkg.sub"]  # by hand: no json, numpy or privaudit, no unused
    (tmp_path / "unused.py").write_text("Y = 3\n", encoding="utf-8")
    assert code_sha256("app:main") == key
    (tmp_path / "helpers.py").write_text("X = 2\n", encoding="utf-8")
    changed = code_sha256("app:main")
    assert [name for name in key if key[name] != changed[name]] == ["helpers"]
    assert code_sha256("privaudit.audits.synthetic_data.generators:gaussian_copula") == {}
