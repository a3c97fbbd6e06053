"""Convex loss environments for bandit convex optimization (continuous actions).

Zheng, Cai, Huang, Li & Wang (2020), sections 3.1-3.2: each round the server queries one point
(one-point feedback, Algorithm 1 with FKM) or two points (Algorithm 2 / 4) of a convex set ``X``,
and user ``t`` observes its own convex loss ``f_t`` there.  This environment kind extends the
library's environments in the smallest way (the trust boundary, contract and randomness conventions unchanged otherwise):

* an *action* is a point: the drivers pass ``(R, k, d)`` arrays of the ``k`` points queried in the
  round (:func:`privbandits.engine.convex.drive_convex`), and :meth:`ConvexLossEnv.step` returns
  the losses ``(R, k)`` at them and the pseudo-regret ``mean_i F(x_{t,i}) - F(x*)`` (eq. (2) of the
  paper for ``k = 2``), ``F = E f_t``;
* the per-round *contexts* are the users' private loss parameters ``(R, p)`` (drawn in chunks from
  the contexts stream, so every algorithm sees the same losses: common random numbers); a
  curator may read them, a local client holds them, a server never sees them;
* :meth:`ConvexLossEnv.reset` returns a :class:`~privbandits.core.convex.ConvexSpec` (domain,
  Lipschitz constant, loss range, strong convexity) and ``theta_star`` is the minimizer ``x*``.

Loss families (all on ``X`` with outer radius ``R_X`` and inner radius ``r``):

``quadratic``  ``f_t(x) = ||x - a_t||^2 / (4 R_X^2)``, ``a_t = a + xi_t`` with ``a`` uniform in the
               ball of radius ``center_norm r`` and ``xi_t`` uniform in the ball of radius
               ``spread r`` (``center_norm + spread <= 1``, so ``a_t`` is in ``X``): range
               ``[0, 1]``, ``G = 1/R_X``, ``mu = 1/(2 R_X^2)``, ``x* = a`` (the losses of the E1 validation).
``logistic``   ``f_t(x) = ln(1 + exp(-y_t z_t^T x / R_X))`` for a pair drawn uniformly from a
               pool of ``pool`` labelled unit vectors (labels from a logistic model): range
               ``[ln(1 + e^-1), ln(1 + e)]``, ``G = 1/R_X``; ``x*`` by projected gradient descent.
``linear``     ``f_t(x) = (1 + c_t^T x / R_X) / 2``, ``c_t = c + xi_t`` as for ``quadratic`` but in
               the unit ball (``||c_t|| <= 1``):
               range ``[0, 1]``, ``G = 1/(2 R_X)``, ``x*`` the minimizing vertex / boundary point.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privbandits.core.convex import ConvexSpec, Domain
from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_choice, check_in_range, check_int, check_positive
from privbandits.envs.base import Chunk, Environment
from privbandits.envs.contexts import unit_sphere
from privbandits.envs.convex_losses import FAMILY_CODES, expected_rows, loss_rows

__all__ = ["LOSS_FAMILIES", "ConvexLossEnv"]

LOSS_FAMILIES: tuple[str, ...] = ("quadratic", "logistic", "linear")


def _uniform_ball(
    rng: np.random.Generator, size: tuple[int, ...], d: int, radius: float
) -> np.ndarray:
    u = unit_sphere(rng, size, d)
    return radius * u * rng.random(size + (1,)) ** (1.0 / d)


class ConvexLossEnv(Environment):
    """Stochastic convex losses on a ball or box (module docstring).

    Parameters
    ----------
    d : int
        Dimension.
    loss : {"quadratic", "logistic", "linear"}
        Loss family.
    domain : {"ball", "box"}
        Decision set; ``domain_size`` is the ball's radius or the box's half-width.
    domain_size : float
    center_norm, spread : float
        Location of the mean parameter and size of its per-round perturbation, as fractions of
        the inner radius (``quadratic``, ``linear``), with ``center_norm + spread <= 1``.
    pool : int
        Number of labelled points of the ``logistic`` family.
    """

    setting = "single"

    def __init__(
        self,
        d: int,
        loss: str = "quadratic",
        domain: str = "ball",
        domain_size: float = 1.0,
        center_norm: float = 0.5,
        spread: float = 0.3,
        pool: int = 50,
    ) -> None:
        super().__init__(d, 1, "identity", "none", 0.0, 1.0, None)
        self.loss = check_choice("loss", loss, LOSS_FAMILIES)
        self.domain = Domain(
            check_choice("domain", domain, ("ball", "box")),
            check_positive("domain_size", domain_size),
            self.d,
        )
        self.center_norm = check_in_range("center_norm", center_norm, 0.0, 1.0)
        self.spread = check_in_range("spread", spread, 0.0, 1.0)
        if center_norm + spread > 1.0:
            raise ValidationError(
                f"center_norm + spread must be <= 1 (a_t inside X), got {center_norm} + {spread}"
            )
        self.pool = check_int("pool", pool, 2)

    # -- public description ------------------------------------------------------------------
    @property
    def loss_range(self) -> tuple[float, float]:
        if self.loss == "logistic":
            return (math.log1p(math.exp(-1.0)), math.log1p(math.e))
        return (0.0, 1.0)

    def spec(self, horizon: int) -> ConvexSpec:
        Rx = self.domain.outer_radius
        G = {"quadratic": 1.0 / Rx, "logistic": 1.0 / Rx, "linear": 0.5 / Rx}[self.loss]
        mu = 0.5 / Rx**2 if self.loss == "quadratic" else 0.0
        lo, hi = self.loss_range
        return ConvexSpec(
            d=self.d,
            K=1,
            setting="single",
            horizon=horizon,
            context_bound=Rx,
            reward_bound=max(abs(lo), abs(hi)),
            reward_range=(-hi, -lo),
            theta_bound=Rx,
            noise_scale=0.0,
            domain=self.domain,
            lipschitz=G,
            loss_range=(lo, hi),
            sc_modulus=mu,
            param_dim=self.d + 1 if self.loss == "logistic" else self.d,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "env": type(self).__name__,
            "d": self.d,
            "loss": self.loss,
            "domain": self.domain.kind,
            "domain_size": self.domain.size,
            "center_norm": self.center_norm,
            "spread": self.spread,
            "pool": self.pool,
        }

    @property
    def theta_star(self) -> np.ndarray:
        """The minimizer ``x*`` of ``F = E f_t`` on ``X``, ``(R, d)``."""
        return self._xstar

    @property
    def _param_radius(self) -> float:
        """Scale of ``a_t`` (quadratic: the inner radius, so ``a_t`` is in ``X``) or ``c_t``
        (linear: 1, so ``||c_t|| <= 1``)."""
        return self.domain.inner_radius if self.loss == "quadratic" else 1.0

    # -- losses --------------------------------------------------------------------------------
    def loss_values(self, params: np.ndarray, points: np.ndarray) -> np.ndarray:
        """``f(x)`` for loss parameters ``params`` (R, p) at ``points`` (R, k, d): ``(R, k)``
        (:func:`~privbandits.envs.convex_losses.loss_at`)."""
        pts = np.ascontiguousarray(points, dtype=float)
        out = np.empty(pts.shape[:2])
        loss_rows(self._code, self.domain.outer_radius, np.ascontiguousarray(params), pts, out)
        return out

    def expected_loss(self, points: np.ndarray) -> np.ndarray:
        """``F(x) = E f_t(x)`` at ``points`` (R, k, d), up to an additive constant per replication
        that cancels in the regret: ``(R, k)`` (:func:`~privbandits.envs.convex_losses.expected_at`)."""
        pts = np.ascontiguousarray(points, dtype=float)
        out = np.empty(pts.shape[:2])
        expected_rows(self._code, self.domain.outer_radius, self._center, self._pool, pts, out)
        return out

    def compiled_problem(self) -> tuple[int, float, np.ndarray, np.ndarray, np.ndarray]:
        """What the compiled loss-environment loop reads of the instance: the family's code, the
        outer radius ``Rx``, the mean parameters ``(R, d)``, the labelled pool ``(R, n, d + 1)``
        (``n = 0`` outside the logistic family) and ``F(x*)`` ``(R,)``."""
        return self._code, float(self.domain.outer_radius), self._center, self._pool, self._fstar

    # -- protocol ----------------------------------------------------------------------------
    def _reset(self) -> None:
        rng, R, d = self.streams.instance, self.R, self.d
        self._code = FAMILY_CODES[self.loss]
        if self.loss == "logistic":
            w = unit_sphere(rng, (R,), d)
            Z = unit_sphere(rng, (R, self.pool), d)
            p = 1.0 / (1.0 + np.exp(-3.0 * np.einsum("rnd,rd->rn", Z, w)))
            y = np.where(rng.random((R, self.pool)) < p, 1.0, -1.0)
            self._pool = np.concatenate([Z, y[..., None]], axis=2)
            self._center = np.zeros((R, d))
            self._xstar = self._minimize()
        else:
            self._center = _uniform_ball(rng, (R,), d, self.center_norm * self._param_radius)
            self._pool = np.zeros((R, 0, d + 1))
            if self.loss == "quadratic":
                self._xstar = self._center.copy()
            else:
                self._xstar = self._linear_minimizer()
        self._fstar = self.expected_loss(self._xstar[:, None, :])[:, 0]

    def _linear_minimizer(self) -> np.ndarray:
        c = self._center
        if self.domain.kind == "box":
            return -self.domain.size * np.sign(c)
        norm = np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-300)
        return -self.domain.size * c / norm

    def _minimize(self, iters: int = 3000) -> np.ndarray:
        """Projected gradient descent on the pool loss (smooth: beta <= 1 / (4 R_X^2), step 1/beta)."""
        Rx, d = self.domain.outer_radius, self.d
        Z, y = self._pool[..., :d], self._pool[..., d]
        x = np.zeros((self.R, d))
        step = 4.0 * Rx * Rx
        for _ in range(iters):
            m = y * np.einsum("rnd,rd->rn", Z, x) / Rx
            g = -np.einsum("rn,rnd->rd", y / (1.0 + np.exp(m)), Z) / (Rx * self.pool)
            x = self.domain.project(x - step * g)
        return x

    def next_chunk(self) -> Chunk:
        """The users' loss parameters of the next rounds, ``X`` of shape ``(B, R, p)``; the arm
        fields of the chunk are empty (actions are points)."""
        left = self.horizon - self._drawn
        B = min(self.chunk_rounds(), left) if left > 0 else self.chunk_rounds()
        rng, R, d = self.streams.contexts, self.R, self.d
        if self.loss == "logistic":
            idx = rng.integers(0, self.pool, (B, R))
            X = self._pool[np.arange(R)[None, :], idx]
        else:
            X = self._center[None] + _uniform_ball(rng, (B, R), d, self.spread * self._param_radius)
        empty = np.zeros((B, R, 0))
        chunk = Chunk(self._drawn, X, empty, empty, np.broadcast_to(self._fstar, (B, R)))
        self._drawn += B
        self._chunk, self._pos = chunk, 0
        return chunk

    def chunk_rounds(self) -> int:
        return int(max(1, min(4096, (1 << 20) // (self.R * (self.d + 1)))))

    def next_round(self) -> np.ndarray:
        """Advance one round; returns the users' loss parameters ``(R, p)``."""
        if self._chunk is None or self._pos >= self._chunk.B:
            self.next_chunk()
        ch = self._chunk
        assert ch is not None
        self._params = ch.X[self._pos]
        self._pos += 1
        self.t += 1
        return self._params

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Losses ``(R, k)`` of this round's users at the queried points ``(R, k, d)`` and the
        pseudo-regret ``mean_i F(x_i) - F(x*)`` ``(R,)``."""
        pts = np.asarray(actions, dtype=float)
        if pts.ndim != 3 or pts.shape[0] != self.R or pts.shape[2] != self.d:
            raise ValidationError(
                f"a loss environment takes points of shape (R={self.R}, k, d={self.d}), "
                f"got shape {pts.shape}"
            )
        if not np.all(self.domain.contains(pts)):
            raise ValidationError(
                f"a queried point lies outside the decision set ({self.domain.kind} of size "
                f"{self.domain.size:g}); project onto the domain"
            )
        values = self.loss_values(self._params, pts)
        regret = self.expected_loss(pts).mean(axis=1) - self._fstar
        return values, regret

    def regret(self, actions: np.ndarray) -> np.ndarray:
        return self.step(actions)[1]

    def _draw_chunk(
        self, B: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
        raise NotImplementedError("ConvexLossEnv draws its chunks in next_chunk")
