"""One bad report cannot stop a shuffle deployment: the server applies a shuffled batch report by
report, quarantines what does not open or parse, and the model advances (SQLite and PostgreSQL)."""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pytest

from privbandits.service.config import parse_service_config
from privbandits.service.sealing import SEAL_OVERHEAD, keygen, seal
from privbandits.service.server.model import ServedModel
from tests.service.conftest import ADMIN, CLIENT, SHUFFLER, auth, make_client, service_raw

nacl_public = pytest.importorskip("nacl.public")

HANNA_ENV = {
    "kind": "finite",
    "d": 2,
    "K": 10,
    "actions": "circle",
    "theta": "sphere",
    "noise": "rademacher",
}


def _raw() -> dict[str, Any]:
    return service_raw(
        "hanna-shuffle",
        horizon=6000,
        seed=2,
        params={"epsilon": 1.0, "delta": 1e-4},
        env=HANNA_ENV,
        max_staleness=0,
    )


def _counts(tc: Any) -> tuple[int, list[int]]:
    model = tc.get("/v1/model", headers=auth(SHUFFLER)).json()
    return int(model["model_version"]), [
        int(c) for c in np.asarray(model["public"]["counts"]["data"]).reshape(-1)
    ]


def _honest_batch(counts: list[int], rng: np.random.Generator) -> list[dict[str, Any]]:
    """One report per slot of the public schedule, in a random order (what a shuffler forwards)."""
    reports = [
        {"action": a, "reward_hat": float(rng.laplace(0.3, 2.0))}
        for a, c in enumerate(counts)
        for _ in range(c)
    ]
    return [reports[i] for i in rng.permutation(len(reports))]


def _garbage_sealed(public_key: str, size: int) -> dict[str, str]:
    """What a malicious device can send through a shuffler: a box sealed to the server's key, of
    exactly the padded size, whose content is not a report (the shuffler cannot tell)."""
    box = nacl_public.SealedBox(nacl_public.PublicKey(base64.b64decode(public_key)))
    return {"sealed": base64.b64encode(box.encrypt(b"\xff" * size)).decode()}


def _poisons(public_key: str, size: int) -> list[tuple[str, Any, str]]:
    """(case, poison report, quarantined field suffix)."""
    return [
        ("sealed garbage", _garbage_sealed(public_key, size), "sealed"),
        (
            "sealed for another key",
            seal({"action": 1, "reward_hat": 0.0}, keygen()[1], size),
            "sealed",
        ),
        ("unknown field", {"action": 1, "reward_hat": 0.0, "epsilon": 100}, "epsilon"),
        ("arm out of range", {"action": 10, "reward_hat": 0.0}, "action"),
        (
            "sealed non-finite",
            seal({"action": 1, "reward_hat": "nan"}, public_key, size),
            "reward_hat",
        ),
        ("beside sealed", {"sealed": "AAAA", "contexts": [1.0]}, "contexts"),
    ]


def _replayed(raw: dict[str, Any], batches: list[list[dict[str, Any]]]) -> ServedModel:
    """An independent server role fed the given (plain, complete) batches one after another."""
    m = ServedModel(parse_service_config(raw))
    for b in batches:
        m.apply_batch([m.parse_report(r) for r in b])
    return m


