"""Shuffle-private LinUCB, amplification instantiation (Chowdhury & Zhou 2022, the batched framework).

Users arrive in batches of ``B``; the server's policy is frozen for a whole batch::

    server -> users of batch b : theta = V^{-1} u,  M = V^{-1},  beta      V = G + lambda I
    user t                     : x_t = argmax_x <theta, x> + beta ||x||_M
                                 send (x_t x_t^T + N_t, y_t x_t + v_t)    (Gaussian, std sigma_0)
    shuffler                   : uniformly permute the batch's messages
    server (analyzer)          : G += sum of the batch's Gram parts,  u += sum of the vector parts

The message is the local randomizer of LDP-UCB (the same user-side code, ``(x x^T, y x)`` of the
user's own clipped data plus symmetric Gaussian noise), run at the smaller noise that shuffling
certifies (:mod:`privbandits.algorithms.chowdhury.constants`).  The server only ever sees the
shuffled multiset of a batch; the policy changes only at batch ends.  The last batch absorbs the
remainder ``T mod B`` so that no batch is smaller than ``B`` (amplification needs many users).

References
----------
Chowdhury & Zhou (2022), "Shuffle Private Linear Contextual Bandits", ICML; the authors' code
(``SDPLinUCBPAmp``).  Feldman, McMillan & Talwar (2021), Theorem 3.8.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms._shared.linalg import project_ball
from privbandits.algorithms.audit import AuditCase, ClientPathCase, gaussian_shuffle_local_claim
from privbandits.algorithms.base import KernelServer, ShuffleAlgorithm
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.chowdhury.constants import (
    AmpConstants,
    VecConstants,
    authors_sigma,
    batch_sizes,
    calibrate_amplified,
    radius,
    theory_batch_size,
)
from privbandits.algorithms.kernel import ESTIMATE_BOUND, LocalKernel, MessageLayout
from privbandits.algorithms.ldp_zheng.calibration import outer_vector_sensitivity
from privbandits.algorithms.ldp_zheng.ldp_ucb import _encode, _randomize
from privbandits.algorithms.ldp_zheng.ridge import additive_noise, ridge_kernel, ridge_space
from privbandits.algorithms.registry import register
from privbandits.core.errors import TrustBoundaryError
from privbandits.core.messages import PrivatizedMessage, ShuffledBatch
from privbandits.core.params import Choice, Delta, Epsilon, Int, Optional, Positive
from privbandits.core.spec import EnvSpec
from privbandits.privacy.calibration import gaussian_epsilon
from privbandits.privacy.device import DeviceSensitivity
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.ledger import Amplified, Composed, Event, Gaussian


def _ledger(c: AmpConstants, amplified: bool, epsilon: float, delta: float) -> Event:
    """One user's message: a Gaussian mechanism of std ``sigma`` at the joint sensitivity, shuffled
    among the batch's users when amplification is credited; batches hold different users."""
    msg = Gaussian(c.sigma, c.sensitivity, "(ut(x x^T), y x) of one user")
    lo, hi = c.batch_sizes[0]
    ev: Event = Amplified(msg, lo, "closed", epsilon, delta) if amplified else msg
    return Composed((ev,), "disjoint", f"batches of {lo}..{hi} different users")


__all__ = ["BatchedLinUCB", "ShuffleLinUCB", "batch_end"]


@nb.njit(cache=True)
def batch_end(t: int, B: int, T: int) -> bool:  # pragma: no cover - compiled
    """Whether round ``t`` (0-based) closes a batch: every ``B`` users, the remainder joining the last."""
    n = t + 1
    if n >= T:
        return True
    return n % B == 0 and T - n >= B


@nb.njit(cache=True)
def _accumulate(server, r, msg):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Analyzer: add one message ``[V (d*d), u (d)]`` of the batch to the sums ``G``, ``u``."""
    G, u = server[0], server[1]
    d = u.shape[1]
    for i in range(d):
        for j in range(d):
            G[r, i, j] += msg[i * d + j]
        u[r, i] += msg[d * d + i]
    server[2][r] += 1.0


@nb.njit(cache=True)
def _publish(params, public, server, r):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Server: ``V = sym(G) + lambda I`` (eigenvalues floored, post-processing), publish
    ``M = V^{-1}``, ``theta = M u`` (within the public space's bound) and ``beta``."""
    lam, beta, floor = params[2][0], params[2][1], params[2][4]
    theta, M, b = public
    G, u = server[0], server[1]
    d = u.shape[1]
    V = np.empty((d, d))
    for i in range(d):
        for j in range(d):
            V[i, j] = 0.5 * (G[r, i, j] + G[r, j, i])
        V[i, i] += lam
    vals, vecs = np.linalg.eigh(V)
    for i in range(d):
        if vals[i] < floor:
            vals[i] = floor
            server[3][r] += 1.0
    for i in range(d):
        for j in range(d):
            s = 0.0
            for c in range(d):
                s += vecs[i, c] * vecs[j, c] / vals[c]
            M[r, i, j] = min(max(s, -ESTIMATE_BOUND), ESTIMATE_BOUND)
    for i in range(d):
        s = 0.0
        for j in range(d):
            s += M[r, i, j] * u[r, j]
        theta[r, i] = s
    project_ball(theta[r], ESTIMATE_BOUND)
    b[r] = beta


