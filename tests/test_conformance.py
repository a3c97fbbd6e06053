"""Conformance suite over the algorithm registry (issue 8, point 7).

Every registered algorithm (:func:`privbandits.algorithms.available`) runs the same checks, on
the small parameter sets it declares (``test_params``) and the environments it declares
(``test_envs``; see :mod:`tests.conformance.cases`):

* contract: every parameter has a constraint, ``get_params`` round-trips, cheap constructor, class
  attributes describe the algorithm;
* guarantee: raises :class:`NotResetError` before ``reset``; after it, the accountant's guarantee in
  the declared trust model, ``guarantee_for(spec) == guarantee``, the default calibration meets the
  request, the resolved parameters are JSON-serializable and stored with the result;
* bad parameters: invalid values and unknown keywords raise :class:`ValidationError` naming the
  parameter;
* reference == compiled: the two drivers give the same trajectory for the same seed;
* trust boundary: local / shuffle servers receive privatized messages / shuffled batches only,
  clients public state only;
* determinism: same seed, same arrays; other seed, other arrays; common random numbers across
  algorithms.

Plus the README's "Add your own algorithm" example, run verbatim.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import runpy
import warnings
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import privbandits as pb
from privbandits.algorithms import available, registry
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
from privbandits.core.errors import NotResetError, TrustBoundaryError, ValidationError
from privbandits.core.links import get_link
from privbandits.core.messages import PrivatizedMessage, PublicState, ShuffledBatch
from privbandits.core.params import Bool, Choice, Int, Optional, Positive, Real
from privbandits.core.rng import make_streams
from privbandits.core.spec import SETTINGS
from privbandits.engine.aggregate import supports_aggregate
from privbandits.engine.batches import supports_batches
from privbandits.engine.compiled import supports_compiled
from privbandits.privacy.guarantee import TRUST_MODELS, PrivacyGuarantee
from privbandits.simulate import simulate
from tests.conformance.cases import (
    BASELINE,
    Case,
    algorithm_params,
    cases,
    constrained,
    invalid_values,
)
from tests.conformance.spies import after_reset, record_chunks, spy_on_roles
from tests.conformance.toys import ToyLocal, ToyShuffle

CASES = cases()
ALG_PARAMS = algorithm_params()
ALGORITHMS = [pytest.param(cls, id=name) for name, cls in available().items()]

#: Horizon, replications and seeds of the engine comparison (issue: horizon ~300, R = 3).
T_CMP, R_CMP, SEEDS_CMP = 300, 3, (0, 1, 2023)
#: Horizon and replications of the other runs.
T_RUN, R_RUN = 200, 2
#: Attributes that only exist after reset (the constructor must not create them).
STATE_ATTRS = ("kernel", "_calibration", "spec", "R", "streams", "client", "server", "shuffler", "core",
               "collector")
README = Path(__file__).resolve().parents[1] / "README.md"


@contextlib.contextmanager
def _quiet():
    """Silence the calibration warning of non-default presets (checked separately)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        yield


def _run(case: Case, alg: Algorithm | None = None, env: Any = None, *, horizon: int = T_RUN,
         replications: int = R_RUN, seed: int = 0, engine: str = "auto") -> pb.SimulationResult:
    with _quiet():
        return simulate(case.make() if alg is None else alg, case.make_env() if env is None else env, horizon,
                        replications=replications, seed=seed, engine=engine, checkpoints=10)


def _reset(case: Case, alg: Algorithm, horizon: int = T_RUN, seed: int = 0) -> tuple[Any, Any]:
    """Reset a fresh environment and ``alg`` on it (as simulate does); returns (env, spec)."""
    env = case.make_env()
    streams = make_streams(seed)
    spec = env.reset(R_RUN, streams, horizon)
    with _quiet():
        alg.reset(spec, R_RUN, streams)
    return env, spec


def _arrays(res: pb.SimulationResult) -> dict[str, np.ndarray]:
    out = {"regret": res.regret, "reward": res.reward}
    if res.estimation_error is not None:
        out["estimation_error"] = res.estimation_error
    return out


