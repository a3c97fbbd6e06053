"""Chen et al. (2025) spec section 9: properties 8/16 (E||U phi|| <= d), 14 (zero-noise wiring), 17 (full
n range) and 22 (per-epoch regret) that tests/algorithms/test_chen.py and tests/regression/ cover only
in a weakened form.

* Property 14 is tested with a *mocked* RNG whose normals are all zero.  The compiled samplers of
  :mod:`privbandits.privacy.samplers` read the generator's bit stream directly (a Python subclass of
  ``Generator`` cannot change what they draw), so the names the private routines call are replaced by
  Python twins that draw through ``rng.standard_normal`` in the same order;
  :func:`test_sampler_twins_reproduce_the_compiled_samplers` shows the twins are bit-identical to the
  compiled samplers on a real generator, so the patch changes nothing but the RNG.
* Property 16 / spec 4.1 (a)-(b): the coverage test checks ``E||U phi|| <= 2d`` (the bound under
  Eq. (2)); here the fitted ``U`` is held to the Eq. (1) bounds ``E||U phi|| <= d`` and
  ``max_v E|<U phi, v>| <= sqrt(d)``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privbandits as pb
import privbandits.algorithms.chen.ldp as chen_ldp
import privbandits.regression.releases as releases
from privbandits.algorithms.chen.ldp import ChenLDPClient, ChenLDPServer
from privbandits.algorithms.chen.schedule import epoch_ends
from privbandits.core.spec import EnvSpec
from privbandits.privacy import samplers
from privbandits.regression import ImproperBatchSGD, ReweightedRegression
from privbandits.regression.links import link_constants
from privbandits.regression.normalization import (
    learn_normalization,
    normalization_moment,
    normalization_release,
    population_sigma,
)
from privbandits.regression.releases import noise_multiplier
from privbandits.regression.reweighted import gradient_release, reweighted_gd, reweighted_gradient

from ..regression.helpers import covariates, rademacher, unit

IDENTITY = link_constants("identity")


# ---------------------------------------------------------------------------------------------
# property 14: a mocked RNG returning zeros
# ---------------------------------------------------------------------------------------------
class ZeroRNG(np.random.Generator):
    """A generator whose standard normals are all 0 (and that counts how many were asked for)."""

    def __init__(self) -> None:
        super().__init__(np.random.PCG64(0))
        self.draws = 0

    def standard_normal(self, size=None, dtype=np.float64, out=None):  # type: ignore[no-untyped-def,override]
        if size is None:
            self.draws += 1
            return 0.0
        z = np.zeros(size)
        self.draws += z.size
        return z


def _add_gaussian(rng: np.random.Generator, sigma: float, v: np.ndarray) -> None:
    """Python twin of :func:`samplers.add_gaussian` (flat order, one normal per entry)."""
    flat = v.reshape(-1)
    assert np.shares_memory(flat, v)
    flat += sigma * rng.standard_normal(flat.shape[0])


def _add_symmetric_gaussian(rng: np.random.Generator, sigma: float, M: np.ndarray) -> None:
    """Python twin of :func:`samplers.add_symmetric_gaussian` (row by row, ``j >= i``, mirrored)."""
    d = M.shape[0]
    iu = np.triu_indices(d)
    W = np.zeros((d, d))
    W[iu] = sigma * rng.standard_normal(iu[0].size)
    M += W + np.triu(W, 1).T


def _add_symmetric_gaussian_rows(rng: np.random.Generator, sigma: float, M: np.ndarray) -> None:
    for i in range(M.shape[0]):
        _add_symmetric_gaussian(rng, sigma, M[i])


@pytest.fixture
def python_samplers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Route every noise draw of the Chen routines through the Python twins (and hence ``rng``)."""
    for mod in (releases, chen_ldp):
        monkeypatch.setattr(mod, "add_gaussian", _add_gaussian)
        monkeypatch.setattr(mod, "add_symmetric_gaussian_rows", _add_symmetric_gaussian_rows)
    monkeypatch.setattr(releases, "add_symmetric_gaussian", _add_symmetric_gaussian)


