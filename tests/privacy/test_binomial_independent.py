"""The binomial summation's accounting against an enumeration of the shifts one user can cause.

:mod:`privbandits.privacy.binomial_accounting` bounds the privacy of the shuffle summation of Cheu,
Joseph, Mao & Peng (2022) (Sarmasarkar 2026, Appendix T) by the worst shift of the released counts
one user's coupled roundings can produce, relaxed to the set of :func:`shift_budget`.  The tests
here build the set of shifts by running the coupling itself on a grid of inputs, never from
:func:`shift_budget`, at non-integer precisions, radii and input bounds (where a worst-case count
that is one too small first shows), and compare the bound with the exact hockey-stick divergence
over that set.  A second group pins the bound's value at awkward parameters (small noise, where the
window and tails matter; a budget above the dynamic programme's cell count) so that a change of the
bound is deliberate.  (That the message size covers the largest rounding is checked in
``test_accounting_independent.py``.)
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy import stats

from privbandits.core.errors import ValidationError
from privbandits.privacy import binomial_accounting as ba


def _u_grid(m: int) -> np.ndarray:
    """``m`` values of the shared uniform of the coupled roundings (cell midpoints)."""
    return (np.arange(m) + 0.5) / m


@functools.cache
def _enumerated_shifts(
    g: float, Delta: float, sens: float, L: int, steps: int
) -> set[tuple[int, ...]]:
    """Every shift vector ``floor(u + U) - floor(u' + U)`` the coupled roundings produce on a grid.

    Inputs ``w, w'`` range over the input domain (``|w| <= Delta`` for one label, the disc of radius
    ``Delta`` for two), restricted to ``||w - w'|| <= sens``, with the grid's end points and the
    points just inside them; ``u = (w + Delta) g / Delta`` as the randomizer biases and scales;
    ``U`` one shared uniform per coordinate (the coupling of the module docstring).  Every shift
    found is reachable; none of this calls :mod:`privbandits.privacy.binomial_accounting`.
    """
    if L == 1:
        base = np.linspace(-Delta, Delta, steps)
        pts = np.unique(np.concatenate([base, base * (1 - 1e-9)]))[:, None]
    else:
        ang = np.linspace(0.0, 2 * math.pi, steps, endpoint=False)
        rad = np.linspace(0.0, Delta, steps // 6)
        pts = np.stack(
            [np.outer(rad, np.cos(ang)).ravel(), np.outer(rad, np.sin(ang)).ravel()], axis=1
        )
    found: set[tuple[int, ...]] = set()
    for w in pts:
        d = np.linalg.norm(pts - w, axis=1)
        wp = pts[d <= sens * (1 + 1e-12)]
        u = (w + Delta) * g / Delta
        up = (wp + Delta) * g / Delta
        # per coordinate: the shifts over the grid of U (coordinates use independent uniforms);
        # each pair (w, w') gives every combination of the per-coordinate values
        U = _u_grid(64 if L == 1 else 48)
        per = [
            np.floor(u[k] + U)[None, :] - np.floor(up[:, k, None] + U[None, :]) for k in range(L)
        ]
        ext = [np.stack([p.min(axis=1), p.max(axis=1)], axis=1) for p in per]
        if L == 1:
            found.update((int(v),) for v in np.unique(ext[0]))
        else:
            combos = np.stack(
                [np.stack([ext[0][:, i], ext[1][:, j]], axis=1) for i in range(2) for j in range(2)]
            ).reshape(-1, 2)
            found.update(map(tuple, np.unique(combos.astype(int), axis=0).tolist()))
    return found


def _in_relaxed_set(s: tuple[int, ...], budget: int, s_max: int) -> bool:
    return all(abs(x) <= s_max for x in s) and sum(max(abs(x) - 1, 0) ** 2 for x in s) <= budget


@pytest.mark.parametrize(
    ("g", "Delta", "sens"),
    [
        (4.3, 1.0, 2.0),  # 2 g = 8.6: the largest shift is ceil(2 g) = 9, not floor(2 g) = 8
        (4.472135955, 0.7, 1.4),  # g = 2 sqrt(5) (n = 5 users), a non-unit input bound
        (4.5, 1.0, 2.0),  # 2 g = 9 exactly: ceil and floor agree
        (5.25, 1.0, math.sqrt(2)),  # PSD sensitivity: the radius r = g sqrt(2) = 7.42 binds first
        (4.0, 1.0, 1.3),  # integer g, radius 5.2
    ],
)
def test_one_label_shift_set_is_exactly_the_enumerated_coupling(
    g: float, Delta: float, sens: float
) -> None:
    """One label: the relaxed set of :func:`shift_budget` equals the shifts the coupling produces.

    Containment is the privacy statement (a shift left out is a defect: the bound would miss the
    worst case); equality says the set is not looser than it needs to be for one label.
    """
    found = _enumerated_shifts(g, Delta, sens, 1, 201)
    budget, s_max = ba.shift_budget(g, Delta, sens)
    relaxed = {(s,) for s in range(-s_max - 2, s_max + 3) if _in_relaxed_set((s,), budget, s_max)}
    assert found <= relaxed, sorted(found - relaxed)
    assert relaxed == found, sorted(relaxed - found)
    # the largest shift the coupling reaches, computed from the geometry alone
    r = g * sens / Delta
    assert max(abs(s) for (s,) in found) == min(math.ceil(2 * g), math.ceil(r) if r % 1 else int(r))


@pytest.mark.parametrize(
    ("g", "Delta", "sens"), [(4.3, 1.0, 2.0), (4.7, 1.0, math.sqrt(2)), (6.1, 2.0, 4.0)]
)
def test_two_label_shifts_lie_in_the_relaxed_set(g: float, Delta: float, sens: float) -> None:
    """Two labels (a disc of inputs): every enumerated shift vector lies in the relaxed set."""
    found = _enumerated_shifts(g, Delta, sens, 2, 60)
    budget, s_max = ba.shift_budget(g, Delta, sens)
    missing = [s for s in found if not _in_relaxed_set(s, budget, s_max)]
    assert not missing, sorted(missing)[:10]
    assert max(max(abs(a), abs(b)) for a, b in found) == math.ceil(2 * g) or sens < 2 * Delta


def _exact_worst_delta(N: int, p: float, shifts: set[tuple[int, ...]], eps: float) -> float:
    """``max_s sum_y (P_s(y) - e^eps P_0(y))_+`` over ``Bin(N, p)^L`` (L <= 2), by direct summation."""
    s_max = max(max(abs(x) for x in s) for s in shifts)
    y = np.arange(-s_max, N + s_max + 1)
    cols = {k: stats.binom.pmf(y - k, N, p) for k in range(-s_max, s_max + 1)}
    if len(next(iter(shifts))) == 1:
        return max(
            float(np.maximum(cols[s] - math.exp(eps) * cols[0], 0.0).sum()) for (s,) in shifts
        )
    Q = np.outer(cols[0], cols[0]) * math.exp(eps)
    return max(float(np.maximum(np.outer(cols[a], cols[b]) - Q, 0.0).sum()) for a, b in shifts)


@pytest.mark.parametrize(
    ("N", "g", "L", "eps"),
    [
        (150, 4.3, 1, 1.2),
        (150, 4.3, 1, 2.6),
        (400, 4.3, 1, 0.9),
        (120, 4.3, 2, 2.2),
        (73, 4.472135955, 1, 3.3),
    ],
)
def test_binomial_bound_dominates_the_exact_delta_over_the_enumerated_shifts(
    N: int, g: float, L: int, eps: float
) -> None:
    """The bound is at least the exact ``delta(eps)`` of the worst shift the coupling reaches.

    The shifts come from the enumeration, not from :func:`shift_budget`.  This is the end-to-end
    validity check; the bound's own slack (its Renyi-type conversion, a factor 1.3-2 in delta
    here) can hide one missing shift, which the two shift-set tests above catch directly (a count
    ``floor(2 g)`` for ``ceil(2 g)`` fails them at ``g = 4.3``).
    """
    found = _enumerated_shifts(g, 1.0, 2.0, L, 201 if L == 1 else 60)
    exact = _exact_worst_delta(N, 0.25, found, eps)
    assert exact > 1e-6  # the comparison is informative
    bound = ba.binomial_sum_delta(N, 0.25, L, g, 1.0, 2.0, eps)
    assert bound >= exact, (bound, exact)


def test_binomial_epsilon_is_private_for_the_enumerated_shifts() -> None:
    """At the bound's own epsilon the exact worst-case delta over the enumerated shifts is below delta."""
    N, g, dlt = 300, 4.3, 1e-3
    eps = ba.binomial_sum_epsilon(N, 0.25, 1, g, 1.0, 2.0, dlt)
    found = _enumerated_shifts(g, 1.0, 2.0, 1, 201)
    assert _exact_worst_delta(N, 0.25, found, eps) <= dlt
    # and not absurdly loose: the exact curve crosses delta above half the bound's epsilon
    assert _exact_worst_delta(N, 0.25, found, 0.5 * eps) > dlt


