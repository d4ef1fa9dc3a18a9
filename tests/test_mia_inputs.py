"""mia's inputs refused before any training: the target's members (by row, id or column), the pool's ids, the membership matrix, the training function."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

from privaudit.audits.mia.training import load_pool

pytest.importorskip("sklearn")
skops_io = pytest.importorskip("skops.io")

NUM_RECORDS = 200


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """A pool CSV with an id column, a 0/1 membership column and the label; a skops target; members listed by id."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng()
    pool = load_pool("digits", None, None)
    x, y = pool.x[:NUM_RECORDS].astype(np.float64), pool.y[:NUM_RECORDS]
    ids = rng.permutation(NUM_RECORDS) + 5000
    members = rng.random(NUM_RECORDS) < 0.3
    folder = tmp_path_factory.mktemp("user")

    def write(name, ids, flags):
        header = ["record", *(["member"] if flags is not None else []), *(f"f{i}" for i in range(x.shape[1])), "digit"]
        lines = [",".join(header)] + [
            ",".join([str(i), *([] if flags is None else [str(int(flags[n]))]), *(f"{v:g}" for v in row), str(label)])
            for n, (i, row, label) in enumerate(zip(ids, x, y, strict=True))
        ]
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

    write("pool.csv", ids, members)
    write("ids.csv", ids, None)
    write("no_members.csv", ids, np.zeros(NUM_RECORDS, dtype=int))
    write("flag_two.csv", ids, np.where(members, 2, 0))
    write("repeated_ids.csv", np.where(np.arange(NUM_RECORDS) == 7, ids[3], ids), members)
    skops_io.dump(LogisticRegression(max_iter=200).fit(x[members], y[members]), folder / "target.skops")
    (folder / "members.txt").write_text("\n".join(map(str, ids[members])) + "\n", encoding="utf-8")
    (folder / "unknown_id.txt").write_text(f"{ids[members][0]}\n{ids.max() + 1}\n", encoding="utf-8")
    (folder / "empty.txt").write_text("", encoding="utf-8")
    (folder / "refs").mkdir()
    for index in range(4):
        (folder / "refs" / f"ref-{index}.skops").write_bytes(b"never loaded: the matrix is refused first")
    balanced = np.argsort(rng.random((NUM_RECORDS, 4)), axis=1).T < 2
    np.save(folder / "three_rows.npy", balanced[:3])
    np.save(folder / "fractions.npy", balanced * 0.5)
    return folder, ids, members


def _argv(folder, *flags, data="pool.csv"):
    return ["audit", "mia", "--data", folder / data, "--label-col", "digit", *flags]


@pytest.mark.parametrize(
    ("data", "flags", "match"),
    [
        # ids the pool does not have, or none at all
        ("ids.csv", ["--id-col", "record", "--members", "unknown_id.txt"], "`--members` must list ids of the pool's column `--id-col` 'record', got 1 id(s)"),
        ("ids.csv", ["--id-col", "record", "--members", "empty.txt"], "`--members` must hold at least 1 value(s), got 0"),
        ("ids.csv", ["--members", "members.txt"], "`--members` must hold row indices of the pool's records, integers in [0, 199]"),  # ids read as rows
        ("no_members.csv", ["--id-col", "record", "--members-col", "member"], "must leave at least 5 members"),
        ("flag_two.csv", ["--id-col", "record", "--members-col", "member"], "`--members-col` 'member' must hold 1 (member of the target) or 0"),
        ("pool.csv", ["--id-col", "record", "--members-col", "in_target"], "`--data` must have one column named 'in_target'"),
        ("repeated_ids.csv", ["--id-col", "record", "--members-col", "member"], "`--id-col` 'record' must name a column of unique ids, got 1 repeated id(s)"),
        ("pool.csv", ["--members", "members.txt", "--members-col", "member"], "`--model` and `--members` go together"),
    ],
)
def test_target_members_not_in_the_pool_are_refused(user, tmp_path, data, flags, match):
    folder, *_ = user
    flags = [str(folder / flag) if flag.endswith(".txt") else flag for flag in flags]
    output = tmp_path / "out"
    assert_refused([*_argv(folder, "--model", folder / "target.skops", *flags, data=data), "--output", output, "--no-history"], output, match)


def test_id_column_needs_the_users_pool(tmp_path):
    output = tmp_path / "out"
    assert_refused(["audit", "mia", "--id-col", "record", "--output", output, "--no-history"], output, "need `--data`")


@pytest.mark.parametrize(
    ("matrix", "match"),
    [
        ("three_rows.npy", "`--reference-membership` must have shape (references, records) = (4, 200), got (3, 200)"),
        ("fractions.npy", "`--reference-membership` must be booleans (or integers 0/1), got dtype float64"),
    ],
)
def test_membership_matrix_of_the_wrong_shape_or_values_is_refused(user, tmp_path, matrix, match):
    folder, *_ = user
    flags = ["--id-col", "record", "--model", folder / "target.skops", "--members", folder / "members.txt"]
    flags += ["--reference-models", folder / "refs", "--reference-membership", folder / matrix]
    output = tmp_path / "out"
    assert_refused([*_argv(folder, *flags, data="ids.csv"), "--output", output, "--no-history"], output, match)


