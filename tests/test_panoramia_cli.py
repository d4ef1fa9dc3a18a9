"""`privaudit audit panoramia`: the embedded demo and a user's model write results.json and plots; bad input → exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from cli_helpers import run_cli as run

from privaudit.models.classifiers import build_classifier

TINY_DEMO = {
    "targets": {"few": {"epochs": 1}, "more": {"epochs": 3}},
    "helper": {"epochs": 1},
    "hidden": 16,
    "num_candidates": 400,
    "audit_size": 300,
    "classifier_iterations": 20,
}


@pytest.fixture(scope="module")
def user_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("user")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=(700, 3)).astype(np.float32)
    y = (x[:, 0] + rng.integers(0, 2, 700) > 2).astype(np.int64)
    model = build_classifier("mlp", input_dim=3, num_classes=2, hidden=8)
    torch.save(model.state_dict(), folder / "model.pt")
    (folder / "model.json").write_text(json.dumps({"architecture": "mlp", "input_dim": 3, "num_classes": 2, "hidden": 8, "activation": "tanh"}))
    np.savez(folder / "members.npz", x=x[:500], y=y[:500])
    np.savetxt(folder / "non_members.csv", np.column_stack([x[500:], y[500:]]), delimiter=",", header="a,b,c,label", comments="")
    return folder


def test_demo_writes_results_and_plots_reproducibly(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY_DEMO))
    outputs = []
    for name in ("first", "second"):
        code, stdout, stderr = run(["audit", "panoramia", "--config", config, "--output", tmp_path / name, "--seed", 4])
        assert code == 0, stderr
        data = json.loads((tmp_path / name / "results.json").read_text())
        for key in ("versions", "created_at", "machine"):  # all else depends on the seed only
            data.pop(key)
        for target in data["targets"].values():  # wall times, recorded per target
            assert target.pop("timings_s")
        outputs.append(data)
        assert (tmp_path / name / "pr_few.png").stat().st_size > 0
    assert outputs[0] == outputs[1]
    from privaudit.audits.panoramia import PanoramiaResults

    row = PanoramiaResults.from_dict(json.loads((tmp_path / "first" / "results.json").read_text())).summary_rows()[0]
    assert row["generator"] == "mst on fair" and row["c_lb"] >= 0.0
    for key in ("rm_rn_epsilon", "one_run_epsilon", "epsilon_tilde"):
        assert row[key] is not None


def test_user_model_with_non_members(user_files, tmp_path):
    out = tmp_path / "run"
    code, stdout, stderr = run(
        [
            "audit",
            "panoramia",
            "--model",
            user_files / "model.pt",
            "--members",
            user_files / "members.npz",
            "--non-members",
            user_files / "non_members.csv",
            "--label-col",  # the features are whole numbers too: the csv's label column is named, not guessed
            "label",
            "--inclusion-randomised",
            "--audit-size",
            150,
            "--helper-epochs",
            1,
            "--claimed-epsilon",
            "4",
            "--output",
            out,
            "--json",
        ]
    )
    assert code == 0, stderr
    data = json.loads(stdout)
    audit = data["targets"]["model"]["audit"]
    assert audit["bounds"]["num_members"] + audit["bounds"]["num_generated"] == 150
    assert audit["real_non_members"]["kind"] == "lower bound" and audit["one_run"]["num_canaries"] == 700
    # the O(1) bound meets the user's claim, end to end, beside its ceiling: the core bound on a perfect attack of the same 700 canaries
    import numpy as np

    from privaudit.stats.one_run_combined import one_run_lower_bound

    verdict, one_run = data["claim_verdict"], audit["one_run"]
    assert verdict["claim"] == {"epsilon": 4.0, "delta": one_run["delta"], "quantity": "end-to-end", "source": "user"}
    assert verdict["bound"] == one_run["epsilon"] and verdict["flagged"] == (one_run["epsilon"] > 4.0)
    member = np.arange(700) < one_run["num_in"]  # the canaries the coins put in: the exact ceiling counts them
    perfect = one_run_lower_bound(member + np.linspace(0.0, 0.5, 700), member, delta=one_run["delta"], confidence=one_run["confidence"])
    assert data["ceiling"]["value"] == pytest.approx(perfect.epsilon, rel=1e-12)
    assert (out / "pr_model.png").exists()
    # how each file's labels were read lands in results.json: the .npz's by key, the .csv's by --label-col
    assert [(c["name"], c["value"], c["decided"]) for c in data["conventions"]] == [
        ("label column of --members", "array 'y'", "explicit"),
        ("label column of --non-members", "'label' (column 4 of 4)", "explicit"),
    ]


def test_user_model_o1_against_the_claims_family_scores_each_candidate_by_its_own_loss(user_files, tmp_path):
    from privaudit.stats.families import SubsampledGaussianDP
    from privaudit.stats.one_run_combined import one_run_lower_bound

    argv = ["audit", "panoramia", "--model", user_files / "model.pt", "--members", user_files / "members.npz", "--non-members"]
    argv += [user_files / "non_members.csv", "--label-col", "label", "--inclusion-randomised", "--audit-size", 150, "--helper-epochs", 1]
    family = ["--family", "subsampled-gaussian", "--family-claim", "1", "--family-sampling-rate", "0.5", "--claimed-epsilon", "4"]
    code, stdout, stderr = run([*argv, *family, "--output", tmp_path / "run", "--json"])
    assert code == 0, stderr
    data = json.loads(stdout)
    block = data["family_test"]
    # the candidates are the members (coin in) then the non-members (coin out), each scored by -cross-entropy of the saved model, recomputed here
    model = build_classifier("mlp", input_dim=3, num_classes=2, hidden=8)
    model.load_state_dict(torch.load(user_files / "model.pt"))
    members, rows = np.load(user_files / "members.npz"), np.loadtxt(user_files / "non_members.csv", delimiter=",", skiprows=1)
    x, y = np.r_[members["x"], rows[:, :3]], np.r_[members["y"], rows[:, 3]].astype(np.int64)
    with torch.no_grad():
        logits = model(torch.as_tensor(x, dtype=torch.float32)).double().numpy()
    own = logits[np.arange(700), y] - np.log(np.exp(logits).sum(1))
    scores, member = np.array(block["scores"]), np.array(block["member"], dtype=bool)
    assert np.array_equal(member, np.arange(700) < 500)
    np.testing.assert_allclose(scores, own, rtol=1e-5, atol=1e-6)  # float32 forward pass
    null = SubsampledGaussianDP(0.5, 1e-5)
    expected = one_run_lower_bound(scores, member, delta=1e-5, confidence=0.95, null=null, claim=1.0)
    assert block["bound"]["epsilon"] == expected.epsilon and block["refuted"] == expected.refuted and block["ceiling"] == expected.ceiling
    # like for like: the family bound against σ = 1 in its family, the user's ε = 4 against the generic O(1) bound beside it
    one_run = data["targets"]["model"]["audit"]["one_run"]
    assert data["claim_verdict"]["claim"]["epsilon"] == null.epsilon(1.0) and data["claim_verdict"]["bound"] == expected.epsilon
    assert block["generic_verdict"]["claim"]["epsilon"] == 4.0 and block["generic_verdict"]["bound"] == one_run["epsilon"] == block["generic_epsilon"]
    assert "transmission dominance" in block["validity"]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--model-only"], "`--model` and `--members` must both be given"),
        (["--audit-size", 490], "`--members` must hold at least"),
        (["--generator", "gan"], "`--generator` must be one of"),
        (["--spec", "missing.json"], "`--spec`: cannot read"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_output(user_files, tmp_path, extra, message):
    out = tmp_path / "run"
    files = ["--model", user_files / "model.pt", "--members", user_files / "members.npz"]
    if extra == ["--model-only"]:  # without --members (without both, the embedded default runs)
        files, extra = files[:2], []
    code, stdout, stderr = run(["audit", "panoramia", *files, *extra, "--output", out])
    assert code == 2 and stdout == ""
    assert stderr.startswith("error: ") and message in stderr and stderr.count("\n") == 1
    assert not out.exists()


def test_a_model_of_the_wrong_width_cannot_score(user_files, tmp_path):
    spec = tmp_path / "wide.json"
    spec.write_text(json.dumps({"architecture": "mlp", "input_dim": 5, "num_classes": 2, "hidden": 8, "activation": "tanh"}))
    code, _, stderr = run(
        ["audit", "panoramia", "--model", user_files / "model.pt", "--spec", spec, "--members", user_files / "members.npz", "--output", tmp_path / "run"]
    )
    assert code == 2 and "`--model`: cannot load" in stderr