@nb.njit(cache=True)
def _update(params, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """One message into the batch sums; at a batch end the new policy is published.

    The sums are invariant to the order of the batch's messages, so this equals the analyzer of
    :class:`ShuffleLinUCBServer` on the shuffled batch (up to rounding of the summation order).
    """
    _accumulate(server, r, msg)
    if batch_end(t, int(params[2][2]), int(params[2][3])):
        _publish(params, public, server, r)


@nb.njit(cache=True)
def _receive_all(params, public, server, msgs):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Analyzer on a shuffled batch ``msgs`` (R, n, size): sum, then publish."""
    R, n = msgs.shape[0], msgs.shape[1]
    for r in range(R):
        for j in range(n):
            _accumulate(server, r, msgs[r, j])
        _publish(params, public, server, r)


class BatchesOnly:
    """An analyzer of the batched framework: it takes the shuffler's releases only
    (:meth:`receive_batch`); a single user's message is refused."""

    #: The analyzer and what it takes, in its refusal of a single message.
    server_name: ClassVar[str] = "shuffle LinUCB"
    takes: ClassVar[str] = "shuffled batches"

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        raise TrustBoundaryError(
            f"the {self.server_name} server receives {self.takes} only (receive_batch), never one "
            "user's message"
        )

    @staticmethod
    def _check_batch(batch: object) -> None:
        if not isinstance(batch, ShuffledBatch):
            raise TrustBoundaryError(
                f"the server only accepts a ShuffledBatch, got {type(batch).__name__}"
            )


class ShuffleLinUCBServer(BatchesOnly, KernelServer):
    """The analyzer: receives shuffled batches only (a per-user message is refused)."""

    def receive_batch(self, t: int, batch: ShuffledBatch) -> None:
        self._check_batch(batch)
        k = self.k
        if batch.mechanism != k.message.mechanism:
            raise TrustBoundaryError(
                f"expected messages of randomizer {k.message.mechanism!r}, got {batch.mechanism!r}"
            )
        names = tuple(n for n, _ in k.message.fields)
        if set(batch.payload) != set(names):
            raise TrustBoundaryError(f"payload keys must be {names}, got {tuple(batch.payload)}")
        R = k.public[0].shape[0]
        parts = []
        n = None
        for name, shape in k.message.fields:
            arr = np.asarray(batch.payload[name])
            if (
                arr.ndim != 2 + len(shape)
                or arr.shape[0] != R
                or tuple(arr.shape[2:]) != tuple(shape)
                or arr.dtype.kind not in "fiu"
                or not np.all(np.isfinite(arr))
            ):
                raise TrustBoundaryError(
                    f"batch field {name!r} must be (R={R}, n, {shape}) finite real numbers, got "
                    f"shape {arr.shape} of dtype {arr.dtype}"
                )
            if n is None:
                n = arr.shape[1]
            elif arr.shape[1] != n:
                raise TrustBoundaryError("batch fields hold different numbers of messages")
            parts.append(arr.reshape(R, arr.shape[1], -1).astype(float))
        msgs = np.ascontiguousarray(np.concatenate(parts, axis=2))
        _receive_all(k.params, k.public, k.server, msgs)


class BatchedLinUCB(ShuffleAlgorithm):
    """What the two instantiations of Chowdhury & Zhou's (2022) batched framework share.

    The parameters (a subclass adds its ``preset`` choices), the batch schedule (:func:`batch_end`),
    the radius and regularizer from the statistics' noise level, and the kernel assembly around
    the shared server (:func:`_publish`: ``theta``, ``M``, ``beta`` from the batch sums).
    """

    twin = "linucb"
    settings = ("single",)
    links = ("identity",)
    constraints: ClassVar = {
        "epsilon": Epsilon,
        "delta": Delta,
        "batch_size": Optional(Int(1)),
        "beta_scale": Positive,
        "S": Optional(Positive),
    }
    epsilon: float
    delta: float
    batch_size: int | None
    beta_scale: float
    S: float | None

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 0.1,
        batch_size: int | None = None,
        preset: str = "strict",
        beta_scale: float = 1.0,
        S: float | None = None,
    ) -> None:
        pass

    def _B(self, T: int) -> int:
        return theory_batch_size(T) if self.batch_size is None else int(self.batch_size)

    def _batches(self, spec: EnvSpec) -> tuple[int, int, int, int, int, float, float]:
        """``(T, d, B, n_min, n_max, r_lo, r_hi)``: the horizon (at least 1), the dimension, the
        batch size, the smallest and largest batch (:func:`batch_sizes`) and the reward range."""
        T, d = max(spec.horizon, 1), spec.d
        B = self._B(T)
        n_min, n_max = batch_sizes(T, B)
        lo, hi = (float(v) for v in spec.reward_range)
        return T, d, B, n_min, n_max, lo, hi

    def _noise_level(
        self, spec: EnvSpec, Gamma: float, C_B: float, lo: float, hi: float
    ) -> dict[str, float]:
        """The constants both instantiations derive from the noise level ``Gamma`` of the
        statistics (Chowdhury & Zhou 2022): ``lambda = 2 Gamma``, ``S``, the scaled radius
        ``beta``, with the context bound ``C_B`` and the reward range they clip to."""
        T, d = max(spec.horizon, 1), spec.d
        S = spec.theta_bound if self.S is None else self.S
        beta = self.beta_scale * radius(Gamma, S, spec.noise_scale, d, T, C_B)
        return {
            "Gamma": Gamma,
            "lam": 2.0 * Gamma,
            "beta": beta,
            "S": S,
            "context_bound": C_B,
            "reward_lo": lo,
            "reward_hi": hi,
        }

    def _batched_kernel(
        self,
        steps: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]],
        client: tuple[Any, ...],
        c: AmpConstants | VecConstants,
        extra_server: tuple[np.ndarray, ...],
        layout: MessageLayout,
        noise: Any,
        sensitivity: DeviceSensitivity,
        allocates: bool = True,
    ) -> LocalKernel:
        """The kernel around the shared server: ``steps`` are ``(encode, randomize, update)``,
        ``c`` gives ``lambda``, ``beta`` and ``B``; the server holds the sums ``G``, ``u``, the batch count,
        the floor count and ``extra_server``; the first policy is published.  ``allocates``: whether
        the steps allocate arrays (:attr:`~privbandits.algorithms.kernel.LocalKernel.allocates`)."""
        spec, R = self.spec, self.R
        d, T = spec.d, max(spec.horizon, 1)
        mine = (c.lam, c.beta, float(c.batch_size), float(T), 1e-6)
        params = ((spec.K, False), client, mine)
        public = (np.zeros((R, d)), np.zeros((R, d, d)), np.zeros(R))
        server = (
            np.zeros((R, d, d)),
            np.zeros((R, d)),
            np.zeros(R),
            np.zeros(R),
            *extra_server,
        )
        for r in range(R):
            _publish(params, public, server, r)
        theta = public[0]
        return ridge_kernel(
            steps,
            params,
            public,
            server,
            ("theta", "M", "beta"),
            layout,
            estimate=lambda: theta,
            public_space=ridge_space(),
            noise=noise,
            sensitivity=sensitivity,
            allocates=allocates,
        )

    def batch_ends(self, t: int) -> bool:
        """Round ``t`` closes a batch: every ``B`` users, the remainder joining the last batch."""
        T = max(self.spec.horizon, 1)
        return bool(batch_end(int(t), self._B(T), T))

    def n_floored(self) -> np.ndarray:
        """Per replication, how many eigenvalues of the released ``V`` needed the floor."""
        assert isinstance(self.kernel, LocalKernel)
        return self.kernel.server[3].copy()


