"""What the conformance checks run an algorithm on: its parameter sets and small environments.

An algorithm declares (class attributes, :class:`privbandits.algorithms.base.Algorithm`)

* ``test_params``: a tuple of constructor-argument dicts (small, fast configurations);
* ``test_envs``: ``"synthetic"`` (a small :class:`~privbandits.envs.SyntheticEnv` matching
  ``settings`` and ``links``: single-parameter when ``"single"`` is supported, plus a
  multi-parameter one when ``"multi"`` is) and/or ``"finite"`` (a small
  :class:`~privbandits.envs.FiniteActionEnv`), or ``"convex"`` (a small
  :class:`~privbandits.envs.ConvexLossEnv`: bandit convex optimization, continuous actions).

The link is ``identity`` when allowed, else the first declared link; the reward noise matches the
link (Gaussian for identity, Bernoulli for logistic / probit, Poisson for poisson).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from privbandits.algorithms import available, get
from privbandits.algorithms.base import Algorithm
from privbandits.core.errors import ValidationError
from privbandits.core.params import Bool, Choice, Constraint, Int, Optional, Real
from privbandits.envs import ConvexLossEnv, Environment, FiniteActionEnv, SyntheticEnv

__all__ = [
    "BASELINE",
    "ENV_KINDS",
    "NOISE_FOR_LINK",
    "Case",
    "cases_of",
    "constrained",
    "env_kinds",
    "invalid_values",
    "link_for",
    "make_env",
    "registry_cases",
]

#: Environment kinds a case can run on.
ENV_KINDS: tuple[str, ...] = ("single", "multi", "finite", "convex")
#: The baseline of the common-random-numbers check on each environment kind.
BASELINE: dict[str, str] = {"convex": "two-point-bco"}
#: Reward noise matching each link (means must be valid for the reward model).
NOISE_FOR_LINK: dict[str, str] = {
    "identity": "gaussian",
    "logistic": "bernoulli",
    "probit": "bernoulli",
    "poisson": "poisson",
}


@dataclass(frozen=True)
class Case:
    """One algorithm class, one of its parameter sets, one environment kind.

    Attributes
    ----------
    cls : type
        The algorithm class (registered or not).
    params : dict
        Constructor arguments.
    env : str
        One of :data:`ENV_KINDS` (``""``: no environment, for the parameter checks).
    index : int
        Position of ``params`` in the class's ``test_params`` (names the case).
    """

    cls: type[Algorithm]
    params: dict[str, Any] = field(default_factory=dict)
    env: str = ""
    index: int = 0

    @property
    def name(self) -> str:
        return self.cls.name or self.cls.__name__

    @property
    def id(self) -> str:
        return f"{self.name}-p{self.index}" + (f"-{self.env}" if self.env else "")

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
    ``FiniteActionEnv(d=3, K=5)`` (actions on the sphere); ``convex``: ``ConvexLossEnv(d=3)``.
    Gaussian noise has scale 0.1.
    """
    link = link_for(cls)
    noise = NOISE_FOR_LINK[link]
    if kind == "finite":
        return FiniteActionEnv(d=3, K=5, actions="sphere", link=link, noise=noise, noise_scale=0.1)
    if kind == "convex":
        return ConvexLossEnv(d=3, loss="quadratic")
    if kind in ("single", "multi"):
        return SyntheticEnv(d=3, K=4, setting=kind, link=link, noise=noise, noise_scale=0.1)
    raise ValidationError(f"unknown environment kind {kind!r}; kinds: {', '.join(ENV_KINDS)}")


def env_kinds(cls: type[Algorithm]) -> tuple[str, ...]:
    """The environment kinds an algorithm's ``test_envs`` and ``settings`` ask for."""
    kinds: list[str] = []
    for declared in cls.test_envs:
        if declared == "synthetic":
            kinds += [s for s in ("single", "multi") if s in cls.settings]
        else:  # "finite", "convex"; an unknown declaration fails loudly in make_env
            kinds.append(declared)
    return tuple(dict.fromkeys(kinds))


def cases_of(
    alg: str | type[Algorithm] | Algorithm,
    params: dict[str, Any] | None = None,
    envs: tuple[str, ...] | None = None,
) -> list[Case]:
    """Every (parameter set, environment) case of one algorithm.

    ``alg`` is a registry name, a class or an instance (its ``get_params()`` are the parameters);
    ``params`` replaces the class's ``test_params``; ``envs`` its environment kinds.
    """
    if isinstance(alg, str):
        cls = get(alg)
    elif isinstance(alg, type):
        cls = alg
    else:
        cls, params = type(alg), dict(alg.get_params()) if params is None else params
    sets = [dict(params)] if params is not None else [dict(p) for p in cls.test_params]
    kinds = envs if envs is not None else env_kinds(cls)
    return [Case(cls, p, kind, i) for i, p in enumerate(sets) for kind in kinds]


def registry_cases(kinds: tuple[str, ...] | None = None) -> list[Case]:
    """Every (registered algorithm, test parameters, environment) case."""
    return [
        c for cls in available().values() for c in cases_of(cls) if kinds is None or c.env in kinds
    ]


def invalid_values(rule: Constraint) -> list[Any]:
    """Clearly invalid values for ``rule`` (empty for unconstrained parameters).

    Real: a string, NaN, infinity (unless allowed), and a value beyond each bound; Int: a string,
    a non-integer, beyond each bound; Choice: an unknown string and a number; Bool: a string and
    an int.  ``None`` too, unless the rule is :class:`~privbandits.core.params.Optional`.
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
