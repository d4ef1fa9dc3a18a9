"""One rule for the claim in every family and adapter: it is the user's; what the audited object states of itself is evidence, named in a warning.

Walks every adapter that carries a ``claim`` attribute (the DP libraries' and
dpmm's), both families that audit such an object (``mechanism``,
``synthetic-data``) and ``assert_mechanism_dp``, and, over the whole source,
every place a verdict's claim is made or a ``claim`` attribute is read.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import ClassVar

import mechanisms_reference
import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli
from libraries import library_available

import privaudit
from privaudit.audits.mechanism.audit import audit_mechanism
from privaudit.audits.synthetic_data import dpmm_generators
from privaudit.audits.synthetic_data.audit import AUDIT as SYNTHETIC
from privaudit.audits.synthetic_data.generators import gaussian_copula
from privaudit.audits.synthetic_data.types import SyntheticDataConfig
from privaudit.testing import assert_mechanism_dp

SOURCE = Path(privaudit.__file__).parent
DATASET = np.linspace(0.0, 1.0, 10)
NEIGHBOUR = np.append(DATASET, 1.0)


def _library_adapters():
    from privaudit.integrations import dp_libraries as lib

    return [
        pytest.param(lambda: lib.opendp_laplace_sum(scale=2.0), "opendp.prelude", id="opendp-laplace"),
        pytest.param(lambda: lib.pydp_laplace_sum(epsilon=0.5), "pydp", id="python-dp-laplace"),
        pytest.param(lambda: lib.diffprivlib_laplace_sum(epsilon=0.5), "diffprivlib.mechanisms", id="diffprivlib-laplace"),
        pytest.param(lambda: lib.diffprivlib_gaussian_sum(epsilon=0.5, delta=1e-5), "diffprivlib.mechanisms", id="diffprivlib-gaussian"),
        pytest.param(lambda: lib.diffprivlib_mean(epsilon=0.5), "diffprivlib.tools", id="diffprivlib-mean"),
    ]


@pytest.mark.parametrize(("make", "module"), _library_adapters())
def test_a_library_adapters_own_claim_is_never_the_yardstick(make, module):
    """Without the user's epsilon, the audit and the assertion refuse, naming the adapter's stated (ε, δ) and the argument that would test it."""
    if not library_available(module):
        pytest.skip(f"{module} does not import here")
    mechanism = make()
    stated = f"ε = {mechanism.claim['epsilon']:g}, δ = {mechanism.claim['delta']:g}"
    with pytest.raises(ValueError, match="`epsilon` or `rho` must be given") as refused:
        audit_mechanism(mechanism, DATASET, NEIGHBOUR)
    assert stated in str(refused.value)
    with pytest.raises(ValueError, match="`epsilon` or `rho` must be given") as asserted:
        assert_mechanism_dp(mechanism, DATASET, NEIGHBOUR)
    assert stated in str(asserted.value) and f"epsilon={mechanism.claim['epsilon']:g}" in str(asserted.value)


def test_assert_mechanism_dp_without_epsilon_names_the_argument_and_the_stated_claim():
    with pytest.raises(ValueError) as refused:
        assert_mechanism_dp(mechanisms_reference.cli_laplace, DATASET, NEIGHBOUR)
    message = str(refused.value)
    assert message.startswith("`epsilon` or `rho` must be given") and "states ε = 1, δ = 0" in message and "epsilon=1, delta=0" in message
    with pytest.raises(ValueError, match=r"`epsilon` or `rho` must be given \(the claim under test is yours\), got neither"):
        assert_mechanism_dp(mechanisms_reference.cli_laplace_half, DATASET, NEIGHBOUR)


def test_the_mechanism_audit_holds_the_users_claim_and_names_the_stated_one(tmp_path):
    """The reference states ε = 1; the user claims 4: the verdict's claim is 4, from the user, and the stated 1 is a warning on the console and in results.json."""
    np.save(tmp_path / "d.npy", DATASET)
    np.save(tmp_path / "n.npy", NEIGHBOUR)
    files = ["--dataset", tmp_path / "d.npy", "--neighbour", tmp_path / "n.npy", "--samples", "500", "--pilot-samples", "200", "--no-history"]
    argv = ["audit", "mechanism", "--mechanism", "mechanisms_reference:cli_laplace", *files]
    code, stdout, stderr = run_cli([*argv, "--epsilon", "4", "--delta", "0", "--output", tmp_path / "out"])
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert code == 0, stderr
    assert data["claim_verdict"]["claim"] == {"epsilon": 4.0, "delta": 0.0, "quantity": "per-release", "source": "user"}
    (warning,) = [w for w in data["sanity_warnings"] if "states" in w]
    assert "states ε = 1, δ = 0 in its own `claim` attribute" in warning and "yours, ε = 4, δ = 0" in warning
    assert "states ε = 1, δ = 0" in stdout
    assert_refused([*argv, "--output", tmp_path / "none"], tmp_path / "none", "`--epsilon` or `--rho` must be given")


