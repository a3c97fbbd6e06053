"""Typed calibrations of Hanna, Girgis, Fragouli & Diggavi (2022), and the one Laplace calibrate.

Central (Algorithm 1) and local (Algorithm 2) add Laplace noise of scale ``s = Delta / eps`` to
rewards clipped to ``[r_lo, r_hi]`` (``Delta = r_hi - r_lo``, or 1 under ``paper_sensitivity``,
Hanna et al. 2022, eq. 12, correction Hanna22-1); each user is in one batch, so the run's
guarantee is one batch's (parallel composition).  :func:`calibrate_laplace` computes both; the
shuffle model (Algorithm 3) records its per-batch budgets in :class:`ShuffleConstants`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from privbandits.algorithms.calibration import Calibration, Constants
from privbandits.algorithms.hanna.elimination import batch_growth, n_batches
from privbandits.algorithms.hanna.presets import Switches, core_set_name, resolve_switches
from privbandits.core.spec import EnvSpec
from privbandits.privacy.accounting import PureDP, to_guarantee
from privbandits.privacy.calibration import laplace_epsilon
from privbandits.privacy.ledger import Laplace, SelfComposed

__all__ = [
    "CentralConstants",
    "LaplaceCalibration",
    "LocalConstants",
    "NonPrivateConstants",
    "ShuffleConstants",
    "calibrate_laplace",
]


@dataclass(frozen=True)
class CentralConstants(Constants):
    """Algorithm 1 (central): the switches, the core set, ``Delta``, the Laplace scale ``s`` and
    the schedule constants ``q`` and ``L`` (number of batches)."""

    preset: str
    paper_sensitivity: bool
    width_mode: str
    core_set: str
    sensitivity: float
    laplace_scale: float
    q: float
    L: int


@dataclass(frozen=True)
class LocalConstants(Constants):
    """Algorithm 2 (local): the switches, each report's level ``eps0``, ``Delta``, the Laplace
    scale ``s`` and the schedule constants ``q`` and ``L``."""

    preset: str
    paper_sensitivity: bool
    width_mode: str
    eps0: float
    sensitivity: float
    laplace_scale: float
    q: float
    L: int


@dataclass(frozen=True)
class NonPrivateConstants(Constants):
    """The non-private batched elimination: width mode, core set and schedule constants."""

    preset: str
    width_mode: str
    core_set: str
    q: float
    L: int


@dataclass(frozen=True)
class ShuffleConstants(Constants):
    """Algorithm 3 (shuffle): per batch ``i`` the local levels ``eps0^(i)`` and Laplace scales at
    the batch's smallest and largest possible size, the central ``delta`` and the schedule."""

    preset: str
    paper_sensitivity: bool
    width_mode: str
    shuffle_bound: str
    bound: str
    delta: float
    delta_rule: str
    sensitivity: float
    batch_sizes: tuple[tuple[int, int], ...]
    eps0: tuple[tuple[float, float], ...]
    laplace_scale: tuple[tuple[float, float], ...]
    n_max: int
    delta_times_n_max: float
    q: float
    L: int

    def as_dict(self) -> dict[str, Any]:
        out = super().as_dict()
        for key in ("batch_sizes", "eps0", "laplace_scale"):
            out[key] = [list(pair) for pair in out[key]]
        return out


def calibrate_laplace(
    model: str,
    epsilon: float,
    preset: str,
    paper_sensitivity: bool | None,
    width_mode: str | None,
    spec: EnvSpec,
    core_set: bool | str | None = None,
) -> Calibration:
    """Laplace scale ``s = Delta / eps`` and the accounted ``(r_hi - r_lo) / s``-DP of one batch.

    Parameters
    ----------
    model : {"central", "local"}
        Algorithm 1 (a curator adds the noise to each core action's sum of rewards) or
        Algorithm 2 (each user adds it to its own reward).
    epsilon : float
        The requested level.
    preset, paper_sensitivity, width_mode
        The switches (:func:`~privbandits.algorithms.hanna.presets.resolve_switches`).
    spec : EnvSpec
        The problem (reward range, horizon).
    core_set : bool or str, optional
        Algorithm 1's core set (central only).
    """
    sw: Switches = resolve_switches(preset, paper_sensitivity, width_mode)
    lo, hi = spec.reward_range
    sens = sw.sensitivity(lo, hi)
    scale = sens / epsilon
    eps = laplace_epsilon(scale, hi - lo)
    q, L = batch_growth(spec.horizon), n_batches(spec.horizon)
    constants: Constants
    if model == "central":
        name = core_set_name(core_set if core_set is not None else True)
        what = f"each core action's sum of rewards clipped to [{lo:g}, {hi:g}]"
        head = f"{sw.describe(shuffle=False)}, core_set={name}; Hanna et al. (2022) Alg. 1"
        constants = CentralConstants(
            sw.preset, sw.paper_sensitivity, sw.width_mode, name, sens, scale, q, L
        )
    else:
        what = f"each user's reward clipped to [{lo:g}, {hi:g}], sent once"
        head = f"{sw.describe(shuffle=False)}; Hanna et al. (2022) Alg. 2"
        constants = LocalConstants(
            sw.preset, sw.paper_sensitivity, sw.width_mode, epsilon, sens, scale, q, L
        )
    # the true l1 sensitivity is r_hi - r_lo whatever the preset's scale assumed
    ledger = SelfComposed(
        Laplace(scale, float(hi - lo), what),
        L,
        "disjoint",
        what=f"{head}: batches of disjoint users",
    )
    return Calibration(
        to_guarantee(PureDP(eps), model, "user", ledger=ledger),
        preset=preset,
        requested=(epsilon, 0.0),
        constants=constants,
    )


class LaplaceCalibration:
    """The ``calibrate`` of Hanna et al.'s (2022) central and local algorithms: one Laplace
    calibration (:func:`calibrate_laplace`) under the class's trust model, with the central
    algorithm's core-set choice."""

    trust_model: ClassVar[str]
    epsilon: float
    preset: str
    paper_sensitivity: bool | None
    width_mode: str | None

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Laplace scale ``s = Delta / eps`` (``eps0`` of a report, locally) and the accounted
        ``(r_hi - r_lo) / s``-DP (LDP)."""
        return calibrate_laplace(
            self.trust_model,
            self.epsilon,
            self.preset,
            self.paper_sensitivity,
            self.width_mode,
            spec,
            getattr(self, "core_set", None),
        )
