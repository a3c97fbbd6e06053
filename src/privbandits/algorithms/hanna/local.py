"""Algorithm 2 of Hanna et al. (2022): batched elimination in the local model (pure eps0-LDP).

Roles (DESIGN section 2; spec section 4.2):

* **client** (:class:`LocalClient`, on the user's device): reads the public schedule of the
  running batch (``remaining`` pulls per action, or the committed action), plays an action drawn
  uniformly from the remaining multiset (a uniformly random order of the batch), observes its
  reward ``r`` and sends only ``(a, clip(r, r_lo, r_hi) + Lap(Delta / eps0))``
  (:class:`LocalLaplaceRandomizer`; the action is public in this model, spec section 2.1);
* **server** (:class:`LocalServer`): sums the reports per action; when the batch's ``n_i``
  reports are in, ``r_hat_ia = sum_{k <= n_ia} r_hat_ia^(k)`` (spec section 9, item 4), least
  squares, the local width of spec section 4.6 and elimination over ``A_i``.

Each report is ``(r_hi - r_lo) / s``-LDP for the scale ``s`` actually used (``eps0`` under the
strict preset, ``2 eps0`` under the paper's sensitivity 1); everything the server does is
post-processing, and each user reports once.  The aggregate fast path draws each batch's summed
user noise exactly (``Gamma(n, s) - Gamma(n, s)``, :mod:`~privbandits.algorithms.hanna.aggregate`).

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithm 2, Lemma 5, Theorem 2, Appendix B.1; spec
sections 2.3, 2.5-2.6, 4.2, 4.6.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.base import Client, LocalAlgorithm
from privbandits.algorithms.hanna.aggregate import AggregateLaplaceSums
from privbandits.algorithms.hanna.presets import Switches, resolve_switches
from privbandits.algorithms.hanna.server import EliminationServer, EngineAccess, check_reports
from privbandits.algorithms.hanna.widths import LocalWidth
from privbandits.algorithms.phased_elimination import HannaElimination
from privbandits.algorithms.registry import register
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_epsilon, check_in_range, check_positive
from privbandits.privacy.accounting import PureDP, to_guarantee
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.mechanisms import LaplaceMechanism, laplace_epsilon

__all__ = ["HannaLocal", "LocalClient", "LocalLaplaceRandomizer", "LocalServer", "draw_from_remaining"]

LOCAL_MECHANISM = "hanna-local-laplace"


def draw_from_remaining(remaining: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row, with probability proportional to the remaining pulls (R, K).

    Successive draws without replacement from a batch's multiset give a uniformly random order of
    its schedule (so a batch cut by the horizon plays a uniformly random prefix, spec 3.5).
    Rows with nothing remaining get -1.
    """
    cum = np.cumsum(remaining, axis=1)
    total = cum[:, -1]
    u = rng.random(remaining.shape[0]) * total
    a = np.argmax(cum > u[:, None], axis=1)
    return np.where(total > 0, a, -1)


class LocalLaplaceRandomizer:
    """The user-side randomizer of Algorithm 2: ``clip(r, r_lo, r_hi) + Lap(sensitivity / eps0)``.

    Parameters
    ----------
    epsilon : float
        Local budget ``eps0``.
    r_lo, r_hi : float
        Reward range; ``r_hi - r_lo`` is the true sensitivity of one report.
    sensitivity : float
        Sensitivity used for the scale (``r_hi - r_lo``, or 1 under ``paper_sensitivity``).
    """

    mechanism = LOCAL_MECHANISM

    def __init__(self, epsilon: float, r_lo: float, r_hi: float, sensitivity: float) -> None:
        self.r_lo, self.r_hi = float(r_lo), float(r_hi)
        self.laplace = LaplaceMechanism(sensitivity, epsilon)
        self.scale = self.laplace.scale

    @property
    def local_epsilon(self) -> float:
        """LDP level of one report at the true sensitivity ``r_hi - r_lo``."""
        return laplace_epsilon(self.scale, self.r_hi - self.r_lo)

    def privatize(self, actions: np.ndarray, rewards: np.ndarray, report: np.ndarray,
                  rng: np.random.Generator) -> PrivatizedMessage:
        """Reports ``(a, clip(r) + Lap(scale))`` of the users with ``report`` True; ``(-1, 0)`` otherwise."""
        noise = self.laplace.noise(rng, np.shape(rewards))
        value = np.where(report, np.clip(rewards, self.r_lo, self.r_hi) + noise, 0.0)
        return PrivatizedMessage(payload={"action": np.where(report, actions, -1).astype(np.int64),
                                          "reward_hat": value}, mechanism=self.mechanism)


