"""The auto-loan pricing case study of Han, Liang, Wang & Zhang (2021), Appendix F.

Data: the On-Line Auto Lending data set CPRM-12-001 of the Center for Pricing and Revenue
Management, Columbia Business School (distributed on request, not redistributable): one row per
US online auto-loan application with an ``apply`` (accepted) indicator.  The pipeline, as the paper
and its authors' scripts describe it:

1. features ``x`` = ``Primary_FICO``, ``Term``, ``Amount_Approved``, ``onemonth`` (the prime
   rate), ``Competition_rate``, the one-hot levels of ``CarType`` (all levels kept; 3 in the data:
   new, used, refinance) and a constant: ``d_x = 9``;
2. price imputation ``p = mp * sum_{tau=1}^{Term} (1 + Rate)^{-tau} - Amount_Approved`` with
   ``Rate = onemonth / 100`` per period (``mp`` the monthly payment), i.e. the net present value
   of the payments minus the amount lent;
3. feature map ``z = (x, p x)`` in ``R^{2 d_x}`` (``d = 18``);
4. every column min-max scaled to [0, 1] over the data set (a constant column becomes 0);
5. the population model ``P(apply = 1 | x, p) = sigma(z^T theta*)``, ``theta*`` the L2-penalized
   logistic fit (``C = 1``, no intercept: scikit-learn's ``LogisticRegression`` defaults with
   ``fit_intercept=False``) on (scaled ``z``, ``apply``);
6. arms: ``K = 25`` prices ``p_i = 25000 (i - 1) / 24`` on [0, 25000]; customer ``t``'s context
   for arm ``i`` is ``scale((x_t, p_i x_t))``; ``T = 1e5`` randomly selected customers, taken
   one after another; regret in acceptance probability,
   ``sum_t max_i sigma(z_{t,i}^T theta*) - sigma(z_{t,a_t}^T theta*)``.

The authors' code used the grid 0 .. -25000 (``price_grid="code"``); its imputed prices are mostly
negative because a per-month discount rate of ``onemonth`` percent makes the payments' present
value small.  The share of imputed prices inside the grid's range is recorded and a warning is
given when it is below one half.

The data cannot be downloaded here: :func:`load_cprm_auto_loan` reads the CSV from a path, and
:func:`make_synthetic_auto_loan` generates a SYNTHETIC stand-in with the same schema and the
marginals below, deterministically from a seed, at run time (nothing is committed); its numbers
are not the paper's; its imputed prices lie in the paper's range [0, 25000] and its best price
depends on the customer.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from privbandits.core.errors import MissingDataError, ValidationError
from privbandits.core.validation import check_int, check_positive
from privbandits.envs.datasets.glm_env import DataGLMEnv, EnvDataset
from privbandits.envs.datasets.logit import fit_logistic
from privbandits.envs.datasets.registry import register
from privbandits.envs.datasets.tabular import DataFormatError, Table, numeric_columns, read_table

__all__ = [
    "CPRM_FILE",
    "NUMERIC_COLUMNS",
    "REQUIRED_COLUMNS",
    "AutoLoanData",
    "AutoLoanEnv",
    "impute_price",
    "load_cprm_auto_loan",
    "make_synthetic_auto_loan",
    "price_grid",
    "write_synthetic_auto_loan",
]

#: File name of the data set as distributed (and as the authors' scripts read it).
CPRM_FILE = "CPRM_AutoLOan_OnlineAutoLoanData.csv"
#: Numeric feature columns, in the order of the feature vector.
NUMERIC_COLUMNS: tuple[str, ...] = (
    "Primary_FICO",
    "Term",
    "Amount_Approved",
    "onemonth",
    "Competition_rate",
)
#: Every column the pipeline reads.
REQUIRED_COLUMNS: tuple[str, ...] = ("apply", *NUMERIC_COLUMNS, "CarType", "mp")
_REQUEST = (
    "the CPRM-12-001 On-Line Auto Lending data set is distributed on request by the Center for "
    "Pricing and Revenue Management, Columbia Business School (www8.gsb.columbia.edu/cprm/research/"
    "datasets)"
)
#: Price grids: the paper's [0, 25000] and the authors' code's [0, -25000], 25 prices each.
PRICE_GRIDS: dict[str, tuple[float, float]] = {"paper": (0.0, 25000.0), "code": (0.0, -25000.0)}
#: Upper end of the paper's price range (the stand-in's imputed prices lie in [0, MAX_PRICE]).
MAX_PRICE = 25000.0


@dataclass(frozen=True)
class AutoLoanData:
    """Validated auto-loan applications.

    Attributes
    ----------
    numeric : ndarray of shape (n, 5)
        :data:`NUMERIC_COLUMNS`.
    car_type : ndarray of str, shape (n,)
    mp : ndarray of shape (n,)
        Monthly payment.
    apply : ndarray of shape (n,)
        0/1 acceptance.
    source : str
        The file, or ``"synthetic stand-in (n=..., seed=...)"``.
    n_dropped : int
        Rows dropped for missing values (``na="drop"``).
    """

    numeric: np.ndarray
    car_type: np.ndarray
    mp: np.ndarray
    apply: np.ndarray
    source: str
    n_dropped: int = 0

    @property
    def n(self) -> int:
        return int(self.apply.shape[0])

    def describe(self) -> dict[str, Any]:
        """n, d, K, acceptance rate and the imputed prices' range."""
        p = impute_price(self)
        return {
            "name": "auto-loan",
            "source": self.source,
            "n": self.n,
            "d": 2 * (len(NUMERIC_COLUMNS) + 1 + len(np.unique(self.car_type))),
            "K": 25,
            "apply_rate": round(float(self.apply.mean()), 6),
            "n_dropped": self.n_dropped,
            "price_min": round(float(p.min()), 2),
            "price_max": round(float(p.max()), 2),
        }


