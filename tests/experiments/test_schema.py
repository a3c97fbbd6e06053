"""One experiment schema: the validator, the TOML reference and the overrides come from one declaration.

A key that is documented must be validated (a wrong value is refused with an error naming it) and a
key the validator accepts must be documented; errors carry their key as data.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from docgen.toml_reference import key_docs, undocumented_keys

from privbandits.core.errors import ConfigError, ParameterError
from privbandits.core.validation import check_in_range
from privbandits.experiments import schema
from privbandits.experiments.config import ConfigKeyError, Overrides, parse_config
from privbandits.experiments.overrides import option_flags, option_help

BASE: dict[str, Any] = {
    "horizon": 50,
    "replications": 1,
    "checkpoints": 3,
    "env": {"d": 2, "K": 3},
    "algorithms": [{"name": "linucb"}, {"name": "uniform"}],
}
#: A value no declared constraint accepts for these keys: a list holding a table.
BAD = [{"?": 1}]


def _with(table: str, name: str, value: Any) -> dict[str, Any]:
    """The base configuration with ``table.name = value`` (an entry of an array of tables gets the
    other keys it needs, so that the key in question is the one at fault)."""
    raw = copy.deepcopy(BASE)
    if table == "":
        raw[name] = value
    elif table == "algorithms":
        raw["algorithms"][0][name] = value
    elif table in ("checkpoints", "quick", "plot", "report"):
        raw[table] = {name: value}
    elif table == "figures":
        kind = next((k for k, keys in schema.FIGURE_KEYS.items() if name in keys), "regret_vs_t")
        entry: dict[str, Any] = {"kind": kind, "x": "lam"} if kind == "final_vs_param" else {}
        raw["figures"] = [{**entry, name: value}]
    elif table == "claims":
        kind = next(
            (k for k, keys in schema.CLAIM_KEYS.items() if name in keys and k != "order"), "tiers"
        )
        need = {
            "tiers": {"items": ["linucb"], "above": ["uniform"]},
            "within": {"items": ["linucb", "uniform"], "percent": 10.0},
            "monotone": {"items": ["linucb"], "param": "lam"},
            "stable": {"items": ["linucb"], "param": "lam", "percent": 10.0},
            "slope": {"items": ["linucb"], "exponent": 0.5, "tolerance": 0.1},
        }[kind]
        raw["claims"] = [{"kind": kind, **need, name: value}]
    elif table == "paper_numbers":
        raw["paper_numbers"] = [{"algorithm": "linucb", "value": 1.0, "kind": "paper", name: value}]
    elif table == "tables":
        raw["tables"] = [{name: value}]
    else:  # pragma: no cover - a new table needs a line here
        raise AssertionError(f"no probe for table {table!r}")
    return raw


def test_base_configuration_is_valid() -> None:
    assert parse_config(BASE).horizon == 50


@pytest.mark.parametrize("decl", schema.SCHEMA, ids=lambda k: k.path)
def test_every_documented_key_is_validated(decl: schema.Key) -> None:
    """A wrong value of each documented key is refused with an error that names the key (not as
    an unknown key): the validator reads that key."""
    bad = "?" if decl.type.startswith("array of tables") else BAD
    with pytest.raises(ConfigError) as info:
        parse_config(_with(decl.table, decl.name, bad), source="t.toml")
    msg = str(info.value)
    assert "unknown" not in msg.split(":", 2)[1], msg
    assert decl.name in msg, msg


@pytest.mark.parametrize("table", schema.tables())
def test_only_documented_keys_are_accepted(table: str) -> None:
    """A key the schema does not declare is refused in every table: nothing is accepted undocumented."""
    with pytest.raises(ConfigError, match="unknown key 'undeclared_key'"):
        parse_config(_with(table, "undeclared_key", 1), source="t.toml")


def test_reference_documents_exactly_the_schema() -> None:
    assert [k for k in undocumented_keys() if k.split(".", 1)[0] in schema.tables()] == []
    documented = {k for k in key_docs() if k.split(".", 1)[0] in schema.tables()}
    assert documented == {f"{k.table}.{k.name}" for k in schema.SCHEMA}
    assert all(k.doc and k.type for k in schema.SCHEMA)


def test_errors_carry_the_key_as_data() -> None:
    with pytest.raises(ConfigKeyError) as info:
        parse_config(
            {**BASE, "algorithms": [{"name": "linucb", "params": {"lam": -1.0}}]}, source="t.toml"
        )
    err = info.value
    assert (err.key, err.value, err.allowed) == ("algorithms[0].params.lam", -1.0, "(0, inf)")
    assert str(err).startswith("t.toml: algorithms[0].params.lam = -1.0: lam must lie in (0, inf)")
    # a global grid value an algorithm refuses is mapped back to the grid by its key, not its text
    with pytest.raises(ConfigKeyError) as info:
        parse_config({**BASE, "grid": {"alpha": [1.0, -2.0]}}, source="t.toml")
    assert info.value.key == "grid.alpha" and info.value.value == -2.0
    # the environment's keys too
    with pytest.raises(ConfigKeyError) as info:
        parse_config({**BASE, "env": {"d": 0, "K": 3}}, source="t.toml")
    assert info.value.key == "env.d"


def test_parameter_error_keeps_its_data_across_processes() -> None:
    with pytest.raises(ParameterError) as info:
        check_in_range("sigma", -1.0, 0.0, None)
    err = pickle.loads(pickle.dumps(info.value))
    assert (err.key, err.value, err.allowed, str(err)) == (
        "sigma",
        -1.0,
        "[0, inf)",
        "sigma must lie in [0, inf), got -1",
    )


def test_overrides_come_from_the_schema() -> None:
    for decl in schema.cli_keys():
        assert option_flags(decl.name) == decl.cli and option_help(decl.name) == decl.cli_help
    # the option is checked with the key's own constraint
    with pytest.raises(
        ConfigError, match=r"^command line: --engine \"fast\": engine must be one of"
    ):
        parse_config(BASE, overrides=Overrides(engine="fast"))
    with pytest.raises(ConfigError, match=r"^command line: --seed -1: seed must be an integer"):
        parse_config(BASE, overrides=Overrides(seeds=[-1]))


def test_defaults_come_from_the_schema() -> None:
    cfg = parse_config(BASE)
    assert cfg.plot.dpi == schema.key("plot", "dpi").default
    assert cfg.report.level == schema.key("report", "level").default
    assert cfg.engine == schema.key("", "engine").default
    raw = {k: v for k, v in BASE.items() if k != "replications"}
    assert parse_config(raw).replications == schema.key("", "replications").default


def test_choice_errors_suggest_the_closest_value() -> None:
    with pytest.raises(ConfigError, match="did you mean 'reference'"):
        parse_config({**BASE, "engine": "referenc"}, source="t.toml")


def test_validator_accepts_no_key_outside_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every allowed-key list the validator checks a fixed table against is the schema's (or, for
    the kinds of figures and claims, a part of it)."""
    from privbandits.experiments.validation import _Validator

    seen: dict[str, set[str]] = {}
    original = _Validator.keys

    def recording(self: Any, table: Any, allowed: Any, where: str, what: str = "key") -> Any:
        seen[where] = set(allowed)
        return original(self, table, allowed, where, what)

    monkeypatch.setattr(_Validator, "keys", recording)
    raw = copy.deepcopy(BASE)
    raw.update(
        checkpoints={"log": 3},
        quick={"horizon": 10},
        plot={"dpi": 100},
        report={"title": "t"},
        figures=[{"kind": "regret_vs_t"}, {"kind": "final_vs_param", "name": "f", "x": "lam"}],
        claims=[
            {"kind": k, **v}
            for k, v in {"within": {"items": ["linucb", "uniform"], "percent": 5.0}}.items()
        ],
        paper_numbers=[{"algorithm": "linucb", "value": 1.0, "kind": "paper"}],
        tables=[{"title": "t"}],
    )
    parse_config(raw)
    table_of = {
        "the top level": "",
        "checkpoints": "checkpoints",
        "algorithms[0]": "algorithms",
        "[quick]": "quick",
        "[plot]": "plot",
        "[report]": "report",
        "paper_numbers[0]": "paper_numbers",
        "tables[0]": "tables",
    }
    for where, table in table_of.items():
        assert seen[where] == set(schema.table_keys(table)), where
    kinds = [w for w in seen if w.startswith(("figures[", "claims["))]
    assert len(kinds) == 3
    for where in kinds:
        assert seen[where] <= set(schema.table_keys(where.split("[", 1)[0])), where
