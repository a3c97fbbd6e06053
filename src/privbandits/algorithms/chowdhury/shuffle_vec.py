"""Shuffle-private LinUCB, vector-summation instantiation (Chowdhury & Zhou 2022, the batched framework).

The batched framework of :mod:`privbandits.algorithms.chowdhury.shuffle_linucb` with the protocol
``P = (R, S, A)`` instantiated by the shuffle vector summation of Cheu et al. (2022)
(:mod:`privbandits.privacy.cheu`) instead of a shuffled Gaussian randomizer::

    server -> users of batch b : theta = V^{-1} u,  M = V^{-1},  beta      V = G + lambda I
    user t (device)            : x_t = argmax_x <theta, x> + beta ||x||_M
                                 w_t = (ut(x_t x_t^T), y_t x_t), projected onto ||w|| <= Delta
                                 send R*(w_t + Delta): per coordinate, floor(w g / Delta) plus a
                                 Bernoulli rounding plus Bin(b, p) one-bits   (Cheu et al. Alg. 4)
    shuffler                   : the multiset of all the batch's labelled bits: per label, the
                                 number of ones (cheu.shuffle; never a user's own counts)
    server (analyzer)          : o = (Delta / g)(ones - p b n) - n Delta      (cheu.analyze)
                                 G += mirror(o[:d(d+1)/2]),  u += o[d(d+1)/2:]

One protocol call per batch on the joint statistic ``w`` (``d (d + 1) / 2 + d`` coordinates), so
the two statistics share one ``(epsilon, delta)`` (the authors' code runs two calls at the full
budget each, i.e. ``(2 epsilon, 2 delta)``).  Every batch holds different users, so the batches
compose in parallel: the run is as private as its worst batch.

Compiled path.  The analyzer depends on a batch only through the per-label sums of the users'
counts, so the compiled server step adds each message's counts to the batch sums and de-biases at
the batch end (:func:`_update`); the reference driver's server receives the shuffler's histogram
and runs :func:`privbandits.privacy.cheu.analyze`.  Both add the same de-biased vector with the
same floating-point operations, so the two drivers give the same trajectory.

References
----------
Chowdhury & Zhou (2022), "Shuffle Private Linear Contextual Bandits", ICML (the batched framework,
its vector-summation instantiation); the authors' code (``SDPLinUCBPVec``).  Cheu, Joseph, Mao &
Peng (2022), "Shuffle private stochastic convex optimization", ICLR, as restated by Sarmasarkar
(2026), Appendix T, Algorithms 4-6, eq. (122), Lemma T.1.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms.audit import AuditCase, ClientPathCase
from privbandits.algorithms.base import KernelClient, Server, Shuffler
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.chowdhury.constants import (
    VecConstants,
    joint_labels,
    joint_norm_bound,
    joint_sensitivity,
    vec_sum_params,
)
from privbandits.algorithms.chowdhury.shuffle_linucb import (
    BatchedLinUCB,
    BatchesOnly,
    _publish,
    batch_end,
)
from privbandits.algorithms.kernel import LocalKernel, MessageLayout
from privbandits.algorithms.registry import register
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.messages import (
    PrivatizedMessage,
    PublicState,
    ShuffledBatch,
    check_real_arrays,
)
from privbandits.core.params import Choice
from privbandits.core.spec import EnvSpec
from privbandits.privacy import cheu
from privbandits.privacy.device import DeviceNoise, DeviceSensitivity
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.samplers import binomial_bits, clip_l2, clip_scalar

__all__ = ["MECHANISM", "ShuffleLinUCBVec", "VecServer", "VecShuffler"]

#: Name of the messages (the Cheu et al. vector summation's).
MECHANISM = "cheu-vector-sum"


@nb.njit(cache=True)
def _which(c, t):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Protocol of round ``t``'s batch: 0 a regular batch, 1 the last one (public schedule)."""
    T, n_last, B = c[10], c[11], c[12]
    if T > B and t >= T - n_last:
        return 1
    return 0


