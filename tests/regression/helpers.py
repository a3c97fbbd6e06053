"""Synthetic regression data for the tests (Chen et al. 2025 spec section 8.2, E1)."""

from __future__ import annotations

import numpy as np


def covariates(n: int, d: int, c: float, rng: np.random.Generator) -> np.ndarray:
    """``phi = z / max(1, ||z||)``, ``z ~ N(0, diag(s^2))``, ``s_i = exp(-c (i-1)/(d-1))``."""
    s = np.exp(-c * np.arange(d) / max(d - 1, 1))
    z = rng.normal(size=(n, d)) * s
    return z / np.maximum(1.0, np.linalg.norm(z, axis=1))[:, None]


def rademacher(f: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rewards in {-1, 1} with mean ``f``."""
    return np.where(rng.random(f.shape) < (1.0 + f) / 2.0, 1.0, -1.0)


def unit(d: int, rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=d)
    return v / np.linalg.norm(v)


def random_spd(d: int, rng: np.random.Generator, cond: float = 100.0) -> np.ndarray:
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    e = np.exp(rng.uniform(0.0, np.log(cond), size=d))
    return (Q * e) @ Q.T
