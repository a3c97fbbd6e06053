"""The server role of a configured algorithm, one user (one report) at a time.

:class:`ServedModel` runs exactly the code ``simulate(..., engine="reference")`` runs on the server
side (:mod:`privbandits.engine.reference`), with one replication (``R = 1``) and the server's
streams from the configured seed:

* **local** DP: the :class:`~privbandits.algorithms.base.Server` publishes its
  :class:`~privbandits.core.messages.PublicState`; a validated report becomes a
  :class:`~privbandits.core.messages.PrivatizedMessage` handed to ``Server.receive(t, ...)``,
  ``t`` the number of reports counted before it;
* **shuffle** DP: a shuffled batch of ``n`` reports becomes a
  :class:`~privbandits.core.messages.ShuffledBatch` handed to ``Server.receive_batch``;
* **central / joint** DP and non-private algorithms: a trusted curator.  ``select`` runs
  ``Curator.select`` on a user's raw contexts and holds them under a ticket; the user's raw
  reward (reported with the ticket) runs ``Curator.update``.

Every state change is a deterministic function of the previous state and the validated request,
so replaying the stored requests rebuilds the state bit for bit (:meth:`ServedModel.digest`).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

from privbandits.algorithms.base import (
    Algorithm,
    BatchedAlgorithm,
    Curator,
    LocalAlgorithm,
    ShuffleAlgorithm,
)
from privbandits.algorithms.kernel import LocalKernel
from privbandits.core.errors import PrivbanditsError, ValidationError
from privbandits.core.messages import PrivatizedMessage, ShuffledBatch
from privbandits.engine.protocol import deliver, deliver_batch, start
from privbandits.engine.recorder import Recorder
from privbandits.engine.reference import drive_reference
from privbandits.privacy.inputs import check_client_inputs
from privbandits.service.codec import FieldError, encode_array, parse_array
from privbandits.service.config import ServiceConfig, build_problem
from privbandits.service.ranges import output_rules
from privbandits.service.reports import FieldSchema, ReportFormat, schedule_of
from privbandits.service.storage.snapshots import kernel_state_arrays

__all__ = ["ServedModel", "warm_up"]

#: Rounds a probe run may take to see the algorithm's first message.
_PROBE_ROUNDS = 5000


class _Found(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


def _kind(alg: Algorithm) -> str:
    if isinstance(alg, ShuffleAlgorithm):
        return "shuffle"
    if isinstance(alg, LocalAlgorithm):
        return "local"
    if isinstance(alg, Curator):
        return "curator"
    raise ValidationError(
        f"{type(alg).__name__} is not a Curator, LocalAlgorithm or ShuffleAlgorithm"
    )


def _schema_of(payload: Any, lead: int) -> tuple[FieldSchema, ...]:
    out = []
    for name, arr in payload.items():
        a = np.asarray(arr)
        out.append(
            FieldSchema(
                name, tuple(int(s) for s in a.shape[lead:]), "i" if a.dtype.kind in "iub" else "f"
            )
        )
    return tuple(out)


def _probe_message(config: ServiceConfig, kind: str) -> tuple[str, tuple[FieldSchema, ...]]:
    """Mechanism and per-report fields, read off a probe run of the algorithm's own roles.

    Used for algorithms without a compiled message layout: a separate instance runs the reference
    driver until its server receives the first message (local) or batch (shuffle).
    """
    alg, env, _ = build_problem(config, config.seed + 1)
    assert isinstance(alg, LocalAlgorithm)
    server = alg.server
    if kind == "local":
        orig = server.receive

        def capture(t: int, message: PrivatizedMessage) -> None:
            orig(t, message)
            raise _Found((message.mechanism, _schema_of(message.payload, 1)))

        server.receive = capture  # type: ignore[method-assign]
    else:
        orig_b = server.receive_batch

        def capture_b(t: int, batch: ShuffledBatch) -> None:
            orig_b(t, batch)
            raise _Found((batch.mechanism, _schema_of(batch.payload, 2)))

        server.receive_batch = capture_b  # type: ignore[method-assign]
    T = min(config.horizon, _PROBE_ROUNDS)
    rec = Recorder(alg.estimate, env.theta_star, 1, np.array([T]))
    try:
        drive_reference(alg, env, T, rec, lambda _: None)
    except _Found as found:
        mechanism, schema = found.value
        return str(mechanism), schema
    raise ValidationError(
        f"algorithm {config.algorithm!r} sent no message in {T} probe rounds; "
        "its report format cannot be determined"
    )


def warm_up(config: ServiceConfig, rounds: int = 2) -> None:
    """Run a throwaway copy of the algorithm for a few rounds of the reference driver, so that its
    compiled steps are loaded before the first request (and the first answer is not slow)."""
    alg, env, _ = build_problem(config, config.seed + 1)
    T = min(rounds, config.horizon)
    drive_reference(
        alg, env, T, Recorder(alg.estimate, env.theta_star, 1, np.array([T])), lambda _: None
    )


class ServedModel:
    """The server role of ``config``'s algorithm (see the module docstring).

    Attributes
    ----------
    version : int
        Number of model updates applied (reports in the local model and for curators, batches
        in the shuffle model).
    rounds : int
        Users counted so far (``t`` of the next one).
    """

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        alg, env, spec = build_problem(config, config.seed)
        self.alg, self.spec = alg, spec
        self.kind = _kind(alg)
        if isinstance(
            alg, BatchedAlgorithm
        ):  # the public action catalogue, as the reference driver
            start(alg, env.next_round())
        if self.kind == "shuffle" and _overrides(alg.server, "wants_round"):
            raise ValidationError(
                f"{alg.name}: multi-round shuffle protocols (Server.wants_round) cannot be served; "
                "serve a single-round shuffle algorithm"
            )
        self.version = 0
        self.rounds = 0
        self.tickets: dict[
            str, tuple[int, np.ndarray, int, str]
        ] = {}  # ticket -> (t, X, a, owner token)
        cal = alg.calibration
        self.guarantee = cal.guarantee
        mechanism = ""
        schema: tuple[FieldSchema, ...] = ()
        if self.kind in ("local", "shuffle"):
            kernel = getattr(alg, "kernel", None)
            if isinstance(kernel, LocalKernel) and self.kind == "local":
                mechanism = kernel.message.mechanism
                schema = tuple(FieldSchema(n, tuple(s)) for n, s in kernel.message.fields)
            else:
                mechanism, schema = _probe_message(config, self.kind)
        #: The report format (one reader of it, shared with the shuffler and the device).
        self.format = ReportFormat(
            mechanism,
            schema,
            spec.K,
            output_rules(alg.output_ranges()),
        )
        self.mechanism = mechanism

    # -- description ------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """Algorithm, parameters, calibration, guarantee and the report format (JSON)."""
        g = self.guarantee
        return {
            "algorithm": self.alg.name,
            "trust_model": self.alg.trust_model,
            "role": self.kind,
            "params": _jsonable(self.alg.get_params()),
            "calibration": {
                "preset": self.alg.calibration.preset,
                "resolved": _jsonable(dict(self.alg.calibration.resolved)),
            },
            "guarantee": _guarantee_json(g),
            "problem": {
                "d": self.spec.d,
                "K": self.spec.K,
                "setting": self.spec.setting,
                "horizon": self.spec.horizon,
                "link": self.spec.link.name,
                "context_bound": self.spec.context_bound,
                "reward_range": list(self.spec.reward_range),
            },
            "report": self.format.describe(),
        }

    def public_json(self) -> dict[str, Any]:
        """The public state the server publishes (curators publish none: they release actions)."""
        if self.kind == "curator":
            return {}
        assert isinstance(self.alg, LocalAlgorithm)
        return {k: encode_array(np.asarray(v)) for k, v in self.alg.server.public_state().items()}

    def estimate(self) -> np.ndarray | None:
        """The server's current estimate (replication axis dropped)."""
        est = self.alg.estimate()
        return None if est is None else np.asarray(est)[0]

    def digest(self) -> str:
        """sha256 of the complete server-side state: counters, state arrays and random streams."""
        h = hashlib.sha256()
        h.update(f"{self.version}:{self.rounds}:{sorted(self.tickets)}".encode())
        arrays = kernel_state_arrays(self)
        if arrays is None:  # numpy roles: what they publish and estimate
            arrays = []
            if isinstance(self.alg, LocalAlgorithm):
                arrays += [np.asarray(v) for v in self.alg.server.public_state().values()]
            est = self.alg.estimate()
            if est is not None:
                arrays.append(np.asarray(est))
        for a in arrays:
            a = np.ascontiguousarray(a)
            h.update(str((a.dtype.str, a.shape)).encode())
            h.update(a.tobytes())
        streams = self.alg.streams
        for role in ("server", "policy", "shuffler"):
            st = getattr(streams, role).bit_generator.state
            h.update(
                repr(
                    (st["bit_generator"], st["state"], st.get("has_uint32"), st.get("uinteger"))
                ).encode()
            )
        return h.hexdigest()

    # -- validation -------------------------------------------------------------------------
    def parse_report(self, report: Any, where: str = "report") -> dict[str, np.ndarray]:
        """A client's privatized report as arrays (no replication axis), validated
        (:meth:`privbandits.service.reports.ReportFormat.parse`)."""
        return self.format.parse(report, where)

    def check_version(self, model_version: Any, max_staleness: int) -> int:
        """The report's ``model_version`` (int, not newer than the model, at most ``max_staleness`` old)."""
        if isinstance(model_version, bool) or not isinstance(model_version, int):
            raise FieldError(
                "model_version",
                f"must be an integer (the version of the model the report was "
                f"computed from), got {model_version!r}",
            )
        if model_version > self.version:
            raise FieldError(
                "model_version",
                f"{model_version} is newer than the server's model version {self.version}",
                status=409,
            )
        if self.version - model_version > max_staleness:
            raise FieldError(
                "model_version",
                f"{model_version} is stale: the model is at version {self.version} "
                f"and reports may be at most {max_staleness} versions old; fetch "
                "GET /v1/model",
                status=409,
            )
        return model_version

    def check_capacity(self, n: int = 1) -> None:
        """Refuse users beyond the horizon the accounting covers."""
        if self.rounds + n > self.spec.horizon:
            raise FieldError(
                "report",
                f"the configured horizon T={self.spec.horizon} is exhausted "
                f"({self.rounds} users counted); the accounted guarantee covers "
                f"{self.spec.horizon} users",
                status=409,
            )

    # -- state changes (deterministic) --------------------------------------------------------
    def apply_report(self, fields: dict[str, np.ndarray]) -> None:
        """Local model: ``Server.receive(t, PrivatizedMessage)`` with ``t = rounds``."""
        assert isinstance(self.alg, LocalAlgorithm) and self.kind == "local"
        deliver(
            self.alg,
            self.rounds,
            PrivatizedMessage({k: v[None] for k, v in fields.items()}, self.mechanism),
        )
        self.rounds += 1
        self.version += 1

    def apply_batch(self, reports: list[dict[str, np.ndarray]]) -> None:
        """Shuffle model: the batch (already shuffled, in the order received) to ``Server.receive_batch``
        (an empty batch changes nothing)."""
        assert isinstance(self.alg, ShuffleAlgorithm)
        n = len(reports)
        if not n:
            return
        payload = {
            f.name: np.stack([r[f.name] for r in reports], axis=0)[None] for f in self.format.fields
        }
        batch = ShuffledBatch(payload=payload, mechanism=self.mechanism, n_users=n)
        deliver_batch(self.alg, self.rounds + n - 1, batch)
        self.rounds += n
        self.version += 1

    def schedule(self) -> tuple[list[int], int] | None:
        """``(counts, committed)`` of the public batched-elimination schedule, else ``None``
        (:func:`privbandits.service.reports.schedule_of`)."""
        if self.kind != "shuffle":
            return None
        assert isinstance(self.alg, LocalAlgorithm)
        return schedule_of({k: np.asarray(v)[0] for k, v in self.alg.server.public_state().items()})

    def complete_batch(
        self, valid: list[tuple[int, dict[str, np.ndarray]]], n_items: int
    ) -> tuple[
        list[tuple[int, dict[str, np.ndarray]]], list[tuple[int, str]], list[dict[str, np.ndarray]]
    ]:
        """The batch the server role receives from the valid reports of a shuffled batch of
        ``n_items`` reports: ``(kept, extra, fill)``.

        Without a public schedule every valid report is kept.  With one (Hanna et al. 2022,
        Algorithm 3: the analyzer accepts only batches of exactly ``n_ia`` reports per action ``a``)
        the batch must hold ``n_i = sum_a n_ia`` reports; a valid report beyond its action's
        ``n_ia`` slots is quarantined too (``extra``: ``(index, reason)``), and every slot left
        without a valid report is answered by a zero report (``fill``,
        :meth:`~privbandits.service.reports.ReportFormat.neutral`).  A zero report is a value any
        device may send: it moves the action's estimate by at most ``max |r| / n_ia`` and costs no
        user privacy, and the model advances instead of waiting for a report that never comes.

        Raises
        ------
        FieldError
            ``reports`` when the batch size differs from the protocol's (or no batch is open).
        """
        sched = self.schedule()
        if sched is None:
            return valid, [], []
        counts, committed = sched
        n_i = sum(counts)
        if committed >= 0 or n_i == 0:
            raise FieldError(
                "reports",
                f"model version {self.version} has no open batch (the schedule has "
                "committed to an action): no batch is accepted",
                status=409,
            )
        if n_items != n_i:
            raise FieldError(
                "reports",
                f"the batch holds {n_items} reports; the protocol's batch of model version "
                f"{self.version} has n_i = {n_i} (n_ia = {counts})",
            )
        seen = [0] * len(counts)
        kept: list[tuple[int, dict[str, np.ndarray]]] = []
        extra: list[tuple[int, str]] = []
        for i, r in valid:
            a = int(np.asarray(r["action"]).reshape(-1)[0]) if "action" in r else -1
            if not 0 <= a < len(counts) or seen[a] >= counts[a]:
                have = counts[a] if 0 <= a < len(counts) else 0
                extra.append(
                    (
                        i,
                        f"action {a} has {have} slot(s) in this batch and they are answered: "
                        "one report too many",
                    )
                )
                continue
            seen[a] += 1
            kept.append((i, r))
        fill = [self.format.neutral(a) for a, c in enumerate(counts) for _ in range(c - seen[a])]
        return kept, extra, fill

    def parse_contexts(self, contexts: Any) -> np.ndarray:
        """A curator request's raw contexts: shape ``(K, d)`` (single) or ``(d,)`` (multi), within ``C_B``."""
        shape = (self.spec.K, self.spec.d) if self.spec.setting == "single" else (self.spec.d,)
        X = parse_array("contexts", contexts, shape)
        try:
            check_client_inputs(X[None], np.zeros(1), self.spec.context_bound)
        except PrivbanditsError as exc:
            raise FieldError("contexts", str(exc)) from None
        return X

    def select(self, ticket: str, X: np.ndarray, owner: str) -> int:
        """Curator: ``Curator.select(t, X)`` with ``t = rounds``; the contexts wait under ``ticket``,
        which only the token ``owner`` may report for."""
        assert isinstance(self.alg, Curator)
        a = int(self.alg.select(self.rounds, X[None])[0])
        self.tickets[ticket] = (self.rounds, X, a, owner)
        return a

    def holds_ticket(self, ticket: str, owner: str) -> bool:
        """Whether ``ticket`` is open and was issued to ``owner``."""
        held = self.tickets.get(ticket)
        return held is not None and held[3] == owner

    def parse_reward(self, reward: Any) -> float:
        """A curator report's raw reward (a finite number)."""
        if (
            isinstance(reward, bool)
            or not isinstance(reward, (int, float))
            or not math.isfinite(reward)
        ):
            raise FieldError("reward", f"must be a finite number, got {reward!r}")
        return float(reward)

    def apply_raw(self, ticket: str, reward: float, owner: str) -> None:
        """Curator: ``Curator.update(t, X, a, r)`` for the contexts and action of ``owner``'s ticket."""
        assert isinstance(self.alg, Curator)
        if not self.holds_ticket(ticket, owner):
            raise FieldError(
                "ticket",
                f"unknown or already reported ticket {ticket[:40]!r}; request an action with "
                "POST /v1/actions first",
                status=409,
            )
        _, X, a, _ = self.tickets.pop(ticket)
        self.alg.update(self.rounds, X[None], np.array([a], dtype=np.int64), np.array([reward]))
        self.rounds += 1
        self.version += 1


def _overrides(obj: object, name: str) -> bool:
    from privbandits.algorithms.base import Server

    return getattr(type(obj), name) is not getattr(Server, name)


def _guarantee_json(g: Any) -> dict[str, Any]:
    return {
        "model": g.model,
        "epsilon": _num(g.epsilon),
        "delta": _num(g.delta),
        "unit": g.unit,
        "notes": g.notes,
        "text": str(g),
    }


def _num(x: Any) -> Any:
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else ("inf" if x > 0 else "nan" if math.isnan(x) else "-inf")
    return x


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _num(obj)
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    return str(obj)
