"""MovieLens-100K environment (Zheng et al.'s official demo): loader errors and construction, on a
small synthetic file in ua.base format (no network)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import privbandits as pb
from privbandits.core.errors import ConfigError, ValidationError
from privbandits.core.rng import make_streams
from privbandits.envs.movielens import load_ratings
from privbandits.experiments.presets import load_preset


def _write(path: Path, n_users: int = 30, n_items: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    M = np.where(rng.random((n_users, n_items)) < 0.6, rng.integers(1, 6, (n_users, n_items)), 0)
    M[0, 0] = 5  # at least one rating
    lines = [
        f"{u + 1}\t{i + 1}\t{M[u, i]}\t{881250949 + u}"
        for u in range(n_users)
        for i in range(n_items)
        if M[u, i]
    ]
    path.write_text("\n".join(lines) + "\n", encoding="latin-1")
    return M.astype(float)


def test_loader_reads_the_rating_matrix(tmp_path: Path) -> None:
    M = _write(tmp_path / "ua.base")
    got = load_ratings(tmp_path)  # a directory holding ua.base works too
    np.testing.assert_array_equal(got[:, : M.shape[1]], M[: got.shape[0]])


def test_missing_and_malformed_files_name_the_expected_format(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="ua.base.*does not exist"):
        load_ratings(tmp_path / "nope" / "ua.base")
    bad = tmp_path / "ua.base"
    bad.write_text("1\t2\t3\n", encoding="latin-1")
    with pytest.raises(
        ValidationError, match="line 1 is malformed.*user<TAB>item<TAB>rating<TAB>timestamp"
    ):
        load_ratings(bad)
    bad.write_text("1\t2\t7\t0\n", encoding="latin-1")
    with pytest.raises(ValidationError, match="rating 7"):
        load_ratings(bad)
    bad.write_text("a\tb\tc\td\n", encoding="latin-1")
    with pytest.raises(ValidationError, match="malformed"):
        load_ratings(bad)


def test_environment_follows_the_official_construction(tmp_path: Path) -> None:
    # spec section 6.2: normalized ratings 0.4 (r - 2.5) are the exact rewards at full rank, the
    # features have norm <= 1 and theta* = s
    M = _write(tmp_path / "ua.base", n_items=8)
    env = pb.MovieLensEnv(str(tmp_path / "ua.base"), num_actions=6, rank=6)
    keep = M[:, :6][(M[:, :6] > 0).any(axis=1)]
    np.testing.assert_allclose(
        np.sort(env._user_means.ravel()), np.sort((0.4 * (keep - 2.5)).ravel()), atol=1e-10
    )
    assert np.linalg.norm(env.features, axis=2).max() <= 1 + 1e-12
    spec = env.reset(3, make_streams(0), 100)
    assert (spec.d, spec.K) == (6, 6) and spec.reward_range == (-1.0, 1.0)
    assert spec.theta_bound == pytest.approx(np.linalg.norm(env.s)) and spec.theta_bound > 1
    X = env.next_round()
    r, reg = env.step(np.zeros(3, dtype=np.int64))
    np.testing.assert_allclose(r, X[:, 0] @ env.s)
    assert np.all(reg >= 0) and np.all(
        np.isclose(reg / 0.4, np.round(reg / 0.4))
    )  # multiples of 0.4
    with pytest.raises(ValidationError, match="rank"):
        pb.MovieLensEnv(str(tmp_path / "ua.base"), num_actions=6, rank=7)
    with pytest.raises(ValidationError, match="num_actions=20"):
        pb.MovieLensEnv(str(tmp_path / "ua.base"), num_actions=20)


@pytest.mark.filterwarnings("ignore::privbandits.algorithms.calibration.CalibrationWarning")
def test_e5_runs_in_both_modes_on_a_small_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ml-100k").mkdir()
    _write(tmp_path / "ml-100k" / "ua.base", n_items=20)
    monkeypatch.chdir(tmp_path)
    cfg = load_preset("zheng2020-e5")
    assert [a.label for a in cfg.algorithms] == ["LDP-UCB (paper)", "LDP-UCB (official code)"]
    env = pb.MovieLensEnv("ml-100k")
    for entry in cfg.algorithms:
        params = {**entry.variants[0][0]} if entry.variants else {}
        alg = pb.make(entry.name, **params)
        res = pb.simulate(alg, env, 300, replications=2, seed=0)
        assert np.all(np.isfinite(res.regret)) and res.guarantee.is_private
    monkeypatch.chdir(tmp_path / "ml-100k")
    with pytest.raises((ConfigError, ValidationError), match="ua.base"):
        load_preset("zheng2020-e5")
