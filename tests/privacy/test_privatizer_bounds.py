"""The privatizers' argument ranges at, inside and beyond their bounds.

:mod:`privbandits.privacy.randomizers` holds the randomizers devices run (randomized rounding, the
binomial bits of the Cheu et al. summation, randomized response).  Each argument range is checked
here at its ends (accepted) and just beyond (refused with a message naming the range), so that a
range widened by a slip (a negative bit probability, inputs above ``2 Delta``) is seen.  The same
for the query gap of LDP-TwoPoint (Zheng et al. 2020, Algorithm 2) at exactly its minimum, and the
LDP-OnePoint server's check of the messages it receives (Algorithm 1).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privbandits.core.errors import ValidationError
from privbandits.privacy.randomizers import (
    binomial_bit_counts,
    bits_from_counts,
    debias_randomized_response,
    randomized_response,
    randomized_response_epsilon,
    randomized_response_keep_probability,
    randomized_rounding,
)


def test_binomial_bits_accept_their_ranges_at_the_ends() -> None:
    rng = np.random.default_rng(0)
    Delta = 0.8
    w = np.array([0.0, 2 * Delta, 2 * Delta * (1 + 0.5e-12)])
    for p in (0.0, 1.0):
        counts = binomial_bit_counts(w, 4.3, 3, p, Delta, rng)
        assert counts.min() >= 0 and counts.max() <= math.ceil(2 * 4.3) + 3
    assert binomial_bit_counts(w, 4.3, 3, 1.0, Delta, rng)[0] == 3  # every noise bit set, no data
    assert binomial_bit_counts(w, 4.3, 0, 0.0, Delta, rng)[0] == 0


@pytest.mark.parametrize("p", [-1e-9, -0.5, 1.0 + 1e-9])
def test_binomial_bits_refuse_a_probability_outside_0_1(p: float) -> None:
    with pytest.raises(ValidationError, match="p"):
        binomial_bit_counts(np.zeros(2), 4.0, 3, p, 1.0, np.random.default_rng(0))


def test_binomial_bits_refuse_inputs_outside_0_2delta_and_name_the_range() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(
        ValidationError, match=r"w must lie in \[0, 2 Delta\] = \[0, 1.6\].*\[-1e-09, 1\]"
    ):
        binomial_bit_counts(np.array([-1e-9, 1.0]), 4.0, 3, 0.25, 0.8, rng)
    with pytest.raises(ValidationError, match=r"= \[0, 1.6\].*got range \[0, 1.6001\]"):
        binomial_bit_counts(np.array([0.0, 1.6001]), 4.0, 3, 0.25, 0.8, rng)
    for bad in ({"g": 0.0}, {"b": -1}, {"Delta": 0.0}):
        args = {"g": 4.0, "b": 3, "Delta": 0.8} | bad
        with pytest.raises(ValidationError):
            binomial_bit_counts(np.zeros(2), args["g"], args["b"], 0.25, args["Delta"], rng)


def test_randomized_rounding_is_floor_or_ceil_with_the_right_mean() -> None:
    rng = np.random.default_rng(1)
    u = np.full(20_000, 2.3)
    r = randomized_rounding(u, rng)
    assert set(np.unique(r)) == {2, 3}
    # mean 2.3 within five standard errors (Bernoulli(0.3) per entry)
    assert abs(r.mean() - 2.3) <= 5 * math.sqrt(0.3 * 0.7 / u.size)
    assert randomized_rounding(np.array([0.0, 4.0]), rng).tolist() == [0, 4]  # integers stay


def test_bits_from_counts_at_the_ends() -> None:
    assert bits_from_counts(np.array([0, 3, 5]), 5).tolist() == [[0] * 5, [1, 1, 1, 0, 0], [1] * 5]
    assert bits_from_counts(np.array([], dtype=int), 4).shape == (0, 4)
    for bad in ([-1, 2], [0, 6]):
        with pytest.raises(ValidationError, match=r"counts must lie in \[0, n_bits=5\]"):
            bits_from_counts(np.array(bad), 5)


def test_randomized_response_probabilities_and_inverse() -> None:
    assert randomized_response_keep_probability(math.log(3.0)) == pytest.approx(0.75, rel=1e-15)
    assert randomized_response_epsilon(0.75) == pytest.approx(math.log(3.0), rel=1e-15)
    assert randomized_response_epsilon(0.5) == 0.0
    with pytest.raises(ValidationError):
        randomized_response_epsilon(1.0)  # keeping every bit is not private
    with pytest.raises(ValidationError):
        randomized_response_epsilon(0.4999)
    rng = np.random.default_rng(2)
    bits = np.tile([0, 1], 20_000)
    rep = randomized_response(bits, math.log(3.0), rng)
    kept = float(np.mean(rep == bits))
    assert abs(kept - 0.75) <= 5 * math.sqrt(0.75 * 0.25 / bits.size)
    with pytest.raises(ValidationError, match="only 0 and 1"):
        randomized_response(np.array([0, 2]), 1.0, rng)
    est = debias_randomized_response(rep.reshape(1, -1), math.log(3.0))
    assert abs(est[0] - 20_000) <= 5 * math.sqrt(bits.size * 0.75 * 0.25) / 0.5


def test_a_query_gap_exactly_at_the_minimum_is_kept() -> None:
    """LDP-TwoPoint reads gaps below ``MIN_GAP`` as 0; a gap of exactly ``MIN_GAP`` is a gap (its
    message is clipped and noised), one just below is 0."""
    from privbandits.algorithms.bco.privatizer import MIN_GAP, query_gaps

    points = np.zeros((3, 2, 2))
    points[0, 1, 0] = MIN_GAP  # exactly representable difference along one axis: gap == MIN_GAP
    points[1, 1, 1] = MIN_GAP * (1 - 1e-12)
    points[2, 1, 0] = 3.0
    points[2, 1, 1] = 4.0
    gaps = np.empty(3)
    query_gaps(points, gaps)
    assert gaps.tolist() == [MIN_GAP, 0.0, 5.0]


def _one_point_server(R: int):  # type: ignore[no-untyped-def]
    import warnings

    import privbandits as pb
    from privbandits.algorithms.calibration import CalibrationWarning
    from privbandits.core.rng import make_streams

    alg = pb.make("ldp-onepoint")
    streams = make_streams(0)
    spec = pb.MultiArmedEnv(K=3).reset(R, streams, 100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        alg.reset(spec, R, streams)
    return alg


def test_one_point_server_refuses_messages_of_the_wrong_shape_or_kind() -> None:
    """The untrusted server's side still checks what it is sent: one real value per replication."""
    from privbandits.core.errors import TrustBoundaryError
    from privbandits.core.messages import PrivatizedMessage

    alg = _one_point_server(2)
    assert alg.server.t == 0  # rounds are 0-based: the black box is asked for round 0 first
    mech = alg.server.mechanism
    for bad in (np.zeros(3), np.zeros((2, 1)), np.array(["a", "b"])):
        with pytest.raises(TrustBoundaryError, match="one real value per replication"):
            alg.server.receive(0, PrivatizedMessage({"value": bad}, mech))
    alg.server.receive(0, PrivatizedMessage({"value": np.array([0.5, -0.25])}, mech))
    assert alg.server.t == 1  # the first round is round 0; the next expected is 1
