"""The privacy ledger: the tree of events that produced a guarantee.

A :class:`~privbandits.privacy.guarantee.PrivacyGuarantee` carries the events its accountant
composed (``guarantee.ledger``): which mechanism, at which noise scale and sensitivity, how many
times, under which composition rule, with which amplification.  The tree is serialisable
(:meth:`Event.to_dict`), printed by ``privbandits explain`` (:func:`render`) and gives the
guarantee's notes (:meth:`Event.summary`).

The events follow dp-accounting's ``dp_event`` vocabulary where it has one (Gaussian, Laplace,
self-composition, composition), so a ledger can be recomputed by an independent accountant
(:func:`to_dp_accounting`); the library's own events are the pure local randomizers (the
l2-ball, randomized response and their kin, accounted by their epsilon), the amplification by
shuffling and the shuffled binomial summation (no standard accountant has them) and statements taken as given from a specialised
accountant (:class:`Accounted`, e.g. the binomial summation of Cheu et al.).

Composition rules
-----------------
``basic``       epsilons and deltas add (Dwork & Roth 2014, Thm 3.16)
``zcdp``        zCDP budgets add, converted to ``(epsilon, delta)`` once (Bun & Steinke 2016)
``advanced``    advanced composition (Dwork, Rothblum & Vadhan 2010)
``rdp``         Renyi divergences summed on a common order grid, converted once
``disjoint``    each user takes part in one of the events (a public phase or batch): the
                guarantee is the worst event's
``worst``       the events are the forms one user's change can take (e.g. a change inside or
                outside a data family, or a move between families): the guarantee is the
                worst form's
``joint``       the events are parts of one mechanism accounted as a whole (e.g. two Gaussian
                parts of one message divided by their stds)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "RULES",
    "Accounted",
    "Amplified",
    "BinomialSum",
    "Composed",
    "Event",
    "Gaussian",
    "Laplace",
    "PureLocal",
    "SelfComposed",
    "event_from_dict",
    "render",
    "to_dp_accounting",
]

#: Composition rules a :class:`Composed` or :class:`SelfComposed` event may name.
RULES: tuple[str, ...] = ("basic", "zcdp", "advanced", "rdp", "disjoint", "worst", "joint")


#: Fields that hold child events (:meth:`Event.children`), not parameters (:meth:`Event.fields`).
_CHILD_FIELDS = ("event", "events")


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.6g}"


def _on(what: str) -> str:
    """``" on <what>"`` after a mechanism's name (empty when nothing is named)."""
    return f" on {what}" if what else ""


def _noise_line(
    mechanism: str,
    what: str,
    scale: tuple[str, float],
    sensitivity: tuple[str, float],
    note: str,
) -> str:
    """One additive-noise event: ``"<mechanism> on <what>: <scale name> = <scale>, <norm>
    sensitivity = <sensitivity> (<note>)"``."""
    return (
        f"{mechanism}{_on(what)}: {scale[0]} = {_fmt(scale[1])}, {sensitivity[0]} sensitivity = "
        f"{_fmt(sensitivity[1])} ({note})"
    )


def _lead(what: str) -> str:
    """``"<what>: "`` before a composition (empty when nothing is named)."""
    return f"{what}: " if what else ""


