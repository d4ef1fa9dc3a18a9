"""File input and output, safely: checked output paths, staged output directories, atomic and bounded JSON.

A failure never leaves a partial file or directory behind, not even when the
process is killed: :func:`staged_output` names its scratch folders so that
the next run into the same parent recognises and removes those of dead
processes. :func:`check_output_dir` refuses an unusable ``--output`` before
any work starts, and :func:`read_json` reads a JSON file with a size limit
and a clear error for every way it can be broken.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn, TypeAlias

from .messages import describe_value, printable

__all__ = [
    "MAX_JSON_BYTES",
    "check_output_apart",
    "check_own_file",
    "check_output_dir",
    "check_output_file",
    "not_a_file",
    "read_json",
    "read_text_limited",
    "remove_stale_staging",
    "staged_output",
    "write_json_atomic",
]

MAX_JSON_BYTES = 64 * 2**20
_STAGING = ".privaudit-staging-"
_LOCK = ".privaudit-lock"
_STAGING_NAME = re.compile(r"^\.(?P<name>.+)" + re.escape(_STAGING) + r"(?P<pid>\d+)-[A-Za-z0-9_]+$")
StrPath: TypeAlias = "str | os.PathLike[str]"

_SYSTEM_TREES = (Path("/proc"), Path("/sys"), Path("/dev"))
# the files the commands write at the top of an output directory
_WRITTEN = ("results.json", "report.html", "provenance.json")


def _shown(path: StrPath) -> str:
    """A path quoted for a message: whole (the file name matters), control characters escaped."""
    return printable(repr(str(path)))


def not_a_file(path: StrPath) -> str:
    """Why ``path``, which is not a regular file, cannot be read: "is a directory", "is a FIFO (named pipe), not a file", ... or "file not found".

    >>> not_a_file(tempfile.mkdtemp()), not_a_file("/no/such/file")
    ('is a directory, not a file', 'file not found')
    """
    import stat

    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError as error:
        if path.is_symlink():
            return "is a symlink that leads nowhere (a loop or a missing target)"
        return "file not found" if isinstance(error, FileNotFoundError) else f"cannot be opened: {error.strerror or error}"
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"))
    kind = next((text for test, text in kinds if test(mode)), "a block device" if stat.S_ISBLK(mode) else "not a regular file")
    return f"is {kind}, not a file" if not kind.startswith("not") else f"is {kind}"


def _nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists (lexically, so a missing middle folder counts as missing)."""
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return Path(path.anchor or ".")


def _check_location(path: Path, name: str, what: str) -> None:
    """Refuse a path under a file, under /proc, /sys or /dev, or in a place this process cannot write."""
    resolved = Path(os.path.abspath(path))
    with contextlib.suppress(OSError, RuntimeError):
        resolved = resolved.resolve()
    for tree in _SYSTEM_TREES:
        if resolved == tree or tree in resolved.parents:
            raise ValueError(f"`{name}` must be {what} outside {tree}, got {_shown(path)}")
    existing = _nearest_existing(Path(os.path.abspath(path)))
    if existing != Path(os.path.abspath(path)) and not existing.is_dir():
        raise ValueError(f"`{name}` must be {what} in a folder, but {_shown(existing)} is a file")
    if existing.is_dir():
        folder = existing
        read_only = False
        with contextlib.suppress(OSError, AttributeError):
            read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
        if read_only or not os.access(folder, os.W_OK | os.X_OK):
            raise ValueError(f"`{name}` must be {what} in a writable place, but {_shown(folder)} is not writable")


def check_output_dir(path: StrPath | None, name: str = "--output") -> Path:
    """``path`` as a Path if a command can create or fill it as its output directory; ValueError otherwise.

    Call it before any work: it refuses an existing file, a path under a file,
    a path under /proc, /sys or /dev, and a location this process cannot
    write. It creates nothing.

    >>> folder = tempfile.mkdtemp()
    >>> check_output_dir(Path(folder) / "run").name
    'run'
    >>> check_output_dir("/proc/self/out")
    Traceback (most recent call last):
    ...
    ValueError: `--output` must be a directory outside /proc, got '/proc/self/out'
    """
    if path is None or not str(path).strip():
        raise ValueError(f"`{name}` must be a directory path, got {describe_value(path)}")
    path = Path(path)
    if path.is_symlink() and not path.exists():
        raise ValueError(f"`{name}` {_shown(path)} is a symlink that leads nowhere (a loop or a missing target); give a real directory")
    if path.exists() and not path.is_dir():
        raise ValueError(f"`{name}` must be a directory, got the file {_shown(path)}")
    _check_location(path, name, "a directory")
    if path.is_dir():
        _check_replaced_files(path, name)
    return path


