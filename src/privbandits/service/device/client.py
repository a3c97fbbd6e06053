"""Device SDK of a served model (``privbandits serve``): the user's side of the trust boundary.

:class:`DeviceClient` runs on the user's device.  It fetches the public model, chooses the action
and randomizes the user's own data **locally** with the algorithm's own
:class:`~privbandits.algorithms.base.Client` code, through the one round protocol
(:func:`privbandits.engine.protocol.device_choose` and
:func:`~privbandits.engine.protocol.device_randomize`: the public state the server sent is
checked against the space the algorithm declares, the user's inputs against the problem, the
message is clipped to the accounted sensitivity whatever the server sent), and sends only the
privatized report (the randomizer's output and the model version it was computed from); the raw
context, reward and any identifier stay on the device.  A report is retried with the same
``Idempotency-Key`` until the server answers, so it is counted once even when an answer is lost.

The server is not trusted (the documentation's Concepts: trust models).  Without an algorithm
passed by the app, the device rebuilds the served algorithm from the configuration the server
publishes and computes its guarantee itself; a :class:`Pin` given by the app (the algorithm, the
trust model, the weakest epsilon and delta it accepts) makes the device refuse a model whose
accounted guarantee is weaker, before anything leaves the device.

For a trusted-curator algorithm (central or joint DP) the device sends its raw contexts and
reward by design (``select`` / ``report_reward``); the model's guarantee says so.

Simulated users: :mod:`privbandits.service.device.simulate`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privbandits.algorithms.base import Algorithm, Curator, LocalAlgorithm, ShuffleAlgorithm
from privbandits.core.errors import PrivbanditsError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.engine.protocol import device_choose, device_randomize

__all__ = ["DeviceClient", "ModelSnapshot", "Pin", "ServiceError", "local_algorithm"]


class ServiceError(PrivbanditsError):
    """The server refused a request (``status``, ``field`` and its message)."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.message, self.field = status, message, field


@dataclass(frozen=True)
class ModelSnapshot:
    """What ``GET /v1/model`` returned: version, public state and the description."""

    version: int
    public: PublicState
    info: dict[str, Any]


@dataclass(frozen=True)
class Pin:
    """The guarantee an app requires of the model it reports to, checked on the device.

    Parameters
    ----------
    algorithm : str, optional
        Registry name of the algorithm the app was built for.
    trust_model : str, optional
        ``"local"`` or ``"shuffle"`` (a device pinned to these never sends raw data to a curator);
        or ``"central"`` / ``"joint"`` for an app that trusts a curator.
    epsilon, delta : float, optional
        The weakest per-user guarantee accepted: the device's own accounting of the served
        algorithm (computed on the device from the parameters, not read from the server's
        description) must have ``epsilon <= epsilon`` and ``delta <= delta``.
    """

    algorithm: str | None = None
    trust_model: str | None = None
    epsilon: float | None = None
    delta: float | None = None

    def check(self, alg: Algorithm) -> None:
        """Raise :class:`~privbandits.core.errors.ValidationError` if ``alg`` (the algorithm as the
        device rebuilt it) does not meet the pin."""
        g = alg.calibration.guarantee
        if self.algorithm is not None and alg.name != self.algorithm:
            raise ValidationError(
                f"the server serves {alg.name!r}; this device is pinned to {self.algorithm!r}"
            )
        if self.trust_model is not None and alg.trust_model != self.trust_model:
            raise ValidationError(
                f"the server serves a {alg.trust_model}-model algorithm ({alg.name}); this device is "
                f"pinned to the {self.trust_model} model"
            )
        eps, delta = float(g.epsilon), float(g.delta)
        if self.epsilon is not None and not eps <= self.epsilon * (1 + 1e-9):
            raise ValidationError(
                f"the served {alg.name} accounts epsilon={eps:.6g} per user, weaker than the pinned "
                f"epsilon={self.epsilon:.6g}: refusing to report"
            )
        if self.delta is not None and not delta <= self.delta * (1 + 1e-9):
            raise ValidationError(
                f"the served {alg.name} accounts delta={delta:.3g} per user, weaker than the pinned "
                f"delta={self.delta:.3g}: refusing to report"
            )


def _decode_public(public: dict[str, Any]) -> PublicState:
    from privbandits.service.codec import decode_array

    return PublicState({k: decode_array(v) for k, v in public.items()})


