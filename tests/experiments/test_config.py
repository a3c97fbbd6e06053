"""The TOML experiment schema: every error is caught at load time and names its key and range."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.core.errors import ConfigError, PrivbanditsError
from privbandits.experiments.config import Overrides, load_config, parse_config, parse_grid_option
from privbandits.experiments.units import WorkUnit, canonical_json

from .conftest import SMALL


def _cfg(text: str, **kw: object):
    return parse_config(textwrap.dedent(text), source="t.toml", **kw)


def _err(text: str, **kw: object) -> str:
    with pytest.raises(ConfigError) as info:
        _cfg(text, **kw)
    return str(info.value)


BASE = """
horizon = 100
[env]
d = 3
K = 4
"""


def test_small_config_expands_to_units() -> None:
    cfg = parse_config(SMALL, source="small.toml")
    units = cfg.units()
    assert cfg.name == "small" and cfg.horizon == 300 and cfg.seeds == (0, 1)
    assert [(u.label, u.seed) for u in units] == [
        ("LinUCB", 0),
        ("LinUCB", 1),
        ("uniform", 0),
        ("uniform", 1),
    ]
    assert len({u.key() for u in units}) == 4
    assert all(u.checkpoints == {"log": 10, "every": None} for u in units)


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        (
            "horizn = 100\n[env]\nd = 3\nK = 4\n[[algorithms]]\nname = 'linucb'\n",
            [
                "unknown key 'horizn' in the top level",
                "did you mean 'horizon'",
                "allowed: algorithms",
            ],
        ),
        (
            BASE + "noise_scal = 0.1\n[[algorithms]]\nname = 'linucb'\n",
            ["unknown key 'noise_scal' in [env]", "did you mean 'noise_scale'"],
        ),
        (
            BASE + "[[algorithms]]\nname = 'linucb'\nparams = { lamda = 1.0 }\n",
            [
                "unknown parameter 'lamda' in algorithms[0].params",
                "did you mean 'lam'",
                "allowed: alpha, delta, lam, sigma",
            ],
        ),
        (
            BASE + "[[algorithms]]\nname = 'linucb'\nparms = { lam = 1.0 }\n",
            ["unknown key 'parms' in algorithms[0]", "did you mean 'params'"],
        ),
        (
            BASE + "[[algorithms]]\nname = 'linucb'\n[plot]\nfacett = 'x'\n",
            ["unknown key 'facett' in [plot]", "did you mean 'facet'"],
        ),
        (
            "checkpoints = { log = 5, evry = 10 }\n" + BASE + "[[algorithms]]\nname = 'linucb'\n",
            ["unknown key 'evry' in checkpoints", "did you mean 'every'"],
        ),
    ],
)
def test_typos_are_rejected_with_suggestion(text: str, needles: list[str]) -> None:
    msg = _err(text)
    for needle in needles:
        assert needle in msg, msg


def test_typo_in_quick_is_rejected_even_without_quick() -> None:
    msg = _err(BASE + "[[algorithms]]\nname = 'linucb'\n[quick]\nhorizonn = 10\n")
    assert "unknown key 'horizonn' in [quick]" in msg and "did you mean 'horizon'" in msg


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            BASE + "[grid]\nepsilon = [1.0, 0]\n[[algorithms]]\nname = 'linucb'\n",
            "t.toml: grid.epsilon[1] = 0: epsilon must lie in (0, inf)",
        ),
        (
            BASE
            + "[[algorithms]]\nname = 'uniform'\n[[algorithms]]\nname = 'linucb'\nparams = { delta = 1.5 }\n",
            "t.toml: algorithms[1].params.delta = 1.5: delta must lie in (0, 1)",
        ),
        (
            BASE + "[[algorithms]]\nname = 'linucb'\ngrid = { delta = [0.1, 1.0] }\n",
            "algorithms[0].grid.delta[1] = 1.0: delta must lie in (0, 1)",
        ),
        (
            BASE + "[grid]\ndelta = [0.0]\n[[algorithms]]\nname = 'linucb'\n",
            "grid.delta[0] = 0.0: delta must lie in (0, 1)",
        ),
        (
            BASE + "[grid]\nepsilon = [inf]\n[[algorithms]]\nname = 'linucb'\n",
            "grid.epsilon[0] = inf: epsilon must be finite",
        ),
    ],
)
def test_privacy_parameters_checked_centrally(text: str, needle: str) -> None:
    assert needle in _err(text)


def test_epsilon_in_algorithm_params_checked(fake_private: str) -> None:
    msg = _err(BASE + f"[[algorithms]]\nname = '{fake_private}'\nparams = {{ epsilon = 0 }}\n")
    assert "algorithms[0].params.epsilon = 0: epsilon must lie in (0, inf)" in msg
    msg = _err(
        BASE + f"[[algorithms]]\nname = '{fake_private}'\nparams = {{ target_delta = 2.0 }}\n"
    )
    assert "unknown parameter 'target_delta'" in msg  # unknown keys are reported before ranges


def test_privacy_suffix_keys_checked_in_env() -> None:
    # keys ending in _delta are privacy parameters wherever they appear (here an unknown env key is
    # reported first, proving the check order: names before values)
    assert "unknown key 'x_delta' in [env]" in _err(
        BASE + "x_delta = 3\n[[algorithms]]\nname = 'linucb'\n"
    )


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            "horizon = 0\n[env]\nd = 3\nK = 4\n[[algorithms]]\nname = 'linucb'\n",
            "horizon = 0: horizon must be an integer in [1, inf]",
        ),
        (
            "replications = 0\n" + BASE + "[[algorithms]]\nname = 'linucb'\n",
            "replications = 0: replications must be an integer in [1, inf]",
        ),
        (
            "seeds = [0, -1]\n" + BASE + "[[algorithms]]\nname = 'linucb'\n",
            "seeds[1] = -1: seed must be an integer in [0, inf]",
        ),
        (
            "seeds = [1, 1]\n" + BASE + "[[algorithms]]\nname = 'linucb'\n",
            "seeds = [1, 1]: contains duplicate seeds",
        ),
        (
            "seeds = []\n" + BASE + "[[algorithms]]\nname = 'linucb'\n",
            "seeds = []: must be a non-empty list",
        ),
        (
            "checkpoints = -3\n" + BASE + "[[algorithms]]\nname = 'linucb'\n",
            "checkpoints = -3: checkpoints must be an integer in [0, 10000]",
        ),
        (
            BASE + "[[algorithms]]\nname = 'linucb'\n[plot]\nband = -1\n",
            "plot.band = -1: band must lie in [0, inf)",
        ),
        (
            "preset = 'loose'\n" + BASE + "[[algorithms]]\nname = 'linucb'\n",
            'preset = "loose": preset must be one of',
        ),
        (
            BASE.replace("d = 3", "d = 0") + "[[algorithms]]\nname = 'linucb'\n",
            "env.d = 0: d must be an integer in [1, inf]",
        ),
        (
            BASE + "kind = 'synthetc'\n[[algorithms]]\nname = 'linucb'\n",
            "env.kind = \"synthetc\": unknown environment kind (did you mean 'synthetic'?)",
        ),
    ],
)
def test_ranges_checked(text: str, needle: str) -> None:
    assert needle in _err(text)


def test_unknown_algorithm_suggests_closest() -> None:
    msg = _err(BASE + "[[algorithms]]\nname = 'linucbb'\n")
    assert "algorithms[0].name = \"linucbb\": unknown algorithm (did you mean 'linucb'?)" in msg
    assert "available:" in msg and "uniform" in msg


def test_constructor_errors_surface_with_key_path() -> None:
    msg = _err(BASE + "[[algorithms]]\nname = 'linucb'\nparams = { lam = -1.0 }\n")
    assert "algorithms[0].params.lam = -1.0: lam must lie in (0, inf)" in msg
    msg = _err(BASE + "[[algorithms]]\nname = 'linucb'\ngrid = { alpha = [1.0, -2.0] }\n")
    assert "algorithms[0].grid.alpha = -2.0: alpha must lie in [0, inf)" in msg


def test_algorithm_reset_on_env_checked() -> None:
    msg = _err(BASE + "setting = 'multi'\n[[algorithms]]\nname = 'linucb'\n")
    assert "algorithms[0] (linucb(" in msg and "supports settings" in msg


def test_environment_constructed_and_reset_during_validation() -> None:
    msg = _err(BASE + "noise = 'bernoulli'\n[[algorithms]]\nname = 'uniform'\n")
    assert "t.toml: env" in msg and "bernoulli" in msg


def test_grid_rules(fake_private: str) -> None:
    cfg = _cfg(
        BASE
        + f"""
        [grid]
        epsilon = [1.0, 5.0]
        [[algorithms]]
        name = '{fake_private}'
        label = 'A'
        [[algorithms]]
        name = '{fake_private}'
        label = 'B'
        params = {{ epsilon = 2.0 }}
        [[algorithms]]
        name = '{fake_private}'
        label = 'C'
        grid = {{ epsilon = [0.5], delta = [1e-6, 1e-4] }}
        [[algorithms]]
        name = 'linucb'
        """
    )
    got = {e.label: [v[1] for v in e.variants] for e in cfg.algorithms}
    assert got["A"] == [{"epsilon": 1.0}, {"epsilon": 5.0}]  # global grid applied
    assert got["B"] == [{}]  # fixed params win over the global grid
    assert got["C"] == [
        {"epsilon": 0.5, "delta": 1e-6},
        {"epsilon": 0.5, "delta": 1e-4},
    ]  # own grid wins
    assert got["linucb"] == [{}]  # does not accept epsilon
    assert len(cfg.units()) == 2 + 1 + 2 + 1


def test_grid_key_nobody_accepts() -> None:
    msg = _err(BASE + "[grid]\nepsilon = [1.0]\n[[algorithms]]\nname = 'linucb'\n")
    assert "grid.epsilon = [1.0]: no algorithm of this experiment accepts 'epsilon'" in msg


def test_param_in_both_params_and_grid() -> None:
    msg = _err(
        BASE
        + "[[algorithms]]\nname = 'linucb'\nparams = { lam = 1.0 }\ngrid = { lam = [1.0, 2.0] }\n"
    )
    assert "'lam' is set both in params and in grid" in msg


def test_presets_routed_to_algorithms_that_take_them(fake_private: str) -> None:
    text = (
        "preset = 'paper'\n"
        + BASE
        + f"[[algorithms]]\nname = '{fake_private}'\n[[algorithms]]\nname = 'linucb'\n"
    )
    cfg = _cfg(text)
    params = {e.name: e.variants[0][0] for e in cfg.algorithms}
    assert params[fake_private] == {"preset": "paper"} and params["linucb"] == {}
    cfg = _cfg(text, overrides=Overrides(preset="authors_code"))
    assert cfg.algorithms[0].variants[0][0] == {"preset": "authors_code"}
    # an entry that names its own preset keeps it under --preset (its label stays true)
    pinned = (
        BASE
        + f"[[algorithms]]\nname = '{fake_private}'\n"
        + f"[[algorithms]]\nname = '{fake_private}'\nlabel = 'twin (paper)'\npreset = 'paper'\n"
    )
    cfg = _cfg(pinned, overrides=Overrides(preset="authors_code"))
    assert [e.variants[0][0] for e in cfg.algorithms] == [
        {"preset": "authors_code"},
        {"preset": "paper"},
    ]
    msg = _err(BASE + "[[algorithms]]\nname = 'linucb'\npreset = 'paper'\n")
    assert "algorithms[0].preset = \"paper\": algorithm 'linucb' has no calibration presets" in msg
    msg = _err(BASE + f"[[algorithms]]\nname = '{fake_private}'\nparams = {{ preset = 'paper' }}\n")
    assert "algorithms[0].params.preset" in msg


def test_duplicate_labels_and_claims() -> None:
    msg = _err(
        BASE
        + "[[algorithms]]\nname = 'linucb'\n[[algorithms]]\nname = 'linucb'\nparams = { lam = 2.0 }\n"
    )
    assert 'algorithms[1].label = "linucb": already used by algorithms[0]' in msg
    msg = _err(
        BASE + "[[algorithms]]\nname = 'linucb'\n[report]\nclaimed_order = ['linucb', 'unifrm']\n"
    )
    assert 'report.claimed_order[1] = "unifrm"' in msg


def test_overrides_quick_and_cli() -> None:
    text = SMALL + "\n[quick]\nhorizon = 1e2\nreplications = 2\n"
    cfg = parse_config(text, overrides=Overrides(quick=True))
    assert (cfg.horizon, cfg.replications) == (100, 2)
    cfg = parse_config(text, overrides=Overrides(quick=True, horizon=50, seeds=[7]))
    assert (cfg.horizon, cfg.seeds) == (50, (7,))
    with pytest.raises(
        ConfigError, match=r"^command line: --horizon 0: horizon must be an integer in \[1, inf\]"
    ):
        parse_config(text, overrides=Overrides(horizon=0))


def test_grid_option_parsing() -> None:
    assert parse_grid_option(["epsilon=0.5,1,2", "mode=a, b"]) == {
        "epsilon": [0.5, 1, 2],
        "mode": ["a", "b"],
    }
    with pytest.raises(ConfigError, match="expected KEY=V1,V2"):
        parse_grid_option(["epsilon"])


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("horizon = = 3\n")
    with pytest.raises(ConfigError, match="bad.toml: invalid TOML"):
        load_config(bad)


def test_all_config_errors_are_library_errors() -> None:
    assert issubclass(ConfigError, PrivbanditsError)


def _unit(params: dict) -> WorkUnit:
    return WorkUnit(
        experiment="e",
        label="l",
        algorithm="linucb",
        params=params,
        env={"kind": "synthetic", "d": 2, "K": 2},
        seed=0,
        horizon=10,
        replications=1,
        checkpoints={"log": 5, "every": None},
    )


@settings(max_examples=50, deadline=None)
@given(
    st.dictionaries(
        st.text("abcdefgh", min_size=1, max_size=4),
        st.one_of(st.integers(-5, 5), st.floats(-10, 10, allow_nan=False), st.text(max_size=3)),
        min_size=1,
        max_size=5,
    ),
    st.randoms(),
)
def test_unit_key_is_canonical(params: dict, rnd) -> None:
    items = list(params.items())
    rnd.shuffle(items)
    a, b = _unit(params), _unit(dict(items))
    assert a.key() == b.key() == hashlib.sha256(canonical_json(a.config()).encode()).hexdigest()
    changed = dict(params)
    k = next(iter(changed))
    changed[k] = [changed[k]]  # any change of a value changes the key
    assert _unit(changed).key() != a.key()


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        (
            Overrides(horizon=-5),
            "command line: --horizon -5: horizon must be an integer in [1, inf]",
        ),
        (
            Overrides(replications=0),
            "command line: --replications 0: replications must be an integer",
        ),
        (Overrides(seeds=[-1]), "command line: --seed -1: seed must be an integer in [0, inf]"),
        (Overrides(preset="strikt"), 'command line: --preset "strikt": '),
        (Overrides(engine="fast"), 'command line: --engine "fast": '),
    ],
)
def test_command_line_overrides_blame_the_option(overrides: Overrides, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(SMALL, source="small.toml", overrides=overrides)
    assert needle in str(info.value) and "small.toml" not in str(info.value)


PER_ALGORITHM_GRID = (
    BASE
    + """
