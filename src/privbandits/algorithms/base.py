"""The algorithm contract and the roles an algorithm is written as (the documentation's Concepts: trust models and Concepts: engines).

=====================  ===========================================================================
class                  what the drivers do with it
=====================  ===========================================================================
``Curator``            non-private, central and joint DP: a trusted party sees raw ``(x, a, r)``;
                       :meth:`Curator.select` and :meth:`Curator.update` run every round.
``LocalAlgorithm``     local DP: a :class:`Client` (on the user's device) chooses an arm from the
                       :class:`PublicState` and its own context, then randomizes its own data; the
                       :class:`Server` only receives :class:`PrivatizedMessage` objects.
``ShuffleAlgorithm``   shuffle DP: as local, but messages go to a :class:`Shuffler` role (assign /
                       collect / release) and the server receives a :class:`ShuffledBatch`.
=====================  ===========================================================================

The contract every algorithm follows
------------------------------------
* **Parameters are declared once**: the constructor signature is the parameter list and the class
  attribute ``constraints`` maps each name to its allowed values
  (:mod:`privbandits.core.params`).  Arguments are validated before the constructor body runs and
  stored as attributes of the same name; :meth:`Algorithm.get_params` reads them back
  (scikit-learn style).  Constructors are cheap; all state is created in :meth:`Algorithm.reset`.
* **One calibration**: :meth:`Algorithm.calibrate` maps the public problem description to a
  :class:`~privbandits.algorithms.calibration.Calibration` (noise scales, clip norms, budget
  split, resolved constants, the accounted guarantee).  :attr:`Algorithm.guarantee` and
  :meth:`Algorithm.resolved_params` come from it, identically for every algorithm.
* **Guarantee before reset**: the guarantee depends on the problem (dimension, arms, horizon,
  bounds), so :attr:`Algorithm.guarantee` raises :class:`~privbandits.core.errors.NotResetError`
  before :meth:`Algorithm.reset` for every algorithm; :meth:`Algorithm.guarantee_for` answers for
  any problem without resetting.
* **Compiled steps (optional)**: :meth:`Algorithm.build_kernel` returns the compiled per-round
  steps (:mod:`privbandits.algorithms.kernel`); the role methods then route to them, and the
  compiled driver can run the algorithm.  A user's own numpy algorithm overrides the role methods
  instead and runs on the reference driver.

The roles (:class:`Client`, :class:`BatchClient`, :class:`Server`, :class:`Shuffler`) are declared in
:mod:`privbandits.algorithms.roles` and the roles built from a compiled kernel
(:class:`KernelClient`, :class:`KernelServer`) in :mod:`privbandits.algorithms.kernel`; this module
re-exports them.

All arrays carry the replication axis ``R`` first: one call advances all replications at once.
Contexts are ``(R, K, d)`` in the single-parameter setting and ``(R, d)`` in the multi-parameter
setting.
"""

from __future__ import annotations

import functools
import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from privbandits.algorithms.calibration import (
    NON_PRIVATE_CALIBRATION,
    Calibration,
    warn_if_not_strict,
)
from privbandits.algorithms.kernel import CuratorKernel, KernelClient, KernelServer, LocalKernel
from privbandits.algorithms.roles import BatchClient, Client, Server, Shuffler
from privbandits.core.convex import ConvexSpec
from privbandits.core.errors import NotResetError, ValidationError
from privbandits.core.params import Constraint, validate_params
from privbandits.core.rng import Streams
from privbandits.core.spec import SETTINGS, EnvSpec
from privbandits.core.validation import check_int
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.inputs import check_device_inputs
from privbandits.privacy.ranges import OutputRange

if TYPE_CHECKING:
    from privbandits.algorithms.audit import AuditCase

__all__ = [
    "SETTINGS",
    "Algorithm",
    "BatchClient",
    "BatchedAlgorithm",
    "Client",
    "Curator",
    "EnvSpec",
    "KernelClient",
    "KernelServer",
    "LocalAlgorithm",
    "Server",
    "ShuffleAlgorithm",
    "Shuffler",
    "argmax_random_ties",
]


def argmax_random_ties(
    scores: np.ndarray, rng: np.random.Generator, *, atol: float = 0.0
) -> np.ndarray:
    """Row-wise argmax of ``scores`` (R, K) with ties (within ``atol``) broken uniformly at random.

    For numpy algorithms (compiled kernels use :func:`privbandits.algorithms.kernel.argmax_ties`).
    When no row has a tie this is one argmax and consumes no randomness.
    """
    tied = scores >= np.maximum.reduce(scores, axis=1, keepdims=True) - atol
    if np.count_nonzero(tied) == scores.shape[0]:
        return tied.argmax(axis=1)
    keys = rng.random(scores.shape) * tied
    return np.argmax(keys, axis=1)


