"""The device does not trust the server: it pins its own guarantee, checks the public state it
downloads through the round protocol, and checks the user's own inputs before anything is sent."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from privbandits.core.errors import PrivbanditsError, ValidationError
from privbandits.core.messages import PublicState
from privbandits.core.public_space import PublicStateError
from privbandits.service.device import DeviceClient, ModelSnapshot, Pin
from tests.service.conftest import ADMIN, CLIENT, auth, make_client, service_raw

X = np.eye(4, 3) * 0.5


@pytest.fixture(scope="module")
def served() -> Any:
    """One in-process server per configuration for the whole module (they are slow to start)."""
    open_: dict[tuple[str, float], Any] = {}

    def get(algorithm: str, epsilon: float = 1.0) -> Any:
        if (algorithm, epsilon) not in open_:
            params = {"epsilon": epsilon} if algorithm != "linucb" else {}
            tc = make_client(service_raw(algorithm, horizon=40, params=params))
            open_[(algorithm, epsilon)] = tc.__enter__()
        return open_[(algorithm, epsilon)]

    yield get
    for tc in open_.values():
        tc.__exit__(None, None, None)


def _events(tc: Any) -> int:
    return len(tc.get("/v1/admin/export", headers=auth(ADMIN)).json()["events"])


@pytest.mark.parametrize(
    ("pin", "message"),
    [
        (Pin(epsilon=0.5), "weaker than the pinned epsilon=0.5"),
        (Pin(algorithm="ldp-ols"), "pinned to 'ldp-ols'"),
        (Pin(trust_model="shuffle"), "pinned to the shuffle model"),
    ],
)
def test_a_device_refuses_a_model_weaker_than_its_pin(pin: Pin, message: str, served: Any) -> None:
    tc = served("ldp-sgd")
    before = _events(tc)
    dev = DeviceClient("http://testserver", CLIENT, http=tc, pin=pin)
    model = dev.fetch_model()
    with pytest.raises(ValidationError, match=message):
        dev.report(X, 0, 0.5, model)
    assert _events(tc) == before  # nothing left the device
    ok = DeviceClient(
        "http://testserver",
        CLIENT,
        http=tc,
        pin=Pin(algorithm="ldp-sgd", trust_model="local", epsilon=1.0),
    )
    assert ok.report(X, ok.choose(X, model), 0.5, model)["accepted"] is True


def test_the_pin_is_checked_against_the_devices_own_accounting_not_the_servers_text(
    served: Any,
) -> None:
    """A server that describes a strong guarantee but serves epsilon = 8 is caught: the device
    accounts the served parameters itself."""
    tc = served("ldp-sgd", 8.0)
    dev = DeviceClient("http://testserver", CLIENT, http=tc, pin=Pin(epsilon=1.0))
    model = dev.fetch_model()
    lying = ModelSnapshot(
        model.version,
        model.public,
        {
            **model.info,
            "guarantee": {
                **model.info["guarantee"],
                "epsilon": 1.0,
                "text": "(1)-DP [local, per user]",
            },
        },
    )
    with pytest.raises(ValidationError, match="epsilon=8"):
        dev.privatize(X, 0, 0.5, lying)


def test_a_device_pinned_to_local_dp_never_sends_raw_contexts_to_a_curator(served: Any) -> None:
    tc = served("linucb")
    dev = DeviceClient("http://testserver", CLIENT, http=tc, pin=Pin(trust_model="local"))
    with pytest.raises(ValidationError, match="pinned to the local model"):
        dev.select(X)
    assert _events(tc) == 0
    trusting = DeviceClient("http://testserver", CLIENT, http=tc, pin=Pin(trust_model="none"))
    if trusting.algorithm.trust_model == "none":
        assert trusting.select(X)[1]


@pytest.mark.parametrize("algorithm", ["ldp-sgd", "ldp-ols"])
def test_a_public_state_outside_the_declared_space_is_refused_on_the_device(
    algorithm: str, served: Any
) -> None:
    tc = served(algorithm)
    before = _events(tc)
    dev = DeviceClient("http://testserver", CLIENT, http=tc)
    model = dev.fetch_model()
    for bad in (
        {
            k: np.full(np.shape(v), np.nan) for k, v in model.public.items()
        },  # non-finite / wrong kind
        {
            k: np.zeros((2, *np.shape(v)[1:]), dtype=np.asarray(v).dtype)
            for k, v in model.public.items()
        },
        {},
    ):  # wrong replication count, missing fields
        tampered = ModelSnapshot(model.version, PublicState(bad), model.info)
        with pytest.raises(PublicStateError):
            dev.choose(X, tampered)
        with pytest.raises(PublicStateError):
            dev.privatize(X, 0, 0.5, tampered)
    assert _events(tc) == before


@pytest.mark.parametrize(
    ("contexts", "action", "reward"),
    [
        (np.eye(4, 4) * 0.5, 0, 0.5),  # d + 1 features
        (np.eye(3, 3) * 0.5, 0, 0.5),  # K - 1 arms
        (X, 4, 0.5),  # action K
        (X, -1, 0.5),  # negative action
        (X, 0, float("nan")),  # non-finite reward
        (X * np.inf, 0, 0.5),  # non-finite contexts
    ],
)
def test_malformed_inputs_are_refused_on_the_device(
    contexts: np.ndarray, action: int, reward: float, served: Any
) -> None:
    tc = served("ldp-ols")
    before = _events(tc)
    dev = DeviceClient("http://testserver", CLIENT, http=tc)
    model = dev.fetch_model()
    with pytest.raises(PrivbanditsError):
        dev.privatize(contexts, action, reward, model)
    assert _events(tc) == before
