"""Conformance checks that ship with the library: check an algorithm of one's own as ours are checked.

As scikit-learn ships ``check_estimator`` and ``parametrize_with_checks``, privbandits ships the
checks its own test suite runs on every registered algorithm (the documentation's "Add your own
algorithm" page):

* **contract**: constructor parameters declared with constraints, ``get_params`` round-trips, a
  cheap constructor; invalid values and unknown keywords rejected naming the parameter;
* **guarantee**: raises before ``reset``, the accountant's guarantee after it, ``guarantee_for``
  equal to it, ``calibrate`` pure;
* **determinism**: same seed, same trajectory; **common random numbers** with a baseline;
* **reference == compiled** where a compiled kernel exists;
* local and shuffle algorithms (the device, against an untrusted server, the documentation's
  Concepts: threat model): **trust boundary** (only ``PrivatizedMessage`` / ``ShuffledBatch``
  reach the server, raw data never), **memory-safe inputs** (wrong shapes, action ``K``, short
  rewards -> ``ValidationError``), **public-space validation** (a malformed public state ->
  ``PublicStateError``), the **adversarial-server** property (for every public state in the
  declared space and every neighbouring pair of users, the whitened distance of the encoded
  messages is at most the accounted sensitivity) and **encode / randomize** consistency
  (``randomize - encode`` has the declared noise).

Examples
--------
>>> from privbandits.testing import check_algorithm
>>> check_algorithm("uniform", checks=["contract"])  # doctest: +SKIP

In a pytest module::

    from privbandits.testing import parametrize_with_checks

    @parametrize_with_checks([MyAlgorithm])
    def test_my_algorithm(case, check):
        check(case)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from privbandits.algorithms.base import Algorithm
from privbandits.testing.cases import Case, cases_of, env_kinds, make_env, registry_cases
from privbandits.testing.checks import CHECKS, Check, SkipCheck

__all__ = [
    "CHECKS",
    "Case",
    "Check",
    "CheckResult",
    "SkipCheck",
    "cases_of",
    "check_algorithm",
    "env_kinds",
    "make_env",
    "named_checks",
    "parametrize_with_checks",
    "registry_cases",
]

AlgorithmLike = str | type[Algorithm] | Algorithm


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check on one case: ``status`` is ``passed``, ``skipped`` or ``failed``."""

    case: str
    check: str
    status: str
    message: str = ""


def _select(checks: Iterable[str] | None) -> list[Check]:
    if checks is None:
        return list(CHECKS)
    by_name = {c.name: c for c in CHECKS}
    unknown = [c for c in checks if c not in by_name]
    if unknown:
        from privbandits.core.errors import ValidationError

        raise ValidationError(f"unknown check(s) {unknown}; checks: {', '.join(by_name)}")
    return [by_name[c] for c in checks]


def named_checks(
    algorithm: AlgorithmLike,
    *,
    params: dict[str, Any] | None = None,
    envs: tuple[str, ...] | None = None,
    checks: Iterable[str] | None = None,
    quick: bool = False,
) -> list[tuple[Case, Check]]:
    """Every (case, check) pair of ``algorithm`` that applies.

    Parameters
    ----------
    algorithm : str, class or instance
        A registry name, an algorithm class (registered or not), or an instance (its parameters).
    params : dict, optional
        Constructor arguments (default: the class's ``test_params``, each one a case).
    envs : tuple of str, optional
        Environment kinds (default: from the class's ``test_envs`` and ``settings``).
    checks : iterable of str, optional
        Names of the checks to run (default: all of :data:`CHECKS`).
    quick : bool
        Only the first parameter set on the first environment for the checks that run the
        algorithm (the parameter checks run on every parameter set).
    """
    selected = _select(checks)
    cases = cases_of(algorithm, params, envs)
    out: list[tuple[Case, Check]] = []
    for check in selected:
        if not check.needs_env:
            seen = set()
            for case in cases:
                if case.index not in seen and check.applies(case):
                    seen.add(case.index)
                    out.append((Case(case.cls, case.params, "", case.index), check))
            continue
        for case in cases[:1] if quick else cases:
            if check.applies(case):
                out.append((case, check))
    return out


def check_algorithm(
    algorithm: AlgorithmLike,
    *,
    params: dict[str, Any] | None = None,
    envs: tuple[str, ...] | None = None,
    checks: Iterable[str] | None = None,
    quick: bool = False,
    raise_on_failure: bool = True,
) -> list[CheckResult]:
    """Run the conformance checks on one algorithm (see :func:`named_checks` for the arguments).

    Returns
    -------
    list of CheckResult
        One per (case, check), in order.

    Raises
    ------
    AssertionError
        When ``raise_on_failure`` and a check failed: every failure, each with its message (a
        device method of the contract that is missing is reported as a failure naming it).
    """
    results = []
    for case, check in named_checks(
        algorithm, params=params, envs=envs, checks=checks, quick=quick
    ):
        try:
            check(case)
        except SkipCheck as exc:
            results.append(CheckResult(case.id, check.name, "skipped", str(exc)))
        except NotImplementedError as exc:
            results.append(
                CheckResult(
                    case.id,
                    check.name,
                    "failed",
                    f"the device does not implement its contract: {exc}",
                )
            )
        except AssertionError as exc:
            results.append(CheckResult(case.id, check.name, "failed", str(exc) or repr(exc)))
        else:
            results.append(CheckResult(case.id, check.name, "passed"))
    failed = [r for r in results if r.status == "failed"]
    if failed and raise_on_failure:
        raise AssertionError("\n".join(f"{r.case} / {r.check}: {r.message}" for r in failed))
    return results


class _PytestCheck:
    """A check as a pytest test calls it: a skipped check becomes ``pytest.skip``."""

    def __init__(self, check: Check) -> None:
        self.check = check
        self.__name__ = f"check_{check.name}"

    def __call__(self, case: Case) -> None:
        import pytest

        try:
            self.check(case)
        except SkipCheck as exc:
            pytest.skip(str(exc))

    def __repr__(self) -> str:
        return self.check.name


def parametrize_with_checks(
    algorithms: Sequence[AlgorithmLike], *, checks: Iterable[str] | None = None, quick: bool = False
) -> Any:
    """A ``pytest.mark.parametrize`` over every (case, check) of ``algorithms``.

    The decorated test takes two arguments, ``case`` and ``check``, and calls ``check(case)``;
    test ids read ``<algorithm>-p<i>-<env>-<check>``.  Arguments as :func:`named_checks`.
    """
    import pytest

    selected = list(checks) if checks is not None else None
    params = []
    for alg in algorithms:
        for case, check in named_checks(alg, checks=selected, quick=quick):
            params.append(pytest.param(case, _PytestCheck(check), id=f"{case.id}-{check.name}"))
    return pytest.mark.parametrize("case, check", params)
