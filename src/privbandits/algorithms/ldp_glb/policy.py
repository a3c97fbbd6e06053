"""The user's arm choice in Algorithms 1 and 2 of Han et al. (2021) (compiled, one replication).

* Algorithm 1, line 4: greedy ``a_t = argmax_a x_{t,a}^T theta_{t-1}``;
* Algorithm 2, line 3: the public warm-up arm (round-robin ``t mod K``, or blocks of ``s_0``,
  correction Han21-9 in the documentation); lines 9-11: keep the arms whose frozen warm-up score ``mu(X^T theta_warm_a)`` is
  within ``h/2`` of the best (eq. 4.1 on the mu-scale, correction Han21-10 in the documentation), then greedy on the current
  estimates among them.

Ties are broken uniformly at random (correction Han21-26 in the documentation) with the law and the draws of
:func:`privbandits.algorithms.kernel.argmax_ties`: one uniform, and only when the maximum is
attained more than once.  Scores are recomputed instead of buffered, so a client step needs no
scratch memory.  Used by the LDP clients and by the non-private twins.
"""

from __future__ import annotations

import math

import numba as nb

from privbandits.algorithms.kernel import tally_max
from privbandits.core.links import link_mu

__all__ = [
    "WARMUP_ORDERS",
    "choose_multi",
    "choose_single",
    "greedy_arm",
    "greedy_arm_multi",
    "warmup_arm",
]

WARMUP_ORDERS: tuple[str, ...] = ("round_robin", "blocks")


@nb.njit(cache=True, inline="always")
def warmup_arm(t, K, s0, blocks):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Arm of warm-up round ``t`` (0-based, ``t < K s0``): ``t mod K``, or ``t // s0`` in blocks."""
    return t // s0 if blocks else t % K


@nb.njit(cache=True, inline="always")
def _single_score(X, theta, r, k):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    s = 0.0
    for i in range(X.shape[1]):
        s += X[k, i] * theta[r, 0, i]
    return s


@nb.njit(cache=True, inline="always")
def greedy_arm(X, theta, r, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Algorithm 1, line 4: ``argmax_a X[a]^T theta[r, 0]`` over the rows of ``X`` (K, d)."""
    K = X.shape[0]
    best, n, arg = _single_score(X, theta, r, 0), 1, 0
    for k in range(1, K):
        best, n, arg = tally_max(_single_score(X, theta, r, k), k, best, n, arg)
    if n == 1:
        return arg
    pick = int(rng.random() * n)
    for k in range(K):
        if _single_score(X, theta, r, k) == best:
            if pick == 0:
                return k
            pick -= 1
    return arg


@nb.njit(cache=True, inline="always")
def _multi_score(X, theta, r, k):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    s = 0.0
    for i in range(X.shape[0]):
        s += X[i] * theta[r, k, i]
    return s


@nb.njit(cache=True, inline="always")
def greedy_arm_multi(X, theta, theta_warm, r, h, link, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 2, lines 9-11: greedy on ``X^T theta[r, a]`` among the kept arms
    ``{a : w_a > max_b w_b - h/2} (or w_a = max)``, ``w_a = mu(X^T theta_warm[r, a])``;
    ``h = inf`` keeps every arm (no elimination)."""
    K = theta.shape[1]
    eliminate = h < math.inf
    w_max = -math.inf
    if eliminate:
        for k in range(K):
            w_max = max(w_max, link_mu(link, _multi_score(X, theta_warm, r, k)))
    best, n, arg = -math.inf, 0, 0
    for k in range(K):
        if eliminate:
            w = link_mu(link, _multi_score(X, theta_warm, r, k))
            if not (w > w_max - h / 2.0 or w >= w_max):
                continue
        best, n, arg = tally_max(_multi_score(X, theta, r, k), k, best, n, arg)
    if n == 1:
        return arg
    pick = int(rng.random() * n)
    for k in range(K):
        if eliminate:
            w = link_mu(link, _multi_score(X, theta_warm, r, k))
            if not (w > w_max - h / 2.0 or w >= w_max):
                continue
        if _multi_score(X, theta, r, k) == best:
            if pick == 0:
                return k
            pick -= 1
    return arg


# -- the choice step of a kernel (``state`` or the broadcast public state: ``(theta, theta_warm)``)
@nb.njit(cache=True)
def choose_single(p, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Algorithm 1, line 4: greedy on ``theta_{t-1} = state[0]`` (the broadcast estimate of an
    LDP client, the curator's own estimate in the non-private twin)."""
    return greedy_arm(X, state[0], r, rng)


@nb.njit(cache=True)
def choose_multi(p, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Algorithm 2, line 3 (public warm-up arm) or lines 9-11 (elimination on the frozen
    ``state[1]``, then greedy on ``state[0]``)."""
    if t < p.n_warmup:
        return warmup_arm(t, p.K, p.s0, p.blocks)
    return greedy_arm_multi(X, state[0], state[1], r, p.h, p.link, rng)