def _wrap_init(cls: type[Algorithm]) -> None:
    """Validate and store the constructor arguments of ``cls`` before its body runs."""
    orig = cls.__dict__["__init__"]
    sig = inspect.signature(orig)
    for p in list(sig.parameters.values())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(
                f"{cls.__name__}.__init__ must list its parameters explicitly (no *args/**kwargs)"
            )

    @functools.wraps(orig)
    def __init__(self: Algorithm, *args: Any, **kwargs: Any) -> None:
        who = type(self).name or type(self).__name__  # a subclass may inherit this constructor
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError as exc:
            allowed = ", ".join(list(sig.parameters)[1:])
            raise ValidationError(f"{who}: {exc}; parameters are: {allowed}") from None
        bound.apply_defaults()
        values = dict(list(bound.arguments.items())[1:])
        checked = validate_params(who, type(self).all_constraints(), values)
        for key, value in checked.items():
            setattr(self, key, value)
        orig(self, **checked)

    cls.__init__ = __init__  # type: ignore[method-assign]
    cls._signature = sig  # type: ignore[attr-defined]


class Algorithm(ABC):
    """Base class of every bandit algorithm (see the module docstring for the contract).

    Class attributes describe the algorithm for the registry, the README table and the
    conformance suite.
    """

    #: Registry name, e.g. ``"linucb"``.
    name: ClassVar[str] = ""
    #: One of :data:`privbandits.privacy.guarantee.TRUST_MODELS`.
    trust_model: ClassVar[str] = "none"
    #: Settings the algorithm supports.
    settings: ClassVar[tuple[str, ...]] = ("single",)
    #: Link names the algorithm supports (``("*",)`` = any).
    links: ClassVar[tuple[str, ...]] = ("identity",)
    #: Paper citation shown in tables, e.g. ``"Abbasi-Yadkori et al. 2011"``.
    paper: ClassVar[str] = ""
    #: Registry name of the non-private algorithm a private one adds noise to (its "twin");
    #: figures draw the two in one hue, the non-private one dashed.
    twin: ClassVar[str | None] = None
    #: Allowed values of the constructor parameters (merged along the class hierarchy).
    constraints: ClassVar[Mapping[str, Constraint]] = {}
    #: Small parameter sets the conformance suite runs (each a dict of constructor arguments).
    test_params: ClassVar[tuple[dict[str, Any], ...]] = ({},)
    #: Environments the conformance suite runs the algorithm on: "synthetic" and/or "finite".
    test_envs: ClassVar[tuple[str, ...]] = ("synthetic",)
    #: Whether the algorithm plays continuous actions (query points of a bandit convex optimization
    #: problem, ``kind = "convex"``) instead of arm indices.
    continuous_actions: ClassVar[bool] = False

    #: Calibration preset; algorithms with presets declare ``preset`` as a parameter.
    preset: str = "none"
    _signature: ClassVar[inspect.Signature]

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The empirical privacy audits of this algorithm (``privbandits audit``), declared beside it.

        Each a :class:`~privbandits.algorithms.audit.ClientPathCase` (the client code path; every
        local and shuffle algorithm declares at least one) or a
        :class:`~privbandits.algorithms.audit.ReleaseCase` (a central release).  Only a class's own
        declaration counts (a subclass declares its own); default: none.
        """
        return ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            _wrap_init(cls)

    def __init__(self, **_unused: Any) -> None:
        pass

    def plays_continuous_actions(self) -> bool:
        """Whether this instance proposes query points on a loss environment (``kind = "convex"``);
        an algorithm that wraps another one answers for it."""
        return self.continuous_actions

    @classmethod
    def all_constraints(cls) -> dict[str, Constraint]:
        """Constraints of this class and its bases (subclasses override entries)."""
        merged: dict[str, Constraint] = {}
        for klass in reversed(cls.__mro__):
            merged.update(getattr(klass, "__dict__", {}).get("constraints", {}))
        return merged

    @classmethod
    def param_names(cls) -> tuple[str, ...]:
        """Constructor parameter names (the parameter list)."""
        sig = getattr(cls, "_signature", None)
        return () if sig is None else tuple(list(sig.parameters)[1:])

    # -- description -------------------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        """Hyper-parameters as validated by the constructor (JSON-serializable)."""
        return {k: getattr(self, k) for k in self.param_names()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # -- calibration -------------------------------------------------------------------------
    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Resolve noise scales, clip norms, budget split and constants on problem ``spec``.

        Pure: depends on the parameters and ``spec`` only.  Non-private algorithms return the
        non-private calibration (they may record resolved constants too).
        """
        return NON_PRIVATE_CALIBRATION

    def guarantee_for(self, spec: EnvSpec) -> PrivacyGuarantee:
        """The accounted guarantee this configuration would have on problem ``spec``."""
        return self.calibrate(spec).guarantee

    @property
    def calibration(self) -> Calibration:
        """The calibration of the current run (after :meth:`reset`)."""
        cal = self.__dict__.get("_calibration")
        if cal is None:
            raise NotResetError(
                f"{self.name}: the calibration and guarantee depend on the problem (d, K, horizon, bounds); "
                "call reset(...) or simulate(...) first, or use guarantee_for(spec)"
            )
        return cal

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """The accounted privacy guarantee of the current run (raises before :meth:`reset`)."""
        return self.calibration.guarantee

    def resolved_params(self) -> dict[str, Any]:
        """Every constant the current run uses after resolving presets (raises before reset)."""
        return dict(self.calibration.resolved)

    def output_ranges(self) -> dict[str, OutputRange]:
        """The output set of each field of this run's reports, declared by its mechanism (empty:
        not declared).  From the typed calibration's
        :meth:`~privbandits.algorithms.calibration.Constants.output_ranges` by default; raises
        before :meth:`reset`."""
        cal, spec = self.calibration, self.spec
        if cal.constants is None:
            return {}
        return cal.constants.output_ranges(spec.context_bound, spec.reward_range)

    # -- lifecycle ---------------------------------------------------------------------------
    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        """Start a fresh run of ``replications`` independent copies on problem ``spec``.

        Validates the setting and link, calibrates (warning when the calibration is not the
        default provable one) and builds the compiled kernel if the algorithm has one.
        Subclasses that build numpy state extend this and call ``super().reset`` first.
        """
        if spec.setting not in self.settings:
            fix = (
                'in an experiment file set setting = "single" under [env] (a synthetic environment) or '
                'encoding = "shared" (a supervised data set: one context per arm)'
                if "single" in self.settings
                else 'in an experiment file set setting = "multi" under [env] (a synthetic environment) or '
                'encoding = "disjoint" (a supervised data set: one context per round)'
            )
            raise ValidationError(
                f"algorithm {self.name!r} supports settings {self.settings}, got setting={spec.setting!r}; {fix}"
            )
        if "*" not in self.links and spec.link.name not in self.links:
            raise ValidationError(
                f"algorithm {self.name!r} supports links {self.links}, got link={spec.link.name!r}"
            )
        self.spec = spec
        self.R = check_int("replications", replications, 1)
        self.streams = streams
        cal = self.calibrate(spec)
        self._calibration = cal
        warn_if_not_strict(self.name, cal, stacklevel=4)
        self.kernel = self.build_kernel()

    def build_kernel(self) -> CuratorKernel | LocalKernel | None:
        """The compiled per-round steps and state of a fresh run (None = numpy roles only).

        Called at the end of :meth:`reset` (``self.spec``, ``self.R``, ``self.streams`` and
        ``self.calibration`` are set).
        """
        return None

    def estimate(self) -> np.ndarray | None:
        """Current parameter estimate: ``(R, d)`` (single) or ``(R, K, d)`` (multi), or None."""
        kernel = getattr(self, "kernel", None)
        return None if kernel is None else kernel.estimate()


