"""Bearer tokens, per-token rate limits and per-device report budgets.

A tokens file (TOML) lists the tokens the service accepts::

    [[tokens]]
    name = "device-0001"      # shown in logs, metrics and the export (never the secret)
    role = "client"           # client | admin | shuffler
    token = "..."             # the secret, or instead: sha256 = "<hex sha256 of the secret>"
    device_epsilon = 4.0      # optional: this device's privacy budget (client tokens)
    rate = 10.0               # optional: requests per second (token bucket) ...
    burst = 20                # ... and burst size
    expires = 2027-01-31T00:00:00Z   # optional: refused from then on (TOML date-time or ISO text)

Roles: ``client`` reads the model and posts reports (and, for a curator, asks for actions);
``operator`` reads ``GET /v1/status``, ``GET /metrics`` and the dashboard (nothing else);
``admin`` may act as a client or an operator, and also exports, resets and reloads the tokens;
``shuffler`` posts shuffled batches.

**Rotation.**  A :class:`TokenSet` read from a file keeps its path: :meth:`TokenSet.reload` reads
the file again and swaps the tokens in place (the server and the shuffler call it on ``SIGHUP`` and
on ``POST /v1/admin/tokens/reload``); a file that does not validate leaves the tokens unchanged.

**Report budget.**  A device's reports compose: with the per-report guarantee ``(eps, delta)``
accounted by the algorithm, ``n`` reports of one device cost at most ``(n eps, n delta)`` (basic
composition).  A client token may therefore post ``floor(device_epsilon / eps)`` accepted reports;
the default ``device_epsilon`` is the accounted ``eps`` itself: one report per device, which is
the user-level guarantee the algorithm states.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import logging
import math
import signal
import threading
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privbandits.core.errors import ConfigError
from privbandits.core.validation import check_known_keys

__all__ = [
    "ROLES",
    "AuthError",
    "RateLimiter",
    "Token",
    "TokenSet",
    "authenticate",
    "install_reload_signal",
    "load_tokens",
    "parse_tokens",
    "read_tokens_file",
    "reload_on_sighup",
    "report_budget",
]

_log = logging.getLogger("privbandits.tokens")

ROLES = ("client", "admin", "shuffler", "operator")
_TOKEN_KEYS = ("name", "role", "token", "sha256", "device_epsilon", "rate", "burst", "expires")


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Token:
    """One accepted token (its secret is kept as a sha256 only)."""

    name: str
    role: str
    sha256: str
    device_epsilon: float | None = None
    rate: float | None = None
    burst: int | None = None
    expires: float | None = None  # Unix time from which the token is refused

    def expired(self, now: float | None = None) -> bool:
        """Whether the token is past its ``expires`` time."""
        return self.expires is not None and (time.time() if now is None else now) >= self.expires


class TokenSet:
    """The tokens a service accepts, looked up by the sha256 of the presented secret.

    ``path``: the tokens file it was read from (:meth:`reload` reads it again).
    """

    def __init__(self, tokens: list[Token], path: str | Path | None = None) -> None:
        self.by_hash: dict[str, Token] = self._index(tokens)
        self.path = None if path is None else Path(path)
        self.loaded_at = time.time()
        self.reloads = 0
        self._lock = threading.Lock()

    @staticmethod
    def _index(tokens: list[Token]) -> dict[str, Token]:
        by_hash: dict[str, Token] = {}
        names: set[str] = set()
        for t in tokens:
            if t.name in names:
                raise ConfigError(f"tokens: name {t.name!r} is used twice")
            names.add(t.name)
            by_hash[t.sha256] = t
        return by_hash

    def reload(self) -> int:
        """Read the tokens file again and replace the tokens (rotation without a restart).

        Returns the number of tokens now accepted.

        Raises
        ------
        ConfigError
            If the set was not read from a file, or the file does not validate (the current
            tokens stay in force).
        """
        if self.path is None:
            raise ConfigError("these tokens were not read from a file: nothing to reload")
        fresh = parse_tokens(read_tokens_file(self.path), self.path.name)
        with self._lock:
            self.by_hash = fresh.by_hash
            self.loaded_at = time.time()
            self.reloads += 1
        return len(self.by_hash)

    @classmethod
    def from_secrets(cls, **roles: list[str]) -> TokenSet:
        """Tokens from plain secrets by role, e.g. ``from_secrets(client=["a", "b"], admin=["c"])``."""
        out = []
        for role, secrets in roles.items():
            for i, s in enumerate(secrets):
                out.append(Token(f"{role}-{i}", role, _hash(s)))
        return cls(out)

    def lookup(self, secret: str) -> Token | None:
        """The token with this secret, or None."""
        return self.by_hash.get(_hash(secret))

    def __len__(self) -> int:
        return len(self.by_hash)


class AuthError(Exception):
    """A request without an acceptable token: HTTP ``status`` (401 or 403) and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def authenticate(tokens: TokenSet, header: str | None, roles: tuple[str, ...]) -> Token:
    """The token of an ``Authorization: Bearer <secret>`` header if it has one of ``roles`` (an
    ``admin`` token may act as a ``client`` or an ``operator``; an expired token is unknown): the one reader of bearer tokens, used by the server
    and the shuffler.

    Raises
    ------
    AuthError
        401 for a missing, malformed or unknown token, 403 for a token of another role.
    """
    if not header:
        raise AuthError(401, "missing token: send the header 'Authorization: Bearer <token>'")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise AuthError(401, "malformed Authorization header: expected 'Bearer <token>'")
    tok = tokens.lookup(secret.strip())
    if tok is None:
        raise AuthError(401, "unknown token")
    if tok.expired():
        when = dt.datetime.fromtimestamp(tok.expires or 0, dt.UTC).isoformat()
        raise AuthError(401, f"token {tok.name!r} expired at {when}")
    if tok.role not in roles and not (
        tok.role == "admin" and ("client" in roles or "operator" in roles)
    ):
        raise AuthError(
            403,
            f"token {tok.name!r} has role {tok.role!r}; this endpoint needs "
            f"{' or '.join(repr(r) for r in roles)}",
        )
    return tok