def test_sampler_twins_reproduce_the_compiled_samplers() -> None:
    """On a real generator the twins give the compiled samplers' output bit for bit."""
    for twin, compiled, shape in (
        (_add_gaussian, samplers.add_gaussian, (7, 3)),
        (_add_symmetric_gaussian, samplers.add_symmetric_gaussian, (5, 5)),
        (_add_symmetric_gaussian_rows, samplers.add_symmetric_gaussian_rows, (4, 3, 3)),
    ):
        base = np.random.default_rng(0).normal(size=shape)
        a, b = base.copy(), base.copy()
        twin(np.random.default_rng(11), 0.7, a)
        compiled(np.random.default_rng(11), 0.7, b)
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, base)


def _problem(n: int, d: int, seed: int, link: str = "identity") -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    theta = unit(d, rng)
    X = covariates(n, d, 3.0, rng)
    return X, rademacher(link_constants(link).nu(X @ theta), rng)


SIGMA = noise_multiplier(0.7, 1e-5)


@pytest.mark.parametrize("mode", ["jdp", "ldp"])
def test_zero_noise_algorithm1_is_the_noiseless_iteration(python_samplers: None, mode: str) -> None:
    """Algorithm 1 / Algorithm 8 (first phase) at sigma > 0 with zero normals equals sigma = 0 bit for bit
    (U, every iterate, every Sigma_hat), and draws one normal per released upper-triangle entry."""
    d, K, N, lam = 3, 5, 400, 0.05
    X, _ = _problem(K * N, d, 1)
    batches = np.split(X, K)
    zero = ZeroRNG()
    noisy = learn_normalization(batches, lam, SIGMA, zero, mode=mode)
    plain = learn_normalization(batches, lam, 0.0, np.random.default_rng(5), mode=mode)
    np.testing.assert_array_equal(noisy.U, plain.U)
    for a, b in zip(
        noisy.iterates + noisy.sigma_hats, plain.iterates + plain.sigma_hats, strict=True
    ):
        np.testing.assert_array_equal(a, b)
    per_release = d * (d + 1) // 2
    assert zero.draws == K * per_release * (1 if mode == "jdp" else N)


@pytest.mark.parametrize("mode", ["jdp", "ldp"])
def test_zero_noise_algorithm7_is_the_noiseless_descent(python_samplers: None, mode: str) -> None:
    d, M, B, lam = 3, 12, 300, 0.05
    X, y = _problem(M * B + 2000, d, 2, "logistic")
    link = link_constants("logistic")
    U = learn_normalization(np.split(X[:2000], 5), lam, 0.0, np.random.default_rng(0)).U
    batches = [
        (X[2000 + m * B : 2000 + (m + 1) * B], y[2000 + m * B : 2000 + (m + 1) * B])
        for m in range(M)
    ]
    zero = ZeroRNG()
    w1, its1 = reweighted_gd(U, lam, batches, link, SIGMA, zero, mode=mode)
    w0, its0 = reweighted_gd(U, lam, batches, link, 0.0, np.random.default_rng(5), mode=mode)
    np.testing.assert_array_equal(w1, w0)
    for a, b in zip(its1, its0, strict=True):
        np.testing.assert_array_equal(a, b)
    assert zero.draws == M * d * (1 if mode == "jdp" else B)


