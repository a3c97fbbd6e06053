"""Algorithm 1 of Hanna et al. (2022): batched elimination in the central model (pure eps-DP).

A trusted server runs the phased-elimination skeleton (Hanna et al. 2022, the common skeleton of Algorithms 1-3,
:class:`~privbandits.algorithms.hanna.curator.BatchedCurator`); step 7 releases, for each core
action ``a in C_i`` of batch ``i``, the noisy sum

    ``r_hat_ia = sum_k clip(r_ia^(k), r_lo, r_hi) + z_ia``,   ``z_ia ~ Lap(Delta / eps)``

(fresh and independent per batch and action; ``|C_i|`` draws per batch, by the audited sampler
:func:`~privbandits.privacy.samplers.add_laplace`), and step 9 uses the central width (width modes on the Hanna et al. 2022 documentation page).  Each reward enters one sum, so the vector of all released sums has L1 sensitivity
``r_hi - r_lo``; the actions are post-processing of the sums (plus reward-independent randomness
for the order), and batches hold disjoint users (parallel composition), hence the run is
``(r_hi - r_lo) / s``-DP for the scale ``s`` actually used: ``eps`` under the strict preset
(``Delta = r_hi - r_lo``), only ``2 eps`` under the paper's ``Delta = 1`` on ``[-1, 1]`` (Hanna et al. 2022, eq. 12, correction Hanna22-1), which is what the calibration reports.

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithm 1, Lemma 3, Theorem 1, eq. (12); corrections Hanna22-1 and Hanna22-26, presets and width modes in the
documentation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from privbandits.algorithms.audit import ReleaseCase
from privbandits.algorithms.hanna.calibration import CentralConstants, LaplaceCalibration
from privbandits.algorithms.hanna.curator import BatchedCurator
from privbandits.algorithms.hanna.elimination import (
    BatchPlan,
    HannaElimination,
)
from privbandits.algorithms.hanna.presets import (
    ELIMINATION_CONSTRAINTS,
    SWITCH_CONSTRAINTS,
)
from privbandits.algorithms.hanna.widths import CentralWidth
from privbandits.algorithms.registry import register
from privbandits.core.params import Epsilon
from privbandits.privacy.samplers import add_laplace

__all__ = ["CentralLaplaceSums", "HannaCentral"]


@dataclass
class CentralLaplaceSums:
    """Step 7 of Algorithm 1: clipped per-action sums plus ``Lap(scale)`` on each core action.

    Parameters
    ----------
    scale : float
        Laplace scale ``Delta / eps`` (from the calibration).
    clip : (r_lo, r_hi)
        Reward range every reward is clipped to before it enters a sum (sensitivity ``r_hi - r_lo``, correction Hanna22-1).

    Attributes
    ----------
    n_draws : int
        Laplace draws made so far (``|C_i|`` per released batch and replication).
    released : int
        Batches released so far (over all replications).
    """

    scale: float
    clip: tuple[float, float]
    n_draws: int = field(default=0)
    released: int = field(default=0)

    def collect(self, plan: BatchPlan, sums: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``r_hat_ia = sums_ia + Lap(scale)`` on ``C_i`` (one fresh draw per core action), 0 elsewhere.

        Draw order: row by row, the core actions in increasing index.
        """
        core = plan.counts > 0
        noisy = np.ascontiguousarray(np.asarray(sums, dtype=float)[core])
        add_laplace(rng, float(self.scale), noisy)
        out = np.zeros(plan.counts.shape)
        out[core] = noisy
        self.n_draws += noisy.size
        self.released += len(plan)
        return out


@register
class HannaCentral(LaplaceCalibration, BatchedCurator):
    """Algorithm 1 of Hanna et al. (2022): central model, pure eps-DP, Laplace noise per batch sum.

    Parameters
    ----------
    epsilon : float
        Privacy budget (pure DP, central); default 1.
    preset : {"strict", "paper"}
        Calibration preset (presets on the Hanna et al. 2022 documentation page): strict = sensitivity ``r_hi - r_lo`` + rigorous
        widths; paper = sensitivity 1 + the paper's widths (warns; only ``2 eps``-DP on
        ``[-1, 1]``, as the reported guarantee says).
    paper_sensitivity : bool, optional
        Override of the preset's sensitivity switch.
    width_mode : {"paper", "rigorous"}, optional
        Override of the preset's width mode.
    core_set : bool or {"greedy", "nocore-fw", "nocore-uniform"}
        ``True`` (default): G-optimal design with a small core set; ``False``: the Figure 3(b)
        ablation "no core set" (``"nocore-fw"``, Hanna et al. 2022, correction Hanna22-26).
    design_factor : float
        Design target ``g <= factor * m`` (2).
    sigma : float
        Sub-Gaussian parameter of the reward noise in the widths (1 under Assumption 1).
    fail_prob : float, optional
        ``ell_i = ln(4 |A_i| L / fail_prob)`` instead of ``ln(4 |A_i| T^2)``.

    References
    ----------
    Hanna et al. (2022), Algorithm 1, Lemma 3, Theorem 1; presets and width modes in the documentation.
    """

    name = "hanna-central"
    twin = "pe-batched"
    trust_model = "central"
    paper = "Hanna et al. 2022 (Alg. 1)"
    constraints: ClassVar = {
        "epsilon": Epsilon,
        **ELIMINATION_CONSTRAINTS,
        "paper_sensitivity": SWITCH_CONSTRAINTS["paper_sensitivity"],
    }
    test_params: ClassVar = (
        {"epsilon": 1.0},
        {"epsilon": 0.3, "core_set": False, "width_mode": "paper"},
    )
    test_envs: ClassVar[tuple[str, ...]] = ("finite",)

    @classmethod
    def audit_cases(cls) -> tuple[ReleaseCase, ...]:
        """The noisy per-action batch sums of step 7 (Laplace, L1 sensitivity r_hi - r_lo)."""
        from privbandits.algorithms.hanna.central_audit import central_release_spec

        return (ReleaseCase("hanna-central-release", central_release_spec),)

    def __init__(
        self,
        epsilon: float = 1.0,
        preset: str = "strict",
        paper_sensitivity: bool | None = None,
        width_mode: str | None = None,
        core_set: bool | str = True,
        design_factor: float = 2.0,
        sigma: float = 1.0,
        fail_prob: float | None = None,
    ) -> None:
        pass

    def make_collector(self) -> CentralLaplaceSums:
        c = self.calibration.typed(CentralConstants)
        return CentralLaplaceSums(c.laplace_scale, self.spec.reward_range)

    def make_core(self, A: np.ndarray) -> HannaElimination:
        c = self.calibration.typed(CentralConstants)
        scale = c.laplace_scale
        width = CentralWidth(
            lambda plan: np.full(len(plan), scale),
            c.width_mode,
            c.core_set,
            self.sigma,
            self.fail_prob,
        )
        return HannaElimination(A, self.spec, width, self.design_factor, c.core_set)