def report_budget(epsilon: Any, device_epsilon: float | None) -> int | None:
    """Accepted reports a device may post in total: ``floor(device_epsilon / epsilon)`` (basic
    composition, see the module docstring; ``device_epsilon`` defaults to ``epsilon``: one report
    per device), with ``epsilon`` the accounted per-report epsilon; ``None`` (no limit) when the
    model states no finite positive epsilon.  The one rule of the server and the shuffler."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
        return None
    eps = float(epsilon)
    if not math.isfinite(eps) or eps <= 0:
        return None
    return math.floor((device_epsilon or eps) / eps * (1 + 1e-12))


def _num(where: str, key: str, value: Any, integer: bool = False) -> Any:
    ok = not isinstance(value, bool) and isinstance(value, int if integer else (int, float))
    if not ok or not math.isfinite(value) or value <= 0:
        kind = "an integer >= 1" if integer else "a finite number > 0"
        raise ConfigError(f"{where}: must be {kind}, got {value!r}")
    return value


def parse_tokens(raw: dict[str, Any], source: str = "<tokens>") -> TokenSet:
    """Validate a parsed tokens file (see the module docstring)."""
    entries = raw.get("tokens")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{source}: expected at least one [[tokens]] entry")
    out = []
    for i, e in enumerate(entries):
        where = f"{source}: tokens[{i}]"
        if not isinstance(e, dict):
            raise ConfigError(f"{where}: must be a table")
        check_known_keys(e, _TOKEN_KEYS, where)
        role = e.get("role")
        if role not in ROLES:
            raise ConfigError(f"{where}.role: must be one of {', '.join(ROLES)}, got {role!r}")
        if ("token" in e) == ("sha256" in e):
            raise ConfigError(
                f"{where}: give exactly one of 'token' (the secret) or 'sha256' (its hash)"
            )
        if "token" in e:
            if not isinstance(e["token"], str) or len(e["token"]) < 16:
                raise ConfigError(f"{where}.token: must be a string of at least 16 characters")
            digest = _hash(e["token"])
        else:
            digest = str(e["sha256"]).lower()
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise ConfigError(f"{where}.sha256: must be 64 hex digits, got {e['sha256']!r}")
        name = e.get("name", f"{role}-{digest[:8]}")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}.name: must be a non-empty string")
        dev = e.get("device_epsilon")
        expires = _expires(f"{where}.expires", e["expires"]) if "expires" in e else None
        rate = e.get("rate")
        burst = e.get("burst")
        out.append(
            Token(
                name,
                role,
                digest,
                None
                if dev is None
                else float(_num(f"{where}.device_epsilon", "device_epsilon", dev)),
                None if rate is None else float(_num(f"{where}.rate", "rate", rate)),
                None
                if burst is None
                else int(_num(f"{where}.burst", "burst", burst, integer=True)),
                expires,
            )
        )
    return TokenSet(out)


def _expires(where: str, value: Any) -> float:
    """Unix time of an ``expires`` value: a TOML date-time or date, or ISO 8601 text (UTC if it
    states no offset)."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(
                f"{where}: must be a date-time such as 2027-01-31T00:00:00Z, got {value!r}"
            ) from None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.timestamp()
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC).timestamp()
    raise ConfigError(f"{where}: must be a date-time such as 2027-01-31T00:00:00Z, got {value!r}")