# -- contract ----------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ALGORITHMS)
def test_class_describes_the_algorithm(cls: type[Algorithm]) -> None:
    assert isinstance(cls.name, str) and cls.name and available()[cls.name] is cls
    assert cls.trust_model in TRUST_MODELS
    expected_role = {"local": LocalAlgorithm, "shuffle": ShuffleAlgorithm}.get(cls.trust_model, Curator)
    assert issubclass(cls, expected_role), f"trust_model={cls.trust_model!r} needs a {expected_role.__name__}"
    if cls.trust_model == "local":
        assert not issubclass(cls, ShuffleAlgorithm)
    assert cls.settings and set(cls.settings) <= set(SETTINGS), cls.settings
    assert cls.links, "declare the supported links (('*',) = any)"
    for link in cls.links:
        if link != "*":
            assert get_link(link).name == link, f"link {link!r} is an alias; use the canonical name"
    assert isinstance(cls.paper, str) and cls.paper, "cite the paper (class attribute `paper`)"
    assert cls.test_envs and set(cls.test_envs) <= {"synthetic", "finite", "convex"}, cls.test_envs
    assert isinstance(cls.test_params, tuple) and cls.test_params, "test_params is a non-empty tuple of dicts"
    for p in cls.test_params:
        assert isinstance(p, dict) and set(p) <= set(cls.param_names()), (p, cls.param_names())
    if "finite" in cls.test_envs:
        assert "single" in cls.settings, "a finite action set is a single-parameter problem"


@pytest.mark.parametrize("case", ALG_PARAMS)
def test_parameter_contract(case: Case) -> None:
    cls = case.cls
    missing = set(cls.param_names()) - set(cls.all_constraints())
    assert not missing, f"parameters without a declared constraint: {sorted(missing)}"
    alg = case.make()
    params = alg.get_params()
    assert tuple(params) == cls.param_names()
    for key, value in case.params.items():  # the validated value is what was passed (normalized)
        assert params[key] == value or (isinstance(value, (int, float)) and params[key] == pytest.approx(value))
    again = cls(**params)
    assert again.get_params() == params, "get_params() must round-trip through the constructor"
    assert pb.make(cls.name, **case.params).get_params() == params
    json.dumps(params)  # stored with every result
    text = repr(alg)
    assert text.startswith(f"{cls.__name__}(") and text.endswith(")")
    # a cheap constructor: no run state before reset, no arrays beyond the parameters
    present = [a for a in STATE_ATTRS if a in vars(alg)]
    assert not present, f"the constructor creates run state {present}; create it in reset()"
    arrays = [k for k, v in vars(alg).items() if isinstance(v, np.ndarray) and k not in params]
    assert not arrays, f"the constructor allocates arrays {arrays}; allocate in reset()/build_kernel()"


# -- guarantee ---------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_guarantee_before_and_after_reset(case: Case) -> None:
    alg = case.make()
    for attr in ("guarantee", "calibration"):
        with pytest.raises(NotResetError):
            getattr(alg, attr)
    with pytest.raises(NotResetError):
        alg.resolved_params()
    env = case.make_env()
    spec = env.reset(R_RUN, make_streams(0), T_RUN)
    before = alg.guarantee_for(spec)  # works any time, without resetting
    assert isinstance(before, PrivacyGuarantee)
    with pytest.raises(NotResetError):
        alg.guarantee

    params = alg.get_params()
    res = _run(case, alg, env)
    assert alg.get_params() == params, "reset must not change the hyper-parameters"
    g = alg.guarantee
    assert isinstance(g, PrivacyGuarantee) and isinstance(alg.calibration, Calibration)
    assert g.model == case.cls.trust_model
    assert g == before == alg.guarantee_for(spec), "guarantee_for(spec) must equal the run's guarantee"
    assert alg.calibrate(spec) == alg.calibration, "calibrate(spec) must be pure"
    if case.cls.trust_model == "none":
        assert not g.is_private
    else:
        assert g.is_private and math.isfinite(g.epsilon)
        assert alg.calibration.requested is not None, "a private calibration records the requested (eps, delta)"
    resolved = alg.resolved_params()
    json.dumps(resolved)
    json.dumps(alg.calibration.as_dict())
    assert res.resolved_params == resolved and res.guarantee == g
    assert res.preset == alg.calibration.preset and res.params == alg.get_params()


