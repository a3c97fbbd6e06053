"""Algorithm 2 of Hanna et al. (2022): batched elimination in the local model (pure eps0-LDP).

Roles (the documentation's Concepts: trust models; Hanna et al. 2022, Algorithm 2):

* **client** (:class:`LocalClient`, on the user's device): reads the public schedule of the
  running batch (``remaining`` pulls per action, or the committed action), plays an action drawn
  uniformly from the remaining multiset (a uniformly random order of the batch), observes its
  reward ``r`` and sends only ``(a, clip(r, r_lo, r_hi) + Lap(Delta / eps0))``, drawn by the
  audited sampler :func:`~privbandits.privacy.samplers.laplace_randomize` (the action is public in
  this model, Hanna et al. 2022, section 2);
* **server** (:class:`LocalServer`): sums the reports per action; when the batch's ``n_i``
  reports are in, ``r_hat_ia = sum_{k <= n_ia} r_hat_ia^(k)`` (Hanna et al. 2022, correction Hanna22-4), least
  squares, the local width (width modes on the Hanna et al. 2022 documentation page) and elimination over ``A_i``.

Each report is ``(r_hi - r_lo) / s``-LDP for the scale ``s`` actually used (``eps0`` under the
strict preset, ``2 eps0`` under the paper's sensitivity 1); everything the server does is
post-processing, and each user reports once.  The aggregate path draws each batch's summed user
noise exactly (``Gamma(n, s) - Gamma(n, s)``, :mod:`~privbandits.algorithms.hanna.aggregate`).

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithm 2, Lemma 5, Theorem 2, Appendix B.1;
corrections and width modes on the documentation's Hanna et al. 2022 page.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from privbandits.algorithms.audit import AuditCase, fixed_action_case
from privbandits.algorithms.base import Client, LocalAlgorithm
from privbandits.algorithms.hanna.aggregate import AggregateLaplaceSums
from privbandits.algorithms.hanna.calibration import LaplaceCalibration, LocalConstants
from privbandits.algorithms.hanna.curator import require_fixed_actions
from privbandits.algorithms.hanna.elimination import (
    BatchPlan,
    HannaElimination,
    max_pulls,
    n_batches,
)
from privbandits.algorithms.hanna.presets import (
    ELIMINATION_CONSTRAINTS,
    SWITCH_CONSTRAINTS,
)
from privbandits.algorithms.hanna.server import EliminationServer, ServerHeldEngine, check_reports
from privbandits.algorithms.registry import register
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.params import Epsilon
from privbandits.core.public_space import PublicField, PublicSpace, PublicStateError
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.device import DeviceNoise, DeviceSensitivity
from privbandits.privacy.inputs import check_device_inputs
from privbandits.privacy.samplers import laplace_randomize

__all__ = [
    "LOCAL_MECHANISM",
    "HannaLocal",
    "LocalClient",
    "LocalServer",
    "draw_from_remaining",
    "laplace_reports",
]

#: Name of the local randomizer (recorded in every report).
LOCAL_MECHANISM = "hanna-local-laplace"


def draw_from_remaining(remaining: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row, with probability proportional to the remaining pulls (R, K).

    Successive draws without replacement from a batch's multiset give a uniformly random order of
    its schedule (so a batch cut by the horizon plays a uniformly random prefix, Hanna et al. 2022, correction Hanna22-30).
    Rows with nothing remaining get -1.
    """
    cum = np.cumsum(remaining, axis=1)
    total = cum[:, -1]
    u = rng.random(remaining.shape[0]) * total
    a = np.argmax(cum > u[:, None], axis=1)
    return np.where(total > 0, a, -1)


def laplace_reports(
    rng: np.random.Generator,
    value: np.ndarray,
    report: np.ndarray,
    lo: float,
    hi: float,
    scale: float | np.ndarray,
) -> None:
    """Replace, in place, the entries of the reporting users (``report``) of the encoded
    ``value`` by ``clip(value, lo, hi) + Lap(scale)`` (Hanna et al. 2022, Algorithms 2-3),
    drawn by the audited sampler :func:`~privbandits.privacy.samplers.laplace_randomize`;
    ``scale`` is one scale or one per user.  Draw order: one uniform per reporting user."""
    out = np.empty(int(report.sum()))
    scales = np.ascontiguousarray(
        np.broadcast_to(np.asarray(scale, dtype=float), value.shape)[report]
    )
    laplace_randomize(rng, np.ascontiguousarray(value[report]), lo, hi, scales, out)
    value[report] = out