@register
class ShuffleLinUCB(BatchedLinUCB):
    """Shuffle LinUCB with a shuffled Gaussian randomizer (Chowdhury & Zhou 2022, amplification instantiation).

    Parameters
    ----------
    epsilon, delta : float
        Shuffle-model guarantee of every batch (and of the run: batches hold different users).
    batch_size : int, optional
        Users per batch ``B`` (default ``ceil(T^{3/5})``, the balance behind the ``T^{3/5}`` rate;
        the authors' experiments use 20).
    preset : {"strict", "authors_code"}
        ``strict``: the smallest Gaussian std the amplification bound certifies at
        ``(epsilon, delta)`` (the local Gaussian mechanism at ``(epsilon, delta)`` when the batch is
        too small for amplification); ``authors_code``: ``sigma_A = sqrt(ln(2.5 B/delta)) /
        (eps sqrt(B))``, accounted at its local level only.
    beta_scale : float
        Multiplier on the radius ``beta`` (1 = the authors' formula; exploration constant).
    S : float, optional
        Bound on ``||theta*||`` in the radius (default: the environment's; the authors use
        ``sqrt(d)``).

    References
    ----------
    Chowdhury & Zhou (2022), ICML; the authors' code (``SDPLinUCBPAmp``).  Feldman, McMillan &
    Talwar (2021), Theorems 3.1 and 3.8.
    """

    name = "shuffle-linucb"
    paper = "Chowdhury & Zhou 2022 (batched, amplification)"
    constraints: ClassVar = {"preset": Choice("strict", "authors_code")}
    test_params: ClassVar = (
        {},
        {"batch_size": 5, "epsilon": 4.0},
        {"preset": "authors_code", "batch_size": 20},
    )

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The client path, at the local level of one report (before amplification)."""
        text = (
            "Shuffle LinUCB client (Chowdhury & Zhou 2022): Gaussian x x^T and x y at the local "
            "level of one report"
        )
        claim = gaussian_shuffle_local_claim
        return (ClientPathCase(cls, claim=claim, n_pilot=10_000, description=text),)

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Per-user std, its local level, the amplified batch guarantee, ``lambda`` and ``beta``."""
        T, d, B, n_min, n_max, lo, hi = self._batches(spec)
        C_B = spec.context_bound
        sens = outer_vector_sensitivity(C_B, lo, hi)
        eps, dlt = self.epsilon, self.delta
        if self.preset == "strict":
            cal = calibrate_amplified(eps, dlt, sens, n_min, n_max)
            sigma, eps0, delta0 = cal.sigma, cal.eps0, cal.delta0
            amplified = cal.amplified
            if cal.amplified:
                model, e_acc, d_acc = "shuffle", cal.epsilon, cal.delta
                how = (
                    f"each message ({eps0:.6g}, {delta0:.3g})-LDP (analytic Gaussian, std {sigma:.6g}, "
                    f"joint sensitivity {sens:.6g}); batches of {n_min}..{n_max} users shuffled: "
                    "Feldman, McMillan & Talwar (2021) Thm 3.8; batches of different users compose "
                    "in parallel"
                )
            else:
                model, e_acc, d_acc = "shuffle", eps0, delta0
                how = (
                    f"batches of {n_min} users are too small for the amplification bound: each "
                    f"message ({eps0:.6g}, {delta0:.3g})-LDP (analytic Gaussian, std {sigma:.6g}), "
                    "no amplification credit"
                )
        else:
            amplified = False
            sigma = authors_sigma(eps, dlt, B)
            eps0, delta0 = gaussian_epsilon(sigma, dlt, sens), dlt
            model, e_acc, d_acc = "shuffle", eps0, delta0
            how = (
                f"authors' code std sigma_A={sigma:.6g} (no sensitivity factor); certified at its "
                f"local level ({eps0:.6g}, {delta0:.3g}) only (joint sensitivity {sens:.6g})"
            )
        level = self._noise_level(spec, sigma * math.sqrt(T * d), C_B, lo, hi)
        notes = (
            f"shuffle LinUCB (Chowdhury & Zhou 2022), preset={self.preset}, B={B}: {how}; "
            f"rows clipped to ||x|| <= {C_B:g}, y in [{lo:g}, {hi:g}]"
        )
        c = AmpConstants(
            batch_size=B,
            batch_sizes=((n_min, n_max),),
            sigma=sigma,
            eps0=((eps0, eps0),),
            delta0=delta0,
            sensitivity=sens,
            **level,
        )
        g = PrivacyGuarantee(
            model=model,
            epsilon=e_acc,
            delta=min(d_acc, 1.0 - 1e-15),
            unit="user",
            notes=notes,
            local_epsilon=eps0,
            ledger=_ledger(c, amplified, e_acc, min(d_acc, 1.0 - 1e-15)),
        )
        return Calibration(g, preset=self.preset, requested=(eps, dlt), constants=c)

    @property
    def constants(self) -> AmpConstants:
        """The typed calibration of the run."""
        return self.calibration.typed(AmpConstants)

    def build_kernel(self) -> LocalKernel:
        c, d = self.constants, self.spec.d
        sigma = c.sigma
        client = (d, c.context_bound, c.reward_lo, c.reward_hi, True, sigma, sigma, False)
        return self._batched_kernel(
            (_encode, _randomize, _update),
            client,
            c,
            (),
            MessageLayout("shuffle-linucb/gaussian", (("V", (d, d)), ("u", (d,)))),
            additive_noise(d, (sigma, sigma), False),
            DeviceSensitivity("l2", c.sensitivity / sigma),
            allocates=False,
        )

    def reset(self, spec: EnvSpec, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        assert isinstance(self.kernel, LocalKernel)
        self.server = ShuffleLinUCBServer(self.kernel)
