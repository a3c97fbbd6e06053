"""The shipped conformance checks (privbandits.testing) on small algorithms of one's own.

Correct toys pass every check; each deliberately broken toy fails the check that targets its
defect and only that one, so each check is shown able to fail:

* no clip of the device's gradient (its guarantee rests on an honest server) -> adversarial server;
* half the noise it declares -> encode / randomize consistency;
* a device that reads the public state and its inputs unchecked -> public-space validation and
  memory-safe inputs;
* a device without the contract (no public space, no encode) -> reported as not implemented.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.testing import CHECKS, check_algorithm, named_checks, parametrize_with_checks
from tests.conformance.toys import ToyShuffle
from tests.testing.toys import (
    ToyGradientLDP,
    ToyKernelLaplace,
    ToyNoClip,
    ToyShuffleLaplace,
    ToyUndeclaredNoise,
    _LaplaceClient,
)

DEVICE = ["memory_safe_inputs", "public_space_validation", "adversarial_server", "encode_randomize"]


@parametrize_with_checks([ToyGradientLDP, ToyShuffleLaplace, ToyKernelLaplace])
def test_correct_toys_pass_every_check(case: Any, check: Any) -> None:
    check(case)


def _failing(alg: Any, checks: list[str]) -> dict[str, str]:
    res = check_algorithm(alg, checks=checks, quick=True, raise_on_failure=False)
    return {r.check: r.message for r in res if r.status == "failed"}


def test_missing_clip_fails_the_adversarial_check_only() -> None:
    failed = _failing(ToyNoClip, DEVICE)
    assert set(failed) == {"adversarial_server"}, failed
    assert "w = 100" in failed["adversarial_server"]  # the search found the server's largest weight
    with pytest.raises(AssertionError, match="above the accounted sensitivity"):
        check_algorithm(ToyNoClip, checks=["adversarial_server"], quick=True)


def test_undeclared_noise_fails_the_encode_randomize_check_only() -> None:
    failed = _failing(ToyUndeclaredNoise, DEVICE)
    assert set(failed) == {"encode_randomize"}, failed
    assert "the noise added is not the noise declared" in failed["encode_randomize"]


class _UncheckedClient(_LaplaceClient):
    """Declares its space but reads the public state and its inputs without checking them."""

    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        return np.asarray(rng.integers(0, self.spec.K, contexts.shape[0]))

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        y = np.clip(rewards, *self.spec.reward_range) + rng.laplace(
            0.0, self.scale, np.shape(rewards)
        )
        return PrivatizedMessage({"y": y}, mechanism="laplace")


class ToyUnchecked(ToyShuffleLaplace):
    name = "toy-unchecked"

    def reset(self, spec: Any, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        self.client = _UncheckedClient(spec, self.calibration.resolved["scale"])


def test_unchecked_device_fails_the_validation_checks() -> None:
    failed = _failing(ToyUnchecked, DEVICE)
    assert set(failed) == {"memory_safe_inputs", "public_space_validation"}, failed
    assert (
        "action K" in failed["memory_safe_inputs"]
        and "fewer rewards" in failed["memory_safe_inputs"]
    )
    assert "unknown field" in failed["public_space_validation"]


def test_missing_contract_is_reported_as_not_implemented() -> None:
    failed = _failing(
        ToyShuffle, ["public_space_validation", "adversarial_server", "encode_randomize"]
    )
    assert set(failed) == {"public_space_validation", "adversarial_server", "encode_randomize"}
    for msg in failed.values():
        assert "does not implement its contract" in msg and "public_space" in msg, msg


def test_named_checks_and_check_selection() -> None:
    names = {c.name for c in CHECKS}
    assert {
        "contract",
        "determinism",
        "reference_equals_compiled",
        "trust_boundary",
        "memory_safe_inputs",
        "public_space_validation",
        "adversarial_server",
        "encode_randomize",
    } <= names
    # device checks do not apply to a curator; the parameter checks run once per parameter set
    pairs = named_checks("uniform")
    assert {c.name for _, c in pairs} == names - {"trust_boundary", *DEVICE}
    assert [case.env for case, c in pairs if c.name == "contract"] == [""]
    quick = named_checks(ToyKernelLaplace, quick=True)
    full = named_checks(ToyKernelLaplace)
    assert len(full) > len(quick) and {c.name for _, c in quick} == names
    res = check_algorithm("uniform", checks=["contract", "invalid_parameters"])
    assert [r.status for r in res] == ["passed", "passed"]
    from privbandits.core.errors import ValidationError

    with pytest.raises(ValidationError, match="unknown check"):
        check_algorithm("uniform", checks=["nope"])


def test_an_instance_is_checked_with_its_parameters() -> None:
    res = check_algorithm(
        ToyGradientLDP(epsilon=2.0, clip_norm=1.0), checks=["contract", "adversarial_server"]
    )
    assert all(r.status == "passed" for r in res) and res[0].case == "toy-gradient-ldp-p0"