class Curator(Algorithm):
    """A trusted party that sees raw data: non-private, central-DP and joint-DP algorithms.

    With a :class:`~privbandits.algorithms.kernel.CuratorKernel`, :meth:`select` and
    :meth:`update` run its compiled steps; numpy algorithms override both.  Either way the round's
    data reach them checked (shapes, dtypes, arm indices, one row per replication): a subclass's
    own ``select`` / ``update`` is wrapped in the same check (loss environments, whose actions are
    points, are checked by their driver).
    """

    kernel: CuratorKernel | None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("select", "update"):
            fn = cls.__dict__.get(name)
            if fn is not None and not getattr(fn, "_checked_inputs", False):
                setattr(cls, name, _checked_curator_step(fn, name))

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        """Choose arms (R,) for round ``t`` (0-based) given contexts."""
        k = self._curator_kernel()
        t = self._round(t)
        X, _, _ = self._curator_inputs(contexts)
        out = np.empty(self.R, dtype=np.int64)
        k.loops.select_all(k.params, k.state, t, X, self.streams.policy, out)
        return out

    def update(
        self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        """Incorporate the round's feedback."""
        k = self._curator_kernel()
        t = self._round(t)
        X, a, y = self._curator_inputs(contexts, actions, rewards)
        k.loops.update_all(k.params, k.state, t, X, a, y, self.streams.server)

    @staticmethod
    def _round(t: object) -> int:
        """The 0-based round index: an integer >= 0 (a compiled step divides by functions of it)."""
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 0:
            raise ValidationError(f"round index t must be an integer >= 0, got {t!r}")
        return int(t)

    def _curator_inputs(
        self, contexts: object, actions: object = None, rewards: object = None
    ) -> tuple[np.ndarray, Any, Any]:
        """The round's data as the arrays the compiled steps read: one row per replication,
        shapes, dtypes and indices checked (:func:`~privbandits.privacy.inputs.check_device_inputs`)."""
        X, a, y = check_device_inputs(self.spec, contexts, actions, rewards, bound=False)
        if X.shape[0] != self.R:
            raise ValidationError(
                f"contexts have {X.shape[0]} rows; the run has R={self.R} replications"
            )
        return X, a, y

    def _curator_kernel(self) -> CuratorKernel:
        k = getattr(self, "kernel", None)
        if not isinstance(k, CuratorKernel):
            raise NotImplementedError(
                f"{type(self).__name__} must implement select/update or build_kernel"
            )
        return k


def _checked_curator_step(fn: Any, name: str) -> Any:
    """``fn`` (a curator's ``select`` or ``update``) called with checked arrays."""
    if name == "select":

        @functools.wraps(fn)
        def select(self: Curator, t: int, contexts: np.ndarray) -> np.ndarray:
            if isinstance(self.spec, ConvexSpec):
                return fn(self, self._round(t), contexts)
            return fn(self, self._round(t), self._curator_inputs(contexts)[0])

        select._checked_inputs = True  # type: ignore[attr-defined]
        return select

    @functools.wraps(fn)
    def update(
        self: Curator, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        if isinstance(self.spec, ConvexSpec):
            return fn(self, self._round(t), contexts, actions, rewards)  # type: ignore[no-any-return]
        return fn(self, self._round(t), *self._curator_inputs(contexts, actions, rewards))  # type: ignore[no-any-return]

    update._checked_inputs = True  # type: ignore[attr-defined]
    return update


class LocalAlgorithm(Algorithm):
    """An algorithm in the local trust model: a :class:`Client` plus a :class:`Server`.

    With a :class:`~privbandits.algorithms.kernel.LocalKernel` the roles are built from it in
    :meth:`reset`; numpy algorithms build ``self.client`` and ``self.server`` themselves.
    """

    trust_model: ClassVar[str] = "local"
    client: Client
    server: Server

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        if isinstance(self.kernel, LocalKernel):
            self.client = KernelClient(self.kernel, spec)
            self.server = KernelServer(self.kernel)

    def estimate(self) -> np.ndarray | None:
        return self.server.estimate()


class ShuffleAlgorithm(LocalAlgorithm):
    """An algorithm in the shuffle model: users' messages reach the server only via the shuffler.

    ``reset`` builds ``self.shuffler`` (a :class:`Shuffler` on the shuffler stream); subclasses
    may replace it with a subclass that assigns a public schedule.
    """

    trust_model: ClassVar[str] = "shuffle"
    shuffler: Shuffler

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        self.shuffler = Shuffler(streams.shuffler)

    @abstractmethod
    def batch_ends(self, t: int) -> bool:
        """True when round ``t`` (0-based) closes a batch, so the shuffler releases it."""


@runtime_checkable
class BatchedAlgorithm(Protocol):
    """Batched exploration on a fixed action set whose releases can be simulated in aggregate.

    The exact aggregate driver (:mod:`privbandits.engine.aggregate`, ``engine="aggregate"``) runs
    such an algorithm batch by batch instead of round by round (the documentation's Concepts: engines): within a batch
    each scheduled action is pulled a public number of times in a uniformly random order, so the
    per-action reward sums, the released (noisy) sums and the regret at any round are drawn from
    their exact distributions.  The per-round / per-user path stays the reference.  Members
    (after :meth:`Algorithm.reset`):

    ``start_batches(A)``
        Creates the run's role-free elimination engine on the public action sets ``A``
        (R, K, d), installs it in the role that owns it (curator or untrusted server), plans the
        first batch and returns the engine: ``running()`` -> plan of the batches being played
        (``rows``, ``counts`` (n, K), ``n_total``), ``plan_batch(rows)``, ``view(rows)``,
        ``finish_batch(plan, r_hat)``, ``committed`` (R,), ``theta`` (R, d), ``exploring()``.
        Both drivers call it before the first round (the action catalogue is public).
    ``collector``
        The release of a completed batch: ``collect(plan, sums, rng)`` maps the per-action sums
        of the (clipped) rewards to what the algorithm releases, *exactly in distribution* as the
        per-user path would; its optional attribute ``clip`` (``(lo, hi)`` or None) is the
        clipping applied to each reward.

    Optional class attributes: ``aggregate_streams = (order, noise)`` names the
    :class:`~privbandits.core.rng.Streams` roles of the within-batch order and of the release
    noise (default ``("policy", "server")``); ``aggregate_exact = False`` opts out.
    """

    collector: Any

    def start_batches(self, A: np.ndarray) -> Any:
        """Create, install and return the run's elimination engine on the action sets ``A``."""
        ...
