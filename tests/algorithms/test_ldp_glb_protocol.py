"""Han et al. (2021): trust boundary, Algorithm 2 mechanics, drivers, input validation (spec section
7, items 10-14; issue "Engine v2", points 3-4).

Two-sample checks use scipy's KS test at alpha = 1e-3 with fixed seeds.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from privbandits.algorithms import make
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.algorithms.ldp_glb import LDPOLS, LDPSGD
from privbandits.core.errors import DataBoundError, TrustBoundaryError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.envs import SyntheticEnv
from privbandits.envs.base import Chunk
from privbandits.simulate import simulate

#: Every preset and every option that changes the code path, per algorithm.
CONFIGS = [
    ("ldp-ols", {}),
    (
        "ldp-ols",
        {"gaussian_calibration": "classic", "warmup_full_budget": True, "shift_scale": 0.5},
    ),
    ("ldp-ols", {"preset": "paper", "h": 0.4, "warmup_order": "blocks"}),
    ("ldp-ols", {"preset": "authors_code"}),
    ("ldp-sgd", {}),
    ("ldp-sgd", {"preset": "paper", "warmup_full_budget": True, "h": 0.4}),
    ("ldp-sgd", {"preset": "authors_code"}),
    (
        "ldp-sgd",
        {
            "synthetic_update": "joint",
            "init": "random_unit",
            "ridge": 0.1,
            "project_radius": 1.0,
            "step_schedule": "inv_sqrt_t",
            "warmup_order": "blocks",
        },
    ),
    ("ldp-sgd", {"sgd_warmup": "ols", "joint_radius": "d", "synthetic_update": "joint"}),
]


def _make(name: str, kwargs: dict, setting: str, **extra):  # type: ignore[no-untyped-def]
    return make(name, epsilon=2.0, **({"s0": 5} if setting == "multi" else {}), **kwargs, **extra)


def _simulate(alg, setting: str, engine: str, T: int = 200, R: int = 3, seed: int = 3, env=None):  # type: ignore[no-untyped-def]
    env = env or SyntheticEnv(d=2, K=4 if setting == "single" else 3, setting=setting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        return simulate(alg, env, T, replications=R, seed=seed, engine=engine, checkpoints=10)


# ------------------------------------------------------------------------------------------------
# drivers: reference == compiled, determinism
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, kwargs", CONFIGS)
@pytest.mark.parametrize("setting", ["single", "multi"])
def test_reference_equals_compiled(name: str, kwargs: dict, setting: str) -> None:
    """Issue point 4: the message-level reference driver and the compiled loop run the same steps on
    the same streams: equal trajectories (regret, reward, estimation error, final estimates)."""
    runs = {}
    for engine in ("reference", "compiled"):
        alg = _make(name, kwargs, setting)
        res = _simulate(alg, setting, engine)
        assert res.engine == engine
        runs[engine] = (res, np.array(alg.estimate()))
    (ref, th_ref), (com, th_com) = runs["reference"], runs["compiled"]
    for key in ("regret", "reward", "estimation_error"):
        np.testing.assert_allclose(
            getattr(com, key), getattr(ref, key), rtol=0, atol=1e-9, err_msg=key
        )
    np.testing.assert_allclose(th_com, th_ref, rtol=0, atol=1e-9)
    assert np.all(np.isfinite(th_ref))


@pytest.mark.parametrize(
    "name, kwargs", [CONFIGS[0], CONFIGS[4], ("greedy-ols", {}), ("greedy-sgd", {})]
)
@pytest.mark.parametrize("setting", ["single", "multi"])
def test_same_seed_same_trajectory(name: str, kwargs: dict, setting: str) -> None:
    """Spec 7.14: identical seeds give bit-identical results; another seed differs."""
    runs = [
        _simulate(
            make(name, **kwargs, **({"s0": 5} if setting == "multi" else {})),
            setting,
            "compiled",
            T=300,
            R=2,
            seed=s,
        )
        for s in (4, 4, 5)
    ]
    assert np.array_equal(runs[0].regret, runs[1].regret)
    assert np.array_equal(runs[0].estimation_error, runs[1].estimation_error)
    assert not np.array_equal(runs[0].estimation_error, runs[2].estimation_error)


# ------------------------------------------------------------------------------------------------
# trust boundary
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, kwargs", CONFIGS)
@pytest.mark.parametrize("setting", ["single", "multi"])
def test_server_receives_only_privatized_messages(name: str, kwargs: dict, setting: str) -> None:
    """Spec 7.10-7.11: every server call gets the round index and a PrivatizedMessage of the
    kernel's randomizer; in the multi main phase the message has K slots of identical shape, in the
    warm-up only the public arm's slot is non-zero (the others carry no message)."""
    alg = _make(name, kwargs, setting)
    calls: list[tuple[int, PrivatizedMessage]] = []

    def install() -> None:
        inner = alg.server.receive
        alg.server.receive = lambda t, m: (calls.append((t, m)), inner(t, m))[1]  # type: ignore[method-assign]

    orig_reset = alg.reset
    alg.reset = lambda spec, R, streams: (orig_reset(spec, R, streams), install())[0]  # type: ignore[method-assign]
    T, R = 60, 3
    _simulate(alg, setting, "reference", T=T, R=R)
    assert [t for t, _ in calls] == list(range(T))
    K, n_warm = alg.spec.K, alg.resolved_params()["n_warmup"]
    for t, msg in calls:
        assert isinstance(msg, PrivatizedMessage) and msg.mechanism == alg.kernel.message.mechanism
        assert set(msg.payload) <= {"M", "u", "z"}
        for arr in msg.payload.values():
            assert arr.dtype == np.float64 and arr.shape[0] == R and np.all(np.isfinite(arr))
        if setting == "multi":
            assert all(v.shape[1] == K for v in msg.payload.values())
            if t < n_warm:
                arm = (
                    t % K if alg.warmup_order == "round_robin" else t // alg.resolved_params()["s0"]
                )
                for v in msg.payload.values():
                    others = np.delete(v, arm, axis=1)
                    assert not others.any()


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((3, 2)),
        {"M": np.zeros((3, 2, 2)), "u": np.zeros((3, 2))},
        1,
        (np.zeros((3, 2)), np.zeros(3)),
    ],
)
def test_server_rejects_raw_data(bad: object) -> None:
    """Spec 7.10: raw contexts, rewards, arm indices or bare dicts raise TrustBoundaryError."""
    for alg in (LDPOLS(), LDPSGD()):
        alg.reset(EnvSpec(d=2, K=3, horizon=100), 3, make_streams(0))
        with pytest.raises(TrustBoundaryError):
            alg.server.receive(0, bad)  # type: ignore[arg-type]


