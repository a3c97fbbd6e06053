"""Golden trajectories: exact regret of every registered algorithm under every driver it supports.

For each registered algorithm, its first declared ``test_params`` entry and each of its
``test_envs``, a small fixed run (seed 0, T = 200, R = 2) is compared with the stored values in
``tests/golden/trajectories.json`` (relative tolerance 1e-9).  Any change of an algorithm's
trajectory - a constant, a step size, the order in which random streams are consumed, a driver's
bookkeeping - fails here, deliberately.  When a change is intended, regenerate and review the diff::

    python -m tests.test_golden --regenerate

"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import privbandits as pb
from privbandits.algorithms import available
from privbandits.engine.aggregate import supports_aggregate
from privbandits.engine.compiled import supports_compiled

GOLDEN = Path(__file__).parent / "golden" / "trajectories.json"
T, R, SEED = 200, 2, 0


def make_env(kind: str, cls: type) -> Any:
    """The small environment of kind ``kind`` suited to the algorithm class ``cls``."""
    links = cls.links
    link = "identity" if ("*" in links or "identity" in links) else links[0]
    noise = {
        "identity": "gaussian",
        "logistic": "bernoulli",
        "probit": "bernoulli",
        "poisson": "poisson",
    }[link]
    if kind == "finite":
        return pb.FiniteActionEnv(
            d=2, K=5, actions="sphere", link=link, noise=noise, noise_scale=0.1
        )
    if kind == "convex":
        return pb.ConvexLossEnv(d=2, loss="quadratic")
    if kind == "multi":
        return pb.SyntheticEnv(d=2, K=3, setting="multi", link=link, noise=noise, noise_scale=0.1)
    return pb.SyntheticEnv(d=2, K=4, link=link, noise=noise, noise_scale=0.1)


def cases() -> list[tuple[str, str, str]]:
    """(algorithm, env kind, engine) of every golden trajectory."""
    out = []
    for name, cls in available().items():
        kinds = list(getattr(cls, "test_envs", ("synthetic",)))
        if "synthetic" in kinds and "multi" in cls.settings:
            kinds.append("multi")
        for kind in kinds:
            if kind == "synthetic" and "single" not in cls.settings:
                continue
            for engine in ("reference", "compiled", "aggregate"):
                out.append((name, kind, engine))
    return out


def run_case(name: str, kind: str, engine: str) -> list[float] | None:
    """Final cumulative regret at every checkpoint (flattened), or None if the engine does not apply."""
    cls = available()[name]
    params = dict(cls.test_params[0]) if cls.test_params else {}
    alg = cls(**params)
    env = make_env(kind, cls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = env.reset(R, pb.core.make_streams(SEED), T)
        alg.reset(spec, R, pb.core.make_streams(SEED))
        ok = {
            "reference": True,
            "compiled": supports_compiled(alg),
            "aggregate": supports_aggregate(alg, env),
        }
        if not ok[engine]:
            return None
        res = pb.simulate(
            alg, env, horizon=T, replications=R, seed=SEED, checkpoints=10, engine=engine
        )
    return [float(v) for v in np.concatenate([res.regret.ravel(), res.reward.ravel()])]


def _key(case: tuple[str, str, str]) -> str:
    return "/".join(case)


@pytest.mark.parametrize("case", cases(), ids=_key)
def test_golden_trajectory(case: tuple[str, str, str]) -> None:
    stored = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    got = run_case(*case)
    if got is None:
        pytest.skip(f"engine {case[2]!r} does not apply")
    if _key(case) not in stored:
        pytest.fail(
            f"no golden trajectory for {_key(case)}: run `python -m tests.test_golden --regenerate`"
        )
    np.testing.assert_allclose(got, stored[_key(case)], rtol=1e-9, atol=1e-9)


def regenerate() -> None:
    """Recompute every golden trajectory and write the JSON file."""
    out = {}
    for case in cases():
        got = run_case(*case)
        if got is not None:
            out[_key(case)] = got
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(out, indent=0, sort_keys=True) + "\n")
    print(f"wrote {len(out)} golden trajectories to {GOLDEN}")


if __name__ == "__main__":
    if "--regenerate" not in sys.argv:
        sys.exit("usage: python -m tests.test_golden --regenerate")
    regenerate()
