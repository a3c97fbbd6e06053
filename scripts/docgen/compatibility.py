"""Which algorithm runs on which environment kind, and why not: a table computed at build time.

Every registered algorithm (with its first ``test_params``) is reset on a small instance of every
environment kind of the experiment files (``[env] kind``; on loss environments it also plays one
round, as the loss driver checks the actions); a cell is "yes" when that succeeds, else the library's own error says why (settings, reward link, a fixed finite
action set, norm bounds, continuous actions), listed below the table.  Nothing is hand-written,
so a new algorithm or environment kind appears by itself.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["ENV_INSTANCES", "compatibility", "render_compatibility_page"]

#: The small instance of each environment kind the table is computed on (kinds that read a
#: user-supplied file, such as MovieLens, are left out).
ENV_INSTANCES: dict[str, dict[str, Any]] = {
    "synthetic": {"d": 3, "K": 4},
    "finite": {"d": 3, "K": 4},
    "k-armed": {"K": 4},
    "convex": {"d": 3},
    "supervised": {"dataset": "iris"},
    "choice": {},
    "choice-pricing": {},
    "choice-offer": {},
    "auto-loan": {},
}


def compatibility(horizon: int = 3, names: list[str] | None = None) -> dict[str, dict[str, str]]:
    """``algorithm -> env kind -> ""`` (runs) or the error that stops it (``names``: only these)."""
    import privbandits as pb
    from privbandits.algorithms import available
    from privbandits.core.errors import PrivbanditsError
    from privbandits.core.rng import make_streams
    from privbandits.experiments.units import ENV_KINDS, build_env

    envs = {k: build_env({"kind": k, **v}) for k, v in ENV_INSTANCES.items() if k in ENV_KINDS}
    out: dict[str, dict[str, str]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, cls in available().items():
            if names is not None and name not in names:
                continue
            row = out.setdefault(name, {})
            for kind, env in envs.items():
                try:
                    alg = pb.make(name, **cls.test_params[0])
                    if kind == "convex":  # the loss driver checks the actions: run one round
                        pb.simulate(alg, env, horizon=1, replications=1, engine="reference")
                    else:  # the problem description is all an algorithm checks: reset on it
                        alg.reset(env.reset(1, make_streams(0), horizon), 1, make_streams(0))
                    row[kind] = ""
                except PrivbanditsError as exc:
                    row[kind] = " ".join(str(exc).split())
                except Exception as exc:  # a defect, not a refusal: shown as such
                    row[kind] = (
                        f"fails with an internal error ({type(exc).__name__}), not a clear refusal"
                    )
    return out


def _reason(name: str, message: str) -> str:
    """The error without the algorithm's own name (so that environment kinds can share it)."""
    text = message.replace(f"algorithm '{name}' ", "").replace(f"{name} ", "", 1)
    text = text if len(text) <= 240 else text[:237] + "..."
    return text.replace("|", "\\|")


def render_compatibility_page() -> str:
    """The page ``reference/compatibility.md``."""
    table = compatibility()
    kinds = list(ENV_INSTANCES)
    out = [
        "# Algorithms and environment kinds",
        "",
        "Which registered algorithm runs on which environment kind of the experiment files "
        '(`[env] kind = "..."`, see the [TOML reference](toml.md)).  The table is computed when '
        "the documentation is built: each algorithm is set up on a small instance of each kind "
        "(and plays one round on `convex`), and where it cannot run, the reason below is the library's own error "
        'message.  Common fixes: algorithms for one shared parameter (`setting = "single"`) run on '
        'a data file with `encoding = "shared"`; algorithms that need one fixed finite action set '
        'run on `kind = "finite"` (or `"k-armed"`); generalized-linear algorithms need a '
        "logistic or probit reward link.",
        "",
        "| algorithm | " + " | ".join(f"`{k}`" for k in kinds) + " |",
        "|---|" + "---|" * len(kinds),
    ]
    for name, row in table.items():
        cells = [
            "yes" if not row.get(k) else "**error**" if "internal error" in row[k] else "no"
            for k in kinds
        ]
        out.append(f"| `{name}` | " + " | ".join(cells) + " |")
    out += ["", "## Why not", ""]
    for name, row in table.items():
        reasons: dict[str, list[str]] = {}
        for kind in kinds:
            if row.get(kind):
                reasons.setdefault(_reason(name, row[kind]), []).append(f"`{kind}`")
        for reason, where in reasons.items():
            out.append(f"- `{name}` on {', '.join(where)}: {reason}")
    return "\n".join(out) + "\n"
