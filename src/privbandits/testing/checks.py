"""The conformance checks, one function per property, each on one :class:`~privbandits.testing.cases.Case`.

Every check raises ``AssertionError`` (a failed property, with a message saying what to fix),
:class:`SkipCheck` (the property does not apply, e.g. no compiled kernel) or
``NotImplementedError`` (a device method of the contract is missing).  They are the checks the
library's own test suite runs on every registered algorithm; :func:`privbandits.testing.check_algorithm`
and :func:`privbandits.testing.parametrize_with_checks` run them on an algorithm of one's own.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm as normal

from privbandits.algorithms import make
from privbandits.algorithms.base import (
    Algorithm,
    Client,
    Curator,
    LocalAlgorithm,
    Server,
    ShuffleAlgorithm,
    Shuffler,
)
from privbandits.algorithms.calibration import Calibration, CalibrationWarning
from privbandits.algorithms.kernel import LocalKernel
from privbandits.core.convex import ConvexSpec
from privbandits.core.errors import NotResetError, TrustBoundaryError, ValidationError
from privbandits.core.links import get_link
from privbandits.core.messages import PrivatizedMessage, PublicState, ShuffledBatch
from privbandits.core.public_space import PublicSpace, PublicStateError, dims_of
from privbandits.core.rng import make_streams
from privbandits.core.spec import SETTINGS, EnvSpec
from privbandits.engine import protocol
from privbandits.engine.aggregate import supports_aggregate
from privbandits.engine.batches import supports_batches
from privbandits.engine.compiled import supports_compiled
from privbandits.privacy.guarantee import TRUST_MODELS, PrivacyGuarantee
from privbandits.simulate import SimulationResult, simulate
from privbandits.testing.cases import BASELINE, Case, constrained, invalid_values
from privbandits.testing.spies import after_reset, record_chunks, spy_on_roles

__all__ = [
    "CHECKS",
    "Check",
    "SkipCheck",
    "check_adversarial_server",
    "check_common_random_numbers",
    "check_default_calibration",
    "check_determinism",
    "check_encode_randomize",
    "check_guarantee",
    "check_invalid_parameters",
    "check_memory_safe_inputs",
    "check_parameter_contract",
    "check_public_space_validation",
    "check_raw_output_rejected",
    "check_reference_equals_compiled",
    "check_trust_boundary",
]

#: Horizon, replications and seeds of the engine comparison.
T_CMP, R_CMP, SEEDS_CMP = 300, 3, (0, 1, 2023)
#: Horizon and replications of the other runs.
T_RUN, R_RUN = 200, 2
#: Attributes that only exist after reset (the constructor must not create them).
STATE_ATTRS = (
    "kernel",
    "_calibration",
    "spec",
    "R",
    "streams",
    "client",
    "server",
    "shuffler",
    "core",
    "collector",
)
#: Family-wise error rate of the statistical checks (Bonferroni over coordinates and moments).
STAT_ALPHA = 1e-6
#: Users of the encode / randomize consistency check.
N_NOISE = 4000


class SkipCheck(Exception):
    """The check does not apply to this algorithm (the reason says why)."""


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence the calibration warning of non-default presets (checked separately)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        yield


def _run(
    case: Case,
    alg: Algorithm | None = None,
    env: Any = None,
    *,
    horizon: int = T_RUN,
    replications: int = R_RUN,
    seed: int = 0,
    engine: str = "auto",
) -> SimulationResult:
    with _quiet():
        return simulate(
            case.make() if alg is None else alg,
            case.make_env() if env is None else env,
            horizon,
            replications=replications,
            seed=seed,
            engine=engine,
            checkpoints=10,
        )


def _reset(
    case: Case, alg: Algorithm, horizon: int = T_RUN, seed: int = 0, R: int = R_RUN
) -> tuple[Any, EnvSpec]:
    """Reset a fresh environment and ``alg`` on it (as simulate does); returns (env, spec)."""
    env = case.make_env()
    streams = make_streams(seed)
    spec = env.reset(R, streams, horizon)
    with _quiet():
        alg.reset(spec, R, streams)
    return env, spec


def _arrays(res: SimulationResult) -> dict[str, np.ndarray]:
    out = {"regret": res.regret, "reward": res.reward}
    if res.estimation_error is not None:
        out["estimation_error"] = res.estimation_error
    return out


def _private(case: Case) -> LocalAlgorithm:
    alg = case.make()
    if not isinstance(alg, LocalAlgorithm):
        raise SkipCheck(f"{case.name} is not a local or shuffle algorithm (no device)")
    return alg


# -- contract --------------------------------------------------------------------------------------
def check_parameter_contract(case: Case) -> None:
    """Every parameter has a constraint, ``get_params`` round-trips, the constructor is cheap, the
    class attributes describe the algorithm."""
    cls = case.cls
    assert isinstance(cls.name, str) and cls.name, (
        "give the algorithm a registry name (class attribute `name`)"
    )
    assert cls.trust_model in TRUST_MODELS, f"trust_model must be one of {TRUST_MODELS}"
    expected = {"local": LocalAlgorithm, "shuffle": ShuffleAlgorithm}.get(cls.trust_model, Curator)
    assert issubclass(cls, expected), f"trust_model={cls.trust_model!r} needs a {expected.__name__}"
    if cls.trust_model == "local":
        assert not issubclass(cls, ShuffleAlgorithm), (
            "a shuffle algorithm declares trust_model='shuffle'"
        )
    assert isinstance(cls.paper, str) and cls.paper, "cite the paper (class attribute `paper`)"
    assert cls.settings and set(cls.settings) <= set(SETTINGS), (
        f"settings {cls.settings} not in {SETTINGS}"
    )
    assert cls.links, "declare the supported links (('*',) = any)"
    for link in cls.links:
        if link != "*":
            assert get_link(link).name == link, f"link {link!r} is an alias; use the canonical name"
    assert cls.test_envs and set(cls.test_envs) <= {"synthetic", "finite", "convex"}, cls.test_envs
    assert isinstance(cls.test_params, tuple) and cls.test_params, (
        "test_params is a non-empty tuple of dicts"
    )
    for p in cls.test_params:
        assert isinstance(p, dict) and set(p) <= set(cls.param_names()), (p, cls.param_names())
    if "finite" in cls.test_envs:
        assert "single" in cls.settings, "a finite action set is a single-parameter problem"
    missing = set(cls.param_names()) - set(cls.all_constraints())
    assert not missing, f"parameters without a declared constraint: {sorted(missing)}"
    alg = case.make()
    params = alg.get_params()
    assert tuple(params) == cls.param_names(), (
        "get_params() must list the constructor parameters in order"
    )
    for key, value in case.params.items():  # the validated value is what was passed (normalized)
        got = params[key]
        assert got == value or (isinstance(value, (int, float)) and math.isclose(got, value)), (
            key,
            got,
            value,
        )
    again = cls(**params)
    assert again.get_params() == params, "get_params() must round-trip through the constructor"
    json.dumps(params)  # stored with every result
    text = repr(alg)
    assert text.startswith(f"{cls.__name__}(") and text.endswith(")"), text
    present = [a for a in STATE_ATTRS if a in vars(alg)]
    assert not present, f"the constructor creates run state {present}; create it in reset()"
    arrays = [k for k, v in vars(alg).items() if isinstance(v, np.ndarray) and k not in params]
    assert not arrays, (
        f"the constructor allocates arrays {arrays}; allocate in reset()/build_kernel()"
    )


def check_invalid_parameters(case: Case) -> None:
    """Invalid values and unknown keywords raise :class:`ValidationError` naming the parameter."""
    cls = case.cls
    failures = []
    for name, rule in constrained(cls).items():
        for bad in invalid_values(rule):
            try:
                cls(**{**case.params, name: bad})
            except ValidationError as exc:
                if name not in str(exc):
                    failures.append(f"{name}={bad!r}: message does not name the parameter: {exc}")
            except Exception as exc:
                failures.append(f"{name}={bad!r}: raised {type(exc).__name__}: {exc}")
            else:
                failures.append(f"{name}={bad!r} was accepted")
    try:
        cls(**case.params, not_a_parameter=1)
    except ValidationError as exc:
        if "not_a_parameter" not in str(exc):
            failures.append(f"an unknown keyword's error does not name it: {exc}")
        unlisted = [p for p in cls.param_names() if p not in str(exc)]
        if unlisted:
            failures.append(
                f"an unknown keyword's error does not list the parameters {unlisted}: {exc}"
            )
    else:
        failures.append("the unknown keyword not_a_parameter was accepted")
    assert not failures, "\n".join(failures)


def check_guarantee(case: Case) -> None:
    """The guarantee raises before ``reset``; after it, the accountant's guarantee in the declared
    trust model, ``guarantee_for(spec) == guarantee``, ``calibrate`` pure, resolved parameters
    JSON-serializable and stored with the result."""
    alg = case.make()
    for attr in ("guarantee", "calibration"):
        with contextlib.suppress(NotResetError):
            getattr(alg, attr)
            raise AssertionError(
                f"{attr} must raise NotResetError before reset (it depends on the problem)"
            )
    env = case.make_env()
    spec = env.reset(R_RUN, make_streams(0), T_RUN)
    with _quiet():
        before = alg.guarantee_for(spec)
    assert isinstance(before, PrivacyGuarantee)
    params = alg.get_params()
    res = _run(case, alg, env)
    assert alg.get_params() == params, "reset must not change the hyper-parameters"
    g = alg.guarantee
    assert isinstance(g, PrivacyGuarantee) and isinstance(alg.calibration, Calibration)
    assert g.model == case.cls.trust_model, (g.model, case.cls.trust_model)
    assert g == before == alg.guarantee_for(spec), (
        "guarantee_for(spec) must equal the run's guarantee"
    )
    assert alg.calibrate(spec) == alg.calibration, "calibrate(spec) must be pure"
    if case.cls.trust_model == "none":
        assert not g.is_private
    else:
        assert g.is_private and math.isfinite(g.epsilon), g
        assert alg.calibration.requested is not None, (
            "a private calibration records the requested (eps, delta)"
        )
    json.dumps(alg.resolved_params())
    json.dumps(alg.calibration.as_dict())
    assert res.resolved_params == alg.resolved_params() and res.guarantee == g
    assert res.preset == alg.calibration.preset and res.params == alg.get_params()


def check_default_calibration(case: Case) -> None:
    """Under default parameters (preset ``strict``) the accounted guarantee is at least as strong
    as the request, and resetting emits no :class:`CalibrationWarning`."""
    alg = case.cls()
    env = case.make_env()
    streams = make_streams(0)
    spec = env.reset(R_RUN, streams, T_RUN)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        alg.reset(spec, R_RUN, streams)
    cal = alg.calibration
    if case.cls.trust_model == "none":
        assert cal.requested is None and not cal.guarantee.is_private
        return
    assert cal.requested is not None, "a private calibration records the requested (eps, delta)"
    eps, delta = cal.requested
    params = alg.get_params()
    if params.get("epsilon") is not None:
        assert eps == params["epsilon"], "the request is the epsilon parameter"
    if params.get("delta") is not None:
        assert delta == params["delta"], "the request is the delta parameter"
    assert cal.guarantee.epsilon <= eps * (1 + 1e-9), (cal.guarantee, cal.requested)
    assert cal.guarantee.delta <= delta * (1 + 1e-9), (cal.guarantee, cal.requested)
    assert cal.meets_request


# -- drivers ---------------------------------------------------------------------------------------
def check_determinism(case: Case) -> None:
    """Same seed, same trajectory (on a fresh instance and on the same instance again: reset clears
    every trace of a run); another seed, another trajectory.  On the default engine and, when that
    is the aggregate path, on the reference driver too."""
    if _determinism(case, "auto") == "aggregate":
        _determinism(case, "reference")


def _determinism(case: Case, engine: str) -> str:
    alg = case.make()
    a = _run(case, alg, seed=11, engine=engine)
    b = _run(case, alg, seed=11, engine=engine)
    assert a.engine == b.engine
    for key, arr in _arrays(a).items():
        np.testing.assert_array_equal(_arrays(b)[key], arr, err_msg=f"{key} ({a.engine})")
    c = _run(case, seed=12, engine=engine)
    assert not np.array_equal(a.reward, c.reward), (
        f"a different seed must give a different run ({a.engine})"
    )
    return a.engine


def check_reference_equals_compiled(case: Case) -> None:
    """The reference and compiled drivers give the same trajectory for the same seed (the aggregate
    path, where it exists, runs and records the same quantities)."""
    probe = case.make()
    env, _ = _reset(case, probe, T_CMP)
    compiled, aggregate = supports_compiled(probe), supports_aggregate(probe, env)
    if not (compiled or aggregate):
        raise SkipCheck(f"{case.name} has no compiled kernel (numpy roles: reference driver only)")
    for seed in SEEDS_CMP:
        ref = _run(case, engine="reference", horizon=T_CMP, replications=R_CMP, seed=seed)
        assert ref.engine == "reference"
        a = _arrays(ref)
        if compiled:
            com = _run(case, engine="compiled", horizon=T_CMP, replications=R_CMP, seed=seed)
            assert com.engine == "compiled"
            b = _arrays(com)
            assert set(a) == set(b), "both drivers must record the same quantities"
            for key in a:
                np.testing.assert_allclose(
                    b[key], a[key], rtol=0, atol=1e-9, err_msg=f"{key}, seed {seed}"
                )
        if aggregate:
            agg = _run(case, engine="aggregate", horizon=T_CMP, replications=R_CMP, seed=seed)
            assert agg.engine == "aggregate"
            np.testing.assert_array_equal(agg.checkpoints, ref.checkpoints)
            b = _arrays(agg)
            assert set(a) == set(b), "both drivers must record the same quantities"
            for key in a:
                assert b[key].shape == a[key].shape and np.all(np.isfinite(b[key])), key


def check_common_random_numbers(case: Case) -> None:
    """The environment's draws depend on the seed only: this algorithm and a baseline see the
    same instance and the same chunks."""
    env_a, env_b = case.make_env(), case.make_env()
    seen_a, seen_b = record_chunks(env_a), record_chunks(env_b)
    _run(case, env=env_a, seed=5)
    _run(case, alg=make(BASELINE.get(case.env, "uniform")), env=env_b, seed=5)
    np.testing.assert_array_equal(env_a.theta_star, env_b.theta_star)  # type: ignore[attr-defined]
    assert seen_a and seen_b
    for ca, cb in zip(seen_a, seen_b):
        assert ca[0] == cb[0]
        for x, y in zip(ca[1:], cb[1:]):
            np.testing.assert_array_equal(x, y)


# -- the trust boundary ----------------------------------------------------------------------------
def check_trust_boundary(case: Case, engine: str = "reference") -> None:
    """Local / shuffle: the server receives privatized messages (shuffled batches) only, the client
    public state only, no server-side object is reachable from the client, and a client that
    sends raw data (or a forged message of a kernel) is stopped with :class:`TrustBoundaryError`."""
    alg = _private(case)
    T = 60
    if engine == "compiled":
        probe = case.make()
        _reset(case, probe, T)
        if not supports_batches(probe):
            raise SkipCheck(
                f"{case.name} has no batch client (its compiled path has no role objects)"
            )
    log = spy_on_roles(alg)
    _run(case, alg, engine=engine, horizon=T)
    kinds = {kind for kind, _t, _m in log.server_received}
    types = {t for _k, t, _m in log.server_received}
    assert log.server_received, "the server received nothing"
    if isinstance(alg, ShuffleAlgorithm):
        assert kinds == {"receive_batch"} and types == {ShuffledBatch}, (kinds, types)
        assert set(log.shuffler_released) == {ShuffledBatch}
        assert log.shuffler_assigned and all(
            issubclass(t, PublicState) for t in log.shuffler_assigned
        )
        # each user's report is forwarded at most once; later rounds of a multi-round protocol
        # (round >= 1) are the same users answering again
        assert sum(b.n_users for _k, _t, b in log.server_received if b.round == 0) <= T
        for _k, _t, batch in log.server_received:
            assert batch.mechanism and all(np.shape(v)[0] == R_RUN for v in batch.payload.values())
    else:
        assert kinds == {"receive"} and types == {PrivatizedMessage}, (kinds, types)
        assert len(log.server_received) == T
        for _k, _t, msg in log.server_received:
            assert msg.mechanism and all(np.shape(v)[0] == R_RUN for v in msg.payload.values())
    assert log.client_public and all(issubclass(t, PublicState) for t in log.client_public), sorted(
        {t.__name__ for t in log.client_public}
    )
    assert set(log.client_sent) == {PrivatizedMessage}, log.client_sent
    assert not _reachable(alg.client, (Server, Shuffler, Algorithm)), (
        "the client holds a server-side object"
    )
    if engine == "reference":
        check_raw_output_rejected(case)


def _reachable(obj: Any, types: tuple[type, ...], depth: int = 3) -> bool:
    if isinstance(obj, types):
        return True
    if depth == 0:
        return False
    children: list[Any] = []
    if isinstance(obj, (list, tuple, set)):
        children = list(obj)
    elif isinstance(obj, dict):
        children = list(obj.values())
    elif hasattr(obj, "__dict__") and not isinstance(obj, (type, np.ndarray)):
        children = list(vars(obj).values())
    return any(_reachable(c, types, depth - 1) for c in children)


def _stopped_at_boundary(case: Case, tamper: Callable[[Algorithm], None]) -> bool:
    """Whether a short reference run of ``case`` with ``tamper`` applied after every reset stops with
    :class:`TrustBoundaryError`."""
    alg = case.make()
    after_reset(alg, tamper)
    try:
        _run(case, alg, engine="reference", horizon=5)
    except TrustBoundaryError:
        return True
    return False


def check_raw_output_rejected(case: Case) -> None:
    """A client that sends the raw rewards, or (a compiled kernel) a message of another randomizer,
    is stopped with :class:`TrustBoundaryError` before the server sees it."""
    _private(case)

    def leak(a: Algorithm) -> None:
        a.client.randomize = lambda t, public, X, actions, rewards, rng: np.array(rewards)  # type: ignore[attr-defined]

    if not _stopped_at_boundary(case, leak):
        raise AssertionError(
            "a client that returned the raw rewards was not stopped (TrustBoundaryError)"
        )
    probe = case.make()
    _reset(case, probe)
    if not isinstance(probe.kernel, LocalKernel):
        return

    def forge(a: Algorithm) -> None:
        orig = a.client.randomize  # type: ignore[attr-defined]

        def randomize(*args: Any) -> PrivatizedMessage:
            msg = orig(*args)
            return PrivatizedMessage(dict(msg.payload), mechanism=msg.mechanism + "-forged")

        a.client.randomize = randomize  # type: ignore[attr-defined]

    if not _stopped_at_boundary(case, forge):
        raise AssertionError("a message of another randomizer reached the server")


# -- the device ------------------------------------------------------------------------------------
@dataclass
class _Device:
    """A reset algorithm's device with one round's valid inputs for ``R`` users."""

    alg: LocalAlgorithm
    client: Client
    spec: EnvSpec
    public: PublicState
    X: np.ndarray
    a: np.ndarray
    y: np.ndarray
    rng: np.random.Generator

    @property
    def R(self) -> int:
        return int(self.X.shape[0])

    @property
    def convex(self) -> bool:
        return isinstance(self.spec, ConvexSpec)


def _device(case: Case, R: int = R_RUN, seed: int = 0) -> _Device:
    """Reset the algorithm with ``R`` users and draw the first round's inputs from its environment."""
    alg = _private(case)
    env, spec = _reset(case, alg, seed=seed, R=R)
    X = env.next_round()
    rng = np.random.default_rng(seed)
    protocol.start(alg, X)
    public = protocol.broadcast(alg, 0)
    if isinstance(spec, ConvexSpec):
        state = protocol.device_public(alg.client, spec, public, R)
        a = np.asarray(alg.client.choose(0, state, X, rng))
        y, _ = env.step(a)
    else:
        a = protocol.device_choose(alg.client, spec, 0, public, X, rng)
        y, _ = env.step(a)
    return _Device(
        alg, alg.client, spec, public, np.asarray(X), np.asarray(a), np.asarray(y, dtype=float), rng
    )


