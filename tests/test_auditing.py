"""Tests of the client-code-path audit (privbandits.auditing).

The generic auditor is exercised on two small local algorithms written here on the kernel contract
(the registered ones are audited by ``privbandits audit --all`` and, once ported, by the
parametrized tests below): an l2-ball client (pure DP, as LDP-SGD) and a Gaussian client (as
LDP-OLS's x y part), each also in a deliberately broken form (the reward is not clipped), which
the audit must flag at the nominal noise.

Power of the tests.  The l2-ball claim at epsilon = 1 is audited to within a few hundredths
(every threshold beyond the gap has likelihood ratio e^eps), and the variant constructed at
epsilon = 2 audits near 2; the Gaussian client at (1, 1e-3) with its variant exactly
(2, 1e-3)-DP by analytic calibration audits near 1.5 with 2e5 messages per input (seed 0).  The
unclipped reward y = r_hi + 10 (r_hi - r_lo) = 21 moves the Gaussian message by 21 sensitivities:
the audited bound is far above the claim.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numba as nb
import numpy as np
import pytest

from privbandits.algorithms import available, get
from privbandits.algorithms.base import LocalAlgorithm
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import LocalKernel, MessageLayout, argmax_ties
from privbandits.auditing import (
    AUDITABLE,
    CLIENT_PATHS,
    RELEASES,
    ClientPathCase,
    ReleaseCase,
    client_messages,
    client_path_spec,
    collect,
    declared_cases,
    extreme_pairs,
    local_algorithms,
    pilot_projection,
    undeclared,
)
from privbandits.core.errors import ValidationError
from privbandits.core.params import Bool, Delta, Epsilon
from privbandits.envs import SyntheticEnv
from privbandits.privacy.audit import AUDITABLE as MECHANISMS
from privbandits.privacy.audit import audit_spec
from privbandits.privacy.calibration import (
    gaussian_epsilon,
    gaussian_sigma_analytic,
    l2_ball_radius,
)
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.samplers import add_gaussian, clip_scalar, l2_ball


# --------------------------------------------------------------------------------------------
# two small local algorithms on the kernel contract (not registered)
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True)
def _choose(params, public, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    return argmax_ties(np.zeros(X.shape[0]), rng)


@nb.njit(cache=True)
def _update(params, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    return None


@nb.njit(cache=True)
def _randomize_ball(params, public, r, t, X, a, y, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    eps, bound, radius, lo, hi, clip = params
    yc = clip_scalar(y, lo, hi) if clip else y
    g = -yc * X[a]  # the squared-loss gradient at theta = 0
    l2_ball(rng, g, eps, bound, radius, out)


@nb.njit(cache=True)
def _randomize_gauss(params, public, r, t, X, a, y, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    sigma, lo, hi, clip = params
    yc = clip_scalar(y, lo, hi) if clip else y
    for i in range(out.shape[0]):
        out[i] = yc * X[a, i]
    add_gaussian(rng, sigma, out)


class _TestClient(LocalAlgorithm):
    settings: ClassVar = ("single",)
    links: ClassVar = ("*",)

    def _kernel(self, randomize, params, mechanism: str) -> LocalKernel:  # type: ignore[no-untyped-def]
        R, d = self.R, self.spec.d
        return LocalKernel(
            _choose,
            randomize,
            _update,
            params,
            (np.zeros((R, d)),),
            (np.zeros((R, 1)),),
            ("theta",),
            MessageLayout(mechanism, (("z", (d,)),)),
        )


class BallClient(_TestClient):
    """The l2-ball mechanism on the gradient ``-clip(y) x`` (pure epsilon-LDP)."""

    name = "test-ball-client"
    constraints: ClassVar = {"epsilon": Epsilon, "clip": Bool()}

    def __init__(self, epsilon: float = 1.0, clip: bool = True) -> None:
        pass

    def _bound(self, spec) -> float:  # type: ignore[no-untyped-def]
        return float(spec.context_bound * max(abs(v) for v in spec.reward_range))

    def calibrate(self, spec) -> Calibration:  # type: ignore[no-untyped-def]
        g = PrivacyGuarantee("local", self.epsilon, 0.0, notes="l2-ball")
        return Calibration(g, {"bound": self._bound(spec)}, "strict", (self.epsilon, 0.0))

    def build_kernel(self) -> LocalKernel:
        B = self._bound(self.spec)
        lo, hi = self.spec.reward_range
        params = (
            self.epsilon,
            B,
            l2_ball_radius(self.epsilon, self.spec.d, B),
            float(lo),
            float(hi),
            self.clip,
        )
        return self._kernel(_randomize_ball, params, "test-l2-ball")


class GaussClient(_TestClient):
    """``clip(y) x + N(0, sigma^2 I)``, analytic Gaussian at l2 sensitivity ``2 C_B c_r``."""

    name = "test-gauss-client"
    constraints: ClassVar = {"epsilon": Epsilon, "delta": Delta, "clip": Bool()}

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-3, clip: bool = True) -> None:
        pass

    def _sensitivity(self, spec) -> float:  # type: ignore[no-untyped-def]
        return 2.0 * float(spec.context_bound * max(abs(v) for v in spec.reward_range))

    def calibrate(self, spec) -> Calibration:  # type: ignore[no-untyped-def]
        s = self._sensitivity(spec)
        sigma = gaussian_sigma_analytic(self.epsilon, self.delta, s)
        g = PrivacyGuarantee(
            "local", gaussian_epsilon(sigma, self.delta, s), self.delta, notes="gaussian"
        )
        return Calibration(g, {"sigma": sigma}, "strict", (self.epsilon, self.delta))

    def build_kernel(self) -> LocalKernel:
        lo, hi = self.spec.reward_range
        params = (self.calibration.resolved["sigma"], float(lo), float(hi), self.clip)
        return self._kernel(_randomize_gauss, params, "test-gaussian")


def _env() -> SyntheticEnv:
    return SyntheticEnv(d=2, K=3)


def _case(cls: type, n: int = 100_000, **params: object) -> ClientPathCase:
    return ClientPathCase(cls, {"epsilon": 1.0, **params}, _env, n_samples=n, n_pilot=10_000)


# --------------------------------------------------------------------------------------------
# the generic client-path auditor
# --------------------------------------------------------------------------------------------
def test_client_messages_run_the_client_code_path() -> None:
    case = _case(BallClient)
    spec = case.spec()
    d0, _ = extreme_pairs(spec)[0]
    X = client_messages(case, case.params, spec, d0, 1000, np.random.default_rng(1))
    r = l2_ball_radius(1.0, 2, spec.context_bound * 1.0)
    assert X.shape == (1000, 2)
    np.testing.assert_allclose(
        np.linalg.norm(X, axis=1), r, rtol=1e-9
    )  # the l2-ball's output sphere
    # the reward 21 is clipped to 1: E[z] = -x, not -21 x
    assert abs(X[:, 0].mean() + 1.0) < 5 * r / math.sqrt(2 * 1000)


def test_extreme_pairs_are_on_the_bound_and_outside_the_reward_range() -> None:
    spec = _case(BallClient).spec()
    lo, hi = spec.reward_range
    for a, b in extreme_pairs(spec):
        for u in (a, b):
            assert u.contexts.shape == (spec.K, spec.d)
            np.testing.assert_allclose(np.linalg.norm(u.contexts, axis=1), spec.context_bound)
            assert u.reward > hi or u.reward < lo


def test_pilot_projection_weights_the_differing_coordinates() -> None:
    rng = np.random.default_rng(3)
    X0 = rng.normal(0.0, [1.0, 2.0, 1.0], size=(20_000, 3))
    X1 = rng.normal([1.0, 0.0, 0.5], [1.0, 2.0, 1.0], size=(20_000, 3))
    X0 = np.column_stack([X0, X0[:, 0]])  # a duplicated coordinate is counted once
    X1 = np.column_stack([X1, X1[:, 0]])
    p = pilot_projection(X0, X1)
    assert p.weights[1] == 0.0 and p.weights[3] == 0.0
    assert p.weights[0] == pytest.approx(1.0, abs=0.1) and p.weights[2] == pytest.approx(
        0.5, abs=0.1
    )
    assert p.score == pytest.approx(1.25, abs=0.1)
    leak = pilot_projection(np.zeros((10, 2)), np.column_stack([np.zeros(10), np.ones(10)]))
    assert math.isinf(leak.score) and leak.weights[1] == 1.0


def test_pilot_projection_uses_the_laplace_likelihood_ratio_for_laplace_noise() -> None:
    rng = np.random.default_rng(4)
    X0 = np.column_stack([1.0 + rng.laplace(0.0, 2.0, 20_000), rng.normal(0.0, 1.0, 20_000)])
    X1 = np.column_stack([-1.0 + rng.laplace(0.0, 2.0, 20_000), rng.normal(0.5, 1.0, 20_000)])
    p = pilot_projection(X0, X1)
    assert (
        list(p.laplace) == [0]
        and p.weights[0] == 0.0
        and p.weights[1] == pytest.approx(0.5, abs=0.1)
    )
    assert p.b[0] == pytest.approx(2.0, rel=0.05)
    # the Laplace term is constant on each tail: exactly two values there (no floating-point jitter)
    z = np.column_stack([np.linspace(3.0, 1e4, 1000), np.zeros(1000)])
    assert np.unique(p(z)).size == 1
    assert np.unique(p(-z)).size == 1


@pytest.mark.parametrize("cls", [BallClient, GaussClient])
def test_correct_client_passes_and_under_noised_is_flagged(cls: type) -> None:
    case = _case(cls, 200_000)
    ok = audit_spec(client_path_spec(case), seed=0)
    half = audit_spec(client_path_spec(case, 0.5), seed=0)
    assert ok.passed, ok
    assert not half.passed, half
    assert half.claimed_epsilon == ok.claimed_epsilon  # the claim is the nominal algorithm's
    assert "epsilon=2" in half.notes


@pytest.mark.parametrize("cls", [BallClient, GaussClient])
def test_missing_reward_clipping_is_flagged(cls: type) -> None:
    """A client that forgets to clip the (out-of-range) reward; the l2-ball clips the gradient norm
    itself, so only the Gaussian client leaks."""
    r = audit_spec(client_path_spec(_case(cls, 50_000, clip=False)), seed=0)
    if cls is GaussClient:
        assert not r.passed and r.audited_epsilon_lb > 3 * r.claimed_epsilon, r
    else:
        assert r.passed, r


def test_case_validation() -> None:
    with pytest.raises(ValidationError, match="epsilon"):
        client_path_spec(ClientPathCase(BallClient, {}, _env))
    with pytest.raises(ValidationError, match="client code path"):
        from privbandits.algorithms.linear.uniform import UniformRandom

        client_path_spec(ClientPathCase(UniformRandom, {"epsilon": 1.0}, _env))


def test_gaussian_shuffle_local_claim_reads_the_typed_calibration() -> None:
    """The claim is the typed calibration's (eps0, delta0); a calibration that does not declare
    the Gaussian local level (no typed constants, or no delta0) is refused, never guessed."""
    from dataclasses import dataclass
    from types import SimpleNamespace

    from privbandits.algorithms.calibration import Constants
    from privbandits.auditing import gaussian_shuffle_local_claim

    @dataclass(frozen=True)
    class Levels(Constants):
        batch_sizes: tuple[tuple[int, int], ...]
        eps0: tuple[tuple[float, float], ...]
        delta0: float

    @dataclass(frozen=True)
    class NoDelta(Constants):
        batch_sizes: tuple[tuple[int, int], ...]
        eps0: tuple[tuple[float, float], ...]

    g = PrivacyGuarantee(model="shuffle", epsilon=0.5, delta=1e-6)

    def alg(constants: Constants | None) -> SimpleNamespace:
        cal = Calibration(g, {"eps0": [[9.0, 9.0]], "delta0": 0.5}, constants=constants)
        return SimpleNamespace(name="toy", guarantee=g, calibration=cal)

    claim = gaussian_shuffle_local_claim(
        alg(Levels(((10, 20), (21, 30)), ((1.0, 1.5), (2.0, 2.5)), 1e-7)), {}
    )
    assert (claim.epsilon, claim.delta) == (2.5, 1e-7)
    for constants in (None, NoDelta(((10, 20),), ((1.0, 1.5),))):
        with pytest.raises(ValidationError, match="delta0"):
            gaussian_shuffle_local_claim(alg(constants), {})


# --------------------------------------------------------------------------------------------
# the catalog
# --------------------------------------------------------------------------------------------
def test_catalog_lists_every_mechanism_and_every_local_algorithm() -> None:
    assert set(MECHANISMS) <= set(AUDITABLE)
    required = {"ldp-sgd", "ldp-ols", "ldp-ucb", "ldp-gloc", "hanna-local", "hanna-shuffle"}
    listed = {c.label for c in CLIENT_PATHS.values()}
    assert required <= listed
    assert (
        set(local_algorithms()) <= listed
    )  # every registered local / shuffle algorithm is audited
    for name in CLIENT_PATHS:
        assert name in AUDITABLE and AUDITABLE[name].__doc__


@pytest.mark.parametrize("name", sorted(CLIENT_PATHS))
def test_every_registered_client_path_runs(name: str) -> None:
    """Quick check of each registered algorithm's client path (the full audit is in the slow set)."""
    case = dataclasses.replace(CLIENT_PATHS[name], n_pilot=500, batch=500)
    spec = client_path_spec(case)
    assert spec.claimed_epsilon > 0.0 and 0.0 <= spec.claimed_delta < 1.0
    t = spec.sample(0, 700, np.random.default_rng(0))
    assert t.shape == (700,) and np.isfinite(t).all()
    assert client_path_spec(case, 0.5).claimed_epsilon == spec.claimed_epsilon


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CLIENT_PATHS))
def test_registered_client_paths_pass_and_variants_are_flagged(name: str) -> None:
    from privbandits.auditing import audit_mechanism

    ok = audit_mechanism(name)
    half = audit_mechanism(name, under_noised=0.5)
    assert ok.passed, ok
    assert not half.passed, half


