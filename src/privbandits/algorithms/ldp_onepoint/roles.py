"""The two sides of LDP-OnePoint: the user's randomizer and the server around the black box.

Zheng, Cai, Huang, Li & Wang (2020), Algorithm 1::

    server -> user t : x_t = A.propose()                       (public: the query point / arm)
    user t           : v = f_t(x_t);  send m_t = clip(v) + Z_t
    server           : A.update(m_t)                            (A sees m_t only)

The black box ``A`` is a non-private :class:`~privbandits.algorithms.base.Curator` held by the
server only.  In the context-free setting the decision set ``[K]`` is public, so ``A`` sees the
canonical catalogue of one-hot arm features ``e_1, ..., e_K``; the user's own features and reward
never leave the client.  The server is untrusted: the device validates the proposal it is sent
against its declared public space before playing it.
"""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.base import Client, Curator, Server
from privbandits.algorithms.bco.problem import (
    check_loss_parameters,
    check_losses,
    check_points,
    query_points_field,
)
from privbandits.algorithms.ldp_onepoint.privatizer import add_value_noise, encode_values
from privbandits.core.convex import ConvexSpec
from privbandits.core.errors import DataBoundError, TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.public_space import PublicField, PublicSpace, dims_of
from privbandits.core.spec import EnvSpec
from privbandits.privacy.device import DeviceNoise, DeviceSensitivity
from privbandits.privacy.inputs import check_device_inputs

__all__ = ["OnePointClient", "OnePointServer"]


class OnePointClient(Client):
    """User side: play the public query arm (or point), privatize the own value (Algorithm 1, lines 4-7).

    The server that proposes the arm is untrusted: the device accepts an arm index in ``[0, K)``
    (or, on a loss environment, a point of the decision set) and nothing else
    (:meth:`public_space`); its message -- the clipped value plus noise of a fixed scale -- does not
    depend on the proposal, so the accounted sensitivity ``(hi - lo) / scale`` holds whatever the
    server sends.

    Parameters
    ----------
    spec : EnvSpec
        The problem (a :class:`~privbandits.core.convex.ConvexSpec` for bandit convex optimization).
    lo, hi : float
        Clipping range of the value.
    clip : bool
        Clip (default) or reject values outside ``[lo, hi]``.
    scale : float
        Gaussian std or Laplace scale of the noise.
    mechanism : {"gaussian", "laplace"}
    sensitivity : float
        The accounted sensitivity of the value (``hi - lo``).
    """

    def __init__(
        self,
        spec: EnvSpec,
        lo: float,
        hi: float,
        clip: bool,
        scale: float,
        mechanism: str,
        sensitivity: float,
    ) -> None:
        self.spec = spec
        self.K, self.lo, self.hi, self.clip = spec.K, lo, hi, clip
        self.scale, self.mechanism, self.value_sensitivity = scale, mechanism, sensitivity
        self.convex = isinstance(spec, ConvexSpec)
        if isinstance(spec, ConvexSpec):
            field = query_points_field(spec.domain, 1)
        else:
            field = PublicField("action", ("R",), kind="i", low=0, high=spec.K - 1)
        self._key = field.name
        self._space = PublicSpace((field,))

    # -- the device's declarations ------------------------------------------------------------
    def public_space(self) -> PublicSpace:
        """One arm index in ``[0, K)`` per user, or one query point ``(R, 1, d)`` in the decision set."""
        return self._space

    def sensitivity(self) -> DeviceSensitivity:
        """``(hi - lo) / scale``: l2 in units of the Gaussian std, l1 in units of the Laplace scale."""
        return DeviceSensitivity(
            "l1" if self.mechanism == "laplace" else "l2", self.value_sensitivity / self.scale
        )

    def noise(
        self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray
    ) -> DeviceNoise:
        """The same scale for every user and every public state."""
        R = self._users(contexts)
        self._proposal(public, R)
        scale = np.full((R, 1), self.scale)
        return (
            DeviceNoise.laplace(scale)
            if self.mechanism == "laplace"
            else DeviceNoise.gaussian(scale)
        )

    def _users(self, contexts: object, R: int | None = None) -> int:
        """``R`` from the user's own contexts (loss parameters ``(R, d)`` on a loss environment),
        checked against the problem; they do not enter the message."""
        if isinstance(self.spec, ConvexSpec):
            return int(
                check_loss_parameters("LDP-OnePoint", contexts, R, self.spec.param_dim).shape[0]
            )
        X = check_device_inputs(self.spec, contexts, bound=False)[0]
        if R is not None and X.shape[0] != R:
            raise ValidationError(f"LDP-OnePoint: {X.shape[0]} users' contexts for {R} rewards")
        return int(X.shape[0])

    def _proposal(self, public: PublicState, R: int) -> np.ndarray:
        """The server's proposal from a validated public state."""
        return np.asarray(self._space.validate(public, dims_of(self.spec, R))[self._key])

    def _values(
        self, public: PublicState, contexts: object, actions: object, rewards: object
    ) -> np.ndarray:
        """The user's validated values ``(R,)``: the losses at the query point (loss environment)
        or the rewards of the played arms, with the contexts and actions checked against the
        problem.  The message is the value alone: the proposal is validated, not read."""
        if self.convex:
            y = check_losses("LDP-OnePoint", rewards, None, 1)[:, 0]
            self._users(contexts, y.shape[0])
            if actions is not None:
                assert isinstance(self.spec, ConvexSpec)
                check_points("LDP-OnePoint", actions, y.shape[0], 1, self.spec.domain)
        else:
            _, _, r = check_device_inputs(self.spec, contexts, actions, rewards)
            assert r is not None
            y = r
        self._proposal(public, y.shape[0])
        if not self.clip and y.size and (y.min() < self.lo or y.max() > self.hi):
            raise DataBoundError(
                f"a reward {y.min() if y.min() < self.lo else y.max():g} lies outside the declared range "
                f"[{self.lo:g}, {self.hi:g}] and clip=False: LDP-OnePoint needs bounded losses "
                "(turn clipping on or declare a wider range)"
            )
        return y

    def _encode(self, y: np.ndarray) -> np.ndarray:
        out = np.empty_like(y)
        encode_values(y, self.lo, self.hi, self.clip, out)
        return out

    def encode(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
    ) -> np.ndarray:
        """The clipped value ``(R, 1)`` (before noise)."""
        return self._encode(self._values(public, contexts, actions, rewards))[:, None]

    # -- the round ----------------------------------------------------------------------------
    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        prop = self._proposal(public, self._users(contexts))
        return np.array(prop, dtype=float if self.convex else np.int64)

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        out = self._encode(self._values(public, contexts, actions, rewards))
        add_value_noise(rng, self.scale, self.mechanism == "laplace", out)
        return PrivatizedMessage({"value": out}, f"ldp-onepoint/{self.mechanism}")