def _space(dev: _Device) -> PublicSpace:
    space = dev.client.public_space()
    if space is None:
        raise NotImplementedError(
            f"{type(dev.client).__name__} does not declare its public-state space "
            "(Client.public_space)"
        )
    return space


def _expect_error(
    what: str, errors: tuple[type[BaseException], ...], fn: Callable[[], Any]
) -> str | None:
    try:
        fn()
    except errors:
        return None
    except Exception as exc:
        return f"{what}: raised {type(exc).__name__} ({exc}), expected {' or '.join(e.__name__ for e in errors)}"
    return (
        f"{what}: accepted (a device must refuse it with {' or '.join(e.__name__ for e in errors)})"
    )


def check_memory_safe_inputs(case: Case) -> None:
    """A device refuses malformed inputs of its own user with :class:`ValidationError` (never a
    crash, never a report): contexts with ``d + 1`` features or the other setting's shape, an
    action equal to ``K`` or negative, fewer rewards than users, NaN contexts."""
    dev = _device(case)
    if dev.convex:
        raise SkipCheck("continuous actions: the query points come from the public state")
    c, t, public, X, a, y, rng = dev.client, 0, dev.public, dev.X, dev.a, dev.y, dev.rng
    R, K = dev.R, dev.spec.K
    wide = np.concatenate([X, np.zeros(X.shape[:-1] + (1,))], axis=-1)
    other = X[:, 0, :] if X.ndim == 3 else np.repeat(X[:, None, :], K, axis=1)
    nan = X.copy()
    nan.reshape(-1)[0] = np.nan
    cases: list[tuple[str, Callable[[], Any]]] = [
        (
            "contexts with d + 1 features (randomize)",
            lambda: c.randomize(t, public, wide, a, y, rng),
        ),
        ("contexts with d + 1 features (choose)", lambda: c.choose(t, public, wide, rng)),
        ("contexts of the other setting's shape", lambda: c.randomize(t, public, other, a, y, rng)),
        ("action K", lambda: c.randomize(t, public, X, np.full(R, K), y, rng)),
        ("action -1", lambda: c.randomize(t, public, X, np.full(R, -1), y, rng)),
        ("fewer rewards than users", lambda: c.randomize(t, public, X, a, y[:-1], rng)),
        ("NaN in the contexts", lambda: c.randomize(t, public, nan, a, y, rng)),
    ]
    failures = [f for what, fn in cases if (f := _expect_error(what, (ValidationError,), fn))]
    assert not failures, "\n".join(failures)