def load_cprm_auto_loan(path: str | Path, na: str = "error") -> AutoLoanData:
    """Read and validate the CPRM-12-001 CSV (or a file of the same schema).

    Parameters
    ----------
    path : str or Path
        The CSV file, or the directory holding :data:`CPRM_FILE`.
    na : {"error", "drop"}
        A missing value in a required column is an error naming the file, column and row
        (default), or drops the row (counted in ``n_dropped``).

    Raises
    ------
    MissingDataError
        The file does not exist (pointing to where the data is requested).
    DataFormatError
        Empty file, a missing column, a non-numeric value, ``apply`` not 0/1, or a non-positive
        ``Term`` / ``Amount_Approved`` (naming file, column and row).
    """
    p = Path(path)
    if p.is_dir():
        p = p / CPRM_FILE
    if not p.is_file():
        raise MissingDataError(
            f"auto-loan data: {str(p)!r} does not exist; {_REQUEST}; pass the path of "
            f"{CPRM_FILE} (or run on the synthetic stand-in without a path)"
        )
    table = read_table(p)
    table.require(list(REQUIRED_COLUMNS))
    values, kept = numeric_columns(
        table, [*NUMERIC_COLUMNS, "mp", "apply"], na=na, also_required=["CarType"]
    )
    numeric, mp, apply = values[:, :5], values[:, 5], values[:, 6]
    _check_values(table, numeric, mp, apply, kept)
    car = np.array([str(c).strip() for c in table.data["CarType"][kept]])
    return AutoLoanData(numeric, car, mp, apply, str(p), int(table.n_rows - kept.size))


def _check_values(
    table: Table, numeric: np.ndarray, mp: np.ndarray, apply: np.ndarray, rows: np.ndarray
) -> None:
    checks = [
        ("apply", ~np.isin(apply, (0.0, 1.0)), "must be 0 or 1"),
        ("Term", numeric[:, 1] <= 0, "must be a positive number of months"),
        ("Amount_Approved", numeric[:, 2] <= 0, "must be positive"),
        ("mp", mp <= 0, "must be positive (the monthly payment)"),
    ]
    for col, bad, what in checks:
        if bad.any():
            i = int(np.argmax(bad))
            value = {
                "apply": apply,
                "Term": numeric[:, 1],
                "Amount_Approved": numeric[:, 2],
                "mp": mp,
            }[col][i]
            raise DataFormatError(
                f"{table.path!r}: column {col!r}, {table.row_name(int(rows[i]))}: {value:g} {what} "
                f"({int(bad.sum())} rows)"
            )


