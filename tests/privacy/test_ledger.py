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

    ``disjoint`` composition is the parallel composition theorem (the worst part); ``exact`` is
    False when the library's own rule for some part is looser than the accountant's.
    """
    if isinstance(event, (SelfComposed, Composed)) and event.rule == "disjoint":
        parts = [independent(e, delta) for e in event.children()]
        if any(p is None for p in parts):
            return None
        return max(p[0] for p in parts), all(p[1] for p in parts)  # type: ignore[index]
    if isinstance(event, (Amplified, Accounted)) or to_dp_accounting(event) is None:
        return None
    exact = not any(
        isinstance(e, (SelfComposed, Composed)) and e.rule != "disjoint"
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
                g = make(name).guarantee_for(SPEC)
            except Exception:  # continuous-action algorithms need another problem
                continue
            if g.is_private and g.ledger is not None:
                names.append(name)
    return names


PRIVATE = _private_algorithms()


def test_most_private_algorithms_carry_a_ledger():
    assert {"hanna-central", "hanna-local", "hanna-shuffle", "dp-ucb", "chen-jdp"} <= set(PRIVATE)


@pytest.mark.parametrize("name", PRIVATE)
def test_epsilon_recomputed_from_the_ledger(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = make(name).guarantee_for(SPEC)
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
