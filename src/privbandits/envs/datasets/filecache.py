"""On-disk cache of parsed data files, shared by every process of a run.

A data file given by ``path = ...`` is parsed once: the numeric arrays (features, class indices)
and the preprocessed bandit contexts are written as ``.npy`` files under a cache directory, and
every later load of the same file with the same options (the validation of a configuration, each
algorithm variant, every worker process) opens them memory-mapped instead of reading the file
again.  The pages of a memory-mapped array are shared between processes through the operating
system's page cache, so two workers do not hold two private copies.

An entry is keyed by the sha256 of the file's absolute path, size and modification time
(nanoseconds), the parse options (label, features, missing-value policy, format, delimiter) and
:data:`CACHE_VERSION`: editing or replacing the file (a new size or modification time) makes a
new entry, and the file is parsed again.  Entries are written to a temporary directory and
renamed into place, so a reader never sees a half-written entry, and concurrent writers of the
same entry are harmless.

Location: ``$PRIVBANDITS_DATA_CACHE`` if set, else ``data/`` under the package's cache root
(``$PRIVBANDITS_CACHE_DIR``, else ``$XDG_CACHE_HOME/privbandits``, default
``~/.cache/privbandits``); a temporary directory when neither is writable.  The
:data:`KEEP_ENTRIES` most recently used entries are kept; the directory can be deleted at any
time (the next run parses its files again).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "CACHE_VERSION",
    "KEEP_ENTRIES",
    "cache_root",
    "entry_key",
    "file_fingerprint",
    "loading_status",
    "lookup",
    "status",
    "store",
]

#: Version of the cached layout and of the parser, hashed into every key.
CACHE_VERSION = 1
#: Entries kept (least recently used ones beyond this are deleted when a new one is written).
KEEP_ENTRIES = 12
_META = "meta.json"

_STATUS: ContextVar[Callable[[str], None] | None] = ContextVar(
    "privbandits_data_status", default=None
)


@contextmanager
def loading_status(callback: Callable[[str], None]) -> Iterator[None]:
    """Within the block, data loaders report what they do (``"parsing loans.csv (212 MB)"``) by
    calling ``callback(message)``; the command line shows it as a status line on stderr."""
    token = _STATUS.set(callback)
    try:
        yield
    finally:
        _STATUS.reset(token)


def status(message: str) -> None:
    """Report a loading step to the callback of :func:`loading_status` (no-op outside one)."""
    callback = _STATUS.get()
    if callback is not None:
        callback(message)


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
        return True
    except OSError:
        return False


@lru_cache(maxsize=1)
def _root_for(env_data: str | None, env_cache: str | None, xdg: str | None) -> Path:
    if env_data:
        candidates = [Path(env_data)]
    else:
        from privbandits._cache import _root

        candidates = [_root() / "data"]
    uid = getattr(os, "getuid", lambda: "user")()
    candidates.append(Path(tempfile.gettempdir()) / f"privbandits-data-{uid}")
    for path in candidates:
        if _writable(path):
            return path
    raise OSError(f"no writable data cache directory among {[str(p) for p in candidates]}")


def cache_root() -> Path:
    """The data cache directory (module docstring), created if needed."""
    return _root_for(
        os.environ.get("PRIVBANDITS_DATA_CACHE"),
        os.environ.get("PRIVBANDITS_CACHE_DIR"),
        os.environ.get("XDG_CACHE_HOME"),
    )


def file_fingerprint(path: str | Path) -> dict[str, Any]:
    """What identifies a file's contents for the cache: absolute path, size, modification time."""
    p = Path(path).resolve()
    st = p.stat()
    return {"path": str(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def entry_key(kind: str, parts: Mapping[str, Any]) -> str:
    """The key of a cache entry: sha256 (24 hex digits) of ``kind``, ``parts`` and
    :data:`CACHE_VERSION`."""
    blob = json.dumps(
        {"kind": kind, "version": CACHE_VERSION, **parts}, sort_keys=True, default=str
    )
    return f"{kind}-{hashlib.sha256(blob.encode()).hexdigest()[:24]}"


def lookup(key: str) -> tuple[Path, dict[str, Any]] | None:
    """The directory and metadata of a complete entry, or None (also for an unreadable one)."""
    d = cache_root() / key
    try:
        meta = json.loads((d / _META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    try:
        os.utime(d)  # most recently used (pruning keeps those)
    except OSError:
        pass
    return d, meta


def store(key: str, write: Callable[[Path], dict[str, Any]]) -> tuple[Path, dict[str, Any]]:
    """Create the entry ``key``: ``write(directory)`` writes its arrays into a fresh directory and
    returns the metadata; the directory is then renamed into place (if another process was
    faster, its entry is kept and this one discarded).  Returns what :func:`lookup` returns."""
    root = cache_root()
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
    try:
        meta = write(tmp)
        (tmp / _META).write_text(json.dumps(meta), encoding="utf-8")
        final = root / key
        try:
            os.replace(tmp, final)
        except OSError:  # an entry appeared meanwhile (a non-empty directory cannot be replaced)
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _prune(root, keep=final)
    found = lookup(key)
    if found is None:  # pragma: no cover - the directory vanished at once
        raise OSError(f"data cache entry {final} could not be read back")
    return found


def _prune(root: Path, keep: Path) -> None:
    """Delete the least recently used entries beyond :data:`KEEP_ENTRIES`, and temporary
    directories of interrupted writers older than a day (best effort)."""
    try:
        entries = [p for p in root.iterdir() if p.is_dir()]
    except OSError:
        return
    now = time.time()
    done = []
    for p in entries:
        try:
            mtime = p.stat().st_mtime
        except OSError:
            continue
        if p.name.startswith("."):
            if now - mtime > 86400:
                shutil.rmtree(p, ignore_errors=True)
        elif p != keep:
            done.append((mtime, p))
    done.sort(reverse=True)
    for _, p in done[KEEP_ENTRIES - 1 :]:
        shutil.rmtree(p, ignore_errors=True)
