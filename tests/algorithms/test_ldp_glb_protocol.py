"""Han et al. (2021): trust boundary, Algorithm 2 mechanics, determinism (spec section 7, items
10-14).

Two-sample checks use scipy's KS test at alpha = 1e-3 with fixed seeds.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privbandits.algorithms import make
from privbandits.algorithms.ldp_glb import LDPOLS, LDPSGD
from privbandits.algorithms.ldp_glb.multi import eliminate
from privbandits.core.errors import TrustBoundaryError
from privbandits.core.links import IDENTITY
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.envs import SyntheticEnv
from privbandits.simulate import simulate

ALGS = [
    ("ldp-ols", {}),
    ("ldp-sgd", {}),
    ("ldp-sgd", {"preset": "authors_code"}),
    ("ldp-ols", {"preset": "paper"}),
]


class _Recorder:
    """Wraps a server's ``receive`` and records everything that crosses the boundary."""

    def __init__(self, alg) -> None:
        self.calls: list[tuple[tuple, dict]] = []
        inner = alg.server.receive

        def receive(*args, **kwargs):
            self.calls.append((args, kwargs))
            return inner(*args, **kwargs)

        alg.server.receive = receive


def _run_recorded(name: str, kwargs: dict, setting: str, T: int = 60, R: int = 3):
    K = 4 if setting == "single" else 3
    env = SyntheticEnv(d=2, K=K, setting=setting)
    alg = (
        make(name, epsilon=1.0, s0=5, **kwargs)
        if setting == "multi"
        else make(name, epsilon=1.0, **kwargs)
    )
    holder: dict = {}
    orig_reset = alg.reset

    def reset(spec, replications, streams):
        orig_reset(spec, replications, streams)
        holder["rec"] = _Recorder(alg)

    alg.reset = reset  # type: ignore[method-assign]
    simulate(alg, env, T, replications=R, seed=3)
    return alg, holder["rec"]


@pytest.mark.parametrize("name, kwargs", ALGS)
@pytest.mark.parametrize("setting", ["single", "multi"])
def test_server_receives_only_privatized_messages(name: str, kwargs: dict, setting: str) -> None:
    """Spec 7.10-7.11: every argument is the round index or a PrivatizedMessage with privatized keys
    only.
    """
    alg, rec = _run_recorded(name, kwargs, setting)
    assert len(rec.calls) == 60
    K, R = alg.spec.K, alg.R
    for i, (args, kw) in enumerate(rec.calls):
        assert not kw
        t, msg = args
        assert isinstance(t, int) and isinstance(msg, PrivatizedMessage)
        assert set(msg.payload) in ({"M", "u"}, {"z"})
        for arr in msg.payload.values():
            assert arr.dtype == np.float64 and arr.shape[0] == R
        if setting == "multi" and i >= 5 * K:  # main phase: K slots in arm order, identical shapes
            shapes = {k: v.shape for k, v in msg.payload.items()}
            assert all(s[1] == K for s in shapes.values())
        if setting == "multi" and i < 5 * K:  # warm-up: one message, no slot axis
            assert all(v.shape[1] == 2 for v in msg.payload.values())


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
    mech = alg.client.randomizer.mechanism
    with pytest.raises(TrustBoundaryError, match="keys"):
        alg.server.receive(
            0,
            PrivatizedMessage(
                {"M": np.zeros((3, 2, 2)), "u": np.zeros((3, 2)), "x": np.zeros((3, 2))}, mech
            ),
        )


def _client(alg, spec: EnvSpec):
    alg.reset(spec, 1, make_streams(0))
    return alg.client, alg.server.public_state()


def test_ols_payload_depends_on_data_only_through_the_statistic() -> None:
    """Replacing (x, r) changes M and u by exactly x x^T - x' x'^T and r x - r' x' (same noise
    stream).
    """
    client, public = _client(LDPOLS(), EnvSpec(d=3, K=2, horizon=100))
    X1 = np.array([[[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]]])
    X2 = np.array([[[0.0, 0.6, -0.8], [1.0, 0.0, 0.0]]])
    a = np.array([0])
    m1 = client.randomize(0, public, X1, a, np.array([0.3]), np.random.default_rng(8))
    client2, _ = _client(LDPOLS(), EnvSpec(d=3, K=2, horizon=100))
    m2 = client2.randomize(0, public, X2, a, np.array([-0.9]), np.random.default_rng(8))
    x1, x2 = X1[0, 0], X2[0, 0]
    assert np.allclose(m1["M"][0] - m2["M"][0], np.outer(x1, x1) - np.outer(x2, x2))
    assert np.allclose(m1["u"][0] - m2["u"][0], 0.3 * x1 + 0.9 * x2)