def test_poison_report_in_a_batch_of_100_is_quarantined_and_the_model_advances(db_url: str) -> None:
    raw = _raw()
    rng = np.random.default_rng(5)
    applied: list[
        list[dict[str, Any]]
    ] = []  # what the server role must have received, batch by batch
    with make_client(raw, db_url) as tc:
        model = tc.get("/v1/model", headers=auth(SHUFFLER)).json()
        size = (
            len(json.dumps({"action": 0, "reward_hat": 0})) + 2 * 23
        )  # two numbers, 24 characters each
        poisons = _poisons(model["public_key"], size)
        i, quarantined = 0, 0
        while True:
            version, counts = _counts(tc)
            n = sum(counts)
            batch = _honest_batch(counts, rng)
            last = n >= 100
            case, poison, field = (
                poisons[-1 if i >= len(poisons) else i] if not last else poisons[0]
            )
            j = int(rng.integers(n))
            expect = [dict(r) for r in batch]
            a = batch[j]["action"]
            expect[j] = {"action": a, "reward_hat": 0.0}  # the slot is answered by a zero report
            batch[j] = poison
            resp = tc.post(
                "/v1/batches",
                json={"batch_id": f"b{i}", "model_version": version, "reports": batch},
                headers=auth(SHUFFLER),
            )
            assert resp.status_code == 200, (case, resp.text)
            ans = resp.json()
            assert (ans["applied"], ans["quarantined"], ans["filled"]) == (n - 1, 1, 1), case
            assert ans["model_version"] == version + 1, case  # the model advances
            assert "message" not in json.dumps(
                ans
            )  # the shuffler learns counts, not which report or why
            quarantined += 1
            # order: the zero report is appended after the kept reports
            applied.append([r for k, r in enumerate(expect) if k != j] + [expect[j]])
            i += 1
            if last:
                break
        status = tc.get("/v1/status", headers=auth(ADMIN)).json()
        assert status["quarantined"]["reports"] == quarantined
        assert status["model_version"] == i
        exp = tc.get("/v1/admin/export", headers=auth(ADMIN)).json()
        assert [q["index"] for q in exp["quarantine"]] == [
            e["body"]["quarantined"][0]["index"] for e in exp["events"]
        ]
        assert exp["quarantine"][0]["field"].endswith(".sealed")
        digest = exp["digest"]
        assert n >= 100
    assert (
        _replayed(raw, applied).digest() == digest
    )  # exactly the n - 1 good reports and one zero report
    with make_client(raw, db_url) as tc:  # restart: the quarantine is part of the durable state
        status = tc.get("/v1/status", headers=auth(ADMIN)).json()
        assert status["quarantined"]["reports"] == quarantined
        assert tc.get("/v1/admin/export", headers=auth(ADMIN)).json()["digest"] == digest


def test_each_poison_kind_is_quarantined_with_its_field() -> None:
    raw = _raw()
    rng = np.random.default_rng(1)
    with make_client(raw) as tc:
        model = tc.get("/v1/model", headers=auth(SHUFFLER)).json()
        size = len(json.dumps({"action": 0, "reward_hat": 0})) + 2 * 23
        for i, (case, poison, _) in enumerate(_poisons(model["public_key"], size)):
            version, counts = _counts(tc)
            batch = _honest_batch(counts, rng)
            batch[0] = poison
            ans = tc.post(
                "/v1/batches",
                json={"batch_id": f"k{i}", "model_version": version, "reports": batch},
                headers=auth(SHUFFLER),
            ).json()
            assert ans["quarantined"] == 1, (case, ans)
        exp = tc.get("/v1/admin/export", headers=auth(ADMIN)).json()
        fields = [q["field"] for q in exp["quarantine"]]
        assert fields == [f"reports[0].{f}" for _, _, f in _poisons(model["public_key"], size)], (
            fields
        )
        assert SEAL_OVERHEAD == 48


def test_a_report_beyond_its_actions_slots_is_quarantined_and_the_slot_filled() -> None:
    """A (lying) device reports an action it was not assigned: one action has a report too many and
    another one too few; the extra report is quarantined, the missing slot gets a zero report."""
    raw = _raw()
    with make_client(raw) as tc:
        version, counts = _counts(tc)
        batch = _honest_batch(counts, np.random.default_rng(2))
        used = [a for a, c in enumerate(counts) if c]
        k = next(i for i, r in enumerate(batch) if r["action"] == used[0])
        batch[k] = {"action": used[1], "reward_hat": 0.5}
        ans = tc.post(
            "/v1/batches",
            json={"batch_id": "lie", "model_version": version, "reports": batch},
            headers=auth(SHUFFLER),
        ).json()
        assert (ans["applied"], ans["quarantined"], ans["filled"]) == (sum(counts) - 1, 1, 1)
        q = tc.get("/v1/admin/export", headers=auth(ADMIN)).json()["quarantine"][0]
        assert q["field"].endswith(".action") and "one report too many" in q["message"]


def test_a_batch_of_the_wrong_size_is_refused_whole() -> None:
    with make_client(_raw()) as tc:
        version, counts = _counts(tc)
        batch = _honest_batch(counts, np.random.default_rng(3))
        for reports in (batch[:-1], [*batch, batch[0]]):
            resp = tc.post(
                "/v1/batches",
                json={"batch_id": f"w{len(reports)}", "model_version": version, "reports": reports},
                headers=auth(SHUFFLER),
            )
            assert resp.status_code == 422 and resp.json()["error"]["field"] == "reports", resp.text
        assert tc.get("/v1/status", headers=auth(ADMIN)).json()["model_version"] == 0
        assert tc.post(
            "/v1/batches",
            json={"batch_id": "ok", "model_version": version, "reports": batch},
            headers=auth(SHUFFLER),
        ).json()["applied"] == len(batch)
        assert CLIENT  # the client token is not used by batches
