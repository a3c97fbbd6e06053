"""NP-batched: the common skeleton of Algorithms 1-3 of Hanna et al. (2022) without noise.

The limit of Algorithms 1-3 as epsilon -> infinity: batches grow like ``q^i`` with
``q = (2T)^{1/ln T}``; each batch plays a G-optimal core set, estimates theta from that batch only,
and eliminates actions more than ``2 gamma_i`` below the empirical best; after
``L = max(1, floor(ln T) - 1)`` batches it commits.  The paper's non-private baseline of
Figure 3(b) ("non-private batched algorithm that adds no noise").

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithms 1-3 (common skeleton), Figure 3(b);
correction Hanna22-25 (documentation).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.hanna.calibration import NonPrivateConstants
from privbandits.algorithms.hanna.curator import BatchedCurator
from privbandits.algorithms.hanna.elimination import HannaElimination, batch_growth, n_batches
from privbandits.algorithms.hanna.presets import ELIMINATION_CONSTRAINTS, PRESETS, core_set_name
from privbandits.algorithms.hanna.widths import NonPrivateWidth
from privbandits.algorithms.registry import register
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = ["NPBatched"]


@register
class NPBatched(BatchedCurator):
    """The common skeleton of Algorithms 1-3 of Hanna et al. (2022) without noise ("NP-batched").

    Per batch ``i = 1..L``: working subspace of ``A_i``; G-optimal design (Algorithm D) with core
    set ``C_i``; ``n_ia = ceil(pi_i(a) q^i)`` pulls in random order; ``theta_hat_i`` from this
    batch's raw sums only; width ``gamma_i`` (width modes on the Hanna et al. 2022 documentation page, row "none"); keep ``a`` with
    ``<a, theta_hat_i> >= max_{b in A_i} <b, theta_hat_i> - 2 gamma_i``; commit to the empirical
    best after ``L`` batches or when one action survives.

    Parameters
    ----------
    preset : {"strict", "paper"}
        ``strict`` -> ``width_mode="rigorous"``; ``paper`` -> ``width_mode="paper"`` (presets on the Hanna et al. 2022 documentation page).
    width_mode : {"paper", "rigorous"}, optional
        Overrides the preset's width mode (width modes on the Hanna et al. 2022 documentation page).
    core_set : bool or {"greedy", "nocore-fw", "nocore-uniform"}
        Core-set construction (Hanna et al. 2022, Lemma 2, corrections Hanna22-10 and Hanna22-26); ``True`` = ``"greedy"``.
    design_factor : float
        Design target ``g <= factor * m`` (default 2).
    sigma : float
        Sub-Gaussian parameter of the reward noise in the widths (1 under Assumption 1).
    fail_prob : float, optional
        Use ``ell_i = ln(4 |A_i| L / fail_prob)`` instead of ``ln(4 |A_i| T^2)``.

    References
    ----------
    Hanna et al. (2022), Algorithms 1-3 (common skeleton).
    """

    name = "pe-batched"
    paper = "Hanna et al. 2022 (NP-batched)"
    constraints: ClassVar = dict(ELIMINATION_CONSTRAINTS)
    test_params: ClassVar = ({}, {"preset": "paper", "core_set": "nocore-uniform"})
    test_envs: ClassVar[tuple[str, ...]] = ("finite",)

    def __init__(
        self,
        preset: str = "strict",
        width_mode: str | None = None,
        core_set: bool | str = "greedy",
        design_factor: float = 2.0,
        sigma: float = 1.0,
        fail_prob: float | None = None,
    ) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Non-private; resolves the width mode and the schedule constants ``q``, ``L``."""
        width_mode = (
            PRESETS[self.preset]["width_mode"] if self.width_mode is None else self.width_mode
        )
        constants = NonPrivateConstants(
            self.preset,
            width_mode,
            core_set_name(self.core_set),
            batch_growth(spec.horizon),
            n_batches(spec.horizon),
        )
        return Calibration(NON_PRIVATE, preset=self.preset, constants=constants)

    def make_core(self, A: np.ndarray) -> HannaElimination:
        c = self.calibration.typed(NonPrivateConstants)
        width = NonPrivateWidth(c.width_mode, self.sigma, self.fail_prob)
        return HannaElimination(A, self.spec, width, self.design_factor, c.core_set)
