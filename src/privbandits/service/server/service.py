"""The service logic behind the HTTP layer: validation, idempotency, budgets and persistence.

:class:`Service` owns the :class:`~privbandits.service.server.model.ServedModel` and the
:class:`~privbandits.service.server.store.Store`.  Each accepted request is validated, applied to the
server role and stored with the resulting model update in one transaction; a request retried with
the same idempotency key gets the stored answer and changes nothing.  On start it replays the
stored requests and checks the rebuilt state's digest against the last stored one.
"""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import math
import secrets
import threading
import time
from typing import Any

from privbandits.core.errors import PrivbanditsError
from privbandits.service.auth import (
    AuthError,
    RateLimiter,
    Token,
    TokenSet,
    authenticate,
    report_budget,
)
from privbandits.service.codec import FieldError, canonical, reject_unknown
from privbandits.service.config import ServiceConfig
from privbandits.service.sealing import keygen, open_sealed
from privbandits.service.server.model import ServedModel, warm_up
from privbandits.service.server.store import (
    Event,
    ModelRow,
    Quarantined,
    Snapshot,
    Store,
    StoreError,
    StoreLost,
)
from privbandits.service.storage.deployment import new_deployment_id
from privbandits.service.storage.snapshots import SnapshotError, capture, restore

__all__ = ["RECENT", "Refusal", "Service"]

#: Simulated rewards kept for the status page.
RECENT = 500
_KEY_MAX = 200