def _written_here(entry: str) -> bool:
    """Whether a command may write a file named ``entry`` at the top of its output directory (results, report, figures)."""
    return entry in _WRITTEN or entry.lower().endswith(".png")


def _from_a_run(path: Path) -> bool:
    """Whether ``path`` is the results.json of a privaudit run: a JSON object carrying ``schema_version`` (so the folder is a run's)."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_JSON_BYTES:
            return False
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "schema_version" in data and "audit" in data


def _check_replaced_files(path: Path, name: str) -> None:
    """Refuse, before the work, an output folder whose entries the run would replace or fail to replace.

    A folder (or a symlink, a FIFO) named like a file the command writes would
    fail its move after the work; the user's own report.html or roc.png,
    in a folder that holds no results.json of a previous run, would be replaced.
    """
    try:
        entries = sorted(os.scandir(path), key=lambda entry: entry.name)
    except OSError as error:
        raise ValueError(f"`{name}`: cannot list {_shown(path)}: {error.strerror or error}") from None
    for entry in entries:
        if _written_here(entry.name) and not entry.is_file(follow_symlinks=False):
            kind = "folder" if entry.is_dir(follow_symlinks=False) else "symlink" if entry.is_symlink() else "special file"
            raise ValueError(
                f"`{name}` holds a {kind} named {printable(repr(entry.name))} where the command writes that file; remove it or choose another {name}"
            )
    theirs = [entry.name for entry in entries if _written_here(entry.name)]
    if theirs and not _from_a_run(path / "results.json"):
        raise ValueError(
            f"`{name}` {_shown(path)} holds {printable(', '.join(theirs[:5]))}{' …' if len(theirs) > 5 else ''} but no results.json of a "
            f"privaudit run: the run would replace them; choose another {name} or move them"
        )


def check_output_file(path: StrPath | None, name: str = "--output") -> Path:
    """``path`` as a Path if a command can write it as its output file (e.g. report.html); ValueError otherwise.

    Refuses a directory, a path under a file, under /proc, /sys or /dev, and
    an unwritable location. It creates nothing.

    >>> check_output_file(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    ValueError: `--output` must be a file path, got the directory ...
    """
    if path is None or not str(path).strip():
        raise ValueError(f"`{name}` must be a file path, got {describe_value(path)}")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"`{name}` must be a file path, got the directory {_shown(path)}")
    _check_location(path, name, "a file")
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"`{name}` must be a writable file, got {_shown(path)}")
    return path


def _real(path: StrPath) -> Path:
    """``path`` made absolute with every symlink resolved (as far as it exists)."""
    resolved = Path(os.path.abspath(path))
    with contextlib.suppress(OSError, RuntimeError):
        resolved = resolved.resolve()
    return resolved


def check_output_apart(output: StrPath, inputs: Iterable[tuple[str, StrPath | None]], name: str = "--output") -> None:
    """Refuse an ``output`` that is, contains or lies inside one of ``inputs`` (pairs of the option and the path it gave).

    An option (``--corpus``) is quoted as typed; any other label is a phrase
    that names the file (``RUN's results.json``).

    Paths are compared with every symlink resolved, before any work, so a
    command never writes over the user's corpus, data, model or a run's
    results. ``None`` inputs (options not given) are skipped.

    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "corpus.txt").write_text("a line")
    >>> check_output_apart(folder / "out", [("--corpus", folder / "corpus.txt")])
    >>> check_output_apart(folder, [("--corpus", folder / "corpus.txt")])
    Traceback (most recent call last):
    ...
    ValueError: `--output` must not hold `--corpus`: ... is inside ...; choose another --output
    >>> check_output_apart(folder / "corpus.txt", [("--corpus", folder / "corpus.txt")])
    Traceback (most recent call last):
    ...
    ValueError: `--output` would overwrite `--corpus`: both are '...corpus.txt'; choose another --output
    """
    target = _real(output)
    for option, given in inputs:
        if given is None or not str(given).strip():
            continue
        source = _real(given)
        if target == source:
            relation = "is"
        elif target in source.parents:
            relation = "must not hold"
        elif source in target.parents:
            relation = "must not be inside"
        else:
            continue
        label = f"`{option}`" if option.startswith("-") else option  # an option as typed, or a phrase such as "RUN's results.json"
        if relation == "is":
            raise ValueError(f"`{name}` would overwrite {label}: both are {_shown(source)}; choose another {name}")
        detail = f"{_shown(source)} is inside {_shown(target)}" if relation == "must not hold" else f"{_shown(target)} is inside {_shown(source)}"
        raise ValueError(f"`{name}` {relation} {label}: {detail}; choose another {name}")


def check_own_file(path: StrPath, directory: StrPath, name: str) -> Path:
    """``path`` if it is a regular file of ``directory`` itself: not a symlink, not a hard link (one name only), resolved inside it.

    A link could bring in any file from outside (another run's results, a
    private file); ValueError naming ``name`` and the reason otherwise.

    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "results.json").write_text("{}")
    >>> check_own_file(folder / "results.json", folder, "run").name
    'results.json'
    >>> os.link(folder / "results.json", folder / "copy.json")
    >>> check_own_file(folder / "copy.json", folder, "run")
    Traceback (most recent call last):
    ...
    ValueError: `run`: '...copy.json' is a hard link (2 names): read only a run's own files, not a link to a file elsewhere
    """
    path = Path(path)
    try:
        info = os.lstat(path)
    except OSError as error:
        raise ValueError(f"`{name}`: cannot read {_shown(path)}: {error.strerror or error}") from None
    if os.path.islink(path):
        raise ValueError(f"`{name}`: {_shown(path)} is a symlink: read only a run's own files, not a link to a file elsewhere")
    if not os.path.isfile(path):
        raise ValueError(f"`{name}`: {_shown(path)} is not a regular file")
    if info.st_nlink != 1:
        raise ValueError(f"`{name}`: {_shown(path)} is a hard link ({info.st_nlink} names): read only a run's own files, not a link to a file elsewhere")
    if _real(path).parent != _real(directory):
        raise ValueError(f"`{name}`: {_shown(path)} lies outside the run directory {_shown(directory)}")
    return path


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    except OSError:
        return True
    return True


def _owner_gone(folder: Path, pid: int) -> bool:
    """True when the run that made the staging ``folder`` has ended: its lock is free, or (no lock yet) its PID is dead."""
    lock = folder / _LOCK
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: the PID is all we have
        return not _pid_alive(pid)
    try:
        fd = os.open(lock, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:  # made, not yet locked: only a dead PID says it is stale
        return not _pid_alive(pid)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # a live process holds it
    else:
        return True  # a lock is released when its process dies, even on SIGKILL
    finally:
        os.close(fd)


def remove_stale_staging(parent: StrPath, name: str | None = None) -> list[Path]:
    """Remove the scratch folders :func:`staged_output` left in ``parent`` when killed; return them.

    Only folders named ``.{name}.privaudit-staging-{pid}-{random}`` (``name``
    None: any) whose lock no live process holds are removed; a concurrent
    run's folder, and anything not made by :func:`staged_output`, are kept.

    >>> remove_stale_staging(tempfile.mkdtemp())
    []
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        match = _STAGING_NAME.match(entry.name)
        if match is None or (name is not None and match.group("name") != name):
            continue
        if not entry.is_dir(follow_symlinks=False):
            continue
        folder = Path(entry.path)
        if int(match.group("pid")) == os.getpid() or not _owner_gone(folder, int(match.group("pid"))):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