@pytest.mark.parametrize("case", [c for c in CASES if c.values[0].index == 0])
def test_default_calibration_meets_the_request(case: Case) -> None:
    # Under default parameters (preset "strict") the accounted guarantee is at least as strong as
    # the request, and resetting emits no CalibrationWarning.
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
    assert cal.requested is not None
    eps, delta = cal.requested
    params = alg.get_params()
    if params.get("epsilon") is not None:
        assert eps == params["epsilon"], "the request is the epsilon parameter"
    if params.get("delta") is not None:
        assert delta == params["delta"], "the request is the delta parameter"
    assert cal.guarantee.epsilon <= eps * (1 + 1e-9), (cal.guarantee, cal.requested)
    assert cal.guarantee.delta <= delta * (1 + 1e-9), (cal.guarantee, cal.requested)
    assert cal.meets_request


# -- bad parameters ----------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ALGORITHMS)
def test_invalid_values_raise_naming_the_parameter(cls: type[Algorithm]) -> None:
    failures = []
    base = dict(cls.test_params[0])  # supplies required arguments, if any
    for name, rule in constrained(cls).items():
        for bad in invalid_values(rule):
            try:
                cls(**{**base, name: bad})
            except ValidationError as exc:
                if name not in str(exc):
                    failures.append(f"{name}={bad!r}: message does not name the parameter: {exc}")
            except Exception as exc:
                failures.append(f"{name}={bad!r}: raised {type(exc).__name__}: {exc}")
            else:
                failures.append(f"{name}={bad!r} was accepted")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_unknown_keyword_names_the_allowed_parameters(cls: type[Algorithm]) -> None:
    with pytest.raises(ValidationError) as exc:
        pb.make(cls.name, **cls.test_params[0], not_a_parameter=1)
    msg = str(exc.value)
    assert "not_a_parameter" in msg
    missing = [p for p in cls.param_names() if p not in msg]
    assert not missing, f"the message does not list the allowed parameters {missing}: {msg}"


def test_invalid_values_cover_the_constraint_kinds() -> None:
    # guard for the generator above: every kind yields values its rule rejects
    for rule in (Positive, Real(0, 1, high_open=True), Int(1, 5), Choice("a", "b"), Bool(), Optional(Positive)):
        vals = invalid_values(rule)
        assert vals
        for v in vals:
            with pytest.raises(ValidationError):
                rule.check("x", v)


# -- reference == compiled ---------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_reference_equals_compiled(case: Case) -> None:
    probe = case.make()
    env, _spec = _reset(case, probe, T_CMP)
    compiled, aggregate = supports_compiled(probe), supports_aggregate(probe, env)
    if not (compiled or aggregate):
        pytest.skip(f"{case.name} has no compiled kernel (numpy roles: reference driver only)")
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
                np.testing.assert_allclose(b[key], a[key], rtol=0, atol=1e-9, err_msg=f"{key}, seed {seed}")
        if aggregate:
            # batched elimination on a fixed action set: the aggregate path's law is tested by the
            # family's two-sample tests; here it runs and records the same quantities
            agg = _run(case, engine="aggregate", horizon=T_CMP, replications=R_CMP, seed=seed)
            assert agg.engine == "aggregate"
            np.testing.assert_array_equal(agg.checkpoints, ref.checkpoints)
            b = _arrays(agg)
            assert set(a) == set(b), "both drivers must record the same quantities"
            for key in a:
                assert b[key].shape == a[key].shape and np.all(np.isfinite(b[key])), key


# -- trust boundary ----------------------------------------------------------------------------
PRIVATE_CASES = [c for c in CASES if issubclass(c.values[0].cls, LocalAlgorithm)]