@dataclass(frozen=True)
class Event:
    """One node of the ledger (base class)."""

    #: Short name of the event type (the ``"event"`` key of :meth:`to_dict`).
    kind = "event"

    def children(self) -> tuple[Event, ...]:
        """The events this one composes or transforms."""
        return ()

    def describe(self) -> str:
        """One line: the event without its children."""
        return self.kind

    def fields(self) -> dict[str, Any]:
        """The event's own parameters (JSON values): its dataclass fields in declaration order,
        without the child events (``event``, ``events``: :meth:`children`), mappings as dicts."""
        return {
            f.name: dict(v) if isinstance(v := getattr(self, f.name), Mapping) else v
            for f in dataclasses.fields(self)
            if f.name not in _CHILD_FIELDS
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable tree (``event_from_dict`` reads it back)."""
        out: dict[str, Any] = {"event": self.kind, **self.fields()}
        kids = self.children()
        if kids:
            out["children"] = [k.to_dict() for k in kids]
        return out

    def summary(self) -> str:
        """The tree in one line (the guarantee's notes)."""
        kids = self.children()
        if not kids:
            return self.describe()
        inner = "; ".join(k.summary() for k in kids)
        return f"{self.describe()} of [{inner}]"

    def leaves(self) -> list[Event]:
        """Every event without children, depth first."""
        kids = self.children()
        if not kids:
            return [self]
        return [leaf for k in kids for leaf in k.leaves()]


@dataclass(frozen=True)
class Gaussian(Event):
    """Gaussian noise of std ``sigma`` on a query of l2 ``sensitivity``.

    ``calibration`` says how ``sigma`` was chosen (``analytic``: Balle & Wang 2018; ``classic``:
    Dwork & Roth 2014, Thm A.1; ``zcdp``: ``sigma = Delta / sqrt(2 rho)``; ``given``: a parameter).
    """

    sigma: float
    sensitivity: float = 1.0
    what: str = ""
    calibration: str = "analytic"
    kind = "gaussian"

    @property
    def noise_multiplier(self) -> float:
        """``sigma / sensitivity`` (dp-accounting's parameter)."""
        return math.inf if self.sensitivity == 0 else self.sigma / self.sensitivity

    def describe(self) -> str:
        return _noise_line(
            "Gaussian", self.what, ("sigma", self.sigma), ("l2", self.sensitivity), self.calibration
        )


@dataclass(frozen=True)
class Laplace(Event):
    """Laplace noise of scale ``scale`` on a query of l1 ``sensitivity`` (pure ``sens/scale``-DP)."""

    scale: float
    sensitivity: float = 1.0
    what: str = ""
    kind = "laplace"

    @property
    def epsilon(self) -> float:
        """``sensitivity / scale``."""
        return 0.0 if self.sensitivity == 0 else self.sensitivity / self.scale

    def describe(self) -> str:
        note = f"epsilon = {_fmt(self.epsilon)}"
        return _noise_line(
            "Laplace", self.what, ("scale", self.scale), ("l1", self.sensitivity), note
        )


@dataclass(frozen=True)
class PureLocal(Event):
    """A local randomizer that is ``epsilon``-DP on its whole input (l2-ball, randomized
    response, the sphere sampler, ...); ``params`` records its own constants (radius, ...)."""

    mechanism: str
    epsilon: float
    params: Mapping[str, float] = field(default_factory=dict)
    kind = "pure"

    def describe(self) -> str:
        extra = "".join(f", {k} = {_fmt(v)}" for k, v in self.params.items())
        return f"{self.mechanism}: epsilon = {_fmt(self.epsilon)}{extra}"


@dataclass(frozen=True)
class Accounted(Event):
    """A statement taken from a specialised accountant of the library, not decomposed further
    (e.g. the binomial summation of Cheu et al., accounted by its own Renyi computation).

    ``events`` optionally records what that accountant composed (shown in the tree; the
    statement is the accountant's, not a composition of the children by a standard rule).
    """

    mechanism: str
    epsilon: float
    delta: float = 0.0
    how: str = ""
    events: tuple[Event, ...] = ()
    kind = "accounted"

    def children(self) -> tuple[Event, ...]:
        return tuple(self.events)

    def describe(self) -> str:
        how = f" ({self.how})" if self.how else ""
        d = f", delta = {_fmt(self.delta)}" if self.delta else ""
        return f"{self.mechanism}: epsilon = {_fmt(self.epsilon)}{d}{how}"


@dataclass(frozen=True)
class BinomialSum(Event):
    """One call of the shuffled binomial summation of Cheu, Joseph, Mao & Peng (2022).

    Each of ``n`` users sends, per label (``labels`` summed coordinates), its input at
    precision ``g`` (bias and bound ``Delta``, randomized rounding) plus ``b`` bits of
    ``Bernoulli(p)`` noise; the shuffled sum carries ``Bin(n b, p)`` noise per label, of std
    ``(Delta / g) sqrt(n b p (1 - p))`` in input units, against the l2 replacement
    ``sensitivity`` of one user's input.  No standard accountant covers it (the library's own
    accounts it, :mod:`privbandits.privacy.binomial_accounting`).
    """

    n: int
    b: int
    p: float
    g: float
    Delta: float
    labels: int
    sensitivity: float
    what: str = ""
    kind = "binomial_sum"

    @property
    def noise_std(self) -> float:
        """Std of the binomial noise per label in input units: ``(Delta / g) sqrt(n b p (1 - p))``."""
        return self.Delta / self.g * math.sqrt(self.n * self.b * self.p * (1.0 - self.p))

    def describe(self) -> str:
        what = _on(self.what)
        return (
            f"shuffled binomial sum{what}: n = {self.n} users, b = {self.b} bits of p = "
            f"{_fmt(self.p)} per label ({self.labels} labels), g = {_fmt(self.g)}, Delta = "
            f"{_fmt(self.Delta)}: noise std {_fmt(self.noise_std)}, l2 sensitivity "
            f"{_fmt(self.sensitivity)}"
        )


@dataclass(frozen=True)
class SelfComposed(Event):
    """``count`` runs of ``event`` composed under ``rule``."""

    event: Event
    count: int
    rule: str = "basic"
    what: str = ""
    kind = "self_composed"

    def children(self) -> tuple[Event, ...]:
        return (self.event,)

    def describe(self) -> str:
        what = _lead(self.what)
        return f"{what}{self.count} x ({self.rule} composition)"


@dataclass(frozen=True)
class Composed(Event):
    """``events`` composed under ``rule`` (:data:`RULES`)."""

    events: tuple[Event, ...]
    rule: str = "basic"
    what: str = ""
    kind = "composed"

    def children(self) -> tuple[Event, ...]:
        return tuple(self.events)

    def describe(self) -> str:
        what = _lead(self.what)
        return f"{what}{self.rule} composition"


@dataclass(frozen=True)
class Amplified(Event):
    """Amplification by shuffling ``n`` reports of the local ``event`` (Feldman, McMillan &
    Talwar 2021; ``bound`` = ``closed`` or ``numerical``) to the central ``(epsilon, delta)``."""

    event: Event
    n: int
    bound: str
    epsilon: float
    delta: float
    kind = "shuffle_amplified"

    def children(self) -> tuple[Event, ...]:
        return (self.event,)

    def describe(self) -> str:
        return (
            f"shuffled among n = {self.n} users ({self.bound} bound): epsilon = "
            f"{_fmt(self.epsilon)}, delta = {_fmt(self.delta)}"
        )


_KINDS: dict[str, type[Event]] = {
    c.kind: c
    for c in (
        Gaussian,
        Laplace,
        PureLocal,
        Accounted,
        BinomialSum,
        SelfComposed,
        Composed,
        Amplified,
    )
}


def event_from_dict(data: Mapping[str, Any]) -> Event:
    """Read back a tree written by :meth:`Event.to_dict`."""
    kind = data["event"]
    cls = _KINDS[kind]
    kw = {k: v for k, v in data.items() if k not in ("event", "children")}
    kids = [event_from_dict(c) for c in data.get("children", ())]
    if cls is SelfComposed or cls is Amplified:
        kw["event"] = kids[0]
    elif cls is Composed or (cls is Accounted and kids):
        kw["events"] = tuple(kids)
    return cls(**kw)


def render(event: Event, indent: str = "") -> list[str]:
    """The tree as indented lines (``privbandits explain``)."""
    lines = [f"{indent}{event.describe()}"]
    kids = event.children()
    for i, k in enumerate(kids):
        last = i == len(kids) - 1
        sub = render(k, indent + ("    " if last else "|   "))
        sub[0] = f"{indent}{'`-- ' if last else '|-- '}{sub[0][len(indent) + 4 :]}"
        lines.extend(sub)
    return lines


# --------------------------------------------------------------------------------------------
# an independent accountant
# --------------------------------------------------------------------------------------------
def to_dp_accounting(event: Event) -> Any:
    """The event as a dp-accounting ``DpEvent``, or None where it has no counterpart.

    Gaussian -> ``GaussianDpEvent(sigma / sensitivity)``; Laplace -> ``LaplaceDpEvent``; a pure
    local randomizer -> binary randomized response at its epsilon (the dominating pair of every
    ``epsilon``-DP mechanism); self-composition and composition under ``basic``, ``zcdp``,
    ``advanced``, ``rdp`` -> the corresponding composed events (every such rule is at least as
    loose as the accountant's own).  ``disjoint``, ``worst``, ``joint``, shuffle amplification, binomial sums and
    :class:`Accounted` statements have no counterpart (None).
    """
    import dp_accounting

    if isinstance(event, Gaussian):
        return dp_accounting.GaussianDpEvent(event.noise_multiplier)
    if isinstance(event, Laplace):
        return dp_accounting.LaplaceDpEvent(event.scale / event.sensitivity)
    if isinstance(event, PureLocal):
        # binary randomized response: P(keep) = 1 - p/2 = e^eps / (1 + e^eps)
        return dp_accounting.RandomizedResponseDpEvent(
            noise_parameter=2.0 / (1.0 + math.exp(event.epsilon)), num_buckets=2
        )
    if isinstance(event, SelfComposed) and event.rule in ("basic", "zcdp", "advanced", "rdp"):
        inner = to_dp_accounting(event.event)
        if inner is None:
            return None
        if isinstance(inner, dp_accounting.RandomizedResponseDpEvent):
            # dp-accounting 0.6.0's PLD accountant drops the count of a self-composed
            # randomized response (it composes it once): spell the copies out
            return dp_accounting.ComposedDpEvent([inner] * event.count)
        return dp_accounting.SelfComposedDpEvent(inner, event.count)
    if isinstance(event, Composed) and event.rule in ("basic", "zcdp", "advanced", "rdp"):
        parts = [to_dp_accounting(e) for e in event.events]
        if any(p is None for p in parts):
            return None
        return dp_accounting.ComposedDpEvent(parts)
    return None
