"""Every clip and projection of the library is tested at, just inside and beyond its bound (issue 28, item 2).

:func:`clip_sites` reads the source of ``src/privbandits`` (its syntax tree, not its text) and lists
every call that bounds a value: ``np.clip`` / ``.clip``, ``clip_*`` / ``project*`` /
``*projection*`` helpers (``clip_scalar``, ``clip_l2``, ``clip_rows``, ``project_ball``,
``Domain.project``, ...), the norm-clipping idioms ``np.minimum(1, s / norm)`` and
``bound / norm if norm > bound``, and nested ``min(max(...))`` clamps.  Each site is named
``path::function::callee#k`` (the ``k``-th such call in that function), so a new clip in a function
is a new name.  :data:`INVENTORY` maps every name to the tests that reach that clip with a value
out of its bound and check the output equals the bound, or to ``EXEMPT`` with the reason the clip
is not part of any privacy guarantee.  The inventory test fails on a clip that is not listed, on a
listed clip that no longer exists, and on a listed test that does not exist.

The at-bound / just-inside / beyond tests of the clips of ``privacy/`` and ``core/`` follow; the
device clips of the algorithms are tested beside each algorithm.
"""

from __future__ import annotations

import ast
import copy
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from privbandits.core.convex import Domain
from privbandits.core.errors import DataBoundError
from privbandits.core.spec import EnvSpec
from privbandits.privacy import cheu
from privbandits.privacy.inputs import NORM_RTOL, check_device_inputs
from privbandits.privacy.samplers import binomial_bits, clip_scalar, laplace_randomize

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "privbandits"

#: Callee names that bound a value (besides np.clip and the idioms matched below).
_BOUNDING = re.compile(r"^_?(clip|project)\w*$|projection|_project$")


def _callee(node: ast.Call) -> str | None:
    """The name of a bounding call, or None."""
    f = node.func
    args = node.args
    if isinstance(f, ast.Attribute):
        base = f.value.id if isinstance(f.value, ast.Name) else None
        if f.attr == "clip":
            return "np.clip" if base in ("np", "numpy") else ".clip"
        if (
            base in ("np", "numpy")
            and f.attr in ("minimum", "maximum")
            and args
            and isinstance(args[0], ast.Constant)
            and args[0].value in (1, 1.0)
        ):
            return f"np.{f.attr}(1)"
        return f".{f.attr}" if _BOUNDING.search(f.attr) else None
    if isinstance(f, ast.Name):
        if f.id in ("min", "max") and any(
            isinstance(a, ast.Call) and isinstance(a.func, ast.Name) and a.func.id in ("min", "max")
            for a in args
        ):
            return "min-max"
        if (
            f.id == "min"
            and args
            and isinstance(args[0], ast.Constant)
            and args[0].value in (1, 1.0)
        ):
            return "min(1)"
        return f.id if _BOUNDING.search(f.id) else None
    return None


def _norm_ifexp(node: ast.IfExp) -> bool:
    """``bound / norm if norm > bound else 1``."""
    return (
        isinstance(node.test, ast.Compare)
        and isinstance(node.body, ast.BinOp)
        and any(isinstance(n, ast.Name) and "norm" in n.id for n in ast.walk(node.test))
    )


def clip_sites(root: Path = SRC) -> list[str]:
    """Every bounding call of the package, as ``path::function::callee#k``."""
    names: list[str] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(), filename=str(path))
        seen: Counter[str] = Counter()

        def visit(
            node: ast.AST, scope: list[str], rel: str = rel, seen: Counter[str] = seen
        ) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    visit(child, [*scope, child.name])
                    continue
                what = (
                    _callee(child)
                    if isinstance(child, ast.Call)
                    else (
                        "norm-ifexp"
                        if isinstance(child, ast.IfExp) and _norm_ifexp(child)
                        else None
                    )
                )
                if what is not None:
                    key = f"{rel}::{'.'.join(scope) or '<module>'}::{what}"
                    seen[key] += 1
                    names.append(f"{key}#{seen[key]}")
                visit(child, scope)

        visit(tree, [])
    return names


#: A clip that is not part of any privacy guarantee, with the reason.
EXEMPT = "exempt"

#: Directories whose clips are exempt as a whole (no released quantity passes through them).
EXEMPT_DIRS: dict[str, str] = {
    "src/privbandits/envs/": "the simulated world (rewards, losses, data generation) before any user's device",
    "src/privbandits/experiments/": "plots, worker counts and reports of finished results",
    "scripts/docgen/": "documentation generation",
    "src/privbandits/privacy/audit/": "the auditor's own statistics (confidence intervals, candidate thresholds)",
}

T_SAMPLERS = "tests/privacy/test_samplers.py"
T_SHUFFLE = "tests/privacy/test_shuffle.py"
T_HERE = "tests/test_clip_inventory.py"