@pytest.mark.parametrize("engine", ["reference", "compiled"])
@pytest.mark.parametrize("case", PRIVATE_CASES)
def test_server_sees_only_privatized_messages(case: Case, engine: str) -> None:
    # engine "compiled": the batch path of shuffle algorithms with a batch client (same roles and channels)
    T = 60
    if engine == "compiled":
        probe = case.make()
        _reset(case, probe, T)
        if not supports_batches(probe):
            pytest.skip(f"{case.name} has no batch client (its compiled path, if any, has no role objects)")
    alg = case.make()
    log = spy_on_roles(alg)
    _run(case, alg, engine=engine, horizon=T)
    kinds = {kind for kind, _t, _m in log.server_received}
    types = {t for _k, t, _m in log.server_received}
    assert log.server_received, "the server received nothing"
    if isinstance(alg, ShuffleAlgorithm):
        assert kinds == {"receive_batch"} and types == {ShuffledBatch}, (kinds, types)
        assert set(log.shuffler_released) == {ShuffledBatch}
        assert set(log.shuffler_assigned) == {PublicState}
        # each user's report is forwarded at most once (a batch cut by the horizon may stay unreleased);
        # later rounds of a multi-round protocol (round >= 1) are the same users answering again
        assert sum(b.n_users for _k, _t, b in log.server_received if b.round == 0) <= T
        for _k, _t, batch in log.server_received:
            assert batch.mechanism and all(np.shape(v)[0] == R_RUN for v in batch.payload.values())
    else:
        assert kinds == {"receive"} and types == {PrivatizedMessage}, (kinds, types)
        assert len(log.server_received) == T
        for _k, _t, msg in log.server_received:
            assert msg.mechanism and all(np.shape(v)[0] == R_RUN for v in msg.payload.values())
    assert set(log.client_public) == {PublicState}, log.client_public
    assert set(log.client_sent) == {PrivatizedMessage}, log.client_sent
    # no server or shuffler object is reachable from the client (only the checked channel)
    assert not _reachable(alg.client, (Server, Shuffler, Algorithm)), "the client holds a server-side object"


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


@pytest.mark.parametrize("case", PRIVATE_CASES)
def test_raw_or_forged_client_output_is_rejected(case: Case) -> None:
    # a client that sends raw rewards, or a message of another randomizer, never gets through
    def leak(a: Algorithm) -> None:
        a.client.randomize = lambda t, public, X, actions, rewards, rng: np.array(rewards)  # type: ignore[attr-defined]

    alg = case.make()
    after_reset(alg, leak)
    with pytest.raises(TrustBoundaryError):
        _run(case, alg, engine="reference", horizon=5)

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

    alg = case.make()
    after_reset(alg, forge)
    with pytest.raises(TrustBoundaryError):
        _run(case, alg, engine="reference", horizon=5)


class _LeakyClient(Client):
    def choose(self, t, public, contexts, rng):  # type: ignore[no-untyped-def]
        return np.zeros(contexts.shape[0], dtype=np.int64)

    def randomize(self, t, public, contexts, actions, rewards, rng):  # type: ignore[no-untyped-def]
        return np.asarray(rewards)  # raw data: must never reach the server


class _Server(Server):
    def public_state(self) -> PublicState:
        return PublicState(n=np.zeros(1))

    def receive(self, t, message):  # type: ignore[no-untyped-def]
        raise AssertionError("the raw message reached the server")

    def receive_batch(self, t, batch):  # type: ignore[no-untyped-def]
        raise AssertionError("the raw batch reached the server")


class _BrokenLocal(LocalAlgorithm):
    """A deliberately broken local algorithm: its client returns the raw reward array."""

    name = "broken-local"
    links = ("*",)
    paper = "test"
    constraints: ClassVar = {"batch": Bool()}

    def __init__(self, batch: bool = False) -> None:
        pass

    def reset(self, spec, replications, streams) -> None:  # type: ignore[no-untyped-def]
        super().reset(spec, replications, streams)
        self.client, self.server = _LeakyClient(), _Server()


class _BrokenShuffle(ShuffleAlgorithm, _BrokenLocal):
    name = "broken-shuffle"

    def batch_ends(self, t: int) -> bool:
        return True


@pytest.mark.parametrize("broken", [_BrokenLocal, _BrokenShuffle])
def test_broken_toy_algorithm_raises_trust_boundary_error(broken: type[Algorithm]) -> None:
    with pytest.raises(TrustBoundaryError, match="PrivatizedMessage"):
        simulate(broken(), pb.SyntheticEnv(d=2, K=3), 5, replications=2)


# -- determinism and common random numbers -----------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_same_seed_same_run_other_seed_other_run(case: Case) -> None:
    # on the default engine, and on the reference driver too when the default is the aggregate
    # path (a compiled default is compared with the reference driver above)
    if _check_determinism(case, "auto") == "aggregate":
        _check_determinism(case, "reference")


