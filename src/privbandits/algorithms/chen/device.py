"""The devices of the Chen et al. (2025) local algorithms (``chen-ldp``, ``squarecb-ldp``).

:class:`GaussianDevice` is the device contract both share: one Gaussian message per user at noise
multiplier ``sigma`` per unit of sensitivity, the user's inputs and the public state checked at
every entry; each device names its message's fields, their clips, their noise and its choice of
action.

Every entry point of a device (``choose``, ``encode``, ``noise``, ``randomize``) validates the
public state it is handed against the space it declares, also when the round protocol has just
done so: a device called directly must not trust its caller.  Within a round the same state
arrives several times; :class:`PublicCheck` remembers the last state it accepted and answers a
state with exactly the same fields, dtypes, shapes and values without validating it again
(validation is a pure function of those), so the guarantee costs one validation per state.

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Sections 5 and 6.2 (the local-model
algorithms whose devices use it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from privbandits.algorithms.base import Client
from privbandits.core.errors import PrivacyError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.public_space import PublicSpace, PublicStateError, dims_of
from privbandits.core.spec import EnvSpec
from privbandits.privacy.device import DeviceNoise, DeviceSensitivity
from privbandits.privacy.inputs import check_device_inputs

__all__ = ["GaussianDevice", "PublicCheck"]


class PublicCheck:
    """``space.validate`` on problem ``spec``, remembering the last accepted state.

    Parameters
    ----------
    space : PublicSpace
        The states the device accepts.
    spec : EnvSpec
        The problem (shape symbols ``K``, ``d``, ``D``).
    """

    def __init__(self, space: PublicSpace, spec: EnvSpec) -> None:
        self.space, self.spec = space, spec
        self._last: PublicState | None = None
        self._last_R = -1

    def __call__(self, public: object, R: int) -> PublicState:
        """``public`` as a validated :class:`PublicState` for ``R`` users, or :class:`PublicStateError`."""
        last = self._last
        if last is not None and R == self._last_R and _same(public, last):
            return last
        state = self.space.validate(public, dims_of(self.spec, R))
        self._last, self._last_R = state, R
        return state


def _same(public: object, accepted: PublicState) -> bool:
    """Whether ``public`` holds exactly the arrays of ``accepted`` (fields, dtypes, shapes, values)."""
    if not isinstance(public, Mapping) or set(public) != set(accepted):
        return False
    for key, ref in accepted.items():
        try:
            arr = np.asarray(public[key])
        except (TypeError, ValueError, PublicStateError):
            return False
        if arr.dtype != ref.dtype or arr.shape != ref.shape or not np.array_equal(arr, ref):
            return False
    return True


class GaussianDevice(Client):
    """A user's device that sends one Gaussian message at noise multiplier ``sigma``.

    The message is :meth:`encode` (the payload fields, every clip applied, flattened in payload
    order) plus :meth:`noise` (Gaussian, ``sigma`` times each field's sensitivity); every entry
    checks the user's inputs and the public state (:class:`PublicCheck` on the declared space).  A
    subclass sets :attr:`algorithm` and :attr:`mechanism` and implements ``_fields`` (the payload
    before noise), ``_stds`` (the noise std per user and coordinate of :meth:`encode`),
    ``_add_noise`` (that noise drawn into the payload, in the device's order) and ``_choose``.

    Parameters
    ----------
    sigma : float
        Noise multiplier per unit of sensitivity.
    spec : EnvSpec
        The problem (shapes and the context bound the device checks its inputs against).
    space : PublicSpace
        The public states the device accepts.
    """

    #: Registry name of the algorithm (for the device's errors).
    algorithm: ClassVar[str]
    #: Mechanism name of the message.
    mechanism: ClassVar[str]

    def __init__(self, sigma: float, spec: EnvSpec, space: PublicSpace) -> None:
        self.sigma, self.spec = sigma, spec
        self._space = space
        self._check = PublicCheck(space, spec)

    # -- the device's declarations ------------------------------------------------------------
    def public_space(self) -> PublicSpace:
        """The states the device accepts (checked on every call of the device)."""
        return self._space

    def sensitivity(self) -> DeviceSensitivity:
        """``1 / sigma`` in l2: every field's noise is ``sigma`` times its sensitivity."""
        if not self.sigma > 0.0:
            raise PrivacyError(f"{self.algorithm} without noise (sigma = 0) has no local guarantee")
        return DeviceSensitivity("l2", 1.0 / self.sigma)

    def noise(
        self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray
    ) -> DeviceNoise:
        """Gaussian, per user and coordinate of :meth:`encode` (``_stds``)."""
        X, _, _ = check_device_inputs(self.spec, contexts, actions)
        return DeviceNoise.gaussian(self._stds(self._public(public, X.shape[0])))

    def encode(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
    ) -> np.ndarray:
        """The clipped payload fields of every user, flattened in payload order, ``(R, m)``."""
        _, fields = self._message(public, contexts, actions, rewards)
        return np.concatenate([f.reshape(f.shape[0], -1) for f in fields.values()], axis=1)

    def _public(self, public: PublicState, R: int) -> PublicState:
        return self._check(public, R)

    def _message(
        self, public: PublicState, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> tuple[PublicState, dict[str, np.ndarray]]:
        """The checked public state and the payload before noise (every clip applied)."""
        X, a, y = check_device_inputs(self.spec, contexts, actions, rewards)
        assert a is not None and y is not None
        pub = self._public(public, X.shape[0])
        return pub, self._fields(pub, X, a, y)

    def _fields(
        self, pub: PublicState, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _stds(self, pub: PublicState) -> np.ndarray:
        raise NotImplementedError

    def _add_noise(
        self, pub: PublicState, fields: dict[str, np.ndarray], rng: np.random.Generator
    ) -> None:
        raise NotImplementedError

    def _choose(
        self, pub: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        raise NotImplementedError

    # -- the round ----------------------------------------------------------------------------
    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        X, _, _ = check_device_inputs(self.spec, contexts, bound=False)
        return self._choose(self._public(public, X.shape[0]), X, rng)

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        pub, fields = self._message(public, contexts, actions, rewards)
        self._add_noise(pub, fields, rng)
        return PrivatizedMessage(fields, self.mechanism)
