"""Shuffled (sealed) batches, restart from the database, status / metrics, configuration errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privbandits.algorithms import make
from privbandits.core.errors import ConfigError
from privbandits.core.messages import ShuffledBatch
from privbandits.experiments.units import build_env
from privbandits.service.auth import parse_tokens
from privbandits.service.config import parse_service_config
from privbandits.service.sealing import SealingError, keygen, open_sealed, seal
from privbandits.service.server.store import StoreError, open_store
from privbandits.simulate import simulate
from tests.service.conftest import ADMIN, CLIENT, SHUFFLER, auth, make_client, service_raw

HANNA_ENV = {
    "kind": "finite",
    "d": 2,
    "K": 10,
    "actions": "circle",
    "theta": "sphere",
    "noise": "rademacher",
}


def _hanna_raw() -> dict[str, Any]:
    return service_raw(
        "hanna-shuffle",
        horizon=6000,
        seed=2,
        params={"epsilon": 1.0, "delta": 1e-4},
        env=HANNA_ENV,
        max_staleness=0,
    )


def _reference_batches(raw: dict[str, Any]) -> tuple[list[ShuffledBatch], Any]:
    """The batches the reference driver's shuffler releases to the server, and the final public state."""
    cfg = parse_service_config(raw)
    alg = make(cfg.algorithm, **cfg.params)
    env = build_env(cfg.env)
    batches: list[ShuffledBatch] = []
    from privbandits.algorithms.base import ShuffleAlgorithm

    orig_reset = alg.reset

    def reset(*args: Any) -> None:
        orig_reset(*args)
        assert isinstance(alg, ShuffleAlgorithm)
        recv = alg.server.receive_batch

        def capture(t: int, batch: ShuffledBatch) -> None:
            batches.append(batch)
            recv(t, batch)

        alg.server.receive_batch = capture  # type: ignore[method-assign]

    alg.reset = reset  # type: ignore[method-assign]
    simulate(alg, env, cfg.horizon, 1, seed=cfg.seed, engine="reference")
    return batches, alg.server.public_state()


def test_sealing_roundtrip_and_wrong_key() -> None:
    sk, pk = keygen()
    report = {"action": 3, "reward_hat": -0.25}
    sealed = seal(report, pk)
    assert json.dumps(report) not in sealed["sealed"]
    assert open_sealed(sealed["sealed"], sk) == report
    other_sk, _ = keygen()
    with pytest.raises(SealingError, match="does not open with the server's key"):
        open_sealed(sealed["sealed"], other_sk)
    with pytest.raises(SealingError, match="not valid base64"):
        open_sealed("%%%", sk)


def test_shuffled_sealed_batches_give_the_reference_model() -> None:
    raw = _hanna_raw()
    batches, ref_public = _reference_batches(raw)
    used = [b for b in batches if b.n_users > 0 and (np.asarray(b["action"]) >= 0).any()]
    assert len(used) >= 2
    with make_client(raw) as tc:
        model = tc.get("/v1/model", headers=auth(SHUFFLER)).json()
        assert model["report"]["fields"] == {
            "action": {"shape": [], "dtype": "int64"},
            "reward_hat": {"shape": [], "dtype": "float64"},
        }
        resp = tc.post(
            "/v1/reports",
            json={"model_version": 0, "report": {}},
            headers={**auth(CLIENT), "Idempotency-Key": "x"},
        )
        assert resp.status_code == 409 and "shuffled batches" in resp.json()["error"]["message"]
        for i, b in enumerate(used):
            acts, vals = np.asarray(b["action"])[0], np.asarray(b["reward_hat"])[0]
            acts, vals = acts[acts >= 0], vals[acts >= 0]  # the shuffler forwards no padding slots
            reports = [
                seal({"action": int(a), "reward_hat": float(v)}, model["public_key"])
                if j % 2 == 0
                else {"action": int(a), "reward_hat": float(v)}
                for j, (a, v) in enumerate(zip(acts, vals))
            ]
            body = {"batch_id": f"b{i}", "model_version": i, "reports": reports}
            if (
                i == 0
            ):  # a client token cannot post batches (poison reports: tests/service/test_poison.py)
                assert tc.post("/v1/batches", json=body, headers=auth(CLIENT)).status_code == 403
            resp = tc.post("/v1/batches", json=body, headers=auth(SHUFFLER))
            assert resp.status_code == 200, resp.text
            again = tc.post("/v1/batches", json=body, headers=auth(SHUFFLER))  # batch_id is the key
            assert again.json() == resp.json()
            assert resp.json()["applied"] == len(reports) and resp.json()["quarantined"] == 0
        public = tc.get("/v1/model", headers=auth(CLIENT)).json()["public"]
        assert tc.get("/v1/status", headers=auth(ADMIN)).json()["model_version"] == len(used)
    for k, v in ref_public.items():
        assert np.array_equal(np.array(public[k]["data"]), np.asarray(v)), k


