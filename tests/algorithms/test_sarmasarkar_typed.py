"""Typed calibrations of JDP-GLM, ShuffleGLM and GLM-UCB: the stored keys stay those results
were saved under, and the family's code reads attributes, not string keys."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

import privbandits as pb
from privbandits.algorithms.glm.glm_ucb import GLMUCBConstants
from privbandits.algorithms.sarmasarkar.jdp_glm import JDPGLMConstants
from privbandits.algorithms.sarmasarkar.shuffle_plan import ShuffleGLMConstants
from privbandits.core.links import get_link
from privbandits.core.spec import EnvSpec

SPEC = EnvSpec(d=2, K=4, horizon=512, link=get_link("logistic"))

JDP_KEYS = [
    "mode",
    "kappa",
    "kappa_star",
    "w_max",
    "m",
    "sigma_V",
    "sigma_H",
    "lam_V",
    "lam_H",
    "lam_reg_o",
    "lam_reg_tau",
    "lam_min_V",
    "thr",
    "gamma",
    "beta",
    "count2_cutoff",
    "n_refresh",
    "rho_o_call",
    "rho_tau_call",
    "zeta_opt_o",
    "zeta_opt_tau",
    "component_epsilon",
    "component_delta",
    "rho_V",
    "rho_H",
    "rho_o",
    "rho_tau",
    "rho_total",
    "S",
    "R",
    "split",
]
SHUFFLE_KEYS = [
    "mode",
    "n_batches",
    "batch_lengths",
    "alpha",
    "rho_per_part",
    "lambda",
    "lambda_max",
    "lambda_min",
    "gamma",
    "gamma_eq26",
    "kappa",
    "kappa_star",
    "B_noise",
    "sigma_out",
    "matrix_b",
    "matrix_g",
    "matrix_noise_std",
    "pgd_iterations",
    "pgd_step",
    "pgd_clip",
    "pgd_b",
    "zeta",
    "design_factor",
    "widths",
]
SHUFFLE_THEORY_KEYS = ["sigma_tilde", "nu", "B1_eq6", "warmup_only", "pgd_eps_it", "pgd_slack"]


def _cal(name: str, **kw: object):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pb.make(name, **kw).calibrate(SPEC)


def test_jdp_glm_keys_are_stable() -> None:
    cal = _cal("jdp-glm", epsilon=2.0)
    assert list(cal.resolved) == JDP_KEYS
    c = cal.typed(JDPGLMConstants)
    assert cal.resolved["sigma_V"] == c.sigma_V and cal.resolved["split"] == c.split == "zcdp"


@pytest.mark.parametrize("mode", ["practical", "theory"])
def test_shuffle_glm_keys_are_stable(mode: str) -> None:
    cal = _cal("shuffle-glm", epsilon=2.0, mode=mode, max_iters=5)
    extra = SHUFFLE_THEORY_KEYS if mode == "theory" else []
    assert list(cal.resolved) == SHUFFLE_KEYS + extra + ["delta", "epsilon_by_batch"]
    c = cal.typed(ShuffleGLMConstants)
    assert cal.resolved["lambda"] == c.lam and cal.resolved["matrix_b"] == list(c.matrix_b)
    assert cal.resolved["epsilon_by_batch"] == list(c.epsilon_by_batch or ())


def test_glm_ucb_keys_are_stable() -> None:
    cal = _cal("glm-ucb")
    assert list(cal.resolved) == ["k_mu", "c_mu", "r_max", "n_init", "mode", "T"]
    assert cal.typed(GLMUCBConstants).mode == "history"


SRC = Path(pb.__file__).parent / "algorithms"
OWN = [
    *(p for p in (SRC / "sarmasarkar").glob("*.py") if p.name != "authors_code.py"),
    SRC / "glm" / "glm_ucb.py",
]


@pytest.mark.parametrize("path", OWN, ids=lambda p: p.name)
def test_no_string_key_reads_of_the_calibration(path: Path) -> None:
    text = path.read_text()
    assert not re.search(r"\b(resolved|res)\[", text), f"{path.name} reads resolved[...]"
    assert "plan.resolved" not in text and "calibration.resolved" not in text
