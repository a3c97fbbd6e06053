"""What a K-armed algorithm reads from the public problem description: range and noise scale."""

from __future__ import annotations

from privbandits.core.spec import EnvSpec

__all__ = ["reward_scale", "reward_window"]


def reward_window(spec: EnvSpec) -> tuple[float, float]:
    """``(hi, width)`` of the declared reward range ``[lo, hi]``: losses are ``hi - r``, in
    ``[0, width]`` for rewards in the range."""
    lo, hi = (float(v) for v in spec.reward_range)
    return hi, hi - lo


def reward_scale(spec: EnvSpec) -> float:
    """Sub-Gaussian scale of the rewards: the declared noise scale, at most half the range width
    (a reward in ``[lo, hi]`` is ``(hi - lo) / 2``-sub-Gaussian, Hoeffding's lemma); half the
    width when no noise scale is declared."""
    _hi, width = reward_window(spec)
    s = float(spec.noise_scale)
    return s if 0.0 < s < 0.5 * width else 0.5 * width