#: Every clip site (outside :data:`EXEMPT_DIRS`) -> the tests that drive it beyond its bound, or
#: ``(EXEMPT, reason)``.
INVENTORY: dict[str, tuple[str, ...]] = {
    # -- privacy/ ---------------------------------------------------------------------------------
    "src/privbandits/privacy/samplers.py::clip_scalar::min-max#1": (
        f"{T_SAMPLERS}::test_clip_scalar",
        f"{T_HERE}::test_clip_scalar_at_inside_and_beyond_the_bound",
    ),
    "src/privbandits/privacy/samplers.py::laplace_randomize::clip_scalar#1": (
        f"{T_HERE}::test_laplace_randomize_clips_before_the_noise",
    ),
    "src/privbandits/privacy/samplers.py::binomial_bits::min-max#1": (
        f"{T_HERE}::test_binomial_bits_clamps_the_rounded_value",
    ),
    "src/privbandits/privacy/cheu.py::encode_vectors::_project_rows#1": (
        f"{T_SHUFFLE}::test_vector_norm_projection_not_coordinate_clipping",
        f"{T_HERE}::test_cheu_encodings_project_onto_the_norm_bound",
    ),
    "src/privbandits/privacy/cheu.py::encode_vectors::np.clip#1": (
        f"{T_HERE}::test_cheu_encodings_project_onto_the_norm_bound",
    ),
    "src/privbandits/privacy/cheu.py::encode_matrices::_project_rows#1": (
        f"{T_SHUFFLE}::test_matrix_frobenius_projection",
        f"{T_HERE}::test_cheu_encodings_project_onto_the_norm_bound",
    ),
    "src/privbandits/privacy/cheu.py::encode_matrices::np.clip#1": (
        f"{T_HERE}::test_cheu_encodings_project_onto_the_norm_bound",
    ),
    "src/privbandits/privacy/cheu.py::encode_rank_one::np.clip#1": (
        f"{T_HERE}::test_cheu_encodings_project_onto_the_norm_bound",
    ),
    "src/privbandits/privacy/cheu.py::aggregate_sum::np.clip#1": (
        f"{T_HERE}::test_cheu_aggregate_release_clamps_the_scaled_inputs",
    ),
    "src/privbandits/privacy/cheu.py::aggregate_release::np.clip#1": (
        f"{T_HERE}::test_cheu_aggregate_release_clamps_the_scaled_inputs",
    ),
    "src/privbandits/privacy/amplification.py::numerical_delta::min(1)#1": (
        EXEMPT,
        "a probability (delta) capped at 1: accounting arithmetic, no data",
    ),
    "src/privbandits/privacy/binomial_accounting.py::binomial_sum_delta::min(1)#1": (
        EXEMPT,
        "a probability (delta) capped at 1: accounting arithmetic, no data",
    ),
    "src/privbandits/privacy/binomial_accounting.py::_correlate_blocks::min-max#1": (
        EXEMPT,
        "the FFT block length bounded to [256, 65536]: accounting arithmetic, no data",
    ),
    # -- core/ ------------------------------------------------------------------------------------
    "src/privbandits/core/convex.py::Domain.project::np.clip#1": (
        f"{T_HERE}::test_domain_projection_at_inside_and_beyond_the_boundary",
    ),
    "src/privbandits/core/convex.py::Domain.project::np.minimum(1)#1": (
        f"{T_HERE}::test_domain_projection_at_inside_and_beyond_the_boundary",
    ),
    "src/privbandits/core/public_space.py::PublicField.draw::np.clip#1": (
        EXEMPT,
        "draws members of a public-state space for adversarial tests",
    ),
    # -- curators (joint / central DP) and the regression primitives ----------------------------------
    "src/privbandits/algorithms/chen/schedule.py::EpochCurator.update::np.clip#1": (
        f"{T_HERE}::test_chen_curators_clip_the_reward_into_the_model_range",
    ),
    "src/privbandits/algorithms/hanna/curator.py::BatchedCurator.update::np.clip#1": (
        f"{T_HERE}::test_hanna_central_curator_clips_the_reward_sums",
    ),
    "src/privbandits/algorithms/sarmasarkar/jdp_glm.py::_update::clip_l2#1": (
        f"{T_HERE}::test_jdp_glm_curator_clips_each_stored_context_and_reward",
    ),
    "src/privbandits/algorithms/sarmasarkar/jdp_glm.py::_update::clip_scalar#1": (
        f"{T_HERE}::test_jdp_glm_curator_clips_each_stored_context_and_reward",
    ),
    "src/privbandits/algorithms/sarmasarkar/authors_code.py::_Replication._fit::clip_rows#1": (
        "tests/algorithms/test_sarmasarkar_authors_code.py::"
        "test_the_fit_clips_every_example_gradient_it_uses",
    ),
    "src/privbandits/algorithms/sarmasarkar/authors_code.py::clip_rows::np.minimum(1)#1": (
        "tests/algorithms/test_sarmasarkar_authors_code.py::"
        "test_dp_sgd_clips_each_example_gradient_to_the_clip_norm",
    ),
    "src/privbandits/algorithms/sarmasarkar/authors_code.py::AuthorsGLMUCB._nll::np.clip#1": (
        EXEMPT,
        "probabilities kept off 0 and 1 inside a log: the objective's numerics (a non-private baseline)",
    ),
    "src/privbandits/algorithms/sarmasarkar/optim.py::residual_sums::clip_l2#1": (
        f"{T_HERE}::test_dppgd_residual_clips_each_gradient_to_R",
    ),
    "src/privbandits/regression/data.py::prepare::np.clip#1": (
        f"{T_HERE}::test_regression_data_policy_clips_responses_and_rows",
        "tests/regression/test_reweighted.py::test_bound_policy",
    ),
    "src/privbandits/regression/baselines.py::DPGradientDescent.fit::np.minimum(1)#1": (
        f"{T_HERE}::test_dp_gradient_descent_clips_each_per_sample_gradient",
    ),
    "src/privbandits/algorithms/sarmasarkar/pgd_round.py::pgd_rounded_sums::norm-ifexp#1": (
        "tests/algorithms/test_shuffle_glm_batches.py::test_compiled_pgd_round_equals_the_numpy_encoding_and_rounding",
    ),
    "src/privbandits/algorithms/sarmasarkar/pgd_round.py::pgd_rounded_sums::min-max#1": (
        "tests/algorithms/test_shuffle_glm_batches.py::test_compiled_pgd_round_equals_the_numpy_encoding_and_rounding",
    ),
    "src/privbandits/algorithms/sarmasarkar/pgd_round.py::pgd_rounded_sums::min-max#2": (
        "tests/algorithms/test_shuffle_glm_batches.py::test_compiled_pgd_round_equals_the_numpy_encoding_and_rounding",
    ),
    "src/privbandits/algorithms/ldp_glb/randomizers.py::sgd_gradient::clip_scalar#1": (
        f"{T_HERE}::test_kernel_devices_clip_the_reward_before_encoding",
    ),
    "src/privbandits/algorithms/ldp_zheng/ldp_gloc.py::_encode::clip_scalar#1": (
        f"{T_HERE}::test_kernel_devices_clip_the_reward_before_encoding",
    ),
    "src/privbandits/algorithms/sarmasarkar/shuffle_glm.py::ShuffleGLMClient.randomize::np.clip#1": (
        f"{T_HERE}::test_shuffle_glm_device_holds_the_clipped_reward",
    ),
    "src/privbandits/algorithms/sarmasarkar/shuffle_glm.py::ShuffleGLMClient.randomize_batch::np.clip#1": (
        f"{T_HERE}::test_shuffle_glm_device_holds_the_clipped_reward",
    ),
    "src/privbandits/algorithms/sarmasarkar/shuffle_glm.py::_counts_mean::np.clip#1": (
        f"{T_HERE}::test_shuffle_glm_declared_count_law_clamps_the_scaled_input",
    ),
    "src/privbandits/algorithms/sarmasarkar/shuffle_glm.py::_counts_noise::np.clip#1": (
        f"{T_HERE}::test_shuffle_glm_declared_count_law_clamps_the_scaled_input",
    ),
    "src/privbandits/algorithms/mab/private.py::unit_reward::clip_scalar#1": (
        "tests/algorithms/test_private_mab.py::test_unit_reward_clip_at_inside_and_beyond_the_range",
        "tests/algorithms/test_private_mab.py::test_rewards_outside_the_range_are_clipped_before_any_statistic",
    ),
    "src/privbandits/algorithms/mab/tsallis_inf.py::_update::min-max#1": (
        "tests/algorithms/test_private_mab.py::test_tsallis_inf_clips_losses_to_the_unit_interval",
    ),
    "src/privbandits/algorithms/mab/adap_ucb.py::kl_ucb_index::min-max#1": (
        EXEMPT,
        "an optimistic index of a released mean clamped into [0, 1]: post-processing",
    ),
    # -- the auditor --------------------------------------------------------------------------------
    "src/privbandits/auditing/client_path.py::_client_path_spec::pilot_projection#1": (
        EXEMPT,
        "the auditor's test statistic (a projection of the observed messages)",
    ),
    "src/privbandits/auditing/adversarial.py::AdversarialServer._perturb::np.minimum(1)#1": (
        EXEMPT,
        "the auditor's simulated dishonest server keeps its broadcast inside the declared space",
    ),
    "src/privbandits/auditing/adversarial.py::_perturb_field::np.clip#1": (
        EXEMPT,
        "the auditor's simulated dishonest server keeps its broadcast inside the declared space",
    ),
    "src/privbandits/auditing/adversarial.py::_perturb_field::np.clip#2": (
        EXEMPT,
        "the auditor's simulated dishonest server keeps its broadcast inside the declared space",
    ),
    "src/privbandits/auditing/adversarial.py::_perturb_field::np.clip#3": (
        EXEMPT,
        "the auditor's simulated dishonest server keeps its broadcast inside the declared space",
    ),
    "src/privbandits/auditing/adversarial.py::_perturb_field::np.minimum(1)#1": (
        EXEMPT,
        "the auditor's simulated dishonest server keeps its broadcast inside the declared space",
    ),
    # -- device clips of the local and shuffle algorithms ---------------------------------------------
    "src/privbandits/algorithms/bco/privatizer.py::encode_difference::clip_scalar#1": (
        "tests/algorithms/test_bco_devices.py::test_difference_clip_at_inside_and_beyond_the_bound",
    ),
    "src/privbandits/algorithms/ldp_onepoint/privatizer.py::encode_values::clip_scalar#1": (
        "tests/algorithms/test_bco_devices.py::test_value_clip_at_inside_and_beyond_the_range",
        "tests/algorithms/test_ldp_onepoint.py::test_clipping_puts_every_value_in_range",
    ),
    "src/privbandits/algorithms/hanna/local.py::LocalClient.encode::np.clip#1": (
        "tests/algorithms/test_hanna_protocol.py::test_clients_clip_the_reward_before_the_noise",
    ),
    "src/privbandits/algorithms/hanna/shuffle.py::ShuffleClient.encode::np.clip#1": (
        "tests/algorithms/test_hanna_protocol.py::test_clients_clip_the_reward_before_the_noise",
    ),
    "src/privbandits/algorithms/ldp_glb/randomizers.py::ols_statistic::clip_l2#1": (
        "tests/algorithms/test_ldp_glb_mechanisms.py::test_ols_statistic_is_computed_from_the_clipped_data",
    ),
    "src/privbandits/algorithms/ldp_glb/randomizers.py::ols_statistic::clip_scalar#1": (
        "tests/algorithms/test_ldp_glb_mechanisms.py::test_ols_statistic_is_computed_from_the_clipped_data",
        "tests/algorithms/test_ldp_glb_mechanisms.py::test_ols_clips_rewards_and_depends_on_data_only_through_the_statistic",
    ),
    "src/privbandits/algorithms/ldp_glb/randomizers.py::sgd_gradient::clip_l2#1": (
        "tests/algorithms/test_ldp_glb_mechanisms.py::test_sgd_client_unbiased_for_clipped_gradient",
    ),
    "src/privbandits/algorithms/ldp_zheng/ldp_ucb.py::_encode::clip_l2#1": (
        "tests/algorithms/test_ldp_zheng_messages.py::test_ldp_ucb_clipped_statistics_have_bounded_sensitivity",
    ),
    "src/privbandits/algorithms/ldp_zheng/ldp_ucb.py::_encode::clip_scalar#1": (
        "tests/algorithms/test_ldp_zheng_messages.py::test_ldp_ucb_clipped_statistics_have_bounded_sensitivity",
        f"{T_HERE}::test_kernel_devices_clip_the_reward_before_encoding",
    ),
    "src/privbandits/algorithms/ldp_zheng/ldp_gloc.py::_encode::clip_l2#1": (
        "tests/algorithms/test_ldp_zheng_messages.py::test_ldp_gloc_clipped_gradient_and_relabel_bounds",
    ),
    "src/privbandits/algorithms/ldp_zheng/ldp_gloc.py::_encode::clip_l2#2": (
        "tests/algorithms/test_ldp_zheng_messages.py::test_gloc_client_does_not_trust_the_broadcast_iterate",
    ),
    "src/privbandits/algorithms/ldp_zheng/ldp_gloc.py::_encode::_clip_nan#1": (
        "tests/algorithms/test_ldp_zheng_messages.py::test_gloc_client_does_not_trust_the_broadcast_iterate",
    ),
    "src/privbandits/algorithms/ldp_zheng/ldp_gloc.py::_encode::_clip_nan#2": (
        "tests/algorithms/test_ldp_zheng_messages.py::test_gloc_client_does_not_trust_the_broadcast_iterate",
    ),
    # -- the Chen et al. regression primitives (device and curator) -----------------------------------
    "src/privbandits/regression/reweighted.py::reweighted_gradient::np.clip#1": (
        "tests/algorithms/test_chen_devices.py::test_reweighted_gradient_clips_the_prediction",
    ),
    "src/privbandits/regression/reweighted.py::reweighted_gradient::np.clip#2": (
        "tests/algorithms/test_chen_devices.py::test_reweighted_gradient_clips_the_response",
    ),
    "src/privbandits/regression/reweighted.py::reweighted_gradient::clip_rows#1": (
        "tests/algorithms/test_chen_devices.py::test_reweighted_gradient_clips_the_gradient_norm",
        "tests/algorithms/test_chen_devices.py::test_clip_rows_at_inside_and_beyond_the_bound",
    ),
    "src/privbandits/regression/dimfree.py::improper_sgd_gradients::np.clip#1": (
        "tests/algorithms/test_chen_devices.py::test_square_loss_gradient_clips",
    ),
    "src/privbandits/regression/dimfree.py::improper_sgd_gradients::np.clip#2": (
        "tests/algorithms/test_chen_devices.py::test_square_loss_gradient_clips",
    ),
    "src/privbandits/regression/dimfree.py::improper_sgd_gradients::clip_rows#1": (
        "tests/algorithms/test_chen_devices.py::test_square_loss_gradient_clips",
        "tests/algorithms/test_chen_devices.py::test_clip_rows_at_inside_and_beyond_the_bound",
    ),
    "src/privbandits/regression/normalization.py::normalization_encode::clip_rows#1": (
        "tests/algorithms/test_chen_devices.py::test_normalization_message_is_clipped_to_the_operator_norm",
    ),
    "src/privbandits/algorithms/chen/ldp_kernel.py::encode::_clip_norm#1": (
        "tests/algorithms/test_chen_compiled.py::test_compiled_normalization_message_is_clipped_to_the_operator_norm",
        "tests/algorithms/test_chen_compiled.py::test_clip_norm_at_inside_and_beyond_the_bound",
    ),
    "src/privbandits/algorithms/chen/ldp_kernel.py::encode::_clip_norm#2": (
        "tests/algorithms/test_chen_compiled.py::test_compiled_encode_equals_the_device_beyond_every_clip",
        "tests/algorithms/test_chen_compiled.py::test_clip_norm_at_inside_and_beyond_the_bound",
    ),
    "src/privbandits/algorithms/chen/squarecb_kernel.py::ldp_encode::min-max#1": (
        "tests/algorithms/test_chen_kernels.py::test_squarecb_ldp_compiled_encode_equals_the_device_beyond_every_clip",
    ),
    "src/privbandits/algorithms/chen/squarecb_kernel.py::ldp_encode::min-max#2": (
        "tests/algorithms/test_chen_kernels.py::test_squarecb_ldp_compiled_encode_equals_the_device_beyond_every_clip",
    ),
    "src/privbandits/algorithms/chowdhury/shuffle_vec.py::_joint::clip_l2#1": (
        "tests/algorithms/test_shuffle_linucb_vec.py::test_device_encoding_clips_inside_at_and_beyond_the_bounds",
    ),
    "src/privbandits/algorithms/chowdhury/shuffle_vec.py::_joint::clip_scalar#1": (
        "tests/algorithms/test_shuffle_linucb_vec.py::test_device_encoding_clips_inside_at_and_beyond_the_bounds",
    ),
    "src/privbandits/algorithms/chowdhury/shuffle_vec.py::_joint::clip_l2#2": (
        EXEMPT,
        "a guard: the clipped (x, y) give ||w|| <= Delta already (joint_norm_bound), so the projection "
        "never binds; the accounted sensitivity does not rely on it",
    ),
    "src/privbandits/algorithms/chowdhury/shuffle_vec.py::_joint::min-max#1": (
        "tests/algorithms/test_shuffle_linucb_vec.py::test_device_encoding_clips_inside_at_and_beyond_the_bounds",
    ),
    "src/privbandits/algorithms/chowdhury/shuffle_vec.py::_encode::min-max#1": (
        "tests/algorithms/test_shuffle_linucb_vec.py::test_device_encoding_clips_inside_at_and_beyond_the_bounds",
    ),
    "src/privbandits/algorithms/chowdhury/vec_audit.py::_joint::min-max#1": (
        EXEMPT,
        "the auditor's own model of the device's reward clip (the audited pair's statistic direction)",
    ),
    "src/privbandits/algorithms/chen/squarecb_kernel.py::curator_update::min-max#1": (
        "tests/algorithms/test_chen_kernels.py::test_compiled_curators_store_clipped_rewards_and_unit_features",
    ),
    "src/privbandits/algorithms/chen/jdp_kernel.py::update::min-max#1": (
        "tests/algorithms/test_chen_kernels.py::test_compiled_curators_store_clipped_rewards_and_unit_features",
    ),
    "src/privbandits/algorithms/chen/jdp_kernel.py::fit_jdp::min-max#1": (
        "tests/algorithms/test_chen_kernels.py::test_compiled_algorithm_2_equals_the_numpy_estimator",
    ),
    "src/privbandits/algorithms/chen/jdp_kernel.py::fit_jdp::min-max#2": (
        "tests/algorithms/test_chen_kernels.py::test_compiled_algorithm_2_equals_the_numpy_estimator",
    ),
    "src/privbandits/algorithms/chen/jdp_kernel.py::fit_jdp::_clip_norm#1": (
        "tests/algorithms/test_chen_kernels.py::test_compiled_algorithm_2_equals_the_numpy_estimator",
        "tests/algorithms/test_chen_compiled.py::test_clip_norm_at_inside_and_beyond_the_bound",
    ),
    "src/privbandits/algorithms/chen/ldp_kernel.py::encode::min-max#1": (
        "tests/algorithms/test_chen_compiled.py::test_compiled_encode_equals_the_device_beyond_every_clip",
    ),
    "src/privbandits/algorithms/chen/ldp_kernel.py::encode::min-max#2": (
        "tests/algorithms/test_chen_compiled.py::test_compiled_encode_equals_the_device_beyond_every_clip",
    ),
    "src/privbandits/algorithms/shariff/jdp_linucb.py::_update::clip_l2#1": (
        "tests/algorithms/test_jdp_linucb.py::test_row_clips_at_inside_and_beyond_their_bounds",
    ),
    "src/privbandits/algorithms/shariff/jdp_linucb.py::_update::clip_scalar#1": (
        "tests/algorithms/test_jdp_linucb.py::test_row_clips_at_inside_and_beyond_their_bounds",
    ),
    # -- post-processing of released (already private) quantities, and public constants -------------
    "src/privbandits/algorithms/chowdhury/shuffle_linucb.py::_publish::min-max#1": (
        EXEMPT,
        "the published inverse Gram entries bounded (the public space's range): post-processing",
    ),
    "src/privbandits/algorithms/chowdhury/shuffle_linucb.py::_publish::project_ball#1": (
        EXEMPT,
        "the server's estimate projected onto the parameter ball: post-processing of released sums",
    ),
    "src/privbandits/algorithms/sarmasarkar/binomial_composition.py::composed_delta::min(1)#1": (
        EXEMPT,
        "a probability (delta) capped at 1 in the accountant: no data passes through it",
    ),
    "src/privbandits/algorithms/sarmasarkar/shuffle_plan.py::strict_plan::min-max#1": (
        EXEMPT,
        "the calibration search's bracket on a public noise level: no data passes through it",
    ),
    "src/privbandits/algorithms/bco/fkm.py::FKM.update::.project#1": (
        EXEMPT,
        "projection of the non-private learner's iterate onto its domain (no privacy claim)",
    ),
    "src/privbandits/algorithms/bco/steps.py::project_row::min-max#1": (
        "tests/engine/test_convex_compiled.py::test_the_compiled_projection_at_inside_and_beyond_the_boundary",
        "tests/engine/test_convex_compiled.py::test_the_compiled_projection_is_the_domains",
    ),
    "src/privbandits/algorithms/bco/steps.py::project_row::min(1)#1": (
        "tests/engine/test_convex_compiled.py::test_the_compiled_projection_at_inside_and_beyond_the_boundary",
        "tests/engine/test_convex_compiled.py::test_the_compiled_projection_is_the_domains",
    ),
    "src/privbandits/algorithms/bco/steps.py::gradient_step::project_row#1": (
        EXEMPT,
        "the compiled server's / learner's iterate projected onto the domain: post-processing",
    ),
    "src/privbandits/algorithms/bco/two_point.py::TwoPointState.step::.project#1": (
        EXEMPT,
        "the server's iterate projected onto the domain: post-processing of privatized differences",
    ),
    "src/privbandits/algorithms/chen/planning.py::Board.bounds::np.clip#1": (
        EXEMPT,
        "confidence bounds computed from released estimates: post-processing",
    ),
    "src/privbandits/algorithms/chen/planning_kernel.py::plan_one::min-max#1": (
        EXEMPT,
        "predicted means of released estimates clamped into the link's range: post-processing",
    ),
    "src/privbandits/algorithms/chen/squarecb_kernel.py::igw_choose::min-max#1": (
        EXEMPT,
        "predicted means clamped before the inverse-gap weighting (curator and device): a choice, "
        "not sent",
    ),
    "src/privbandits/algorithms/glm/ecolog.py::_solve::mahalanobis_ball_projection_row#1": (
        EXEMPT,
        "projection of the non-private ECOLog iterate: no privacy claim",
    ),
    "src/privbandits/algorithms/glm/ecolog.py::_update::min-max#1": (
        EXEMPT,
        "the non-private ECOLog's reward read as a label in [0, 1]: no privacy claim",
    ),
    "src/privbandits/algorithms/glm/gloc.py::mahalanobis_ball_projection::mahalanobis_ball_projection_row#1": (
        EXEMPT,
        "projection of the non-private GLOC iterate (and of server-side iterates): post-processing",
    ),
    "src/privbandits/algorithms/glm/gloc.py::_update::mahalanobis_ball_projection_row#1": (
        EXEMPT,
        "projection of the non-private GLOC iterate: no privacy claim",
    ),
    "src/privbandits/algorithms/ldp_zheng/ldp_gloc.py::_update::project_blocks#1": (
        EXEMPT,
        "the server's iterate projected onto W: post-processing of privatized messages",
    ),
    "src/privbandits/algorithms/ldp_zheng/ldp_gloc.py::_update::project_ball#1": (
        EXEMPT,
        "the server's iterate projected onto W: post-processing of privatized messages",
    ),
    "src/privbandits/algorithms/ldp_zheng/ridge.py::ridge_refresh::project_ball#1": (
        EXEMPT,
        "the server's ridge estimate projected onto W: post-processing of privatized messages",
    ),
    "src/privbandits/algorithms/_shared/linalg.py::project_blocks::project_ball#1": (
        EXEMPT,
        "helper of server-side projections (post-processing)",
    ),
    "src/privbandits/algorithms/ldp_zheng/calibration.py::outer_vector_sensitivity::min-max#1": (
        EXEMPT,
        "a sensitivity constant computed from the declared bounds (accounting arithmetic, no data)",
    ),
    "src/privbandits/algorithms/sarmasarkar/jdp_glm.py::_iterations::min-max#1": (
        EXEMPT,
        "an iteration count from public parameters",
    ),
    "src/privbandits/algorithms/sarmasarkar/optim.py::dppgd_iterations::min-max#1": (
        EXEMPT,
        "an iteration count from public parameters",
    ),
    "src/privbandits/algorithms/sarmasarkar/optim.py::_project::project_ellipsoid#1": (
        EXEMPT,
        "projection of the DP-PGD iterate onto the constraint set: post-processing of noisy gradients",
    ),
    "src/privbandits/algorithms/sarmasarkar/optim.py::dppgd::_project#1": (
        EXEMPT,
        "projection of the DP-PGD iterate onto the constraint set: post-processing of noisy gradients",
    ),
    "src/privbandits/algorithms/sarmasarkar/optim.py::newton_mle::_project#1": (
        EXEMPT,
        "projection of a non-private MLE iterate (warm-up, no release)",
    ),
    "src/privbandits/algorithms/sarmasarkar/shuffle_glm.py::ShuffleGLMServer._gd_step::np.minimum(1)#1": (
        EXEMPT,
        "the analyzer's iterate projected onto the ball: post-processing of shuffled releases",
    ),
    "src/privbandits/algorithms/sarmasarkar/shuffle_plan.py::practical_warmup::min-max#1": (
        EXEMPT,
        "a schedule length from public parameters",
    ),
    "src/privbandits/algorithms/sarmasarkar/shuffle_plan.py::practical_warmup::min-max#2": (
        EXEMPT,
        "a schedule length from public parameters",
    ),
    "src/privbandits/algorithms/sarmasarkar/shuffle_plan.py::batch_lengths::min-max#1": (
        EXEMPT,
        "a schedule length from public parameters",
    ),
    "src/privbandits/algorithms/sarmasarkar/shuffle_plan.py::pgd_iterations::min-max#1": (
        EXEMPT,
        "an iteration count from public parameters",
    ),
    "src/privbandits/algorithms/sarmasarkar/shuffle_plan.py::pgd_theory_rounds::min-max#1": (
        EXEMPT,
        "an iteration count from public parameters",
    ),
    "src/privbandits/algorithms/sarmasarkar/shuffle_plan.py::shuffle_plan::min-max#1": (
        EXEMPT,
        "a schedule length from public parameters",
    ),
    "src/privbandits/regression/audit.py::_spec::_projected#1": (
        EXEMPT,
        "the regression audit's test statistic",
    ),
    "src/privbandits/regression/dimfree.py::ImproperBatchSGD.steps::min-max#1": (
        EXEMPT,
        "a step count from public parameters",
    ),
    "src/privbandits/regression/reweighted.py::ReweightedRegression.plan::min-max#1": (
        EXEMPT,
        "a batch plan from public parameters",
    ),
    "src/privbandits/regression/reweighted.py::reweighted_gd::project#1": (
        EXEMPT,
        "projection of the server's iterate onto the ball: post-processing of released gradients",
    ),
    "src/privbandits/regression/normalization.py::spectral_step::psd_project#1": (
        EXEMPT,
        "PSD projection of a released noisy matrix: post-processing",
    ),
    "src/privbandits/regression/normalization.py::learn_normalization::psd_project#1": (
        EXEMPT,
        "PSD projection of a released noisy matrix: post-processing",
    ),
    "src/privbandits/regression/estimate.py::RegressionEstimate.predict::np.clip#1": (
        EXEMPT,
        "predictions of a released estimate clamped into the link's range: post-processing",
    ),
    "src/privbandits/experiments/regression_experiment.py::covariates::np.maximum(1)#1": (
        EXEMPT,
        "the regression study's synthetic covariates (the simulated world)",
    ),
    "src/privbandits/experiments/regression_experiment.py::seed_rows::np.clip#1": (
        EXEMPT,
        "the regression study's coverage metric of finished estimates",
    ),
    "src/privbandits/experiments/regression_experiment.py::bandit_coverage_rows::np.clip#1": (
        EXEMPT,
        "the regression study's coverage metric of finished estimates",
    ),
}


