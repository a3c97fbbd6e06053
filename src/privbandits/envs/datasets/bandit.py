"""Supervised-to-bandit environment: a classification data set played as a contextual bandit.

The standard evaluation of contextual bandit algorithms on real data (e.g. Dudik, Langford & Li
2011; Bietti, Agarwal & Langford 2021): every round a row ``(x_i, y_i)`` of the data is drawn,
the learner sees the processed features, picks one of the K classes as its arm and receives the
reward ``1{arm = y_i}`` (or ``reward_matrix[y_i, arm]``); the label is never revealed.  The mean
reward of every arm is known given the row, so pseudo-regret is measured against the label: the
best mean is 1 with the 0/1 reward.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.features import block_features
from privbandits.core.links import Link
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_choice, check_finite_array, check_positive
from privbandits.envs.base import Environment
from privbandits.envs.datasets import filecache
from privbandits.envs.datasets.preprocess import bound_norms, project
from privbandits.envs.datasets.registry import get
from privbandits.envs.datasets.supervised import (
    SupervisedData,
    least_squares,
    load_file,
    policy_benchmarks,
)

__all__ = ["ENCODINGS", "ORDERS", "SupervisedEnv"]

#: ``disjoint``: one context per round, one parameter per arm (multi-parameter setting);
#: ``shared``: one parameter, arm features ``e_a kron x`` (single-parameter setting, dimension K d).
ENCODINGS = ("disjoint", "shared")
#: ``iid``: rows drawn uniformly with replacement; ``pass``: the rows in file order (repeated when
#: T > n), the same in every replication; ``permuted``: passes in an order drawn per replication.
ORDERS = ("iid", "pass", "permuted")


def _contexts(
    data: SupervisedData, prep: dict[str, Any], file: Path | None
) -> tuple[np.ndarray, dict[str, Any], dict[str, Any]]:
    """Standardize, project, append the intercept and bound the norms (the pipeline of
    :mod:`~privbandits.envs.datasets.preprocess`), into a new array or the ``.npy`` ``file``
    (memory-mapped); without a projection, chunk by chunk (no copy of the features besides the
    contexts)."""
    n, p = data.n, data.p
    method, d, intercept = prep["projection"], prep["d"], prep["intercept"]
    if method == "none":
        _, proj = project(np.empty((0, p)), d, "none")  # checks d
        q = p + intercept
    else:
        Z, proj = project(data.standardized(), d, method, prep["projection_seed"])
        q = Z.shape[1] + intercept
    C = (
        np.empty((n, q))
        if file is None
        else np.lib.format.open_memmap(file, mode="w+", dtype=np.float64, shape=(n, q))
    )
    if method == "none":
        data.standardized(out=C[:, :p])
    else:
        C[:, : Z.shape[1]] = Z
        del Z
    if intercept:
        C[:, q - 1] = 1.0
    C, norm = bound_norms(C, prep["norm"], prep["context_bound"], prep["clip_quantile"], out=C)
    return C, proj, norm


class SupervisedEnv(Environment):
    """A classification data set as a K-armed contextual bandit (module docstring).

    Parameters
    ----------
    dataset : str, optional
        A registered supervised data set (``privbandits datasets list``), e.g. ``"digits"``.
        Give either ``dataset`` or ``path``.
    path : str, optional
        A CSV or Parquet file with numeric features and a ``label`` column.
    label : str, optional
        The class column of ``path`` (required with ``path``).
    features : list of str, optional
        Feature columns of ``path`` (default: all but the label).
    na : {"error", "drop"}
        Missing values in ``path``: an error naming file, column and row, or drop the row (the
        count is in ``describe()``).
    data_home : str, optional
        Cache directory of the downloadable data sets (scikit-learn's ``data_home``).
    d : int, optional
        Context dimension after projection (default: the number of features, no projection).
    projection : {"none", "pca", "random"}
        Dimension reduction of the standardized features (``pca`` by default when ``d`` is given).
    projection_seed : int
        Seed of the random projection (fixed, so every replication sees the same contexts).
    intercept : bool
        Append a constant coordinate (before norm bounding), so linear models can fit the class
        frequencies; the context dimension is then ``d + 1``.
    norm : {"max", "clip"}
        Norm bounding policy: scale all contexts by the largest norm, or scale by the
        ``clip_quantile`` of the norms and clip the rest to the ball (recorded in ``describe()``).
    clip_quantile : float in (0, 1]
        Quantile of the ``clip`` policy.
    context_bound : float
        Radius ``C_B`` of the context ball.
    order : {"iid", "pass", "permuted"}
        How rows are drawn: ``iid`` (uniformly with replacement), ``pass`` (file order, repeated
        when T > n; the same in every replication) or ``permuted`` (passes in an order drawn per
        replication).
    encoding : {"disjoint", "shared"}
        ``disjoint``: contexts ``(B, R, d)``, one parameter per arm (setting ``multi``);
        ``shared``: arm features ``e_a kron x`` of dimension ``K d`` (setting ``single``).
    reward_matrix : array of shape (K, K), optional
        ``reward_matrix[label][arm]`` (default: the identity, reward ``1{arm = label}``); e.g.
        ``1 - cost`` for a cost-sensitive task.
    link : str
        Link announced to the algorithms (the rewards are the data's, whatever the link; GLM
        algorithms need ``logistic`` or ``probit``).
    theta_bound : float
        Bound on ``||theta*||`` announced to the algorithms (the data has no true parameter; the
        norms of the least-squares fit are in ``describe()``).
    """

    def __init__(
        self,
        dataset: str | None = None,
        path: str | None = None,
        label: str | None = None,
        features: Sequence[str] | None = None,
        na: str = "error",
        data_home: str | None = None,
        d: int | None = None,
        projection: str | None = None,
        projection_seed: int = 0,
        intercept: bool = True,
        norm: str = "max",
        clip_quantile: float = 0.95,
        context_bound: float = 1.0,
        order: str = "iid",
        encoding: str = "disjoint",
        reward_matrix: Any = None,
        link: str | Link = "identity",
        theta_bound: float = 1.0,
    ) -> None:
        self.data = self._load(dataset, path, label, features, na, data_home)
        self.dataset, self.path = dataset, path
        self.encoding = check_choice("encoding", encoding, ENCODINGS)
        self.order = check_choice("order", order, ORDERS)
        if not isinstance(intercept, bool):
            raise ValidationError(f"intercept must be true or false, got {intercept!r}")
        self.intercept = intercept
        K = self.data.K
        if reward_matrix is None:
            Rm = np.eye(K)
        else:
            Rm = check_finite_array("reward_matrix", reward_matrix, ndim=2)
            if Rm.shape != (K, K):
                raise ValidationError(
                    f"reward_matrix must have shape ({K}, {K}) (label x arm) for the "
                    f"{K} classes {list(self.data.class_names)}, got {Rm.shape}"
                )
        lo, hi = float(Rm.min()), float(Rm.max())
        if not lo < hi:
            raise ValidationError(f"reward_matrix must not be constant (every entry is {lo})")
        self.reward_matrix = Rm
        self._theta_bound = check_positive("theta_bound", theta_bound)
        method = projection if projection is not None else ("none" if d is None else "pca")
        prep = {
            "d": d,
            "projection": method,
            "projection_seed": projection_seed,
            "intercept": intercept,
            "norm": norm,
            "clip_quantile": clip_quantile,
            "context_bound": context_bound,
        }
        self._summary: dict[str, Any] | None = None
        table_key = getattr(self.data, "_cache_key", None)
        if table_key is None:  # a bundled data set: in memory
            self.contexts, self._proj, self._norm = _contexts(self.data, prep, None)
            self._fit = self._least_squares()
        else:  # a file: the contexts are cached next to its parsed arrays
            key = filecache.entry_key(
                "contexts", {"table": table_key, "reward_matrix": Rm.tolist(), **prep}
            )
            found = filecache.lookup(key)
            if found is None:
                found = filecache.store(key, self._write_contexts(prep))
            where, meta = found
            self.contexts = np.load(where / "contexts.npy", mmap_mode="r")
            self._proj, self._norm = meta["projection"], meta["norm"]
            self._fit = np.asarray(meta["fit"], dtype=float).reshape(K, -1)
            self._summary = meta["summary"]
        self.contexts.setflags(write=False)
        super().__init__(self.contexts.shape[1], K, link, "none", 0.0, context_bound, (lo, hi))

    def _write_contexts(self, prep: dict[str, Any]) -> Callable[[Path], dict[str, Any]]:
        def write(where: Path) -> dict[str, Any]:
            name = Path(self.path or "").name
            filecache.status(f"preprocessing {name}: standardized, bounded contexts")
            self.contexts, proj, norm = _contexts(self.data, prep, where / "contexts.npy")
            filecache.status(f"preprocessing {name}: least-squares fits and policy benchmarks")
            self._fit = self._least_squares()
            summary = self._heavy_summary()
            self.contexts.flush()  # type: ignore[attr-defined]
            return {
                "projection": proj,
                "norm": norm,
                "fit": self._fit.ravel().tolist(),
                "summary": summary,
            }

        return write

    @staticmethod
    def _load(
        dataset: str | None,
        path: str | None,
        label: str | None,
        features: Sequence[str] | None,
        na: str,
        data_home: str | None,
    ) -> SupervisedData:
        if (dataset is None) == (path is None):
            raise ValidationError(
                "dataset or path: give exactly one (a registered name, or a CSV or Parquet "
                f"file), got dataset={dataset!r}, path={path!r}"
            )
        if path is not None:
            if label is None:
                raise ValidationError(
                    f"label is required with path={path!r}: the name of its class column"
                )
            return load_file(path, label, features, na)
        for key, value in (("label", label), ("features", features)):
            if value is not None:
                raise ValidationError(
                    f"{key} applies to path = ... files only, not to dataset={dataset!r}"
                )
        entry = get(str(dataset))
        if entry.kind != "supervised":
            raise ValidationError(
                f"dataset {dataset!r} is a {entry.kind!r} data set; this environment needs a "
                f"supervised (classification) one"
            )
        data = entry.load(data_home=data_home) if entry.availability == "network" else entry.load()
        if not isinstance(data, SupervisedData):
            raise ValidationError(f"dataset {dataset!r} did not load as a classification data set")
        return data

    # -- public description ------------------------------------------------------------------
    @property
    def setting(self) -> str:  # type: ignore[override]
        return "single" if self.encoding == "shared" else "multi"

    @property
    def d_features(self) -> int:  # type: ignore[override]
        return self.K * self.d if self.encoding == "shared" else self.d

    @property
    def theta_bound(self) -> float:  # type: ignore[override]
        return self._theta_bound

    def spec(self, horizon: int) -> EnvSpec:
        """The public spec; the announced noise scale is ``(hi - lo) / 2``, the sub-Gaussian scale of
        any reward in ``[lo, hi]`` (given the context, the label is random)."""
        spec = super().spec(horizon)
        lo, hi = spec.reward_range
        return dataclasses.replace(spec, noise_scale=(hi - lo) / 2)

    def _least_squares(self) -> np.ndarray:
        """Least-squares fit ``(K, d)`` of every arm's reward on the contexts (the best linear
        model), accumulated over chunks of rows."""
        y, Rm = self.data.y, self.reward_matrix
        coef = least_squares(self.contexts, lambda c: Rm[y[c]], intercept=False)
        return np.ascontiguousarray(coef.T)

    def _heavy_summary(self) -> dict[str, Any]:
        """The parts of :meth:`describe` that read the whole data set (cached with the contexts)."""
        if self._summary is None:
            best_arm, arm, linear = policy_benchmarks(
                self.contexts, self.data.y, self.reward_matrix
            )
            self._summary = {
                "data": self.data.describe(),
                "best_arm_reward": best_arm,
                "best_arm": self.data.class_names[arm],
                "linear_policy_reward": linear,
                "best_mean_reward": float(
                    self.reward_matrix.max(axis=1) @ self.data.class_counts() / self.data.n
                ),
            }
        return self._summary

    def describe(self) -> dict[str, Any]:
        heavy = self._heavy_summary()
        out = super().describe()
        out.update(
            data=dict(heavy["data"]),
            dataset=self.dataset,
            path=self.path,
            encoding=self.encoding,
            order=self.order,
            intercept=self.intercept,
            **self._proj,
            **self._norm,
            reward_matrix=None
            if np.array_equal(self.reward_matrix, np.eye(self.K))
            else self.reward_matrix.tolist(),
            best_arm_reward=heavy["best_arm_reward"],
            best_arm=heavy["best_arm"],
            linear_policy_reward=heavy["linear_policy_reward"],
            best_mean_reward=heavy["best_mean_reward"],
            least_squares_theta_norm=float(np.linalg.norm(self._fit, axis=1).max()),
            theta_bound=self._theta_bound,
        )
        return out

    # -- protocol ----------------------------------------------------------------------------
    @property
    def theta_star(self) -> np.ndarray:
        """The least-squares fit of the rewards on the contexts: ``(R, K, d)`` (disjoint) or
        ``(R, K d)`` (shared); the data has no true parameter, this is its best linear model."""
        if self.encoding == "shared":
            return np.broadcast_to(self._fit.reshape(-1), (self.R, self.K * self.d))
        return np.broadcast_to(self._fit, (self.R, self.K, self.d))

    def _reset(self) -> None:
        n = self.data.n
        if self.order == "permuted":
            self._perm = np.stack(
                [self.streams.instance.permutation(n) for _ in range(self.R)], axis=1
            )
        elif self.order == "pass":
            self._perm = np.broadcast_to(np.arange(n)[:, None], (n, self.R))

    def _rows(self, B: int) -> np.ndarray:
        if self.order == "iid":
            return self.streams.contexts.integers(0, self.data.n, (B, self.R))
        t = (self._drawn + np.arange(B)) % self.data.n
        return self._perm[t]

    def _draw_chunk(self, B: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        rows = self._rows(B)
        X = self.contexts[rows]  # (B, R, d)
        means = self.reward_matrix[self.data.y[rows]]  # (B, R, K)
        if self.encoding == "shared":
            X = block_features(X, self.K)
        return X, means, np.zeros((B, self.R)), means.max(axis=-1)