def make_synthetic_auto_loan(n: int = 20000, seed: int = 0) -> AutoLoanData:
    """A SYNTHETIC stand-in for CPRM-12-001 with its schema (not the paper's data).

    Built so that the paper's statements hold on it: every imputed price (:func:`impute_price`)
    lies in [0, 25000], the range of the paper's price grid, and the best price depends on the
    customer.  Marginals: ``Primary_FICO`` integer ``clip(N(720, 50), 550, 850)``; ``Term``
    uniform on {36, 48, 60, 72}; ``onemonth`` ``U[0.1, 0.3]`` (read by the paper's formula as a
    per-month discount rate in percent); ``Competition_rate`` ``U[3.5, 7.5]``; ``CarType`` N / U /
    R with probabilities 0.5 / 0.3 / 0.2; offered APR ``rate = 12 onemonth + U[0.5, 12]`` (above the
    discount rate, so the payments' present value exceeds the amount and the price is positive);
    ``mp`` the annuity payment of the amount at ``rate / 1200`` per month over ``Term`` months;
    ``Amount_Approved`` ``clip(exp(N(10, 0.4)), 5000, 60000)``, lowered where needed so that the
    imputed price is at most 25000 (the price is proportional to the amount at fixed rates).
    ``apply ~ Bernoulli(sigma(s))`` with the hidden score ``s = a(x) + b(x) (p / 10^4 - 0.5)``,
    ``a(x) = -0.9 - 0.3 (FICO - 720) / 50 + 0.2 (Term - 54) / 12 - 0.3 log(Amount / 22026) -
    0.1 (Competition_rate - 5.5) + c_CarType``, ``c = (0.2, 0, -0.3)`` for N / U / R, and a price
    sensitivity that depends on the customer, ``b(x) = -0.8 + 1.2 (FICO - 720) / 50 + 0.8 [N]``:
    the acceptance probability falls with the price for some customers and rises for others, so
    the best price of the grid (the lowest or the highest) varies from customer to customer.

    Parameters
    ----------
    n : int
        Number of applications (>= 10).
    seed : int
        Seed of ``numpy.random.default_rng``: the same seed gives the same data.
    """
    n = check_int("n", n, 10)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    fico = np.clip(np.rint(rng.normal(720.0, 50.0, n)), 550, 850)
    term = rng.choice(np.array([36.0, 48.0, 60.0, 72.0]), n)
    amount = np.clip(np.exp(rng.normal(10.0, 0.4, n)), 5000.0, 60000.0)
    onemonth = rng.uniform(0.1, 0.3, n)
    comp = rng.uniform(3.5, 7.5, n)
    car = rng.choice(np.array(["N", "U", "R"]), n, p=[0.5, 0.3, 0.2])
    rate = 12.0 * onemonth + rng.uniform(0.5, 12.0, n)
    r = rate / 1200.0
    q = 1.0 / (1.0 + onemonth / 100.0)
    annuity = r / (1.0 - (1.0 + r) ** -term)  # payment per unit lent
    margin = annuity * q * (1.0 - q**term) / (1.0 - q) - 1.0  # price per unit lent (> 0)
    amount = np.minimum(amount, MAX_PRICE / margin)
    mp = amount * annuity
    price = amount * margin
    c_car = np.select([car == "N", car == "R"], [0.2, -0.3], 0.0)
    a = (
        -0.9
        - 0.3 * (fico - 720.0) / 50.0
        + 0.2 * (term - 54.0) / 12.0
        - 0.3 * np.log(amount / 22026.0)
        - 0.1 * (comp - 5.5)
        + c_car
    )
    b = -0.8 + 1.2 * (fico - 720.0) / 50.0 + 0.8 * (car == "N")
    s = a + b * (price / 1e4 - 0.5)
    apply = (rng.random(n) < special.expit(s)).astype(float)
    numeric = np.column_stack([fico, term, amount, onemonth, comp])
    return AutoLoanData(numeric, car, mp, apply, f"synthetic stand-in (n={n}, seed={seed})")


