"""Conformance suite over the algorithm registry: the shipped checks of :mod:`privbandits.testing`.

Every registered algorithm (:func:`privbandits.algorithms.available`) runs the checks a user's own
algorithm is checked with (:func:`privbandits.testing.check_algorithm`), on the small parameter
sets it declares (``test_params``) and the environments it declares (``test_envs``):

* contract: every parameter has a constraint, ``get_params`` round-trips, cheap constructor, class
  attributes describe the algorithm;
* guarantee: raises :class:`NotResetError` before ``reset``; after it, the accountant's guarantee in
  the declared trust model, ``guarantee_for(spec) == guarantee``, the default calibration meets the
  request, the resolved parameters are JSON-serializable and stored with the result;
* bad parameters: invalid values and unknown keywords raise :class:`ValidationError` naming the
  parameter;
* reference == compiled: the two drivers give the same trajectory for the same seed;
* trust boundary: local / shuffle servers receive privatized messages / shuffled batches only,
  clients public state only, raw or forged client output is stopped;
* determinism: same seed, same arrays; other seed, other arrays; common random numbers across
  algorithms.

The device checks (memory-safe inputs, public-space validation, the adversarial server, encode /
randomize consistency) run in ``tests/testing/test_registry_devices.py``.  Plus the README's "Add
your own algorithm" example, run verbatim, and deliberately broken toys.
"""

from __future__ import annotations

import contextlib
import io
import re
import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import privbandits as pb
from privbandits.algorithms import available, registry
from privbandits.algorithms.base import (
    Algorithm,
    Client,
    LocalAlgorithm,
    Server,
    ShuffleAlgorithm,
)
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.messages import PublicState
from privbandits.core.params import Bool, Choice, Int, Optional, Positive, Real
from privbandits.simulate import simulate
from privbandits.testing import checks
from tests.conformance.cases import (
    Case,
    algorithm_params,
    cases,
    invalid_values,
)
from tests.conformance.toys import ToyLocal, ToyShuffle

CASES = cases()
ALG_PARAMS = algorithm_params()
ALGORITHMS = [pytest.param(cls, id=name) for name, cls in available().items()]
README = Path(__file__).resolve().parents[1] / "README.md"
OWN_ALGORITHM_PAGE = Path(__file__).resolve().parents[1] / "docs" / "add-your-own-algorithm.md"


def _check(fn: Callable[..., None], case: Case, *args: Any) -> None:
    """Run a shipped check (privbandits.testing.checks); a check that does not apply is a skip."""
    try:
        fn(case, *args)
    except checks.SkipCheck as exc:
        pytest.skip(str(exc))


# -- contract ----------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ALGORITHMS)
def test_class_describes_the_algorithm(cls: type[Algorithm]) -> None:
    assert isinstance(cls.name, str) and cls.name and available()[cls.name] is cls
    _check(checks.check_parameter_contract, Case(cls, dict(cls.test_params[0])))


@pytest.mark.parametrize("case", ALG_PARAMS)
def test_parameter_contract(case: Case) -> None:
    _check(checks.check_parameter_contract, case)
    assert pb.make(case.cls.name, **case.params).get_params() == case.make().get_params()


# -- guarantee ---------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_guarantee_before_and_after_reset(case: Case) -> None:
    _check(checks.check_guarantee, case)


@pytest.mark.parametrize("case", [c for c in CASES if c.values[0].index == 0])
def test_default_calibration_meets_the_request(case: Case) -> None:
    _check(checks.check_default_calibration, case)


# -- bad parameters ----------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ALGORITHMS)
def test_invalid_values_and_unknown_keywords_raise_naming_the_parameter(
    cls: type[Algorithm],
) -> None:
    _check(checks.check_invalid_parameters, Case(cls, dict(cls.test_params[0])))
    with pytest.raises(ValidationError, match="not_a_parameter"):
        pb.make(cls.name, **cls.test_params[0], not_a_parameter=1)


def test_invalid_values_cover_the_constraint_kinds() -> None:
    # guard for the generator: every kind yields values its rule rejects
    for rule in (
        Positive,
        Real(0, 1, high_open=True),
        Int(1, 5),
        Choice("a", "b"),
        Bool(),
        Optional(Positive),
    ):
        vals = invalid_values(rule)
        assert vals
        for v in vals:
            with pytest.raises(ValidationError):
                rule.check("x", v)


# -- reference == compiled ---------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_reference_equals_compiled(case: Case) -> None:
    _check(checks.check_reference_equals_compiled, case)


# -- trust boundary ----------------------------------------------------------------------------
PRIVATE_CASES = [c for c in CASES if issubclass(c.values[0].cls, LocalAlgorithm)]


@pytest.mark.parametrize("engine", ["reference", "compiled"])
@pytest.mark.parametrize("case", PRIVATE_CASES)
def test_server_sees_only_privatized_messages(case: Case, engine: str) -> None:
    # engine "compiled": the batch path of shuffle algorithms with a batch client (same roles and
    # channels); "reference" also checks that raw or forged client output is stopped
    _check(checks.check_trust_boundary, case, engine)


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
    _check(checks.check_determinism, case)


@pytest.mark.parametrize("case", CASES)
def test_common_random_numbers(case: Case) -> None:
    _check(checks.check_common_random_numbers, case)


# -- the README example ------------------------------------------------------------------------
def _readme_example() -> str:
    text = OWN_ALGORITHM_PAGE.read_text(encoding="utf-8")
    start = text.index("## A curator (numpy)")
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
            exec(
                compile(code, f"{OWN_ALGORITHM_PAGE}:EpsilonGreedy", "exec"),
                {"__name__": "readme_example"},
            )
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
    text = OWN_ALGORITHM_PAGE.read_text(encoding="utf-8")
    blocks = [
        b
        for b in re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
        if "CompiledEpsilonGreedy" in b
    ]
    assert len(blocks) == 1
    name = "eps-greedy-compiled"
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            script = (
                tmp_path / "readme_kernel.py"
            )  # a real file: numba caches compiled code per file
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
    pytest.param(
        Case(ToyLocal, {"epsilon": 3.0, "explore": 0.3}, "multi", 1), id="toy-local-multi"
    ),
    pytest.param(Case(ToyShuffle, {}, "single", 0), id="toy-shuffle-single"),
]


@pytest.mark.parametrize("case", TOY_CASES)
def test_suite_checks_pass_on_toy_private_algorithms(case: Case) -> None:
    # the local / shuffle branches of the checks above, on a local kernel and on numpy shuffle
    # roles, independently of which registered families are ported
    test_guarantee_before_and_after_reset(case)
    test_server_sees_only_privatized_messages(case, "reference")
    test_same_seed_same_run_other_seed_other_run(case)
    test_common_random_numbers(case)
    if case.cls is ToyLocal:
        test_reference_equals_compiled(case)
        assert checks._run(case).engine == "compiled"