def test_restart_rebuilds_the_acknowledged_state_and_refuses_a_tampered_database(
    tmp_path: Path,
) -> None:
    from privbandits.service.device.simulate import simulate_users

    db = str(tmp_path / "s.db")
    raw = service_raw("ldp-ols", horizon=50, seed=1)
    with make_client(raw, db) as tc:
        simulate_users("http://testserver", [CLIENT], seed=1, rounds=20, http=tc)
        first = tc.get("/v1/admin/export", headers=auth(ADMIN)).json()
        pub1 = tc.get("/v1/model", headers=auth(CLIENT)).json()["public"]
    with make_client(raw, db) as tc:  # a new process on the same database
        status = tc.get("/v1/status", headers=auth(ADMIN)).json()
        assert status["restored_events"] == 20 and status["model_version"] == 20
        second = tc.get("/v1/admin/export", headers=auth(ADMIN)).json()
        assert second["digest"] == first["digest"] == first["models"][-1]["digest"]
        assert tc.get("/v1/model", headers=auth(CLIENT)).json()["public"] == pub1
    store = open_store(db)
    store._transaction(
        [
            (
                "UPDATE events SET body = replace(body, '\"model_version\":3', '\"model_version\":2') "
                "WHERE seq = 5",
                (),
            ),
            ("DELETE FROM events WHERE seq = 20", ()),
        ]
    )
    store.close()
    with pytest.raises(StoreError, match="the database is inconsistent"):
        make_client(raw, db)
    with pytest.raises(StoreError, match="another configuration"):
        make_client(service_raw("ldp-ols", horizon=51, seed=1), db)


def test_admin_reset_status_and_metrics(tmp_path: Path) -> None:
    from privbandits.service.device.client import DeviceClient

    raw = service_raw("ldp-sgd", horizon=50, simulation=True)
    with make_client(raw, tmp_path / "m.db") as tc:
        dev = DeviceClient("http://testserver", CLIENT, http=tc)
        model = dev.fetch_model()
        X = np.eye(4, 3) * 0.5
        dev.report(X, dev.choose(X, model), 0.1, model)
        dev.post_simulated_rewards([0.5, -0.25])
        status = tc.get("/v1/status", headers=auth(ADMIN)).json()
        assert status["reports_received"] == 1 and status["simulated_rewards"] == {
            "count": 2,
            "recent": [0.5, -0.25],
        }
        assert status["guarantee"]["model"] == "local"
        text = tc.get("/metrics", headers=auth(ADMIN)).text
        assert "privbandits_model_version 1.0" in text
        assert 'privbandits_requests_total{endpoint="/v1/reports",status="200"} 1.0' in text
        resp = tc.post("/v1/admin/reset", json={}, headers=auth(ADMIN))
        assert resp.status_code == 422 and resp.json()["error"]["field"] == "confirm"
        assert (
            tc.post("/v1/admin/reset", json={"confirm": True}, headers=auth(ADMIN)).json()[
                "model_version"
            ]
            == 0
        )
        assert tc.get("/v1/admin/export", headers=auth(ADMIN)).json()["events"] == []


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r["algorithms"].append({"name": "linucb"}), "exactly one [[algorithms]] entry"),
        (lambda r: r.update(grid={"epsilon": [1.0, 2.0]}), "expands to 2 parameter variants"),
        (lambda r: r["service"].update(rate=-1), "service.rate must be a finite number > 0"),
        (lambda r: r["service"].update(colour="red"), "unknown key(s) in [service]: colour"),
        (lambda r: r.update(seeds=[1, 2]), "set service.seed"),
    ],
)
def test_config_errors_name_the_key(mutate: Any, message: str) -> None:
    raw = service_raw("ldp-sgd")
    mutate(raw)
    with pytest.raises(ConfigError) as exc:
        parse_service_config(raw)
    assert message in str(exc.value)


def test_tokens_file_errors() -> None:
    with pytest.raises(ConfigError, match="role: must be one of client, admin, shuffler"):
        parse_tokens({"tokens": [{"role": "root", "token": "x" * 20}]})
    with pytest.raises(ConfigError, match="at least 16 characters"):
        parse_tokens({"tokens": [{"role": "client", "token": "short"}]})
    with pytest.raises(ConfigError, match="exactly one of 'token'"):
        parse_tokens({"tokens": [{"role": "client"}]})
    toks = parse_tokens(
        {"tokens": [{"name": "d", "role": "client", "sha256": "a" * 64, "device_epsilon": 2.0}]}
    )
    assert len(toks) == 1


def test_simulated_rewards_reach_the_status_page() -> None:
    from privbandits.service.device.simulate import simulate_users

    with make_client(service_raw("ldp-sgd", horizon=30, simulation=True)) as tc:
        run = simulate_users(
            "http://testserver", [CLIENT], seed=0, rounds=7, http=tc, post_rewards_every=3
        )
        sim = tc.get("/v1/status", headers=auth(ADMIN)).json()["simulated_rewards"]
    assert sim["count"] == 7 and sim["recent"] == run.reward.tolist()


def test_serve_command_reports_config_errors(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from privbandits.cli import app
    from tests.service.conftest import tokens_toml, toml_text

    raw = service_raw("ldp-sgd")
    raw["algorithms"].append({"name": "linucb"})
    cfg = tmp_path / "two.toml"
    cfg.write_text(toml_text(raw))
    tok = tmp_path / "tokens.toml"
    tok.write_text(tokens_toml())
    res = CliRunner().invoke(app, ["serve", str(cfg), "--tokens", str(tok)])
    assert res.exit_code == 2 and "exactly one [[algorithms]] entry" in res.output
    cfg.write_text(toml_text(service_raw("ldp-sgd")))
    res = CliRunner().invoke(app, ["serve", str(cfg), "--tokens", str(tmp_path / "missing.toml")])
    assert res.exit_code == 2 and "cannot read tokens file" in res.output


def test_multi_round_shuffle_protocols_are_refused_at_start() -> None:
    from privbandits.core.errors import ValidationError
    from privbandits.service.server.model import ServedModel

    env = {"kind": "synthetic", "d": 3, "K": 4, "link": "logistic", "noise": "bernoulli"}
    with pytest.raises(ValidationError, match="multi-round shuffle protocols"):
        ServedModel(parse_service_config(service_raw("shuffle-glm", env=env)))