def check_public_space_validation(case: Case) -> None:
    """A device refuses a public state outside the space it declares (:class:`PublicStateError`):
    a missing or unknown field, a wrong shape, a NaN, a value beyond a declared range or norm."""
    dev = _device(case)
    space = _space(dev)
    dims = dims_of(dev.spec, dev.R)
    good = space.validate(dev.public, dims)  # the honest broadcast is in the declared space
    bad: list[tuple[str, dict[str, Any]]] = []
    base = {k: np.array(v) for k, v in good.items()}
    if space.fields:
        first = space.fields[0]
        bad.append(
            (f"field {first.name!r} missing", {k: v for k, v in base.items() if k != first.name})
        )
    bad.append(("an unknown field", {**base, "not_a_field": np.zeros(1)}))
    for f in space.fields:
        v = base[f.name]
        bad.append(
            (
                f"{f.name!r} with an extra row",
                {**base, f.name: np.concatenate([v, v[:1]]) if v.ndim else np.zeros(2)},
            )
        )
        if f.kind == "f" and v.size:
            w = v.astype(float).copy()
            w.reshape(-1)[0] = np.nan
            bad.append((f"{f.name!r} with a NaN", {**base, f.name: w}))
        for limit, sign in ((f.high, 1.0), (f.low, -1.0)):
            if limit is not None and v.size:
                w = v.astype(float).copy()
                w.reshape(-1)[0] = limit + sign * (1.0 + abs(limit))
                bad.append((f"{f.name!r} beyond its declared range", {**base, f.name: w}))
        if f.norm is not None and v.size:
            w = v.astype(float).copy()
            w[..., :] = 0.0
            w[..., 0] = 2.0 * f.norm + 1.0
            bad.append((f"{f.name!r} beyond its declared norm", {**base, f.name: w}))
        if f.values is not None and v.size:
            w = v.copy()
            w.reshape(-1)[0] = max(f.values) + 1
            bad.append((f"{f.name!r} with a value it does not allow", {**base, f.name: w}))
    c, X, a, y, rng = dev.client, dev.X, dev.a, dev.y, dev.rng
    failures = []
    for what, state in bad:
        public = PublicState(state)
        failures += [
            f
            for f in (
                _expect_error(
                    f"{what} (randomize)",
                    (PublicStateError,),
                    lambda: c.randomize(0, public, X, a, y, rng),
                ),
                _expect_error(
                    f"{what} (choose)", (PublicStateError,), lambda: c.choose(0, public, X, rng)
                ),
            )
            if f
        ]
    assert not failures, "\n".join(failures)