def _exempt_dir(site: str) -> str | None:
    return next((why for d, why in EXEMPT_DIRS.items() if site.startswith(d)), None)


def _test_exists(node_id: str) -> bool:
    path, _, name = node_id.partition("::")
    file = ROOT / path
    if not file.is_file() or not name:
        return False
    func = name.split("::")[-1].split("[")[0]
    return (
        re.search(rf"^\s*(async\s+)?def {re.escape(func)}\(", file.read_text(), re.MULTILINE)
        is not None
    )


def test_every_clip_is_in_the_inventory() -> None:
    sites = [s for s in clip_sites() if _exempt_dir(s) is None]
    assert len(sites) > 20, "the scan found almost no clips: is the pattern broken?"
    missing = [s for s in sites if s not in INVENTORY]
    assert not missing, (
        "clip / projection calls without an entry in INVENTORY (add the test that drives each "
        "beyond its bound and checks the output equals the bound, or an EXEMPT reason):\n  "
        + "\n  ".join(missing)
    )


def test_the_inventory_lists_only_existing_clips_and_tests() -> None:
    sites = set(clip_sites())
    stale = [s for s in INVENTORY if s not in sites]
    assert not stale, (
        "INVENTORY entries for clips that no longer exist (rename or remove them):\n  "
        + "\n  ".join(stale)
    )
    for site, tests in INVENTORY.items():
        assert tests, site
        if tests[0] == EXEMPT:
            assert len(tests) == 2 and len(tests[1]) > 10, f"{site}: an exemption needs its reason"
            continue
        absent = [t for t in tests if not _test_exists(t)]
        assert not absent, f"{site}: listed tests that do not exist: {absent}"


