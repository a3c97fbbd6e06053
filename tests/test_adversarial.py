"""The adversarial-server audit (privbandits.auditing, ``privbandits audit --adversarial``).

On small devices of one's own (tests/testing/toys.py): the search finds the public state where
neighbouring users' encoded messages are farthest apart -- the accounted sensitivity itself for a
correct device (the audit has the power to see a defect), the server's largest weight for a
device that forgets its clip; the audit at that state passes at the claim and flags the half-noise
twin for the correct device, and fails for the unclipped one.  The full run over every registered
local and shuffle algorithm is in the slow set.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from typer.testing import CliRunner

from privbandits import auditing
from privbandits.auditing import (
    CLIENT_PATHS,
    ClientPathCase,
    adversarial_audit,
    adversarial_names,
    worst_public_state,
)
from privbandits.cli import app
from privbandits.core.errors import UnknownNameError
from privbandits.core.rng import make_streams
from privbandits.envs import SyntheticEnv
from tests.conformance.toys import ToyShuffle
from tests.testing.toys import W_MAX, ToyGradientLDP, ToyNoClip, ToyShuffleLaplace


def _env() -> SyntheticEnv:
    return SyntheticEnv(d=2, K=3)


def _case(cls: type, n: int = 100_000) -> ClientPathCase:
    return ClientPathCase(cls, {"epsilon": 1.0}, _env, n_samples=n, n_pilot=5_000)


def test_search_reaches_the_accounted_sensitivity_of_a_correct_device() -> None:
    spec = _env().reset(1, make_streams(0), 100)
    for cls in (ToyGradientLDP, ToyShuffleLaplace):
        w = worst_public_state(cls(), spec, seed=1)
        assert w.holds and w.reached >= 0.99 * w.bound, (cls.name, w.reached, w.bound)


def test_search_finds_the_server_weight_that_breaks_an_unclipped_device() -> None:
    spec = _env().reset(1, make_streams(0), 100)
    w = worst_public_state(ToyNoClip(), spec, seed=1)
    assert not w.holds and w.reached > 10 * w.bound
    assert (
        float(np.asarray(w.public["w"]).reshape(-1)[0]) == W_MAX
    )  # the extreme of the declared range
    assert "w = 100" in w.summary()


def test_correct_device_passes_and_its_half_noise_twin_is_flagged() -> None:
    r = adversarial_audit(_case(ToyGradientLDP))
    assert r.passed and r.twin_flagged, r
    assert r.audited_epsilon_lb <= r.claimed_epsilon < r.twin_epsilon_lb
    assert r.reached == pytest.approx(r.accounted, rel=1e-9)
    assert "w =" in r.worst_state and "twin (noise x0.5)" in r.notes


def test_unclipped_device_fails() -> None:
    r = adversarial_audit(_case(ToyNoClip, 50_000))
    assert not r.passed and r.reached > 10 * r.accounted
    assert r.audited_epsilon_lb > 3 * r.claimed_epsilon, r


def test_device_without_its_contract_is_reported() -> None:
    r = adversarial_audit(ClientPathCase(ToyShuffle, {"epsilon": 1.0}, _env))
    assert (
        not r.passed and "does not implement its contract" in r.notes and "public_space" in r.notes
    )


def test_names() -> None:
    assert adversarial_names() == list(CLIENT_PATHS)
    assert adversarial_names("ldp-ucb") == ["client:ldp-ucb", "client:ldp-ucb-laplace"]
    assert adversarial_names("client:ldp-sgd") == ["client:ldp-sgd"]
    with pytest.raises(UnknownNameError, match="local and shuffle"):
        adversarial_names("linucb")


def test_cli_reports_and_exits_nonzero_on_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CLIENT_PATHS, "client:toy-gradient-ldp", _case(ToyGradientLDP))
    monkeypatch.setitem(CLIENT_PATHS, "client:toy-no-clip", _case(ToyNoClip, 20_000))
    runner = CliRunner()
    ok = runner.invoke(app, ["audit", "toy-gradient-ldp", "--adversarial"], env={"COLUMNS": "250"})
    assert ok.exit_code == 0, ok.output
    for word in ("worst_state", "reached", "accounted", "twin_flagged", "True", "w = 100"):
        assert word in ok.output, (word, ok.output)
    bad = runner.invoke(app, ["audit", "toy-no-clip", "--adversarial"], env={"COLUMNS": "250"})
    assert bad.exit_code == 1
    assert "adversarial audit failed for client:toy-no-clip" in bad.output
    usage = runner.invoke(app, ["audit", "--adversarial"])
    assert usage.exit_code != 0 and "ALGORITHM or --all" in usage.output


@pytest.mark.slow
def test_audit_all_adversarial() -> None:
    """``privbandits audit --all --adversarial``: every local and shuffle device passes at its claim at
    the worst public state found, and its half-noise twin is flagged."""
    rows = auditing.run_adversarial(None)
    failed = [dataclasses.asdict(r) for r in rows if not r.passed]
    assert not failed, failed
