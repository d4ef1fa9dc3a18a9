"""The package's layers: imports flow one way, and no module imports another package's private names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "privaudit"
# lower layers first; a module may import its own layer and the ones before it
LAYERS = [
    {"_core"},
    {"stats"},
    {"canaries", "models", "generators", "data", "extraction"},
    {"training", "observation", "integrations", "runner", "mechanisms"},
    {"audits", "testing"},
    {"report", "history", "schemas", "demo_quick", "demo_full"},
    {"cli", "__main__", "__init__"},
]
RANK = {name: index for index, layer in enumerate(LAYERS) for name in layer}


def _imports(path: Path):
    """(line, imported module path within privaudit, imported names) of every privaudit import in ``path``."""
    package = list(path.relative_to(SOURCE.parent).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else [])) if node.level else (node.module or "")
            if module.startswith("privaudit"):
                yield node.lineno, module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("privaudit."):
                    yield node.lineno, alias.name, []


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


MODULES = sorted(SOURCE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SOURCE)))
def test_imports_flow_down_the_layers_and_never_reach_private_names(path):
    own = _top("privaudit." + ".".join(path.relative_to(SOURCE).with_suffix("").parts))
    assert own in RANK, f"{own} is in no layer"
    for line, module, names in _imports(path):
        target = _top(module)
        if own != "__init__":  # the package root re-exports lazily, from every layer
            assert RANK[target] <= RANK[own], f"{path.name}:{line} imports {module} from a higher layer"
        parts = module.split(".")
        same_package = parts[: len(parts) - 1] == ["privaudit", *path.relative_to(SOURCE).parts[:-1]] or module.rsplit(".", 1)[0] == ".".join(
            ["privaudit", *path.relative_to(SOURCE).parts[:-1]]
        )
        private = [part for part in parts[1:] if part.startswith("_") and part != "_core" and not part.startswith("__")]
        private += [name for name in names if name.startswith("_") and not name.startswith("__")]
        if own != "_core" and not same_package:
            assert not private, f"{path.name}:{line} imports private {private} from {module}"


def test_the_check_can_fail():
    # an upward import and a private import, as the test reads them
    assert RANK["cli"] > RANK["stats"]
    assert [part for part in "privaudit.models._torch".split(".")[1:] if part.startswith("_") and part != "_core"] == ["_torch"]
