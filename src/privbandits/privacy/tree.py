"""Binary-tree (continual release) Gaussian mechanism for prefix sums of vectors and symmetric matrices.

The stream ``L_1, ..., L_T`` (one leaf per round; a round that contributes nothing inserts zero)
is summarized by dyadic partial sums ("nodes"); each completed node is released once with fresh
Gaussian noise, and the prefix sum ``sum_{s <= t} L_s`` is the sum of the ``popcount(t)`` noisy
nodes of the binary decomposition of ``t``.  A leaf enters at most ``bit_length(T) <=
ceil(log2 T) + 1`` nodes, so the whole released stream is ``m Delta^2 / (2 sigma^2)``-zCDP
(adaptively chosen leaves allowed).  Matrix noise is ``(Z' + Z'^T)/2`` with ``Z'`` i.i.d.
``N(0, sigma^2)``: diagonal variance ``sigma^2``, off-diagonal ``sigma^2 / 2``, exactly symmetric,
so the privacy loss of a symmetric change ``E`` is exactly ``||E||_F^2 / (2 sigma^2)``.

References
----------
Dwork, Naor, Pitassi & Rothblum (2010), "Differential privacy under continual observation", STOC.
Chan, Shi & Song (2011), "Private and continual release of statistics", ACM TISSEC.
Shariff & Sheffet (2018), "Differentially private contextual linear bandits", NeurIPS, section 4.2.
Sarmasarkar (2026), section 6 and Appendix J.3.
"""

from __future__ import annotations

import math

import numpy as np

from privbandits.core.errors import DataBoundError, PrivacyError, ValidationError
from privbandits.core.validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_finite_array,
    check_int,
    check_nonnegative,
    check_positive,
)
from privbandits.privacy.accounting import (
    ZCDP,
    compose_zcdp,
    gaussian_zcdp,
    sigma_for_zcdp,
    to_guarantee,
    zcdp_for_approx_dp,
)
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.noise import sample_gaussian, sample_symmetric_gaussian

__all__ = [
    "TreeAggregator",
    "max_nodes_per_leaf",
    "node_decomposition",
    "nodes_containing",
    "sample_tree_noise",
    "tree_levels",
    "tree_sensitivity",
]


def tree_levels(T: int) -> int:
    """Number of levels ``m = ceil(log2 T) + 1`` used for calibration (Sarmasarkar 2026, Appendix J.3).

    A safe upper bound on the number of nodes any leaf enters; equal to it when ``T`` is a power
    of two.
    """
    T = check_int("T", T, 1)
    return (T - 1).bit_length() + 1  # ceil(log2 T) + 1, exact in integers


def max_nodes_per_leaf(T: int) -> int:
    """Exact maximum number of completed nodes a leaf enters within horizon ``T``: ``bit_length(T)``."""
    return check_int("T", T, 1).bit_length()


def node_decomposition(t: int) -> list[tuple[int, int, int]]:
    """Dyadic nodes whose noisy sums make up ``prefix(t)``: one per set bit of ``t``.

    Returns ``(level, start, end)`` with ``[start, end]`` (1-based, inclusive) of length
    ``2^level``, from the highest level down; together they cover ``[1, t]`` exactly once.
    """
    t = check_int("t", t, 0)
    out = []
    start = 1
    for level in range(t.bit_length() - 1, -1, -1):
        if (t >> level) & 1:
            out.append((level, start, start + (1 << level) - 1))
            start += 1 << level
    return out


