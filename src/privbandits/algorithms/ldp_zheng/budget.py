"""Privacy accounting of one user's message from the noise actually added to each part.

A message of LDP-UCB or LDP-GLOC is a tuple of separately noised parts.  Each part is a Gaussian
(or Laplace) mechanism whose guarantee is read off the noise scale and the part's sensitivity
(:func:`~privbandits.privacy.mechanisms.gaussian_epsilon`, exact Balle & Wang 2018 curve, or
:func:`~privbandits.privacy.mechanisms.laplace_epsilon`), and the parts compose by basic
composition (Zheng et al. 2020, proofs of Thm 7 and Thm 9; Dwork & Roth 2014, Thm 3.16).  Each
user contributes one round, so no composition over rounds is needed (spec section 3.1).
"""

from __future__ import annotations

from dataclasses import dataclass

from privbandits.privacy.accounting import ApproxDP, PureDP, compose_basic, to_guarantee
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.mechanisms import gaussian_epsilon, laplace_epsilon

__all__ = ["NoisePart", "message_guarantee", "part_guarantee"]


@dataclass(frozen=True)
class NoisePart:
    """One separately noised part of a user's message.

    Attributes
    ----------
    name : str
        What is released, e.g. ``"x x^T"``.
    mechanism : {"gaussian", "laplace"}
    scale : float
        Gaussian std or Laplace scale of every released coordinate.
    sensitivity : float
        L2 (Gaussian) or L1 (Laplace) sensitivity of the clipped statistic over all pairs of
        users' data.
    delta : float
        The delta this part is accounted at (Gaussian only; ignored for Laplace).
    """

    name: str
    mechanism: str
    scale: float
    sensitivity: float
    delta: float = 0.0


def part_guarantee(part: NoisePart) -> PureDP | ApproxDP:
    """Guarantee of one part from its noise scale and sensitivity."""
    if part.mechanism == "gaussian":
        return ApproxDP(gaussian_epsilon(part.scale, part.delta, part.sensitivity), part.delta)
    return PureDP(laplace_epsilon(part.scale, part.sensitivity))


def message_guarantee(parts: tuple[NoisePart, ...], notes: str) -> PrivacyGuarantee:
    """Local guarantee per user: basic composition of the parts' guarantees."""
    composed = compose_basic([part_guarantee(p) for p in parts])
    detail = "; ".join(
        f"{p.name}: {p.mechanism} scale {p.scale:.6g}, sensitivity {p.sensitivity:.6g}"
        + (f", delta {p.delta:.3g}" if p.mechanism == "gaussian" else "")
        + f" -> eps {part_guarantee(p).epsilon:.6g}"
        for p in parts
    )
    return to_guarantee(composed, model="local", unit="user", notes=f"{notes}; basic composition of [{detail}]")