@nb.njit(cache=True)
def _joint(params, X, a, y, w):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """The device's biased joint statistic ``w = (ut(x x^T), y x) + Delta`` of its own clipped
    ``(x, y)``, projected onto the ball ``||.|| <= Delta`` before the bias (in ``[0, 2 Delta]``).

    The clipped ``x`` is held in the last ``d`` entries of ``w`` (where ``y x`` goes, each entry
    read before it is overwritten), so that the step allocates nothing."""
    c = params[1]
    d, C, lo, hi, Delta = int(c[0]), c[1], c[2], c[3], c[4]
    m = w.shape[0] - d  # d (d + 1) / 2: the upper triangle of x x^T
    x = w[m:]
    for i in range(d):
        x[i] = X[a, i]
    clip_l2(x, C)
    yc = clip_scalar(y, lo, hi)
    k = 0
    for i in range(d):
        for j in range(i, d):
            w[k] = x[i] * x[j]
            k += 1
    for i in range(d):
        w[k + i] = x[i] * yc
    clip_l2(w, Delta)
    for k in range(w.shape[0]):
        w[k] = min(max(w[k] + Delta, 0.0), 2.0 * Delta)


@nb.njit(cache=True)
def _encode(params, public, r, t, X, a, y, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """User side before the noise: the expected count ``clip(w g / Delta, 0, 2 g) + b p`` per label."""
    c = params[1]
    i = _which(c, t)
    Delta, g, b, p = c[4], c[5 + 2 * i], c[6 + 2 * i], c[9]
    _joint(params, X, a, y, out)
    for k in range(out.shape[0]):
        out[k] = min(max(out[k] * (g / Delta), 0.0), 2.0 * g) + b * p


@nb.njit(cache=True)
def _randomize(params, public, r, t, X, a, y, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """User side: the randomizer ``R*`` of every label (rounding, then ``Bin(b, p)``), label by label."""
    c = params[1]
    i = _which(c, t)
    Delta, g, b, p = c[4], c[5 + 2 * i], int(c[6 + 2 * i]), c[9]
    _joint(params, X, a, y, out)
    for k in range(out.shape[0]):
        out[k] = float(binomial_bits(rng, out[k], g, b, p, Delta))


@nb.njit(cache=True)
def _absorb(params, public, server, r, o):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Add the analyzed batch ``o`` (upper triangle of ``sum x x^T``, then ``sum y x``) to ``G``,
    ``u`` and publish the next policy."""
    G, u = server[0], server[1]
    d = u.shape[1]
    k = 0
    for i in range(d):
        for j in range(i, d):
            G[r, i, j] += o[k]
            if j != i:
                G[r, j, i] += o[k]
            k += 1
    for i in range(d):
        u[r, i] += o[k + i]
    _publish(params, public, server, r)


@nb.njit(cache=True)
def _update(params, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Add one user's counts to the batch's per-label sums; at the batch end de-bias as the
    analyzer does (``(Delta / g)(ones - p b n) - n Delta``, into the scratch ``server[5]``) and
    publish."""
    ones = server[4]
    for k in range(msg.shape[0]):
        ones[r, k] += msg[k]
    server[2][r] += 1.0
    T, B = int(params[2][3]), int(params[2][2])
    if batch_end(t, B, T):
        c = params[1]
        n = server[2][r]
        i = 1 if n == c[11] else 0
        Delta, g, b, p = c[4], c[5 + 2 * i], c[6 + 2 * i], c[9]
        o = server[5][r]
        for k in range(ones.shape[1]):
            o[k] = Delta / g * (ones[r, k] - p * b * n) - n * Delta
            ones[r, k] = 0.0
        server[2][r] = 0.0
        _absorb(params, public, server, r, o)


@nb.njit(cache=True)
def _absorb_all(params, public, server, o):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    for r in range(o.shape[0]):
        _absorb(params, public, server, r, o[r])


class VecClient(KernelClient):
    """The device: the kernel's user side; its message is the integer count of ones per label."""

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        msg = super().randomize(t, public, contexts, actions, rewards, rng)
        counts = np.rint(np.asarray(msg["count"])).astype(np.int64)
        return PrivatizedMessage({"count": counts}, msg.mechanism)


class VecShuffler(Shuffler):
    """The shuffler: releases the multiset of all the batch's labelled bits
    (:func:`privbandits.privacy.cheu.shuffle`: the per-label histogram), never a user's counts."""

    def collect(self, t: int, message: object) -> None:
        """Hold one message of the Cheu et al. vector summation (no other randomizer is accepted)."""
        if isinstance(message, PrivatizedMessage) and message.mechanism != MECHANISM:
            raise TrustBoundaryError(f"expected a {MECHANISM!r} message, got {message.mechanism!r}")
        super().collect(t, message)

    def release(self, t: int) -> ShuffledBatch:
        if not self._pending:
            raise TrustBoundaryError("the shuffler holds no messages")
        batch = cheu.shuffle(self._pending, self.rng)
        self._pending = []
        return batch


class VecServer(BatchesOnly, Server):
    """The analyzer: receives the shuffler's histogram only, de-biases it with
    :func:`privbandits.privacy.cheu.analyze` (the calibration of the batch's public size), adds it
    to the statistics and publishes the next policy."""

    def __init__(self, kernel: LocalKernel, constants: VecConstants) -> None:
        self.k = kernel
        self.c = constants

    def public_state(self) -> PublicState:
        return PublicState(dict(zip(self.k.public_names, self.k.public)))

    server_name = "shuffle LinUCB (vector summation)"
    takes = "the shuffler's release"

    def receive_batch(self, t: int, batch: ShuffledBatch) -> None:
        self._check_batch(batch)
        if set(batch.payload) != {"ones"}:
            raise TrustBoundaryError(
                "a release of the vector summation holds 'ones' (the per-label histogram of all "
                f"users' bits), got {sorted(batch.payload)}"
            )
        R = self.k.public[0].shape[0]
        try:
            check_real_arrays(batch.payload, "batch", integer=True, R=R)
        except ValidationError as err:
            raise TrustBoundaryError(str(err)) from err
        sizes = self.c.batch_sizes[0]
        n = batch.n_users
        if n not in sizes:
            raise TrustBoundaryError(
                f"a batch of {n} users; the public schedule has batches of {sizes[0]} and {sizes[1]}"
            )
        params = self.c.sums[1] if n == sizes[1] else self.c.sums[0]
        try:
            o = cheu.analyze(batch, params)
        except ValidationError as err:
            raise TrustBoundaryError(str(err)) from err
        _absorb_all(self.k.params, self.k.public, self.k.server, np.ascontiguousarray(o))

    def estimate(self) -> np.ndarray | None:
        return self.k.estimate()


def _count_noise(c: VecConstants, T: int) -> Any:
    """The noise of ``randomize`` around ``encode``: rounding plus ``Bin(b, p) - b p`` per label,
    variance ``q (1 - q) + b p (1 - p)`` with ``q`` the fractional part of ``w g / Delta`` (at most
    ``1/4`` without the message); unit scale: the sensitivity is stated in counts."""
    n_last = c.batch_sizes[0][1]

    def noise(t: int, actions: np.ndarray, encoded: np.ndarray | None) -> DeviceNoise:
        b = c.b[1 if (T > c.batch_size and t >= T - n_last) else 0]
        R = actions.shape[0]
        if encoded is None:
            var = np.full((R, c.n_labels), 0.25 + b * c.p * (1.0 - c.p))
        else:
            u = np.asarray(encoded, dtype=float) - b * c.p
            q = u - np.floor(u)
            var = q * (1.0 - q) + b * c.p * (1.0 - c.p)
        return DeviceNoise("unbiased", np.ones((R, c.n_labels)), var)

    return noise


@register
class ShuffleLinUCBVec(BatchedLinUCB):
    """Shuffle LinUCB with the vector-summation protocol (Chowdhury & Zhou 2022, second instantiation).

    Parameters
    ----------
    epsilon, delta : float
        Shuffle-model guarantee of every batch (and of the run: batches hold different users).
    batch_size : int, optional
        Users per batch ``B`` (default ``ceil(T^{3/5})``; the authors' experiments use 20).
    preset : {"strict", "paper"}
        ``strict``: the number of noise bits ``b`` of each batch is the smallest the binomial-pmf
        accountant certifies at ``(epsilon, delta)`` (calibrated mode of
        :func:`privbandits.privacy.cheu.calibrated_params`); ``paper``: eq. (122) of the protocol's
        theorem (Cheu et al. 2022, Lemma T.1 as restated by Sarmasarkar 2026) with the dimension
        of the summed vector, certified by that theorem (about 500 times the noise std).
    beta_scale : float
        Multiplier on the radius ``beta`` (1 = the authors' formula; exploration constant).
    S : float, optional
        Bound on ``||theta*||`` in the radius (default: the environment's).

    References
    ----------
    Chowdhury & Zhou (2022), ICML; the authors' code (``SDPLinUCBPVec``).  Cheu, Joseph, Mao &
    Peng (2022), ICLR; Sarmasarkar (2026), Appendix T.
    """

    name = "shuffle-linucb-vec"
    paper = "Chowdhury & Zhou 2022 (batched, vector summation)"
    constraints: ClassVar = {"preset": Choice("strict", "paper")}
    test_params: ClassVar = (
        {},
        {"batch_size": 7, "epsilon": 4.0},
        {"preset": "paper", "batch_size": 20, "epsilon": 2.0},
    )

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The first batch's vector summation through client, shuffler and server."""
        from privbandits.algorithms.chowdhury.vec_audit import shuffle_linucb_vec_spec

        text = (
            "Shuffle LinUCB, vector summation (Chowdhury & Zhou 2022): the first batch's Cheu et "
            "al. summation of (x x^T, y x) through client, shuffler and server, at the batch's "
            "shuffle claim (one message has no local claim)"
        )
        return (ClientPathCase(cls, protocol=shuffle_linucb_vec_spec, description=text),)

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Both batch sizes' protocols, their worst guarantee, ``Gamma``, ``lambda`` and ``beta``."""
        T, d, B, n_min, n_max, lo, hi = self._batches(spec)
        C = float(spec.context_bound)
        Dlt = joint_norm_bound(C, lo, hi)
        eps, dlt = self.epsilon, self.delta
        mode = "calibrated" if self.preset == "strict" else "theory"
        if mode == "theory" and (eps > cheu.CHEU_MAX_EPSILON or dlt >= 0.5):
            raise ValidationError(
                f"preset='paper' (eq. 122, Lemma T.1) needs epsilon <= {cheu.CHEU_MAX_EPSILON:g} "
                f"and delta < 1/2, got epsilon={eps:g}, delta={dlt:g}"
            )
        sens = joint_sensitivity(C, lo, hi)
        s0 = vec_sum_params(n_min, d, eps, dlt, Dlt, mode, sens)
        s1 = s0 if n_max == n_min else vec_sum_params(n_max, d, eps, dlt, Dlt, mode, sens)
        noise_std = max(s0.noise_std_bound, s1.noise_std_bound)
        level = self._noise_level(spec, noise_std * math.sqrt(d * T / B), C, lo, hi)
        c = VecConstants(
            batch_size=B,
            batch_sizes=((n_min, n_max),),
            mode=mode,
            Delta=Dlt,
            n_labels=joint_labels(d),
            g=(s0.g, s1.g),
            b=(s0.b, s1.b),
            p=s0.p,
            noise_std=noise_std,
            sums=(s0, s1),
            **level,
        )
        g0, g1 = c.batch_guarantees()
        worst = g0 if (g0.epsilon, g0.delta) >= (g1.epsilon, g1.delta) else g1
        notes = (
            f"shuffle LinUCB, vector summation (Chowdhury & Zhou 2022), preset={self.preset}: one "
            f"Cheu et al. vector summation per batch on w = (ut(x x^T), y x) ({c.n_labels} "
            f"coordinates, ||w|| <= Delta = {Dlt:.6g}; x clipped to ||x|| <= {C:g}, y to "
            f"[{lo:g}, {hi:g}]), batches of {n_min}..{n_max} users, g = {s0.g:.6g}/{s1.g:.6g}, "
            f"b = {s0.b}/{s1.b} ({mode} mode); per batch: {worst.notes}; batches of different "
            "users compose in parallel"
        )
        g = PrivacyGuarantee(
            model="shuffle" if worst.is_private else "none",
            epsilon=float(worst.epsilon),
            delta=float(worst.delta),
            unit="user",
            notes=notes,
            approximate=bool(g0.approximate or g1.approximate),
            ledger=c.ledger(),
        )
        return Calibration(g, preset=self.preset, requested=(eps, dlt), constants=c)

    @property
    def constants(self) -> VecConstants:
        """The typed calibration of the run."""
        return self.calibration.typed(VecConstants)

    def build_kernel(self) -> LocalKernel:
        c, spec, R = self.constants, self.spec, self.R
        T = max(spec.horizon, 1)
        client = (
            float(spec.d),
            c.context_bound,
            c.reward_lo,
            c.reward_hi,
            c.Delta,
            c.g[0],
            float(c.b[0]),
            c.g[1],
            float(c.b[1]),
            c.p,
            float(T),
            float(c.batch_sizes[0][1]),
            float(c.batch_size),
        )
        sens = max(s.sensitivity * s.g / s.Delta for s in c.sums)
        return self._batched_kernel(
            (_encode, _randomize, _update),
            client,
            c,
            # the batch's per-label sums of counts; the de-biased batch (scratch)
            (np.zeros((R, c.n_labels)), np.zeros((R, c.n_labels))),
            MessageLayout(MECHANISM, (("count", (c.n_labels,)),)),
            _count_noise(c, T),
            DeviceSensitivity("l2", sens),
            allocates=False,
        )

    def reset(self, spec: EnvSpec, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        assert isinstance(self.kernel, LocalKernel)
        self.client = VecClient(self.kernel, spec)
        self.server = VecServer(self.kernel, self.constants)
        self.shuffler = VecShuffler(streams.shuffler)
