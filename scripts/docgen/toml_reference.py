"""The experiment TOML reference, generated from the experiment schema.

The bandit experiment's keys, types, defaults and descriptions come from their declarations in
:mod:`privbandits.experiments.schema` (the declarations the validator reads),
the ``[env]`` keys from the environments' constructors and the algorithm parameters from the
registry, so a key the validator accepts cannot be missing here.  Every key of the fixed tables
needs a description in :data:`KEY_DOCS`; :func:`undocumented_keys` lists the ones that have none
(the test suite and the documentation build fail on them).
"""

from __future__ import annotations

import inspect
from typing import Any

from docgen.numpydoc import parameter_docs

__all__ = ["KEY_DOCS", "key_docs", "render_toml_reference", "toml_keys", "undocumented_keys"]

#: ``"table.key" -> (type, default, description)`` of the tables declared outside the experiment
#: schema (regression studies, ``[service]``); the bandit experiment's keys come from
#: :data:`privbandits.experiments.schema.SCHEMA` (see :func:`key_docs`).
KEY_DOCS: dict[str, tuple[str, str | None, str]] = {
    # regression studies (kind = "regression", privbandits.experiments.regression_study)
    "regression.kind": ('"regression"', "required", "Marks the file as a regression study."),
    "regression.name": (
        "string",
        "the file's stem",
        "Study name: the key its rows are stored under.",
    ),
    "regression.description": ("string", '""', "Free text, copied into `report.md`."),
    "regression.replications": (
        "integer >= 1",
        "3",
        "Seeds 0 .. R-1 of every cell (`-R` overrides it).",
    ),
    "regression.n_test": (
        "integer >= 1",
        "100000",
        "Held-out covariates on which every fit is evaluated.",
    ),
    "regression.estimators": (
        "list of strings",
        "all",
        "Estimators compared: `reweighted`, `reweighted-bernstein`, `ssp-ridge`, `dp-gd`, "
        "`least-squares` (privbandits.experiments.regression_experiment.ESTIMATORS).",
    ),
    "regression.blocks": (
        "array of tables `[[blocks]]`",
        "required",
        "Blocks of cells: one figure panel and one table section each.",
    ),
    "regression.quick": ("table", "{}", "Overrides applied by `--quick`."),
    "regression.claims": (
        "array of tables `[[claims]]`",
        "[]",
        "Expectations checked with a verdict in every cell: keys of the `claims` table above, kinds "
        '`"coverage"` (`items`, `percent`: the widths cover f* at every held-out point in at least '
        'that share of the fits; exact binomial test over the seeds) and `"monotone"` (`items`, '
        '`param` = `"n"` | `"d"` | `"epsilon"` | `"c"` | `"p0"`, `direction`: the L1 error falls or '
        "rises with it; Student t tests); `where` may name a `block`.",
    ),
    "regression.report": (
        "table",
        "{}",
        "`title`, `source`, `claims`, `notes` of `report.md` (strings).",
    ),
    "blocks.name": ("string", "required", "Block name (unique; letters, digits, `_ . -`)."),
    "blocks.x": ('"n" | "d" | "epsilon" | "c" | "p0"', '"n"', "The x axis of the block's panel."),
    "blocks.facet": ("one of the block's keys other than x", "none", "One line style per value."),
    "blocks.replications": (
        "integer >= 1",
        "the study's",
        "Seeds of every cell of this block (`-R` and `[quick] replications` override it).",
    ),
    "blocks.n": ("list of integers >= 1", "required", "Sample sizes."),
    "blocks.d": ("list of integers >= 1", "required", "Dimensions (`[1]` with `p0`)."),
    "blocks.epsilon": (
        "list of numbers > 0 (inf = non-private)",
        "required",
        "Privacy levels (delta = 1e-5 throughout).",
    ),
    "blocks.c": (
        "list of numbers >= 0",
        "[0.0]",
        "Conditioning: coordinate scales `exp(-c (i-1)/(d-1))` of the Gaussian covariates.",
    ),
    "blocks.p0": (
        "list of numbers in (0, 1)",
        "none",
        "The two-point instance of Chen et al. (2025), Prop. 3.1: `phi in {0, 1}`, `P(phi = 1) = p0`.",
    ),
    "regression_quick.replications": (
        "integer >= 1",
        "unchanged",
        "Seeds per cell under `--quick`.",
    ),
    "regression_quick.n_test": (
        "integer >= 1",
        "unchanged",
        "Held-out covariates under `--quick`.",
    ),
    "regression_quick.n_max": (
        "integer >= 1",
        "none",
        "Under `--quick`, every cell's n is capped at this (duplicate cells merged).",
    ),
    "service.seed": (
        "integer >= 0",
        "seeds[0]",
        "Root seed of the served model's streams (server noise, policy).",
    ),
    "service.max_staleness": (
        "integer >= 0",
        "100",
        "Largest lag in model versions of an accepted report (older: 409).",
    ),
    "service.max_body_bytes": ("integer >= 256", "1048576", "Request size limit (larger: 413)."),
    "service.rate": (
        "number > 0",
        "50.0",
        "Requests per second per token (token bucket; beyond: 429).",
    ),
    "service.burst": ("integer >= 1", "100", "Burst size of each token's bucket."),
    "service.device_epsilon": (
        "number > 0",
        "the accounted per-report epsilon",
        "Privacy budget of one device: it may post floor(device_epsilon / epsilon) "
        "accepted reports (basic composition; beyond: 429 with the reason).",
    ),
    "service.min_batch": (
        "integer >= 1",
        "1",
        "Shuffle model: smallest batch `POST /v1/batches` accepts.",
    ),
    "service.simulation": (
        "boolean",
        "false",
        "A simulated deployment: `POST /v1/simulation/rewards` is enabled (otherwise 404).",
    ),
    "service.anonymous_rate": (
        "number > 0",
        "5.0",
        "Requests per second per client IP address without a valid token (beyond: 429).",
    ),
    "service.anonymous_burst": ("integer >= 1", "50", "Burst size of that bucket."),
    "service.shuffler_url": (
        "http(s) URL",
        "none",
        "Shuffle model: the shuffler's URL; `GET /v1/status` and the dashboard show its queue.",
    ),
}


