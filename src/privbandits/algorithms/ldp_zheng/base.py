"""What LDP-UCB and LDP-GLOC share: parameters, problem resolution, guarantee and kernel assembly.

Both algorithms of Zheng, Cai, Huang, Li & Wang (2020) run the same noisy ridge server
(:mod:`.ridge`) on a message whose first two parts are ``(x x^T + B, v x + xi)``; they differ in
``v`` (the reward, or the relabel ``z``), in LDP-GLOC's extra gradient part and in their radius
formulas.  :class:`ZhengAlgorithm` declares the shared parameters once (their constraint table),
resolves the dimension and horizon, accounts the message (:func:`.calibration.
gaussian_message_guarantee` / :func:`.calibration.laplace_message_guarantee`) and assembles the
compiled kernel from a family's typed constants (:class:`.calibration.ZhengConstants`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.base import LocalAlgorithm
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import LocalKernel, MessageLayout
from privbandits.algorithms.ldp_zheng.calibration import (
    GAUSSIAN_CALIBRATIONS,
    MECHANISMS,
    PRESETS,
    ZhengConstants,
    gaussian_message_guarantee,
    laplace_message_guarantee,
)
from privbandits.algorithms.ldp_zheng.ridge import additive_noise, ridge_kernel
from privbandits.core.errors import NotResetError, ValidationError
from privbandits.core.params import Bool, Choice, Delta, Epsilon, Int, Optional, Positive, Real
from privbandits.core.public_space import PublicSpace
from privbandits.core.spec import EnvSpec
from privbandits.privacy.device import DeviceSensitivity
from privbandits.privacy.guarantee import PrivacyGuarantee

__all__ = ["ZhengAlgorithm"]


class ZhengAlgorithm(LocalAlgorithm):
    """Parameters and steps LDP-UCB and LDP-GLOC share (Zheng et al. 2020, Algorithms 3 and 5).

    Subclasses declare their own parameters (constructor and ``constraints``), implement
    ``calibrate`` with :meth:`_problem`, :meth:`_guarantee` and their typed constants, and
    ``build_kernel`` with :meth:`_ridge_params` and :meth:`_kernel`.
    """

    settings = ("single", "multi")
    constraints: ClassVar = {
        "epsilon": Epsilon,
        "delta": Delta,
        "alpha": Real(0.0, 1.0, low_open=True, high_open=True),
        "preset": Choice(*PRESETS),
        "mechanism": Choice(*MECHANISMS),
        "gaussian_calibration": Optional(Choice(*GAUSSIAN_CALIBRATIONS)),
        "beta_scale": Positive,
        "c_factor": Positive,
        "clip": Bool(),
        "horizon": Optional(Int(2)),
    }
    #: Registry label of the paper's algorithm in the notes, e.g. ``"LDP-UCB (Zheng et al. 2020,
    #: Alg. 5)"``.
    label: ClassVar[str] = ""

    epsilon: float
    delta: float
    alpha: float
    mechanism: str
    gaussian_calibration: str | None
    beta_formula: str
    beta_scale: float
    c_factor: float
    clip: bool
    horizon: int | None

    def _check_mechanism(self) -> None:
        """``authors_code`` imitates public code that adds Gaussian noise only."""
        if self.preset == "authors_code" and self.mechanism != "gaussian":
            raise ValidationError(
                "preset='authors_code' uses Gaussian noise; mechanism must be 'gaussian'"
            )

    # -- calibration -------------------------------------------------------------------------
    def _problem(self, spec: EnvSpec) -> tuple[bool, int, int]:
        """``(block, D, T)``: block one-hot features in the multi setting (``D = K d``), and the
        horizon of the constants."""
        block = spec.setting == "multi"
        D = spec.K * spec.d if block else spec.d
        T = self.horizon if self.horizon is not None else max(spec.horizon, 2)
        return block, D, T

    def _calibration_rule(self) -> str:
        """The Gaussian calibration in force: given, else ``analytic`` under ``strict``."""
        return self.gaussian_calibration or ("analytic" if self.preset == "strict" else "classic")

    def _head(self, notes: list[str]) -> str:
        """The guarantee's description: the algorithm, the preset, the calibration's notes."""
        parts = [f"{self.label}, preset={self.preset}", *notes]
        if not self.clip:
            parts.append("clip=False: conditional on data within the declared bounds")
        return "; ".join(parts)

    def _guarantee(
        self,
        parts: tuple[tuple[str, float, float], ...],
        notes: list[str],
        T: int,
        calibration: str,
    ) -> PrivacyGuarantee:
        """The message's accounted guarantee: ``parts`` are ``(name, l2 sensitivity, std)``
        (Gaussian) or ``(name, l1 sensitivity, scale)`` (Laplace), sent once by each user."""
        head = self._head(notes)
        if self.mechanism == "laplace":
            return laplace_message_guarantee(parts, head, rounds=T)
        return gaussian_message_guarantee(
            parts, self.delta, head, rounds=T, calibration=calibration
        )

    def _calibrated(
        self,
        cls: type[ZhengConstants],
        parts: tuple[tuple[str, float, float], ...],
        notes: list[str],
        rule: str,
        problem: tuple[int, int, float, float, float],
        **fields: Any,
    ) -> Calibration:
        """The calibration: the family's typed constants ``cls`` of ``problem`` (``D``, ``T``, the
        context bound and the reward range the message is calibrated for), ``fields`` and the
        shared parameters (mechanism, ``c_factor``, radius formula and multiplier, clipping, the
        Gaussian calibration rule of :meth:`_calibration_rule`), with the message's guarantee
        (:meth:`_guarantee`, calibration ``rule``)."""
        shared = ("mechanism", "c_factor", "beta_formula", "beta_scale", "clip")
        D, T, C_B, lo, hi = problem
        constants = cls(
            **{k: getattr(self, k) for k in shared},
            gaussian_calibration=self._calibration_rule(),
            D=D,
            T=T,
            context_bound=C_B,
            reward_lo=lo,
            reward_hi=hi,
            **fields,
        )
        return Calibration(
            self._guarantee(parts, notes, constants.T, rule),
            preset=self.preset,
            requested=(self.epsilon, self.delta),
            constants=constants,
        )

    # -- kernel ------------------------------------------------------------------------------
    def _ridge_params(
        self,
        c: ZhengConstants,
        code: int,
        *,
        c_first: float | None = None,
        grad_sigma: float = 0.0,
        mu: float = 1.0,
        current: bool = False,
    ) -> tuple[Any, ...]:
        """The noisy ridge server's parameter tuple (:mod:`.ridge`)."""
        return (
            c.sigma,
            c.D,
            c.T,
            self.alpha,
            c.c_factor,
            -1.0 if c_first is None else float(c_first),
            code,
            c.beta_scale,
            float(grad_sigma),
            float(mu),
            current,
        )

    def _client_head(self, c: ZhengConstants) -> tuple[Any, ...]:
        """The first entries of the client's parameter tuple, common to both families:
        ``(D, C_B, y_lo, y_hi, clip, scale_V, scale_u)``."""
        return (
            c.D,
            float(c.context_bound),
            float(c.reward_lo),
            float(c.reward_hi),
            self.clip,
            float(c.scale_V),
            float(c.scale_u),
        )

    def _kernel(
        self,
        c: ZhengConstants,
        steps: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]],
        params: tuple[Any, ...],
        public: tuple[np.ndarray, ...],
        server: tuple[Any, ...],
        names: tuple[str, ...],
        fields: tuple[tuple[str, tuple[int, ...]], ...],
        scales: tuple[float, ...],
        l2_sensitivity: float,
        public_space: PublicSpace,
    ) -> LocalKernel:
        """The compiled kernel: the shared choice, the family's ``(encode, randomize, update)``
        steps and the device's declarations (additive noise of ``scales`` per field; the
        accountant's parameter: the message's epsilon in units of the Laplace scales, or its
        joint l2 sensitivity over the stds)."""
        spec, R = self.spec, self.R
        laplace = c.mechanism == "laplace"
        sensitivity = (
            DeviceSensitivity("l1", self.calibration.guarantee.epsilon)
            if laplace
            else DeviceSensitivity("l2", l2_sensitivity)
        )
        theta = public[0]
        block = spec.setting == "multi"
        return ridge_kernel(
            steps,
            params,
            public,
            server,
            names,
            MessageLayout(f"{self.name}/{c.mechanism}", fields),
            estimate=lambda: theta.reshape(R, spec.K, spec.d) if block else theta,
            public_space=public_space,
            noise=additive_noise(c.D, scales, laplace),
            sensitivity=sensitivity,
            allocates=False,
        )

    def _local_kernel(self) -> LocalKernel:
        if not isinstance(self.kernel, LocalKernel):
            raise NotResetError(f"{self.name}: call reset(...) or simulate(...) first")
        return self.kernel

    def n_shifted(self) -> np.ndarray:
        """Per replication, how often the regularized noisy Gram matrix was not positive definite
        and was shifted (Zheng et al. 2020, Algorithm 5)."""
        return self._local_kernel().server[4].copy()
