"""The conformance cases: every registered algorithm x its ``test_params`` x its ``test_envs``.

An algorithm declares (class attributes, :class:`privbandits.algorithms.base.Algorithm`)

* ``test_params``: a tuple of constructor-argument dicts (small, fast configurations);
* ``test_envs``: ``"synthetic"`` (a small :class:`SyntheticEnv` matching ``settings`` and
  ``links``: single-parameter when ``"single"`` is supported, plus a multi-parameter one when
  ``"multi"`` is) and/or ``"finite"`` (a small :class:`FiniteActionEnv`), or ``"convex"`` (a small
  :class:`ConvexLossEnv`: bandit convex optimization, continuous actions).

The link is ``identity`` when allowed, else the first declared link; the reward noise matches the
link (Gaussian for identity, Bernoulli for logistic / probit, Poisson for poisson).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pytest

from privbandits.algorithms import available
from privbandits.algorithms.base import Algorithm
from privbandits.core.params import Bool, Choice, Constraint, Int, Optional, Real
from privbandits.envs import ConvexLossEnv, Environment, FiniteActionEnv, SyntheticEnv

__all__ = [
    "BASELINE",
    "ENV_KINDS",
    "NOISE_FOR_LINK",
    "Case",
    "algorithm_params",
    "cases",
    "invalid_values",
    "link_for",
    "make_env",
]

#: Environment kinds a case can run on.
ENV_KINDS: tuple[str, ...] = ("single", "multi", "finite", "convex")
#: The baseline of the common-random-numbers check on each environment kind.
BASELINE: dict[str, str] = {"convex": "two-point-bco"}
#: Reward noise matching each link (means must be valid for the reward model).
NOISE_FOR_LINK: dict[str, str] = {"identity": "gaussian", "logistic": "bernoulli", "probit": "bernoulli",
                                  "poisson": "poisson"}


@dataclass(frozen=True)
class Case:
    """One conformance case: an algorithm class, one of its test parameter sets, one environment."""

    cls: type[Algorithm]
    params: dict[str, Any]
    env: str
    index: int

    @property
    def name(self) -> str:
        return self.cls.name

    @property
    def id(self) -> str:
        return f"{self.name}-p{self.index}-{self.env}"

    def make(self, **override: Any) -> Algorithm:
        """A fresh algorithm with this case's parameters (and ``override``)."""
        return self.cls(**{**self.params, **override})

    def make_env(self) -> Environment:
        """A fresh environment of this case's kind."""
        return make_env(self.cls, self.env)


def link_for(cls: type[Algorithm]) -> str:
    """``identity`` when the algorithm allows it, else its first declared link."""
    links = tuple(cls.links)
    return "identity" if ("*" in links or "identity" in links) else links[0]


def make_env(cls: type[Algorithm], kind: str) -> Environment:
    """A small environment of ``kind`` matching the algorithm's settings and links.

    ``single``/``multi``: ``SyntheticEnv(d=3, K=4)`` in that setting; ``finite``:
    ``FiniteActionEnv(d=3, K=5)`` (actions on the sphere).  Gaussian noise has scale 0.1.
    """
    link = link_for(cls)
    noise = NOISE_FOR_LINK[link]
    if kind == "finite":
        return FiniteActionEnv(d=3, K=5, actions="sphere", link=link, noise=noise, noise_scale=0.1)
    if kind == "convex":
        return ConvexLossEnv(d=3, loss="quadratic")
    if kind in ("single", "multi"):
        return SyntheticEnv(d=3, K=4, setting=kind, link=link, noise=noise, noise_scale=0.1)
    raise ValueError(f"unknown environment kind {kind!r}")


def env_kinds(cls: type[Algorithm]) -> tuple[str, ...]:
    """The environment kinds an algorithm's ``test_envs`` and ``settings`` ask for."""
    kinds: list[str] = []
    for declared in cls.test_envs:
        if declared == "synthetic":
            kinds += [s for s in ("single", "multi") if s in cls.settings]
        elif declared in ("finite", "convex"):
            kinds.append(declared)
        else:  # an unknown declaration is a contract failure: let the case fail loudly
            kinds.append(declared)
    return tuple(dict.fromkeys(kinds))


def cases(kinds: tuple[str, ...] | None = None) -> list[Any]:
    """``pytest.param`` of every (algorithm, test parameters, environment) case of the registry."""
    out = []
    for cls in available().values():
        for i, params in enumerate(cls.test_params):
            for kind in env_kinds(cls):
                if kinds is None or kind in kinds:
                    case = Case(cls, dict(params), kind, i)
                    out.append(pytest.param(case, id=case.id))
    return out


def algorithm_params() -> list[Any]:
    """``pytest.param`` of every (algorithm, test parameters) pair (cases without an environment)."""
    return [pytest.param(Case(cls, dict(p), "", i), id=f"{cls.name}-p{i}")
            for cls in available().values() for i, p in enumerate(cls.test_params)]


def invalid_values(rule: Constraint) -> list[Any]:
    """Clearly invalid values for ``rule`` (empty for unconstrained parameters).

    Real: a string, NaN, infinity (unless allowed), and a value beyond each bound; Int: a string,
    a non-integer, beyond each bound; Choice: an unknown string and a number; Bool: a string and
    an int.  ``None`` too, unless the rule is :class:`Optional`.
    """
    optional = isinstance(rule, Optional)
    inner = rule.inner if optional else rule
    vals: list[Any] = [] if optional else [None]
    if isinstance(inner, Real):
        vals += ["abc", math.nan]
        if not inner.allow_inf:
            vals.append(math.inf)
        if inner.low is not None:
            vals.append(inner.low if inner.low_open else inner.low - 1.0)
        if inner.high is not None:
            vals.append(inner.high if inner.high_open else inner.high + 1.0)
    elif isinstance(inner, Int):
        vals += ["abc", 1.5]
        if inner.low is not None:
            vals.append(inner.low - 1)
        if inner.high is not None:
            vals.append(inner.high + 1)
    elif isinstance(inner, Choice):
        vals += [v for v in ("nope", 3) if v not in inner.options]
    elif isinstance(inner, Bool):
        vals += ["yes", 2]
    else:
        return []
    return vals


def constrained(cls: type[Algorithm]) -> dict[str, Constraint]:
    """The constructor parameters of ``cls`` with a checkable (Real/Int/Choice/Bool) constraint."""
    rules = cls.all_constraints()
    return {n: rules[n] for n in cls.param_names() if n in rules and invalid_values(rules[n])}

