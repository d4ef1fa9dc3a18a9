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
    {"report", "history", "history_ids", "schemas", "demo_quick", "demo_full"},
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


# -- import cycles ----------------------------------------------------------------------
def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(tree: ast.Module):
    """The import statements that run when the module is imported: not in a function, not under ``if TYPE_CHECKING``."""
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            pending.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module → the modules of its package ``root`` that it imports at module level (a lazy import in a function does not count)."""
    files = {_module_name(path, root): path for path in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges = graph.setdefault(name, set())
        for node in _top_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) if node.level else node.module or ""
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            edges.update(target for target in targets if target in files and target != name)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_module_level_import_cycle():
    assert import_cycles(import_graph(SOURCE)) == []


def test_the_cycle_check_finds_a_cycle_inside_a_package_and_ignores_lazy_imports(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "a.py").write_text("from .b import f\n")
    (package / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from . import c\n\ndef f():\n    pass\n")
    (package / "sub" / "c.py").write_text("from pkg.sub import a\n\ndef g():\n    from . import b\n")
    graph = import_graph(package)
    assert graph["pkg.sub.a"] == {"pkg.sub.b"} and graph["pkg.sub.b"] == set() and graph["pkg.sub.c"] == {"pkg.sub", "pkg.sub.a"}
    assert import_cycles(graph) == []  # b's imports of c and c's of b are not made at import time
    (package / "sub" / "b.py").write_text("try:\n    from . import c\nexcept ImportError:\n    c = None\n")
    assert import_cycles(import_graph(package)) == [["pkg.sub.a", "pkg.sub.b", "pkg.sub.c"]]