class LocalClient(Client):
    """User side of Algorithm 2 (one user per replication per round).

    Holds only public quantities: the Laplace scale ``Delta / eps0``, the reward range and the
    problem's context bound (its inputs are checked before they are randomized).

    The server is untrusted: every public state is checked against :meth:`public_space` before the
    device reads it, and the device's own message -- the public action and ``clip(r, r_lo, r_hi)``
    plus ``Lap(scale)`` -- does not depend on the public state beyond *whether* the user reports,
    so two neighbouring users' reports differ by at most ``(r_hi - r_lo) / scale`` Laplace units
    whatever the server sends (:meth:`sensitivity`).

    Parameters
    ----------
    scale : float
        Laplace scale of the report.
    r_lo, r_hi : float
        Reward range every user clips to.
    spec : EnvSpec
        The public problem description (context bound, arms, horizon of the schedule).
    """

    def __init__(self, scale: float, r_lo: float, r_hi: float, spec: EnvSpec) -> None:
        self.scale, self.r_lo, self.r_hi, self.spec = float(scale), float(r_lo), float(r_hi), spec
        pulls = max_pulls(spec)
        self._space = PublicSpace(
            (
                PublicField("batch", ("R",), "i", low=1, high=n_batches(spec.horizon) + 1),
                PublicField("counts", ("R", "K"), "i", low=0, high=pulls),
                PublicField("committed", ("R",), "i", low=-1, high=spec.K - 1),
                PublicField("remaining", ("R", "K"), "i", low=0, high=pulls),
            )
        )

    def public_space(self) -> PublicSpace:
        """The schedule of the running batch: ``batch`` in ``1..L+1``, ``counts`` and ``remaining``
        (pulls per arm, ``0..max_pulls``), ``committed`` (-1 while exploring, else an arm)."""
        return self._space

    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """An action from the running batch's remaining schedule, or the committed action."""
        X, _, _ = check_device_inputs(self.spec, contexts, bound=False)
        state = self.checked_public(public, X.shape[0])
        committed = state["committed"]
        remaining = state["remaining"]
        empty = (committed < 0) & (remaining.sum(axis=1) == 0)
        if empty.any():
            raise PublicStateError(
                "the public schedule leaves no pull to a user of a running batch "
                f"(replication {int(np.flatnonzero(empty)[0])}); the device refuses it"
            )
        a = draw_from_remaining(remaining, rng)
        return np.where(committed < 0, a, committed)

    def encode(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
    ) -> np.ndarray:
        """``(R, 2)``: the public action and ``clip(r, r_lo, r_hi)`` of each reporting user;
        ``(-1, 0)`` in the commit phase (nothing about the user is used)."""
        X, a, y = check_device_inputs(self.spec, contexts, actions, rewards)
        assert a is not None and y is not None
        report = self.checked_public(public, X.shape[0])["committed"] < 0
        return np.stack(
            [
                np.where(report, a, -1).astype(float),
                np.where(report, np.clip(y, self.r_lo, self.r_hi), 0.0),
            ],
            axis=1,
        )

    def noise(
        self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray
    ) -> DeviceNoise:
        """``Lap(scale)`` on the reward of each reporting user; the action is sent as it is."""
        X, _, _ = check_device_inputs(self.spec, contexts, actions, bound=False)
        report = self.checked_public(public, X.shape[0])["committed"] < 0
        b = np.zeros((X.shape[0], 2))
        b[:, 1] = np.where(report, self.scale, 0.0)
        return DeviceNoise.laplace(b)

    def sensitivity(self) -> DeviceSensitivity:
        """``Delta_1 / b = (r_hi - r_lo) / scale``: the accounted LDP level of one report."""
        return DeviceSensitivity("l1", (self.r_hi - self.r_lo) / self.scale)

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        """:meth:`encode` plus ``Lap(scale)`` on the reward of each reporting user, drawn by the
        audited sampler.  Draw order: one uniform per reporting user."""
        enc = self.encode(t, public, contexts, actions, rewards)
        report = enc[:, 0] >= 0
        value = enc[:, 1].copy()
        laplace_reports(rng, value, report, self.r_lo, self.r_hi, self.scale)
        return PrivatizedMessage(
            payload={"action": enc[:, 0].astype(np.int64), "reward_hat": value},
            mechanism=LOCAL_MECHANISM,
        )


