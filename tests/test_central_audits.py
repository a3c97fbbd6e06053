"""Release audits of the central and joint-DP algorithms (``privbandits audit NAME``).

Every central / joint-DP algorithm below declares on its class a release audit of the code that
produces what its curator releases; at the calibrated noise the audited lower bound (the audit's
own Clopper-Pearson bound, 95%) stays below the accounted claim, and the under-noised twin (half
the noise; a quarter for SquareCB-JDP, whose declared sensitivity no pair attains) is flagged.
Sample sizes are the smallest that flag the twin with the fixed seed; the audited bound at the
calibrated noise must also come close to the claim (the audit has power).
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from privbandits.algorithms.audit import ReleaseCase
from privbandits.algorithms.registry import get
from privbandits.auditing import RELEASES, audit_mechanism, declared_cases, resolve
from privbandits.cli import app
from privbandits.core.errors import ValidationError
from privbandits.regression.audit import FLAGGED_FACTOR

#: algorithm -> (outputs per neighbouring input, noise factor of the twin that must be flagged,
#: smallest audited lower bound at the calibrated noise, as a fraction of the claim)
CENTRAL: dict[str, tuple[int, float, float]] = {
    "dp-se": (20_000, 0.5, 0.8),
    "adap-ucb": (20_000, 0.5, 0.8),
    "adap-klucb": (20_000, 0.5, 0.8),
    "dp-ucb": (20_000, 0.5, 0.8),
    "hanna-central": (6_000, 0.5, 0.8),
    "chen-jdp": (60_000, 0.5, 0.3),
    "squarecb-jdp": (40_000, FLAGGED_FACTOR["improper-sgd"], 0.1),
}


@pytest.mark.parametrize("name", sorted(CENTRAL))
def test_each_central_algorithm_declares_a_release_audit(name: str) -> None:
    cases = declared_cases(get(name))
    assert cases and all(isinstance(c, ReleaseCase) for c in cases)
    assert resolve(name) == [c.name for c in cases]
    assert all(c.name in RELEASES for c in cases)


@pytest.mark.parametrize("name", sorted(CENTRAL))
def test_release_audit_passes_and_the_under_noised_twin_is_flagged(name: str) -> None:
    n, factor, floor = CENTRAL[name]
    for case in resolve(name):
        ok = audit_mechanism(case, n_samples=n, seed=0)
        twin = audit_mechanism(case, under_noised=factor, n_samples=n, seed=0)
        assert ok.passed, ok
        assert ok.audited_epsilon_lb >= floor * ok.claimed_epsilon, ok
        assert ok.max_certifiable > ok.claimed_epsilon  # the audit could detect a violation
        assert not twin.passed, twin
        assert twin.claimed_epsilon == ok.claimed_epsilon


def test_audit_names_resolve_to_declared_cases() -> None:
    assert resolve("dp-se-release") == ["dp-se-release"]
    assert resolve("ldp-sgd") == ["client:ldp-sgd"]
    with pytest.raises(ValidationError, match="declares no audit case.*algorithms with declared"):
        resolve("ucb1")
    with pytest.raises(ValidationError, match="unknown mechanism or algorithm"):
        resolve("no-such-thing")


def test_cli_audits_an_algorithm_by_name() -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["audit", "adap-ucb", "--samples", "2000"])
    assert ok.exit_code == 0, ok.output
    assert "adap-ucb-release" in ok.stdout
    twin = runner.invoke(app, ["audit", "adap-ucb", "--samples", "20000", "--under-noised", "0.5"])
    assert twin.exit_code == 1 and "violation" in twin.stderr
    bad = runner.invoke(app, ["audit", "ucb1"])
    assert bad.exit_code == 2 and "declares no audit case" in bad.stderr
    assert "dp-se" in bad.stderr