@pytest.mark.parametrize(
    "mode, link", [("jdp", "identity"), ("jdp", "logistic"), ("ldp", "identity")]
)
def test_zero_noise_algorithm2_and_8_equal_their_noiseless_counterpart(
    python_samplers: None, mode: str, link: str
) -> None:
    """The full private estimator with zero normals equals the noiseless Algorithm 1 + Algorithm 7 run at
    the same (private) lambda on the same batches, bit for bit; its accounting still reports the declared
    noise (private at epsilon), and every release drew exactly its number of normals."""
    d, n = 3, 6000
    X, y = _problem(n, d, 3, link)
    est = ReweightedRegression(0.7, mode=mode, link=link)
    zero = ZeroRNG()
    e = est.fit(X, y, zero)
    p, lam = est.plan(n), e.resolved["lam"]
    U = learn_normalization(
        [X[k * p.N : (k + 1) * p.N] for k in range(est.K)],
        lam,
        0.0,
        np.random.default_rng(1),
        mode=mode,
    ).U
    batches = [
        (X[p.n1 + m * p.B : p.n1 + (m + 1) * p.B], y[p.n1 + m * p.B : p.n1 + (m + 1) * p.B])
        for m in range(p.M)
    ]
    w, _ = reweighted_gd(U, lam, batches, est.link, 0.0, np.random.default_rng(1), mode=mode)
    np.testing.assert_array_equal(e.width_matrix, U)
    np.testing.assert_array_equal(e.theta, U @ w)
    assert e.guarantee.is_private and e.guarantee.epsilon == pytest.approx(0.7, rel=1e-6)
    per_user = mode == "ldp"
    expected = est.K * d * (d + 1) // 2 * (p.N if per_user else 1) + p.M * d * (
        p.B if per_user else 1
    )
    assert zero.draws == expected
    assert all(r.std > 0 for r in e.ledger.releases)


@pytest.mark.parametrize("mode", ["jdp", "ldp"])
def test_zero_noise_algorithms_5_and_6_equal_their_noiseless_counterpart(
    python_samplers: None, mode: str
) -> None:
    d, n, K = 5, 4000, 20
    X, y = _problem(n, d, 4)
    zero = ZeroRNG()
    noisy = ImproperBatchSGD(0.5, mode=mode, K=K).fit(X, y, zero)
    plain = ImproperBatchSGD(math.inf, mode=mode, K=K).fit(X, y, 0)
    np.testing.assert_array_equal(noisy.theta, plain.theta)
    assert noisy.guarantee.is_private and not plain.guarantee.is_private
    assert zero.draws == d * (1 if mode == "jdp" else n)


def test_zero_noise_ldp_users_send_the_noiseless_messages(python_samplers: None) -> None:
    """The LDP bandit's users (Algorithm 8 online) with zero normals send exactly the sigma = 0 messages,
    so the server's released estimate is identical."""
    d, n = 3, 2500
    X, y = _problem(n, d, 5)
    reg = ReweightedRegression(math.inf, mode="ldp", K=5)
    spec = EnvSpec(d=d, K=1, horizon=n)

    def run(
        sigma: float, rng: np.random.Generator
    ) -> tuple[list[dict[str, np.ndarray]], np.ndarray]:
        server = ChenLDPServer(1, spec, reg, epoch_ends(n, n), min_fit=100)
        client = ChenLDPClient(sigma, IDENTITY, 2.0, spec, 1)
        msgs = []
        for t in range(n):
            msg = client.randomize(
                t,
                server.public_state(),
                X[t][None, None],
                np.zeros(1, dtype=np.int64),
                y[t : t + 1],
                rng,
            )
            msgs.append({k: np.array(v) for k, v in msg.payload.items()})
            server.receive(t, msg)
        return msgs, server.billboard.theta.copy()

    zero = ZeroRNG()
    m1, th1 = run(3.0, zero)
    m0, th0 = run(0.0, np.random.default_rng(2))
    assert zero.draws > 0
    for a, b in zip(m1, m0, strict=True):
        np.testing.assert_array_equal(a["X"], b["X"])
        np.testing.assert_array_equal(a["g"], b["g"])
    np.testing.assert_array_equal(th1, th0)