def write_synthetic_auto_loan(path: str | Path, n: int = 2000, seed: int = 0) -> Path:
    """Write :func:`make_synthetic_auto_loan` as a CSV with the CPRM-12-001 column names."""
    data = make_synthetic_auto_loan(n, seed)
    p = Path(path)
    cols = ["apply", *NUMERIC_COLUMNS, "CarType", "mp"]
    with p.open("w", encoding="utf-8") as fh:
        fh.write(",".join(cols) + "\n")
        for i in range(data.n):
            num = ",".join(f"{v:.10g}" for v in data.numeric[i])
            fh.write(f"{int(data.apply[i])},{num},{data.car_type[i]},{data.mp[i]:.10g}\n")
    return p


def impute_price(data: AutoLoanData) -> np.ndarray:
    """``p = mp q (1 - q^Term) / (1 - q) - Amount_Approved`` with ``q = 1 / (1 + onemonth / 100)``:
    the present value of ``Term`` monthly payments minus the amount lent (Appendix F)."""
    term, amount, onemonth = data.numeric[:, 1], data.numeric[:, 2], data.numeric[:, 3]
    q = 1.0 / (1.0 + onemonth / 100.0)
    return data.mp * q * (1.0 - q**term) / (1.0 - q) - amount


def price_grid(spec: Any = "paper", K: int = 25) -> np.ndarray:
    """``K`` evenly spaced prices: ``"paper"`` [0, 25000], ``"code"`` [0, -25000], or an explicit list."""
    if isinstance(spec, str):
        if spec not in PRICE_GRIDS:
            raise ValidationError(
                f"price_grid must be one of {sorted(PRICE_GRIDS)} or a list of prices, got {spec!r}"
            )
        return np.linspace(*PRICE_GRIDS[spec], check_int("K", K, 2))
    grid = np.asarray(spec, dtype=float)
    if grid.ndim != 1 or grid.size < 2 or not np.isfinite(grid).all():
        raise ValidationError(
            f"price_grid must be a list of at least 2 finite prices, got {spec!r}"
        )
    return grid