#: (function, N, p, L, g, Delta, sensitivity, eps or delta) -> value computed when the bound was
#: validated against the enumeration above; awkward on purpose: non-integer g, a non-unit Delta,
#: a sensitivity below 2 Delta (the radius binds before ceil(2 g)), few noise bits (the window
#: reaches 0 and the tails count), three labels, a budget of 7996 (above the dynamic programme's
#: 2000 cells, where the costs are rounded).
PINNED = [
    ("delta", 150, 0.25, 1, 4.3, 1.0, 2.0, 1.2, 0.6491341982247755),
    ("epsilon", 150, 0.25, 1, 4.3, 1.0, 2.0, 1e-3, 9.481390910757057),
    ("delta", 60, 0.25, 1, 4.3, 0.7, 0.99, 3.0, 0.6203917745312477),
    ("epsilon", 60, 0.25, 1, 4.3, 0.7, 0.99, 0.05, 8.621164911414866),
    ("delta", 100, 0.25, 2, 4.3, 0.7, 0.99, 3.0, 0.29883838105717225),
    ("epsilon", 5000, 0.3, 3, 6.1, 1.0, 2.0, 1e-6, 2.071212948169097),
    ("delta", 5000, 0.3, 3, 6.1, 1.0, 2.0, 0.8, 0.01982191683709086),
    ("epsilon", 20000, 0.25, 2, 44.712, 1.0, 2.0, 1e-5, 7.614338589097936),
]


