"""``privbandits serve --ssl-keyfile/--ssl-certfile`` serves HTTPS; the SDK verifies the certificate."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import httpx
import numpy as np
import pytest

from privbandits.service.device.client import DeviceClient
from tests.service.conftest import CLIENT, ServerProcess, service_raw, tokens_toml, toml_text


@pytest.mark.slow
def test_https_with_a_verified_certificate(tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    (tmp_path / "svc.toml").write_text(toml_text(service_raw("ldp-sgd", horizon=10)))
    (tmp_path / "tokens.toml").write_text(tokens_toml())
    server = ServerProcess(
        tmp_path / "svc.toml", tmp_path / "tokens.toml", str(tmp_path / "s.db"), tls=(key, cert)
    )
    server.start()
    try:
        assert server.url.startswith("https://")
        with pytest.raises(httpx.ConnectError):  # an unverified certificate is refused
            httpx.get(server.url + "/v1/health")
        with httpx.Client(verify=ssl.create_default_context(cafile=str(cert))) as http:
            dev = DeviceClient(server.url, CLIENT, http=http)
            model = dev.fetch_model()
            X = np.eye(4, 3) * 0.5
            assert dev.report(X, dev.choose(X, model), 0.2, model)["model_version"] == 1
        with pytest.raises(httpx.HTTPError):  # plain HTTP is not served
            httpx.get(server.url.replace("https", "http") + "/v1/health", timeout=2.0)
    finally:
        server.stop()