def test_the_scan_finds_each_kind_of_clip(tmp_path: Path) -> None:
    """The scanner sees every idiom it claims to (so a clip written one of these ways is never missed)."""
    pkg = tmp_path / "src" / "privbandits"
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_text(
        "import numpy as np\n"
        "def f(v, y, lo, hi, norm, bound, dom):\n"
        "    a = np.clip(y, lo, hi)\n"
        "    b = y.clip(lo, hi)\n"
        "    c = clip_scalar(y, lo, hi)\n"
        "    clip_l2(v, bound)\n"
        "    d = dom.project(v)\n"
        "    e = v * np.minimum(1.0, bound / norm)\n"
        "    s = bound / norm if norm > bound else 1.0\n"
        "    g = min(max(y, lo), hi)\n"
        "    h = np.clip(a, lo, hi)\n"
        "    return mahalanobis_ball_projection(v)\n"
    )
    import tests.test_clip_inventory as me

    old = me.ROOT
    me.ROOT = tmp_path
    try:
        found = clip_sites(pkg)
    finally:
        me.ROOT = old
    kinds = sorted(s.split("::")[-1] for s in found)
    assert kinds == sorted(
        [
            "np.clip#1",
            ".clip#1",
            "clip_scalar#1",
            "clip_l2#1",
            ".project#1",
            "np.minimum(1)#1",
            "norm-ifexp#1",
            "min-max#1",
            "np.clip#2",
            "mahalanobis_ball_projection#1",
        ]
    ), kinds


