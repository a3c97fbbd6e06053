"""Fixed finite action sets: the non-contextual stochastic linear bandit (Hanna et al. 2022)."""

from __future__ import annotations

from typing import Any

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.links import Link
from privbandits.core.validation import check_choice, check_finite_array
from privbandits.envs.contexts import unit_sphere
from privbandits.envs.synthetic import SingleThetaEnv

__all__ = ["FiniteActionEnv"]


class FiniteActionEnv(SingleThetaEnv):
    """The same action set ``A`` (K vectors in R^d) every round; mean reward ``mu(a @ theta*)``.

    Parameters
    ----------
    d, K : int
        Dimension and number of actions.
    actions : {"circle", "sphere", "ball"} or array of shape (K, d)
        ``circle`` (d = 2 only): K angles uniform on [0, 2 pi) (Hanna et al. 2022, section 6);
        ``sphere``/``ball``: K i.i.d. uniform vectors; drawn per replication from the instance
        stream.  An array is used in every replication.
    theta : {"sphere", "ball"} or array of shape (d,)
        True parameter.
    link, noise, noise_scale, context_bound, reward_range :
        As for :class:`~privbandits.envs.synthetic.SyntheticEnv`.
    """

    fixed_actions = True

    def __init__(
        self,
        d: int,
        K: int,
        actions: Any = "sphere",
        theta: Any = "sphere",
        theta_norm: float = 1.0,
        link: str | Link = "identity",
        noise: str = "gaussian",
        noise_scale: float = 0.1,
        context_bound: float = 1.0,
        reward_range: tuple[float, float] | None = None,
    ) -> None:
        super().__init__(d, K, link, noise, noise_scale, context_bound, reward_range)
        if isinstance(actions, str):
            check_choice("actions", actions, ("circle", "sphere", "ball"))
            if actions == "circle" and d != 2:
                raise ValidationError(f"actions='circle' needs d=2, got d={d}")
        else:
            arr = check_finite_array("actions", actions, ndim=2)
            if arr.shape != (K, d):
                raise ValidationError(f"actions must have shape ({K}, {d}), got {arr.shape}")
            if np.linalg.norm(arr, axis=1).max() > context_bound * (1 + 1e-9):
                raise ValidationError(f"actions must have l2 norm <= context_bound={context_bound}")
        self.actions = actions
        self._set_theta(theta, theta_norm)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.update(
            actions=self.actions
            if isinstance(self.actions, str)
            else np.asarray(self.actions).tolist(),
            theta=self.theta if isinstance(self.theta, str) else np.asarray(self.theta).tolist(),
            theta_norm=self.theta_norm,
        )
        return out

    @property
    def action_set(self) -> np.ndarray:
        """The fixed actions, ``(R, K, d)`` (read-only)."""
        return self._A

    @property
    def fixed_means(self) -> np.ndarray:
        """Mean reward of every action, ``(R, K)``."""
        return self._means

    def reward_sums(
        self,
        counts: np.ndarray,
        rng: np.random.Generator,
        clip: tuple[float, float] | None = None,
        rows: np.ndarray | None = None,
        actions: np.ndarray | None = None,
    ) -> np.ndarray:
        """Exact draws of per-action sums of i.i.d. rewards for given pull counts (aggregate fast path).

        Entry ``(j, k)`` is the sum of ``counts[j, k]`` independent rewards of action
        ``actions[j, k]`` in replication ``rows[j]``, each clipped to ``clip`` when given: the
        same distribution as summing :meth:`step`'s rewards over that many rounds (the documentation's Concepts: engines).  Rademacher: ``2 Binomial(n, (1 + mu)/2) - n`` (each value clipped);
        Bernoulli: ``Binomial(n, mu)`` ones; Gaussian without clipping:
        ``n mu + sigma sqrt(n) z``; Poisson without clipping: ``Poisson(n mu)``; ``none``:
        ``n clip(mu)``; otherwise explicit vectorized draws through the reward model.

        Parameters
        ----------
        counts : ndarray of int, shape (n, J)
            Number of pulls (>= 0).
        rng : Generator
            Reward stream.
        clip : (lo, hi), optional
            Clip every reward to ``[lo, hi]`` before summing (a privatizer's reward range).
        rows : ndarray of int, shape (n,), optional
            Replication of each row (default ``0..R-1``, then ``n`` must equal R).
        actions : ndarray of int, shape (n, J), optional
            Action of each entry (default ``0..K-1`` on every row, then ``J`` must equal K).

        Returns
        -------
        ndarray of shape (n, J)
        """
        raw = check_finite_array("counts", counts, ndim=2)
        c = raw.astype(np.int64)
        if not np.array_equal(c, raw) or (c.size and c.min() < 0):
            raise ValidationError("counts must be non-negative integers (numbers of pulls)")
        n, J = c.shape
        rows = np.arange(self.R) if rows is None else np.asarray(rows, dtype=np.int64)
        if rows.shape != (n,) or (n and (rows.min() < 0 or rows.max() >= self.R)):
            raise ValidationError(
                f"rows must be {n} replication indices in [0, {self.R}), got shape {rows.shape}"
            )
        if actions is None:
            if J != self.K:
                raise ValidationError(
                    f"counts must have K={self.K} columns when actions is not given, got {J}"
                )
            actions = np.broadcast_to(np.arange(self.K), (n, J))
        actions = np.asarray(actions, dtype=np.int64)
        if actions.shape != (n, J) or (
            actions.size and (actions.min() < 0 or actions.max() >= self.K)
        ):
            raise ValidationError(
                f"actions must be indices in [0, {self.K}) of shape {(n, J)}, got {actions.shape}"
            )
        lo, hi = (-np.inf, np.inf) if clip is None else (float(clip[0]), float(clip[1]))
        if not lo < hi:
            raise ValidationError(f"clip must satisfy lo < hi, got {clip}")
        mu = self._means[rows[:, None], actions]
        kind = self.noise.kind
        cf = c.astype(float)
        if kind == "rademacher":
            k = rng.binomial(c, 0.5 * (1.0 + mu))
            return k * np.clip(1.0, lo, hi) + (c - k) * np.clip(-1.0, lo, hi)
        if kind == "bernoulli":
            k = rng.binomial(c, mu)
            return k * np.clip(1.0, lo, hi) + (c - k) * np.clip(0.0, lo, hi)
        if kind == "none":
            return cf * np.clip(mu, lo, hi)
        if clip is None and kind == "gaussian":
            return cf * mu + self.noise.scale * np.sqrt(cf) * rng.standard_normal(c.shape)
        if clip is None and kind == "poisson":
            return rng.poisson(cf * mu).astype(float)
        return self._explicit_sums(c, mu, rng, lo, hi)

    def _explicit_sums(
        self, c: np.ndarray, mu: np.ndarray, rng: np.random.Generator, lo: float, hi: float
    ) -> np.ndarray:
        """Sums of explicitly drawn clipped rewards, in chunks of about 2^22 draws."""
        flat_c, flat_mu = c.ravel(), mu.ravel()
        out = np.zeros(flat_c.size)
        ends = np.cumsum(flat_c)
        start = 0
        chunk = 1 << 22
        while start < flat_c.size:
            base = ends[start - 1] if start else 0
            stop = int(np.searchsorted(ends, base + chunk, side="right"))
            stop = max(stop, start + 1)
            idx = np.repeat(np.arange(start, stop), flat_c[start:stop])
            r = self.noise.realize(flat_mu[idx], self.noise.draw_variates(rng, (idx.size,)))
            out[start:stop] = np.bincount(
                idx - start, weights=np.clip(r, lo, hi), minlength=stop - start
            )
            start = stop
        return out.reshape(c.shape)

    def _reset(self) -> None:
        rng = self.streams.instance
        R, K, d = self.R, self.K, self.d
        if isinstance(self.actions, str):
            if self.actions == "circle":
                ang = rng.uniform(0.0, 2 * np.pi, size=(R, K))
                A = np.stack([np.cos(ang), np.sin(ang)], axis=-1)
            else:
                A = unit_sphere(rng, (R, K), d)
                if self.actions == "ball":
                    A = A * rng.random((R, K, 1)) ** (1.0 / d)
            A = self.context_bound * A
        else:
            A = np.broadcast_to(np.asarray(self.actions, float), (R, K, d)).copy()
        self._draw_theta(rng)
        A.setflags(write=False)
        self._A = A
        self._means = self.link.mu(np.einsum("rkd,rd->rk", A, self._theta))
        self.noise.check_means(self._means)
        self._means.setflags(write=False)
        self._best_fixed = self._means.max(axis=1)

    def _draw_chunk(self, B: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        V = self.noise.draw_variates(self.streams.rewards, (B, self.R))
        X = np.broadcast_to(self._A, (B,) + self._A.shape)
        return (
            X,
            np.broadcast_to(self._means, (B,) + self._means.shape),
            V,
            np.broadcast_to(self._best_fixed, (B, self.R)),
        )