class _CopulaAs(dpmm_generators.DpmmGenerator):
    """A dpmm adapter (its own ``claim`` property) whose release is the built-in copula: the audit's claim handling without dpmm installed."""

    def __call__(self, train_df, *, seed, n):
        return gaussian_copula(train_df, seed=seed, n=n)


DPMM = {name: getattr(dpmm_generators, name) for name in dpmm_generators.__all__ if isinstance(getattr(dpmm_generators, name), dpmm_generators.DpmmGenerator)}
COPULAS = {name: _CopulaAs(g.model, g.epsilon, g.delta) for name, g in DPMM.items()}
globals().update({f"copula_as_{name}": generator for name, generator in COPULAS.items()})


def test_every_dpmm_adapter_states_a_claim_the_synthetic_data_audit_never_uses():
    assert set(DPMM) >= {"mst_epsilon_1", "aim_epsilon_4", "privbayes_epsilon_1", "mst_without_noise"}
    for name, generator in sorted(COPULAS.items())[:2] + [("mst_without_noise", COPULAS["mst_without_noise"])]:
        config = SyntheticDataConfig(generator=f"test_claim_source:copula_as_{name}", num_shadows=0, num_canaries=20, seed=0)
        unclaimed = SYNTHETIC.run(config).result
        assert unclaimed.bound is not None and unclaimed.bound.verdict is None and unclaimed.claim_verdict is None, name
        (note,) = [w for w in unclaimed.sanity_warnings if "states" in w]
        assert f"--claimed-epsilon {generator.epsilon:g} --claimed-delta {generator.delta:g}" in note
    claimed = SYNTHETIC.run(dataclasses.replace(config, claimed_epsilon=2.0, claimed_delta=1e-5)).result
    assert claimed.bound.verdict.claim.epsilon == 2.0 and claimed.bound.verdict.claim.source == "user"


ALLOWED_SOURCES = {"USER", "OWN_ACCOUNTANT", "CONVERTED", "claim.source"}


def _calls(tree: ast.AST):
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def test_no_verdict_claim_anywhere_has_a_source_other_than_the_users_and_no_code_reads_a_claim_attribute_but_the_evidence_helper():
    """Every ``Claim(..., source=...)`` in the source is the user's, derived from it, or privaudit's accountant for training it ran itself;
    ``getattr(obj, "claim")`` appears only in :mod:`privaudit._core.stated_claims`, whose readings are evidence."""
    readers, sources = [], []
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for call in _calls(tree):
            if isinstance(call.func, ast.Name) and call.func.id == "getattr" and len(call.args) >= 2:
                if isinstance(call.args[1], ast.Constant) and call.args[1].value == "claim":
                    readers.append(path.relative_to(SOURCE).as_posix())
            name = call.func.id if isinstance(call.func, ast.Name) else call.func.attr if isinstance(call.func, ast.Attribute) else ""
            if name in {"Claim", "VerdictClaim"}:
                for keyword in call.keywords:
                    if keyword.arg == "source":
                        sources.append((path.relative_to(SOURCE).as_posix(), ast.unparse(keyword.value)))
    assert readers == ["_core/stated_claims.py"], readers
    assert sources and all(source in ALLOWED_SOURCES for _, source in sources), sources


class _CountedCopulaAs(_CopulaAs):
    calls: ClassVar[list[int]] = []

    def __call__(self, train_df, *, seed, n):
        type(self).calls.append(len(train_df))
        return super().__call__(train_df, seed=seed, n=n)


counted_mst = _CountedCopulaAs("mst", 1.0)


def test_a_dpmm_adapter_is_not_probed_its_fit_costs_the_domain_not_the_rows():
    """The release is the only call (no 50-row probe first), and the contract convention says why."""
    _CountedCopulaAs.calls.clear()
    result = SYNTHETIC.run(SyntheticDataConfig(generator="test_claim_source:counted_mst", num_shadows=0, seed=0)).result
    assert _CountedCopulaAs.calls == [result.num_train]
    (contract,) = [c for c in result.conventions if c.name == "generator contract"]
    assert "no probe: privaudit's dpmm adapter" in contract.evidence
