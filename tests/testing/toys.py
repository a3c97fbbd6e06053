"""Small user-defined private algorithms for the shipped checks (not registered).

* :class:`ToyGradientLDP`: a local-DP linear bandit.  The server broadcasts an iterate ``theta``
  (norm at most ``S``) and a public weight ``w`` in ``[0, 100]``; a user sends its weighted
  square-loss gradient ``w (clip(y) - <x_a, theta>) x_a`` clipped to l2 norm ``C`` plus Gaussian
  noise of the analytic calibration (Balle & Wang 2018) at l2 sensitivity ``2 C``.  The device
  declares ``public_space``, ``encode``, ``noise`` and ``sensitivity`` (``2 C / sigma``).
* :class:`ToyNoClip`: the same device without the gradient clip (its guarantee rests on the
  server sending ``w = 1``): the adversarial-server check must fail on it.
* :class:`ToyUndeclaredNoise`: the same device adding half the noise its ``noise`` declares: the
  encode/randomize consistency check must fail on it.
* :class:`ToyKernelLaplace`: epsilon-greedy on Laplace-privatized per-arm reward sums and counts,
  as a compiled :class:`~privbandits.algorithms.kernel.LocalKernel` (both drivers): each user
  sends ``(e_a clip(y), e_a) + Lap(b)^{2K}``, l1 sensitivity ``2 c + 2`` (``c = max |range|``).
* :class:`ToyShuffleLaplace`: a shuffle-model device sending ``clip(y) + Lap(b)`` (pure DP, l1
  sensitivity ``(hi - lo) / b``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms.base import (
    Client,
    KernelClient,
    LocalAlgorithm,
    Server,
    ShuffleAlgorithm,
    argmax_random_ties,
)
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import LocalKernel, MessageLayout
from privbandits.core.messages import PrivatizedMessage, PublicState, ShuffledBatch
from privbandits.core.params import Delta, Epsilon, Real
from privbandits.core.public_space import PublicField, PublicSpace, dims_of
from privbandits.core.spec import EnvSpec
from privbandits.privacy.calibration import gaussian_epsilon, gaussian_sigma_analytic
from privbandits.privacy.device import DeviceNoise, DeviceSensitivity
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.inputs import check_device_inputs
from privbandits.privacy.samplers import add_laplace, clip_scalar

__all__ = [
    "ToyGradientLDP",
    "ToyKernelLaplace",
    "ToyNoClip",
    "ToyShuffleLaplace",
    "ToyUndeclaredNoise",
]

#: Largest public weight the device accepts.
W_MAX = 100.0


class _CheckedClient(Client):
    """A device that checks its inputs at every entry (the memory-safe boundary) and the public
    state against the space it declares (the server is untrusted)."""

    spec: EnvSpec

    def _checked(
        self,
        public: PublicState,
        contexts: np.ndarray,
        actions: object = None,
        rewards: object = None,
        *,
        bound: bool = True,
    ) -> tuple[PublicState, np.ndarray, Any, Any]:
        X, a, y = check_device_inputs(self.spec, contexts, actions, rewards, bound=bound)
        space = self.public_space()
        assert space is not None
        return space.validate(public, dims_of(self.spec, X.shape[0])), X, a, y


class _GradientClient(_CheckedClient):
    clip = True
    noise_factor = 1.0

    def __init__(self, spec: EnvSpec, S: float, C: float, sigma: float) -> None:
        self.spec, self.S, self.C, self.sigma = spec, S, C, sigma

    def public_space(self) -> PublicSpace:
        return PublicSpace(
            (
                PublicField("theta", ("R", "d"), norm=self.S),
                PublicField("w", ("R",), low=0.0, high=W_MAX),
            )
        )

    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        public, contexts, _, _ = self._checked(public, contexts, bound=False)
        scores = np.einsum("rkd,rd->rk", contexts, public["theta"])
        return argmax_random_ties(scores, rng)

    def encode(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
    ) -> np.ndarray:
        lo, hi = self.spec.reward_range
        x = contexts[np.arange(contexts.shape[0]), actions]
        resid = np.clip(rewards, lo, hi) - np.einsum("rd,rd->r", x, public["theta"])
        g = (public["w"] * resid)[:, None] * x
        if self.clip:
            n = np.linalg.norm(g, axis=1, keepdims=True)
            g = g * np.minimum(1.0, self.C / np.maximum(n, 1e-300))
        return g

    def noise(
        self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray
    ) -> DeviceNoise:
        return DeviceNoise.gaussian(np.full((contexts.shape[0], self.spec.d), self.sigma))

    def sensitivity(self) -> DeviceSensitivity:
        return DeviceSensitivity("l2", 2.0 * self.C / self.sigma)

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        public, contexts, actions, rewards = self._checked(public, contexts, actions, rewards)
        g = self.encode(t, public, contexts, actions, rewards)
        g = g + rng.normal(0.0, self.sigma * self.noise_factor, g.shape)
        return PrivatizedMessage({"g": g}, mechanism="toy-gaussian")


class _GradientServer(Server):
    def __init__(self, R: int, d: int, S: float) -> None:
        self.theta, self.S, self.n = np.zeros((R, d)), S, 0

    def public_state(self) -> PublicState:
        return PublicState(theta=self.theta, w=np.ones(self.theta.shape[0]))

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        self.n += 1
        self.theta = self.theta + message.payload["g"] / (self.n + 10.0)
        norm = np.linalg.norm(self.theta, axis=1, keepdims=True)
        self.theta *= np.minimum(1.0, self.S / np.maximum(norm, 1e-300))

    def estimate(self) -> np.ndarray:
        return self.theta.copy()


class ToyGradientLDP(LocalAlgorithm):
    """Greedy on a locally private SGD iterate (test toy; analytic Gaussian mechanism)."""

    name = "toy-gradient-ldp"
    links = ("*",)
    paper = "test toy (analytic Gaussian mechanism, Balle & Wang 2018)"
    constraints: ClassVar = {
        "epsilon": Epsilon,
        "delta": Delta,
        "clip_norm": Real(0.0, None, low_open=True),
    }
    client_class: ClassVar[type[_GradientClient]] = _GradientClient

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-5, clip_norm: float = 2.0) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        sigma = gaussian_sigma_analytic(self.epsilon, self.delta, 2.0 * self.clip_norm)
        g = PrivacyGuarantee(
            "local", gaussian_epsilon(sigma, self.delta, 2.0 * self.clip_norm), self.delta
        )
        return Calibration(
            g, {"sigma": sigma, "clip_norm": self.clip_norm}, "strict", (self.epsilon, self.delta)
        )

    def reset(self, spec: EnvSpec, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        self.client = self.client_class(
            spec, spec.theta_bound, self.clip_norm, self.calibration.resolved["sigma"]
        )
        self.server = _GradientServer(self.R, spec.d, spec.theta_bound)


class _NoClipClient(_GradientClient):
    clip = False


class ToyNoClip(ToyGradientLDP):
    """:class:`ToyGradientLDP` whose device forgets to clip its gradient (broken on purpose)."""

    name = "toy-no-clip"
    client_class = _NoClipClient


class _UndeclaredClient(_GradientClient):
    noise_factor = 0.5


class ToyUndeclaredNoise(ToyGradientLDP):
    """:class:`ToyGradientLDP` whose device adds half the noise it declares (broken on purpose)."""

    name = "toy-undeclared-noise"
    client_class = _UndeclaredClient


class _LaplaceClient(_CheckedClient):
    def __init__(self, spec: EnvSpec, scale: float) -> None:
        self.spec, self.scale = spec, scale

    def public_space(self) -> PublicSpace:
        lo, hi = self.spec.reward_range
        return PublicSpace((PublicField("mean", ("R",), low=lo, high=hi),))

    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        _, contexts, _, _ = self._checked(public, contexts, bound=False)
        return np.asarray(rng.integers(0, self.spec.K, contexts.shape[0]))

    def encode(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
    ) -> np.ndarray:
        lo, hi = self.spec.reward_range
        return np.clip(rewards, lo, hi)[:, None]

    def noise(
        self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray
    ) -> DeviceNoise:
        return DeviceNoise.laplace(np.full((contexts.shape[0], 1), self.scale))

    def sensitivity(self) -> DeviceSensitivity:
        lo, hi = self.spec.reward_range
        return DeviceSensitivity("l1", (hi - lo) / self.scale)

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        public, contexts, actions, rewards = self._checked(public, contexts, actions, rewards)
        y = self.encode(t, public, contexts, actions, rewards)[:, 0] + rng.laplace(
            0.0, self.scale, rewards.shape
        )
        return PrivatizedMessage({"y": y}, mechanism="laplace")


class _MeanServer(Server):
    def __init__(self, R: int) -> None:
        self.total, self.n = np.zeros(R), 0

    def public_state(self) -> PublicState:
        return PublicState(mean=np.clip(self.total / max(self.n, 1), -1.0, 1.0))

    def receive_batch(self, t: int, batch: ShuffledBatch) -> None:
        self.total += batch["y"].sum(axis=1)
        self.n += batch.n_users


class ToyShuffleLaplace(ShuffleAlgorithm):
    """Uniform play whose users report Laplace-privatized rewards through the shuffler (test toy)."""

    name = "toy-shuffle-laplace"
    links = ("*",)
    paper = "test toy (Laplace mechanism, Dwork et al. 2006)"
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
        self.client = _LaplaceClient(spec, self.calibration.resolved["scale"])
        self.server = _MeanServer(self.R)

    def batch_ends(self, t: int) -> bool:
        return (t + 1) % 8 == 0


@nb.njit(cache=True)
def _k_choose(params, public, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    K, explore = int(params[0]), params[4]
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
def _k_randomize(params, public, r, t, X, a, y, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    K, lo, hi, scale = int(params[0]), params[1], params[2], params[3]
    for i in range(out.shape[0]):
        out[i] = 0.0
    out[a] = clip_scalar(y, lo, hi)
    out[K + a] = 1.0
    add_laplace(rng, scale, out)


@nb.njit(cache=True)
def _k_update(params, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    K = int(params[0])
    sums, counts = public
    for k in range(K):
        sums[r, k] += msg[k]
        counts[r, k] += msg[K + k]


class _KernelLaplaceClient(KernelClient):
    """The compiled device with its declared message, noise and sensitivity."""

    def __init__(self, kernel: LocalKernel, spec: EnvSpec) -> None:
        super().__init__(kernel, spec)
        self.K, self.lo, self.hi, self.scale = spec.K, *spec.reward_range, float(kernel.params[3])

    def encode(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
    ) -> np.ndarray:
        R = contexts.shape[0]
        out = np.zeros((R, 2 * self.K))
        out[np.arange(R), actions] = np.clip(rewards, self.lo, self.hi)
        out[np.arange(R), self.K + actions] = 1.0
        return out

    def noise(
        self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray
    ) -> DeviceNoise:
        return DeviceNoise.laplace(np.full((contexts.shape[0], 2 * self.K), self.scale))

    def sensitivity(self) -> DeviceSensitivity:
        c = max(abs(self.lo), abs(self.hi))
        return DeviceSensitivity("l1", (2.0 * c + 2.0) / self.scale)


class ToyKernelLaplace(LocalAlgorithm):
    """Epsilon-greedy on Laplace-privatized arm statistics (a compiled local kernel; test toy)."""

    name = "toy-kernel-laplace"
    settings = ("single", "multi")
    links = ("*",)
    paper = "test toy (Laplace mechanism, Dwork et al. 2006)"
    constraints: ClassVar = {"epsilon": Epsilon, "explore": Real(0.0, 1.0)}
    test_params: ClassVar = ({}, {"epsilon": 3.0, "explore": 0.3})

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
        params = (
            float(K),
            float(lo),
            float(hi),
            float(self.calibration.resolved["scale"]),
            self.explore,
        )
        public = (np.zeros((R, K)), np.zeros((R, K)))
        layout = MessageLayout("laplace", (("sum", (K,)), ("count", (K,))))
        space = PublicSpace((PublicField("sums", ("R", "K")), PublicField("counts", ("R", "K"))))
        return LocalKernel(
            _k_choose,
            _k_randomize,
            _k_update,
            params,
            public,
            (np.zeros(R),),
            ("sums", "counts"),
            layout,
            public_space=space,
        )

    def reset(self, spec: EnvSpec, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        assert isinstance(self.kernel, LocalKernel)
        self.client = _KernelLaplaceClient(self.kernel, spec)
