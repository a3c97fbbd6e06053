"""Simulated users through the service give the trajectory of ``simulate(..., engine="reference")``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from privbandits.algorithms import make
from privbandits.experiments.units import build_env
from privbandits.service.config import parse_service_config
from privbandits.service.device.simulate import simulate_users
from privbandits.service.server.app import create_app
from privbandits.service.server.store import open_store
from privbandits.simulate import simulate
from tests.service.conftest import (
    ADMIN,
    CLIENT,
    CLIENT2,
    InThreadServer,
    auth,
    service_raw,
    tokens,
)


def _reference(raw: dict[str, Any], rounds: int) -> Any:
    cfg = parse_service_config(raw)
    alg = make(cfg.algorithm, **cfg.params)
    res = simulate(
        alg,
        build_env(cfg.env),
        cfg.horizon,
        1,
        seed=cfg.seed,
        engine="reference",
        checkpoints=list(range(1, rounds + 1)) + [cfg.horizon],
    )
    return res, alg


@pytest.fixture
def loopback_server(tmp_path: Any) -> Iterator[Any]:
    """Start an in-process uvicorn server on 127.0.0.1 for a configuration."""
    servers: list[InThreadServer] = []

    def start(raw: dict[str, Any]) -> str:
        app = create_app(parse_service_config(raw), open_store(str(tmp_path / "eq.db")), tokens())
        servers.append(InThreadServer(app))
        return servers[-1].url

    yield start
    for served in servers:
        served.stop()


@pytest.mark.parametrize("algorithm", ["ldp-sgd", "ldp-ols"])
def test_local_dp_over_loopback_http_equals_reference(algorithm: str, loopback_server: Any) -> None:
    rounds = 40
    raw = service_raw(algorithm, horizon=rounds, seed=11)
    url = loopback_server(raw)
    with httpx.Client(timeout=10) as http:
        run = simulate_users(url, [CLIENT, CLIENT2], seed=11, rounds=rounds, http=http)
        public = http.get(url + "/v1/model", headers=auth(CLIENT)).json()["public"]
    ref, alg = _reference(raw, rounds)
    assert np.array_equal(np.cumsum(run.regret), ref.regret[0, :rounds])
    assert np.array_equal(np.cumsum(run.reward), ref.reward[0, :rounds])
    theta = np.array(public["theta"]["data"])
    assert np.array_equal(theta, np.asarray(alg.server.public_state()["theta"]))
    assert run.last_answer["model_version"] == rounds


@pytest.mark.parametrize(
    ("algorithm", "env", "rounds"),
    [
        ("chen-ldp", None, 40),  # numpy roles: the report format is read off a probe run
        (
            "hanna-local",
            {"kind": "finite", "d": 2, "K": 10, "actions": "circle", "theta": "sphere"},
            300,
        ),
    ],
)
def test_local_dp_numpy_roles_equal_reference(
    algorithm: str, env: Any, rounds: int, loopback_server: Any
) -> None:
    raw = service_raw(algorithm, horizon=rounds, seed=8, env=env, params={"epsilon": 1.0})
    url = loopback_server(raw)
    with httpx.Client(timeout=10) as http:
        run = simulate_users(url, [CLIENT], seed=8, rounds=rounds, http=http)
    ref, _ = _reference(raw, rounds)
    assert np.array_equal(np.cumsum(run.regret), ref.regret[0, :rounds])


@pytest.mark.parametrize("algorithm", ["linucb", "squarecb-jdp"])
def test_trusted_curator_equals_reference(algorithm: str, loopback_server: Any) -> None:
    rounds = 40
    raw = service_raw(algorithm, horizon=rounds, seed=5)
    url = loopback_server(raw)
    with httpx.Client(timeout=10) as http:
        run = simulate_users(url, [CLIENT], seed=5, rounds=rounds, http=http)
        export = http.get(url + "/v1/admin/export", headers=auth(ADMIN)).json()
    ref, _ = _reference(raw, rounds)
    assert np.array_equal(np.cumsum(run.regret), ref.regret[0, :rounds])
    kinds = [e["kind"] for e in export["events"]]
    assert kinds == ["select", "raw"] * rounds