class Refusal(Exception):
    """A request refused with HTTP ``status``: ``field`` names what was wrong (or None)."""

    def __init__(
        self, status: int, message: str, field: str | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.field, self.retry_after = (
            status,
            message,
            field,
            retry_after,
        )

    def body(self) -> dict[str, Any]:
        return {"error": {"status": self.status, "field": self.field, "message": self.message}}


class Service:
    """One served model (see the module docstring).

    Parameters
    ----------
    config : ServiceConfig
        The served algorithm and the service limits.
    store : Store
        Its database (created or reopened; a database of another configuration is refused).
    tokens : TokenSet
        Accepted tokens.
    clock : callable
        Monotonic clock of the rate limiter (tests pass a fake one).
    snapshot_every : int
        Store a snapshot of the model state every this many events (0: never on its own).
    """

    def __init__(
        self,
        config: ServiceConfig,
        store: Store,
        tokens: TokenSet,
        clock: Any = time.monotonic,
        snapshot_every: int = 10_000,
    ) -> None:
        self.config, self.store, self.tokens = config, store, tokens
        self.lock = threading.RLock()
        self.limiter = RateLimiter(clock)
        self.recent_rewards: collections.deque[float] = collections.deque(maxlen=RECENT)
        self.simulated_rewards = 0
        self.refused: collections.Counter[str] = collections.Counter()
        self.replayed = 0
        self.started = time.time()
        self.snapshot_error: str | None = None
        #: Take a snapshot every this many stored events (0: only on shutdown).
        self.snapshot_every = snapshot_every
        #: Why the database is no longer this deployment's (None: it is); then nothing is acknowledged.
        self.lost: str | None = None
        self._dirty = False
        store.init(config.to_json())
        deployment = store.deployment_id()
        if deployment is None:  # an in-process store (the command line creates it with --init)
            deployment = new_deployment_id()
            store.set_deployment_id(deployment)
        self.deployment_id = deployment
        store.expected_deployment = deployment
        self._keys()
        self.rebuild()
        self._pin_guarantee()
        warm_up(config)

    # -- state ----------------------------------------------------------------------------------
    def _pin_guarantee(self) -> None:
        """The accounted per-report guarantee is part of the durable state: the devices' spent
        budgets were counted against it, so a start that computes another one for the same
        configuration (e.g. a changed calibration) is refused."""
        now = json.dumps(self.model.describe()["guarantee"], sort_keys=True)
        stored = self.store.put_meta("guarantee", now)
        if stored != now:
            raise StoreError(
                f"the database records the accounted guarantee {stored[:300]} but this version "
                f"computes {now[:300]} for the same configuration: the devices' spent report "
                "budgets were accounted with the recorded one; refusing to start (serve the "
                "deployment with the version that created it, or start a new deployment)"
            )

    def _keys(self) -> None:
        private_key, _ = keygen()
        self.private_key = self.store.put_meta("sealing_key", private_key)  # the first one stays
        from nacl import public

        pk = public.PrivateKey(base64.b64decode(self.private_key)).public_key
        self.public_key = base64.b64encode(bytes(pk)).decode()

    def rebuild(self) -> None:
        """A fresh server role, the newest snapshot written into it (if any) and every stored event
        after it replayed; the digest must match the store's last model row."""
        with self.lock:
            self.model = ServedModel(self.config)
            self.per_token: collections.Counter[str] = collections.Counter()
            self.quarantined: collections.Counter[str] = collections.Counter()
            self.seq = 0
            self.snapshot_seq = 0
            snap = self.store.latest_snapshot()
            if snap is not None:
                try:
                    extra = restore(self.model, snap.state)
                except (SnapshotError, ValueError, KeyError, OSError) as exc:
                    self.snapshot_error = f"snapshot after event {snap.seq} not used: {exc}"
                    self.model = ServedModel(self.config)
                else:
                    self.per_token.update(extra["per_token"])
                    self.quarantined.update(extra["quarantined"])
                    self.seq = self.snapshot_seq = snap.seq
            self.restored_from_snapshot = self.seq
            self._catch_up(self.store)
            last = self.store.latest_model()
            if last is not None and (
                last.version != self.model.version or last.digest != self.model.digest()
            ):
                raise StoreError(
                    f"replaying the stored events gives model version {self.model.version} with digest "
                    f"{self.model.digest()[:12]}, but the database records version {last.version} with "
                    f"digest {last.digest[:12]}: the database is inconsistent"
                )
            self.restored_events = self.seq

    def _catch_up(self, store: Store) -> int:
        """Apply the stored events after ``self.seq`` (written by this process before a restart,
        or by another worker serving the same database); returns how many."""
        n = 0
        for ev in store.events(after=self.seq):
            self._apply(ev.kind, ev.body, ev.token)
            if ev.kind in ("report", "raw"):
                self.per_token[ev.token] += 1
            self._count_quarantined(ev.body)
            self.seq = ev.seq
            n += 1
        return n

    def refresh(self, timeout: float = 0.2) -> None:
        """Apply the events other workers stored since this one last read (several workers on one
        database); skipped if a write holds the lock longer than ``timeout`` seconds."""
        if not self.lock.acquire(timeout=timeout):
            return
        try:
            if not self._dirty and self.lost is None:
                self._catch_up(self.store)
        except Exception:  # a view answers from memory when the database cannot be read
            pass
        finally:
            self.lock.release()

    def snapshot(self) -> bool:
        """Store a snapshot of the current state (False: the role has no compiled state to
        snapshot, see :mod:`privbandits.service.storage.snapshots`)."""
        with self.lock:
            if self.lost is not None or self.seq == 0:
                return False
            blob = capture(
                self.model,
                {"per_token": dict(self.per_token), "quarantined": dict(self.quarantined)},
            )
            if blob is None:
                return False
            self.store.save_snapshot(
                Snapshot(self.seq, self.model.version, self.model.digest(), blob)
            )
            self.snapshot_seq = self.seq
            return True

    def _apply(self, kind: str, body: dict[str, Any], token: str) -> dict[str, Any]:
        """Apply a validated request body of ``token`` to the model; returns extra answer fields."""
        m = self.model
        if kind == "report":
            m.apply_report(m.parse_report(body["report"]))
            return {}
        if kind == "batch":
            reports = list(body["reports"]) + list(body.get("fill", []))
            m.apply_batch([m.parse_report(r, f"reports[{i}]") for i, r in enumerate(reports)])
            return {
                "applied": len(body["reports"]),
                "quarantined": len(body.get("quarantined", [])),
                "filled": len(body.get("fill", [])),
            }
        if kind == "select":
            return {"action": m.select(body["ticket"], m.parse_contexts(body["contexts"]), token)}
        if kind == "raw":
            m.apply_raw(body["ticket"], float(body["reward"]), token)
            return {}
        raise StoreError(f"unknown event kind {kind!r} in the database")

    # -- checks ---------------------------------------------------------------------------------
    def check_alive(self) -> None:
        """503 if the database was deleted, replaced or emptied under the running service."""
        if self.lost is None:
            try:
                self.store.verify()
            except StoreLost as exc:
                self.lost = str(exc)
            except Exception as exc:  # the database cannot be read right now: retry later
                raise Refusal(
                    503,
                    f"the database cannot be read ({type(exc).__name__}); retry later",
                    "database",
                    retry_after=1.0,
                ) from None
        if self.lost is not None:
            raise Refusal(503, self.lost, "database")

    def health(self, timeout: float = 0.5) -> str | None:
        """None if the database accepts a write transaction within ``timeout`` seconds, else why not."""
        if self.lost is not None:
            return "the database of this deployment is gone"
        try:
            self.store.probe_write(timeout)
        except StoreLost as exc:
            self.lost = str(exc)
            return "the database of this deployment is gone"
        except Exception:
            return "the database cannot write"
        return None

    def authorize(self, header: str | None, roles: tuple[str, ...]) -> Token:
        """The token of an ``Authorization: Bearer`` header, if it has one of ``roles``."""
        try:
            tok = authenticate(self.tokens, header, roles)
        except AuthError as exc:
            raise Refusal(exc.status, exc.message, "Authorization") from None
        wait = self.limiter.allow(
            tok.name, tok.rate or self.config.rate, tok.burst or self.config.burst
        )
        if wait > 0:
            self.refused["rate"] += 1
            raise Refusal(
                429,
                f"rate limit of token {tok.name!r} exceeded "
                f"({tok.rate or self.config.rate:g} requests/s, burst {tok.burst or self.config.burst}); "
                f"retry in {wait:.3f} s",
                "Authorization",
                retry_after=wait,
            )
        return tok

    def report_budget(self, tok: Token) -> int | None:
        """Accepted reports this device may post in total (None: unlimited)."""
        return report_budget(
            float(self.model.guarantee.epsilon), tok.device_epsilon or self.config.device_epsilon
        )

    def _check_budget(self, tok: Token) -> None:
        n_max = self.report_budget(tok)
        if n_max is not None and self.per_token[tok.name] >= n_max:
            g = self.model.guarantee
            self.refused["budget"] += 1
            raise Refusal(
                429,
                f"report budget of device {tok.name!r} exhausted: each report spends the accounted "
                f"epsilon={float(g.epsilon):.6g} (delta={float(g.delta):.3g}) and the device's budget "
                f"allows {n_max} report(s) (device_epsilon="
                f"{tok.device_epsilon or self.config.device_epsilon or float(g.epsilon):.6g})",
                "Authorization",
            )

    @staticmethod
    def idempotency_key(
        header: str | None, body: dict[str, Any], field: str = "idempotency_key"
    ) -> str:
        key = header if header is not None else body.get(field)
        if not isinstance(key, str) or not key or len(key) > _KEY_MAX:
            raise Refusal(
                422,
                f"an idempotency key is required: send the header 'Idempotency-Key' (or the field "
                f"'{field}'), a string of 1 to {_KEY_MAX} characters",
                "Idempotency-Key",
            )
        return key

    # -- requests -------------------------------------------------------------------------------
    def submit(
        self, kind: str, tok: Token, key: str, request: dict[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        """Validate, apply and store one request; ``(answer, replayed)``.

        ``kind`` is ``report`` (local model, or a curator's raw reward: stored as ``raw``),
        ``batch`` (shuffle) or ``select`` (curator actions).
        """
        body_hash = hashlib.sha256(canonical(request, allow_nan=True).encode()).hexdigest()
        with self.lock:
            self.check_alive()
            try:
                if self._dirty:  # a write failed after the model changed: back to the database
                    self.rebuild()
                    self._dirty = False
                with self.store.writer() as st:
                    answer, replayed = self._submit(st, kind, tok, key, request, body_hash)
            except Refusal:
                raise
            except StoreLost as exc:
                self.lost = str(exc)
                raise Refusal(503, self.lost, "database") from None
            except Exception as exc:
                self._dirty = True  # the store did not commit: rebuild the acknowledged state
                try:
                    self.rebuild()
                    self._dirty = False
                except Exception:  # the database is still unreachable: rebuilt on the next request
                    pass
                raise Refusal(
                    503,
                    f"the database did not accept the request ({type(exc).__name__}: "
                    f"{str(exc)[:300]}); nothing was counted, retry with the same Idempotency-Key",
                    "database",
                    retry_after=1.0,
                ) from None
            if self.snapshot_every and self.seq - self.snapshot_seq >= self.snapshot_every:
                try:
                    self.snapshot()
                except Exception as exc:  # a snapshot only saves start-up time
                    self.snapshot_error = f"{type(exc).__name__}: {exc}"
            return answer, replayed

    def _submit(
        self, st: Store, kind: str, tok: Token, key: str, request: dict[str, Any], body_hash: str
    ) -> tuple[dict[str, Any], bool]:
        """:meth:`submit` inside a write session ``st`` holding the deployment's writer lock."""
        self._catch_up(st)  # events other workers stored since this one last wrote
        old = st.find(tok.name, key)
        if old is not None:
            if old.body_hash != body_hash:
                self.refused["idempotency"] += 1
                raise Refusal(
                    409,
                    f"Idempotency-Key {key!r} was already used by this token for a different "
                    "request; use a new key for a new request",
                    "Idempotency-Key",
                )
            self.replayed += 1
            return old.response, True
        try:
            kind, body = self._validate(kind, tok, key, request)
        except FieldError as exc:
            self.refused[exc.field.split(".")[0].split("[")[0]] += 1
            raise Refusal(exc.status, str(exc), exc.field) from None
        before = self.model.version
        try:
            extra = self._apply(kind, body, tok.name)
        except FieldError as exc:
            self.rebuild()
            raise Refusal(exc.status, str(exc), exc.field) from None
        except PrivbanditsError as exc:
            self.rebuild()
            raise Refusal(422, f"the server role refused the request: {exc}") from None
        m = self.model
        answer = {
            "accepted": True,
            "model_version": m.version,
            "rounds": m.rounds,
            "seq": self.seq + 1,
            **extra,
        }
        if kind == "select":
            answer["ticket"] = body["ticket"]
        event = Event(self.seq + 1, kind, tok.name, key, body, body_hash, answer)
        row = (
            ModelRow(m.version, self.seq + 1, m.rounds, m.digest()) if m.version != before else None
        )
        bad = [
            Quarantined(
                self.seq + 1,
                str(body.get("batch_id", "")),
                int(q["index"]),
                str(q["field"]),
                str(q["message"]),
            )
            for q in body.get("quarantined", [])
        ]
        self._dirty = True  # until the session commits
        st.append(event, row, bad)
        self.seq += 1
        if kind in ("report", "raw"):
            self.per_token[tok.name] += 1
        self._count_quarantined(body)
        self._dirty = False  # (a failed commit sets it again in submit)
        return answer, False

    def _count_quarantined(self, body: dict[str, Any]) -> None:
        for q in body.get("quarantined", []):
            self.quarantined[str(q["field"]).split(".")[-1].split("[")[0]] += 1

    def _validate(
        self, kind: str, tok: Token, key: str, req: dict[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        m, cfg = self.model, self.config
        # (the route does not serve this model: field, why) or None
        wrong_route = {
            "report": m.kind == "shuffle"
            and (
                "report",
                "is a shuffle-model algorithm: reports reach the server only in shuffled "
                "batches (POST /v1/batches from the shuffler)",
            ),
            "batch": m.kind != "shuffle"
            and (
                "reports",
                "is not a shuffle-model algorithm; post single reports to POST /v1/reports",
            ),
            "select": m.kind != "curator"
            and (
                "contexts",
                f"runs in the {m.alg.trust_model} model: the user chooses the action on the "
                "device from GET /v1/model; no raw context is accepted",
            ),
        }.get(kind)
        if wrong_route:
            raise FieldError(wrong_route[0], f"{m.alg.name} {wrong_route[1]}", status=409)
        if kind == "select":
            reject_unknown(req, ("contexts",))
            self._check_budget(tok)
            m.check_capacity(1)
            X = m.parse_contexts(req.get("contexts"))
            return "select", {"contexts": X.tolist(), "ticket": secrets.token_hex(12)}
        if kind == "batch":
            reject_unknown(req, ("batch_id", "model_version", "reports"))
        elif m.kind == "curator":
            reject_unknown(req, ("model_version", "ticket", "reward"))
        else:
            reject_unknown(req, ("model_version", "report"))
        version = m.check_version(req.get("model_version"), cfg.max_staleness)
        if kind == "batch":
            return "batch", self._validate_batch(req, version)
        self._check_budget(tok)
        m.check_capacity(1)
        if m.kind == "curator":
            held = req.get("ticket")
            if not isinstance(held, str) or not m.holds_ticket(held, tok.name):
                raise FieldError(
                    "ticket",
                    f"unknown or already reported ticket {str(held)[:40]!r}; request an action "
                    "with POST /v1/actions first (a ticket belongs to the token that asked)",
                    status=409,
                )
            return "raw", {
                "model_version": version,
                "ticket": held,
                "reward": m.parse_reward(req.get("reward")),
            }
        report = req.get("report")
        m.parse_report(report)
        return "report", {"model_version": version, "report": report}

    def _validate_batch(self, req: dict[str, Any], version: int) -> dict[str, Any]:
        """A shuffled batch, report by report: a report that does not open or parse is quarantined
        (stored with its reason, never applied) and the rest of the batch is applied
        (:meth:`~privbandits.service.server.model.ServedModel.complete_batch`)."""
        m, cfg = self.model, self.config
        bid = req.get("batch_id")
        if not isinstance(bid, str) or not bid:
            raise FieldError("batch_id", "must be a non-empty string")
        reports = req.get("reports")
        if not isinstance(reports, list) or len(reports) < cfg.min_batch:
            n = len(reports) if isinstance(reports, list) else reports
            raise FieldError(
                "reports",
                f"must be a list of at least min_batch={cfg.min_batch} reports, got {n!r}",
            )
        m.check_capacity(len(reports))
        valid: list[tuple[int, Any]] = []
        plain: dict[int, Any] = {}
        quarantined: list[dict[str, Any]] = []
        for i, item in enumerate(reports):
            try:
                r: Any = item
                if isinstance(item, dict) and "sealed" in item:
                    reject_unknown(item, ("sealed",), f"reports[{i}].")
                    try:
                        r = open_sealed(item["sealed"], self.private_key)
                    except PrivbanditsError as exc:
                        raise FieldError(
                            f"reports[{i}].sealed", str(exc).removeprefix("sealed: ")
                        ) from None
                valid.append((i, m.parse_report(r, f"reports[{i}]")))
                plain[i] = r
            except FieldError as exc:
                quarantined.append({"index": i, "field": exc.field, "message": exc.message})
        kept, extra, fill = m.complete_batch(valid, len(reports))
        quarantined += [
            {"index": i, "field": f"reports[{i}].action", "message": why} for i, why in extra
        ]
        quarantined.sort(key=lambda q: int(q["index"]))
        return {
            "batch_id": bid,
            "model_version": version,
            "reports": [plain[i] for i, _ in kept],
            "fill": [{k: v.tolist() for k, v in f.items()} for f in fill],
            "quarantined": quarantined,
        }

    # -- views ----------------------------------------------------------------------------------
    def model_view(self) -> dict[str, Any]:
        """``GET /v1/model`` (current with the events of every worker)."""
        self.refresh()
        with self.lock:
            m = self.model
            return {
                "model_version": m.version,
                "rounds": m.rounds,
                **m.describe(),
                "public": m.public_json(),
                "config": {k: v for k, v in self.config.to_json().items() if k != "seed"},
                "public_key": self.public_key,
                "max_staleness": self.config.max_staleness,
                "min_batch": self.config.min_batch,
            }

    def status_view(self) -> dict[str, Any]:
        """``GET /v1/status`` (without the request lock: it answers while a write waits on the
        database)."""
        self.refresh()
        m = self.model
        g = m.describe()["guarantee"]
        return {
            "algorithm": m.alg.name,
            "trust_model": m.alg.trust_model,
            "model_version": m.version,
            "reports_received": m.rounds,
            "horizon": m.spec.horizon,
            "guarantee": g,
            "events": self.seq,
            "restored_events": self.restored_events,
            "replayed_requests": self.replayed,
            "refused": dict(self.refused),
            "quarantined": {
                "reports": sum(self.quarantined.values()),
                "by_field": dict(self.quarantined),
            },
            "uptime_s": time.time() - self.started,
            "database": self.store.url.split("@")[-1],
            "deployment_id": self.deployment_id,
            "database_lost": self.lost,
            "simulated_rewards": {
                "count": self.simulated_rewards,
                "recent": list(self.recent_rewards),
            },
        }

    def add_simulated_rewards(self, rewards: Any) -> int:
        """Rewards of simulated users, for the dashboard only (never stored, never used by the model)."""
        if not isinstance(rewards, list) or not rewards or len(rewards) > 10_000:
            raise Refusal(
                422, "rewards: must be a non-empty list of at most 10000 finite numbers", "rewards"
            )
        vals = []
        for i, r in enumerate(rewards):
            if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r):
                raise Refusal(
                    422, f"rewards[{i}]: must be a finite number, got {r!r}", f"rewards[{i}]"
                )
            vals.append(float(r))
        with self.lock:
            self.recent_rewards.extend(vals)
            self.simulated_rewards += len(vals)
        return len(vals)

    def export(self) -> dict[str, Any]:
        """``GET /v1/admin/export``: configuration, every event and model update."""
        with self.lock:
            return {
                "config": self.config.to_json(),
                "events": [
                    {
                        "seq": e.seq,
                        "kind": e.kind,
                        "token": e.token,
                        "idempotency_key": e.idem_key,
                        "body": e.body,
                        "response": e.response,
                    }
                    for e in self.store.events()
                ],
                "models": [vars(r) for r in self.store.models()],
                "quarantine": [vars(q) for q in self.store.quarantined()],
                "digest": self.model.digest(),
            }

    def reset(self) -> None:
        """``POST /v1/admin/reset``: delete every event and model update and start afresh."""
        with self.lock:
            self.store.wipe()
            self.rebuild()