[grid]
epsilon = [0.5]

[[algorithms]]
name = "ldp-sgd"
grid = { epsilon = [0.5, 1.0, 2.0] }

[[algorithms]]
name = "ldp-ols"
params = { epsilon = 1.0 }

[[algorithms]]
name = "linucb"
"""
)


def test_grid_option_replaces_per_algorithm_grids_and_params() -> None:
    """``--grid epsilon=4,8`` applies to every algorithm taking epsilon, wherever the file sets it."""

    def grids(cfg):
        return {e.name: [v[1] for v in e.variants] for e in cfg.algorithms}

    assert grids(_cfg(PER_ALGORITHM_GRID))["ldp-sgd"] == [
        {"epsilon": 0.5},
        {"epsilon": 1.0},
        {"epsilon": 2.0},
    ]
    cfg = _cfg(PER_ALGORITHM_GRID, overrides=Overrides(grid={"epsilon": [4.0, 8.0]}))
    assert grids(cfg) == {
        "ldp-sgd": [{"epsilon": 4.0}, {"epsilon": 8.0}],
        "ldp-ols": [{"epsilon": 4.0}, {"epsilon": 8.0}],
        "linucb": [{}],
    }
    assert sorted(u.params["epsilon"] for u in cfg.units() if u.algorithm != "linucb") == [
        4.0,
        4.0,
        8.0,
        8.0,
    ]
    msg = _err(PER_ALGORITHM_GRID, overrides=Overrides(grid={"epsilonn": [1.0]}))
    assert "grid.epsilonn" in msg and "no algorithm of this experiment accepts 'epsilonn'" in msg


def test_algorithms_as_single_table_and_missing_env() -> None:
    msg = _err(BASE + "[algorithms]\nname = 'linucb'\n")
    assert "'algorithms' is a single table" in msg and "[[algorithms]] (double brackets)" in msg
    msg = _err("horizon = 100\n[[algorithms]]\nname = 'linucb'\n")
    assert "[env] (kind = \"synthetic\") needs 'd' and 'K'" in msg


PAPER = (
    BASE
    + """