class AutoLoanEnv(DataGLMEnv):
    """Loan pricing on CPRM-12-001 or its synthetic stand-in (module docstring, steps 1-6).

    Parameters
    ----------
    path : str, optional
        The CPRM-12-001 CSV (or its directory); default: the synthetic stand-in.
    n, seed : int
        Size and seed of the stand-in (ignored with ``path``).
    price_grid : {"paper", "code"} or list of float
        Arms (default the paper's 25 prices on [0, 25000]).
    K : int
        Number of grid prices for a named grid.
    feedback : {"bernoulli", "expected"}
        ``r ~ Bernoulli(sigma(z^T theta*))`` (default) or the probability (the authors' code).
    order : {"permutation", "iid"}
        Customers in a random order, one after another (default, as in the paper), or i.i.d.
    na : {"error", "drop"}
        Missing values in the file: error (default) or drop the row (counted).
    C : float
        Inverse L2 strength of the fit (1, scikit-learn's default).
    """

    def __init__(
        self,
        path: str | None = None,
        n: int = 20000,
        seed: int = 0,
        price_grid: Any = "paper",
        K: int = 25,
        feedback: str = "bernoulli",
        order: str = "permutation",
        na: str = "error",
        C: float = 1.0,
    ) -> None:
        data = make_synthetic_auto_loan(n, seed) if path is None else load_cprm_auto_loan(path, na)
        levels = np.unique(data.car_type)
        x = np.column_stack(
            [
                data.numeric,
                (data.car_type[:, None] == levels[None, :]).astype(float),
                np.ones(data.n),
            ]
        )
        p = impute_price(data)
        z = np.concatenate([x, p[:, None] * x], axis=1)
        self._lo, self._hi = z.min(axis=0), z.max(axis=0)
        Z = self._scale(z)
        self.fit = fit_logistic(Z, data.apply, check_positive("C", C, allow_inf=True))
        self.theta, self.n_rows, self._x = self.fit.theta, data.n, x
        self.prices = globals()["price_grid"](price_grid, K)
        lo, hi = self.prices.min(), self.prices.max()
        self.price_in_grid = float(np.mean((p >= lo) & (p <= hi)))
        if self.price_in_grid < 0.5:
            warnings.warn(
                f"auto-loan: only {100 * self.price_in_grid:.1f}% of the imputed prices (range "
                f"[{p.min():.0f}, {p.max():.0f}]) lie inside the price grid [{lo:g}, {hi:g}]; the "
                f"fitted model is extrapolated to the grid's prices",
                UserWarning,
                stacklevel=2,
            )
        self.data, self.car_levels, self.C = data, tuple(str(v) for v in levels), float(C)
        self.path, self.price_grid_spec = path, price_grid
        self.feature_names = [*NUMERIC_COLUMNS, *(f"CarType={v}" for v in self.car_levels), "const"]
        self.feature_names += [f"p*{f}" for f in self.feature_names]
        # ||scale((x, p x))||^2 = |u|^2 + 2 p u.v + p^2 |v|^2 with u = scale((x, 0)), v = (0, x) / range
        rng_ = np.where(self._hi > self._lo, self._hi - self._lo, 1.0)
        u = self._scale(np.concatenate([x, np.zeros_like(x)], axis=1))
        v = np.concatenate([np.zeros_like(x), x], axis=1) / rng_
        sq = (
            (u * u).sum(1)[:, None]
            + 2 * (u * v).sum(1)[:, None] * self.prices[None, :]
            + (v * v).sum(1)[:, None] * self.prices[None, :] ** 2
        )
        bound = float(np.sqrt(max(sq.max(), 0.0)))
        super().__init__(Z.shape[1], self.prices.size, bound, feedback, order)
        self.apply_rate = float(data.apply.mean())
        probs = special.expit(Z @ self.theta)
        self.accuracy = float(np.mean((probs > 0.5) == (data.apply > 0.5)))
        self.p_range = (float(p.min()), float(p.max()))

    def _scale(self, z: np.ndarray) -> np.ndarray:
        """Min-max scaling over the data set; a constant column maps to ``z - min`` (0 on the data)."""
        return (z - self._lo) / np.where(self._hi > self._lo, self._hi - self._lo, 1.0)

    def features(self, rows: np.ndarray) -> np.ndarray:
        x = self._x[rows][..., None, :]  # (..., 1, d_x)
        P = self.prices[:, None]  # (K, 1)
        z = np.concatenate(
            [np.broadcast_to(x, rows.shape + (self.prices.size, x.shape[-1])), P * x], axis=-1
        )
        return self._scale(z)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        fit = self.fit.describe()
        fit.update(
            accuracy=round(self.accuracy, 6),
            majority_accuracy=round(max(self.apply_rate, 1 - self.apply_rate), 6),
        )
        grid = (
            self.price_grid_spec
            if isinstance(self.price_grid_spec, str)
            else [float(v) for v in self.prices]
        )
        out.update(
            dataset="auto-loan",
            source=self.data.source,
            n_dropped=self.data.n_dropped,
            apply_rate=round(self.apply_rate, 6),
            price_grid=grid,
            imputed_price_range=[round(v, 2) for v in self.p_range],
            imputed_prices_in_grid=round(self.price_in_grid, 6),
            car_levels=list(self.car_levels),
            features=self.feature_names,
            fit=fit,
            C=self.C if np.isfinite(self.C) else "inf",
        )
        return out


register(
    "auto-loan",
    lambda path=None, na="error", **kw: EnvDataset(AutoLoanEnv(path, na=na, **kw)),
    kind="pricing",
    availability="path",
    source="CPRM-12-001 On-Line Auto Lending, Center for Pricing and Revenue Management, Columbia Business "
    "School (on request); without a path: a synthetic stand-in with its schema",
    licence="CPRM data licence (by request, not redistributable); the stand-in is generated",
    summary="US online auto-loan applications priced on a 25-price grid (Han et al. 2021, Appendix F; "
    'env kind "auto-loan"); --path reads the CSV, no path gives the SYNTHETIC stand-in',
)
