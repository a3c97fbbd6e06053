"""The privacy ledger: serialisation, rendering, and each private algorithm's epsilon recomputed
from its ledger by an independent accountant (dp-accounting's PLD accountant).

Tolerance: pure statements are compared at delta = 1e-12.  Where the ledger's events are composed exactly by the library (one Gaussian release,
Laplace releases on disjoint data, pure local randomizers), the two epsilons agree within
``2e-3`` relative (the PLD accountant discretises the privacy loss at ``1e-4``, pessimistically);
where the library composes by a looser rule (basic or zCDP composition), the library's epsilon
is at least the accountant's (never optimistic) within the same tolerance.
"""

from __future__ import annotations

import json
import math
import warnings

import pytest

from privbandits.algorithms import available, make
from privbandits.core.spec import EnvSpec
from privbandits.privacy.ledger import (
    Accounted,
    Amplified,
    Composed,
    Event,
    Gaussian,
    Laplace,
    PureLocal,
    SelfComposed,
    event_from_dict,
    render,
    to_dp_accounting,
)

RTOL = 2e-3
SPEC = EnvSpec(d=3, K=4, horizon=600)


def _convex_spec() -> EnvSpec:
    """The problem of the continuous-action algorithms (a bandit convex optimization problem)."""
    from privbandits.core.rng import make_streams
    from privbandits.envs.convex import ConvexLossEnv

    return ConvexLossEnv(d=3).reset(1, make_streams(0), 600)


CONVEX_SPEC = _convex_spec()


def spec_for(name: str) -> EnvSpec:
    """The problem ``name`` runs on: a loss environment for continuous actions, else :data:`SPEC`."""
    return CONVEX_SPEC if available()[name].continuous_actions else SPEC