class LocalServer(EliminationServer):
    """Server of Algorithm 2: per-action sums of the reports, batch end, public schedule."""

    def __init__(self, R: int, d: int) -> None:
        super().__init__(R, d)
        self._remaining = np.zeros((R, 1), dtype=np.int64)
        self._sums = np.zeros((R, 1))
        self.reports = 0

    def _planned(self, plan: BatchPlan) -> None:
        if self._remaining.shape[1] != plan.counts.shape[1]:
            self._remaining = np.zeros((self.R, plan.counts.shape[1]), dtype=np.int64)
            self._sums = np.zeros((self.R, plan.counts.shape[1]))
        self._remaining[plan.rows] = plan.counts
        self._sums[plan.rows] = 0.0

    def _public_arrays(self) -> dict[str, np.ndarray]:
        out = super()._public_arrays()
        assert self.core is not None
        out["remaining"] = np.where(self.core.exploring()[:, None], self._remaining, 0)
        return out

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        """Add each report to its action's sum; finish the batches whose ``n_i`` reports are in."""
        action, value = check_reports(message, PrivatizedMessage, LOCAL_MECHANISM)
        if self.core is None:
            raise ValidationError("a report arrived before the action catalogue was installed")
        if action.shape != (self.R,):
            raise TrustBoundaryError(
                f"expected one report per replication ({self.R}), got shape {action.shape}"
            )
        rows = np.flatnonzero((action >= 0) & self.core.exploring())
        a = action[rows]
        if np.any(a >= self._remaining.shape[1]) or np.any(self._remaining[rows, a] <= 0):
            raise ValidationError("a report names an action outside the running batch's schedule")
        self._remaining[rows, a] -= 1
        self._sums[rows, a] += value[rows]
        self.reports += rows.size
        done = rows[self._remaining[rows].sum(axis=1) == 0]
        if done.size:
            self._complete(done, self._sums[done].copy())
        self._public = None


@register
class HannaLocal(LaplaceCalibration, ServerHeldEngine, LocalAlgorithm):
    """Algorithm 2 of Hanna et al. (2022): local model, pure eps0-LDP Laplace reports.

    Parameters
    ----------
    epsilon : float
        Local budget ``eps0`` of each user's report; default 1.
    preset : {"strict", "paper"}
        Calibration preset (presets on the Hanna et al. 2022 documentation page).
    paper_sensitivity : bool, optional
        Override: Laplace scale ``1 / eps0`` instead of ``(r_hi - r_lo) / eps0``.
    width_mode : {"paper", "rigorous"}, optional
        Override of the preset's width mode.
    design_factor, sigma, fail_prob :
        As for :class:`~privbandits.algorithms.hanna.central.HannaCentral`.

    References
    ----------
    Hanna et al. (2022), Algorithm 2, Lemma 5, Theorem 2; width modes in the documentation.
    """

    name = "hanna-local"
    twin = "pe-batched"
    trust_model = "local"
    paper = "Hanna et al. 2022 (Alg. 2)"
    settings: ClassVar[tuple[str, ...]] = ("single",)
    links: ClassVar[tuple[str, ...]] = ("identity",)
    constraints: ClassVar = {
        "epsilon": Epsilon,
        **{k: v for k, v in ELIMINATION_CONSTRAINTS.items() if k != "core_set"},
        "paper_sensitivity": SWITCH_CONSTRAINTS["paper_sensitivity"],
    }
    test_params: ClassVar = (
        {"epsilon": 1.0},
        {"epsilon": 2.0, "width_mode": "paper", "fail_prob": 0.01},
    )
    test_envs: ClassVar[tuple[str, ...]] = ("finite",)

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The client path on a fixed action set, rewards far outside the range."""
        return (fixed_action_case(cls, "Hanna et al. (2022) Alg. 2 client: clip(r) + Laplace"),)

    #: Streams of the aggregate path: the users' choices (policy) and the users' noise (client).
    aggregate_streams: ClassVar[tuple[str, str]] = ("policy", "client")

    server: LocalServer
    collector: AggregateLaplaceSums

    def __init__(
        self,
        epsilon: float = 1.0,
        preset: str = "strict",
        paper_sensitivity: bool | None = None,
        width_mode: str | None = None,
        design_factor: float = 2.0,
        sigma: float = 1.0,
        fail_prob: float | None = None,
    ) -> None:
        pass

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        require_fixed_actions(self.name, spec)
        super().reset(spec, replications, streams)
        lo, hi = spec.reward_range
        scale = self.calibration.typed(LocalConstants).laplace_scale
        self.server = LocalServer(self.R, spec.d)
        self.client = LocalClient(scale, lo, hi, spec)
        self.collector = AggregateLaplaceSums(lambda plan: np.full(len(plan), scale), (lo, hi))

    # -- BatchedAlgorithm -------------------------------------------------------------------------
    def make_core(self, A: np.ndarray) -> HannaElimination:
        """The elimination engine with the local width (public quantities only)."""
        c = self.calibration.typed(LocalConstants)
        scale = c.laplace_scale
        return self.local_core(A, lambda plan: np.full(len(plan), scale), c.width_mode)