# --------------------------------------------------------------------------------------------
# the cases are declared on the algorithm classes
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", local_algorithms())
def test_every_local_algorithm_declares_its_client_path_on_its_class(name: str) -> None:
    """Each local / shuffle class declares its client-path case itself, and the catalogue holds
    the case under the name the class gives it."""
    cls = get(name)
    own = [c for c in declared_cases(cls) if isinstance(c, ClientPathCase)]
    assert own, f"{name} declares no client-path audit (audit_cases)"
    for case in own:
        assert case.label == name and case.build(case.params).name == name
        assert CLIENT_PATHS[case.name].params == case.params
        assert AUDITABLE[case.name].__doc__ == case.description


def test_the_catalogue_is_collected_from_the_registry() -> None:
    paths, releases = collect(available().values())
    assert list(paths) == list(CLIENT_PATHS) and list(releases) == list(RELEASES)
    assert undeclared() == []
    assert {"jdp-glm-gradient", "jdp-linucb-tree"} <= set(RELEASES)
    assert {RELEASES[n].spec for n in RELEASES} <= set(AUDITABLE.values())


def test_a_class_without_its_declaration_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """Removing a class's declaration (here ldp-ols's) loses its client path and is reported;
    an inherited declaration does not count (the case names the parent)."""
    cls = get("ldp-ols")
    monkeypatch.delattr(cls, "audit_cases")
    paths, _ = collect(available().values())
    assert "client:ldp-ols" not in paths
    assert undeclared(paths) == ["ldp-ols"]

    class Child(cls):  # type: ignore[misc, valid-type]
        name = "child-of-ldp-ols"

    assert declared_cases(Child) == ()


def test_a_declaration_must_describe_its_own_class() -> None:
    class Wrong(BallClient):
        name = "test-wrong-declaration"

        @classmethod
        def audit_cases(cls) -> tuple[ClientPathCase | ReleaseCase, ...]:
            return (ClientPathCase(GaussClient),)

    with pytest.raises(ValidationError, match="declares a client path of"):
        declared_cases(Wrong)
