"""Where compiled code is cached on disk, keyed by a fingerprint of the package's source.

numba's on-disk cache checks only the timestamp of the file that defines a cached function, not
of the compiled functions it calls (a kernel calling a sampler of another module would keep its
old machine code after the sampler changed).  privbandits therefore points numba's cache at a
directory named after a hash of all of its own source files (``<root>/numba-<fingerprint>``):
any change of the library's source starts a fresh cache, and an unchanged installation reuses
the compiled code across processes and sessions.  The generated round loops
(:mod:`privbandits.algorithms._shared.loops`) live in the same directory.

The root is ``$PRIVBANDITS_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/privbandits`` (default
``~/.cache/privbandits``).  A user-set ``NUMBA_CACHE_DIR`` is respected (then the generated loops
go to ``$NUMBA_CACHE_DIR/privbandits-loops-<fingerprint>``).  If no directory is writable,
compiled code is simply not cached.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from functools import lru_cache
from pathlib import Path

__all__ = ["cache_dir", "configure_numba_cache", "source_fingerprint"]

_PACKAGE = Path(__file__).resolve().parent
#: Fingerprinted cache directories kept besides the current one.
_KEEP_OLD = 2
#: Set beside ``NUMBA_CACHE_DIR`` when this module chose it, so that a child process tells an
#: inherited choice (recomputed: the child may run another sampler switch) from a user's setting.
_OWN_ENV = "PRIVBANDITS_NUMBA_CACHE_DIR"


def _user_numba_cache() -> str | None:
    """``$NUMBA_CACHE_DIR`` when the user set it; None when unset or set by this module (here or
    in a parent process)."""
    user = os.environ.get("NUMBA_CACHE_DIR")
    if not user or user == os.environ.get(_OWN_ENV):
        return None
    return user


@lru_cache(maxsize=1)
def source_fingerprint() -> str:
    """sha256 (16 hex digits) of the paths and contents of every ``.py`` file of the package."""
    h = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        h.update(str(path.relative_to(_PACKAGE)).encode())
        h.update(b"\0")
        h.update(path.read_bytes())
    sampler = os.environ.get("PRIVBANDITS_SAMPLER", "").strip().lower()
    if sampler and sampler != "numpy":  # compiled code freezes the sampler switch
        h.update(b"\0sampler=" + sampler.encode())
    return h.hexdigest()[:16]


def _root() -> Path:
    env = os.environ.get("PRIVBANDITS_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "privbandits"


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-probe"
        probe.write_text("")
        probe.unlink()
        return True
    except OSError:
        return False


def _prune(root: Path, current: Path) -> None:
    """Delete all but the most recent fingerprinted directories (best effort)."""
    try:
        old = sorted(
            (p for p in root.glob("numba-*") if p.is_dir() and p != current),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
    except OSError:
        return
    for p in old[_KEEP_OLD:]:
        shutil.rmtree(p, ignore_errors=True)


@lru_cache(maxsize=1)
def cache_dir() -> Path | None:
    """The fingerprinted cache directory (created), or None when nothing is writable."""
    user = _user_numba_cache()
    if user:
        path = Path(user) / f"privbandits-loops-{source_fingerprint()}"
        return path if _writable(path) else None
    root = _root()
    path = root / f"numba-{source_fingerprint()}"
    if not _writable(path):
        return None
    _prune(root, path)
    return path


def configure_numba_cache() -> None:
    """Point numba's cache at :func:`cache_dir` (unless the user set ``NUMBA_CACHE_DIR``).

    Must run before any compiled function of the package is defined (the package's
    ``__init__`` calls it first).
    """
    if _user_numba_cache():
        return
    path = cache_dir()
    if path is None:
        return
    os.environ["NUMBA_CACHE_DIR"] = str(path)  # inherited by worker processes
    os.environ[_OWN_ENV] = str(path)
    try:
        from numba.core import config
    except ImportError:  # pragma: no cover - numba is a dependency
        return
    config.CACHE_DIR = str(path)