def test_huge_noise_dominates_every_routine() -> None:
    """The sigma -> infinity sanity half of property 14 (real generator, fixed seed): at sigma = 1e6 every
    release is off its pre-noise statistic by the order of its declared noise std (the norm of d or
    d(d+1)/2 standard normals is below 0.1 with probability < 1e-3), and Algorithm 5's output is far
    from the noiseless pass."""
    d, sig, N = 3, 1e6, 400
    rng = np.random.default_rng(0)
    X, y = _problem(10 * N, d, 6)
    U = np.eye(d)
    M, Delta, std = normalization_release(U, X[:N], sig, rng)
    assert std == pytest.approx(sig * Delta) and Delta > 0
    assert np.linalg.norm(M - normalization_moment(U, X[:N])) >= 0.1 * std
    w = np.zeros(d)
    g, sens, std = gradient_release(U, w, X[:N], y[:N], IDENTITY, sig, rng)
    assert std == pytest.approx(sig * sens) and sens == pytest.approx(4.0 / N)
    assert (
        np.linalg.norm(g - reweighted_gradient(U, w, X[:N], y[:N], IDENTITY).mean(0)) >= 0.1 * std
    )
    a = ImproperBatchSGD(1e-6, K=10).fit(X, y, 0).theta
    b = ImproperBatchSGD(math.inf, K=10).fit(X, y, 0).theta
    assert np.linalg.norm(a - b) > 100.0


# ---------------------------------------------------------------------------------------------
# property 16 / spec 4.1 (a)-(b): the fitted U meets the Eq. (1) bounds E||U phi|| <= d, sqrt(d)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode, n", [("jdp", 10_000), ("ldp", 20_000)])
def test_fitted_u_mean_norm_is_at_most_d(mode: str, n: int) -> None:
    """Algorithm 2 / 8 with defaults and c_b = 1 (the coverage test's setting: d = 3, scales e^0 .. e^-3,
    epsilon = 0.9), 8 seeds, p approximated by 20000 held-out covariates:

    * ``E_p ||U phi|| = tr(Sigma_lambda(U) - lambda U)`` (the identity behind spec 4.1 (a));
    * ``E_p ||U phi|| <= d`` with 5 standard errors of the held-out mean to spare (the spec's bound at
      Eq. (1); the existing coverage test only checks ``2d``);
    * ``max_v E_p |<U phi, v>| <= sqrt(d)``: certified for all unit v by
      ``E|<U phi, v>| <= sqrt(v^T (Sigma - lambda U) v  E||U phi||)`` (Cauchy-Schwarz), plus 200 random v.
    """
    d = 3
    for seed in range(8):
        rng = np.random.default_rng([seed, 41])
        theta = unit(d, rng)
        X = covariates(n, d, 3.0, rng)
        e = ReweightedRegression(0.9, mode=mode).fit(X, rademacher(X @ theta, rng), rng)
        U, lam = e.width_matrix, e.resolved["lam"]
        Xt = covariates(20_000, d, 3.0, rng)
        norms = np.linalg.norm(Xt @ U, axis=1)
        S = population_sigma(U, Xt, lam)
        assert norms.mean() == pytest.approx(np.trace(S - lam * U), rel=1e-10)
        assert norms.mean() + 5 * norms.std(ddof=1) / math.sqrt(norms.size) <= d
        M_ = S - lam * U
        assert math.sqrt(np.linalg.eigvalsh(M_)[-1] * norms.mean()) <= math.sqrt(d)
        V = rng.normal(size=(200, d))
        V /= np.linalg.norm(V, axis=1, keepdims=True)
        assert np.abs(Xt @ U @ V.T).mean(axis=0).max() <= math.sqrt(d)