@contextlib.contextmanager
def staged_output(output: StrPath) -> Iterator[Path]:
    """Yield a scratch directory beside ``output``; move its files into ``output`` only on success.

    The scratch folder ``.{name}.privaudit-staging-{pid}-{random}`` holds a
    lock for as long as this process lives; scratch folders of killed runs
    into the same parent are removed first.

    >>> import os
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     target = Path(folder) / "run"
    ...     try:
    ...         with staged_output(target) as scratch:
    ...             _ = (scratch / "results.json").write_text("{}")
    ...             raise RuntimeError("the audit failed")
    ...     except RuntimeError:
    ...         pass
    ...     print(target.exists(), os.listdir(folder))
    False []
    """
    final = Path(output)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(final.parent, final.name)
    scratch = Path(tempfile.mkdtemp(prefix=f".{final.name}{_STAGING}{os.getpid()}-", dir=final.parent))
    lock_fd = None
    try:
        lock_fd = _hold_lock(scratch / _LOCK)
        yield scratch
        final.mkdir(exist_ok=True)
        for item in scratch.iterdir():  # every move checked before the first: a folder in the way must not cost the old files
            target = final / item.name
            if item.name != _LOCK and target.is_dir() and not target.is_symlink() and not item.is_dir():
                raise ValueError(f"`--output` holds a folder named {printable(repr(item.name))} where the command writes that file; remove it")
        for item in scratch.iterdir():
            if item.name != _LOCK:
                item.replace(final / item.name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if lock_fd is not None:
            os.close(lock_fd)


def _hold_lock(path: Path) -> int | None:
    """Create ``path`` and hold an exclusive lock on it (released by the OS when this process dies)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:  # pragma: no cover - not POSIX
        pass
    return fd


def write_json_atomic(path: StrPath, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` through a temporary file and a rename.

    >>> with tempfile.TemporaryDirectory() as folder:
    ...     write_json_atomic(Path(folder) / "a.json", {"x": 1})
    ...     print(sorted(os.listdir(folder)), (Path(folder) / "a.json").read_text().strip())
    ['a.json'] {
      "x": 1
    }
    """
    path = Path(path)
    text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def read_text_limited(path: StrPath, name: str, *, max_bytes: int = MAX_JSON_BYTES) -> str:
    """The UTF-8 text of the file ``path``; a ValueError naming ``name`` if it is missing, too large or not UTF-8."""
    path = Path(path)
    shown = _shown(path)
    if not path.is_file():
        raise ValueError(f"`{name}`: cannot read {shown}: {not_a_file(path)}")
    try:
        with open(path, "rb") as file:
            raw = file.read(max_bytes + 1)
    except OSError as error:
        raise ValueError(f"`{name}`: cannot read {shown}: {error.strerror or error}") from None
    if len(raw) > max_bytes:
        raise ValueError(f"`{name}`: {shown} is larger than {max_bytes} bytes")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"`{name}`: cannot read {shown}: not UTF-8 text ({error.reason} at byte {error.start})") from None


