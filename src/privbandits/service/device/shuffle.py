"""Client SDK of the shuffle model: a device that reports through a shuffler, sealed to the server.

:class:`ShuffleDevice` runs on the user's device and talks only to the shuffler
(``privbandits serve-shuffler``):

1. ``GET /v1/model`` (relayed by the shuffler): the server's public model, its public sealing key
   and the configuration the device rebuilds the algorithm from;
2. ``GET /v1/assignment``: what the shuffler hands this user (the Shuffler role's ``assign``: in
   Hanna et al. (2022), Algorithm 3, the user's action slot and the batch size ``n_i``);
3. the algorithm's own :class:`~privbandits.algorithms.base.Client` randomizes the user's reward
   on the device (:func:`privbandits.engine.protocol.device_randomize`: the assignment is checked
   against the public space the algorithm declares); the report (the public action and the privatized value, nothing else) is
   *sealed* to the server's public key (a libsodium sealed box, its JSON padded to the longest
   report of the format so that every sealed report has one size), so the shuffler forwards it
   without being able to read it;
4. ``POST /v1/reports`` to the shuffler, retried with the same ``Idempotency-Key``.

:func:`simulate_shuffle_users` drives simulated users through a shuffler (the environment's and
the client's streams of ``simulate(..., seed=seed)``).

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithm 3; Bittau et al. (2017), Prochlo.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

from privbandits.algorithms.base import ShuffleAlgorithm
from privbandits.core.errors import ValidationError
from privbandits.core.messages import PublicState
from privbandits.service.device.client import (
    DeviceClient,
    ModelSnapshot,
    ServiceError,
    _decode_public,
)

__all__ = ["Assignment", "ShuffleDevice"]


@dataclass(frozen=True)
class Assignment:
    """What the shuffler handed this user: the model version and the user's public state."""

    version: int
    public: PublicState

    @property
    def action(self) -> int:
        """The assigned action (``public["action"]``)."""
        return int(np.asarray(self.public["action"]).reshape(-1)[0])

    @property
    def reports(self) -> bool:
        """Whether this user reports (``n > 0``: its batch is open; ``n = 0`` after the commit)."""
        n = self.public.get("n")
        return n is None or int(np.asarray(n).reshape(-1)[0]) > 0


class ShuffleDevice(DeviceClient):
    """One device of a shuffle-model algorithm, talking to the shuffler at ``base_url``.

    Parameters are those of :class:`~privbandits.service.device.client.DeviceClient` (``base_url`` is the
    shuffler's), plus:

    server_key : str, optional
        The server's public sealing key (base64), obtained from the server itself (its
        ``GET /v1/model``) or pinned in the app.  The model the shuffler relays must carry this
        key, else the device refuses to seal: a shuffler that substituted its own key could read
        the reports.  Without it the device trusts the relayed key.
    """

    def __init__(
        self, base_url: str, token: str, *, server_key: str | None = None, **kw: Any
    ) -> None:
        super().__init__(base_url, token, **kw)
        self.server_key = server_key

    def sealing_key(self, model: ModelSnapshot) -> str:
        """The key reports are sealed to: the relayed ``public_key``, checked against ``server_key``."""
        relayed = str(model.info["public_key"])
        if self.server_key is not None and relayed != self.server_key:
            raise ValidationError(
                "the model relayed by the shuffler carries a public key other than the server's: "
                "refusing to seal reports to it"
            )
        return relayed

    def assignment(self, wait: float = 30.0) -> Assignment:
        """``GET /v1/assignment``: this user's action slot (or public state) from the shuffler.

        While every slot of the open batch is handed out (409: the batch is complete and on its
        way to the server), asks again for up to ``wait`` seconds.
        """
        deadline = time.monotonic() + wait
        while True:
            try:
                ans = self._request("GET", "/v1/assignment")
            except ServiceError as exc:
                if exc.status != 409 or time.monotonic() > deadline:
                    raise
                time.sleep(self.backoff)
                continue
            return Assignment(int(ans["model_version"]), _decode_public(ans["public"]))

    def privatize_sealed(
        self, contexts: np.ndarray, reward: float, model: ModelSnapshot, assigned: Assignment
    ) -> dict[str, Any]:
        """The request body: the model version and the sealed report, nothing else.

        The report is the algorithm's randomizer output for the assigned action (with that
        action, which is public in the shuffle protocol), sealed to ``model``'s public key.
        """
        from privbandits.service import sealing
        from privbandits.service.reports import FieldSchema, ReportFormat

        alg = self._checked(model, ShuffleAlgorithm)
        assert isinstance(alg, ShuffleAlgorithm)
        a = assigned.action
        msg, payload = self._randomize(alg, assigned.version, assigned.public, contexts, a, reward)
        report: dict[str, Any] = {"action": a}
        report.update(payload)
        # padded to the longest report of the device's own format: every sealed report has one size
        fmt = ReportFormat(
            msg.mechanism,
            (
                FieldSchema("action", (), "i"),
                *(
                    FieldSchema(
                        k,
                        tuple(np.asarray(v).shape[1:]),
                        "i" if np.asarray(v).dtype.kind in "iub" else "f",
                    )
                    for k, v in msg.payload.items()
                ),
            ),
            0,
        )
        return {
            "model_version": assigned.version,
            "report": sealing.seal(report, self.sealing_key(model), size=fmt.sealed_size()),
        }

    def report_sealed(
        self,
        contexts: np.ndarray,
        reward: float,
        model: ModelSnapshot,
        assigned: Assignment,
        key: str | None = None,
    ) -> dict[str, Any]:
        """Privatize and seal on the device, send to the shuffler; returns its answer."""
        return self.send(
            self.privatize_sealed(contexts, reward, model, assigned), key or uuid.uuid4().hex
        )