# -- privacy/samplers ------------------------------------------------------------------------------
@pytest.mark.parametrize("lo, hi", [(-1.0, 1.0), (0.0, 2.5), (-3.0, -0.5)])
def test_clip_scalar_at_inside_and_beyond_the_bound(lo: float, hi: float) -> None:
    eps = 1e-9 * (hi - lo)
    assert clip_scalar(hi, lo, hi) == hi and clip_scalar(lo, lo, hi) == lo
    assert clip_scalar(hi - eps, lo, hi) == hi - eps and clip_scalar(lo + eps, lo, hi) == lo + eps
    for beyond in (hi + eps, hi + 1.0, 1e300, math.inf):
        assert clip_scalar(beyond, lo, hi) == hi
    for beyond in (lo - eps, lo - 1.0, -1e300, -math.inf):
        assert clip_scalar(beyond, lo, hi) == lo


def test_laplace_randomize_clips_before_the_noise() -> None:
    """A reward beyond the range gets exactly the report of the reward at the bound (same noise)."""
    lo, hi = -1.0, 1.0
    scale = np.full(4, 0.5)

    def report(y: list[float], seed: int = 3) -> np.ndarray:
        out = np.empty(4)
        laplace_randomize(np.random.default_rng(seed), np.array(y), lo, hi, scale, out)
        return out

    at = report([hi, lo, hi, lo])
    np.testing.assert_array_equal(report([hi + 1e-9, lo - 1e-9, 1e300, -1e300]), at)
    inside = report([hi - 1e-6, lo + 1e-6, 0.25, lo])
    np.testing.assert_allclose(inside - at, [-1e-6, 1e-6, 0.25 - hi, 0.0], atol=1e-12)