def check_adversarial_server(
    case: Case, *, n: int = 48, rounds: int = 2, climb: int = 15, seed: int = 0
) -> None:
    """The device's own guarantee against any server: over public states drawn from the declared
    space (random and extreme members, plus a hill climb) and neighbouring users (contexts at the
    norm bound, any arms, rewards far outside the range), the whitened distance of the encoded
    messages never exceeds the accounted sensitivity (:mod:`privbandits.privacy.device`)."""
    from privbandits.auditing import AdversarialServer

    alg = _private(case)
    env = case.make_env()
    spec = env.reset(1, make_streams(seed), T_RUN)
    pairs = None
    if isinstance(spec, ConvexSpec):
        from privbandits.auditing import two_point_pairs

        pairs = two_point_pairs(spec)
    worst = AdversarialServer(alg, spec, pairs, n=n, seed=seed).search(rounds, climb)
    assert worst.holds, (
        f"an adversarial server pulls two neighbouring users' encoded messages {worst.reached:.6g} apart "
        f"({worst.norm}, in noise units), above the accounted sensitivity {worst.bound:.6g}: public state "
        f"{worst.summary()}; users ({worst.pair[0].label}) vs ({worst.pair[1].label}).  The device must clip "
        "its pre-noise message whatever the public state says"
    )