def test_server_rejects_foreign_mechanism_and_keys() -> None:
    alg = LDPOLS()
    alg.reset(EnvSpec(d=2, K=3, horizon=100), 3, make_streams(0))
    with pytest.raises(TrustBoundaryError, match="randomizer"):
        alg.server.receive(0, PrivatizedMessage({"z": np.zeros((3, 2))}, "han2021-l2-ball"))
    mech = alg.kernel.message.mechanism
    extra = {"M": np.zeros((3, 2, 2)), "u": np.zeros((3, 2)), "x": np.zeros((3, 2))}
    with pytest.raises(TrustBoundaryError, match="keys"):
        alg.server.receive(0, PrivatizedMessage(extra, mech))


def test_public_state_is_read_only_and_holds_only_estimates() -> None:
    alg = LDPOLS(s0=2)
    alg.reset(EnvSpec(d=2, K=3, setting="multi", horizon=100), 2, make_streams(0))
    public = alg.server.public_state()
    assert isinstance(public, PublicState) and set(public) == {"theta", "theta_warm"}
    with pytest.raises(ValueError):
        public["theta"][0, 0, 0] = 1.0
    single = LDPSGD()
    single.reset(EnvSpec(d=2, K=3, horizon=100), 2, make_streams(0))
    assert set(single.server.public_state()) == {"theta"}


