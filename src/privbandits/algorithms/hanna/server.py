"""Untrusted-server side shared by Algorithms 2 and 3 of Hanna et al. (2022).

The server of the local and shuffle models holds the *public* elimination state (surviving set
``A_i``, design, schedule ``n_ia``, estimates): everything it computes is a function of the
public action catalogue and of privatized per-action sums.  It never receives a raw reward:
:func:`check_reports` accepts only :class:`PrivatizedMessage` / :class:`ShuffledBatch` objects
of the expected randomizer with exactly the keys ``("action", "reward_hat")`` (actions are public
in this paper's model, Hanna et al. 2022, section 2).

The action catalogue ``A`` is public (a fixed, known set, Hanna et al. 2022, section 2): the driver installs
the engine built on it before the first user arrives (:meth:`EliminationServer.start`, called
through :meth:`~privbandits.algorithms.base.BatchedAlgorithm.start_batches`); users never talk to
the server except through the checked channel.

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithms 2-3, section 2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privbandits.algorithms.base import Server
from privbandits.algorithms.hanna.elimination import BatchPlan, HannaElimination
from privbandits.algorithms.hanna.widths import LocalWidth, ScaleFn
from privbandits.core.errors import TrustBoundaryError
from privbandits.core.messages import PublicState, check_real_arrays
from privbandits.core.spec import EnvSpec

__all__ = ["REPORT_KEYS", "EliminationServer", "ServerHeldEngine", "check_reports"]

#: Payload keys of a report: the (public) action and the privatized reward.
REPORT_KEYS: tuple[str, ...] = ("action", "reward_hat")


def check_reports(obj: object, kind: type, mechanism: str) -> tuple[np.ndarray, np.ndarray]:
    """``(action, reward_hat)`` arrays of a message after checking what crosses the boundary.

    Raises
    ------
    TrustBoundaryError
        If ``obj`` is not a ``kind`` (:class:`PrivatizedMessage` in the local model,
        :class:`ShuffledBatch` in the shuffle model), comes from another randomizer, or carries
        other payload keys (e.g. a raw reward or a client id).
    """
    if not isinstance(obj, kind):
        raise TrustBoundaryError(
            f"the server only accepts {kind.__name__} objects, got {type(obj).__name__}; "
            "raw rewards never reach the server in the local and shuffle models"
        )
    msg: Any = obj
    if msg.mechanism != mechanism:
        raise TrustBoundaryError(
            f"expected reports of randomizer {mechanism!r}, got {msg.mechanism!r}"
        )
    if set(msg.payload) != set(REPORT_KEYS):
        raise TrustBoundaryError(
            f"report payload keys must be {REPORT_KEYS}, got {tuple(msg.payload)}"
        )
    check_real_arrays(msg.payload, "report")  # finite real values (and integer actions, below)
    action = np.asarray(msg.payload["action"])
    value = np.asarray(msg.payload["reward_hat"], dtype=float)
    if action.shape != value.shape or not np.issubdtype(action.dtype, np.integer):
        raise TrustBoundaryError("reports must pair one integer action with one privatized value")
    return action.astype(np.int64), value


class EliminationServer(Server):
    """Server of Algorithms 2-3: plans public batches and estimates from privatized sums.

    Parameters
    ----------
    R, d : int
        Replications and dimension.
    """

    def __init__(self, R: int, d: int) -> None:
        self.R, self.d = R, d
        self.core: HannaElimination | None = None
        self._public: PublicState | None = None

    # -- public catalogue and schedule ----------------------------------------------------------
    def start(self, core: HannaElimination) -> None:
        """Install the engine built on the public catalogue and plan batch 1."""
        self.core = core
        self._planned(core.plan_batch())
        self._public = None

    def _planned(self, plan: BatchPlan) -> None:
        """Hook: a new batch was planned for ``plan.rows``."""

    def _public_arrays(self) -> dict[str, np.ndarray]:
        core = self.core
        if core is None:
            raise TrustBoundaryError(
                "the server has no action catalogue yet: the driver installs it "
                "(start_batches) before the first user arrives"
            )
        exploring = core.exploring()
        counts = np.where(exploring[:, None], core.view(np.arange(self.R)).counts, 0)
        return {"batch": core.batch + 1, "counts": counts, "committed": core.committed.copy()}

    def public_state(self) -> PublicState:
        """The public schedule: ``counts`` (R, K) of the running batch, ``batch``, ``committed``."""
        if self._public is None:
            self._public = PublicState(self._public_arrays())
        return self._public

    # -- batch end ------------------------------------------------------------------------------
    def _complete(self, rows: np.ndarray, r_hat: np.ndarray) -> None:
        """Estimate and eliminate from the released sums of ``rows``; plan their next batch."""
        assert self.core is not None
        plan = self.core.view(rows)
        self.core.finish_batch(plan, r_hat)
        nxt = rows[self.core.committed[rows] < 0]
        if nxt.size:
            self._planned(self.core.plan_batch(nxt))
        self._public = None

    def estimate(self) -> np.ndarray:
        return np.zeros((self.R, self.d)) if self.core is None else self.core.theta

    @property
    def batch_log(self) -> list[dict[str, Any]]:
        return [] if self.core is None else self.core.batch_log


class ServerHeldEngine:
    """Mixin of the untrusted-server algorithms (local and shuffle): the elimination engine lives
    in ``self.server`` (an :class:`EliminationServer`); ``make_core`` is the algorithm's."""

    server: Any
    make_core: Any
    spec: EnvSpec
    sigma: float
    fail_prob: float | None
    design_factor: float

    def start_batches(self, A: np.ndarray) -> HannaElimination:
        """Install the engine on the public action catalogue ``A`` (R, K, d) in the server."""
        core = self.make_core(np.array(A, dtype=float, copy=True))
        self.server.start(core)
        return core

    def local_core(self, A: np.ndarray, scale: ScaleFn, width_mode: str) -> HannaElimination:
        """The elimination engine of Algorithms 2 and 3: the local width of the per-batch Laplace
        ``scale`` (public quantities only) and the greedy core set."""
        width = LocalWidth(scale, width_mode, self.sigma, self.fail_prob)
        return HannaElimination(A, self.spec, width, self.design_factor, "greedy")

    @property
    def core(self) -> HannaElimination | None:
        """The elimination engine of the current run (held by the untrusted server)."""
        server = self.__dict__.get("server")
        return None if server is None else server.core

    @property
    def batch_log(self) -> list[dict[str, Any]]:
        """Per-batch public record of the run."""
        server = self.__dict__.get("server")
        return [] if server is None else server.batch_log