class LocalClient(Client):
    """User side of Algorithm 2 (one user per replication per round).

    Parameters
    ----------
    randomizer : LocalLaplaceRandomizer
    bulletin : EliminationServer
        Used only to post the public action catalogue and read the public schedule (the first
        user of a run posts the catalogue, spec module docs of
        :mod:`~privbandits.algorithms.hanna.server`).
    """

    def __init__(self, randomizer: LocalLaplaceRandomizer, bulletin: EliminationServer) -> None:
        self.randomizer = randomizer
        self.bulletin = bulletin
        self._in_batch = np.zeros(0, dtype=bool)

    def choose(self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if not bool(np.all(public["ready"])):
            self.bulletin.publish_action_set(contexts)
            public = self.bulletin.public_state()
        committed = public["committed"]
        self._in_batch = committed < 0
        a = draw_from_remaining(public["remaining"], rng)
        return np.where(self._in_batch, a, committed)

    def randomize(self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray,
                  rewards: np.ndarray, rng: np.random.Generator) -> PrivatizedMessage:
        return self.randomizer.privatize(actions, rewards, self._in_batch, rng)


class LocalServer(EliminationServer):
    """Server of Algorithm 2: per-action sums of the reports, batch end, public schedule."""

    def __init__(self, R: int, d: int, make_core: Any) -> None:
        super().__init__(R, d, make_core)
        self._remaining = np.zeros((R, 1), dtype=np.int64)
        self._sums = np.zeros((R, 1))
        self.reports = 0

    def _planned(self, plan: Any) -> None:
        if self._remaining.shape[1] != plan.counts.shape[1]:
            self._remaining = np.zeros((self.R, plan.counts.shape[1]), dtype=np.int64)
            self._sums = np.zeros((self.R, plan.counts.shape[1]))
        self._remaining[plan.rows] = plan.counts
        self._sums[plan.rows] = 0.0

    def _public_arrays(self) -> dict[str, np.ndarray]:
        out = super()._public_arrays()
        if self.core is not None:
            out["remaining"] = np.where(self.core.exploring()[:, None], self._remaining, 0)
        return out

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        """Add each report to its action's sum; finish the batches whose ``n_i`` reports are in."""
        action, value = check_reports(message, PrivatizedMessage, LOCAL_MECHANISM)
        if self.core is None:
            raise ValidationError("a report arrived before the action catalogue was posted")
        if action.shape != (self.R,):
            raise TrustBoundaryError(f"expected one report per replication ({self.R}), got shape {action.shape}")
        rows = np.flatnonzero((action >= 0) & self.core.exploring())
        a = action[rows]
        if np.any(self._remaining[rows, a] <= 0):
            raise ValidationError("a report names an action outside the running batch's schedule")
        self._remaining[rows, a] -= 1
        self._sums[rows, a] += value[rows]
        self.reports += rows.size
        done = rows[self._remaining[rows].sum(axis=1) == 0]
        if done.size:
            self._complete(done, self._sums[done].copy())
        self._public = None


def _common_checks(alg: Any, design_factor: float, sigma: float, fail_prob: float | None) -> None:
    alg.design_factor = check_in_range("design_factor", design_factor, 1.0, None)
    alg.sigma = check_positive("sigma", sigma)
    alg.fail_prob = None if fail_prob is None else check_in_range(
        "fail_prob", fail_prob, 0.0, 1.0, low_inclusive=False, high_inclusive=False)


@register
class HannaLocal(EngineAccess, LocalAlgorithm):
    """Algorithm 2 of Hanna et al. (2022): local model, pure eps0-LDP Laplace reports.

    Parameters
    ----------
    epsilon : float
        Local budget ``eps0`` of each user's report.
    preset : {"strict", "paper"}
        Calibration preset (spec section 2.6).
    paper_sensitivity : bool, optional
        Override: Laplace scale ``1 / eps0`` instead of ``(r_hi - r_lo) / eps0``.
    width_mode : {"paper", "rigorous"}, optional
        Override of the preset's width mode.
    design_factor, sigma, fail_prob :
        As for :class:`~privbandits.algorithms.hanna.central.HannaCentral`.

    References
    ----------
    Hanna et al. (2022), Algorithm 2, Lemma 5, Theorem 2; spec sections 4.2, 4.6.
    """

    name = "hanna-local"
    trust_model = "local"
    paper = "Hanna et al. 2022 (Alg. 2)"
    settings: ClassVar[tuple[str, ...]] = ("single",)
    links: ClassVar[tuple[str, ...]] = ("identity",)
    #: Streams of the aggregate path: the users' choices (policy) and the users' noise (client).
    aggregate_streams: ClassVar[tuple[str, str]] = ("policy", "client")

    def __init__(
        self,
        epsilon: float,
        preset: str = "strict",
        paper_sensitivity: bool | None = None,
        width_mode: str | None = None,
        design_factor: float = 2.0,
        sigma: float = 1.0,
        fail_prob: float | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, preset=preset, paper_sensitivity=paper_sensitivity,
                         width_mode=width_mode, design_factor=design_factor, sigma=sigma, fail_prob=fail_prob)
        self.epsilon = check_epsilon(epsilon)
        self.switches: Switches = resolve_switches(preset, paper_sensitivity, width_mode, shuffle=False)
        self.preset = self.switches.preset
        _common_checks(self, design_factor, sigma, fail_prob)

    # -- lifecycle --------------------------------------------------------------------------------
    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        if not spec.fixed_actions:
            raise ValidationError(f"algorithm {self.name!r} needs a fixed finite action set (spec.fixed_actions=True, "
                                  "e.g. FiniteActionEnv); got an environment with per-round contexts")
        lo, hi = spec.reward_range
        self.randomizer = LocalLaplaceRandomizer(self.epsilon, lo, hi, self.switches.sensitivity(lo, hi))
        self.server = LocalServer(self.R, spec.d, self.make_core)
        self.client = LocalClient(self.randomizer, self.server)
        self.collector = AggregateLaplaceSums(lambda plan: np.full(len(plan), self.randomizer.scale), (lo, hi),
                                              lambda: self.guarantee)

    def make_core(self, A: np.ndarray) -> HannaElimination:
        """The elimination engine with the local width (public quantities only)."""
        scale = self.randomizer.scale
        width = LocalWidth(lambda plan: np.full(len(plan), scale), self.switches.width_mode, self.sigma,
                           self.fail_prob)
        return HannaElimination(A, self.spec, width, self.design_factor, "greedy")

    def resolved_params(self) -> dict[str, Any]:
        return {k: v for k, v in self.switches.as_dict().items() if k != "shuffle_bound"}

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """Each report is ``(r_hi - r_lo) / scale``-LDP; users report once (parallel composition)."""
        rnd = getattr(self, "randomizer", None)
        if rnd is None:  # before reset: the nominal reward range [-1, 1]
            rnd = LocalLaplaceRandomizer(self.epsilon, -1.0, 1.0, self.switches.sensitivity(-1.0, 1.0))
        notes = (f"{self.switches.describe(shuffle=False)}; Hanna et al. (2022) Alg. 2: each user sends "
                 f"clip(r, {rnd.r_lo:g}, {rnd.r_hi:g}) + Lap({rnd.scale:.6g}) once")
        return to_guarantee(PureDP(rnd.local_epsilon), "local", "user", notes)
