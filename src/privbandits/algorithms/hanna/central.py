"""Algorithm 1 of Hanna et al. (2022): batched elimination in the central model (pure eps-DP).

A trusted server runs the phased-elimination skeleton (spec section 4.0,
:class:`~privbandits.algorithms.phased_elimination.PhasedEliminationDP`); step 7 releases, for each
core action ``a in C_i`` of batch ``i``, the noisy sum

    ``r_hat_ia = sum_k clip(r_ia^(k), r_lo, r_hi) + z_ia``,   ``z_ia ~ Lap(Delta / eps)``

(fresh and independent per batch and action; ``|C_i|`` draws per batch), and step 9 uses the
central width of spec section 4.6.  Each reward enters one sum, so the vector of all released sums
has L1 sensitivity ``r_hi - r_lo``; the actions are post-processing of the sums (plus
reward-independent randomness for the order), hence ``(r_hi - r_lo) / s``-DP for the scale ``s``
actually used -- ``eps`` under the strict preset (``Delta = r_hi - r_lo``), only ``2 eps`` under
the paper's ``Delta = 1`` on ``[-1, 1]`` (spec section 2.5), which is what the accountant reports.

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithm 1, Lemma 3, Theorem 1, eq. (12); spec sections
2.5-2.6, 4.1, 4.5-4.6.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.base import Algorithm
from privbandits.algorithms.hanna.presets import Switches, resolve_switches
from privbandits.algorithms.hanna.widths import CentralWidth
from privbandits.algorithms.phased_elimination import (
    CORE_SETS,
    BatchPlan,
    PhasedEliminationDP,
    WidthFunction,
)
from privbandits.algorithms.registry import register
from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_epsilon
from privbandits.privacy.accounting import PureDP, compose_parallel, to_guarantee
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.mechanisms import LaplaceMechanism, laplace_epsilon

__all__ = ["CentralLaplaceSums", "HannaCentral", "core_set_option"]


def core_set_option(core_set: bool | str) -> str:
    """``True`` -> ``"greedy"`` (G-optimal core set), ``False`` -> ``"nocore-fw"`` (spec 4.5), or a name."""
    if isinstance(core_set, bool):
        return "greedy" if core_set else "nocore-fw"
    if isinstance(core_set, str) and core_set in CORE_SETS:
        return core_set
    raise ValidationError(f"core_set must be True, False or one of {CORE_SETS}, got {core_set!r}")


@dataclass
class CentralLaplaceSums:
    """Step 7 of Algorithm 1: clip each reward, add ``Lap(Delta / eps)`` to each core action's sum.

    Parameters
    ----------
    epsilon : float
        Target epsilon.
    r_lo, r_hi : float
        Reward range (clipping interval); its width is the true L1 sensitivity.
    sensitivity : float
        Sensitivity used for the scale: ``r_hi - r_lo`` (strict) or 1 (``paper_sensitivity``).
    notes : str
        Preset description copied into the guarantee.

    Attributes
    ----------
    scale : float
        Laplace scale actually used, ``sensitivity / epsilon``.
    n_draws : int
        Laplace draws made so far (``|C_i|`` per released batch and replication).
    released : int
        Batches released so far (over all replications).
    """

    epsilon: float
    r_lo: float
    r_hi: float
    sensitivity: float
    notes: str = ""
    n_draws: int = field(default=0)
    released: int = field(default=0)

    def __post_init__(self) -> None:
        self.mechanism = LaplaceMechanism(self.sensitivity, self.epsilon)
        self.scale = self.mechanism.scale

    @property
    def clip(self) -> tuple[float, float]:
        return (self.r_lo, self.r_hi)

    def prepare(self, rewards: np.ndarray) -> np.ndarray:
        """Clip each raw reward to ``[r_lo, r_hi]`` (spec U13) before it enters a sum."""
        return np.clip(rewards, self.r_lo, self.r_hi)

    def collect(self, plan: BatchPlan, sums: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``r_hat_ia = sums_ia + Lap(scale)`` on ``C_i`` (one fresh draw per core action), 0 elsewhere."""
        core = plan.counts > 0
        out = np.zeros(plan.counts.shape)
        k = int(core.sum())
        out[core] = np.asarray(sums, dtype=float)[core] + self.mechanism.noise(rng, (k,))
        self.n_draws += k
        self.released += len(plan)
        return out

    def batch_guarantee(self) -> PureDP:
        """One batch's release: ``(r_hi - r_lo) / scale``-DP (true sensitivity, scale actually used)."""
        return PureDP(laplace_epsilon(self.scale, self.r_hi - self.r_lo))

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """Parallel composition over the released batches (disjoint users; spec section 4.1)."""
        g = compose_parallel([self.batch_guarantee()] * min(self.released, 1))
        how = (f"Hanna et al. (2022) Alg. 1: Lap({self.scale:.6g}) on each core action's sum of rewards clipped to "
               f"[{self.r_lo:g}, {self.r_hi:g}] -> {self.batch_guarantee().epsilon:.6g}-DP per batch, "
               f"parallel composition over {self.released} released batch(es)")
        return to_guarantee(g, "central", "user", f"{self.notes}; {how}" if self.notes else how)