def test_sgd_payload_depends_on_data_only_through_the_side() -> None:
    """Same noise stream: the l2-ball output keeps its norm and direction line; only the side can
    change.
    """
    spec = EnvSpec(d=2, K=2, horizon=100)
    outs = []
    for X, r in [
        (np.array([[[0.6, 0.8], [1.0, 0.0]]]), 0.9),
        (np.array([[[-1.0, 0.0], [0.0, 1.0]]]), -0.2),
    ]:
        client, public = _client(LDPSGD(), spec)
        outs.append(
            client.randomize(0, public, X, np.array([0]), np.array([r]), np.random.default_rng(4))[
                "z"
            ][0]
        )
    assert np.linalg.norm(outs[0]) == pytest.approx(np.linalg.norm(outs[1]))
    assert np.allclose(outs[0], outs[1]) or np.allclose(outs[0], -outs[1])


def _unpulled_stream(alg, X_const: bool, n: int, seed: int) -> np.ndarray:
    """Arm 2's slot in n main-phase messages, while arm 0 is always pulled."""
    spec = EnvSpec(d=2, K=3, setting="multi", horizon=10**6)
    alg.reset(spec, n, make_streams(seed))
    client, public = alg.client, alg.server.public_state()
    rng = np.random.default_rng(seed)
    X = np.tile([0.6, 0.8], (n, 1)) if X_const else rng.standard_normal((n, 2)) / 2
    r = np.full(n, 1.0) if X_const else rng.uniform(-1, 1, n)
    t = client.n_warmup  # first main-phase round
    msg = client.randomize(t, public, X, np.zeros(n, dtype=int), r, rng)
    return {k: v[:, 2] for k, v in msg.payload.items()}, {
        k: v[:, 0] for k, v in msg.payload.items()
    }


@pytest.mark.parametrize(
    "alg_factory", [lambda: LDPSGD(epsilon=1.0, s0=1), lambda: LDPOLS(epsilon=1.0, s0=1)]
)
def test_synthetic_messages_do_not_depend_on_the_data(alg_factory) -> None:
    """Spec 7.11: an unpulled arm's messages have mean 0 and the same law for constant or varying
    (X, r),
    which is the law of the randomizer on (0, 0) (KS two-sample tests, alpha = 1e-3)."""
    n = 20_000
    syn_const, real_const = _unpulled_stream(alg_factory(), True, n, 1)
    syn_var, _ = _unpulled_stream(alg_factory(), False, n, 2)
    alg = alg_factory()
    alg.reset(EnvSpec(d=2, K=3, setting="multi", horizon=10**6), n, make_streams(5))
    ref = alg.client.main.privatize_reference(
        np.zeros((n, 2)), np.zeros(n), np.zeros((n, 2)), np.random.default_rng(5)
    )
    for key, a in syn_const.items():
        flat_a, flat_b, flat_r = (
            a.reshape(n, -1),
            syn_var[key].reshape(n, -1),
            ref[key].reshape(n, -1),
        )
        se = flat_a.std(0) / np.sqrt(n)
        assert np.all(np.abs(flat_a.mean(0)) < 5 * se)  # mean 0: 5-se bound
        for j in range(flat_a.shape[1]):
            assert stats.ks_2samp(flat_a[:, j], flat_b[:, j]).pvalue > 1e-3
            assert stats.ks_2samp(flat_a[:, j], flat_r[:, j]).pvalue > 1e-3
        # the pulled slot carries the real statistic at x = (0.6, 0.8), r = 1, theta = 0 (5-se
        # bound)
        x = np.array([0.6, 0.8])
        want = {"M": np.outer(x, x), "u": x, "z": (0.0 - 1.0) * x}[key].ravel()
        real = real_const[key].reshape(n, -1)
        assert np.all(np.abs(real.mean(0) - want) < 5 * real.std(0) / np.sqrt(n))