def key_docs() -> dict[str, tuple[str, str | None, str]]:
    """Every documented key: the experiment schema's declarations and :data:`KEY_DOCS`."""
    from privbandits.experiments.schema import SCHEMA

    docs = {f"{k.table}.{k.name}": (k.type, k.shown_default(), k.doc) for k in SCHEMA}
    return {**docs, **KEY_DOCS}


def _tables() -> dict[str, tuple[str, ...]]:
    from privbandits.experiments import regression_study, schema
    from privbandits.service.config import SERVICE_KEYS

    return {
        **{table: schema.table_keys(table) for table in schema.tables()},
        "regression": regression_study.REGRESSION_TOP_KEYS,
        "blocks": regression_study.BLOCK_KEYS,
        "regression_quick": regression_study.REGRESSION_QUICK_KEYS,
        "service": tuple(SERVICE_KEYS),
    }


def toml_keys() -> dict[str, tuple[str, ...]]:
    """Every key the validator accepts, by table: the fixed tables, ``env`` and ``algorithms.params``."""
    from privbandits.algorithms import available
    from privbandits.experiments.units import ENV_KINDS

    keys = dict(_tables())
    env: list[str] = ["kind", "grid"]
    for env_cls in ENV_KINDS.values():
        env += [k for k in _signature_args(env_cls) if k not in env]
    keys["env"] = tuple(env)
    params: list[str] = []
    for alg_cls in available().values():
        params += [k for k in alg_cls.param_names() if k not in params]
    keys["algorithms.params"] = tuple(params)
    return keys


