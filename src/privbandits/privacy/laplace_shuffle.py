"""The single-message Laplace shuffle protocol of Hanna et al. (2022), Algorithm 3.

Roles of one batch of ``n_i`` users (the documentation's Concepts: trust models; Hanna et al. 2022,
section 4.3), batched over the replication axis ``R``:

1. **shuffler** (:func:`assign_actions`): builds the canonical list of the batch's action slots
   (action ``a`` repeated ``n_ia`` times) and hands slot ``sigma(j)`` to client ``j`` for a uniform
   permutation ``sigma`` (its own stream);
2. **clients** (:func:`laplace_randomizer`): report ``clip(r, r_lo, r_hi) + Lap(s)`` with
   ``s = Delta / eps0`` and the local budget ``eps0`` from the inverted amplification bound (Hanna et al. 2022, eq. 10, correction Hanna22-14, :func:`laplace_shuffle_params`); the noise is drawn by the audited sampler
   :func:`~privbandits.privacy.samplers.laplace_randomize`;
3. **shuffler** (:func:`forward_reports`): re-associates each report with its slot's action and
   forwards the ``(action, report)`` pairs in a fresh uniformly random order, without client ids;
4. **server** (:func:`per_action_sums`): ``r_hat_ia`` = sum of the reports paired with ``a``.

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), "Differentially private stochastic linear bandits:
(almost) for free", Algorithm 3, eq. (10), Remark 7.
Feldman, McMillan & Talwar (2021), "Hiding among the clones", Theorems 3.1-3.2.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.messages import PrivatizedMessage, ShuffledBatch, check_origin
from privbandits.core.validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_finite_array,
    check_in_range,
    check_int,
)
from privbandits.privacy.accounting import ApproxDP, to_guarantee
from privbandits.privacy.amplification import (
    BOUNDS,
    amplified_guarantee,
    closed_form_inverse,
    local_epsilon_for_target,
)
from privbandits.privacy.calibration import Bracket, calibrate_noise, laplace_epsilon
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.samplers import laplace_randomize

__all__ = [
    "LAPLACE_MECHANISM",
    "SHUFFLE_BOUNDS",
    "LaplaceShuffleParams",
    "assign_actions",
    "forward_reports",
    "laplace_randomizer",
    "laplace_scale_for",
    "laplace_shuffle_params",
    "per_action_sums",
]

#: Name of the clients' randomizer (recorded in every message and batch).
LAPLACE_MECHANISM = "laplace-shuffle"
#: How the local budget ``eps0`` is chosen (Hanna et al. 2022, eq. 10, correction Hanna22-14).
SHUFFLE_BOUNDS: tuple[str, ...] = ("fmt-valid", "paper")


@dataclass(frozen=True)
class LaplaceShuffleParams:
    """Public parameters of one batch of the single-message Laplace shuffle protocol.

    Attributes
    ----------
    epsilon, delta : float
        Central target of the batch.
    n : int
        Number of clients in the batch (``n_i``).
    r_lo, r_hi : float
        Reward range; every report clips its reward to it.
    sensitivity : float
        Sensitivity used for the noise scale: ``r_hi - r_lo`` (strict) or 1 (``paper_sensitivity``).
    eps0 : float
        Local budget ``eps0^(i)`` from the inverted amplification bound (Hanna et al. 2022, eq. 10, correction Hanna22-14).
    scale : float
        Laplace scale ``sensitivity / eps0`` (rounded up so the LDP level never exceeds ``eps0``).
    shuffle_bound : {"fmt-valid", "paper"}
        How ``eps0`` was chosen: Algorithm E0 (validity cap + fallback) or the literal inverse.
    bound : {"closed", "numerical"}
        Amplification bound used by :func:`local_epsilon_for_target` and by the accountant.
    """

    epsilon: float
    delta: float
    n: int
    r_lo: float
    r_hi: float
    sensitivity: float
    eps0: float
    scale: float
    shuffle_bound: str = "fmt-valid"
    bound: str = "closed"

    @property
    def range_width(self) -> float:
        """True L1 sensitivity of one clipped reward: ``r_hi - r_lo`` (Hanna et al. 2022, eq. 12, correction Hanna22-1)."""
        return self.r_hi - self.r_lo

    def local_epsilon(self) -> float:
        """Pure LDP epsilon of one report, from the noise actually added at the true sensitivity."""
        return laplace_epsilon(self.scale, self.range_width)

    def guarantee(self) -> PrivacyGuarantee:
        """Central guarantee of the batch (shuffle model), computed from the noise actually added.

        ``eps_l = laplace_epsilon(scale, r_hi - r_lo)`` is the LDP level of each report; the
        accountant's :func:`~privbandits.privacy.amplification.amplified_guarantee` returns
        ``(f_{n,delta}(eps_l), delta)``-DP when amplification by shuffling is valid and helps
        (Feldman, McMillan & Talwar 2021; the closed form's validity condition is enforced), and
        ``eps_l``-DP from the reports alone otherwise.  Requires the footnote-2 assumption of
        Hanna et al. (the server does not see which client played which action).  With
        ``paper_sensitivity`` or the literal inverse this is weaker than ``(epsilon, delta)``, and
        says so.
        """
        eps_l = self.local_epsilon()
        g = amplified_guarantee(eps_l, self.n, self.delta, self.bound)
        notes = (
            f"Hanna et al. (2022) Alg. 3, batch of n={self.n}: Laplace scale {self.scale:.6g} on rewards "
            f"clipped to [{self.r_lo:g}, {self.r_hi:g}] -> {eps_l:.6g}-LDP per report; "
            f"eps0 from shuffle_bound={self.shuffle_bound!r}; "
        )
        if isinstance(g, ApproxDP):
            notes += f"amplification by shuffling ({self.bound} bound, FMT21)"
        else:
            notes += "no valid amplification: the LDP level is the guarantee"
        return to_guarantee(g, model="shuffle", unit="user", notes=notes)


def laplace_scale_for(eps0: float, sensitivity: float) -> float:
    """The Laplace scale whose accounted level ``sensitivity / scale`` is at most ``eps0``.

    ``sensitivity / eps0`` when its floating-point division already meets ``eps0``; otherwise
    (the rounding of the division fell below the exact quotient) the scale found by
    :func:`~privbandits.privacy.calibration.calibrate_noise` on ``[sensitivity / eps0, 2
    sensitivity / eps0]``: never below ``sensitivity / eps0``, so never below the smallest
    floating-point scale that meets ``eps0`` (the epsilon decreases in the scale).
    """
    start = sensitivity / eps0
    if not sensitivity / start > eps0:
        return start
    return calibrate_noise(lambda b: sensitivity / b, eps0, Bracket(start, 2.0 * start))


def laplace_shuffle_params(
    epsilon: float,
    delta: float,
    n: int,
    r_lo: float = -1.0,
    r_hi: float = 1.0,
    *,
    shuffle_bound: str = "fmt-valid",
    bound: str = "closed",
    paper_sensitivity: bool = False,
) -> LaplaceShuffleParams:
    """Parameters of one batch of Hanna et al. (2022), Algorithm 3.

    Parameters
    ----------
    epsilon, delta : float
        Central target of the batch.
    n : int
        Batch size ``n_i`` (public).
    r_lo, r_hi : float
        Reward range; ``Delta = r_hi - r_lo`` (Hanna et al. 2022, eq. 12, correction Hanna22-1).
    shuffle_bound : {"fmt-valid", "paper"}
        ``"fmt-valid"`` (default): ``eps0 = local_epsilon_for_target(epsilon, delta, n, bound)``,
        Algorithm E0 of Hanna et al. 2022, eq. 10, correction Hanna22-14 (validity cap and fallback to ``epsilon``).
        ``"paper"``: the literal ``f^{-1}_{n,delta}(epsilon)`` with no cap and no fallback
        (reproduction only; warns).
    bound : {"closed", "numerical"}
        Amplification bound of the accountant (FMT21 Thm 3.1 or 3.2).
    paper_sensitivity : bool
        Noise scale ``1/eps0`` instead of ``(r_hi - r_lo)/eps0`` (reproduction only; the guarantee
        is computed at the true sensitivity and is then weaker than ``epsilon``).
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    n = check_int("n", n, 1)
    lo = check_in_range("r_lo", r_lo)
    hi = check_in_range("r_hi", r_hi)
    if not hi > lo:
        raise ValidationError(f"r_hi must exceed r_lo, got r_lo={lo:g}, r_hi={hi:g}")
    shuffle_bound = check_choice("shuffle_bound", shuffle_bound, SHUFFLE_BOUNDS)
    bound = check_choice("bound", bound, BOUNDS)
    if shuffle_bound == "paper":
        warnings.warn(
            "shuffle_bound='paper' uses the uncapped inverse of eq. (10); it can overclaim privacy "
            "(Hanna et al. 2022, eq. 10, correction Hanna22-14) -- reproduction only",
            UserWarning,
            stacklevel=2,
        )
        eps0 = closed_form_inverse(eps, dlt, n)
    else:
        eps0 = float(local_epsilon_for_target(eps, dlt, n, bound))
    if paper_sensitivity:
        warnings.warn(
            "paper_sensitivity=True: Laplace scale 1/eps0 on a reward range of width "
            f"{hi - lo:g}; the guarantee is computed at the true sensitivity",
            UserWarning,
            stacklevel=2,
        )
    sens = 1.0 if paper_sensitivity else hi - lo
    scale = laplace_scale_for(eps0, sens)
    return LaplaceShuffleParams(
        epsilon=eps,
        delta=dlt,
        n=n,
        r_lo=lo,
        r_hi=hi,
        sensitivity=sens,
        eps0=eps0,
        scale=scale,
        shuffle_bound=shuffle_bound,
        bound=bound,
    )


def assign_actions(counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Shuffler, step 1: assign the batch's action slots to clients by a uniform permutation.

    The canonical list contains action ``a`` exactly ``counts[r, a]`` times (``a`` in increasing
    order); client ``j`` of replication ``r`` receives ``list[sigma_r(j)]`` for an independent
    uniform permutation ``sigma_r`` drawn from the shuffler's generator.

    Parameters
    ----------
    counts : ndarray of int, shape (R, K)
        ``n_ia`` per replication and action (public).  Totals ``n_r`` may differ across
        replications; rows are then padded.
    rng : Generator
        Shuffler stream.

    Returns
    -------
    ndarray of int64, shape (R, N) with ``N = max_r n_r``
        Action index of each client slot; ``-1`` marks padding beyond ``n_r``.
    """
    raw = check_finite_array("counts", counts, ndim=2)
    counts = raw.astype(np.int64)
    if not np.array_equal(counts, raw):
        raise ValidationError("counts must be integers (the number of pulls n_ia of each action)")
    if counts.size and int(counts.min()) < 0:
        raise ValidationError(f"counts must be nonnegative, got minimum {int(counts.min())}")
    R, K = counts.shape
    totals = counts.sum(axis=1)
    N = int(totals.max()) if R else 0
    # canonical lists, padded with -1: slot j holds action a = #{a' : cum[a'] <= j}.  One global
    # searchsorted over the rows' cumulative counts, offset by r (N + 1) so the rows stay sorted.
    cum = np.cumsum(counts, axis=1)
    offsets = np.arange(R)[:, None] * (N + 1)
    j = np.arange(N)
    pos = np.searchsorted((cum + offsets).ravel(), (j[None, :] + offsets).ravel(), side="right")
    canonical = pos.reshape(R, N) - np.arange(R)[:, None] * K
    canonical = np.where(j[None, :] < totals[:, None], canonical, -1)
    keys = rng.random((R, N))
    keys = np.where(canonical >= 0, keys, 2.0)  # padding sorts last
    perm = np.argsort(keys, axis=1)
    return np.take_along_axis(canonical, perm, axis=1)


def laplace_randomizer(
    rewards: np.ndarray,
    slots: np.ndarray,
    params: LaplaceShuffleParams | Sequence[LaplaceShuffleParams],
    rng: np.random.Generator,
) -> PrivatizedMessage:
    """Clients: report ``clip(r, r_lo, r_hi) + Lap(scale)`` (Hanna et al. 2022, Alg. 3).

    Batched representation: entry ``(r, j)`` is the report of the client in slot ``j`` of
    replication ``r``, computed from that client's own reward only, with fresh noise drawn by
    :func:`~privbandits.privacy.samplers.laplace_randomize` (the sampler the algorithm's clients
    call).  Draw order: one uniform per occupied slot, row by row.

    Parameters
    ----------
    rewards : ndarray of shape (R, N)
        Each client's observed reward for its assigned action (ignored at padded slots).
    slots : ndarray of shape (R, N)
        Output of :func:`assign_actions` (``-1`` = padding).
    params : LaplaceShuffleParams or sequence of R of them
        One per replication when batch sizes differ across replications.
    rng : Generator
        Client noise stream.

    Returns
    -------
    PrivatizedMessage with payload ``reward_hat`` of shape (R, N) (0 at padded slots).
    """
    slots = np.asarray(slots)
    rewards = check_finite_array("rewards", rewards, ndim=2)
    if rewards.shape != slots.shape:
        raise ValidationError(
            f"rewards must have the shape of slots {slots.shape}, got {rewards.shape}"
        )
    R = slots.shape[0]
    plist = [params] * R if isinstance(params, LaplaceShuffleParams) else list(params)
    if len(plist) != R:
        raise ValidationError(
            f"need one LaplaceShuffleParams per replication ({R}), got {len(plist)}"
        )
    valid = slots >= 0
    n_valid = valid.sum(axis=1)
    for r, p in enumerate(plist):
        if p.n != int(n_valid[r]):
            raise ValidationError(
                f"replication {r} has {int(n_valid[r])} clients but its parameters say n={p.n}"
            )
    if len({(p.r_lo, p.r_hi) for p in plist}) > 1:
        raise ValidationError(
            "every replication's parameters must share the reward range [r_lo, r_hi]"
        )
    reports = np.zeros(slots.shape)
    if R:
        scale = np.broadcast_to(
            np.array([p.scale for p in plist], dtype=float)[:, None], slots.shape
        )[valid]
        y = np.ascontiguousarray(rewards[valid], dtype=float)
        out = np.empty(y.size)
        laplace_randomize(
            rng, y, float(plist[0].r_lo), float(plist[0].r_hi), np.ascontiguousarray(scale), out
        )
        reports[valid] = out
    return PrivatizedMessage(payload={"reward_hat": reports}, mechanism=LAPLACE_MECHANISM)


def forward_reports(
    slots: np.ndarray, reports: PrivatizedMessage, rng: np.random.Generator
) -> ShuffledBatch:
    """Shuffler, step 2: re-associate each report with its action slot and forward the pairs.

    The pairs ``(a_j, r_hat_j)`` are forwarded in a freshly shuffled order (no client ids, and the
    position carries no information); padding stays at the end.

    Returns
    -------
    ShuffledBatch with payload ``action`` (int, -1 = padding) and ``reward_hat``, shape (R, N).
    """
    check_origin(reports, PrivatizedMessage, LAPLACE_MECHANISM, "the shuffler")
    slots = np.asarray(slots, dtype=np.int64)
    r_hat = np.asarray(reports["reward_hat"])
    if r_hat.shape != slots.shape:
        raise ValidationError(f"reports have shape {r_hat.shape}, slots {slots.shape}")
    keys = np.where(slots >= 0, rng.random(slots.shape), 2.0)
    perm = np.argsort(keys, axis=1)
    payload = {
        "action": np.take_along_axis(slots, perm, axis=1),
        "reward_hat": np.take_along_axis(r_hat, perm, axis=1),
    }
    n_users = int((slots >= 0).sum(axis=1).max()) if slots.size else 0
    return ShuffledBatch(payload=payload, mechanism=LAPLACE_MECHANISM, n_users=n_users)


def per_action_sums(batch: ShuffledBatch, n_actions: int) -> tuple[np.ndarray, np.ndarray]:
    """Server analyzer: ``r_hat_ia`` = sum of the reports paired with action ``a`` (Alg. 3).

    Returns
    -------
    sums : ndarray of shape (R, n_actions)
    counts : ndarray of int64, shape (R, n_actions)
        Number of reports per action (equals the public ``n_ia``).
    """
    check_origin(batch, ShuffledBatch, LAPLACE_MECHANISM, "the server")
    K = check_int("n_actions", n_actions, 1)
    a = np.asarray(batch["action"], dtype=np.int64)
    y = np.asarray(batch["reward_hat"], dtype=float)
    if a.size and int(a.max()) >= K:
        raise ValidationError(f"batch contains action {int(a.max())} >= n_actions={K}")
    R = a.shape[0]
    valid = a >= 0
    flat = (np.arange(R)[:, None] * K + np.where(valid, a, 0))[valid]
    sums = np.bincount(flat, weights=y[valid], minlength=R * K).reshape(R, K)
    counts = np.bincount(flat, minlength=R * K).reshape(R, K)
    return sums, counts
