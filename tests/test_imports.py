"""The package's import graph: no cycle anywhere, and the layer order of DESIGN.md section 1.

The graph is built from the syntax tree of every module of ``privbandits`` (nothing is imported).
It includes the imports inside functions: a function-level import still makes a module depend on
another at run time, and a cycle through one is a cycle that a later refactor turns into an import
error.  Imports under ``if TYPE_CHECKING:`` are left out (they never run).  ``from pkg import name``
counts as an import of the submodule ``pkg.name`` when that is a module, else of ``pkg``.

Layers (imports point down only; DESIGN.md section 1)::

    cli, commands, docgen       the command line (docgen renders it)
    service                     server / shuffler / device (and the aliases privbandits.client, ...)
    experiments
    privbandits (the API facade), testing
    simulate, engine, auditing
    algorithms
    regression                  the regression estimators the algorithms use
    privacy, envs
    core, _cache
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "privbandits"

#: Layer rank of each top-level group (a module may import only groups of lower or equal rank).
RANK = {
    "core": 0,
    "_cache": 0,
    "privacy": 1,
    "envs": 1,
    "regression": 2,
    "algorithms": 3,
    "engine": 4,
    "simulate": 4,
    "auditing": 4,
    "privbandits": 5,
    "testing": 5,
    "experiments": 6,
    "service": 7,
    "client": 7,
    "shuffle_client": 7,
    "simulated_clients": 7,
    "cli": 8,
    "commands": 8,
    "docgen": 9,
}

#: The rules DESIGN.md states in words, checked on their own (clear messages).
FORBIDDEN = {
    "service": ("cli", "commands", "docgen"),
    "experiments": ("service", "cli", "commands", "docgen"),
    "privacy": ("algorithms", "engine", "experiments", "service", "cli", "commands"),
    "envs": ("algorithms", "engine", "experiments", "service", "cli", "commands"),
    "algorithms": ("engine", "experiments", "service", "cli", "commands", "simulate"),
    "core": tuple(g for g in RANK if g not in ("core",)),
}

#: Known upward imports, each to be removed (listed so that no new one can appear unnoticed).
KNOWN_UPWARD: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
    )


def _imports(name: str, path: Path) -> Iterator[str]:
    """The ``privbandits`` modules that ``name`` imports (at any depth, TYPE_CHECKING blocks left out)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def walk(node: ast.AST) -> Iterator[ast.AST]:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            yield child
            yield from walk(child)

    for node in walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [
                f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod for a in node.names
            ]
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t.startswith("privbandits") and t != name:
                yield t


GRAPH = {name: set(_imports(name, path)) for name, path in MODULES.items()}


def _group(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "privbandits"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_graph_is_built_from_every_module() -> None:
    assert len(MODULES) > 100
    assert (
        "privbandits.service.server.app" in GRAPH["privbandits.service.server.cli"]
    )  # a function-level import
    assert "privbandits.service.tls" in GRAPH["privbandits.service.serving"]  # one too


def test_no_import_cycle_anywhere() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    """The test can fail: a planted back edge (the former serve <-> serve-shuffler circle) is found."""
    planted = {k: set(v) for k, v in GRAPH.items()}
    planted["privbandits.service.tls"].add("privbandits.service.cli")
    assert any(
        "privbandits.service.cli" in c and "privbandits.service.tls" in c for c in _cycles(planted)
    )


@pytest.mark.parametrize("group", sorted(FORBIDDEN))
def test_design_layer_rules(group: str) -> None:
    bad = sorted(
        (m, d)
        for m, deps in GRAPH.items()
        if _group(m) == group
        for d in deps
        if _group(d) in FORBIDDEN[group]
    )
    assert bad == [], f"{group}/ imports a layer above it: {bad}"


def test_imports_point_down_only() -> None:
    missing = sorted({_group(m) for m in GRAPH} - set(RANK))
    assert not missing, f"modules of no layer: {missing}; place them in RANK"
    up = {(m, d) for m, deps in GRAPH.items() for d in deps if RANK[_group(d)] > RANK[_group(m)]}
    assert up - KNOWN_UPWARD == set(), f"upward imports: {sorted(up - KNOWN_UPWARD)}"
    assert KNOWN_UPWARD <= up, f"fixed, remove from KNOWN_UPWARD: {sorted(KNOWN_UPWARD - up)}"


def test_the_service_processes_do_not_import_each_other() -> None:
    """server/, shuffler/ and device/ share only the modules at service/ level."""
    procs = ("server", "shuffler", "device")
    bad = []
    for m, deps in GRAPH.items():
        parts = m.split(".")
        if len(parts) > 3 and parts[1] == "service" and parts[2] in procs:
            bad += [
                (m, d)
                for d in deps
                if d.split(".")[1:2] == ["service"]
                and len(d.split(".")) > 3
                and d.split(".")[2] in procs
                and d.split(".")[2] != parts[2]
            ]
    assert bad == []