def undocumented_keys() -> list[str]:
    """Keys of the fixed tables without an entry in :data:`KEY_DOCS` (must be empty)."""
    docs = key_docs()
    return [
        f"{table}.{key}"
        for table, keys in _tables().items()
        for key in keys
        if f"{table}.{key}" not in docs or not docs[f"{table}.{key}"][2]
    ]


def _signature_args(cls: type) -> list[str]:
    sig = inspect.signature(cls)
    return [n for n, p in sig.parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _toml_value(value: Any) -> str:
    from privbandits.experiments.schema import toml_value

    return toml_value(value)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _table_rows(table: str, keys: tuple[str, ...]) -> list[str]:
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    docs = key_docs()
    for key in keys:
        ptype, default, text = docs.get(f"{table}.{key}", ("", "", "(undocumented)"))
        rows.append(f"| `{key}` | {_cell(ptype)} | {_cell(default or 'none')} | {_cell(text)} |")
    return rows


_SECTIONS = (
    ("", "Top level", "Keys of the file itself, before any table."),
    ("checkpoints", "checkpoints = { ... }", "The table form of `checkpoints`."),
    (
        "algorithms",
        "[[algorithms]]",
        "One entry per algorithm: an *array of tables*, written with double brackets and repeated for each "
        "algorithm.  A single `[algorithms]` table is an error.  `params` fixes values; `grid` sweeps "
        "them (see below).",
    ),
    ("quick", "[quick]", "Applied only by `--quick`; validated always."),
    ("plot", "[plot]", "Figure options."),
    (
        "report",
        "[report]",
        "Used by `privbandits reproduce` (and written into `report.md` by `run`).",
    ),
    (
        "figures",
        "[[figures]]",
        "The report's figures (default: one regret-vs-t figure from `[plot]`).",
    ),
    (
        "claims",
        "[[claims]]",
        "The paper's claims about final regret, checked in every grid cell with one-sided Student t-tests (paired over "
        "common random numbers when both series ran on the same seeds); verdicts agree / disagree / "
        "inconclusive / too few runs at `[report] level`.",
    ),
    (
        "paper_numbers",
        "[[paper_numbers]]",
        "Reported numbers, shown beside ours with the ratio ours / reported.",
    ),
    (
        "tables",
        "[[tables]]",
        "Reported numbers arranged as tables: cells `ours / reported (ratio)`.",
    ),
    (
        "regression",
        'Regression studies (`kind = "regression"`): top level',
        'A file with `kind = "regression"` is not a bandit experiment but a private regression-error study '
        "(privbandits.experiments.regression_study), run by `privbandits reproduce NAME`: every cell of every "
        "block and every seed is one work unit fitting each estimator on the same data (held-out L1 / L2 "
        "error, coverage and mean of the widths, accounted epsilon); rows are stored in the results database "
        "as units finish, and the figure and `report.md` are written at the end.  None of the bandit keys "
        "above apply.",
    ),
    (
        "blocks",
        "[[blocks]] (regression studies)",
        "The cells of a block are the cartesian product of its lists; only `x` and `facet` may take several "
        "values.",
    ),
    (
        "regression_quick",
        "[quick] (regression studies)",
        "Applied only by `--quick`; validated always.",
    ),
    (
        "service",
        "[service]",
        "Read by `privbandits serve` only (a served configuration has one `[[algorithms]]` entry and one seed; "
        "see [Deploy](../deploy.md)).",
    ),
)


def _env_section() -> list[str]:
    from privbandits.envs.synthetic import SyntheticEnv
    from privbandits.experiments.units import ENV_KINDS

    shared = parameter_docs(SyntheticEnv)
    kinds = " \\| ".join(f'`"{k}"`' for k in ENV_KINDS)
    out = [
        "## [env]",
        "",
        "`kind` selects the environment; the other keys are its constructor arguments.  Arrays "
        "(`theta`, `actions`, `context_cov`) may be given as TOML arrays.",
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
        f'| `kind` | {kinds} | `"synthetic"` | Environment kind. |',
        "| `grid` | table of lists | `{}` | Environment variants, e.g. `grid = { theta_norm = [2.0, 3.0] }`: "
        "every algorithm runs on each combination, and the values join the series' grid (cells of "
        "claims, facets, `where` of paper numbers and tables). |",
        "",
    ]
    for kind, cls in ENV_KINDS.items():
        docs = parameter_docs(cls)
        out += [
            f'### kind = "{kind}" ({cls.__module__}.{cls.__name__})',
            "",
            "| key | type | default | meaning |",
            "|---|---|---|---|",
        ]
        for name, p in inspect.signature(cls).parameters.items():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            ptype, text = docs.get(name, ("", ""))
            if not text:
                ptype, text = shared.get(name, (ptype, ""))
            default = "required" if p.default is p.empty else _toml_value(p.default)
            out.append(f"| `{name}` | {_cell(ptype)} | {_cell(default)} | {_cell(text)} |")
        out.append("")
    return out


def _params_section() -> list[str]:
    from docgen.algorithm_reference import family_of
    from privbandits.algorithms import available

    out = [
        "## Algorithm parameters (`params` and `grid` keys)",
        "",
        "The keys of an entry's `params` and `grid` tables, and of the global `[grid]`, are the "
        "constructor parameters of the algorithms.  Their meaning, allowed values and the derivation "
        "of the defaults are on each algorithm's family page.  Keys named `epsilon`, `delta` or ending "
        "in `_epsilon` / `_delta` are checked as privacy parameters wherever they appear.",
        "",
        "| algorithm | parameters (default) |",
        "|---|---|",
    ]
    for name, cls in available().items():
        sig = getattr(cls, "_signature", None)
        items = []
        if sig is not None:
            for pname, p in list(sig.parameters.items())[1:]:
                items.append(
                    f"`{pname}` ({_toml_value(p.default) if p.default is not p.empty else 'required'})"
                )
        link = f"[`{name}`](../algorithms/{family_of(cls)}.md#{name})"
        out.append(f"| {link} | {', '.join(items) or '(none)'} |")
    return out + [""]


_PARAMS_VS_GRID = """\
## `params` versus `grid`

- `params = { lam = 1.0 }` fixes a constructor argument for one entry.
- `grid = { epsilon = [0.5, 1.0, 2.0] }` in an entry runs that entry once per value (the cartesian
  product over all its keys); each combination is a *variant*, stored and plotted separately.
- The top-level `[grid]` applies to every entry whose algorithm takes the key and that sets it
  neither in `params` nor in its own `grid`; an entry's own `grid` key replaces the global one.
- A key may not be in both an entry's `params` and its `grid`.
- On the command line, `privbandits sweep CONFIG -g KEY=V1,V2` replaces every value of `KEY` in the
  file (the global grid, each entry's `grid` and `params`): every algorithm taking `KEY` runs the
  given values.  `-T/--horizon`, `-R/--replications`, `--seed`, `--preset` and `--engine` override
  the file's keys of the same name for `run`, `sweep` and `reproduce`.
"""


def render_toml_reference() -> str:
    """The complete TOML reference page (markdown)."""
    tables = _tables()
    out = [
        "# Experiment TOML reference",
        "",
        "This page is generated from the configuration validator, the environments and the "
        "algorithm registry of the installed version.  Every key below is checked when the file is "
        "loaded, before any work starts: unknown keys are rejected with the closest allowed one, and "
        "an error names its key path (`algorithms[1].params.delta`).  A commented example is in "
        "[Configuration files](../configuration.md); the shipped experiments are in "
        "[Shipped experiments](experiments.md).",
        "",
    ]
    for table, title, intro in _SECTIONS:
        if table == "algorithms":
            out += _env_section()
        out += [f"## {title}", "", intro, "", *_table_rows(table, tables[table]), ""]
        if table == "algorithms":
            out += [_PARAMS_VS_GRID]
    out += _params_section()
    return "\n".join(out)
