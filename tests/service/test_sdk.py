"""The client SDK sends exactly the local randomizer's output, and retries with the same key."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import numpy as np

from privbandits.service.device.client import DeviceClient, local_algorithm
from tests.service.conftest import ADMIN, CLIENT, auth, make_client, service_raw


class Recorder:
    """An HTTP client that records every request and can drop the first ``fail`` POSTs' answers."""

    def __init__(self, inner: Any, fail_after_send: int = 0) -> None:
        self.inner, self.fail = inner, fail_after_send
        self.sent: list[tuple[str, str, Any, dict[str, str]]] = []

    def request(self, method: str, url: str, json: Any = None, headers: Any = None) -> Any:
        self.sent.append((method, url, copy.deepcopy(json), dict(headers or {})))
        resp = self.inner.request(method, url, json=json, headers=headers)
        if method == "POST" and self.fail > 0:
            self.fail -= 1  # the server processed it, the answer is lost on the way back
            raise httpx.ReadTimeout("answer lost")
        return resp


def test_sdk_sends_only_the_randomizer_output() -> None:
    with make_client(service_raw("ldp-ols", horizon=30)) as tc:
        rec = Recorder(tc)
        seed_policy, seed_client = 21, 22
        dev = DeviceClient(
            "http://testserver",
            CLIENT,
            http=rec,
            rng_policy=np.random.default_rng(seed_policy),
            rng_client=np.random.default_rng(seed_client),
        )
        # an independent copy of the same Client code and noise stream, to recompute each report
        shadow = local_algorithm(dev.fetch_model().info)
        shadow_rng = np.random.default_rng(seed_client)
        env_rng = np.random.default_rng(5)
        raw_values: list[np.ndarray] = []
        expected: list[dict[str, Any]] = []
        for _ in range(5):
            model = dev.fetch_model()
            X = env_rng.normal(size=(4, 3))
            X /= 1.01 * np.linalg.norm(X, axis=1, keepdims=True)
            r = float(env_rng.uniform(-1, 1))
            a = dev.choose(X, model)
            dev.report(X, a, r, model)
            msg = shadow.client.randomize(
                model.version, model.public, X[None], np.array([a]), np.array([r]), shadow_rng
            )
            expected.append(
                {
                    "model_version": model.version,
                    "report": {k: np.asarray(v)[0].tolist() for k, v in msg.payload.items()},
                }
            )
            raw_values += [X.ravel(), np.array([r, a])]
        posts = [(url, body, h) for m, url, body, h in rec.sent if m == "POST"]
        assert [url for url, _, _ in posts] == ["http://testserver/v1/reports"] * 5
        assert [body for _, body, _ in posts] == expected  # exactly the randomizer's output
        for _, body, headers in posts:
            assert set(body) == {"model_version", "report"}
            assert set(headers) == {"Authorization", "Idempotency-Key"}
            sent = np.concatenate([np.ravel(v) for v in body["report"].values()])
            for raw in raw_values:  # no raw context entry or reward appears in what was sent
                assert not np.isin(raw[raw != 0], sent).any()
        gets = [body for m, _, body, _ in rec.sent if m == "GET"]
        assert all(b is None for b in gets)


def test_lost_answer_is_retried_with_the_same_key_and_counted_once() -> None:
    with make_client(service_raw("ldp-sgd", horizon=30)) as tc:
        rec = Recorder(tc, fail_after_send=2)
        dev = DeviceClient("http://testserver", CLIENT, http=rec, backoff=0.0)
        model = dev.fetch_model()
        X = np.eye(4, 3) * 0.5
        ans = dev.report(X, dev.choose(X, model), 0.3, model)
        posts = [(body, h["Idempotency-Key"]) for m, _, body, h in rec.sent if m == "POST"]
        assert (
            len(posts) == 3
            and len({k for _, k in posts}) == 1
            and all(b == posts[0][0] for b, _ in posts)
        )
        assert ans["model_version"] == 1
        status = tc.get("/v1/status", headers=auth(ADMIN)).json()
        assert status["reports_received"] == 1 and status["replayed_requests"] == 2
        assert len(tc.get("/v1/admin/export", headers=auth(ADMIN)).json()["events"]) == 1