def check_encode_randomize(case: Case, *, n: int = N_NOISE, seed: int = 0) -> None:
    """``randomize - encode`` has the declared noise: per coordinate, the standardized difference
    has mean 0 and variance 1 within z-bounds of the sample size (Bonferroni over the coordinates
    and both moments at family-wise level :data:`STAT_ALPHA`); ``exact`` coordinates agree exactly."""
    dev = _device(case, R=n, seed=seed)
    space = _space(dev)
    c, spec = dev.client, dev.spec
    state = space.validate(dev.public, dims_of(spec, n))
    X, a, y = dev.X, dev.a, dev.y
    if (
        not dev.convex
    ):  # rewards outside the range: the clip of encode must be the clip of randomize
        lo, hi = spec.reward_range
        y = np.where(dev.rng.random(n) < 0.5, hi + 10 * (hi - lo), lo - 10 * (hi - lo))
    e = np.asarray(c.encode(0, state, X, a, y), dtype=float)
    # a randomizer whose variance depends on the message (the l2-ball) takes the rewards for its exact
    # variance; without them it declares an upper bound, which would weaken this check
    takes_rewards = "rewards" in inspect.signature(c.noise).parameters
    noise = c.noise(0, state, X, a, rewards=y) if takes_rewards else c.noise(0, state, X, a)  # type: ignore[call-arg]
    msg = protocol.check_message(c.randomize(0, state, X, a, y, np.random.default_rng(seed + 1)))
    flat = np.concatenate(
        [np.asarray(v, dtype=float).reshape(n, -1) for v in msg.payload.values()], axis=1
    )
    assert flat.shape == e.shape, (
        f"encode returned {e.shape}, the message flattens to {flat.shape} "
        "(encode must follow the payload's field order and sizes)"
    )
    var = np.broadcast_to(np.asarray(noise.variance, dtype=float), e.shape)
    diff = flat - e
    exact = var <= 0
    if exact.any():
        bad = np.abs(diff[exact]) > 1e-9 * (1 + np.abs(e[exact]))
        assert not bad.any(), f"{int(bad.sum())} message entries declared exact differ from encode"
    cols = ~exact.any(axis=0)
    if not cols.any():
        return
    z = diff[:, cols] / np.sqrt(var[:, cols])
    m = int(cols.sum())
    q = float(normal.isf(STAT_ALPHA / (4 * m)))
    mean = z.mean(axis=0)
    bad = np.abs(mean) > q / math.sqrt(n)
    assert not bad.any(), (
        f"randomize - encode has mean {mean[bad][:4]} (in noise standard deviations) on "
        f"{int(bad.sum())} coordinates, z-bound {q / math.sqrt(n):.3g}: the message is "
        "biased against encode (a clip or a field missing from encode?)"
    )
    s2 = z.var(axis=0, ddof=1)
    m4 = ((z - mean) ** 4).mean(axis=0)
    se = np.sqrt(np.maximum(m4 - s2**2, 1e-12) / n)
    bad = np.abs(s2 - 1.0) > q * se
    assert not bad.any(), (
        f"randomize - encode has variance {s2[bad][:4]} x the declared one on "
        f"{int(bad.sum())} coordinates (z-bound x{q:.3g} standard errors): the noise "
        "added is not the noise declared"
    )


# -- the catalogue ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """One named check and the algorithms it applies to."""

    name: str
    fn: Callable[[Case], None]
    private_only: bool = False
    needs_env: bool = True

    def applies(self, case: Case) -> bool:
        return not self.private_only or issubclass(case.cls, LocalAlgorithm)

    def __call__(self, case: Case) -> None:
        self.fn(case)


#: Every check, in the order they run.
CHECKS: tuple[Check, ...] = (
    Check("contract", check_parameter_contract, needs_env=False),
    Check("invalid_parameters", check_invalid_parameters, needs_env=False),
    Check("guarantee", check_guarantee),
    Check("default_calibration", check_default_calibration),
    Check("determinism", check_determinism),
    Check("common_random_numbers", check_common_random_numbers),
    Check("reference_equals_compiled", check_reference_equals_compiled),
    Check("trust_boundary", check_trust_boundary, private_only=True),
    Check("memory_safe_inputs", check_memory_safe_inputs, private_only=True),
    Check("public_space_validation", check_public_space_validation, private_only=True),
    Check("adversarial_server", check_adversarial_server, private_only=True),
    Check("encode_randomize", check_encode_randomize, private_only=True),
)
