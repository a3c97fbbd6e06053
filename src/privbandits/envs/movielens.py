"""MovieLens-100K contextual bandit: the demo of Zheng et al.'s (2020) official code.

The paper has no experiments; the authors' repository ships one demo (LDP-UCB on MovieLens-100K),
which this environment rebuilds from the ``ua.base`` file of the dataset (``user<TAB>item<TAB>
rating<TAB>timestamp`` per line, ids from 1):

1. the ``n_users x n_items`` rating matrix with 0 for missing entries; keep the first
   ``num_actions`` movies (columns) and the users with at least one rating among them;
2. normalize every entry ``r -> 0.4 (r - 2.5)`` (ratings 1..5 become -0.6..1.0, missing -1.0);
3. SVD ``U diag(s) V^T``, keep ``rank`` components; the feature of (user ``i``, movie ``j``) is
   ``x_ij = U[i, :k] * V^T[:k, j]`` (elementwise, ``d = k``, ``||x_ij|| <= 1``) and ``theta* = s``;
4. each round a user is drawn uniformly at random; the arms are its ``num_actions`` movie features
   and the reward is ``x_ij^T s`` exactly (no noise; with ``rank = num_actions`` it equals the
   normalized rating, in ``[-1, 1]``).

``||theta*|| = ||s||`` is far above 1 (the paper assumes ``||theta*|| <= 1``); the official code
runs LDP-UCB at ``epsilon`` of order ``1e5``.  The data is not bundled: pass the path of ``ua.base``
(or of the directory holding it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from privbandits.core.errors import DataBoundError, MissingDataError, ValidationError
from privbandits.core.validation import check_int
from privbandits.envs.base import Environment

__all__ = ["MovieLensEnv", "load_ratings"]

_FORMAT = (
    "MovieLens-100K ua.base format: one rating per line, 'user<TAB>item<TAB>rating<TAB>timestamp' with "
    "positive integer ids and ratings 1..5"
)


def load_ratings(path: str | Path) -> np.ndarray:
    """The ``(n_users, n_items)`` rating matrix (0 = missing) of a ``ua.base`` file.

    Raises
    ------
    ValidationError
        When the file is absent or not in the ua.base format (naming the file and the line).
    """
    p = Path(path)
    if p.is_dir():
        p = p / "ua.base"
    if not p.is_file():
        raise MissingDataError(
            f"MovieLens: expected the file ua.base of MovieLens-100K at {str(p)!r}, which does not "
            f"exist; download ml-100k from grouplens.org and pass its path ({_FORMAT})"
        )
    rows: list[tuple[int, int, int]] = []
    with p.open(encoding="latin-1") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            parts = line.split()
            try:
                if len(parts) != 4:
                    raise ValueError
                u, i, r, _ts = (int(v) for v in parts)
            except ValueError:
                raise ValidationError(
                    f"MovieLens: {str(p)!r} line {n} is malformed: {line.strip()[:60]!r}; "
                    f"expected {_FORMAT}"
                ) from None
            if u < 1 or i < 1 or not 1 <= r <= 5:
                raise ValidationError(
                    f"MovieLens: {str(p)!r} line {n} has user {u}, item {i}, rating {r}; "
                    f"expected {_FORMAT}"
                )
            rows.append((u, i, r))
    if not rows:
        raise ValidationError(f"MovieLens: {str(p)!r} holds no ratings; expected {_FORMAT}")
    a = np.array(rows, dtype=np.int64)
    M = np.zeros((int(a[:, 0].max()), int(a[:, 1].max())))
    M[a[:, 0] - 1, a[:, 1] - 1] = a[:, 2]
    return M


class MovieLensEnv(Environment):
    """The MovieLens-100K bandit of Zheng et al.'s official demo (module docstring).

    Parameters
    ----------
    path : str
        ``ua.base`` of MovieLens-100K, or the directory holding it.
    num_actions : int
        Movies kept (arms per round); the demo uses 20.
    rank : int
        SVD components kept (``d``), at most ``num_actions``; the demo uses 20.
    """

    def __init__(self, path: str, num_actions: int = 20, rank: int = 20) -> None:
        K = check_int("num_actions", num_actions, 2)
        k = check_int("rank", rank, 1, K)
        ratings = load_ratings(path)
        if ratings.shape[1] < K:
            raise ValidationError(
                f"MovieLens: num_actions={K} movies requested, the file rates only "
                f"{ratings.shape[1]} items"
            )
        sub = ratings[:, :K]
        sub = sub[(sub > 0).any(axis=1)]
        if sub.shape[0] < 1:
            raise ValidationError(f"MovieLens: no user rates any of the first {K} movies")
        norm = 0.4 * (sub - 2.5)
        U, s, Vt = np.linalg.svd(norm, full_matrices=False)
        self.features = U[:, None, :k] * Vt[:k, :].T[None, :, :]  # (n_users, K, k)
        self.s = s[:k].copy()
        self.path = str(path)
        self.num_actions, self.rank = K, k
        self.n_users = sub.shape[0]
        self._user_means = self.features @ self.s  # (n_users, K)
        norms = np.linalg.norm(self.features, axis=2)
        if (
            norms.max() > 1.0 + 1e-9
        ):  # cannot happen for an SVD (rows of U and columns of V^T are unit)
            raise DataBoundError(f"MovieLens: a feature has norm {norms.max():.6g} > 1")
        # normalized ratings lie in [-1, 1] (exactly at full rank, up to rounding; wider below it)
        lo, hi = float(self._user_means.min()), float(self._user_means.max())
        lo, hi = (-1.0 if lo >= -1.0 - 1e-9 else lo), (1.0 if hi <= 1.0 + 1e-9 else hi)
        super().__init__(k, K, "identity", "none", 0.0, 1.0, (lo, hi))

    theta_bound = property(lambda self: float(np.linalg.norm(self.s)))  # type: ignore[assignment]

    def describe(self) -> dict[str, Any]:
        return {
            "env": type(self).__name__,
            "path": self.path,
            "num_actions": self.num_actions,
            "rank": self.rank,
            "n_users": self.n_users,
            "theta_norm": float(np.linalg.norm(self.s)),
        }

    @property
    def theta_star(self) -> np.ndarray:
        """``s`` (the singular values), per replication: ``(R, d)``."""
        return np.broadcast_to(self.s, (self.R, self.rank))

    def _reset(self) -> None:
        pass

    def _draw_chunk(self, B: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        users = self.streams.contexts.integers(0, self.n_users, (B, self.R))
        X = self.features[users]
        means = self._user_means[users]
        return X, means, np.zeros((B, self.R)), means.max(axis=2)