# ---------------------------------------------------------------------------------------------
# property 17 over the spec's full range n in [2e4, 2e6]
# ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_l1_error_slope_over_two_decades() -> None:
    """Algorithm 2 (epsilon = 0.9, d = 4, isotropic, defaults), 5 seeds at n = 2e4, 2e5, 2e6: the seed-averaged
    L1 error (20000 held-out covariates) falls at every step by more than 3 standard errors of the
    difference (SE from the seed spread), and the least-squares log-log slope lies in [-0.75, -0.35].
    Observed: 0.114, 0.031, 0.011 (slope -0.50); about 9 s."""
    d, ns = 4, (20_000, 200_000, 2_000_000)
    means, ses = [], []
    for n in ns:
        errs = []
        for seed in range(5):
            rng = np.random.default_rng([seed, n])
            theta = unit(d, rng)
            X = covariates(n, d, 0.0, rng)
            est = ReweightedRegression(0.9).fit(X, rademacher(X @ theta, rng), rng)
            Xt = covariates(20_000, d, 0.0, rng)
            errs.append(float(np.mean(np.abs(Xt @ (est.theta - theta)))))
        means.append(float(np.mean(errs)))
        ses.append(float(np.std(errs, ddof=1) / math.sqrt(len(errs))))
    for k in range(len(ns) - 1):
        assert means[k] - means[k + 1] > 3 * math.hypot(ses[k], ses[k + 1]), (means, ses)
    slope = float(np.polyfit(np.log(ns), np.log(means), 1)[0])
    assert -0.75 <= slope <= -0.35, (slope, means)


# ---------------------------------------------------------------------------------------------
# property 22: per-epoch regret of the non-private twin in the E2 setup
# ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_per_epoch_regret_strictly_decreases_over_the_last_three_epochs() -> None:
    """Spec item 22 as stated: E2 setup (d = 4, A = 10, features z/||z|| with z ~ N(0, diag(s^2)),
    s_i = exp(-3 (i-1)/(d-1)), Rademacher rewards), non-private Algorithm 3 with c_b = 0.1, T_1 = 4096,
    T = 2^19 (8 doubling epochs), seed 0, one replication (about 200 s).

    Within an epoch the policy is fixed and contexts are i.i.d., so the per-round regrets are i.i.d.; the
    epoch mean's standard error is taken from the spread of 256-round block means.  Asserted:

    * over the last three epochs the per-round regret strictly decreases, each drop larger than 3 standard
      errors of the difference;
    * the last epoch's per-round regret is at most 0.75x that of the uniform-over-spanner policy (the first
      epoch, played before any estimate exists), with 3 standard errors on each side.

    Observed: 0.867 (epoch 1) ... 0.866 -> 0.582 -> 0.381 -> 0.282 (SE <= 0.0035)."""
    d, T, first, block = 4, 2**19, 4096, 256
    cov = np.diag(np.exp(-3.0 * np.arange(d) / (d - 1)) ** 2)
    env = pb.SyntheticEnv(
        d=d, K=10, contexts="gaussian_normalized", context_cov=cov, noise="rademacher"
    )
    res = pb.simulate(
        pb.make("chen-elim", c_b=0.1, first_epoch=first),
        env,
        horizon=T,
        replications=1,
        seed=0,
        checkpoints=np.arange(block, T + 1, block),
    )
    assert res.checkpoints.tolist() == list(range(block, T + 1, block))
    per_round = np.diff(res.regret[0], prepend=0.0) / block
    ends = epoch_ends(T, first)
    assert ends.tolist() == [first * 2**j for j in range(8)]
    means, ses = [], []
    start = 0
    for end in ends:
        b = per_round[start // block : end // block]
        means.append(float(b.mean()))
        ses.append(float(b.std(ddof=1) / math.sqrt(b.size)))
        start = int(end)
    for j in (-3, -2):
        assert means[j] - means[j + 1] > 3 * math.hypot(ses[j], ses[j + 1]), (means, ses)
    assert means[-1] + 3 * ses[-1] <= 0.75 * (means[0] - 3 * ses[0]), (means, ses)
