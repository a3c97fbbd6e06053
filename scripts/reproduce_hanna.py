"""Reproduce Hanna et al. (2022), Figures 2 / 3(a) / 4 and 3(b), with the paper's final-regret-vs-epsilon plots.

``privbandits reproduce hanna2022-fig2`` / ``hanna2022-fig3b`` run the presets and draw regret-vs-t
curves (one panel per epsilon) with the generic report.  The paper's figures plot the *final* regret
against the privacy budget, which the generic machinery cannot express, so this script:

1. runs both presets through the same pipeline (:func:`privbandits.experiments.pipeline.run_pipeline`;
   results go to the SQLite store, reruns skip finished units), writing the generic figures and
   ``report.md`` to ``<out>/fig2`` and ``<out>/fig3b``;
2. draws ``final-regret-vs-epsilon`` figures (mean +- 1 standard error over replications; the
   non-private references as horizontal bands) to ``<out>/fig2-final-regret.png`` etc.;
3. writes ``<out>/README.md``: settings, wall times, tables, the paper's claimed orderings checked
   per epsilon with *paired* z-scores (every algorithm of a seed sees the same R instances), and a
   comparison with the ballpark numbers of the spec (section 6.4).

Usage::

    python scripts/reproduce_hanna.py [--out docs/reproductions/hanna2022] [--db privbandits-results/results.db]
                                      [--quick] [--only fig2|fig3b] [--workers 2]
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import platform
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from privbandits.algorithms.hanna.elimination import batch_growth, n_batches
from privbandits.experiments.config import Overrides
from privbandits.experiments.pipeline import run_pipeline
from privbandits.experiments.presets import load_preset
from privbandits.experiments.summary import Series

#: Spec section 6.4 (the spec author's prototype, paper preset; NOT from the paper): K = 10, T = 1e6.
SPEC_FIG2_PAPER = {
    "central (paper)": {0.01: 1.08e5, 0.03: 5.1e4, 0.1: 2.6e4, 0.3: 1.8e4, 1.0: 1.55e4, 3.0: 1.43e4, 10.0: 1.39e4,
                        100.0: 1.38e4},
    "shuffle (paper)": {0.01: 2.4e5, 0.03: 1.1e5, 0.1: 5.3e4, 0.3: 3.0e4, 1.0: 2.1e4, 3.0: 2.0e4, 10.0: 1.6e4,
                        100.0: 1.43e4},
    "local (paper)": {0.01: 4.8e5, 0.03: 4.7e5, 0.1: 3.2e5, 0.3: 1.13e5, 1.0: 4.3e4, 3.0: 2.2e4, 10.0: 1.6e4,
                      100.0: 1.43e4},
}
SPEC_FIG2_NP = {"NP-batched (paper)": 1.41e4, "NP-batched (strict)": 8.2e3}
#: Spec 6.4, rigorous widths with Delta = 2 (strict preset), eps = 0.1 / 1 / 10.
SPEC_FIG2_STRICT = {
    "central (strict)": {0.1: 3.4e4, 1.0: 1.2e4, 10.0: 8.8e3},
    "shuffle (strict)": {0.1: 8.9e4, 1.0: 2.6e4, 10.0: 1.6e4},
    "local (strict)": {0.1: 4.6e5, 1.0: 7.6e4, 10.0: 1.6e4},
}
#: Spec 6.4, K = 1000, T = 1e7, central, paper preset (8-10 seeds).
SPEC_FIG3B = {
    "core set (paper)": {0.003: 1.04e6, 0.01: 5.5e5, 0.03: 3.6e5, 0.1: 2.9e5, 0.3: 2.7e5, 1.0: 2.5e5},
    "no core set (paper)": {0.003: 6.4e6, 0.01: 2.6e6, 0.03: 1.08e6, 0.1: 5.1e5, 0.3: 3.2e5, 1.0: 2.3e5},
    "no core set, uniform (paper)": {0.003: 4.4e6, 0.01: 1.6e6, 0.03: 6.6e5, 0.1: 2.9e5, 0.3: 1.8e5, 1.0: 1.5e5},
}
SPEC_FIG3B_NP = {"NP-batched (paper)": 2.5e5}

COLORS = {"central": "#1f77b4", "shuffle": "#2ca02c", "local": "#d62728", "NP": "#7f7f7f", "L&S": "#000000",
          "core set": "#1f77b4", "no core set,": "#9467bd", "no core set": "#ff7f0e"}


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def _color(label: str) -> str:
    for key, c in COLORS.items():
        if label.startswith(key):
            return c
    return "#8c564b"


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1e3 else f"{x:.3g}".replace("e+0", "e").replace("e+", "e")


def _by_label(series: list[Series]) -> dict[str, dict[float | None, Series]]:
    out: dict[str, dict[float | None, Series]] = {}
    for s in series:
        eps = s.grid.get("epsilon")
        out.setdefault(s.label, {})[None if eps is None else float(eps)] = s
    return out


def paired_z(better: np.ndarray, worse: np.ndarray) -> float:
    """``mean(d) / se(d)`` for the per-replication differences ``d = worse - better`` (same instances)."""
    d = np.asarray(worse, float) - np.asarray(better, float)
    sd = d.std(ddof=1)
    if sd == 0:
        return 0.0 if d.mean() == 0 else math.copysign(math.inf, d.mean())
    return float(d.mean() / (sd / math.sqrt(d.size)))


def plot_final_vs_eps(groups: dict[str, dict[float | None, Series]], panels: list[tuple[str, list[str]]],
                      path: Path, title: str) -> list[Path]:
    """One panel per (title, labels): final regret mean +- 1 se against epsilon (log-log)."""
    fig = Figure(figsize=(5.2 * len(panels), 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    for k, (ptitle, labels) in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), k + 1)
        eps_all = sorted({e for lab in labels for e in groups.get(lab, {}) if e is not None})
        for lab in labels:
            g = groups.get(lab)
            if not g:
                continue
            if None in g:  # non-private: a horizontal band over the epsilon range
                s = g[None]
                m, se = s.final_mean, s.final_se
                ax.axhline(m, color=_color(lab), ls="--", lw=1.3, label=lab)
                ax.axhspan(m - se, m + se, color=_color(lab), alpha=0.15, lw=0)
                continue
            e = np.array(sorted(g))
            m = np.array([g[x].final_mean for x in e])
            se = np.array([g[x].final_se for x in e])
            ax.errorbar(e, m, yerr=se, color=_color(lab), marker="s" if "delta" in lab else "o", ms=4, lw=1.5,
                        ls=":" if "delta" in lab or "uniform" in lab else "-", capsize=2, label=lab)
        ax.set_xscale("log")
        ax.set_yscale("log")
        if eps_all:
            ax.set_xlim(min(eps_all) / 1.5, max(eps_all) * 1.5)
        ax.set_xlabel("privacy budget epsilon (eps0 for local)")
        ax.set_ylabel("final regret R_T")
        ax.set_title(ptitle, fontsize="medium")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small", frameon=False)
    fig.suptitle(f"{title}\nmean ± 1 standard error over replications", fontsize="medium")
    written = []
    for fmt in ("png", "pdf"):
        p = path.with_suffix("." + fmt)
        p.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(p, format=fmt, dpi=150)
        written.append(p)
    return written


def _table(groups: dict[str, dict[float | None, Series]], labels: list[str], eps: list[float],
           spec: dict[str, dict[float, float]] | None = None) -> list[str]:
    head = "| epsilon | " + " | ".join(labels) + " |"
    lines = [head, "|" + "---|" * (len(labels) + 1)]
    for e in eps:
        cells = []
        for lab in labels:
            s = groups.get(lab, {}).get(e)
            if s is None:
                cells.append("–")
                continue
            cell = f"{_fmt(s.final_mean)} ± {_fmt(s.final_se)}"
            ref = (spec or {}).get(lab, {}).get(e)
            if ref is not None:
                cell += f" (spec {_fmt(ref)}, ×{s.final_mean / ref:.2f})"
            cells.append(cell)
        lines.append(f"| {e:g} | " + " | ".join(cells) + " |")
    return lines


def _np_line(groups: dict[str, dict[float | None, Series]], labels: list[str], spec: dict[str, float]) -> list[str]:
    out = []
    for lab in labels:
        s = groups.get(lab, {}).get(None)
        if s is None:
            continue
        ref = spec.get(lab)
        extra = f" (spec {_fmt(ref)}, ×{s.final_mean / ref:.2f})" if ref else ""
        out.append(f"- **{lab}**: {_fmt(s.final_mean)} ± {_fmt(s.final_se)}{extra}")
    return out


def _order_checks(groups: dict[str, dict[float | None, Series]], order: list[str], eps: list[float]) -> list[str]:
    """Per epsilon: each adjacent claimed pair with its paired z and verdict."""
    lines = ["| epsilon | " + " | ".join(f"{a} < {b}" for a, b in itertools.pairwise(order)) + " |",
             "|" + "---|" * len(order)]
    for e in eps:
        cells = []
        for a, b in itertools.pairwise(order):
            sa = groups.get(a, {}).get(e) or groups.get(a, {}).get(None)
            sb = groups.get(b, {}).get(e) or groups.get(b, {}).get(None)
            if sa is None or sb is None:
                cells.append("–")
                continue
            z = paired_z(sa.final, sb.final)
            verdict = "yes" if z > 2 else ("tie" if z > -2 else "**no**")
            cells.append(f"{verdict} (z = {z:.1f})")
        lines.append(f"| {e:g} | " + " | ".join(cells) + " |")
    return lines


def _rel(groups: dict[str, dict[float | None, Series]], lab: str, ref: str, e: float) -> float:
    return groups[lab][e].final_mean / groups[ref][None].final_mean


# ------------------------------------------------------------------------------------------------
# the two experiments
# ------------------------------------------------------------------------------------------------
def run(name: str, out: Path, db: Path, quick: bool, workers: int | None) -> tuple[Any, float]:
    # paper-preset warnings are expected here (and recorded in every result's guarantee notes);
    # the environment variable silences them in the worker processes too
    os.environ["PYTHONWARNINGS"] = "ignore::UserWarning"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # paper-preset warnings (recorded in the results)
        config = load_preset(name, Overrides(quick=quick))
        t0 = time.perf_counter()
        outcome = run_pipeline(config, db=db, out=out, workers=workers, quiet=True)
    return outcome, time.perf_counter() - t0


def fig2_section(outcome: Any, wall: float, out: Path) -> list[str]:
    cfg = outcome.config
    groups = _by_label(outcome.series)
    eps = sorted({float(s.grid["epsilon"]) for s in outcome.series if "epsilon" in s.grid})
    figs = plot_final_vs_eps(groups, [
        ("paper preset (reproduces the figures)", ["NP-batched (paper)", "L&S Alg. 12", "central (paper)",
                                                   "shuffle (paper)", "local (paper)"]),
        ("strict preset (certified noise, rigorous widths)", ["NP-batched (strict)", "central (strict)",
                                                             "shuffle (strict)", "shuffle (strict, delta=1e-12)",
                                                             "local (strict)"]),
    ], out / "fig2-final-regret", "Hanna et al. (2022) Fig. 2 / 3(a) / 4: K = 10, d = 2, "
                                  f"T = {cfg.horizon:.0e}")
    sim = sum(s.wall_time for s in outcome.series)
    paper = ["central (paper)", "shuffle (paper)", "local (paper)"]
    strict = ["central (strict)", "shuffle (strict)", "shuffle (strict, delta=1e-12)", "local (strict)"]
    lines = [
        "## Figures 2 / 3(a) / 4: regret vs privacy budget (K = 10, d = 2)", "",
        (f"T = {cfg.horizon:g}, {cfg.replications} replications × {len(cfg.seeds)} seed(s) (a fresh instance — "
        "10 actions and θ* uniform on the unit circle — per replication, the same instances for every algorithm), "
        "rewards ±1 with mean ⟨θ*, a⟩, δ = 1/T = 1e-6 for the shuffle model (and 1e-12 = 1/T² for one strict "
        f"curve), ε grid {', '.join(f'{e:g}' for e in eps)} (ε0 for the local model).  "
        f"Wall time of this invocation: {wall:.1f} s ({outcome.run.executed} work units run, "
        f"{outcome.run.skipped} reused from the store); summed simulation time of all series: {sim:.1f} s "
        "(exact aggregate fast path, 2 worker processes)."), "",
        f"![final regret vs epsilon]({figs[0].name})", "",
        "Regret-vs-t curves per ε and the generic report: [fig2/report.md](fig2/report.md).", "",
        "### Final regret, paper preset (mean ± se; in brackets the spec's §6.4 prototype value and our ratio)", "",
        *_table(groups, eps=eps, labels=paper, spec=SPEC_FIG2_PAPER), "",
        "Non-private references (no ε):", "",
        *_np_line(groups, ["NP-batched (paper)", "NP-batched (strict)", "L&S Alg. 12"], SPEC_FIG2_NP), "",
        "### Final regret, strict preset", "",
        *_table(groups, eps=eps, labels=strict, spec=SPEC_FIG2_STRICT), "",
        "### Claimed ordering NP ≤ central ≤ shuffle ≤ local, per ε (paired z over the shared instances)", "",
        "“yes”: z > 2; “tie”: |z| ≤ 2; “no”: the opposite order with z < −2.", "",
        "Paper preset:", "",
        *_order_checks(groups, ["NP-batched (paper)", *paper], eps), "",
        "Strict preset:", "",
        *_order_checks(groups, ["NP-batched (strict)", "central (strict)", "shuffle (strict)", "local (strict)"],
                       eps), "",
    ]
    # data-driven summary of the paper's claims
    np_p = "NP-batched (paper)"
    close = [e for e in eps if _rel(groups, "central (paper)", np_p, e) < 1.25]
    close_s = [e for e in eps if _rel(groups, "shuffle (paper)", np_p, e) < 1.25]
    worse_l = [e for e in eps if paired_z(groups["shuffle (paper)"][e].final, groups["local (paper)"][e].final) > 2]
    lines += [
        "### Verdict on the paper's claims", "",
        (f"- *Central close to non-private*: central (paper) is within 25% of NP-batched for ε ∈ "
        f"{{{', '.join(f'{e:g}' for e in close)}}} (ratio at ε = 1: "
        f"{_rel(groups, 'central (paper)', np_p, 1.0):.2f}, at ε = 0.1: {_rel(groups, 'central (paper)', np_p, 0.1):.2f}, "
        f"at ε = 0.01: {_rel(groups, 'central (paper)', np_p, 0.01):.2f})."),
        (f"- *Shuffle close to non-private*: within 25% for ε ∈ {{{', '.join(f'{e:g}' for e in close_s)}}} "
        f"(ratio at ε = 1: {_rel(groups, 'shuffle (paper)', np_p, 1.0):.2f}, at ε = 0.1: "
        f"{_rel(groups, 'shuffle (paper)', np_p, 0.1):.2f}); it sits between central and local."),
        (f"- *Local worse*: local is significantly above shuffle (z > 2) for ε0 ∈ "
        f"{{{', '.join(f'{e:g}' for e in worse_l)}}}; at ε0 = 0.01 its regret is "
        f"{groups['local (paper)'][0.01].final_mean / cfg.horizon:.2f} T (near-linear, spec S7)."),
        (f"- *Convergence*: at ε = 100 central / shuffle / local are within "
        f"{max(abs(_rel(groups, lab, np_p, 100.0) - 1) for lab in paper) * 100:.1f}% of NP-batched (paper widths)."),
        "",
        *fig2_notes(groups, cfg.horizon),
    ]
    return lines


def fig2_notes(groups: dict[str, dict[float | None, Series]], T: int) -> list[str]:
    """Observations that qualify the verdicts (all numbers computed from the runs)."""
    ls, npb = groups["L&S Alg. 12"][None], groups["NP-batched (paper)"][None]
    nps = groups["NP-batched (strict)"][None]
    sh_p = groups["shuffle (paper)"]
    qL = batch_growth(T) ** n_batches(T)  # the largest batch has n_L >= q^L users (more by <= |C_L|)
    cap = math.log((qL + 3) / (16 * math.log(2 / 1e-6)))
    strict_ok = all(s.guarantee.epsilon <= float(s.grid["epsilon"]) * (1 + 1e-9)
                    and s.guarantee.delta <= float(s.params.get("delta", 0.0))
                    for lab, g in groups.items() if "(strict" in lab for s in g.values() if "epsilon" in s.grid)
    z100 = paired_z(groups["shuffle (strict)"][100.0].final, groups["local (strict)"][100.0].final)
    c_cost = [groups["central (strict)"][e].final_mean / groups["central (paper)"][e].final_mean for e in (0.1, 1.0)]
    l_cost = groups["local (strict)"][1.0].final_mean / groups["local (paper)"][1.0].final_mean
    return [
        "### Notes", "",
        (f"- The paper's cited non-private comparator, Lattimore & Szepesvári's phased elimination, has lower regret "
        f"({_fmt(ls.final_mean)} ± {_fmt(ls.final_se)}) than NP-batched ({_fmt(npb.final_mean)}, paper widths; "
        f"{_fmt(nps.final_mean)}, rigorous widths).  Algorithms 1-3 are NP-batched plus noise and converge to it, "
        "so “close to non-private” is judged against NP-batched, the ε → ∞ limit (spec §4.4)."),
        (f"- Strict preset at ε = 100: the FMT validity cap ln(n_i / (16 ln(2/δ))) is at most ≈ {cap:.2f} < ε, so "
        "E0 falls back to ε0^(i) = ε and the shuffle algorithm *is* the local algorithm; the “no” in the strict "
        f"table there (z = {z100:.1f}) is a chance fluctuation between two identically distributed runs (one of "
        "48 comparisons)."),
        f"- The paper preset's shuffle guarantees, as accounted from the noise actually added (sensitivity 1 on "
        f"[−1, 1] rewards and the uncapped inverse of eq. (10)): nominal ε = 0.1 → {sh_p[0.1].guarantee}, nominal "
        f"ε = 1 → {sh_p[1.0].guarantee}.  "
        + ("The strict preset's accounted guarantee meets its nominal (ε, δ) in every cell." if strict_ok else
           "**Some strict-preset cell's accounted guarantee exceeds its nominal (ε, δ).**"),
        (f"- Cost of the corrections (strict / paper regret): central ×{c_cost[0]:.2f} at ε = 0.1 and ×{c_cost[1]:.2f} "
        f"at ε = 1 (twice the noise, but tighter rigorous widths); local ×{l_cost:.2f} at ε0 = 1."),
        "",
    ]


def fig3b_section(outcome: Any, wall: float, out: Path) -> list[str]:
    cfg = outcome.config
    groups = _by_label(outcome.series)
    eps = sorted({float(s.grid["epsilon"]) for s in outcome.series if "epsilon" in s.grid})
    figs = plot_final_vs_eps(groups, [
        ("paper preset (reproduces the figure)", ["NP-batched (paper)", "core set (paper)", "no core set (paper)",
                                                  "no core set, uniform (paper)"]),
        ("strict preset", ["core set (strict)", "no core set (strict)"]),
    ], out / "fig3b-final-regret", f"Hanna et al. (2022) Fig. 3(b): Algorithm 1, K = 1000, d = 2, T = {cfg.horizon:.0e}")
    sim = sum(s.wall_time for s in outcome.series)
    labels = ["core set (paper)", "no core set (paper)", "no core set, uniform (paper)"]
    lines = [
        "## Figure 3(b): Algorithm 1 with and without the core set (K = 1000, d = 2)", "",
        (f"T = {cfg.horizon:g}, {cfg.replications} replications × {len(cfg.seeds)} seed(s), ε grid "
        f"{', '.join(f'{e:g}' for e in eps)}.  “No core set” gives every surviving action its own noisy sum: "
        "`nocore-fw` (spec §4.5 default: Frank-Wolfe from the uniform design, no pruning) and `nocore-uniform`.  "
        f"**Wall time: {wall:.1f} s** for this invocation ({outcome.run.executed} units run, {outcome.run.skipped} "
        f"reused; 2 worker processes); summed simulation time of all {len(outcome.series)} series: {sim:.1f} s."), "",
        f"![final regret vs epsilon]({figs[0].name})", "",
        "Regret-vs-t curves per ε: [fig3b/report.md](fig3b/report.md).", "",
        "### Final regret, paper preset (mean ± se; spec §6.4 prototype value and ratio)", "",
        *_table(groups, eps=eps, labels=labels, spec=SPEC_FIG3B), "",
        *_np_line(groups, ["NP-batched (paper)"], SPEC_FIG3B_NP), "",
        "### Strict preset", "",
        *_table(groups, eps=eps, labels=["core set (strict)", "no core set (strict)"]), "",
        "### Claimed ordering NP ≤ core set < no core set (paired z)", "",
        *_order_checks(groups, ["NP-batched (paper)", "core set (paper)", "no core set (paper)"], eps), "",
    ]
    helps = [e for e in eps if paired_z(groups["core set (paper)"][e].final, groups["no core set (paper)"][e].final) > 2]
    hurts = [e for e in eps if paired_z(groups["core set (paper)"][e].final, groups["no core set (paper)"][e].final) < -2]
    np_ = "NP-batched (paper)"
    lines += [
        "### Verdict on the paper's claims", "",
        (f"- *The core set helps at small ε*: core set < no core set (z > 2) for ε ∈ "
        f"{{{', '.join(f'{e:g}' for e in helps)}}}; the no-core variant is "
        f"{groups['no core set (paper)'][eps[0]].final_mean / groups['core set (paper)'][eps[0]].final_mean:.1f}× "
        f"worse at ε = {eps[0]:g}."),
        (f"- *Not at large ε*: the order reverses (no core set better, z < −2) for ε ∈ "
        f"{{{', '.join(f'{e:g}' for e in hurts) or 'none'}}} — as the spec predicts (§6.4: spreading pulls over "
        "the surviving arc plays near-optimal actions more often than a 2-point design at the extremes)."),
        (f"- *Core set close to non-private*: ratio to NP-batched {_rel(groups, 'core set (paper)', np_, 1.0):.2f} at "
        f"ε = 1, {_rel(groups, 'core set (paper)', np_, 0.1):.2f} at ε = 0.1, "
        f"{_rel(groups, 'core set (paper)', np_, eps[0]):.2f} at ε = {eps[0]:g}."),
        "",
    ]
    return lines


HEADER = """# Hanna et al. (2022): reproductions

