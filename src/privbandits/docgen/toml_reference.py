"""The experiment TOML reference, generated from the validator's schema.

The key lists come from :mod:`privbandits.experiments.config` (the lists the validator accepts),
the ``[env]`` keys from the environments' constructors and the algorithm parameters from the
registry, so a key the validator accepts cannot be missing here.  Every key of the fixed tables
needs a description in :data:`KEY_DOCS`; :func:`undocumented_keys` lists the ones that have none
(the test suite and the documentation build fail on them).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from privbandits.docgen.numpydoc import parameter_docs

__all__ = ["KEY_DOCS", "render_toml_reference", "toml_keys", "undocumented_keys"]

#: ``"table.key" -> (type, default, description)`` for the fixed tables ("" = the top level).
#: A default of ``None`` is read from the configuration dataclasses where they have the key.
KEY_DOCS: dict[str, tuple[str, str | None, str]] = {
    ".kind": (
        '"bandit" | "regression"',
        '"bandit"',
        "What the file describes: a bandit experiment (this page's schema) or a regression-error study "
        '(`kind = "regression"`, its own schema below; run by `privbandits reproduce`).',
    ),
    ".name": (
        "string",
        "the file's stem",
        "Experiment name: the key results are stored and plotted under (letters, digits, `_ . -`).",
    ),
    ".description": ("string", '""', "Free text, copied into `report.md`."),
    ".import": (
        "list of module names",
        "[]",
        "Modules imported before the algorithm names are checked, in this process and in every "
        'worker (your own algorithms: `import = ["mypkg.algorithms"]`; same as `--import`).',
    ),
    ".horizon": (
        "integer >= 1",
        "required",
        "Number of rounds T of every run (`1e4` is accepted for 10000).",
    ),
    ".replications": (
        "integer >= 1",
        "10",
        "Replications R of each work unit, simulated together as one batch.",
    ),
    ".seeds": (
        "list of integers >= 0",
        "[0]",
        "Root seeds; each seed is one work unit per algorithm variant.  The same seed gives every "
        "algorithm the same contexts and rewards (common random numbers).",
    ),
    ".checkpoints": (
        "integer in [0, 10000] or table",
        "50",
        "Rounds at which cumulative regret is recorded: that many log-spaced points (T is "
        "always included), or a table `{ log = 50, every = 1000 }`.",
    ),
    ".preset": (
        '"strict" | "paper" | "authors_code"',
        "each algorithm's own (strict)",
        "Calibration preset for every algorithm that takes one (see Concepts: calibration presets); "
        "algorithms without presets ignore it.",
    ),
    ".engine": (
        '"auto" | "reference" | "compiled" | "aggregate"',
        '"auto"',
        "Driver of every simulation (see Concepts: engines).",
    ),
    ".env": ("table", "required", "The environment: `kind` and its constructor arguments (below)."),
    ".grid": (
        "table of lists",
        "{}",
        "Global grid: the cartesian product of its lists is applied to every algorithm that takes "
        "the key (keys no algorithm takes are an error).",
    ),
    ".algorithms": (
        "array of tables `[[algorithms]]`",
        "required",
        "The algorithms to run, one `[[algorithms]]` entry each (double brackets).",
    ),
    ".quick": (
        "table",
        "{}",
        "Overrides applied by `--quick` (a short run of the same experiment).",
    ),
    ".plot": ("table", "{}", "Figure options of `privbandits run` / `reproduce`."),
    ".report": ("table", "{}", "The paper's claims a reproduction is compared with."),
    "checkpoints.log": ("integer in [0, 10000]", "50", "Number of log-spaced checkpoints."),
    "checkpoints.every": ("integer >= 1", "none", "Also record every this many rounds."),
    "algorithms.name": ("string", "required", "A registered algorithm (`privbandits list`)."),
    "algorithms.label": (
        "string",
        "the name",
        "Name of the entry in tables, legends and the results store; unique across entries "
        "(needed when the same algorithm appears twice).",
    ),
    "algorithms.params": (
        "table",
        "{}",
        "Constructor arguments fixed for this entry, e.g. `{ epsilon = 1.0, delta = 0.01 }`.",
    ),
    "algorithms.grid": (
        "table of lists",
        "{}",
        "Per-entry grid: the cartesian product of its lists; a key here replaces the global "
        "grid's key for this entry.  A key may not be in both `params` and `grid`.",
    ),
    "algorithms.preset": (
        '"strict" | "paper" | "authors_code"',
        "the top-level preset",
        "Calibration preset of this entry (only for algorithms that take one).",
    ),
    "quick.horizon": ("integer >= 1", "unchanged", "Horizon under `--quick`."),
    "quick.replications": ("integer >= 1", "unchanged", "Replications under `--quick`."),
    "quick.seeds": ("list of integers >= 0", "unchanged", "Seeds under `--quick`."),
    "quick.checkpoints": ("integer or table", "unchanged", "Checkpoints under `--quick`."),
    "plot.facet": (
        "string",
        None,
        'One panel per value of this grid parameter (e.g. `"epsilon"`).',
    ),
    "plot.band": (
        '"ci95" | "se" | number >= 0',
        None,
        "The shaded band around each mean curve: 95 % interval of the mean, one standard error, or "
        "that many standard deviations across replications (papers' figures often use 0.5).",
    ),
    "plot.logx": ("boolean", None, "Logarithmic t axis."),
    "plot.logy": ("boolean", None, "Logarithmic regret axis."),
    "report.title": ("string", None, "Title of `report.md`."),
    "report.source": ("string", None, "Where the claims come from (paper, figure)."),
    "report.claimed_order": (
        "list of strings",
        None,
        "Labels (or names) in the paper's order of final regret, lowest first; "
        "`privbandits reproduce` checks the measured order against it.",
    ),
    "report.claims": ("string", None, "The paper's claims in words, copied into `report.md`."),
    "report.notes": (
        "string",
        None,
        "Our remarks (e.g. why a number differs from the paper's), copied into `report.md`.",
    ),
    "report.level": (
        "number in (0, 0.5)",
        None,
        "One-sided significance level of every claim comparison (agree / disagree / inconclusive).",
    ),
    "report.slopes": (
        "table of label = exponent",
        None,
        "Theoretical regret exponents (R(T) = O~(T^a)) shown beside the measured log-log slopes.",
    ),
    "plot.dpi": (
        "integer in [20, 1200]",
        None,
        "Resolution of the PNG figures (`--dpi` overrides it).",
    ),
    ".figures": (
        "array of tables `[[figures]]`",
        "one regret-vs-t figure from `[plot]`",
        "The figures of the report, one `[[figures]]` entry each.",
    ),
    ".claims": (
        "array of tables `[[claims]]`",
        "[]",
        "The paper's claims, checked on our numbers in every grid cell.",
    ),
    ".paper_numbers": (
        "array of tables `[[paper_numbers]]`",
        "[]",
        "Numbers the paper (or another named source) reports, shown beside ours with the ratio.",
    ),
    ".tables": ("array of tables `[[tables]]`", "[]", "Tables that arrange the reported numbers."),
    "figures.kind": (
        '"regret_vs_t" | "final_vs_param"',
        '"regret_vs_t"',
        "Cumulative regret against t (one panel per `facet` value), or final regret against a "
        "parameter `x` with error bars.",
    ),
    "figures.name": ("string", '"regret" / "final-regret"', "File stem of the PNG and PDF."),
    "figures.title": (
        "string",
        "the report title",
        "Figure title (d, K, T and the number of runs are added).",
    ),
    "figures.facet": ("string", "none", "regret_vs_t: one panel per value of this parameter."),
    "figures.band": (
        '"ci95" | "se" | number >= 0',
        '"ci95"',
        "regret_vs_t: the band: 95 % interval of the mean, one standard error, or that many "
        "standard deviations across replications.",
    ),
    "figures.x": (
        "string",
        "required (final_vs_param)",
        "final_vs_param: the parameter on the x axis.",
    ),
    "figures.series": (
        "list of labels",
        "every label with several x values",
        "final_vs_param: the series drawn as lines.",
    ),
    "figures.baselines": (
        "list of labels",
        "[]",
        "final_vs_param: series drawn as horizontal reference lines (e.g. non-private).",
    ),
    "figures.errorbars": ('"se" | "ci95"', '"se"', "final_vs_param: error bars of the means."),
    "figures.logx": ("boolean", "false", "Logarithmic x axis."),
    "figures.logy": ("boolean", "false", "Logarithmic y axis."),
    "claims.kind": (
        '"order" | "tiers" | "within" | "monotone" | "stable" | "slope"',
        "required",
        "order: items ascend in final regret; tiers: every item below every `above`; within: "
        "items[0] within `percent` % of items[1]; monotone: items[0] falls (or rises) with `param`; stable: "
        "items[0] changes by less than `percent` % between adjacent values of `param`; slope: the log-log "
        "slope of items[0]'s regret over t in [T/10, T] is near `exponent` (or at most `exponent` + "
        "`tolerance`).",
    ),
    "claims.items": ("list of labels", "required", "The series the claim is about (see `kind`)."),
    "claims.above": ("list of labels", "required (tiers)", "tiers: the upper tier."),
    "claims.percent": (
        "number > 0",
        "required (within, stable)",
        "within, stable: the tolerance in percent.",
    ),
    "claims.param": ("string", "required (monotone, stable)", "monotone, stable: the parameter."),
    "claims.direction": (
        '"decreasing" | "increasing" | "near" | "at_most"',
        '"decreasing" / "near"',
        "monotone: the direction; slope: near the exponent or at most exponent + tolerance.",
    ),
    "claims.exponent": (
        "number in [0, 1]",
        "required (slope)",
        "slope: the theory's exponent a of O~(T^a).",
    ),
    "claims.tolerance": (
        "number in [0, 1]",
        "required (slope)",
        "slope: the allowed deviation from the exponent.",
    ),
    "claims.where": (
        "table",
        "{}",
        "Only the grid cells with these values, e.g. `{ epsilon = 1.0 }`.",
    ),
    "claims.text": ("string", '""', "The claim in the paper's words."),
    "paper_numbers.algorithm": ("label", "required", "The series the number is about."),
    "paper_numbers.where": ("table", "{}", "Grid, parameter or environment values of the cell."),
    "paper_numbers.metric": (
        "string",
        '"final_regret"',
        "final_regret, final_regret_std or final_regret_se (others are shown without ours).",
    ),
    "paper_numbers.value": ("number", "required", "The reported number."),
    "paper_numbers.source": ("string", '""', 'Where it is printed (e.g. `"Table 2, p. 9"`).'),
    "paper_numbers.kind": (
        "string",
        "required",
        "Who reported the number: `paper`, `authors' code`, `prototype` or `theory`; only "
        "`paper` numbers are called the paper's.",
    ),
    "paper_numbers.horizon": (
        "integer",
        "the file's `horizon`",
        "The T the number was measured at; a run at another T shows it as not comparable.",
    ),
    "tables.title": ("string", '""', "Table heading."),
    "tables.metric": ("string", '"final_regret"', "Which reported numbers the table shows."),
    "tables.columns": ("string", "none", "The key whose values are the columns (e.g. epsilon)."),
    "tables.rows": ("list of labels", "every label with numbers", "Row order."),
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
        "`least-squares` (privbandits.regression.experiment.ESTIMATORS).",
    ),
    "regression.blocks": (
        "array of tables `[[blocks]]`",
        "required",
        "Blocks of cells: one figure panel and one table section each.",
    ),
    "regression.quick": ("table", "{}", "Overrides applied by `--quick`."),
    "regression.report": (
        "table",
        "{}",
        "`title`, `source`, `claims`, `notes` of `report.md` (strings).",
    ),
    "blocks.name": ("string", "required", "Block name (unique; letters, digits, `_ . -`)."),
    "blocks.x": ('"n" | "d" | "epsilon" | "c" | "p0"', '"n"', "The x axis of the block's panel."),
    "blocks.facet": ("one of the block's keys other than x", "none", "One line style per value."),
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
}


def _tables() -> dict[str, tuple[str, ...]]:
    from privbandits.experiments import config, regression_study
    from privbandits.service.config import SERVICE_KEYS

    figure_keys = tuple(dict.fromkeys(k for keys in config.FIGURE_KEYS.values() for k in keys))
    claim_keys = tuple(dict.fromkeys(k for keys in config.CLAIM_KEYS.values() for k in keys))
    return {
        "": config.TOP_KEYS,
        "checkpoints": config.CHECKPOINT_KEYS,
        "algorithms": config.ALGO_KEYS,
        "quick": config.QUICK_KEYS,
        "plot": config.PLOT_KEYS,
        "report": config.REPORT_KEYS,
        "figures": figure_keys,
        "claims": claim_keys,
        "paper_numbers": config.PAPER_NUMBER_KEYS,
        "tables": config.TABLE_KEYS,
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
    return [
        f"{table}.{key}"
        for table, keys in _tables().items()
        for key in keys
        if f"{table}.{key}" not in KEY_DOCS
    ]


def _signature_args(cls: type) -> list[str]:
    sig = inspect.signature(cls)
    return [n for n, p in sig.parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _dataclass_default(table: str, key: str) -> str:
    from privbandits.experiments.config import PlotConfig, ReportConfig

    cls = {"plot": PlotConfig, "report": ReportConfig}.get(table)
    for f in dataclasses.fields(cls) if cls is not None else ():
        if f.name == key and f.default is not dataclasses.MISSING:
            return _toml_value(f.default)
    return "none"


def _toml_value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _table_rows(table: str, keys: tuple[str, ...]) -> list[str]:
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key in keys:
        ptype, default, text = KEY_DOCS.get(f"{table}.{key}", ("", "", "(undocumented)"))
        if default is None:
            default = _dataclass_default(table, key)
        rows.append(f"| `{key}` | {_cell(ptype)} | {_cell(default)} | {_cell(text)} |")
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
    from privbandits.algorithms import available
    from privbandits.docgen.algorithm_reference import family_of

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