@pytest.mark.parametrize("case", PINNED, ids=[f"{c[0]}-N{c[1]}-L{c[3]}-g{c[4]}" for c in PINNED])
def test_bound_value_is_pinned_at_awkward_parameters(case: tuple) -> None:
    """Regression pins (relative 1e-9): any change of the bound's value (its order grid, window,
    tails, rounding of the costs) must be deliberate and re-validated against the enumeration."""
    kind, N, p, L, g, Delta, sens, x, value = case
    f = ba.binomial_sum_delta if kind == "delta" else ba.binomial_sum_epsilon
    assert f(N, p, L, g, Delta, sens, x) == pytest.approx(value, rel=1e-9)


def test_shift_budget_at_awkward_parameters() -> None:
    """``(floor(r^2), min(floor(r) + 1, ceil(2 g)))`` with ``r = g Delta_2 / Delta``, written out."""
    assert ba.shift_budget(4.3, 0.7, 0.99) == (36, 7)  # r = 6.0814..., r^2 = 36.98
    assert ba.shift_budget(4.3, 1.0, 2.0) == (73, 9)  # r = 8.6, ceil(2 g) = 9
    assert ba.shift_budget(4.0, 1.0, 2.0) == (64, 8)  # integer r = 8 = 2 g: (8 - 1)^2 = 49 <= 64
    assert ba.shift_budget(3.2, 2.0, 1.0) == (2, 2)  # r = 1.6, a small radius binds
    assert ba.shift_budget(0.3, 1.0, 2.0) == (0, 1)  # ceil(2 g) = 1 binds


def test_huge_noise_gives_epsilon_zero_not_a_negative_epsilon() -> None:
    """When the bound meets ``delta`` already at epsilon 0 the epsilon is 0 (never negative)."""
    assert (
        ba.binomial_sum_epsilon(10**5, 0.25, 1, 4.0, 1.0, 2.0, 0.4) == 0.0
    )  # the minimum over orders is -0.51


def test_degenerate_inputs_are_refused() -> None:
    with pytest.raises(ValidationError, match="p must"):
        ba.binomial_sum_epsilon(100, 1.0, 1, 4.0, 1.0, 2.0, 1e-3)
    with pytest.raises(ValidationError, match="p must"):
        ba.binomial_sum_delta(100, 0.0, 1, 4.0, 1.0, 2.0, 1.0)
    with pytest.raises(ValidationError, match="L"):
        ba.binomial_sum_delta(100, 0.25, 0, 4.0, 1.0, 2.0, 1.0)
    with pytest.raises(ValidationError, match="N"):
        ba.binomial_sum_epsilon(0, 0.25, 1, 4.0, 1.0, 2.0, 1e-3)
    with pytest.raises(ValidationError, match="epsilon"):
        ba.binomial_sum_delta(100, 0.25, 1, 4.0, 1.0, 2.0, math.inf)