@pytest.mark.parametrize("order", ["round_robin", "blocks"])
def test_warmup_schedule_and_frozen_estimates(order: str) -> None:
    """Spec 7.12: s0 pulls per arm in the public order; unpulled arms unchanged; Theta_warm frozen
    at K s0.
    """
    K, s0, R, T = 3, 4, 2, 30
    env = SyntheticEnv(d=2, K=K, setting="multi")
    alg = LDPOLS(epsilon=2.0, s0=s0, warmup_order=order)
    spec = env.reset(R, make_streams(0), T)
    alg.reset(spec, R, make_streams(0))
    pulls, snapshots = [], []
    for t in range(T):
        X = env.next_round()
        public = alg.server.public_state()
        a = alg.client.choose(t, public, X, alg.streams.policy)
        S_before = alg.server.est.S_M.copy()
        r = env.pull(a)
        alg.server.receive(t, alg.client.randomize(t, public, X, a, r, alg.streams.client))
        if t < K * s0:
            assert np.all(a == a[0])
            pulls.append(int(a[0]))
            changed = np.any(alg.server.est.S_M != S_before, axis=(0, 2, 3))
            assert changed.tolist() == [k == a[0] for k in range(K)]
        else:
            assert np.all(np.any(alg.server.est.S_M != S_before, axis=(2, 3)))  # every arm updated
        snapshots.append(alg.server.public_state()["theta_warm"].copy())
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


def test_elimination_rule() -> None:
    """Spec 7.13: the warm-up argmax is always kept; h=None keeps all; tiny h keeps the argmax."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 2))
    theta = rng.standard_normal((200, 4, 2))
    w = np.einsum("rd,rkd->rk", X, theta)
    assert np.all(eliminate(X, theta, IDENTITY, None))
    for h in (1e-9, 0.5, 2.0):
        kept = eliminate(X, theta, IDENTITY, h)
        assert np.all(kept[np.arange(200), w.argmax(1)])
        assert np.array_equal(kept, w > w.max(1, keepdims=True) - h / 2)
    assert np.all(eliminate(X, theta, IDENTITY, 1e-12).sum(1) == 1)


def test_elimination_restricts_choices_in_the_main_phase() -> None:
    """A client with h set never picks an arm outside K_hat_t (from the public theta_warm)."""
    alg = LDPOLS(epsilon=5.0, s0=3, h=0.3)
    env = SyntheticEnv(d=2, K=3, setting="multi")
    R, T = 50, 40
    spec = env.reset(R, make_streams(1), T)
    alg.reset(spec, R, make_streams(1))
    for t in range(T):
        X = env.next_round()
        public = alg.server.public_state()
        a = alg.client.choose(t, public, X, alg.streams.policy)
        if t >= 9:
            kept = eliminate(X, public["theta_warm"], IDENTITY, 0.3)
            assert np.all(kept[np.arange(R), a])
        r = env.pull(a)
        alg.server.receive(t, alg.client.randomize(t, public, X, a, r, alg.streams.client))


@pytest.mark.parametrize("name, kwargs", ALGS + [("greedy-ols", {}), ("greedy-sgd", {})])
@pytest.mark.parametrize("setting", ["single", "multi"])
def test_same_seed_same_trajectory(name: str, kwargs: dict, setting: str) -> None:
    """Spec 7.14: identical seeds give bit-identical results; another seed differs."""
    K = 5 if setting == "single" else 3
    runs = [
        simulate(
            make(name, **kwargs),
            SyntheticEnv(d=2, K=K, setting=setting),
            300,
            replications=2,
            seed=s,
        )
        for s in (4, 4, 5)
    ]
    assert np.array_equal(runs[0].regret, runs[1].regret)
    assert np.array_equal(runs[0].estimation_error, runs[1].estimation_error)
    assert not np.array_equal(runs[0].estimation_error, runs[2].estimation_error)


def test_public_state_is_read_only_and_holds_no_raw_data() -> None:
    alg = LDPOLS(s0=2)
    alg.reset(EnvSpec(d=2, K=3, setting="multi", horizon=100), 2, make_streams(0))
    public = alg.server.public_state()
    assert isinstance(public, PublicState) and set(public) == {"theta", "theta_warm"}
    with pytest.raises(ValueError):
        public["theta"][0, 0, 0] = 1.0


def test_ties_are_broken_uniformly() -> None:
    """Spec 8.26: with theta = 0 all K scores tie; the first choice is uniform over arms.

    Chi-square goodness of fit over 20000 replications and 5 arms, alpha = 1e-3.
    """
    alg = LDPSGD()
    R, K = 20_000, 5
    alg.reset(EnvSpec(d=2, K=K, horizon=10), R, make_streams(0))
    X = np.random.default_rng(0).standard_normal((R, K, 2))
    a = alg.client.choose(0, alg.server.public_state(), X, np.random.default_rng(1))
    counts = np.bincount(a, minlength=K)
    assert stats.chisquare(counts).pvalue > 1e-3
    # without ties the choice is the argmax
    alg.server.est.theta[:] = [1.0, 0.0]
    alg.server._public = None
    b = alg.client.choose(1, alg.server.public_state(), X, np.random.default_rng(1))
    assert np.array_equal(b, X[..., 0].argmax(axis=1))