def nodes_containing(s: int, T: int) -> list[tuple[int, int, int]]:
    """Completed nodes (within horizon ``T``) that contain leaf ``s``: its root path, truncated at ``T``."""
    T = check_int("T", T, 1)
    s = check_int("s", s, 1, T)
    out = []
    level = 0
    while True:
        size = 1 << level
        end = -(-s // size) * size  # ceil(s / 2^level) * 2^level
        if end > T:
            break
        out.append((level, end - size + 1, end))
        level += 1
    return out


def tree_sensitivity(leaf_bound: float, *, kind: str = "vector", psd_leaves: bool = False) -> float:
    """Replacement sensitivity of one leaf (l2 for vectors, Frobenius for symmetric matrices).

    Two leaves of norm at most ``B`` differ by at most ``2 B``; two PSD matrices by at most
    ``sqrt(2) B`` since ``<A, A'> = tr(A A') >= 0`` (the true Frobenius sensitivity).
    """
    B = check_positive("leaf_bound", leaf_bound)
    kind = check_choice("kind", kind, ("vector", "matrix"))
    if psd_leaves and kind != "matrix":
        raise ValidationError("psd_leaves=True is only meaningful for kind='matrix'")
    return math.sqrt(2.0) * B if psd_leaves else 2.0 * B


def sample_tree_noise(
    rng: np.random.Generator, lead: tuple[int, ...], shape: tuple[int, ...], sigma: float
) -> np.ndarray:
    """Node noise: ``N(0, sigma^2 I)`` for vectors; ``(Z' + Z'^T)/2`` for ``(d, d)`` matrices (Sarmasarkar 2026, section 6).

    Drawn by the compiled samplers: vectors by :func:`~privbandits.privacy.samplers.add_gaussian`
    (C order); matrices by :func:`~privbandits.privacy.samplers.add_symmetric_gaussian` (std
    ``sigma`` on and above the diagonal, mirrored) with the off-diagonal entries then scaled by
    ``1/sqrt(2)``, which is the law of ``(Z' + Z'^T)/2`` (diagonal std ``sigma``, off-diagonal std
    ``sigma / sqrt(2)``), exactly symmetric.
    """
    sig = check_nonnegative("sigma", sigma)
    if len(shape) == 1:
        return sample_gaussian(rng, tuple(lead) + tuple(shape), sig)
    d = shape[0]
    W = sample_symmetric_gaussian(rng, tuple(lead), d, sig)
    W *= _offdiag_scale(d)
    return W


def _offdiag_scale(d: int) -> np.ndarray:
    """``d x d`` matrix with 1 on the diagonal and ``1/sqrt(2)`` off it."""
    s = np.full((d, d), 1.0 / math.sqrt(2.0))
    np.fill_diagonal(s, 1.0)
    return s


class TreeAggregator:
    """Private prefix sums of a stream of vectors or symmetric matrices, batched over replications.

    ``tree = TreeAggregator(T, d, sigma=..., leaf_bound=..., rng=...)``; each round
    ``tree.add(x_t)`` (``x_t`` of shape ``(R, d)`` or ``(R, d, d)``), then ``tree.prefix_sum()``
    returns the noisy ``sum_{s <= t} x_s`` of shape ``(R, ...)``.  ``add`` costs one node release
    (the sum of the lower completed levels plus one noise draw); ``prefix_sum`` sums
    ``popcount(t) <= ceil(log2 T) + 1`` noisy nodes.

    Parameters
    ----------
    T : int
        Horizon (number of leaves), >= 1.
    d : int
        Dimension of the vectors, or side of the matrices.
    sigma : float
        Per-node noise std (0 = no noise, not private).
    leaf_bound : float
        Norm bound of every leaf (l2 for vectors, Frobenius for matrices); the privacy guarantee
        relies on it.
    rng : Generator
        Noise stream of the party that runs the tree (the curator / server stream).
    replications : int
        Size ``R`` of the replication axis.
    kind : {"vector", "matrix"}
    psd_leaves : bool
        Matrix leaves are positive semidefinite (checked in :meth:`add`); the sensitivity is then
        ``sqrt(2) leaf_bound`` instead of ``2 leaf_bound``.
    norm_policy : {"clip", "reject"}
        Leaves above ``leaf_bound`` are rescaled onto the bound (counted in ``n_clipped``) or
        rejected with :class:`~privbandits.core.errors.DataBoundError`.

    References
    ----------
    Chan, Shi & Song (2011); Dwork et al. (2010); Shariff & Sheffet (2018), section 4.2;
    Sarmasarkar (2026), Appendix J.3.
    """

    def __init__(
        self,
        T: int,
        d: int,
        *,
        sigma: float,
        leaf_bound: float,
        rng: np.random.Generator,
        replications: int = 1,
        kind: str = "vector",
        psd_leaves: bool = False,
        norm_policy: str = "clip",
    ) -> None:
        self.T = check_int("T", T, 1)
        self.d = check_int("d", d, 1)
        self.sigma = check_nonnegative("sigma", sigma)
        self.kind = check_choice("kind", kind, ("vector", "matrix"))
        self.leaf_bound = check_positive("leaf_bound", leaf_bound)
        self.psd_leaves = bool(psd_leaves)
        self.sensitivity = tree_sensitivity(
            self.leaf_bound, kind=self.kind, psd_leaves=self.psd_leaves
        )
        self.R = check_int("replications", replications, 1)
        self.norm_policy = check_choice("norm_policy", norm_policy, ("clip", "reject"))
        if not isinstance(rng, np.random.Generator):
            raise ValidationError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        self.rng = rng
        self.levels = tree_levels(self.T)
        self.shape: tuple[int, ...] = (self.d,) if self.kind == "vector" else (self.d, self.d)
        self._alpha = np.zeros((self.levels, self.R) + self.shape)  # exact partial sums
        self._noisy = np.zeros((self.levels, self.R) + self.shape)  # released noisy nodes
        self.t = 0
        self.n_clipped = 0

    # ----------------------------------------------------------------------------------------
    @classmethod
    def calibrated(
        cls,
        T: int,
        d: int,
        *,
        leaf_bound: float,
        rng: np.random.Generator,
        delta: float,
        epsilon: float | None = None,
        rho: float | None = None,
        conversion: str = "bs",
        replications: int = 1,
        kind: str = "vector",
        psd_leaves: bool = False,
        norm_policy: str = "clip",
    ) -> TreeAggregator:
        """Tree whose whole release meets ``(epsilon, delta)`` (or ``rho``-zCDP).

        Spec section 4.7, practical calibration: ``rho_tree = zcdp_for_approx_dp(epsilon, delta)``
        (``conversion`` "bs"), ``rho_node = rho_tree / m`` with
        ``m = ceil(log2 T) + 1``, and ``sigma = sigma_for_zcdp(rho_node, Delta)`` at the replacement
        sensitivity ``Delta`` of :func:`tree_sensitivity`.  Other arguments as in the constructor.
        """
        if (epsilon is None) == (rho is None):
            raise ValidationError(
                f"give exactly one of epsilon and rho, got epsilon={epsilon!r}, rho={rho!r}"
            )
        dlt = check_delta(delta)
        if rho is None:
            rho_tree = zcdp_for_approx_dp(check_epsilon(epsilon), dlt, method=conversion).rho
        else:
            rho_tree = check_positive("rho", rho)
        sens = tree_sensitivity(leaf_bound, kind=kind, psd_leaves=psd_leaves)
        sigma = sigma_for_zcdp(rho_tree / tree_levels(T), sens)
        return cls(
            T,
            d,
            sigma=sigma,
            leaf_bound=leaf_bound,
            rng=rng,
            replications=replications,
            kind=kind,
            psd_leaves=psd_leaves,
            norm_policy=norm_policy,
        )

    # ----------------------------------------------------------------------------------------
    def _check_leaf(self, x: np.ndarray) -> np.ndarray:
        x = check_finite_array("x", x)
        if x.shape != (self.R,) + self.shape:
            raise ValidationError(
                f"x must have shape {(self.R,) + self.shape} (R, then the leaf shape), "
                f"got {x.shape}"
            )
        tol = 1e-10 * max(1.0, self.leaf_bound)
        if self.kind == "vector":
            norms = np.linalg.norm(x, axis=-1)
        else:
            asym = float(np.max(np.abs(x - np.swapaxes(x, -1, -2))))
            if asym > tol:
                raise ValidationError(
                    f"matrix leaves must be symmetric; max |x - x^T| = {asym:.3g}"
                )
            x = 0.5 * (x + np.swapaxes(x, -1, -2))  # exact symmetry of the released sums
            if self.psd_leaves:
                lam_min = float(np.min(np.linalg.eigvalsh(x)))
                if lam_min < -tol:
                    raise DataBoundError(
                        f"leaves must be positive semidefinite (psd_leaves=True); smallest "
                        f"eigenvalue {lam_min:.3g}"
                    )
            norms = np.linalg.norm(x, axis=(-2, -1))
        over = norms > self.leaf_bound
        n_over = int(over.sum())
        if n_over:
            if self.norm_policy == "reject":
                raise DataBoundError(
                    f"leaf norm up to {float(norms.max()):.6g} exceeds "
                    f"leaf_bound={self.leaf_bound:g}; rescale the data, raise leaf_bound, "
                    "or use norm_policy='clip'"
                )
            factor = np.where(over, self.leaf_bound / np.where(over, norms, 1.0), 1.0)
            x = x * factor.reshape((self.R,) + (1,) * len(self.shape))
            self.n_clipped += n_over
        return x

    def add(self, x: np.ndarray) -> None:
        """Insert leaf ``x_t`` for the next round ``t`` and release the node it completes.

        With ``i`` the index of the lowest set bit of ``t``: ``alpha_i = x_t + sum_{j < i} alpha_j``,
        levels below ``i`` are cleared, and ``noisy_i = alpha_i + Z`` with fresh noise
        (Appendix J.3, ``insert``).
        """
        if self.t >= self.T:
            raise ValidationError(f"the tree holds T={self.T} leaves; cannot add leaf {self.t + 1}")
        x = self._check_leaf(x)
        self.t += 1
        i = (self.t & -self.t).bit_length() - 1
        self._alpha[i] = x + self._alpha[:i].sum(axis=0)
        self._alpha[:i] = 0.0
        self._noisy[:i] = 0.0
        self._noisy[i] = self._alpha[i] + sample_tree_noise(
            self.rng, (self.R,), self.shape, self.sigma
        )

    def prefix_sum(self) -> np.ndarray:
        """Noisy ``sum_{s <= t} x_s`` for the current ``t``: the sum of the ``popcount(t)`` noisy nodes.

        Returns zeros before the first :meth:`add`.  Matrix outputs are exactly symmetric.
        """
        bits = [j for j in range(self.levels) if (self.t >> j) & 1]
        if not bits:
            return np.zeros((self.R,) + self.shape)
        return self._noisy[bits].sum(axis=0)

    # ----------------------------------------------------------------------------------------
    def prefix_noise_variance(self, t: int | None = None) -> float:
        """Per-entry noise variance of ``prefix(t)``: ``popcount(t) sigma^2`` (vectors and matrix diagonal).

        Off-diagonal matrix entries have half of it.
        """
        t = self.t if t is None else check_int("t", t, 0, self.T)
        return t.bit_count() * self.sigma**2

    def zcdp(self) -> ZCDP:
        """zCDP of the whole released stream: ``bit_length(T)`` node releases of ``Delta^2/(2 sigma^2)``.

        Composition over the levels a leaf can enter (the exact maximum ``bit_length(T)``, at most
        the calibration bound ``ceil(log2 T) + 1``).
        """
        if self.sigma == 0.0:
            raise PrivacyError("sigma = 0: the tree adds no noise and has no zCDP guarantee")
        node = gaussian_zcdp(self.sigma, self.sensitivity)
        return compose_zcdp([node] * max_nodes_per_leaf(self.T))

    def guarantee(
        self,
        delta: float,
        *,
        model: str = "central",
        unit: str = "user",
        method: str = "bs",
        notes: str = "",
    ) -> PrivacyGuarantee:
        """``(epsilon, delta)`` statement of the released stream, computed from ``sigma`` and the sensitivity.

        Parameters
        ----------
        delta : float
            delta of the statement.
        model : str
            Trust model the caller operates in (the tree itself runs at a trusted curator).
        unit : str
        method : {"bs", "cks"}
            zCDP -> (epsilon, delta) conversion.
        notes : str
            Prepended to the accounting notes.
        """
        check_delta(delta)
        what = (
            f"binary-tree {self.kind} prefix sums, T={self.T}, sigma={self.sigma:.6g}, "
            f"sensitivity={self.sensitivity:.6g} ({'PSD ' if self.psd_leaves else ''}leaf bound "
            f"{self.leaf_bound:g}), {max_nodes_per_leaf(self.T)} nodes per leaf"
        )
        text = f"{notes}; {what}" if notes else what
        if self.sigma == 0.0:
            return PrivacyGuarantee(
                model="none", epsilon=math.inf, delta=0.0, unit=unit, notes=text + "; no noise"
            )
        return to_guarantee(
            self.zcdp(), model=model, unit=unit, notes=text, delta=delta, method=method
        )
