"""The two sides of LDP-OnePoint: the user's randomizer and the server around the black box.

Zheng, Cai, Huang, Li & Wang (2020), Algorithm 1::

    server -> user t : x_t = A.propose()                       (public: the query point / arm)
    user t           : v = f_t(x_t);  send m_t = clip(v) + Z_t
    server           : A.update(m_t)                            (A sees m_t only)

The black box ``A`` is a non-private :class:`~privbandits.algorithms.base.Curator` held by the
server only.  In the context-free setting the decision set ``[K]`` is public, so ``A`` sees the
canonical catalogue of one-hot arm features ``e_1, ..., e_K``; the user's own features and reward
never leave the client.
"""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.base import Client, Curator, Server
from privbandits.algorithms.ldp_onepoint.privatizer import privatize_values
from privbandits.core.errors import DataBoundError, TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.privacy.inputs import check_client_inputs

__all__ = ["OnePointClient", "OnePointServer"]


class OnePointClient(Client):
    """User side: play the public query arm, privatize the own reward (Algorithm 1, lines 4-7)."""

    def __init__(self, K: int, lo: float, hi: float, clip: bool, scale: float, mechanism: str,
                 context_bound: float) -> None:
        self.K, self.lo, self.hi, self.clip = K, lo, hi, clip
        self.scale, self.mechanism = scale, mechanism
        self.context_bound = context_bound

    def choose(self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if "points" in public:  # bandit convex optimization: the query point
            return np.array(public["points"], dtype=float)
        return np.array(public["action"], dtype=np.int64)

    def randomize(self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray,
                  rewards: np.ndarray, rng: np.random.Generator) -> PrivatizedMessage:
        raw = np.asarray(rewards, dtype=float)
        y = np.ascontiguousarray(raw[:, 0] if raw.ndim == 2 and raw.shape[1] == 1 else raw)
        if y.ndim != 1:
            raise DataBoundError(f"LDP-OnePoint: one value per user is privatized (one-point feedback), got shape "
                                 f"{raw.shape}")
        if "points" in public:  # the user's loss parameters are not feature vectors: finiteness only
            check_client_inputs(np.zeros((y.shape[0], 1)), y, 1.0)
            if not np.isfinite(contexts).all():
                raise DataBoundError("the user's loss parameters contain NaN or infinite values")
        else:
            check_client_inputs(np.asarray(contexts, dtype=float), y, self.context_bound)
        if not self.clip and y.size and (y.min() < self.lo or y.max() > self.hi):
            raise DataBoundError(
                f"a reward {y.min() if y.min() < self.lo else y.max():g} lies outside the declared range "
                f"[{self.lo:g}, {self.hi:g}] and clip=False: LDP-OnePoint needs bounded losses "
                "(turn clipping on or declare a wider range)")
        out = np.empty_like(y)
        privatize_values(rng, y, self.lo, self.hi, self.clip, self.scale, self.mechanism == "laplace", out)
        return PrivatizedMessage({"value": out}, f"ldp-onepoint/{self.mechanism}")


class OnePointServer(Server):
    """Server side: proposes the black box's arm and feeds it the privatized values only."""

    def __init__(self, base: Curator, K: int, R: int, mechanism: str, points: int | None = None) -> None:
        self.base = base
        self.K, self.R, self.points = K, R, points
        self.mechanism = f"ldp-onepoint/{mechanism}"
        # context-free: the public one-hot catalogue; bandit convex optimization: no public contexts
        catalogue = np.broadcast_to(np.eye(K), (R, K, K)).copy() if points is None else np.zeros((R, 0))
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
                    f"{a.dtype} and shape {a.shape}")
            return a.astype(float)
        if a.shape != (self.R,) or not np.issubdtype(a.dtype, np.integer):
            raise ValidationError(
                f"base algorithm {name!r} violates the black-box interface: select(t, contexts) must return "
                f"an integer array of shape ({self.R},), got dtype {a.dtype} and shape {a.shape}")
        if a.size and (a.min() < 0 or a.max() >= self.K):
            raise ValidationError(
                f"base algorithm {name!r} violates the black-box interface: arms must lie in [0, {self.K}), "
                f"got range [{a.min()}, {a.max()}]")
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
                "raw rewards never reach the server in the local model")
        if message.mechanism != self.mechanism:
            raise TrustBoundaryError(f"expected a message of randomizer {self.mechanism!r}, got {message.mechanism!r}")
        if set(message.payload) != {"value"}:
            raise TrustBoundaryError(f"payload keys must be ('value',), got {tuple(message.payload)}")
        m = np.asarray(message.payload["value"], dtype=float)
        if m.shape != (self.R,):
            raise TrustBoundaryError(f"expected one value per replication, shape ({self.R},), got {m.shape}")
        if self._proposal is None:  # a round without a broadcast: the proposal is still the public one
            self._proposal = self._propose()
        self.base.update(t, self.catalogue, self._proposal, m if self.points is None else m[:, None])
        self._proposal = None
        self.t = t + 1