def test_binomial_bits_clamps_the_rounded_value() -> None:
    """``w g / Delta`` is clamped into ``[0, 2 g]`` before rounding: beyond either end, the bits are
    those of the end (same generator), inside they follow the input."""
    g, b, p, Delta = 3.5, 4, 0.25, 2.0
    for seed in range(40):

        def bits(w: float) -> int:
            return binomial_bits(np.random.default_rng(seed), w, g, b, p, Delta)

        assert bits(2 * Delta * (1 + 1e-9)) == bits(1e300) == bits(2 * Delta)
        assert bits(-1e-9) == bits(-1e300) == bits(0.0)
    # inside: the rounding of u = w g / Delta lands on floor(u) or floor(u) + 1 (plus the binomial bits)
    seen = {binomial_bits(np.random.default_rng(s), Delta, g, 0, p, Delta) for s in range(200)}
    assert seen == {3, 4}  # u = g = 3.5: neither clamped end (0 or 7)


# -- privacy/cheu ----------------------------------------------------------------------------------
def test_cheu_encodings_project_onto_the_norm_bound() -> None:
    """Vectors / matrices / rank-one inputs at, just inside and beyond Delta: beyond lands on the
    bound (direction kept), the others are unchanged, and every encoded entry is in [0, 2 Delta]."""
    Delta = 1.5
    u = np.array([0.6, -0.8])
    for scale, clipped in (
        (1.0, False),
        (1.0 - 1e-9, False),
        (1.0 + 1e-9, True),
        (1e6, True),
        (1e150, True),
    ):
        v = (scale * Delta) * u
        w, n = cheu.encode_vectors(v[None], Delta)
        assert n == int(clipped)
        want = Delta * u if clipped else v
        np.testing.assert_allclose(w[0] - Delta, want, rtol=1e-12, atol=1e-12 * Delta)
        assert w.min() >= 0.0 and w.max() <= 2 * Delta
        if clipped:
            with pytest.raises(DataBoundError):
                cheu.encode_vectors(v[None], Delta, norm_policy="reject")
    # a vector at the bound along an axis: the biased entry is exactly 2 Delta (the np.clip guards rounding)
    w, _ = cheu.encode_vectors(np.array([[Delta * (1 + 1e-15), 0.0]]), Delta)
    assert w[0, 0] == 2 * Delta and w[0, 1] == Delta
    # matrices: Frobenius norm
    X = np.array([[1.0, 2.0], [2.0, -1.0]])
    fro = float(np.linalg.norm(X))
    for scale, clipped in ((1.0, False), (1.0 - 1e-9, False), (1.0 + 1e-9, True), (1e6, True)):
        M = X * (scale * Delta / fro)
        w, n = cheu.encode_matrices(M[None], Delta)
        assert n == int(clipped)
        want = (X * Delta / fro) if clipped else M
        np.testing.assert_allclose(w[0] - Delta, want[np.triu_indices(2)], rtol=1e-12, atol=1e-12)
        assert w.min() >= 0.0 and w.max() <= 2 * Delta
    # rank one: w ||x||^2 against Delta
    x = np.array([0.6, 0.8])
    for weight, clipped in (
        (Delta, False),
        (Delta * (1 - 1e-9), False),
        (Delta * (1 + 1e-9), True),
        (1e9, True),
    ):
        w, n = cheu.encode_rank_one(x[None], np.array([weight]), Delta)
        assert n == int(clipped)
        eff = Delta if clipped else weight
        np.testing.assert_allclose(
            w[0] - Delta, (eff * np.outer(x, x))[np.triu_indices(2)], rtol=1e-12, atol=1e-12
        )
        assert w.min() >= 0.0 and w.max() <= 2 * Delta