*Differentially Private Stochastic Linear Bandits: (Almost) for Free* — Hanna, Girgis, Fragouli &
Diggavi (2022).  Algorithms: `hanna-central` (Alg. 1), `hanna-local` (Alg. 2), `hanna-shuffle`
(Alg. 3), non-private `pe-batched` (the same skeleton without noise) and `phased-elimination`
(Lattimore & Szepesvári Alg. 12).  Generated by `python scripts/reproduce_hanna.py` ({when}, {host}).

**What the paper does not specify** (our choices, from the spec §6.3): reward noise (±1 rewards with
mean ⟨θ*, a⟩), δ (1/T), the ε grid, the number of replications, error bars.  The figures' numeric values
are not in the text, so the comparison below is against (i) the paper's qualitative claims and (ii)
the ballpark numbers of the spec's independent prototype (§6.4, *not* from the paper).

**Presets.**  `paper` reproduces the printed algorithm: Laplace sensitivity 1 (rewards in [−1, 1] have
sensitivity 2, so this is only 2ε-DP — the reported guarantees say so), the paper's confidence widths,
and the literal inverse of the amplification bound for the shuffle model (which can overclaim; the
accountant reports what the noise supports; see the notes below).  `strict`
is certified: sensitivity r_hi − r_lo = 2, rigorous widths (corrected Lemma 4), the E0 local budget with
the FMT validity cap.  All runs use the exact aggregate fast path (`simulate(fast=True)`), which draws
each batch's reward sums, noise sums and within-batch regret from their exact distributions; its
agreement with the per-user message path is tested in `tests/algorithms/test_hanna_fastpath.py`.

"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/reproductions/hanna2022"))
    ap.add_argument("--db", type=Path, default=Path("privbandits-results/results.db"))
    ap.add_argument("--quick", action="store_true", help="apply the presets' [quick] overrides")
    ap.add_argument("--only", choices=("fig2", "fig3b"), default=None)
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    out: Path = args.out
    sections: list[str] = []
    for key, preset, section in (("fig2", "hanna2022-fig2", fig2_section), ("fig3b", "hanna2022-fig3b", fig3b_section)):
        if args.only not in (None, key):
            continue
        outcome, wall = run(preset, out / key, args.db, args.quick, args.workers)
        print(f"{preset}: {wall:.1f} s ({outcome.run.executed} units run, {outcome.run.skipped} reused)")
        sections += section(outcome, wall, out)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    host = f"{platform.machine()}, Python {platform.python_version()}"
    text = HEADER.format(when=when, host=host) + "\n".join(sections)
    name = "README.md" if args.only is None else f"README-{args.only}.md"
    (out / name).write_text(text, encoding="utf-8")
    print(f"report: {out / name}")


if __name__ == "__main__":
    main()
