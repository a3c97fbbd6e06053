"""The auto-loan pipeline of Han et al. (2021), Appendix F: the CPRM-12-001 loader's schema errors,
the synthetic stand-in's schema and marginals, the feature pipeline and the environment."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from privbandits.algorithms import make
from privbandits.core.errors import ConfigError, MissingDataError, ValidationError
from privbandits.core.rng import make_streams
from privbandits.envs.datasets.autoloan import (
    CPRM_FILE,
    REQUIRED_COLUMNS,
    AutoLoanEnv,
    impute_price,
    load_cprm_auto_loan,
    make_synthetic_auto_loan,
    price_grid,
    write_synthetic_auto_loan,
)
from privbandits.envs.datasets.tabular import DataFormatError
from privbandits.experiments.config import Overrides
from privbandits.experiments.presets import load_preset
from privbandits.simulate import simulate

HEADER = ",".join(REQUIRED_COLUMNS)
ROW = "1,700,60,20000,1.5,5.0,N,380.5"


def _env(**kw) -> AutoLoanEnv:  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", UserWarning
        )  # the stand-in's prices lie outside the paper's grid
        return AutoLoanEnv(**{"n": 2000, **kw})


def _csv(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    p = tmp_path / "loans.csv"
    p.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return p


# -- loader ----------------------------------------------------------------------------------------
def test_loader_reads_what_the_stand_in_writes(tmp_path: Path) -> None:
    path = write_synthetic_auto_loan(tmp_path / CPRM_FILE, n=300, seed=4)
    got = load_cprm_auto_loan(tmp_path)  # the directory holding the official file name works too
    ref = make_synthetic_auto_loan(300, 4)
    np.testing.assert_allclose(got.numeric, ref.numeric, rtol=1e-9)
    np.testing.assert_allclose(got.mp, ref.mp, rtol=1e-9)
    np.testing.assert_array_equal(got.apply, ref.apply)
    np.testing.assert_array_equal(got.car_type, ref.car_type)
    assert got.source == str(path) and got.n_dropped == 0


def test_missing_file_points_to_the_data_request(tmp_path: Path) -> None:
    with pytest.raises(MissingDataError, match=r"does not exist.*Columbia Business School"):
        load_cprm_auto_loan(tmp_path / "nope.csv")


def test_empty_file_names_the_file(tmp_path: Path) -> None:
    p = tmp_path / "empty.csv"
    p.write_text("", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"empty\.csv.*empty"):
        load_cprm_auto_loan(p)
    q = _csv(tmp_path)  # header only
    with pytest.raises(DataFormatError, match=r"loans\.csv.*no data rows"):
        load_cprm_auto_loan(q)


def test_missing_column_is_named(tmp_path: Path) -> None:
    header = HEADER.replace(",Competition_rate", "")
    p = _csv(tmp_path, "1,700,60,20000,1.5,N,380.5", header=header)
    with pytest.raises(DataFormatError, match=r"loans\.csv.*Competition_rate"):
        load_cprm_auto_loan(p)


def test_non_numeric_value_names_file_column_and_row(tmp_path: Path) -> None:
    p = _csv(tmp_path, ROW, ROW.replace("20000", "twenty"))
    with pytest.raises(
        DataFormatError, match=r"loans\.csv.*'Amount_Approved'.*row 2.*'twenty'.*not a number"
    ):
        load_cprm_auto_loan(p)


def test_missing_values_are_an_error_or_dropped_and_counted(tmp_path: Path) -> None:
    p = _csv(tmp_path, ROW, ROW.replace("700", "NaN"), ROW, ROW.replace(",N,", ",,"))
    with pytest.raises(DataFormatError, match=r"loans\.csv.*'Primary_FICO'.*row 2.*missing"):
        load_cprm_auto_loan(p)
    data = load_cprm_auto_loan(p, na="drop")
    assert data.n == 2 and data.n_dropped == 2  # the NaN FICO and the empty CarType


def test_bad_values_name_file_column_and_row(tmp_path: Path) -> None:
    p = _csv(tmp_path, ROW, ROW, "2" + ROW[1:])
    with pytest.raises(DataFormatError, match=r"loans\.csv.*'apply'.*row 3.*must be 0 or 1"):
        load_cprm_auto_loan(p)
    p = _csv(tmp_path, ROW.replace(",60,", ",0,"))
    with pytest.raises(DataFormatError, match=r"'Term'.*row 1.*positive"):
        load_cprm_auto_loan(p)


# -- stand-in --------------------------------------------------------------------------------------
def test_stand_in_is_deterministic_and_has_the_schema() -> None:
    a, b, c = (
        make_synthetic_auto_loan(500, 1),
        make_synthetic_auto_loan(500, 1),
        make_synthetic_auto_loan(500, 2),
    )
    np.testing.assert_array_equal(a.numeric, b.numeric)
    np.testing.assert_array_equal(a.apply, b.apply)
    assert not np.array_equal(a.numeric, c.numeric)
    assert a.numeric.shape == (500, 5) and a.mp.shape == a.apply.shape == a.car_type.shape == (500,)
    assert "synthetic" in a.source


def test_stand_in_marginals() -> None:
    n = 40000
    d = make_synthetic_auto_loan(n, 0)
    fico, term, amount, onemonth, comp = d.numeric.T
    assert np.array_equal(fico, np.rint(fico)) and fico.min() >= 550 and fico.max() <= 850
    assert abs(fico.mean() - 720) < 5 * 50 / np.sqrt(n)  # clipping moves the mean by < 0.1
    for v, share in zip(
        (36, 48, 60, 72), np.bincount((term // 12 - 3).astype(int), minlength=4) / n
    ):
        assert abs(share - 0.25) < 5 * np.sqrt(0.25 * 0.75 / n), v
    assert set(np.unique(term)) == {36.0, 48.0, 60.0, 72.0}
    assert 5000 <= amount.min() and amount.max() <= 100000
    assert abs(np.median(np.log(amount)) - 10.0) < 5 * 0.4 * 1.26 / np.sqrt(
        n
    )  # median of N(10, 0.4)
    for x, lo, hi in ((onemonth, 0.1, 0.3), (comp, 3.5, 7.5)):
        assert lo <= x.min() and x.max() <= hi
        assert abs(x.mean() - (lo + hi) / 2) < 5 * (hi - lo) / np.sqrt(12 * n)
    for level, p in (("N", 0.5), ("U", 0.3), ("R", 0.2)):
        assert abs(np.mean(d.car_type == level) - p) < 5 * np.sqrt(p * (1 - p) / n)
    assert 0.2 <= d.apply.mean() <= 0.4
    # the monthly payment repays the amount at an APR of 12 onemonth + U[0.5, 12]: mean spread 6.25
    r = np.array(
        [_annuity_rate(mp, a, t) for mp, a, t in zip(d.mp[:400], amount[:400], term[:400])]
    )
    spread = 1200 * r - 12 * onemonth[:400]
    assert 0.5 - 1e-6 <= spread.min() and spread.max() <= 12 + 1e-6
    assert abs(spread.mean() - 6.25) < 5 * 11.5 / np.sqrt(12 * 400)


def test_stand_in_prices_lie_in_the_paper_range_and_the_best_price_depends_on_the_customer() -> (
    None
):
    """Appendix F: prices lie in [0, 25000]; the best grid price must not be the same for everyone
    (on the old stand-in every imputed price was negative and price 0 was always the best arm)."""
    d = make_synthetic_auto_loan(20000, 0)
    p = impute_price(d)
    assert p.min() >= 0.0 and p.max() <= 25000.0 + 1e-6
    env = AutoLoanEnv()
    assert env.price_in_grid == 1.0
    from scipy import special

    probs = special.expit(env.features(np.arange(env.n_rows)) @ env.theta)
    best = np.bincount(probs.argmax(axis=1), minlength=env.prices.size) / env.n_rows
    assert best.max() < 0.9  # no price is best for (almost) every customer
    assert (best > 0.05).sum() >= 2


def _annuity_rate(mp: float, amount: float, term: float) -> float:
    lo, hi = 1e-9, 0.1
    for _ in range(100):  # the payment increases with the rate: bisection
        mid = (lo + hi) / 2
        if amount * mid / (1 - (1 + mid) ** -term) < mp:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@settings(max_examples=50, deadline=None)
@given(st.floats(50, 5000), st.integers(1, 96), st.floats(1000, 1e5), st.floats(0.05, 5.0))
def test_imputed_price_is_the_discounted_payments_minus_the_amount(
    mp: float, term: int, amount: float, onemonth: float
) -> None:
    d = make_synthetic_auto_loan(10, 0)
    d = type(d)(
        np.array([[700.0, term, amount, onemonth, 5.0]]),
        np.array(["N"]),
        np.array([mp]),
        np.array([1.0]),
        "t",
    )
    rate = onemonth / 100
    npv = sum(mp * (1 + rate) ** -tau for tau in range(1, term + 1))
    assert impute_price(d)[0] == pytest.approx(npv - amount, rel=1e-9, abs=1e-6)


# -- pipeline and environment ----------------------------------------------------------------------
def test_pipeline_dimensions_grid_and_scaling() -> None:
    env = _env()
    assert (env.d, env.K) == (18, 25)
    np.testing.assert_allclose(env.prices, 25000 * np.arange(25) / 24)
    np.testing.assert_allclose(price_grid("code"), -25000 * np.arange(25) / 24)
    # on the data (observed prices) every scaled column lies in [0, 1]; the constant column is 0
    p = impute_price(env.data)
    z = env._scale(np.concatenate([env._x, p[:, None] * env._x], axis=1))
    assert z.min() >= -1e-12 and z.max() <= 1 + 1e-12
    assert np.all(z[:, 8] == 0.0)  # min-max scaling maps the constant to 0
    X = env.features(np.arange(50))
    assert X.shape == (50, 25, 18)
    np.testing.assert_allclose(
        X[:, :, :9], np.repeat(X[:, :1, :9], 25, axis=1)
    )  # x does not depend on the price
    assert np.linalg.norm(env.features(np.arange(env.n_rows)), axis=-1).max() == pytest.approx(
        env.context_bound
    )


def test_fit_matches_scikit_learn() -> None:
    sk = pytest.importorskip("sklearn.linear_model")
    env = _env()
    p = impute_price(env.data)
    Z = env._scale(np.concatenate([env._x, p[:, None] * env._x], axis=1))
    ref = sk.LogisticRegression(fit_intercept=False, C=1.0, tol=1e-10, max_iter=10_000).fit(
        Z, env.data.apply
    )
    np.testing.assert_allclose(env.theta, ref.coef_[0], atol=2e-3)


def test_warns_when_the_grid_misses_the_imputed_prices() -> None:
    # the stand-in's prices lie in [0, 25000]: the authors' code's grid [0, -25000] misses them all
    with pytest.warns(UserWarning, match=r"0\.0% of the imputed prices"):
        AutoLoanEnv(n=500, price_grid="code")
    d = _env().describe()
    assert d["imputed_prices_in_grid"] == 1.0 and d["price_grid"] == "paper"


def test_rewards_have_the_population_model_means() -> None:
    env = _env(price_grid="code")
    env.reset(4, make_streams(2), 6000)
    R = M = V = 0.0
    drawn = 0
    while drawn < 6000:
        ch = env.next_chunk()
        np.testing.assert_allclose(ch.means, special.expit(ch.X @ env.theta))
        R, M, V = (
            R + ch.rewards.sum(axis=(0, 1)),
            M + ch.means.sum(axis=(0, 1)),
            V + (ch.means * (1 - ch.means)).sum(axis=(0, 1)),
        )
        drawn += ch.B
    z = (R - M) / np.sqrt(V)
    assert np.abs(z).max() < 4.0, z


def test_customers_are_taken_in_a_random_order_without_repeats() -> None:
    env = _env(n=300)
    env.reset(2, make_streams(0), 600)
    rows = env._rows(600)
    for r in range(2):
        assert sorted(rows[:300, r]) == list(range(300)) and sorted(rows[300:, r]) == list(
            range(300)
        )
    assert not np.array_equal(rows[:300, 0], rows[:300, 1])


def test_both_drivers_agree() -> None:
    env = _env(n=500)
    out = {}
    for engine in ("reference", "compiled"):
        res = simulate(
            make("ldp-sgd", epsilon=1.0),
            env,
            200,
            replications=2,
            seed=1,
            checkpoints=[50, 200],
            engine=engine,
        )
        assert res.regret.shape == (2, 2)
        out[engine] = res.regret
    np.testing.assert_allclose(out["reference"], out["compiled"], rtol=1e-9, atol=1e-9)


def test_reproduce_data_option_reads_the_file(tmp_path: Path) -> None:
    path = write_synthetic_auto_loan(tmp_path / "loans.csv", n=400, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cfg = load_preset("han2021-autoloan", Overrides(quick=True, data=str(path)))
    assert cfg.env["path"] == str(path) and cfg.horizon == 5000
    with pytest.raises(ValidationError, match="does not exist"):
        load_preset("han2021-autoloan", Overrides(quick=True, data=str(tmp_path / "missing.csv")))
    with pytest.raises(ConfigError, match=r"--data.*'synthetic' reads no data file.*auto-loan"):
        load_preset("han2021-glm", Overrides(quick=True, data=str(path)))


def test_cli_reproduce_data_errors_are_clean(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from privbandits.cli import app

    runner = CliRunner(env={"COLUMNS": "200"})
    res = runner.invoke(
        app,
        [
            "reproduce",
            "han2021-autoloan",
            "--quick",
            "--data",
            str(tmp_path / "none.csv"),
            "--db",
            str(tmp_path / "r.db"),
        ],
    )
    assert res.exit_code != 0 and not isinstance(
        res.exception, (KeyError, TypeError, AttributeError)
    )
    assert "none.csv" in res.output and "does not exist" in res.output
    bad = _csv(tmp_path, ROW, ROW.replace("380.5", "abc"))
    res = runner.invoke(
        app,
        [
            "reproduce",
            "han2021-autoloan",
            "--quick",
            "--data",
            str(bad),
            "--db",
            str(tmp_path / "r.db"),
        ],
    )
    assert res.exit_code != 0 and "'mp'" in res.output and "row 2" in res.output
    res = runner.invoke(
        app, ["reproduce", "--all", "--data", str(bad), "--db", str(tmp_path / "r.db")]
    )
    assert res.exit_code != 0 and "--data applies to one preset" in res.output


def test_preset_follows_the_appendix() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cfg = load_preset("han2021-autoloan")
        quick = load_preset("han2021-autoloan", Overrides(quick=True))
    assert (cfg.horizon, cfg.replications) == (100_000, 10) and cfg.env == {"kind": "auto-loan"}
    assert [e.name for e in cfg.algorithms] == [
        "ldp-sgd",
        "ldp-gloc",
        "greedy-sgd",
        "gloc",
        "uniform",
    ]
    private = [e for e in cfg.algorithms if e.name.startswith("ldp-")]
    for entry in private:
        assert sorted(grid["epsilon"] for _, grid in entry.variants) == [0.5, 1.0]
    assert dict(private[1].variants[0][0])["delta"] == 0.01
    assert quick.horizon == 5000