def local_algorithm(info: dict[str, Any], seed: int | None = None) -> Algorithm:
    """The served algorithm rebuilt on the device from ``GET /v1/model``'s ``config`` (R = 1).

    Only its :class:`~privbandits.algorithms.base.Client` role is used; the calibration must
    match the server's (checked).
    """
    from privbandits.service.config import ServiceConfig, build_problem

    cfg = info["config"]
    sc = ServiceConfig(
        algorithm=cfg["algorithm"],
        params=dict(cfg["params"]),
        env=dict(cfg["env"]),
        horizon=int(cfg["horizon"]),
    )
    alg, _, _ = build_problem(sc, 0 if seed is None else seed)
    return alg


class DeviceClient:
    """One device's connection to a served model (see the module docstring).

    Parameters
    ----------
    base_url : str
        The server, e.g. ``"http://127.0.0.1:8000"`` (``https://`` with TLS).
    token : str
        This device's client token.
    algorithm : Algorithm, optional
        The algorithm reset on the served problem (default: rebuilt from ``GET /v1/model``).
    rng_policy, rng_client : numpy Generator, optional
        The device's policy randomness and privacy noise (default: fresh OS entropy).
    http : httpx.Client, optional
        The HTTP client (default: a new one with ``timeout``).
    retries : int
        Attempts per request on connection errors and 5xx answers (same idempotency key).
    pin : Pin, optional
        The guarantee the app requires (checked before any report or raw context is sent).
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        algorithm: Algorithm | None = None,
        rng_policy: np.random.Generator | None = None,
        rng_client: np.random.Generator | None = None,
        http: Any = None,
        timeout: float = 10.0,
        retries: int = 8,
        backoff: float = 0.05,
        pin: Pin | None = None,
    ) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self.http = http if http is not None else httpx.Client(timeout=timeout)
        self.headers = {"Authorization": f"Bearer {token}"}
        self.retries, self.backoff = retries, backoff
        self.rng_policy = rng_policy if rng_policy is not None else np.random.default_rng()
        self.rng_client = rng_client if rng_client is not None else np.random.default_rng()
        self._alg = algorithm
        self.pin = pin

    # -- transport --------------------------------------------------------------------------
    def _request(
        self, method: str, path: str, body: Any = None, key: str | None = None
    ) -> dict[str, Any]:
        import httpx

        headers = dict(self.headers)
        if key is not None:
            headers["Idempotency-Key"] = key
        last: Exception | None = None
        for attempt in range(self.retries):
            try:
                resp = self.http.request(method, self.base_url + path, json=body, headers=headers)
            except httpx.TransportError as exc:
                last = exc
            else:
                if resp.status_code < 400:
                    return dict(resp.json())
                try:
                    err = resp.json()["error"]
                except (ValueError, KeyError, TypeError):
                    err = {"message": resp.text, "field": None}
                if resp.status_code < 500 and resp.status_code != 429:
                    raise ServiceError(resp.status_code, err.get("message", ""), err.get("field"))
                last = ServiceError(resp.status_code, err.get("message", ""), err.get("field"))
                if resp.status_code == 429 and "budget" in str(err.get("message", "")):
                    raise last
            time.sleep(self.backoff * (2 ** min(attempt, 6)))
        raise ServiceError(0, f"{method} {path} failed after {self.retries} attempts: {last}")

    # -- model ------------------------------------------------------------------------------
    def fetch_model(self) -> ModelSnapshot:
        """``GET /v1/model``."""
        info = self._request("GET", "/v1/model")
        return ModelSnapshot(int(info["model_version"]), _decode_public(info["public"]), info)

    @property
    def algorithm(self) -> Algorithm:
        """The algorithm on the device: the app's own, or rebuilt from the served configuration
        (checked against the pin)."""
        if self._alg is None:
            alg = local_algorithm(self.fetch_model().info)
            if self.pin is not None:
                self.pin.check(alg)
            self._alg = alg
        return self._alg

    def _checked(self, model: ModelSnapshot, kind: type) -> Algorithm:
        """The device's algorithm, of role ``kind``, meeting the pin, and calibrated as the server says."""
        alg = self.algorithm
        if self.pin is not None:
            self.pin.check(alg)
        local = isinstance(alg, LocalAlgorithm) and not isinstance(alg, ShuffleAlgorithm)
        if kind is LocalAlgorithm and not local:
            raise ValidationError(
                f"{alg.name}: choose/report on the device are for local-model algorithms "
                "(shuffle model: ShuffleDevice; curators: select/report_reward)"
            )
        if not isinstance(alg, kind):
            raise ValidationError(
                f"{alg.name} runs in the {alg.trust_model} model, not as a {kind.__name__}"
            )
        mine = (model.info.get("guarantee") or {}).get("text")
        if str(alg.guarantee) != mine:
            raise ValidationError(
                f"the device's calibration ({alg.guarantee}) differs from the server's ({mine})"
            )
        return alg

    def _randomize(
        self,
        alg: LocalAlgorithm,
        version: int,
        public: PublicState,
        contexts: np.ndarray,
        action: int,
        reward: float,
    ) -> tuple[PrivatizedMessage, dict[str, Any]]:
        """The randomizer's message for the user's one round under ``public`` at model ``version``
        (:func:`privbandits.engine.protocol.device_randomize`), and its payload as JSON lists."""
        msg = device_randomize(
            alg.client,
            alg.spec,
            version,
            public,
            np.asarray(contexts)[None],
            np.array([action]),
            np.array([reward]),
            self.rng_client,
        )
        return msg, {k: np.asarray(v)[0].tolist() for k, v in msg.payload.items()}

    # -- local model ------------------------------------------------------------------------
    def choose(self, contexts: np.ndarray, model: ModelSnapshot) -> int:
        """The action for the user's own ``contexts`` ((K, d) or (d,)), chosen on the device from the
        checked public state (:func:`privbandits.engine.protocol.device_choose`)."""
        alg = self._checked(model, LocalAlgorithm)
        assert isinstance(alg, LocalAlgorithm)
        X = np.asarray(contexts)[None]
        return int(
            device_choose(alg.client, alg.spec, model.version, model.public, X, self.rng_policy)[0]
        )

    def privatize(
        self, contexts: np.ndarray, action: int, reward: float, model: ModelSnapshot
    ) -> dict[str, Any]:
        """The request body: the local randomizer's output and the model version, nothing else
        (:func:`privbandits.engine.protocol.device_randomize`)."""
        alg = self._checked(model, LocalAlgorithm)
        assert isinstance(alg, LocalAlgorithm)
        _, report = self._randomize(alg, model.version, model.public, contexts, action, reward)
        return {"model_version": model.version, "report": report}

    def send(self, body: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        """``POST /v1/reports`` with one idempotency key for every retry."""
        return self._request("POST", "/v1/reports", body, key or uuid.uuid4().hex)

    def report(
        self, contexts: np.ndarray, action: int, reward: float, model: ModelSnapshot
    ) -> dict[str, Any]:
        """Privatize on the device and send; returns the server's answer."""
        return self.send(self.privatize(contexts, action, reward, model))

    # -- trusted curator --------------------------------------------------------------------
    def select(self, contexts: np.ndarray, key: str | None = None) -> tuple[int, str]:
        """Curator: send the raw contexts, get ``(action, ticket)`` (refused on a device pinned to
        the local or shuffle model: the raw contexts never leave it)."""
        if self.pin is not None:
            self._checked(ModelSnapshot(0, PublicState({}), self.fetch_model().info), Curator)
        ans = self._request(
            "POST",
            "/v1/actions",
            {"contexts": np.asarray(contexts, dtype=float).tolist()},
            key or uuid.uuid4().hex,
        )
        return int(ans["action"]), str(ans["ticket"])

    def report_reward(
        self, ticket: str, reward: float, model_version: int, key: str | None = None
    ) -> dict[str, Any]:
        """Curator: the raw reward of the user holding ``ticket``."""
        body = {"model_version": model_version, "ticket": ticket, "reward": float(reward)}
        return self._request("POST", "/v1/reports", body, key or uuid.uuid4().hex)

    def post_simulated_rewards(self, rewards: Sequence[float]) -> None:
        """Rewards of *simulated* users, for the dashboard only (a real device never sends them)."""
        self._request("POST", "/v1/simulation/rewards", {"rewards": [float(r) for r in rewards]})

    def model_version(self) -> int:
        """The server's model version (``GET /v1/model``)."""
        return int(self._request("GET", "/v1/model")["model_version"])
