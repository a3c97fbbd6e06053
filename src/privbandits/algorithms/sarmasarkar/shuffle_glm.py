"""ShuffleGLM: Algorithm 1 of Sarmasarkar (2026), stochastic contexts, (epsilon, delta)-shuffle DP.

Roles (the documentation's Concepts: trust models):

* **client** (:class:`ShuffleGLMClient`, one per user, on the device): from the published policy
  (``V``, ``H_j``, ``theta_hat_j``) eliminates arms with the UCB/LCB rule (lines 11-12), scales the
  survivors by ``sqrt(mu'(x^T theta_hat_1) / beta(x))`` (eqs. 10-11), draws from the G-optimal design
  of the (scaled) arms and plays the unscaled arm; sends ``R2(w_t x_t x_t^T)`` of the Cheu et al.
  matrix summation (:func:`privbandits.privacy.cheu.local_randomizer`, compiled binomial sampler).
  Its ``(x_t, r_t)`` stays on the device while its batch's ``P_GD`` runs: in every ``P_GD`` round the
  user answers the published iterate ``theta_s`` with ``R1`` of its clipped gradient
  (:meth:`ShuffleGLMClient.respond`).  :class:`ShuffleGLMClient` holds the devices of the users of
  the open batch; their data are dropped when the next batch starts.
* **shuffler** (:class:`ShuffleGLMShuffler`): releases only the multiset of all users' labelled
  bits (:func:`privbandits.privacy.cheu.shuffle`: the per-label histogram), never a per-user message.
* **server** (:class:`ShuffleGLMServer`, untrusted): analyzes each released batch
  (:func:`privbandits.privacy.cheu.analyze`), forms ``V`` / ``H_k`` (plus ``lambda I``), runs the
  projected gradient descent of ``P_GD`` on the analyzed gradient sums and publishes the batch's
  policy.

Multi-round protocol.  ``P_GD`` (Algorithm 7) asks the *same* users of a batch for ``T_it`` more
messages.  The reference driver supports this through :meth:`Server.wants_round` and
:meth:`Client.respond`: after a batch's release, while the server wants another round, the driver
broadcasts the server's public state to the batch's users (``respond``), passes their messages
through the shuffler and hands the release to the server.  The server never holds a client, a
user's data or a per-user message.

Engines.  ``engine="reference"`` runs the message-level driver, one Python step per round.
``engine="compiled"`` (and ``"auto"``) runs the batch path (:mod:`privbandits.engine.batches`):
the published policy is fixed within a batch, so :meth:`ShuffleGLMClient.choose_batch` computes
the elimination and the scaling of all users of a block of rounds at once and runs their designs
and draws in one compiled loop (:func:`privbandits.algorithms._shared.design_draws.design_draws`), and
:meth:`ShuffleGLMClient.randomize_batch` draws their Cheu et al. messages in one call; the
messages still go one per user through the shuffler, and ``P_GD`` runs as in the reference
driver.  Every stream is consumed in the reference driver's order, so the trajectory is the same
(exact, not only in distribution).  Independently, ``path="aggregate"`` draws each ``P_GD``
round's release directly (exact in distribution, with the message path as its twin and
two-sample tests between them), the users' gradients, encodings and roundings in one compiled
loop (:func:`privbandits.algorithms.sarmasarkar.pgd_round.pgd_rounded_sums`, on both drivers).
The aggregate driver (:mod:`privbandits.engine.aggregate`)
does not apply: it needs a fixed action set with public per-action pull counts, while here
every round brings a fresh context set.

References
----------
Sarmasarkar (2026), arXiv 2602.00417, Algorithm 1, eqs. (6)-(13), Lemma 4.3, Appendix T
(Algorithms 4-7); Cheu, Joseph, Mao & Peng (2022); Sawarni et al. (2024) (B-GLinCB).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import ClassVar

import numpy as np

from privbandits.algorithms._shared.design import g_optimal_design
from privbandits.algorithms._shared.design_draws import design_draws
from privbandits.algorithms.audit import AuditCase, ClientPathCase
from privbandits.algorithms.base import BatchClient, Server, ShuffleAlgorithm, Shuffler
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.registry import register
from privbandits.algorithms.sarmasarkar.pgd_round import pgd_rounded_sums
from privbandits.algorithms.sarmasarkar.shuffle_plan import (
    MODES,
    ShufflePlan,
    plan_guarantee,
    shuffle_plan,
    strict_plan,
)
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.links import Link
from privbandits.core.messages import (
    PrivatizedMessage,
    PublicState,
    ShuffledBatch,
    check_real_arrays,
)
from privbandits.core.params import Choice, Delta, Epsilon, Int, Optional, Real
from privbandits.core.public_space import PublicField, PublicSpace, PublicStateError
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy import cheu
from privbandits.privacy.cheu import SumParams
from privbandits.privacy.device import DeviceNoise, DeviceSensitivity
from privbandits.privacy.inputs import check_device_inputs
from privbandits.privacy.randomizers import binomial_bit_counts

__all__ = [
    "ShuffleGLM",
    "ShuffleGLMClient",
    "ShuffleGLMServer",
    "ShuffleGLMShuffler",
    "eliminate",
    "public_space",
    "scale_weights",
]

#: Frank-Wolfe step cap of the clients' designs (the default of :func:`g_optimal_design`).
DESIGN_MAX_ITER = 10_000
#: Eigenvalue floor applied to released matrices before inversion (post-processing).
EIG_FLOOR = 1e-6
#: Largest entry a device accepts in a published inverse (``1 / EIG_FLOOR``, with rounding slack).
MINV_MAX = (1.0 + 1e-6) / EIG_FLOOR


def _norms_sq(X: np.ndarray, Minv: np.ndarray) -> np.ndarray:
    return np.maximum(np.sum((X @ Minv) * X, axis=-1), 0.0)


def eliminate(
    X: np.ndarray, thetas: np.ndarray, Minvs: np.ndarray, widths: list[float], n_policies: int
) -> np.ndarray:
    """Sequential elimination of Algorithm 1, lines 11-12: the surviving arms (boolean mask).

    For ``j = 1 .. n_policies``: drop ``x`` with ``UCB_j(x) < max_{y in A} LCB_j(y)`` (over the
    already-reduced ``A``), ``UCB_j / LCB_j = <x, theta_hat_j> +/- widths[j] ||x||_{M_j^{-1}}``.
    The maximiser of ``LCB_j`` always survives, so the mask is never empty.

    ``X`` has shape ``(..., K, d)``, ``thetas`` ``(..., J, d)`` and ``Minvs`` ``(..., J, d, d)``
    (leading axes broadcast: many rounds and replications at once); the mask has shape ``(..., K)``.
    """
    alive = np.ones(X.shape[:-1], dtype=bool)
    for j in range(n_policies):
        mean = np.einsum("...kd,...d->...k", X, thetas[..., j, :])
        wid = widths[j] * np.sqrt(_norms_sq(X, Minvs[..., j, :, :]))
        best = np.max(np.where(alive, mean - wid, -np.inf), axis=-1, keepdims=True)
        alive &= mean + wid >= best
    return alive


def scale_weights(
    X: np.ndarray, theta1: np.ndarray, Vinv: np.ndarray, plan: ShufflePlan, link: Link
) -> np.ndarray:
    """``w(x) = min(mu'(<x, theta_hat_1>) / beta(x), 1/kappa*)``, ``beta(x) = exp(R min(2S, gamma sqrt(kappa) ||x||_{V^-1}))``
    (eqs. 10-11; the clip makes the matrix sensitivity ``1/kappa*`` deterministic).

    ``X`` has shape ``(..., K, d)``, ``theta1`` ``(..., d)``, ``Vinv`` ``(..., d, d)`` (leading axes
    broadcast); the weights have shape ``(..., K)``.
    """
    beta = np.exp(
        plan.R
        * np.minimum(2.0 * plan.S, plan.gamma * np.sqrt(plan.kappa) * np.sqrt(_norms_sq(X, Vinv)))
    )
    z = np.einsum("...kd,...d->...k", X, theta1)
    return np.minimum(np.asarray(link.dmu(z), dtype=float) / beta, 1.0 / plan.kappa_star)


def public_space(plan: ShufflePlan) -> PublicSpace:
    """Every public state a ShuffleGLM device accepts (what :meth:`ShuffleGLMServer.public_state` sends).

    ``batch`` and ``gd_batch``: a batch index of the plan; ``theta`` (``(R, M, d)``, the published
    ``theta_hat_j``) and ``theta_gd`` (the ``P_GD`` iterate): in the ball of radius ``S`` (the
    server projects every iterate onto it, Algorithm 7, and publishes their average);
    ``Minv`` (``(R, M, d, d)``, the published inverses): symmetric positive semidefinite with
    entries of magnitude at most ``1 / EIG_FLOOR`` (the server floors the eigenvalues it inverts).
    """
    M, big = plan.n_batches, MINV_MAX
    batches = tuple(range(M))
    return PublicSpace(
        (
            PublicField("batch", ("R",), "i", values=batches),
            PublicField("theta", ("R", M, "d"), norm=plan.S),
            PublicField(
                "Minv", ("R", M, "d", "d"), low=-big, high=big, symmetric=True, psd_floor=0.0
            ),
            PublicField("gd_batch", ("R",), "i", values=batches),
            PublicField("theta_gd", ("R", "d"), norm=plan.S),
        )
    )


def _counts_mean(w: np.ndarray, params: SumParams) -> np.ndarray:
    """``E[count] = clip(w g / Delta, 0, 2 g) + b p`` of the randomizer ``R*`` (Algorithm 4) per coordinate."""
    return np.clip(w * (params.g / params.Delta), 0.0, 2.0 * params.g) + params.b * params.p


def _counts_noise(w: np.ndarray, params: SumParams) -> DeviceNoise:
    """``count - E[count]``: randomized rounding plus ``Bin(b, p)``, variance ``q (1 - q) + b p (1 - p)``
    with ``q`` the fractional part of ``w g / Delta`` (unit scale: the sensitivity is in counts)."""
    u = np.clip(w * (params.g / params.Delta), 0.0, 2.0 * params.g)
    q = u - np.floor(u)
    return DeviceNoise(
        "unbiased", np.ones(w.shape), q * (1.0 - q) + params.b * params.p * (1.0 - params.p)
    )


class ShuffleGLMClient(BatchClient):
    """User side of Algorithm 1: choose, randomize ``w_t x_t x_t^T``, answer ``P_GD`` rounds.

    The server and the analyzer are untrusted, the shuffler only permutes.  Every public state the
    device reads is checked against :func:`public_space` (:meth:`public_space`) and its own inputs
    against the problem (:func:`~privbandits.privacy.inputs.check_device_inputs`) before any step
    runs.  The device's two messages are clipped on the device whatever the public state says:
    the weight ``w_t <= 1 / kappa*`` and the Frobenius norm ``w_t ||x_t||^2 <= Delta_k`` of the
    matrix input (:func:`privbandits.privacy.cheu.encode_rank_one`), and the ``P_GD`` gradient at
    the server's iterate onto the ball of radius ``L_k`` (:func:`privbandits.privacy.cheu.encode_vectors`).
    In count units (the message) two neighbouring users' encodings differ by at most
    ``sqrt(2) g_k`` (matrix, PSD inputs) and ``2 g_k`` (gradient) in l2: the sensitivities the
    accountant uses (:attr:`privbandits.privacy.cheu.SumParams.sensitivity` times ``g / Delta``),
    maximised over the batches (the public batch index selects the batch's calibration).

    Parameters
    ----------
    plan : ShufflePlan
        The public calibration.
    spec : EnvSpec
        The public problem description.
    path : {"messages", "aggregate"}
        ``P_GD`` rounds: one Cheu et al. message per user (reference), or the round's release
        (per-label histogram) drawn directly by :func:`privbandits.privacy.cheu.aggregate_release`,
        exact in distribution (a simulation shortcut that collapses the users and the shuffler).
    """

    def __init__(self, plan: ShufflePlan, spec: EnvSpec, path: str = "messages") -> None:
        self.plan = plan
        self.spec = spec
        self.path = path
        self.widths = plan.width_coefficients()
        self._space = public_space(plan)
        # devices of the open batch's users: their own (x, r), kept user-side for P_GD, in blocks
        # of users (round-major: (users, R, d) and (users, R))
        self._batch = -1
        self._x: list[np.ndarray] = []
        self._r: list[np.ndarray] = []
        self._users = 0
        self._held: tuple[np.ndarray, np.ndarray] | None = None

    # -- the public state ------------------------------------------------------------------------
    def public_space(self) -> PublicSpace:
        """The server's public state (:func:`public_space`)."""
        return self._space

    def _public(self, public: object, R: int) -> PublicState:
        """``public`` validated against :meth:`public_space` for ``R`` users."""
        return self.checked_public(public, R)

    @staticmethod
    def _batch_of(public: PublicState, key: str = "batch") -> int:
        k = np.asarray(public[key], dtype=np.int64)
        if k.size == 0 or np.any(k != k.reshape(-1)[0]):
            raise PublicStateError(
                f"public state field {key!r}: every replication follows the same public "
                "batch schedule; the device refuses differing batch indices"
            )
        return int(k.reshape(-1)[0])

    def _block(
        self,
        contexts: object,
        actions: object = None,
        rewards: object = None,
        *,
        bound: bool = True,
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """The inputs of a block of ``n`` users (``(n, R, K, d)``, ``(n, R)``, ``(n, R)``) checked
        as ``n R`` users (:func:`~privbandits.privacy.inputs.check_device_inputs`)."""
        X = np.asarray(contexts)
        if X.ndim != 4:
            raise ValidationError(
                f"a block of users' contexts must have shape (n, R, K, d), got {X.shape}"
            )
        n, R = X.shape[:2]
        given = {
            "actions": None if actions is None else np.asarray(actions),
            "rewards": None if rewards is None else np.asarray(rewards),
        }
        for name, v in given.items():
            if v is not None and v.shape != (n, R):
                raise ValidationError(
                    f"a block's {name} have shape {v.shape}, expected (n, R) = {(n, R)}"
                )
        flat = [None if v is None else v.reshape(n * R) for v in given.values()]
        Xf, a, y = check_device_inputs(
            self.spec, X.reshape((n * R,) + X.shape[2:]), flat[0], flat[1], bound=bound
        )
        return (
            Xf.reshape(X.shape),
            None if a is None else a.reshape(n, R),
            None if y is None else y.reshape(n, R),
        )

    # -- choice ----------------------------------------------------------------------------------
    def candidates(
        self, public: PublicState, X: np.ndarray, r: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Indices of the arms surviving elimination and the arms the design is computed on."""
        k = self._batch_of(public)
        if k == 0:
            return np.arange(X.shape[0]), X
        thetas, Minvs = np.asarray(public["theta"])[r], np.asarray(public["Minv"])[r]
        idx = np.flatnonzero(eliminate(X, thetas, Minvs, self.widths, k))
        w = scale_weights(X[idx], thetas[0], Minvs[0], self.plan, self.spec.link)
        return idx, np.sqrt(w)[:, None] * X[idx]

    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Draw ``x_t ~ pi^G`` on the (scaled, surviving) arms; returns the unscaled arm's index."""
        X, _, _ = check_device_inputs(self.spec, contexts, bound=False)
        state = self._public(public, X.shape[0])
        out = np.empty(X.shape[0], dtype=np.int64)
        for r in range(X.shape[0]):
            idx, Z = self.candidates(state, X[r], r)
            pi = g_optimal_design(Z, factor=self.plan.design_factor, init="uniform", prune=False).pi
            i = int(np.searchsorted(np.cumsum(pi), rng.random() * pi.sum(), side="right"))
            out[r] = idx[min(i, idx.size - 1)]
        return out

    def choose_batch(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """:meth:`choose` for the users of rounds ``t .. t + n - 1`` of one batch at once.

        ``contexts`` has shape ``(n, R, K, d)``; the policy is the batch's published one, so every
        user's elimination, scaling and design are computed together and the design and draw run
        in one compiled loop (:func:`privbandits.algorithms._shared.design_draws.design_draws`).  The
        uniforms are drawn round-major, replication-minor, as ``n`` calls of :meth:`choose` draw
        them: the same stream gives the same actions.  Returns ``(n, R)`` indices.
        """
        X, _, _ = self._block(contexts, bound=False)
        n, R, K, d = X.shape
        state = self._public(public, R)
        k = self._batch_of(state)
        if k == 0:
            alive, Z = np.ones((n, R, K), dtype=bool), X
        else:
            thetas, Minvs = np.asarray(state["theta"])[None], np.asarray(state["Minv"])[None]
            alive = eliminate(X, thetas, Minvs, self.widths, k)
            w = scale_weights(X, thetas[:, :, 0], Minvs[:, :, 0], self.plan, self.spec.link)
            Z = np.sqrt(w)[..., None] * X
        u = rng.random((n, R))
        out = np.empty(n * R, dtype=np.int64)
        missed = design_draws(
            np.ascontiguousarray(Z.reshape(n * R, K, d)),
            np.ascontiguousarray(alive.reshape(n * R, K)),
            u.reshape(-1),
            float(self.plan.design_factor),
            DESIGN_MAX_ITER,
            out,
        )
        if missed:
            warnings.warn(
                f"g_optimal_design reached max_iter={DESIGN_MAX_ITER} on {missed} action sets; widths "
                "that assume g <= 2d are unsupported (widths using the achieved g stay valid)",
                stacklevel=2,
            )
        return out.reshape(n, R)

    # -- the matrix message (Algorithm 1, lines 4 and 15-16) ------------------------------------
    def _weights(self, public: PublicState, x: np.ndarray) -> np.ndarray:
        """``w_t`` of the played arms ``x`` (shape ``(..., R, d)``): 1 in the warm-up, eqs. (10)-(11) after it."""
        if self._batch_of(public) == 0:
            return np.ones(x.shape[:-1])
        theta1, Vinv = np.asarray(public["theta"])[:, 0], np.asarray(public["Minv"])[:, 0]
        return scale_weights(x[..., None, :], theta1, Vinv, self.plan, self.spec.link)[..., 0]

    def _matrix_input(self, public: PublicState, x: np.ndarray) -> tuple[np.ndarray, SumParams]:
        """The encoded matrix input ``w`` (``(..., d (d + 1) / 2)``, in ``[0, 2 Delta_k]``) of the
        played arms ``x`` (``(..., R, d)``) and the batch's calibration: ``w_t x_t x_t^T`` with
        ``w_t <= 1 / kappa*`` rescaled onto the Frobenius ball of radius ``Delta_k``, plus the bias."""
        params = self.plan.matrix[self._batch_of(public)]
        w, _ = cheu.encode_rank_one(x, self._weights(public, x), params.Delta)
        return w, params

    def encode(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
    ) -> np.ndarray:
        """``(R, d (d + 1) / 2)``: the expected message, ``clip(w g / Delta, 0, 2 g) + b p`` counts
        per label, of the encoded matrix input (no state is kept)."""
        X, a, _ = check_device_inputs(self.spec, contexts, actions, rewards)
        assert a is not None
        w, params = self._matrix_input(
            self._public(public, X.shape[0]), X[np.arange(X.shape[0]), a]
        )
        return _counts_mean(w, params)

    def noise(
        self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray
    ) -> DeviceNoise:
        """Unbiased: randomized rounding plus ``Bin(b, p) - b p`` per label, in counts (:func:`_counts_noise`)."""
        X, a, _ = check_device_inputs(self.spec, contexts, actions)
        assert a is not None
        w, params = self._matrix_input(
            self._public(public, X.shape[0]), X[np.arange(X.shape[0]), a]
        )
        return _counts_noise(w, params)

    def sensitivity(self) -> DeviceSensitivity:
        """l2 distance in counts: ``max_k sqrt(2) Delta_k g_k / Delta_k = sqrt(2) max_k g_k`` (PSD inputs)."""
        return DeviceSensitivity("l2", max(p.sensitivity * p.g / p.Delta for p in self.plan.matrix))

    def _hold(self, public: PublicState, x: np.ndarray, y: np.ndarray) -> None:
        """Keep the users' ``(x, clip(r))`` (blocks of shape ``(users, R, d)`` / ``(users, R)``) on their devices."""
        k = self._batch_of(public)
        if k != self._batch:  # a new batch: the previous batch's users are done
            self._batch, self._x, self._r, self._users = k, [], [], 0
        self._x.append(x)
        self._r.append(y)
        self._users += x.shape[0]
        self._held = None

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        """``R2(w_t x_t x_t^T)`` (Algorithm 1, lines 4 and 15-16) of the encoded input of :meth:`encode`;
        keeps ``(x_t, clip(r_t))`` on the device."""
        X, a, y = check_device_inputs(self.spec, contexts, actions, rewards)
        assert a is not None and y is not None
        state = self._public(public, X.shape[0])
        x = X[np.arange(X.shape[0]), a]
        w, params = self._matrix_input(state, x)
        self._hold(state, x[None], np.clip(y, self.plan.r_lo, self.plan.r_hi)[None])
        return cheu.local_randomizer(w, params, rng)

    def randomize_batch(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> list[PrivatizedMessage]:
        """:meth:`randomize` for the users of rounds ``t .. t + n - 1`` of one batch: one message per user.

        ``contexts`` ``(n, R, K, d)``, ``actions`` and ``rewards`` ``(n, R)``.  The randomizer's
        draws are made entry by entry in round-major order, as ``n`` calls of :meth:`randomize`
        make them: the same stream gives the same messages.
        """
        X, a, y = self._block(contexts, actions, rewards)
        assert a is not None and y is not None
        n, R = a.shape
        state = self._public(public, R)
        x = X[np.arange(n)[:, None], np.arange(R)[None, :], a]
        w, params = self._matrix_input(state, x)
        self._hold(state, x, np.clip(y, self.plan.r_lo, self.plan.r_hi))
        counts = binomial_bit_counts(w, params.g, params.b, params.p, params.Delta, rng)
        return [
            PrivatizedMessage(payload={"count": counts[i]}, mechanism=params.mechanism)
            for i in range(n)
        ]

    # -- P_GD rounds (Algorithm 7, lines 6-8) ---------------------------------------------------
    def _gd_state(self, public: object) -> tuple[PublicState, SumParams, np.ndarray, np.ndarray]:
        """The validated public state of a ``P_GD`` round, its calibration and the batch's held data
        ``(R, n, d)`` / ``(R, n)``; refused unless the round is for the users this device holds."""
        if not self._x:
            raise TrustBoundaryError("a P_GD round reached a device that holds no user of a batch")
        state = self._public(public, self._x[0].shape[1])
        k = self._batch_of(state, "gd_batch")
        params = self.plan.vector[k]
        if k != self._batch or params is None or self._users != params.n:
            raise PublicStateError(
                f"a P_GD round for batch {k} reached users who are not that batch's"
            )
        if self._held is None:  # the batch's users in order: (R, n, d) and (R, n)
            self._held = (
                np.ascontiguousarray(np.concatenate(self._x).transpose(1, 0, 2)),
                np.ascontiguousarray(np.concatenate(self._r).T),
            )
        return state, params, self._held[0], self._held[1]

    def _gd_input(self, public: object) -> tuple[np.ndarray, SumParams]:
        """Each held user's encoded ``P_GD`` input ``(R, n, d)`` in ``[0, 2 L_k]``:
        ``clip_L((mu(<x_i, theta_s>) - r_i) x_i + (lambda_max / n) theta_s)`` plus the bias ``L_k``."""
        state, params, Xb, rb = self._gd_state(public)
        theta = state["theta_gd"]
        mu = np.asarray(self.spec.link.mu(np.einsum("rnd,rd->rn", Xb, theta)), dtype=float)
        u = (mu - rb)[..., None] * Xb + (self.plan.lam_max / params.n) * theta[:, None, :]
        w, _ = cheu.encode_vectors(u, params.Delta)
        return w, params

    def respond_encode(self, t: int, public: PublicState) -> np.ndarray:
        """The expected ``P_GD`` messages of the held users, ``(n, R, d)`` counts (the order of :meth:`respond`)."""
        w, params = self._gd_input(public)
        return _counts_mean(w, params).transpose(1, 0, 2)

    def respond_noise(self, t: int, public: PublicState) -> DeviceNoise:
        """The noise of each ``P_GD`` message, arrays ``(n, R, d)`` (:func:`_counts_noise`)."""
        w, params = self._gd_input(public)
        noise = _counts_noise(w, params)
        return DeviceNoise(
            noise.kind, noise.scale.transpose(1, 0, 2), noise.variance.transpose(1, 0, 2)
        )

    def respond_sensitivity(self) -> DeviceSensitivity:
        """l2 distance in counts of one user's ``P_GD`` message: ``max_k 2 L_k g_k / L_k = 2 max_k g_k``."""
        vec = [p for p in self.plan.vector if p is not None]
        return DeviceSensitivity(
            "l2", max((p.sensitivity * p.g / p.Delta for p in vec), default=0.0)
        )

    def respond(
        self, t: int, public: PublicState, rng: np.random.Generator
    ) -> list[PrivatizedMessage]:
        """One ``P_GD`` round (Algorithm 7, lines 6-8): each user of the batch sends ``R1`` of
        ``clip_L((mu(<x_i, theta_s>) - r_i) x_i + (lambda_max / n) theta_s)``."""
        state, params, Xb, rb = self._gd_state(public)
        theta = state["theta_gd"]  # (R, d), in the ball of radius S
        if (
            self.path == "aggregate"
        ):  # simulation fast path: the round's release, exact in distribution
            x_hat = np.empty(theta.shape, dtype=np.int64)
            pgd_rounded_sums(
                Xb,
                rb,
                np.ascontiguousarray(theta),
                self.spec.link.code,
                self.plan.lam_max / params.n,
                params.Delta,
                params.g,
                rng,
                x_hat,
            )
            release = cheu.release_from_rounded(x_hat, params, rng)
            return [
                PrivatizedMessage(
                    payload={"ones": release["ones"], "users": np.full(theta.shape[0], params.n)},
                    mechanism=params.mechanism,
                )
            ]
        w, _ = self._gd_input(state)
        return cheu.randomize_users(w, params, rng)


class ShuffleGLMShuffler(Shuffler):
    """The shuffler of Algorithm 1: releases the multiset of the batch's labelled bits only.

    Each release carries its protocol round (``0``: the batch's matrix summation; ``s >= 1``: the
    ``s``-th ``P_GD`` round of the same users).
    """

    def __init__(self, rng: np.random.Generator) -> None:
        super().__init__(rng)
        self._round = 0
        # the open batch's first count message and its (mechanism, shape): the layout every later
        # count message of the batch must have
        self._first: PrivatizedMessage | None = None
        self._layout: tuple[str, tuple[int, ...]] = ("", ())

    def collect(self, t: int, message: object) -> None:
        """Hold a message of the Cheu et al. summation (no other randomizer is accepted).

        The checks are :meth:`Shuffler.collect`'s; a count message of the open batch's layout
        (same randomizer, the one integer field ``count`` of the first message's shape: nothing
        else can pass them) is accepted without re-running them field by field.
        """
        if (
            self._pending
            and self._pending[0] is self._first
            and isinstance(message, PrivatizedMessage)
        ):
            payload = message.payload
            count = payload.get("count") if len(payload) == 1 else None
            if (
                isinstance(count, np.ndarray)
                and count.dtype.kind in "iu"
                and (message.mechanism, count.shape) == self._layout
            ):
                self._pending.append(message)
                return
        if isinstance(message, PrivatizedMessage) and not message.mechanism.startswith("cheu-"):
            raise TrustBoundaryError(
                f"expected a Cheu et al. summation message, got {message.mechanism!r}"
            )
        first = not self._pending
        super().collect(t, message)
        if first:
            assert isinstance(message, PrivatizedMessage)
            count = message.payload.get("count")
            if len(message.payload) == 1 and isinstance(count, np.ndarray):
                self._first, self._layout = message, (message.mechanism, count.shape)
            else:
                self._first = None

    def release(self, t: int) -> ShuffledBatch:
        """:func:`privbandits.privacy.cheu.shuffle` of the pending messages (the per-label histogram)."""
        if not self._pending:
            raise TrustBoundaryError("the shuffler holds no messages")
        matrix = self._pending[0].mechanism == "cheu-matrix-sum"
        self._round = 0 if matrix else self._round + 1
        first = self._pending[0]
        if (
            "ones" in first.payload
        ):  # aggregate path: the round's histogram, drawn exactly in distribution
            if len(self._pending) != 1 or set(first.payload) != {"ones", "users"}:
                raise TrustBoundaryError("an aggregate release must be the round's only message")
            users = np.asarray(first["users"], dtype=np.int64)
            batch = ShuffledBatch(
                payload={"ones": np.asarray(first["ones"], dtype=np.int64)},
                mechanism=first.mechanism,
                n_users=int(users.reshape(-1)[0]),
            )
        else:
            batch = cheu.shuffle(self._pending, self.rng)
        self._pending = []
        return dataclasses.replace(batch, round=self._round)


class ShuffleGLMServer(Server):
    """Untrusted analyzer and learner of Algorithm 1 (lines 5-7 and 17-19): sees shuffled batches only."""

    def __init__(self, plan: ShufflePlan, R: int) -> None:
        self.plan = plan
        self.R = R
        d, M = plan.d, plan.n_batches
        self.k = 0  # batch being collected
        self.theta = np.zeros((R, M, d))  # published theta_hat_j
        self.Minv = np.broadcast_to(np.eye(d), (R, M, d, d)).copy()  # published (floored) inverses
        self.matrices: list[
            np.ndarray
        ] = []  # V, H_2, ...: the released noisy matrices (+ lambda I)
        self.floor_active = 0
        self.published = 0  # number of published estimates theta_hat_j
        self.gd_round = 0  # P_GD rounds done for batch k (running when > 0 or just started)
        self._gd = False
        self._theta_gd = np.zeros((R, d))
        self._avg = np.zeros((R, d))
        self.received: list[tuple[str, int, int]] = []  # (mechanism, round, n_users)

    def public_state(self) -> PublicState:
        """Batch index, published policies and (during ``P_GD``) the iterate ``theta_s``."""
        R = self.R
        return PublicState(
            {
                "batch": np.full(R, self.k, dtype=np.int64),
                "theta": self.theta,
                "Minv": self.Minv,
                "gd_batch": np.full(R, self.k, dtype=np.int64),
                "theta_gd": self._theta_gd,
            }
        )

    def wants_round(self) -> bool:
        """True while the open batch's ``P_GD`` needs another round of its users' messages."""
        return self._gd

    def receive_batch(self, t: int, batch: ShuffledBatch) -> None:
        """Analyze a release: the batch's matrix sum, or one ``P_GD`` round's gradient sum."""
        if not isinstance(batch, ShuffledBatch):
            raise TrustBoundaryError(
                f"the server only accepts a ShuffledBatch, got {type(batch).__name__}"
            )
        if self.k >= self.plan.n_batches:
            raise TrustBoundaryError("a batch arrived after the last scheduled batch")
        if set(batch.payload) not in ({"ones"}, {"label_multi", "bit_multi"}):
            raise TrustBoundaryError(
                "a Cheu et al. release holds 'ones' (the per-label histogram) or "
                f"'label_multi' and 'bit_multi' (the shuffled bits), got {sorted(batch.payload)}"
            )
        check_real_arrays(batch.payload, "batch", integer=True, R=self.Minv.shape[0])
        self.received.append((batch.mechanism, batch.round, batch.n_users))
        if self._gd:
            self._gd_step(batch)
        else:
            self._matrix(batch)

    def _matrix(self, batch: ShuffledBatch) -> None:
        p = self.plan
        params = p.matrix[self.k]
        o = cheu.upper_to_symmetric(cheu.analyze(batch, params), p.d) + p.lam * np.eye(p.d)
        self.matrices.append(o)
        vals, vecs = np.linalg.eigh(o)
        self.floor_active += int(np.count_nonzero(vals.min(axis=1) < EIG_FLOOR))
        vals = np.maximum(vals, EIG_FLOOR)
        inv = np.einsum("rij,rj,rkj->rik", vecs, 1.0 / vals, vecs)
        self.Minv[:, self.k] = (
            inv + np.swapaxes(inv, -1, -2)
        ) / 2  # exactly symmetric, as devices require
        if p.vector[self.k] is None:
            self.k += 1
            return
        self._gd, self.gd_round = True, 0
        self._theta_gd = np.zeros((self.R, p.d))
        self._avg = np.zeros((self.R, p.d))

    def _gd_step(self, batch: ShuffledBatch) -> None:
        """``theta_(s+1) = Pi_ball(S)(theta_s - eta s_s / n)``; after ``T_it`` rounds publish the average."""
        p = self.plan
        params = p.vector[self.k]
        assert params is not None
        s = cheu.analyze(batch, params)
        self._avg += self._theta_gd
        step = self._theta_gd - p.eta[self.k] * s / params.n
        norm = np.linalg.norm(step, axis=1, keepdims=True)
        self._theta_gd = step * np.minimum(1.0, p.S / np.maximum(norm, 1e-300))
        self.gd_round += 1
        if self.gd_round == p.T_it[self.k]:
            self.theta[:, self.k] = self._avg / p.T_it[self.k]
            self.published = self.k + 1
            self._gd = False
            self.k += 1

    def estimate(self) -> np.ndarray | None:
        """The latest published ``theta_hat`` (None before the warm-up's ``P_GD`` ends)."""
        if self.published == 0:
            return None
        return self.theta[:, self.published - 1].copy()


@register
class ShuffleGLM(ShuffleAlgorithm):
    """ShuffleGLM (Sarmasarkar 2026, Algorithm 1): batched GLM elimination, (epsilon, delta)-shuffle DP.

    Parameters
    ----------
    epsilon : float
        Privacy target per user (every user belongs to one batch).
    delta : float, optional
        Default ``1 / T``.
    n_batches : int, optional
        ``M``; default ``max(2, ceil(log2 log2 T))``.
    zeta : float
        Failure probability in ``B_noise`` and the ``P_GD`` round count.
    max_iters : int
        Cap on the ``P_GD`` rounds of a batch.
    path : {"messages", "aggregate"}
        ``P_GD`` rounds through one message per user (reference) or through the exact-in-distribution
        aggregate release (:class:`ShuffleGLMClient`); the design-matrix summations always use the
        message path.
    gamma : float, optional
        Confidence radius; default eq. (26) with the mode's constants (a hyperparameter, as in
        Remark B.1: it changes the policy only, not the noise or the guarantee).
    mode : {"practical", "theory"}
        ``practical``: the practical constants (warm-up length, ``lambda``, ``gamma``, calibrated
        binomial noise); ``theory``: the paper's literal constants (eqs. 6, 20-26, 122, Algorithm 7),
        privacy-correct by Lemmas T.1-T.2 but noise-dominated at any simulated horizon (the warm-up
        of eq. 6 usually covers the whole run).  Both in
        :mod:`privbandits.algorithms.sarmasarkar.shuffle_plan`.

    preset : {"strict", "paper"}
        Practical mode: ``strict`` calibrates both parts at the zCDP level whose rigorous
        accounted epsilon lies in ``[0.9 eps, eps]``
        (:func:`~privbandits.algorithms.sarmasarkar.shuffle_plan.strict_plan`); ``paper`` at the
        paper's halves ``rho_for(eps/2, delta/2)`` each (accounted well below the request at small
        epsilon).  Theory mode ignores it.

    Notes
    -----
    The guarantee is computed from the noise actually drawn
    (:func:`~privbandits.algorithms.sarmasarkar.shuffle_plan.plan_guarantee`).  Practical mode: the
    matrix sum and the ``P_GD`` rounds of a user's batch composed by the Renyi route from the
    binomial pmf (rigorous, no Gaussian approximation;
    :mod:`~privbandits.algorithms.sarmasarkar.binomial_composition`).  Theory mode: Lemmas
    T.1-T.2 solved for epsilon at the ``b`` used, advanced composition over the ``P_GD`` rounds.

    References
    ----------
    Sarmasarkar (2026), arXiv 2602.00417, Algorithm 1 and Appendix T.
    """

    name = "shuffle-glm"
    trust_model = "shuffle"
    paper = "Sarmasarkar 2026 (Alg. 1)"
    settings: ClassVar[tuple[str, ...]] = ("single",)
    links: ClassVar[tuple[str, ...]] = ("logistic", "probit")
    constraints: ClassVar = {
        "epsilon": Epsilon,
        "delta": Optional(Delta),
        "n_batches": Optional(Int(2, 20)),
        "zeta": Real(0.0, 1.0, low_open=True, high_open=True),
        "max_iters": Int(1, 100_000),
        "path": Choice("messages", "aggregate"),
        "gamma": Optional(Real(0.0, None, low_open=True)),
        "mode": Choice(*MODES),
        "preset": Choice("strict", "paper"),
    }
    test_params: ClassVar = (
        {"epsilon": 4.0},
        {"epsilon": 1.0, "delta": 1e-3, "n_batches": 3, "max_iters": 20},
        {"epsilon": 2.0, "path": "aggregate"},
        {"epsilon": 2.0, "mode": "theory", "max_iters": 5},
        {"epsilon": 4.0, "preset": "paper"},
    )

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The warm-up summation through client, shuffler and server (the protocol's claim)."""
        from privbandits.algorithms.sarmasarkar.shuffle_audit import (
            AUDIT_EPSILON,
            shuffle_glm_matrix_spec,
        )

        text = (
            "ShuffleGLM (Sarmasarkar 2026, Alg. 1): warm-up x x^T summation through client, "
            "shuffler and server, at the summation's shuffle claim (one message has no local claim)"
        )
        params = {"epsilon": AUDIT_EPSILON}
        return (ClientPathCase(cls, params, protocol=shuffle_glm_matrix_spec, description=text),)

    server: ShuffleGLMServer
    client: ShuffleGLMClient
    shuffler: ShuffleGLMShuffler

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float | None = None,
        n_batches: int | None = None,
        zeta: float = 0.02,
        max_iters: int = 500,
        path: str = "messages",
        gamma: float | None = None,
        mode: str = "practical",
        preset: str = "strict",
    ) -> None:
        pass

    def plan_for(self, spec: EnvSpec) -> ShufflePlan:
        """The public plan on problem ``spec``."""
        delta = 1.0 / spec.horizon if self.delta is None else self.delta
        build = (
            strict_plan if self.mode == "practical" and self.preset == "strict" else shuffle_plan
        )
        return build(
            T=spec.horizon,
            d=spec.d,
            epsilon=self.epsilon,
            delta=delta,
            link=spec.link,
            S=spec.theta_bound,
            C_B=spec.context_bound,
            reward_range=spec.reward_range,
            M=self.n_batches,
            zeta=self.zeta,
            max_iters=self.max_iters,
            gamma=self.gamma,
            mode=self.mode,
        )

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Plan and the guarantee accounted from its noise (:func:`plan_guarantee`; max over the disjoint batches)."""
        plan = self.plan_for(spec)
        delta = 1.0 / spec.horizon if self.delta is None else self.delta
        g, by_batch = plan_guarantee(plan, delta)
        assert plan.constants is not None
        typed = dataclasses.replace(plan.constants, delta=delta, epsilon_by_batch=tuple(by_batch))
        return Calibration(g, preset=self.preset, requested=(self.epsilon, delta), constants=typed)

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        self.plan = self.plan_for(spec)
        self.client = ShuffleGLMClient(self.plan, spec, self.path)
        self.server = ShuffleGLMServer(self.plan, self.R)
        self.shuffler = ShuffleGLMShuffler(streams.shuffler)
        self._ends = set(self.plan.ends)

    def batch_ends(self, t: int) -> bool:
        """True at the last round of each scheduled batch."""
        return t + 1 in self._ends
