"""``make-tokens``, ``serve-shuffler`` and ``simulate-clients`` on the command line."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.service.auth import load_tokens
from privbandits.service.shuffler.cli import shuffler_secret
from privbandits.service.tools_cli import client_secrets
from tests.service.conftest import make_client, service_raw, tokens_toml, toml_text

runner = CliRunner(env={"COLUMNS": "200"})


def test_make_tokens_writes_a_valid_tokens_file(tmp_path: Path) -> None:
    out = tmp_path / "tokens.toml"
    res = runner.invoke(app, ["make-tokens", str(out), "--clients", "5"])
    assert res.exit_code == 0, res.output
    entries = tomllib.loads(out.read_text())["tokens"]
    assert [e["role"] for e in entries].count("client") == 5 and len(entries) == 8
    assert [e["role"] for e in entries].count("operator") == 1
    assert len({e["token"] for e in entries}) == 8  # fresh random secrets
    assert len(load_tokens(out)) == 8 and len(client_secrets(out)) == 5
    assert shuffler_secret(out) == next(e["token"] for e in entries if e["role"] == "shuffler")
    assert out.stat().st_mode & 0o077 == 0  # readable by its owner only
    again = runner.invoke(app, ["make-tokens", str(out)])
    assert again.exit_code != 0 and "--force" in again.output
    bad = runner.invoke(app, ["make-tokens", str(tmp_path / "x.toml"), "--clients", "-1"])
    assert bad.exit_code != 0 and "--clients" in bad.output


def test_serve_shuffler_refuses_a_local_model_and_a_missing_shuffler_token(tmp_path: Path) -> None:
    tok = tmp_path / "tokens.toml"
    tok.write_text(tokens_toml())
    local = tmp_path / "local.toml"
    local.write_text(toml_text(service_raw("ldp-ols")))
    res = runner.invoke(
        app, ["serve-shuffler", str(local), "--server", "http://127.0.0.1:1", "--tokens", str(tok)]
    )
    assert res.exit_code != 0 and "shuffle-model algorithms only" in res.output
    hashed = tmp_path / "hashed.toml"
    hashed.write_text('[[tokens]]\nrole = "shuffler"\nsha256 = "' + "0" * 64 + '"\n')
    with pytest.raises(Exception, match='role = "shuffler"'):
        shuffler_secret(hashed)


def test_simulate_clients_needs_the_shuffler_for_a_shuffle_model(tmp_path: Path) -> None:
    from privbandits.service.device.simulate import simulate_clients
    from tests.service.conftest import CLIENT

    raw = service_raw(
        "hanna-shuffle", horizon=300, env={"kind": "finite", "d": 2, "K": 3, "noise_scale": 0.3}
    )
    with make_client(raw) as tc, pytest.raises(Exception, match="shuffler"):
        simulate_clients("http://testserver", [CLIENT], 3, workers=1, http=tc)


@pytest.mark.parametrize(
    ("name", "trust_model"), [("serve-ldp.toml", "local"), ("serve-shuffle.toml", "shuffle")]
)
def test_readme_example_configurations_are_valid(name: str, trust_model: str) -> None:
    from privbandits.algorithms.registry import get
    from privbandits.service.config import load_service_config

    cfg = load_service_config(Path(__file__).resolve().parents[2] / "examples" / name)
    assert get(cfg.algorithm).trust_model == trust_model