def pld_epsilon(event: Event, delta: float) -> float:
    """epsilon at ``delta`` of a dp-accounting event, PLD accountant."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import pld_privacy_accountant

    # REPLACE_SPECIAL: the Gaussian and Laplace sensitivities are distances between two
    # neighbours' values; randomized response (the pure local randomizers) is REPLACE_ONE
    pure = any(isinstance(e, PureLocal) for e in _walk(event))
    relation = NeighboringRelation.REPLACE_ONE if pure else NeighboringRelation.REPLACE_SPECIAL
    acc = pld_privacy_accountant.PLDAccountant(relation, value_discretization_interval=1e-4)
    acc.compose(to_dp_accounting(event))
    # a pure statement (delta = 0) is compared at delta = 1e-12: the PLD's truncated tails make
    # its delta-0 epsilon infinite, and Laplace / randomized response lose < 1e-11 there
    return float(acc.get_epsilon(max(delta, 1e-12)))


def independent(event: Event, delta: float) -> tuple[float, bool] | None:
    """``(epsilon, exact)`` of the ledger by the independent accountant; None where not covered.

    ``disjoint`` composition is the parallel composition theorem (the worst part), ``worst`` the
    worst of the forms a user's change can take; ``exact`` is False when the library's own rule
    for some part is looser than the accountant's.
    """
    if isinstance(event, (SelfComposed, Composed)) and event.rule in ("disjoint", "worst"):
        parts = [independent(e, delta) for e in event.children()]
        if any(p is None for p in parts):
            return None
        return max(p[0] for p in parts), all(p[1] for p in parts)  # type: ignore[index]
    if isinstance(event, (Amplified, Accounted)) or to_dp_accounting(event) is None:
        return None
    exact = not any(
        isinstance(e, (SelfComposed, Composed)) and e.rule not in ("disjoint", "worst")
        for e in _walk(event)
        if (isinstance(e, SelfComposed) and e.count > 1)
        or (isinstance(e, Composed) and len(e.events) > 1)
    )
    return pld_epsilon(event, delta), exact


def _walk(event: Event):
    yield event
    for k in event.children():
        yield from _walk(k)


def _private_algorithms() -> list[str]:
    names = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in available():
            try:
                g = make(name).guarantee_for(spec_for(name))
            except Exception:  # an algorithm that cannot run on either problem
                continue
            if g.is_private and g.ledger is not None:
                names.append(name)
    return names


PRIVATE = _private_algorithms()


#: Every variant (``test_params``) of the local algorithms: each message's accounting is checked
#: at every preset and mechanism the conformance suite runs.
LOCAL_VARIANTS = [
    (name, i)
    for name in PRIVATE
    if available()[name].trust_model == "local"
    for i in range(len(available()[name].test_params))
]


def test_most_private_algorithms_carry_a_ledger():
    assert {"hanna-central", "hanna-local", "hanna-shuffle", "dp-ucb", "chen-jdp"} <= set(PRIVATE)
    zheng_han = {"ldp-ucb", "ldp-gloc", "ldp-onepoint", "ldp-twopoint", "ldp-ols", "ldp-sgd"}
    assert zheng_han <= set(PRIVATE)


@pytest.mark.parametrize("name", PRIVATE)
def test_epsilon_recomputed_from_the_ledger(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = make(name).guarantee_for(spec_for(name))
    check_ledger(name, g)


@pytest.mark.parametrize(("name", "variant"), LOCAL_VARIANTS)
def test_every_local_variant_recomputed_from_its_ledger(name, variant):
    params = available()[name].test_params[variant]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = make(name, **params).guarantee_for(spec_for(name))
    assert g.ledger is not None, f"{name} {params}: no ledger"
    assert independent(g.ledger, g.delta) is not None, f"{name} {params}: not covered"
    check_ledger(name, g)


def check_ledger(name, g):
    """The ledger round-trips through JSON and its independent epsilon is at most the guarantee's
    (equal when the library composes exactly)."""
    assert g.ledger is not None
    # the ledger round-trips through JSON
    back = event_from_dict(json.loads(json.dumps(g.ledger.to_dict())))
    assert back == g.ledger
    got = independent(g.ledger, g.delta)
    if got is None:
        # shuffle amplification or a specialised accountant: the local part is still checked
        local = [e for e in _walk(g.ledger) if isinstance(e, Amplified)]
        for a in local:
            sub = independent(a.event, 0.0)
            assert sub is not None and g.local_epsilon is not None
            assert sub[0] <= g.local_epsilon * (1 + RTOL)
        pytest.skip(f"{name}: the ledger holds events no standard accountant covers")
    eps, exact = got
    assert g.epsilon >= eps * (1 - RTOL), "the library's epsilon is below the accountant's"
    if exact:
        assert g.epsilon == pytest.approx(eps, rel=RTOL)


def test_recomputation_catches_an_under_reported_epsilon():
    """A guarantee that halves the Laplace epsilon of its ledger is caught by the comparison."""
    ev = Laplace(2.0, 2.0, "a sum")
    eps, exact = independent(ev, 0.0)  # type: ignore[misc]
    assert exact and eps == pytest.approx(1.0, rel=RTOL)
    assert not 0.5 >= eps * (1 - RTOL)


def test_gaussian_ledger_matches_the_analytic_calibration():
    from privbandits.privacy.calibration import gaussian_sigma_analytic

    sigma = gaussian_sigma_analytic(1.0, 1e-5)
    eps, exact = independent(Gaussian(sigma, 1.0), 1e-5)  # type: ignore[misc]
    assert exact and eps == pytest.approx(1.0, rel=RTOL)


def test_pure_local_is_dominated_by_randomized_response():
    eps, _ = independent(PureLocal("l2-ball", 0.7, {"radius": 3.0}), 0.0)  # type: ignore[misc]
    assert eps == pytest.approx(0.7, rel=RTOL)
    twice, exact = independent(SelfComposed(PureLocal("rr", 0.7), 2, "basic"), 0.0)  # type: ignore[misc]
    assert not exact and twice == pytest.approx(1.4, rel=RTOL)


def test_render_and_summary():
    tree = SelfComposed(
        Composed((Laplace(1.0, 1.0, "x"), Gaussian(2.0, 1.0, "y")), "zcdp"),
        3,
        "disjoint",
        what="phases",
    )
    lines = render(tree)
    assert lines[0].startswith("phases: 3 x (disjoint")
    assert any("Laplace on x" in line for line in lines)
    assert any(line.lstrip(" |").startswith("`-- Gaussian on y") for line in lines)
    assert "zcdp composition of [" in tree.summary()
    assert math.isclose(tree.leaves()[1].noise_multiplier, 2.0)  # type: ignore[attr-defined]


def test_explain_prints_the_event_tree():
    from typer.testing import CliRunner

    from privbandits.cli import app

    res = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, ["explain", "hanna-local", "-p", "epsilon=1", "--d", "2", "-T", "2000"]
    )
    assert res.exit_code == 0, res.output
    out = res.output
    assert "privacy events (ledger):" in out
    assert "x (disjoint composition)" in out
    assert "`-- Laplace on each user's reward" in out and "(epsilon = 1)" in out


# --------------------------------------------------------------------------------------------
# Sarmasarkar (2026): JDP-GLM (zCDP of Gaussian releases) and ShuffleGLM (binomial sums)
# --------------------------------------------------------------------------------------------
def _glm_spec(T: int = 1024, d: int = 2):
    from privbandits.core.links import get_link

    return EnvSpec(d=d, K=4, horizon=T, link=get_link("logistic"))


def _zcdp_of(event: Event) -> float:
    """zCDP of a ledger of Gaussian releases under ``zcdp`` composition (``worst``: the max)."""
    if isinstance(event, Gaussian):
        return event.sensitivity**2 / (2.0 * event.sigma**2)
    if isinstance(event, SelfComposed):
        assert event.rule == "zcdp"
        return event.count * _zcdp_of(event.event)
    assert isinstance(event, Composed) and event.rule in ("zcdp", "worst")
    parts = [_zcdp_of(e) for e in event.events]
    return max(parts) if event.rule == "worst" else sum(parts)


@pytest.mark.parametrize("mode", ["practical", "theory"])
def test_jdp_glm_ledger_is_the_noise_the_kernel_adds(mode: str) -> None:
    """The ledger's zCDP composition reproduces the guarantee, and its leaves are the kernel's
    tree noise and DPPGD noise (per refit: ``T_it`` steps of the kernel's std, one Gaussian)."""
    from privbandits.algorithms.sarmasarkar.constants import exact_tree_nodes
    from privbandits.algorithms.sarmasarkar.jdp_glm import _iterations
    from privbandits.algorithms.sarmasarkar.optim import dppgd_sigma
    from privbandits.core.rng import make_streams
    from privbandits.privacy.accounting import zcdp_to_approx_dp

    spec = _glm_spec()
    alg = make("jdp-glm", epsilon=4.0, delta=0.02, mode=mode, max_iters=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg.reset(spec, 1, make_streams(0))
    g, p = alg.guarantee, alg.kernel.params  # type: ignore[union-attr]
    rho = _zcdp_of(g.ledger)  # type: ignore[arg-type]
    res = alg.resolved_params()
    assert rho == pytest.approx(res["rho_total"], rel=1e-12)
    # each form of a user's change is the accountant's (a wrong sensitivity in any is caught)
    inside, outside, flip = (_zcdp_of(e) for e in g.ledger.events)  # type: ignore[union-attr]
    assert inside == pytest.approx(res["rho_V"] + res["rho_o"], rel=1e-12)
    assert outside == pytest.approx(res["rho_H"] + res["rho_tau"], rel=1e-12)
    flip_rho = 0.5 * (res["rho_V"] + res["rho_H"]) + 0.25 * (res["rho_o"] + res["rho_tau"])
    assert flip == pytest.approx(flip_rho, rel=1e-12)
    assert g.epsilon == pytest.approx(zcdp_to_approx_dp(rho, g.delta, "cks"), rel=1e-12)
    Rb, sigma_V, sigma_H, rho_o, rho_tau = p[12], p[13], p[14], p[17], p[18]
    leaves = [e for e in _walk(g.ledger) if isinstance(e, SelfComposed)]
    by_what: dict[str, SelfComposed] = {}
    for e in leaves:  # the replacement cases come first (full sensitivities)
        by_what.setdefault(e.what, e)
    assert by_what["V tree: the nodes one leaf enters"].event.sigma == sigma_V  # type: ignore[attr-defined]
    assert by_what["H tree: the nodes one leaf enters"].event.sigma == sigma_H  # type: ignore[attr-defined]
    assert by_what["V tree: the nodes one leaf enters"].count == exact_tree_nodes(spec.horizon)
    o = by_what["theta_o refits (public t = 2^k)"]
    tau = by_what["theta_tau refits (Criterion-II cap)"]
    d = spec.d
    for n in (1, 3, 7, 63, 511):  # the public refits (t = n + 1 a power of two)
        for fam, rho_call, zeta in ((o, rho_o, p[19]), (tau, rho_tau, p[20])):
            T_it = _iterations(n, rho_call, d, zeta, alg.max_iters)
            step = dppgd_sigma(Rb, T_it, rho_call)  # the std the kernel adds per DPPGD step
            one = fam.event  # type: ignore[attr-defined]
            assert one.sigma == pytest.approx(step / math.sqrt(T_it), rel=1e-12)
            assert one.sensitivity == 2.0 * Rb


def _shuffle_ledger_checks(alg_kwargs: dict, spec: EnvSpec) -> None:
    from privbandits.algorithms.sarmasarkar.binomial_composition import composed_epsilon
    from privbandits.core.rng import make_streams
    from privbandits.privacy.cheu import SumParams
    from privbandits.privacy.ledger import BinomialSum

    alg = make("shuffle-glm", **alg_kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg.reset(spec, 1, make_streams(0))
    g, plan = alg.guarantee, alg.client.plan  # type: ignore[attr-defined]
    top = g.ledger
    assert isinstance(top, Composed) and top.rule == "disjoint"
    assert len(top.events) == plan.n_batches
    # the ledger's rendered epsilon is the guarantee's
    assert max(b.epsilon for b in top.events) == g.epsilon  # type: ignore[attr-defined]
    assert "~" not in "\n".join(render(top)) and not g.approximate
    for k, batch in enumerate(top.events):
        assert isinstance(batch, Accounted)
        sums = [e for e in _walk(batch) if isinstance(e, BinomialSum)]
        # the leaves are the noise the devices add: the client's calibration of batch k
        dev = [plan.matrix[k]] + ([plan.vector[k]] if plan.T_it[k] > 0 else [])
        assert len(sums) == len(dev)
        for leaf, prm in zip(sums, dev, strict=True):
            assert (leaf.n, leaf.b, leaf.p, leaf.g, leaf.Delta, leaf.labels, leaf.sensitivity) == (
                prm.n,
                prm.b,
                prm.p,
                prm.g,
                prm.Delta,
                prm.n_labels,
                prm.sensitivity,
            )
        if plan.mode != "practical":
            continue
        # the batch's epsilon recomputed from the leaves alone (the Renyi route)
        counts = [1] + [e.count for e in batch.events if isinstance(e, SelfComposed)]
        calls = [
            (
                SumParams(
                    "vector",
                    s.n,
                    s.labels,
                    s.labels,
                    s.labels,
                    s.Delta,
                    s.g,
                    s.b,
                    s.p,
                    math.nan,
                    g.delta,
                    "calibrated",
                    s.sensitivity,
                ),
                c,
            )
            for s, c in zip(sums, counts, strict=True)
        ]
        assert composed_epsilon(calls, g.delta) == batch.epsilon


def test_shuffle_glm_ledger_is_the_noise_the_devices_add() -> None:
    _shuffle_ledger_checks({"epsilon": 4.0, "delta": 1e-4}, _glm_spec(1024))


def test_shuffle_glm_theory_ledger() -> None:
    _shuffle_ledger_checks({"epsilon": 2.0, "mode": "theory", "max_iters": 5}, _glm_spec(1024))


@pytest.mark.parametrize("name", ["jdp-glm", "shuffle-glm"])
def test_explain_prints_the_sarmasarkar_event_trees(name: str) -> None:
    from typer.testing import CliRunner

    from privbandits.cli import app

    res = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["explain", name, "-p", "epsilon=1", "--d", "2", "-T", "512"]
    )
    assert res.exit_code == 0, res.output
    out = res.output
    assert "privacy events (ledger):" in out
    if name == "jdp-glm":
        assert "JDP-GLM, one user's change: worst composition" in out
        assert "Gaussian on a V-tree node" in out and "theta_tau refits" in out
    else:
        assert "ShuffleGLM: batches of disjoint users: disjoint composition" in out
        assert "shuffled binomial sum on the batch's matrix" in out and "P_GD rounds" in out
