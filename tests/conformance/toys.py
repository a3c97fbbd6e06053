"""Small private algorithms that exercise the conformance suite's local and shuffle branches.

They are *not* registered: the suite's self-tests run its checks on them directly, so the
trust-boundary spies and the reference/compiled comparison of a local kernel are verified whatever
the state of the registry.

* :class:`ToyLocal`: epsilon-greedy on Laplace-privatized per-arm reward sums and counts, written
  as a :class:`~privbandits.algorithms.kernel.LocalKernel`.  Each user sends the vector
  ``(e_a clip(y), e_a) + Lap(b)^{2K}``; changing ``(a, y)`` moves it by at most
  ``2 c + 2`` in l1 (``c = max |reward range|``), so ``b = (2 c + 2) / epsilon`` gives
  ``epsilon``-LDP (Laplace mechanism, Dwork et al. 2006).
* :class:`ToyShuffle`: the same users in the shuffle model (numpy roles): each user sends
  ``clip(y) + Lap((hi - lo) / epsilon)`` for a uniformly random arm; the shuffler releases every
  8 users.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms.base import Client, LocalAlgorithm, Server, ShuffleAlgorithm
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import LocalKernel, MessageLayout
from privbandits.core.messages import PrivatizedMessage, PublicState, ShuffledBatch
from privbandits.core.params import Epsilon, Real
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.samplers import add_laplace, clip_scalar

__all__ = ["ToyLocal", "ToyShuffle"]


@nb.njit(cache=True)
def _choose(params, public, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    K, explore = params[0], params[4]
    sums, counts = public
    if t < K:
        return t
    if rng.random() < explore:
        return min(int(rng.random() * K), K - 1)
    best, arg = -np.inf, 0
    for k in range(K):
        m = sums[r, k] / max(counts[r, k], 1.0)
        if m > best:
            best, arg = m, k
    return arg


@nb.njit(cache=True)
def _randomize(params, public, r, t, X, a, y, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    K, lo, hi, scale = params[0], params[1], params[2], params[3]
    for i in range(out.shape[0]):
        out[i] = 0.0
    out[a] = clip_scalar(y, lo, hi)
    out[K + a] = 1.0
    add_laplace(rng, scale, out)


@nb.njit(cache=True)
def _update(params, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    K = params[0]
    sums, counts = public
    for k in range(K):
        sums[r, k] += msg[k]
        counts[r, k] += msg[K + k]
    server[0][r] += 1.0


class ToyLocal(LocalAlgorithm):
    """Epsilon-greedy on Laplace-privatized arm statistics (a local kernel; test toy)."""

    name = "toy-local"
    settings = ("single", "multi")
    links = ("*",)
    paper = "test toy (Laplace mechanism, Dwork et al. 2006)"
    constraints: ClassVar = {"epsilon": Epsilon, "explore": Real(0.0, 1.0)}

    def __init__(self, epsilon: float = 1.0, explore: float = 0.1) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        c = max(abs(spec.reward_range[0]), abs(spec.reward_range[1]))
        scale = (2.0 * c + 2.0) / self.epsilon
        return Calibration(
            PrivacyGuarantee("local", self.epsilon), {"scale": scale}, "strict", (self.epsilon, 0.0)
        )

    def build_kernel(self) -> LocalKernel:
        K, R = self.spec.K, self.R
        lo, hi = self.spec.reward_range
        params = (K, float(lo), float(hi), float(self.calibration.resolved["scale"]), self.explore)
        public = (np.zeros((R, K)), np.zeros((R, K)))
        layout = MessageLayout("laplace", (("sum", (K,)), ("count", (K,))))
        return LocalKernel(
            _choose, _randomize, _update, params, public, (np.zeros(R),), ("sums", "counts"), layout
        )


class _ShuffleClient(Client):
    def __init__(self, K: int, lo: float, hi: float, scale: float) -> None:
        self.K, self.lo, self.hi, self.scale = K, lo, hi, scale

    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        return rng.integers(0, self.K, contexts.shape[0])

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        y = np.clip(rewards, self.lo, self.hi) + rng.laplace(0.0, self.scale, rewards.shape)
        return PrivatizedMessage({"y": y}, mechanism="laplace")


class _ShuffleServer(Server):
    def __init__(self, R: int) -> None:
        self.total, self.n = np.zeros(R), 0

    def public_state(self) -> PublicState:
        return PublicState(mean=self.total / max(self.n, 1))

    def receive_batch(self, t: int, batch: ShuffledBatch) -> None:
        self.total += batch["y"].sum(axis=1)
        self.n += batch.n_users


class ToyShuffle(ShuffleAlgorithm):
    """Uniform play whose users report Laplace-privatized rewards through the shuffler (test toy)."""

    name = "toy-shuffle"
    settings = ("single", "multi")
    links = ("*",)
    paper = "test toy"
    constraints: ClassVar = {"epsilon": Epsilon}

    def __init__(self, epsilon: float = 1.0) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        lo, hi = spec.reward_range
        return Calibration(
            PrivacyGuarantee("shuffle", self.epsilon),
            {"scale": (hi - lo) / self.epsilon},
            "strict",
            (self.epsilon, 0.0),
        )

    def reset(self, spec: EnvSpec, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        lo, hi = spec.reward_range
        self.client = _ShuffleClient(spec.K, lo, hi, self.calibration.resolved["scale"])
        self.server = _ShuffleServer(self.R)

    def batch_ends(self, t: int) -> bool:
        return (t + 1) % 8 == 0
