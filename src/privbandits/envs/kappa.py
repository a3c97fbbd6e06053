"""Non-linearity constants of a GLM bandit instance, computed from the arms it actually presents.

Sarmasarkar (2026), eqs. (3)-(4), adversarial-context form: ``kappa = max_{t, x in X_t}
1/mu'(<x, theta*>)`` and ``1/kappa* = max_{t, x in X_t} mu'(<x, theta*>)`` over the realized arms
of rounds ``1..T`` (the values Table 2 reports per ``S``).
"""

from __future__ import annotations

import numpy as np

from privbandits.core.rng import make_streams
from privbandits.core.validation import check_int
from privbandits.envs.base import Environment

__all__ = ["instance_kappa"]


def instance_kappa(
    env: Environment, horizon: int, replications: int = 1, seed: int = 0
) -> dict[str, np.ndarray]:
    """``kappa`` and ``kappa*`` per replication of the instance ``pb.simulate(..., seed=seed)`` runs on.

    Resets ``env`` exactly as :func:`privbandits.simulate` does for ``seed`` and scans the arms of
    the ``horizon`` rounds (single-parameter setting).

    Returns
    -------
    dict
        ``{"kappa": (R,), "kappa_star": (R,)}``.
    """
    T = check_int("horizon", horizon, 1)
    env.reset(check_int("replications", replications, 1), make_streams(seed), T)
    theta = np.asarray(env.theta_star, dtype=float)
    lo = np.full(env.R, np.inf)
    hi = np.zeros(env.R)
    done = 0
    while done < T:
        chunk = env.next_chunk()
        B = min(chunk.B, T - done)
        z = np.einsum("brkd,rd->brk", chunk.X[:B], theta)
        dmu = env.link.dmu(z)
        lo = np.minimum(lo, dmu.min(axis=(0, 2)))
        hi = np.maximum(hi, dmu.max(axis=(0, 2)))
        done += B
    return {"kappa": 1.0 / lo, "kappa_star": 1.0 / hi}