# ------------------------------------------------------------------------------------------------
# user inputs (issue point 3)
# ------------------------------------------------------------------------------------------------
class _PoisonedEnv(SyntheticEnv):
    """Round 2 of replication 1 carries an infinite context entry or a NaN reward."""

    def __init__(self, what: str, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(**kw)
        self.what = what

    def next_chunk(self) -> Chunk:
        ch = super().next_chunk()
        if ch.t0 == 0:
            if self.what == "context":
                ch.X[2, 1, ...] = np.inf
            else:
                ch.rewards[2, 1, :] = np.nan
        return ch


@pytest.mark.parametrize("name", ["ldp-ols", "ldp-sgd"])
@pytest.mark.parametrize(
    "what, match", [("context", "contexts contain"), ("reward", "rewards contain")]
)
@pytest.mark.parametrize("engine", ["reference", "compiled"])
@pytest.mark.parametrize("setting", ["single", "multi"])
def test_non_finite_user_data_is_rejected(
    name: str, what: str, match: str, engine: str, setting: str
) -> None:
    """An infinite context or a NaN reward raises a clear DataBoundError before it is randomized,
    under both drivers (it used to become a NaN message)."""
    env = _PoisonedEnv(what, d=2, K=4 if setting == "single" else 3, setting=setting)
    with pytest.raises(DataBoundError, match=match):
        _simulate(_make(name, {}, setting), setting, engine, T=20, env=env)


@pytest.mark.parametrize("alg", [LDPOLS(), LDPSGD()])
def test_client_rejects_bad_inputs_directly(alg) -> None:  # type: ignore[no-untyped-def]
    alg.reset(EnvSpec(d=2, K=2, horizon=100), 1, make_streams(0))
    public = alg.server.public_state()
    X = np.array([[[0.6, 0.8], [1.0, 0.0]]])
    rng = np.random.default_rng(0)
    with pytest.raises(DataBoundError, match="NaN"):
        alg.client.randomize(0, public, X, np.array([0]), np.array([np.nan]), rng)
    with pytest.raises(DataBoundError, match="NaN or infinite"):
        alg.client.randomize(
            0, public, np.where(X > 0.7, np.inf, X), np.array([0]), np.array([0.1]), rng
        )
    with pytest.raises(DataBoundError, match="context_bound"):
        alg.client.randomize(0, public, 2 * X, np.array([0]), np.array([0.1]), rng)
    out = alg.client.randomize(
        0, public, X, np.array([0]), np.array([5.0]), rng
    )  # rewards are clipped
    assert all(np.all(np.isfinite(v)) for v in out.payload.values())


# ------------------------------------------------------------------------------------------------
# Algorithm 2: synthetic updates, warm-up, elimination
# ------------------------------------------------------------------------------------------------
def _main_phase_slots(alg, X_const: bool, n: int, seed: int) -> tuple[dict, dict]:  # type: ignore[no-untyped-def]
    """Arm 2's slot (unpulled) and arm 0's slot (pulled) in n main-phase messages."""
    spec = EnvSpec(d=2, K=3, setting="multi", horizon=10**6)
    alg.reset(spec, n, make_streams(seed))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    X *= rng.random((n, 1)) / np.linalg.norm(X, axis=1, keepdims=True)  # varying, in the unit ball
    if X_const:
        X = np.tile([0.6, 0.8], (n, 1))
    r = np.full(n, 1.0) if X_const else rng.uniform(-1, 1, n)
    t = alg.resolved_params()["n_warmup"]  # first main-phase round
    msg = alg.client.randomize(t, alg.server.public_state(), X, np.zeros(n, dtype=int), r, rng)
    return {k: v[:, 2] for k, v in msg.payload.items()}, {
        k: v[:, 0] for k, v in msg.payload.items()
    }


@pytest.mark.parametrize(
    "factory", [lambda: LDPSGD(epsilon=1.0, s0=1), lambda: LDPOLS(epsilon=1.0, s0=1)]
)
def test_synthetic_messages_do_not_depend_on_the_data(factory) -> None:  # type: ignore[no-untyped-def]
    """Spec 7.11: an unpulled arm's messages have mean 0 (5 se) and the same law for constant or
    varying (X, r) (KS, alpha = 1e-3); the pulled slot carries the real statistic at x = (0.6, 0.8),
    r = 1, theta = 0 (mean x x^T, x, and -x for SGD; 5 se)."""
    n = 20_000
    syn_const, real_const = _main_phase_slots(factory(), True, n, 1)
    syn_var, _ = _main_phase_slots(factory(), False, n, 2)
    x = np.array([0.6, 0.8])
    for key, a in syn_const.items():
        flat_a, flat_b = a.reshape(n, -1), syn_var[key].reshape(n, -1)
        assert np.all(np.abs(flat_a.mean(0)) < 5 * flat_a.std(0) / np.sqrt(n))
        for j in range(flat_a.shape[1]):
            assert stats.ks_2samp(flat_a[:, j], flat_b[:, j]).pvalue > 1e-3
        want = {"M": np.outer(x, x), "u": x, "z": -x}[key].ravel()
        real = real_const[key].reshape(n, -1)
        assert np.all(np.abs(real.mean(0) - want) < 5 * real.std(0) / np.sqrt(n))


@pytest.mark.parametrize("order", ["round_robin", "blocks"])
@pytest.mark.parametrize("name", ["ldp-ols", "ldp-sgd"])
def test_warmup_schedule_and_frozen_estimates(order: str, name: str) -> None:
    """Spec 7.12: s0 pulls per arm in the public order; unpulled arms' estimates unchanged during
    the warm-up; Theta_warm frozen at K s0 (zeros before) and never changed afterwards."""
    K, s0, R, T = 3, 4, 2, 30
    env = SyntheticEnv(d=2, K=K, setting="multi")
    alg = make(name, epsilon=2.0, s0=s0, warmup_order=order)
    spec = env.reset(R, make_streams(0), T)
    alg.reset(spec, R, make_streams(0))
    pulls, snapshots = [], []
    for t in range(T):
        X = env.next_round()
        public = alg.server.public_state()
        a = alg.client.choose(t, public, X, alg.streams.policy)
        before = np.array(public["theta"])
        r = env.pull(a)
        alg.server.receive(t, alg.client.randomize(t, public, X, a, r, alg.streams.client))
        after = alg.server.public_state()["theta"]
        changed = np.any(after != before, axis=(0, 2))
        if t < K * s0:
            assert np.all(a == a[0])
            pulls.append(int(a[0]))
            if (
                name == "ldp-sgd"
            ):  # OLS re-solves every arm (the shift moves with t); SGD steps one arm
                assert changed.tolist() == [k == a[0] for k in range(K)]
        else:
            assert changed.all()  # every arm updated (synthetic messages)
        snapshots.append(np.array(alg.server.public_state()["theta_warm"]))
    expected = (
        [t % K for t in range(K * s0)]
        if order == "round_robin"
        else [t // s0 for t in range(K * s0)]
    )
    assert pulls == expected
    frozen = snapshots[K * s0 - 1]
    assert np.any(frozen != 0)
    assert all(np.array_equal(s, frozen) for s in snapshots[K * s0 - 1 :])
    assert all(not np.any(s) for s in snapshots[: K * s0 - 1])
    if name == "ldp-ols":  # the warm-up statistics only reach the public arm's accumulator
        S_M = alg.kernel.server[0]
        assert np.all(np.any(S_M != 0, axis=(2, 3)))


def _eliminated_choice(
    h: float | None, n: int = 400, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Main-phase choices of n users with random public theta, theta_warm and contexts."""
    alg = LDPOLS(epsilon=5.0, s0=1, h=h)
    alg.reset(EnvSpec(d=2, K=4, setting="multi", horizon=1000), n, make_streams(seed))
    rng = np.random.default_rng(seed)
    theta, warm = alg.kernel.public
    theta[:] = rng.standard_normal(theta.shape)
    warm[:] = rng.standard_normal(warm.shape)
    X = rng.standard_normal((n, 2))
    a = alg.client.choose(4, alg.server.public_state(), X, np.random.default_rng(1))
    return a, np.einsum("rd,rkd->rk", X, warm), np.einsum("rd,rkd->rk", X, theta)


def test_elimination_rule() -> None:
    """Spec 7.13 / eq. (4.1): the chosen arm maximizes x^T theta over K_hat = {a : w_a > max w -
    h/2} (w = warm-up scores, linear link); h = None keeps every arm; a tiny h keeps only the
    warm-up argmax; the warm-up argmax is always kept."""
    a, w, s = _eliminated_choice(None)
    assert np.array_equal(a, s.argmax(1))
    a, w, s = _eliminated_choice(1e-12)
    assert np.array_equal(a, w.argmax(1))
    for h in (0.3, 1.0, 2.0):
        a, w, s = _eliminated_choice(h)
        kept = (w > w.max(1, keepdims=True) - h / 2) | (w >= w.max(1, keepdims=True))
        assert np.all(kept[np.arange(len(a)), w.argmax(1)])
        assert np.array_equal(a, np.where(kept, s, -np.inf).argmax(1))


def test_warmup_choice_is_public_and_uses_no_randomness() -> None:
    alg = LDPSGD(s0=2, warmup_order="blocks")
    alg.reset(EnvSpec(d=2, K=3, setting="multi", horizon=100), 5, make_streams(0))
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    for t in range(6):
        a = alg.client.choose(t, alg.server.public_state(), rng.standard_normal((5, 2)), rng)
        assert np.all(a == t // 2)
    rng2 = np.random.default_rng(0)
    rng2.bit_generator.state = state
    rng2.standard_normal((6, 5, 2))
    assert rng.bit_generator.state == rng2.bit_generator.state


def test_ties_are_broken_uniformly() -> None:
    """Spec 8.26: with theta = 0 all K scores tie; the first choice is uniform over arms
    (chi-square goodness of fit over 20000 users and 5 arms, alpha = 1e-3); without ties the choice
    is the argmax and consumes no randomness."""
    alg = LDPSGD()
    R, K = 20_000, 5
    alg.reset(EnvSpec(d=2, K=K, horizon=10), R, make_streams(0))
    X = np.random.default_rng(0).standard_normal((R, K, 2))
    a = alg.client.choose(0, alg.server.public_state(), X, np.random.default_rng(1))
    assert stats.chisquare(np.bincount(a, minlength=K)).pvalue > 1e-3
    alg.kernel.public[0][:] = [1.0, 0.0]
    rng = np.random.default_rng(1)
    b = alg.client.choose(1, alg.server.public_state(), X, rng)
    assert np.array_equal(b, X[..., 0].argmax(axis=1))
    assert rng.bit_generator.state == np.random.default_rng(1).bit_generator.state