class OnePointServer(Server):
    """Server side: proposes the black box's arm and feeds it the privatized values only."""

    def __init__(
        self,
        base: Curator,
        K: int,
        R: int,
        mechanism: str,
        points: int | None = None,
        params: int = 1,
    ) -> None:
        self.base = base
        self.K, self.R, self.points = K, R, points
        self.mechanism = f"ldp-onepoint/{mechanism}"
        # context-free: the public one-hot catalogue; bandit convex optimization: no public contexts,
        # zero loss parameters of the declared width ``params`` (the users' own stay on their devices)
        catalogue = (
            np.broadcast_to(np.eye(K), (R, K, K)).copy()
            if points is None
            else np.zeros((R, params))
        )
        catalogue.setflags(write=False)
        self.catalogue = catalogue
        self.t = 0
        self._proposal: np.ndarray | None = None

    def _propose(self) -> np.ndarray:
        """The black box's proposal: arms (R,) or, for bandit convex optimization, points (R, 1, d)."""
        a = np.asarray(self.base.select(self.t, self.catalogue))
        name = self.base.name or type(self.base).__name__
        if self.points is not None:
            if a.shape != (self.R, 1, self.points) or not np.issubdtype(a.dtype, np.floating):
                raise ValidationError(
                    f"base algorithm {name!r} violates the black-box interface: on a loss environment select must "
                    f"return one query point per replication, shape ({self.R}, 1, {self.points}), got dtype "
                    f"{a.dtype} and shape {a.shape}"
                )
            return a.astype(float)
        if a.shape != (self.R,) or not np.issubdtype(a.dtype, np.integer):
            raise ValidationError(
                f"base algorithm {name!r} violates the black-box interface: select(t, contexts) must return "
                f"an integer array of shape ({self.R},), got dtype {a.dtype} and shape {a.shape}"
            )
        if a.size and (a.min() < 0 or a.max() >= self.K):
            raise ValidationError(
                f"base algorithm {name!r} violates the black-box interface: arms must lie in [0, {self.K}), "
                f"got range [{a.min()}, {a.max()}]"
            )
        return a.astype(np.int64)

    def public_state(self) -> PublicState:
        if self._proposal is None:
            self._proposal = self._propose()
        key = "action" if self.points is None else "points"
        return PublicState({key: self._proposal.copy()})

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        if not isinstance(message, PrivatizedMessage):
            raise TrustBoundaryError(
                f"the server only accepts PrivatizedMessage objects, got {type(message).__name__}; "
                "raw rewards never reach the server in the local model"
            )
        if message.mechanism != self.mechanism:
            raise TrustBoundaryError(
                f"expected a message of randomizer {self.mechanism!r}, got {message.mechanism!r}"
            )
        if set(message.payload) != {"value"}:
            raise TrustBoundaryError(
                f"payload keys must be ('value',), got {tuple(message.payload)}"
            )
        raw = np.asarray(message.payload["value"])
        if raw.dtype.kind not in "fiu" or raw.shape != (self.R,):
            raise TrustBoundaryError(
                f"expected one real value per replication, shape ({self.R},), got dtype "
                f"{raw.dtype} and shape {raw.shape}"
            )
        m = raw.astype(float)
        if not np.isfinite(m).all():
            raise TrustBoundaryError(
                "a privatized value is NaN or infinite; the server refuses the message"
            )
        if (
            self._proposal is None
        ):  # a round without a broadcast: the proposal is still the public one
            self._proposal = self._propose()
        self.base.update(
            t, self.catalogue, self._proposal, m if self.points is None else m[:, None]
        )
        self._proposal = None
        self.t = t + 1