def read_tokens_file(path: str | Path) -> dict[str, Any]:
    """The raw TOML of a tokens file, with unreadable files and invalid TOML as :class:`ConfigError`."""
    p = Path(path)
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read tokens file {str(p)!r}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p.name}: invalid TOML: {exc}") from None


def load_tokens(path: str | Path) -> TokenSet:
    """Read a tokens file (the set remembers the path, for :meth:`TokenSet.reload`)."""
    toks = parse_tokens(read_tokens_file(path), Path(path).name)
    toks.path = Path(path)
    return toks


class RateLimiter:
    """Token buckets by token name: ``rate`` requests per second, bursts of ``burst``."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self.buckets: dict[str, tuple[float, float]] = {}

    def allow(self, name: str, rate: float, burst: int) -> float:
        """0.0 if a request of ``name`` may pass now (and count it), else the seconds to wait."""
        now = self.clock()
        level, last = self.buckets.get(name, (float(burst), now))
        level = min(float(burst), level + (now - last) * rate)
        if level >= 1.0:
            self.buckets[name] = (level - 1.0, now)
            return 0.0
        self.buckets[name] = (level, now)
        return (1.0 - level) / rate


def install_reload_signal(tokens: TokenSet, what: str = "server") -> bool:
    """Reload ``tokens`` from their file on ``SIGHUP`` (token rotation without a restart).

    Returns False where no handler can be installed (not the main thread, or no SIGHUP)."""

    def reload() -> None:
        try:
            n = tokens.reload()
            _log.warning("%s: tokens reloaded on SIGHUP (%d token(s))", what, n)
        except ConfigError as exc:
            _log.error("%s: tokens NOT reloaded on SIGHUP, the old ones stay: %s", what, exc)

    if not hasattr(signal, "SIGHUP") or tokens.path is None:
        return False
    try:
        import asyncio

        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, reload)
    except (RuntimeError, ValueError, NotImplementedError):
        return False
    return True


@contextlib.contextmanager
def reload_on_sighup(tokens: TokenSet, what: str = "server") -> Iterator[bool]:
    """:func:`install_reload_signal` for the length of the block (a web application's lifespan):
    yields whether the handler was installed, and removes it on exit."""
    installed = install_reload_signal(tokens, what)
    try:
        yield installed
    finally:
        if installed:
            import asyncio

            asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