def _check_determinism(case: Case, engine: str) -> str:
    """A fresh instance, then the same instance again (reset must clear every trace of a run),
    then another seed; returns the engine that ran."""
    alg = case.make()
    a = _run(case, alg, seed=11, engine=engine)
    b = _run(case, alg, seed=11, engine=engine)
    assert a.engine == b.engine
    for key, arr in _arrays(a).items():
        np.testing.assert_array_equal(_arrays(b)[key], arr, err_msg=f"{key} ({a.engine})")
    c = _run(case, seed=12, engine=engine)
    assert not np.array_equal(a.reward, c.reward), f"a different seed must give a different run ({a.engine})"
    return a.engine


@pytest.mark.parametrize("case", CASES)
def test_common_random_numbers(case: Case) -> None:
    # The environment's draws depend on the seed only: this algorithm and uniform play see the
    # same instance and the same chunks (contexts, means, rewards of every arm).
    env_a, env_b = case.make_env(), case.make_env()
    seen_a, seen_b = record_chunks(env_a), record_chunks(env_b)
    _run(case, env=env_a, seed=5)
    _run(case, alg=pb.make(BASELINE.get(case.env, "uniform")), env=env_b, seed=5)
    np.testing.assert_array_equal(env_a.theta_star, env_b.theta_star)
    assert seen_a and seen_b
    for ca, cb in zip(seen_a, seen_b):
        assert ca[0] == cb[0]
        for x, y in zip(ca[1:], cb[1:]):
            np.testing.assert_array_equal(x, y)


# -- the README example ------------------------------------------------------------------------
def _readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Add your own algorithm")
    match = re.search(r"```python\n(.*?)```", text[start:], flags=re.DOTALL)
    assert match, "no python block under 'Add your own algorithm'"
    return match.group(1)


def test_readme_add_your_own_algorithm_runs_verbatim() -> None:
    code = _readme_example()
    assert "class EpsilonGreedy" in code
    name = "eps-greedy"
    assert name not in available(), "eps-greedy is registered before the README example runs"
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"{README}:EpsilonGreedy", "exec"), {"__name__": "readme_example"})
        summary = out.getvalue().strip()
        assert summary.startswith("{") and "'mean'" in summary, summary
        cls = available()[name]
        alg = pb.make(name)
        assert alg.get_params() == {"eps": 0.05}
        res = simulate(alg, pb.SyntheticEnv(d=3, K=4), 50, replications=2, seed=0)
        assert res.engine == "reference" and res.regret.shape == (2, res.checkpoints.size)
        assert cls(**alg.get_params()).get_params() == alg.get_params()
    finally:
        registry._REGISTRY.pop(name, None)  # keep the registry as the package defines it


def test_readme_compiled_kernel_example_runs_and_engines_agree(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL) if "CompiledEpsilonGreedy" in b]
    assert len(blocks) == 1
    name = "eps-greedy-compiled"
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            script = tmp_path / "readme_kernel.py"  # a real file: numba caches compiled code per file
            script.write_text(blocks[0], encoding="utf-8")
            runpy.run_path(str(script), run_name="readme_kernel")
        lines = out.getvalue().split()
        assert lines[0] == "reference" and lines[2] == "compiled" and lines[1] == lines[3]
        with pytest.raises(ValidationError, match="eps"):
            pb.make(name, eps=2.0)
    finally:
        registry._REGISTRY.pop(name, None)


# -- self-check of the suite on unregistered toys -----------------------------------------------
TOY_CASES = [
    pytest.param(Case(ToyLocal, {}, "single", 0), id="toy-local-single"),
    pytest.param(Case(ToyLocal, {"epsilon": 3.0, "explore": 0.3}, "multi", 1), id="toy-local-multi"),
    pytest.param(Case(ToyShuffle, {}, "single", 0), id="toy-shuffle-single"),
]


@pytest.mark.parametrize("case", TOY_CASES)
def test_suite_checks_pass_on_toy_private_algorithms(case: Case) -> None:
    # the local / shuffle branches of the checks above, on a local kernel and on numpy shuffle
    # roles, independently of which registered families are ported
    test_guarantee_before_and_after_reset(case)
    test_server_sees_only_privatized_messages(case, "reference")
    test_raw_or_forged_client_output_is_rejected(case)
    test_same_seed_same_run_other_seed_other_run(case)
    test_common_random_numbers(case)
    if case.cls is ToyLocal:
        test_reference_equals_compiled(case)
        assert _run(case).engine == "compiled"