def test_cheu_aggregate_release_clamps_the_scaled_inputs() -> None:
    """Encoded inputs a rounding error above 2 Delta (accepted by the range check) are clamped to
    exactly 2 g: the release equals that of inputs at 2 Delta, drawn with the same generator."""
    params = cheu.theory_params(4, 2, 1.0, 0.1, 1.0)
    at = np.full((1, 4, params.n_labels), 2.0 * params.Delta)
    at[0, :, 1] = 0.0
    above = at.copy()
    above[0, :, 0] *= 1 + 1e-13
    above[0, :, 1] = -0.0
    inside = at.copy()
    inside[0, :, 0] = (
        1.5 * params.Delta
    )  # u = 0.75 (2 g), an integer here: rounded without randomness
    assert params.g == 4.0
    for fn in (cheu.aggregate_sum, lambda w, p, r: cheu.aggregate_release(w, p, r)["ones"]):
        a = np.asarray(fn(above, params, np.random.default_rng(5)))
        b = np.asarray(fn(at, params, np.random.default_rng(5)))
        np.testing.assert_array_equal(a, b)
        c = np.asarray(fn(inside, params, np.random.default_rng(5)))
        assert c[0, 0] < b[0, 0] and c[0, 1] == b[0, 1]
    # the release path takes encoded inputs unchecked: far beyond either end it is the release of the end
    # (aggregate_sum refuses them; there the clamp only guards the rounding of inputs at the tolerance)
    far = at.copy()
    far[0, :, 0] = 3.0 * params.Delta
    far[0, :, 1] = -0.5 * params.Delta
    np.testing.assert_array_equal(
        cheu.aggregate_release(far, params, np.random.default_rng(5))["ones"],
        cheu.aggregate_release(at, params, np.random.default_rng(5))["ones"],
    )


# -- core/convex -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["box", "ball"])
@pytest.mark.parametrize("shrink", [0.0, 0.25])
def test_domain_projection_at_inside_and_beyond_the_boundary(kind: str, shrink: float) -> None:
    dom = Domain(kind, 2.0, 3)
    s = (1 - shrink) * 2.0
    u = np.array([0.48, -0.6, 0.64])  # unit vector
    edge = (s * u / np.abs(u).max()) if kind == "box" else s * u
    # (a point beyond 1e154 overflows the squared norm and is projected onto the centre: inside the
    # domain, so no bound is broken; the boundary is not reached either)
    for factor, moved in (
        (1.0, False),
        (1 - 1e-9, False),
        (1 + 1e-9, True),
        (10.0, True),
        (1e100, True),
    ):
        x = factor * edge
        p = dom.project(x[None], shrink)[0]
        if not moved:
            np.testing.assert_array_equal(p, x)
        elif kind == "box":
            np.testing.assert_allclose(np.abs(p).max(), s, rtol=1e-15)
            assert np.abs(p).max() <= s
        else:
            np.testing.assert_allclose(np.linalg.norm(p), s, rtol=1e-12)
            np.testing.assert_allclose(p / np.linalg.norm(p), u, rtol=1e-12)


# -- privacy/inputs --------------------------------------------------------------------------------
@pytest.mark.parametrize("setting", ["single", "multi"])
def test_device_inputs_norm_bound_at_inside_and_beyond(setting: str) -> None:
    spec = EnvSpec(d=3, K=2, setting=setting, horizon=10, context_bound=2.0)
    u = np.array([0.48, -0.6, 0.64])
    shape = (1, 2, 3) if setting == "single" else (1, 3)

    def ctx(norm: float) -> np.ndarray:
        return np.broadcast_to(norm * u, shape).copy()

    for norm in (2.0, 2.0 * (1 - 1e-9), 2.0 * (1 + NORM_RTOL / 4)):
        X, _, _ = check_device_inputs(spec, ctx(norm), [0], [0.5])
        np.testing.assert_array_equal(X, ctx(norm))
    for norm in (2.0 * (1 + 4 * NORM_RTOL), 3.0, 1e200):
        with pytest.raises(DataBoundError, match="context_bound"):
            check_device_inputs(spec, ctx(norm), [0], [0.5])
        check_device_inputs(
            spec, ctx(norm), bound=False
        )  # the choice stays on the device: finite is enough


# -- curators of the joint and central models (trusted, but their releases are calibrated to the clip)
def _reset_case(name: str, R: int = 2, seed: int = 0) -> tuple[object, object]:
    """``name`` reset on its first conformance environment (R replications); returns (alg, env)."""
    import warnings

    from privbandits.algorithms import available
    from privbandits.core.rng import make_streams
    from tests.conformance.cases import Case, env_kinds

    cls = available()[name]
    case = Case(cls, dict(cls.test_params[0]), env_kinds(cls)[0], 0)
    env = case.make_env()
    streams = make_streams(seed)
    spec = env.reset(R, streams, 64)
    alg = case.make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg.reset(spec, R, streams)
    return alg, env


@pytest.mark.parametrize("name", ["chen-jdp", "chen-elim", "squarecb-jdp", "squarecb"])
def test_chen_curators_clip_the_reward_into_the_model_range(name: str) -> None:
    """The rewards a curator stores for its private regression are clipped into [-1, 1]: at and just
    inside unchanged, beyond (either side, up to 1e300) exactly the bound."""
    for y, want in (
        ([1.0, -1.0], [1.0, -1.0]),
        ([1 - 1e-9, -(1 - 1e-9)], [1 - 1e-9, -(1 - 1e-9)]),
        ([1 + 1e-9, -(1 + 1e-9)], [1.0, -1.0]),
        ([1e300, -1e300], [1.0, -1.0]),
    ):
        alg, env = _reset_case(name)
        X = env.next_round()  # type: ignore[attr-defined]
        a = alg.select(0, X)  # type: ignore[attr-defined]
        alg.update(0, X, a, np.array(y))  # type: ignore[attr-defined]
        np.testing.assert_array_equal(alg.y[:, 0], want)  # type: ignore[attr-defined]


def test_hanna_central_curator_clips_the_reward_sums() -> None:
    """The central curator adds each reward to its batch sums clipped into the declared range."""
    for offset, beyond in ((0.0, False), (-1e-9, False), (1e-9, True), (1e300, True)):
        alg, env = _reset_case("hanna-central")
        lo, hi = alg.collector.clip  # type: ignore[attr-defined]
        X = env.next_round()  # type: ignore[attr-defined]
        a = alg.select(0, X)  # type: ignore[attr-defined]
        before = alg._sums.copy()  # type: ignore[attr-defined]
        alg.update(0, X, a, np.array([hi + offset, lo - offset]))  # type: ignore[attr-defined]
        added = alg._sums - before  # type: ignore[attr-defined]
        rows = np.arange(2)
        want = [hi, lo] if beyond else [hi + offset, lo - offset]
        np.testing.assert_array_equal(added[rows, a], want)


def test_jdp_glm_curator_clips_each_stored_context_and_reward() -> None:
    """Algorithm 2 of Sarmasarkar et al. stores x clipped to norm 1 and y clipped into [0, R_b] (the
    leaves the trees and the DP-PGD step are calibrated for): at the bound and inside unchanged,
    beyond exactly on the bound."""
    from privbandits.algorithms.sarmasarkar import jdp_glm

    for f, y_off, beyond in (
        (1.0, 0.0, False),
        (1 - 1e-9, -1e-9, False),
        (1 + 1e-6, 1e-9, True),
        (1e6, 1e300, True),
    ):
        alg, env = _reset_case("jdp-glm")
        k = alg.kernel  # type: ignore[attr-defined]
        Rb = float(k.params[12])
        X = np.array(env.next_round())  # type: ignore[attr-defined]
        a = alg.select(0, X)  # type: ignore[attr-defined]
        rows = np.arange(2)
        x = X[rows, a]
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        X[rows, a] = f * x
        y = np.array([Rb + y_off, -y_off])
        alg.update(0, X, a, y)  # type: ignore[attr-defined]
        xs, ys = k.state[jdp_glm._XS][:, 0], k.state[jdp_glm._YS][:, 0]
        if beyond:
            np.testing.assert_allclose(np.linalg.norm(xs, axis=1), 1.0, rtol=1e-12)
            np.testing.assert_array_equal(ys, [Rb, 0.0])
        else:
            np.testing.assert_allclose(xs, f * x, rtol=1e-12)
            np.testing.assert_array_equal(ys, y)


