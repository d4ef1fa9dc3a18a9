"""Where the user's code is found, and which files it is made of.

An import path ``package.module:function`` (``--train``, ``--generator``)
names the user's module. The command line looks for it as Python does, with
one difference: the current directory comes *last* on ``sys.path``, after the
standard library and the installed packages (:func:`directory_last`). A
``pandas.py`` in the working directory therefore never replaces pandas, for
privaudit or for the user's module; ``my_train.py`` there is found because no
installed module has its name. A module of the current directory whose name an
installed module already takes is refused with a clear error
(:func:`check_not_shadowed`), never silently swapped for the installed one.

:func:`user_files` lists the files the user's module is made of: its own
file and, transitively, every module it imports that lies outside the
standard library, the installed packages and privaudit (found by reading
the sources' ``import`` statements, without running them). The runner's
resume key holds their contents, so editing a helper the training function
imports retrains.

>>> import os, sys, tempfile
>>> folder = tempfile.mkdtemp()
>>> _ = open(os.path.join(folder, "mytrain_doc.py"), "w").write("import json\\nimport helpers_doc\\n")
>>> _ = open(os.path.join(folder, "helpers_doc.py"), "w").write("from math import pi\\n")
>>> sys.path.append(folder)
>>> sorted(user_files("mytrain_doc"))
['helpers_doc', 'mytrain_doc']
>>> sys.path.remove(folder)
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import os
import site
import sys
import sysconfig
from pathlib import Path
from typing import Any

__all__ = ["check_not_shadowed", "directory_last", "drop_working_directory", "user_files"]

#: files followed at most from one module (a guard against a huge tree; the key then covers these)
MAX_FILES = 2000


def drop_working_directory() -> None:
    """Take the current directory ('' or its path) off the front of ``sys.path``, where ``python -m`` puts it.

    Only leading entries are taken, so a directory the user put on
    ``PYTHONPATH`` stays.
    """
    here = os.getcwd()
    while sys.path and sys.path[0] in ("", here):
        del sys.path[0]


def directory_last(directory: str | None = None) -> None:
    """Put ``directory`` (the current one by default) at the end of ``sys.path``, and nowhere before it.

    The standard library and the installed packages then come first: a file
    of the directory never shadows one of them.
    """
    directory = directory or os.getcwd()
    sys.path[:] = [entry for entry in sys.path if entry not in ("", directory)] + [directory]


def _module_file(spec: Any) -> Path | None:
    origin = getattr(spec, "origin", None)
    return Path(origin) if origin and os.path.isfile(origin) else None


def check_not_shadowed(module_name: str, option: str, path: str, directory: str | None = None) -> None:
    """ValueError when the current directory holds the top-level module of ``module_name`` but an installed module of that name is found first.

    >>> check_not_shadowed("json", "--train", "json:loads", directory="/nonexistent")
    """
    directory = directory or os.getcwd()
    top = module_name.partition(".")[0]
    local = [candidate for candidate in (Path(directory, top + ".py"), Path(directory, top, "__init__.py")) if candidate.is_file()]
    if not local:
        return
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return
    if spec is None:  # not importable at all: the import says so
        return
    found = _module_file(spec)
    if found is None or found.resolve() != local[0].resolve():
        where = str(found) if found is not None else "a built-in module"
        raise ValueError(
            f"`{option}` {path!r}: {top!r} is found at {where}, not as your {local[0].name!r} in the current directory, "
            "which comes after the installed modules on the search path: rename your module"
        )


def _library_roots() -> tuple[Path, ...]:
    """The standard library, the installed packages' directories and privaudit's own: code that is not the user's."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    roots.update(getattr(site, "getsitepackages", list)())
    user_site = getattr(site, "getusersitepackages", lambda: None)()
    if user_site:
        roots.add(user_site)
    roots.add(str(Path(__file__).resolve().parent.parent))  # privaudit itself
    return tuple(Path(root).resolve() for root in roots if root)


def _is_users(file: Path, roots: tuple[Path, ...]) -> bool:
    resolved = file.resolve()
    return not any(resolved.is_relative_to(root) for root in roots)


def _find(name: str) -> tuple[Path | None, list[str] | None]:
    """(the file, the package's search locations) of the dotted module ``name``, found without importing anything."""
    parts = name.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])  # a top-level name: nothing is imported to find it
    except (ImportError, ValueError):
        return None, None
    for part in parts[1:]:
        locations = getattr(spec, "submodule_search_locations", None)
        if spec is None or not locations:
            return None, None
        spec = importlib.machinery.PathFinder.find_spec(part, list(locations))
    if spec is None:
        return None, None
    locations = getattr(spec, "submodule_search_locations", None)
    return _module_file(spec), (list(locations) if locations else None)


def _imported_names(file: Path, module: str, is_package: bool) -> list[str]:
    """The dotted names ``file`` imports (``import a.b``, ``from .c import d`` as ``pkg.c`` and ``pkg.c.d``), anywhere in it."""
    try:
        tree = ast.parse(file.read_bytes(), filename=str(file))
    except (SyntaxError, ValueError):
        return []
    package = module if is_package else module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".") if package else []
                base_parts = base_parts[: len(base_parts) - (node.level - 1)] if node.level > 1 else base_parts
                base = ".".join(part for part in [*base_parts, node.module or ""] if part)
            else:
                base = node.module or ""
            if base:
                names.append(base)
                names.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def user_files(module_name: str) -> dict[str, Path]:
    """The user's files behind ``module_name``: each module's dotted name -> its file, the module's own and every one it imports from the user's tree.

    The user's tree is everything outside the standard library, the
    installed packages and privaudit. A module's parent packages (their
    ``__init__.py``) count, as Python runs them. Imports made by name at run
    time (``importlib.import_module(variable)``) are not seen.
    """
    roots = _library_roots()
    found: dict[str, Path] = {}
    pending = [module_name]
    seen: set[str] = set()
    while pending and len(found) < MAX_FILES:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        pending.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # the parents' __init__.py run first
        file, locations = _find(name)
        if file is None or not _is_users(file, roots):
            continue
        found[name] = file
        if file.suffix == ".py":
            pending.extend(_imported_names(file, name, locations is not None))
    return found
