"""Typed calibrations of the Zheng et al. (2020) and Han et al. (2021) local algorithms and of the
two-point BCO: frozen constants read by attribute, the stored keys unchanged, one shared
declaration of LDP-UCB's and LDP-GLOC's parameters.

The key sets below are the names the results store and the reports read (``resolved_params``);
renaming a field of a family's constants changes them and fails here.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pytest

import privbandits as pb
from privbandits.algorithms.bco.ldp_two_point import LDPTwoPointConstants
from privbandits.algorithms.bco.two_point import TwoPointConstants
from privbandits.algorithms.calibration import Constants
from privbandits.algorithms.ldp_glb.calibration import SGDConstants
from privbandits.algorithms.ldp_onepoint.calibration import OnePointConstants
from privbandits.algorithms.ldp_zheng import (
    LDPGLOC,
    LDPUCB,
    LDPGLOCConstants,
    LDPUCBConstants,
    ZhengAlgorithm,
)
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec

ZHENG = (
    "D T context_bound reward_lo reward_hi mechanism gaussian_calibration sensitivity scale_V "
    "scale_u sigma c_factor beta_formula beta_scale"
)
KEYS = {
    "ldp-ucb": ZHENG + " reward_bound noise_split V0 bonus beta_index c_first",
    "ldp-gloc": ZHENG + " theta_radius blockwise z_bound link_bound link_min_slope grad_clip "
    "grad_bound scale_g grad_sigma zeta project init",
    "ldp-onepoint": "clip_lo clip_hi sensitivity noise_scale noise_std mechanism T base "
    "noise_bound base_reward_range base_noise_scale",
    "two-point-bco": "T rho xi schedule step eta_scale sigma mu eta",
    "ldp-twopoint": "T rho xi schedule step eta_scale sigma mu eta sensitivity difference_bound "
    "noise_scale clip_per_gap noise_per_gap whitened_sensitivity mechanism",
}
SGD = (
    "grad_bound eta0 t0 step_schedule init ridge sgd_warmup synthetic_update joint_radius "
    "project_radius s0 n_warmup epsilon_slot radius"
)
SGD_KEYS = {
    ("single", False): SGD,
    ("multi", False): SGD + " warmup_order h radius_joint epsilon_warm radius_warm",
    ("multi", True): SGD + " warmup_order h radius_joint gaussian_calibration s_W_warm s_u_warm "
    "c_shift_warm shift_offset_warm",
}
TYPES: dict[str, type[Constants]] = {
    "ldp-ucb": LDPUCBConstants,
    "ldp-gloc": LDPGLOCConstants,
    "ldp-onepoint": OnePointConstants,
    "two-point-bco": TwoPointConstants,
    "ldp-twopoint": LDPTwoPointConstants,
}


def _spec(name: str) -> Any:
    if pb.algorithms.available()[name].continuous_actions:
        return pb.ConvexLossEnv(d=3).reset(1, make_streams(0), 500)
    return EnvSpec(d=3, K=4, horizon=500)


def _calibrate(name: str, spec: Any, **params: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pb.make(name, **params).calibrate(spec)


@pytest.mark.parametrize("name", sorted(KEYS))
def test_stored_keys_and_typed_constants(name: str) -> None:
    cls = pb.algorithms.available()[name]
    for params in cls.test_params:
        cal = _calibrate(name, _spec(name), **params)
        c = cal.typed(TYPES[name])
        assert set(cal.resolved) == set(KEYS[name].split()), params
        assert cal.resolved == c.as_dict()
        with pytest.raises(dataclasses.FrozenInstanceError):
            c.T = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    "setting, params",
    [
        ("single", {}),
        ("multi", {}),
        ("multi", {"sgd_warmup": "ols"}),
        ("multi", {"preset": "authors_code"}),
    ],
)
def test_sgd_stored_keys_per_variant(setting: str, params: dict[str, Any]) -> None:
    cal = _calibrate("ldp-sgd", EnvSpec(d=2, K=3, setting=setting, horizon=500), **params)
    c = cal.typed(SGDConstants)
    assert set(cal.resolved) == set(SGD_KEYS[(setting, c.ols_warmup)].split())
    assert cal.resolved == c.as_dict()


def test_zheng_algorithms_declare_their_shared_parameters_once() -> None:
    shared = set(ZhengAlgorithm.constraints)
    assert {"epsilon", "delta", "alpha", "preset", "mechanism", "clip", "horizon"} <= shared
    for cls in (LDPUCB, LDPGLOC):
        assert issubclass(cls, ZhengAlgorithm)
        own = set(cls.__dict__["constraints"])
        assert not own & shared, f"{cls.name} re-declares {own & shared}"
        assert set(cls.param_names()) == set(cls.all_constraints())
    # the two differ only in their own parameters and radius formulas
    ucb, gloc = LDPUCB.all_constraints(), LDPGLOC.all_constraints()
    assert ucb["beta_formula"].describe() != gloc["beta_formula"].describe()


def test_kernels_read_the_typed_constants() -> None:
    """A calibration whose constants are another family's is refused by name, not read by key."""
    from privbandits.core.errors import ValidationError

    alg = LDPUCB()
    spec = EnvSpec(d=2, K=3, horizon=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg.reset(spec, 1, make_streams(0))
    gloc = _calibrate("ldp-gloc", spec)
    alg._calibration = gloc
    with pytest.raises(ValidationError, match="LDPGLOCConstants"):
        alg.build_kernel()
