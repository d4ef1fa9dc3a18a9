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
        # a private name is private to its top-level package (``audits``, ``stats``, ...): a family may share one with a sibling family
        same_package = parts[:2] == ["privaudit", *path.relative_to(SOURCE).parts[:1]] and len(path.relative_to(SOURCE).parts) > 1
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


def _imports_made(tree: ast.Module, *, lazy: bool):
    """The import statements of a module: not under ``if TYPE_CHECKING``; those inside functions too when ``lazy``."""
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
        elif lazy or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            pending.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))


def import_graph(root: Path, *, lazy: bool = True) -> dict[str, set[str]]:
    """Module → the modules of its package ``root`` that it imports.

    With ``lazy`` (the default) an import inside a function is an edge too: a
    cycle closed through one is still a cycle, only hidden until the call.
    """
    files = {_module_name(path, root): path for path in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges = graph.setdefault(name, set())
        for node in _imports_made(ast.parse(path.read_text(encoding="utf-8")), lazy=lazy):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) if node.level else node.module or ""
                # a name that is a submodule is an edge to it; any other name, to the module that defines it
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
            for target in (target for target in targets if target in files and target != name):
                # importing a.b.c runs a.b's __init__ first, unless the importer is inside a.b already
                parts = target.split(".")
                edges.add(target)
                edges.update(
                    ancestor
                    for ancestor in (".".join(parts[:i]) for i in range(2, len(parts)))
                    if ancestor in files and not f"{name}.".startswith(f"{ancestor}.") and ancestor != name
                )
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


def test_no_import_cycle_at_module_level_or_through_a_function_level_import():
    assert import_cycles(import_graph(SOURCE, lazy=False)) == []
    assert import_cycles(import_graph(SOURCE)) == []


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path / "pkg"


def test_the_cycle_check_finds_a_cycle_inside_a_package_and_skips_type_checking_imports(tmp_path):
    package = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "",
            "pkg/sub/a.py": "from .b import f\n",
            "pkg/sub/b.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from . import c\n\ndef f():\n    pass\n",
            "pkg/sub/c.py": "from pkg.sub import a\n",
        },
    )
    graph = import_graph(package)
    assert graph["pkg.sub.a"] == {"pkg.sub.b"} and graph["pkg.sub.b"] == set() and graph["pkg.sub.c"] == {"pkg.sub.a"}
    assert import_cycles(graph) == []  # b's import of c is for the type checker only
    (package / "sub" / "b.py").write_text("try:\n    from . import c\nexcept ImportError:\n    c = None\n")
    assert import_cycles(import_graph(package)) == [["pkg.sub.a", "pkg.sub.b", "pkg.sub.c"]]


def test_a_cycle_closed_through_a_function_level_import_fails(tmp_path):
    # the shape of the cycles this check was written for: the entry imports a part at the top, the part imports the entry inside a function
    package = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/fam/__init__.py": "from .audit import AUDIT\n",
            "pkg/fam/audit.py": "from .bounds import run_bound\n\nAUDIT = object()\n",
            "pkg/fam/bounds.py": "def run_bound():\n    from .audit import AUDIT\n\n    return AUDIT\n",
        },
    )
    assert import_cycles(import_graph(package, lazy=False)) == []  # invisible to a module-level check
    assert import_cycles(import_graph(package)) == [["pkg.fam.audit", "pkg.fam.bounds"]]
    (package / "fam" / "bounds.py").write_text("def run_bound():\n    return 'fam'\n")
    assert import_cycles(import_graph(package)) == []


# -- function-level imports -------------------------------------------------------------
# third-party libraries that may stay behind a function-level import: optional extras, or slow to import
HEAVY = {
    "torch",
    "transformers",
    "opacus",
    "ray",
    "onnxruntime",
    "skops",
    "sklearn",
    "pandas",
    "matplotlib",
    "peft",
    "sdv",
    "dpmm",
    "flwr",
    "tokenizers",
    "safetensors",
    "statsmodels",
    "mbi",
    "pyarrow",
    "datasets",
    "jsonschema",
    "tqdm",
    "accelerate",
}


def heavy_modules(root: Path) -> set[str]:
    """The modules of ``root`` whose import pulls in a library of :data:`HEAVY` (through any chain of module-level imports)."""
    graph = import_graph(root, lazy=False)
    files = {_module_name(path, root): path for path in root.rglob("*.py")}
    direct = set()
    for name, path in files.items():
        for node in _imports_made(ast.parse(path.read_text(encoding="utf-8")), lazy=False):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""] if not node.level else []
            if any(module.split(".")[0] in HEAVY for module in modules):
                direct.add(name)
    heavy = set(direct)
    while True:
        more = {name for name, edges in graph.items() if name not in heavy and edges & heavy}
        if not more:
            return heavy
        heavy |= more


def light_function_level_imports(root: Path, under: str) -> list[str]:
    """``file:line module`` of each import inside a function, in the modules under ``under``, of a module of ``root`` that is not heavy."""
    heavy = heavy_modules(root)
    files = {_module_name(path, root): path for path in root.rglob("*.py")}
    found = []
    for name, path in sorted(files.items()):
        if not (name == under or name.startswith(under + ".")):
            continue
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom):
                    base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) if node.level else node.module or ""
                    targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
                elif isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                else:
                    continue
                found += [f"{path.relative_to(root.parent)}:{node.lineno} {target}" for target in targets if target in files and target not in heavy]
    return sorted(set(found))


def test_the_audit_families_import_privaudit_at_the_top_of_the_file():
    # a function-level import of privaudit's own code is kept only where the module pulls in a heavy optional library
    assert light_function_level_imports(SOURCE, "privaudit.audits") == []


def test_the_function_level_import_check_can_fail(tmp_path):
    package = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/light.py": "import math\n",
            "pkg/heavy.py": "import torch\n",
            "pkg/via.py": "from . import heavy\n",
            "pkg/user.py": "def f():\n    from . import light\n    from .via import heavy\n    from .heavy import x\n",
        },
    )
    assert heavy_modules(package) == {"pkg.heavy", "pkg.via"}
    assert light_function_level_imports(package, "pkg") == ["pkg/user.py:2 pkg.light"]
