"""Server side of LDP-UCB and LDP-GLOC: noisy sufficient statistics, regularized once per round.

The server keeps the raw noisy sums ``V_t = sum_s (x_s x_s^T + B_s)`` and ``u_t = sum_s (v_s + xi_s)``
and publishes, after ``t`` messages,

* ``M = (V_t + c_s I)^{-1}`` with ``s = max(t, 1)`` (spec section 8 A2/A6: the regularizer is
  added once, with the current ``c``, never accumulated);
* ``theta = M u_t`` (``theta_tilde_t``; ``0`` before the first message);
* ``beta``: the radius the next user multiplies the bonus by.

It only ever receives :class:`~privbandits.core.messages.PrivatizedMessage` objects with exactly
the expected parts; anything else raises :class:`~privbandits.core.errors.TrustBoundaryError`.

References
----------
Zheng et al. (2020), Algorithm 3 (lines 10-11) and Algorithm 5 (server update).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from privbandits.algorithms.base import Server
from privbandits.algorithms.ldp_zheng.constants import RadiusTable, upsilon
from privbandits.algorithms.linalg import spd_inverse
from privbandits.core.errors import TrustBoundaryError
from privbandits.core.messages import PrivatizedMessage, PublicState

__all__ = ["NoisyRidgeServer", "check_message"]


def check_message(message: object, mechanism: str, shapes: dict[str, tuple[int, ...]]) -> PrivatizedMessage:
    """Return ``message`` if it is a privatized message of ``mechanism`` with exactly ``shapes``."""
    if not isinstance(message, PrivatizedMessage):
        raise TrustBoundaryError(
            f"the server only accepts PrivatizedMessage objects, got {type(message).__name__}"
        )
    if message.mechanism != mechanism:
        raise TrustBoundaryError(f"expected a message of randomizer {mechanism!r}, got {message.mechanism!r}")
    if set(message.payload) != set(shapes):
        raise TrustBoundaryError(f"message parts must be {sorted(shapes)}, got {sorted(message.payload)}")
    for key, shape in shapes.items():
        if message.payload[key].shape != shape:
            raise TrustBoundaryError(f"message part {key!r} must have shape {shape}, got {message.payload[key].shape}")
    return message


class NoisyRidgeServer(Server):
    """Accumulates privatized ``(x x^T + B, v + xi)`` messages and publishes the regularized estimate.

    Parameters
    ----------
    R, D : int
        Replications and feature dimension.
    mechanism : str
        Name of the randomizer whose messages are accepted.
    sigma : float
        Noise std entering ``Upsilon_t``.
    T : int
        Horizon.
    alpha : float
        Failure probability in ``Upsilon_t``.
    c_factor : float
        ``c_t = c_factor * Upsilon_t``.
    beta : callable
        ``beta(s)``: the radius at index ``s`` (already scaled).
    V0 : float
        Initial noisy Gram sum ``V0 * I``.
    beta_index : {"previous", "current"}
        Whether round ``t`` uses ``beta_{max(t-1, 1)}`` or ``beta_t``.
    c_first : float or None
        Regularizer used before the first message (None: ``c_1``).
    """

    vector_key = "u"

    def __init__(
        self,
        R: int,
        D: int,
        mechanism: str,
        sigma: float,
        T: int,
        alpha: float,
        c_factor: float,
        beta: Callable[[int], float],
        V0: float = 0.0,
        beta_index: str = "previous",
        c_first: float | None = None,
    ) -> None:
        self.R, self.D = R, D
        self.mechanism = mechanism
        self.sigma, self.T, self.alpha, self.c_factor = sigma, T, alpha, c_factor
        self._beta = beta
        self.beta_index = beta_index
        self.c_first = c_first
        self._ups = RadiusTable(lambda s: upsilon(s, sigma, D, T, alpha))
        self.u = np.zeros((R, D))
        self.n = 0
        self.n_shifted = 0
        self._eye = np.eye(D)
        self._shapes = self._message_shapes()
        # A = V_n + c_n I is kept up to date in place: the diagonal view lets the regularizer change
        # from c_{n-1} to c_n with one addition (it is never accumulated, spec section 8 A2)
        self._c = self.regularizer()
        self.A = np.broadcast_to((V0 + self._c) * self._eye, (R, D, D)).copy()
        self._diag = self.A.reshape(R, D * D)[:, :: D + 1]
        self._refresh()

    @property
    def V(self) -> np.ndarray:
        """The raw noisy Gram sum ``V_n = sum_s (x_s x_s^T + B_s)`` (plus ``V0 I``)."""
        return self.A - self._c * self._eye

    # -- message handling ----------------------------------------------------------------------
    def _message_shapes(self) -> dict[str, tuple[int, ...]]:
        return {"V": (self.R, self.D, self.D), self.vector_key: (self.R, self.D)}

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        """Add one round's privatized statistics (Alg. 3 line 11 / Alg. 5 server update)."""
        msg = check_message(message, self.mechanism, self._shapes)
        self.A += msg.payload["V"]
        self.u += msg.payload[self.vector_key]
        self.n += 1
        c = self.regularizer()
        self._diag += c - self._c
        self._c = c
        self._absorb(msg)
        self._refresh()

    def _absorb(self, message: PrivatizedMessage) -> None:
        """Hook for further message parts (LDP-GLOC's gradient)."""

    # -- estimate ------------------------------------------------------------------------------
    def upsilon(self, s: int) -> float:
        """``Upsilon_s`` of this server."""
        return self._ups(s)

    def regularizer(self) -> float:
        """``c`` added to the noisy Gram sum after the current number of messages."""
        if self.n == 0 and self.c_first is not None:
            return self.c_first
        return self.c_factor * self.upsilon(max(self.n, 1))

    def _regularized_inverse(self) -> np.ndarray:
        """``(V + c I)^{-1}``; a replication whose matrix is not PD is shifted (spec section 4.3.2)."""
        inv = spd_inverse(self.A)
        return np.linalg.inv(self._shift(self.A)) if inv is None else inv

    def _shift(self, A: np.ndarray) -> np.ndarray:
        """Shift replications whose ``A`` is not PD by ``|lambda_min| + Upsilon_t`` (and warn)."""
        lam_min = np.linalg.eigvalsh(A)[:, 0]
        bad = lam_min <= 0.0
        shift = np.where(bad, np.abs(lam_min) + self.upsilon(max(self.n, 1)), 0.0)
        self.n_shifted += int(bad.sum())
        warnings.warn(
            f"regularized noisy Gram matrix not positive definite in {int(bad.sum())} replication(s) "
            f"after {self.n} messages; shifted by |lambda_min| + Upsilon_t (spec section 4.3.2)",
            RuntimeWarning,
            stacklevel=4,
        )
        return A + shift[:, None, None] * self._eye

    def _refresh(self) -> None:
        self.M = self._regularized_inverse()
        self.theta = (self.M @ self.u[:, :, None])[:, :, 0]
        s = self.n + 1 if self.beta_index == "current" else max(self.n, 1)
        self.beta = float(self._beta(s))
        self._public = PublicState(self._public_arrays())

    def _public_arrays(self) -> dict[str, np.ndarray]:
        return {"theta": self.theta, "M": self.M, "beta": np.asarray(self.beta)}

    # -- Server API ----------------------------------------------------------------------------
    def public_state(self) -> PublicState:
        """``theta_tilde``, ``M = (V + cI)^{-1}`` and ``beta`` for the next user."""
        return self._public

    def estimate(self) -> np.ndarray:
        """``theta_tilde_t`` (R, D)."""
        return self.theta
