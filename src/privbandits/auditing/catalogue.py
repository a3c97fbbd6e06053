"""Everything ``privbandits audit`` audits (:data:`AUDITABLE`), collected from the registry.

Each algorithm declares its own audits beside it
(:meth:`~privbandits.algorithms.base.Algorithm.audit_cases`, :mod:`privbandits.algorithms.audit`);
this module only collects them: :func:`collect` walks the registered classes and files each
:class:`~privbandits.algorithms.audit.ClientPathCase` under its name in :data:`CLIENT_PATHS` and
each :class:`~privbandits.algorithms.audit.ReleaseCase` in :data:`RELEASES`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from privbandits.algorithms import available
from privbandits.algorithms.audit import ClientPathCase, ReleaseCase
from privbandits.algorithms.base import Algorithm
from privbandits.algorithms.registry import get
from privbandits.auditing.client_path import client_path_spec
from privbandits.core.errors import ValidationError
from privbandits.privacy.audit import AUDITABLE as MECHANISMS
from privbandits.privacy.audit import AuditSpec
from privbandits.privacy.audit import audit_mechanism as _audit_entry
from privbandits.privacy.audit import run_all as _run_entries
from privbandits.regression.audit import REGRESSION_AUDITS

__all__ = [
    "AUDITABLE",
    "CLIENT_PATHS",
    "RELEASES",
    "audit_mechanism",
    "cases_of",
    "collect",
    "declared_cases",
    "local_algorithms",
    "resolve",
    "run_all",
    "undeclared",
]


def declared_cases(cls: type[Algorithm]) -> tuple[ClientPathCase | ReleaseCase, ...]:
    """The audit cases ``cls`` declares itself (an inherited declaration is the parent's)."""
    if "audit_cases" not in vars(cls):
        return ()
    cases = tuple(cls.audit_cases())
    for case in cases:
        if isinstance(case, ClientPathCase) and case.label != cls.name:
            raise ValidationError(
                f"{cls.name}: audit_cases declares a client path of {case.label!r}; a class "
                "declares its own cases"
            )
        if not isinstance(case, (ClientPathCase, ReleaseCase)):
            raise ValidationError(
                f"{cls.name}: audit_cases must return ClientPathCase or ReleaseCase objects, got "
                f"{type(case).__name__}"
            )
    return cases


def collect(
    classes: Iterable[type[Algorithm]],
) -> tuple[dict[str, ClientPathCase], dict[str, ReleaseCase]]:
    """The client paths and releases the ``classes`` declare, by catalogue name (in class order)."""
    paths: dict[str, ClientPathCase] = {}
    releases: dict[str, ReleaseCase] = {}
    for cls in classes:
        for case in declared_cases(cls):
            if case.name in paths or case.name in releases:
                raise ValidationError(f"{cls.name}: audit case {case.name!r} declared twice")
            if isinstance(case, ClientPathCase):
                paths[case.name] = case
            else:
                releases[case.name] = case
    return paths, releases


def local_algorithms() -> list[str]:
    """Registered algorithms in the local or shuffle model (each must have a client-path entry)."""
    return [n for n, cls in available().items() if cls.trust_model in ("local", "shuffle")]


def undeclared(paths: dict[str, ClientPathCase] | None = None) -> list[str]:
    """Local and shuffle algorithms with no client-path case in ``paths`` (default :data:`CLIENT_PATHS`)."""
    listed = {c.label for c in (CLIENT_PATHS if paths is None else paths).values()}
    return [n for n in local_algorithms() if n not in listed]


#: Client-path audits of every registered local and shuffle algorithm, by catalogue name;
#: :data:`RELEASES`: the central releases the algorithms declare.
CLIENT_PATHS, RELEASES = collect(available().values())


def _client_factory(name: str, case: ClientPathCase) -> Callable[..., AuditSpec]:
    def factory(under_noised: float | None = None) -> AuditSpec:
        return client_path_spec(case, under_noised, name=name)

    factory.__doc__ = case.description or f"client code path of {case.label}"
    factory.__name__ = name.replace(":", "_").replace("-", "_")
    return factory


#: Everything ``privbandits audit`` audits: the privacy layer's mechanisms and protocols, the
#: regression estimators, then the algorithms' client code paths and central releases.
AUDITABLE: dict[str, Callable[..., AuditSpec]] = {
    **MECHANISMS,
    **REGRESSION_AUDITS,
    **{name: _client_factory(name, case) for name, case in CLIENT_PATHS.items()},
    **{name: case.spec for name, case in RELEASES.items()},
}

#: Audit one entry of :data:`AUDITABLE` (``privbandits audit NAME``): the privacy layer's
#: :func:`~privbandits.privacy.audit.audit_mechanism` on this catalogue.
audit_mechanism = functools.partial(_audit_entry, catalog=AUDITABLE)
#: Audit every entry of :data:`AUDITABLE` (or ``names``) in catalogue order (``privbandits audit
#: --all``): the privacy layer's :func:`~privbandits.privacy.audit.run_all` on this catalogue.
run_all = functools.partial(_run_entries, catalog=AUDITABLE)


def cases_of(algorithm: str) -> list[str]:
    """Catalogue names of the audit cases the registered ``algorithm`` declares on its class
    (its client paths ``client:<algorithm>[-<variant>]`` and its releases); ``[]`` when it declares
    none."""
    if algorithm not in available():
        raise ValidationError(f"{algorithm!r} is not a registered algorithm")
    return [case.name for case in declared_cases(get(algorithm))]


def resolve(name: str) -> list[str]:
    """The :data:`AUDITABLE` entries ``privbandits audit NAME`` runs.

    ``NAME`` is an entry (itself), ``client:``-less client path (``ldp-ucb`` for
    ``client:ldp-ucb``), or a registered algorithm's name (every case it declares, e.g. ``dp-se``
    for ``dp-se-release``).  Anything else is an error naming the auditable entries and the
    algorithms that declare a case.
    """
    if name in AUDITABLE:
        return [name]
    if f"client:{name}" in AUDITABLE:
        return [f"client:{name}"]
    if name in available():
        names = cases_of(name)
        if names:
            return names
    declaring = [n for n, cls in available().items() if declared_cases(cls)]
    import difflib

    close = difflib.get_close_matches(name, [*AUDITABLE, *declaring], n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    what = (
        f"algorithm {name!r} declares no audit case"
        if name in available()
        else f"unknown mechanism or algorithm {name!r}"
    )
    raise ValidationError(
        f"{what}{hint}; auditable entries: {', '.join(AUDITABLE)}; algorithms with declared "
        f"audits: {', '.join(declaring)}"
    )