[[algorithms]]
name = 'linucb'
[[paper_numbers]]
algorithm = "linucb"
where = { d = 3, lam = 1.0 }
metric = "final_regret"
value = 12
source = "Table 1"
kind = "paper"
"""
)


def test_paper_numbers_are_kept_and_typed() -> None:
    cfg = _cfg(PAPER)
    (num,) = cfg.paper_numbers
    assert (num.algorithm, dict(num.where), num.metric, num.value, num.source, num.kind) == (
        "linucb",
        {"d": 3, "lam": 1.0},
        "final_regret",
        12.0,
        "Table 1",
        "paper",
    )
    assert num.horizon == cfg.horizon  # measured at the file's horizon unless it says otherwise
    assert _cfg(BASE + "[[algorithms]]\nname = 'linucb'\n").paper_numbers == ()


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("value = 12", 'value = "12"', "paper_numbers[0].value"),
        ("value = 12", "value = true", "must be a number"),
        ("value = 12\n", "", "paper_numbers[0] needs 'value'"),
        (
            'algorithm = "linucb"',
            'algorithm = "linucbb"',
            "not a label or name of any [[algorithms]] entry",
        ),
        ('metric = "final_regret"', "metric = 3", "paper_numbers[0].metric"),
        ("where = { d = 3, lam = 1.0 }", "where = 3", "paper_numbers[0].where"),
        ("where = { d = 3, lam = 1.0 }", "where = { d = [3] }", "paper_numbers[0].where.d"),
        (
            'source = "Table 1"',
            'source = "Table 1"\npage = 9',
            "unknown key 'page' in paper_numbers[0]",
        ),
        ('kind = "paper"\n', "", "paper_numbers[0] needs 'kind', who reported the number"),
        ('kind = "paper"', 'kind = "blog"', "paper_numbers[0].kind"),
        ('kind = "paper"', 'kind = "paper"\nhorizon = 0', "paper_numbers[0].horizon"),
    ],
)
def test_paper_numbers_validated(old: str, new: str, needle: str) -> None:
    assert needle in _err(PAPER.replace(old, new))


def test_table2_presets_carry_the_paper_numbers() -> None:
    from privbandits.experiments.presets import load_preset

    cfg = load_preset("sarmasarkar2026-table2")
    cells = {
        (p.algorithm, p.metric, p.where["theta_norm"], p.where.get("epsilon")): p.value
        for p in cfg.paper_numbers
    }
    assert cells[("Private-GLM", "final_regret", 2.0, 4.0)] == 674.17
    assert cells[("GLM-UCB", "final_regret", 2.0, None)] == 1400.27
    assert cells[("GLOC", "final_regret", 3.0, None)] == 1346.59
    assert [cells[("Private-GLM", "kappa", s, None)] for s in (2.0, 2.5, 3.0)] == [
        18.39,
        56.44,
        222.15,
    ]
    # 21 + the Private-GLM cells beside the zcdp row + the 18 cells beside the authors' code rows
    assert len(cfg.paper_numbers) == 48
    assert cfg.env_grid == {"theta_norm": (2.0, 2.5, 3.0)}
    units = cfg.units()
    assert {u.env["theta_norm"] for u in units} == {2.0, 2.5, 3.0}
    assert all(u.grid["theta_norm"] == u.env["theta_norm"] for u in units)
    assert len(units) == 3 * (1 + 1 + 3 + 3 + 1 + 1 + 1 + 3 + 1)  # + the authors' code rows


# --- [env] grid: environment variants ------------------------------------------------------------

ENV_GRID = """
horizon = 100
[env]
d = 3
K = 4
grid = { theta_norm = [1.0, 2.0], noise_scale = [0.1, 0.5] }
[[algorithms]]
name = "linucb"
[[algorithms]]
name = "ldp-sgd"
grid = { epsilon = [1.0, 4.0] }
"""


def test_env_grid_expands_every_algorithm_over_the_environment_variants() -> None:
    cfg = _cfg(ENV_GRID)
    assert cfg.env_grid == {"theta_norm": (1.0, 2.0), "noise_scale": (0.1, 0.5)}
    assert "grid" not in cfg.env
    units = cfg.units()
    assert len(units) == (1 + 2) * 4
    assert len({u.key() for u in units}) == len(
        units
    )  # distinct environments, distinct stored results
    for u in units:
        assert (
            u.grid["theta_norm"] == u.env["theta_norm"]
            and u.grid["noise_scale"] == u.env["noise_scale"]
        )
    envs = {(u.env["theta_norm"], u.env["noise_scale"]) for u in units if u.label == "linucb"}
    assert envs == {(1.0, 0.1), (1.0, 0.5), (2.0, 0.1), (2.0, 0.5)}
    assert next(v for _, v in cfg.env_variants()) == {"theta_norm": 1.0, "noise_scale": 0.1}


@pytest.mark.parametrize(
    ("grid", "needle"),
    [
        (
            "grid = { theta_nrm = [1.0] }",
            "env.grid.theta_nrm = [1.0]: not an argument of the environment kind 'synthetic' (did you mean 'theta_norm'?)",
        ),
        ("grid = { theta_norm = [] }", "env.grid.theta_norm = []: must be a non-empty list"),
        ("grid = { theta_norm = 2.0 }", "env.grid.theta_norm = 2.0: must be a non-empty list"),
        ("grid = { theta_norm = [1.0, 1.0] }", "contains duplicate values"),
        ("grid = { d = [3] }", "'d' is also set in [env]"),
        ("grid = [1.0]", "env.grid = [1.0]: must be a table of lists"),
        ("grid = { noise_scale = [0.1, -1.0] }", "env.grid.noise_scale = -1.0"),
        ("grid = { kind = ['finite'] }", "env.grid.kind"),
    ],
)
def test_env_grid_errors_name_the_key_and_value(grid: str, needle: str) -> None:
    text = f"horizon = 100\n[env]\nd = 3\nK = 4\n{grid}\n[[algorithms]]\nname = 'linucb'\n"
    assert needle in _err(text)


def test_required_env_argument_may_come_from_the_grid() -> None:
    cfg = _cfg(
        "horizon = 100\n[env]\nK = 4\ngrid = { d = [2, 3] }\n[[algorithms]]\nname = 'linucb'\n"
    )
    assert sorted(u.env["d"] for u in cfg.units()) == [2, 3]


def test_stable_claim_is_validated() -> None:
    base = ENV_GRID + '[[claims]]\nkind = "stable"\nitems = ["linucb"]\nparam = "theta_norm"\n'
    assert "claims[0].percent" in _err(base)
    assert "claims[0].percent = -1" in _err(base + "percent = -1\n")
    cfg = _cfg(base + "percent = 20\n")
    assert cfg.claims[0].kind == "stable" and cfg.claims[0].percent == 20