def test_dppgd_residual_clips_each_gradient_to_R() -> None:
    """``residual_sums`` adds ``clip_R((mu(<x, theta>) - y) x)``: a residual gradient at, inside or
    beyond the radius ``R`` (identity link) is added unchanged / unchanged / on the sphere of ``R``."""
    from privbandits.algorithms.sarmasarkar.optim import residual_sums
    from privbandits.core.links import get_link

    code = get_link("identity").code
    x1 = np.array([[0.6, 0.8]])
    # (clip_l2 squares the entries: beyond ~1e154 the square overflows and the gradient is zeroed,
    # inside the ball but not on its boundary; residuals here are bounded far below that)
    for res, want in ((2.0, 2.0), (2.0 - 1e-9, 2.0 - 1e-9), (2.0 + 1e-9, 2.0), (1e100, 2.0)):
        g, Hs, tmp = np.zeros(2), np.zeros((2, 2)), np.zeros(2)
        residual_sums(
            x1,
            np.array([-res]),
            np.zeros(1, dtype=np.int64),
            0,
            1,
            np.zeros(2),
            code,
            2.0,
            False,
            g,
            Hs,
            tmp,
        )
        np.testing.assert_allclose(g, want * x1[0], rtol=1e-12)


# -- regression primitives -------------------------------------------------------------------------
def test_regression_data_policy_clips_responses_and_rows() -> None:
    from privbandits.regression.data import prepare

    X = np.array([[0.6, 0.8], [0.6, 0.8 - 1e-9], [1.2, 1.6], [3e150, 4e150]])
    y = np.array([1.0, -(1 - 1e-9), 1 + 1e-9, -1e300])
    p = prepare(X, y)
    np.testing.assert_array_equal(p.y, [1.0, -(1 - 1e-9), 1.0, -1.0])
    np.testing.assert_allclose(np.linalg.norm(p.X, axis=1)[2:], 1.0, rtol=1e-12)
    np.testing.assert_array_equal(p.X[:2], X[:2])
    with pytest.raises(DataBoundError):
        prepare(X, y, on_bound="reject")


def test_dp_gradient_descent_clips_each_per_sample_gradient() -> None:
    """One noiseless step from theta = 0 on users ``x = e_1``, ``y = 1``: the per-sample gradient
    ``-x`` has norm 1; with ``clip`` = 1, just above, or below it the step moves theta by
    ``eta min(1, clip)``."""
    from privbandits.regression.baselines import DPGradientDescent

    X = np.tile([1.0, 0.0], (5, 1))
    y = np.ones(5)
    for clip, moved in ((1.0, 1.0), (1.0 + 1e-9, 1.0), (1.0 - 1e-9, 1.0 - 1e-9), (0.25, 0.25)):
        est = DPGradientDescent(math.inf, steps=1, clip=clip, eta=0.5).fit(X, y, 0)
        np.testing.assert_allclose(est.theta, [0.5 * moved, 0.0], rtol=1e-12)


# -- device reward clips of the compiled local algorithms (seen through the declared pre-noise message)
@pytest.mark.parametrize("name", ["ldp-ols", "ldp-sgd", "ldp-ucb", "ldp-gloc"])
def test_kernel_devices_clip_the_reward_before_encoding(name: str) -> None:
    """The device's pre-noise message (``Client.encode``) for a reward beyond the declared range is
    the message for the reward at that end of the range (1e-9 beyond, 10 beyond, 1e300)."""
    alg, env = _reset_case(name)
    spec = alg.spec  # type: ignore[attr-defined]
    c = alg.client  # type: ignore[attr-defined]
    public = alg.server.public_state()  # type: ignore[attr-defined]
    X = env.next_round()  # type: ignore[attr-defined]
    a = np.zeros(2, dtype=np.int64)
    p = c._params
    lo, hi = (p.r_lo, p.r_hi) if hasattr(p, "r_lo") else (float(p[1][2]), float(p[1][3]))
    assert (lo, hi) == tuple(spec.reward_range) or name in ("ldp-ols", "ldp-sgd")
    for end, sign in ((hi, 1.0), (lo, -1.0)):
        at = c.encode(1, public, X, a, np.full(2, end))
        for beyond in (1e-9, 10.0, 1e300):
            np.testing.assert_array_equal(
                c.encode(1, public, X, a, np.full(2, end + sign * beyond)), at
            )


def test_shuffle_glm_device_holds_the_clipped_reward() -> None:
    """A ShuffleGLM user keeps ``(x, clip(r))`` on the device for the batch's P_GD rounds: a reward
    beyond ``[r_lo, r_hi]`` is held as the end of the range, one inside as itself (single and
    batch randomizers alike)."""
    alg, env = _reset_case("shuffle-glm")
    plan = alg.plan  # type: ignore[attr-defined]
    lo, hi = plan.r_lo, plan.r_hi
    public = alg.server.public_state()  # type: ignore[attr-defined]
    X = env.next_round()  # type: ignore[attr-defined]
    a = np.zeros(2, dtype=np.int64)
    rng = np.random.default_rng(0)
    for y, want in (
        ([hi, lo], [hi, lo]),
        ([hi - 1e-9, lo + 1e-9], [hi - 1e-9, lo + 1e-9]),
        ([hi + 1e-9, lo - 1e-9], [hi, lo]),
        ([1e300, -1e300], [hi, lo]),
    ):
        c = copy.deepcopy(alg.client)  # type: ignore[attr-defined]
        c.randomize(0, public, X, a, np.array(y), rng)
        np.testing.assert_array_equal(c._r[-1][0], want)
        c = copy.deepcopy(alg.client)  # type: ignore[attr-defined]
        c.randomize_batch(0, public, X[None], a[None], np.array(y)[None], rng)
        np.testing.assert_array_equal(c._r[-1][0], want)


def test_shuffle_glm_declared_count_law_clamps_the_scaled_input() -> None:
    """The declared mean and noise of the binomial randomizer's count clamp ``w g / Delta`` into
    ``[0, 2 g]`` as the randomizer does: an input a rounding error beyond either end has the law of
    the end, one inside its own."""
    from privbandits.algorithms.sarmasarkar.shuffle_glm import _counts_mean, _counts_noise

    params = cheu.theory_params(4, 2, 1.0, 0.1, 1.0)
    g, bp, D = params.g, params.b * params.p, params.Delta
    w = np.array([2 * D, 2 * D * (1 + 1e-12), 0.0, -1e-300, 2 * D * 0.3])
    mean = _counts_mean(w, params)
    np.testing.assert_allclose(mean, [2 * g + bp, 2 * g + bp, bp, bp, 0.6 * g + bp], rtol=1e-12)
    var = _counts_noise(w, params).variance
    q = 0.6 * g - math.floor(0.6 * g)
    binom = params.b * params.p * (1 - params.p)
    np.testing.assert_allclose(var, [binom, binom, binom, binom, q * (1 - q) + binom], rtol=1e-9)