@register
class HannaCentral(PhasedEliminationDP):
    """Algorithm 1 of Hanna et al. (2022): central model, pure eps-DP, Laplace noise per batch sum.

    Parameters
    ----------
    epsilon : float
        Privacy budget (pure DP, central).
    preset : {"strict", "paper"}
        Calibration preset (spec section 2.6): strict = sensitivity ``r_hi - r_lo`` + rigorous
        widths; paper = sensitivity 1 + the paper's widths (warns; only ``2 eps``-DP on
        ``[-1, 1]``, as the reported guarantee says).
    paper_sensitivity : bool, optional
        Override of the preset's sensitivity switch.
    width_mode : {"paper", "rigorous"}, optional
        Override of the preset's width mode.
    core_set : bool or {"greedy", "nocore-fw", "nocore-uniform"}
        ``True`` (default): G-optimal design with a small core set; ``False``: the Figure 3(b)
        ablation "no core set" (``"nocore-fw"``, spec section 4.5).
    design_factor : float
        Design target ``g <= factor * m`` (2).
    sigma : float
        Sub-Gaussian parameter of the reward noise in the widths (1 under Assumption 1).
    fail_prob : float, optional
        ``ell_i = ln(4 |A_i| L / fail_prob)`` instead of ``ln(4 |A_i| T^2)``.

    References
    ----------
    Hanna et al. (2022), Algorithm 1, Lemma 3, Theorem 1; spec sections 4.0-4.1, 4.5-4.6.
    """

    name = "hanna-central"
    trust_model = "central"
    paper = "Hanna et al. 2022 (Alg. 1)"
    model: ClassVar[str] = "central"

    def __init__(
        self,
        epsilon: float,
        preset: str = "strict",
        paper_sensitivity: bool | None = None,
        width_mode: str | None = None,
        core_set: bool | str = True,
        design_factor: float = 2.0,
        sigma: float = 1.0,
        fail_prob: float | None = None,
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.switches: Switches = resolve_switches(preset, paper_sensitivity, width_mode, shuffle=False)
        super().__init__(preset=preset, width_mode=self.switches.width_mode, core_set=core_set_option(core_set),
                         design_factor=design_factor, sigma=sigma, fail_prob=fail_prob)
        Algorithm.__init__(self, epsilon=epsilon, preset=preset, paper_sensitivity=paper_sensitivity,
                           width_mode=width_mode, core_set=core_set, design_factor=design_factor, sigma=sigma,
                           fail_prob=fail_prob)

    def resolved_params(self) -> dict[str, Any]:
        """The resolved switches (spec section 2.6) and the core-set construction."""
        return {**self.switches.as_dict(), "core_set": self.core_set}

    def make_collector(self) -> CentralLaplaceSums:
        lo, hi = self.spec.reward_range
        return CentralLaplaceSums(self.epsilon, lo, hi, self.switches.sensitivity(lo, hi),
                                  notes=f"{self.switches.describe(shuffle=False)}, core_set={self.core_set}")

    def make_width(self) -> WidthFunction:
        scale = self.collector.scale
        return CentralWidth(lambda plan: np.full(len(plan), scale), self.width_mode, self.core_set,
                            self.sigma, self.fail_prob)