def check_utf8_file(path: StrPath, name: str, *, chunk_bytes: int = 1 << 20) -> Path:
    r"""``path`` if the whole file is UTF-8 text; a ValueError naming ``name``, the file and the first bad byte otherwise.

    Read in chunks, so a large corpus is checked before any work without
    being held twice.

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     binary = os.path.join(folder, "corpus.bin")
    ...     with open(binary, "wb") as file:
    ...         _ = file.write(b"text\n\x80\x81")
    ...     check_utf8_file(binary, "--corpus")
    Traceback (most recent call last):
    ...
    ValueError: `--corpus`: '...corpus.bin' is not UTF-8 text (invalid start byte at byte 5); give a text file
    """
    path = Path(path)
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    try:
        with open(path, "rb") as file:
            while chunk := file.read(chunk_bytes):
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as error:
                    raise ValueError(f"`{name}`: {_shown(path)} is not UTF-8 text ({error.reason} at byte {offset + error.start}); give a text file") from None
                offset += len(chunk)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError as error:
        raise ValueError(f"`{name}`: {_shown(path)} is not UTF-8 text (it ends inside a character: {error.reason}); give a text file") from None
    except OSError as error:
        raise ValueError(f"`{name}`: cannot read {_shown(path)}: {error.strerror or error}") from None
    return path


def _refuse_constant(constant: str) -> NoReturn:
    raise ValueError(f"{constant} is not a JSON number")


def read_json(path: StrPath, name: str = "--config", *, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The parsed JSON file ``path``; a ValueError naming ``name`` for every way it can be unusable.

    Refuses a missing file, a directory, a file larger than ``max_bytes``,
    text that is not UTF-8, invalid JSON, NaN/Infinity (not JSON), and
    nesting too deep for the parser, with one short message.

    >>> folder = tempfile.mkdtemp()
    >>> _ = (Path(folder) / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    >>> read_json(Path(folder) / "deep.json")
    Traceback (most recent call last):
    ...
    ValueError: `--config`: '...deep.json' is nested too deeply to read
    >>> _ = (Path(folder) / "ok.json").write_text('{"a": [1, 2.5]}')
    >>> read_json(Path(folder) / "ok.json")
    {'a': [1, 2.5]}
    """
    text = read_text_limited(path, name, max_bytes=max_bytes)
    shown = _shown(path)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError(f"`{name}`: {shown} is nested too deeply to read") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"`{name}`: {shown} is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})") from None
    except ValueError as error:
        raise ValueError(f"`{name}`: {shown} is not valid JSON: {error}") from None