_TRAINERS = {
    "returns_none": "return None",
    "returns_object": "return object()",
    "returns_predict_only": "return type('HardLabels', (), {'predict': lambda self, x: np.zeros(len(x), int)})()",
}


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("returns_none", "returned None: it must return the trained model"),
        ("returns_object", "must be a torch.nn.Module, an object with predict_proba or a predict_proba function, got object"),
        ("returns_predict_only", "must be a torch.nn.Module, an object with predict_proba or a predict_proba function, got HardLabels"),
    ],
)
def test_training_function_without_a_model_is_refused_after_one_probe_call(user, tmp_path, monkeypatch, body, match):
    folder, *_ = user
    module = f"probe_{uuid.uuid4().hex}"
    calls = tmp_path / "calls.txt"
    source = (
        "import numpy as np\n\n\ndef fn(x_train, y_train, *, seed):\n"
        f"    with open({str(calls)!r}, 'a') as log:\n"
        "        log.write(f'{len(y_train)} {np.bincount(y_train).max()}\\n')\n"
        f"    {_TRAINERS[body]}\n"
    )
    (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    output = tmp_path / "out"
    line = assert_refused([*_argv(folder, "--train", f"{module}:fn", "--id-col", "record"), "--output", output, "--no-history"], output, match)
    # the message says the check was a probe before the audit; one call only, on at most 4 records per class of the pool's 10
    assert "before the audit" in line and f"`--train` '{module}:fn'" in line
    (count, per_class), *rest = [tuple(map(int, text.split())) for text in calls.read_text(encoding="utf-8").splitlines()]
    assert rest == [] and per_class <= 4 and count <= 40 and f"checked on {count} records" in line


@pytest.mark.parametrize(
    ("train", "match"),
    [
        ("own_models.relu_net:no_such_function", "`--train`"),
        ("no_such_package.module:fn", "`--train`"),
        ("not an import path", "`--train` must be 'package.module:callable'"),
    ],
)
def test_training_function_that_does_not_import_is_refused(user, tmp_path, train, match):
    folder, *_ = user
    output = tmp_path / "out"
    assert_refused([*_argv(folder, "--train", train, "--id-col", "record"), "--output", output, "--no-history"], output, match)


def test_users_model_pool_members_column_and_training_function_in_one_command(user, tmp_path, monkeypatch):
    """--model m.skops --data pool.csv --members-col --train mod:fn --output DIR: results.json and report.html, the LOSS attack as scikit-learn computes it."""
    from sklearn.metrics import roc_auc_score

    folder, ids, members = user
    module = f"own_training_{uuid.uuid4().hex}"
    (tmp_path / f"{module}.py").write_text(
        "from sklearn.naive_bayes import GaussianNB\n\n\ndef fn(x_train, y_train, *, seed):\n"
        "    return GaussianNB(var_smoothing=1e-2).fit(x_train, y_train)  # deterministic: the seed has nothing to draw\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    output = tmp_path / "out"
    argv = _argv(folder, "--id-col", "record", "--members-col", "member", "--model", folder / "target.skops", "--train", f"{module}:fn")
    code, _, stderr = run_cli([*argv, "--references", "4", "--output", output, "--no-history", "--workers", "1"])
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text(encoding="utf-8"))
    assert (output / "report.html").is_file() and (output / "roc.png").is_file()
    assert data["num_trained"] == 4 and data["num_members"] == int(members.sum())  # the references only: the target is the user's
    conventions = {item["name"]: item for item in data["conventions"]}
    assert conventions["target membership"]["value"] == "column 'member' of --data, 1 = member"
    assert conventions["target output kind"]["value"] == "probabilities" and conventions["output kind"]["decided"] == "checked"
    # LOSS scores each record by the target's log-probability of its label: recomputed from the skops file with scikit-learn
    model = skops_io.load(folder / "target.skops", trusted=skops_io.get_untrusted_types(file=folder / "target.skops"))
    pool = load_pool("digits", None, None)
    x, y = pool.x[:NUM_RECORDS].astype(np.float64), pool.y[:NUM_RECORDS]
    log_p = np.log(np.maximum(model.predict_proba(x)[np.arange(NUM_RECORDS), y], 1e-300))
    loss = next(item for item in data["attacks"] if item["attack"] == "loss")
    assert loss["auc"] == pytest.approx(roc_auc_score(members, log_p), abs=1e-9)  # every record: the population samples are non-members too
    assert {int(record["record_id"]) for record in data["most_vulnerable"]} <= set(ids.tolist())
    assert all(ids[record["record"]] == int(record["record_id"]) for record in data["most_vulnerable"])
