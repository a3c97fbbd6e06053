"""Regret curves: mean cumulative regret vs t with a +/- band, one panel per facet value.

The band is ``band`` times the sample standard deviation across all replications of all seeds of
a series (0.5 in Han et al. 2021, Fig. 5.1, and most of the papers implemented here).  Figures are
drawn on matplotlib's Agg canvas directly (no pyplot, no global backend switch), so plotting works
headless and never touches interactive state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_nonnegative
from privbandits.experiments.summary import Series, axis_name, format_values

__all__ = ["ERRORBARS", "FIGURE_FORMATS", "plot_final_vs_param", "plot_regret", "regret_figure"]

FIGURE_FORMATS: tuple[str, ...] = ("png", "pdf")
_COLORS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
    "#843c39",
    "#7b4173",
    "#000000",
    "#e7ba52",
    "#006d6d",
    "#8c6d31",
    "#9c9ede",
    "#ff9896",
)
#: Markers cycled with the colours (a prime count against 20 colours: 140 distinct pairs).
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
_BASELINE_COLORS = ("#555555", "#000000", "#999999")
#: Half-widths in standard errors of the mean: one standard error, or the normal 95 % interval.
ERRORBARS: dict[str, float] = {"se": 1.0, "ci95": 1.959963984540054}


def _panels(series: Sequence[Series], facet: str | None) -> list[tuple[Any, list[Series]]]:
    """Split series by facet value; series without the parameter appear in every panel."""
    if facet is None:
        return [(None, list(series))]
    values = []
    for s in series:
        v = s.value(facet)
        if v is not None and v not in values:
            values.append(v)
    if not values:
        keys = sorted({k for s in series for k in (*s.grid, *s.params)})
        raise ValidationError(
            f"facet {facet!r} is not a parameter of any result; "
            f"available: {', '.join(keys) or '(none)'}"
        )
    values.sort(key=lambda v: (isinstance(v, str), v))
    return [(v, [s for s in series if s.value(facet) in (None, v)]) for v in values]


def _band_width(band: float | str) -> tuple[Callable[[Series], float], str]:
    """Half-width of the band as a multiple of each series' std, and its description."""
    if isinstance(band, str):
        if band not in ERRORBARS:
            raise ValidationError(
                f"band must be a number of standard deviations or one of {tuple(ERRORBARS)}; "
                f"got {band!r}"
            )
        z = ERRORBARS[band]
        text = (
            "1 standard error of the mean"
            if band == "se"
            else "95 % normal confidence interval of the mean"
        )
        return (lambda s: z / math.sqrt(s.n)), text
    width = check_nonnegative("band", band)
    return (lambda s: width), f"{width:g} standard deviation across replications"


def _styles(
    members: Sequence[Series], names: Sequence[str], colors: dict[str, str]
) -> list[tuple[str, str]]:
    """Colour and line style per series: a private algorithm and its non-private twin share a hue
    (the twin dashed) when the twin is paired with exactly one private series of the panel.  The
    same name has the same colour in every panel; with more names than colours the marker
    (:func:`_marker`) tells them apart."""
    twin_of: dict[str, list[str]] = {}
    for s, name in zip(members, names):
        twin = _twin(s.algorithm)
        if twin is not None and s.guarantee.is_private:
            twin_of.setdefault(twin, []).append(name)
    out = []
    for s, name in zip(members, names):
        partners = twin_of.get(s.algorithm, [])
        key = partners[0] if len(partners) == 1 and not s.guarantee.is_private else name
        if key not in colors:
            colors[key] = _COLORS[len(colors) % len(_COLORS)] + f"|{len(colors)}"
        out.append((colors[key], "-" if s.guarantee.is_private or not partners else "--"))
    return out


def _marker(style_color: str) -> tuple[str, str]:
    """``(colour, marker)`` of a style key ``"#rrggbb|index"``: the index cycles the markers."""
    color, _, idx = style_color.partition("|")
    return color, _MARKERS[int(idx or 0) % len(_MARKERS)]


def _accounted_note(members: Sequence[Series], x: str) -> str:
    """Legend note relating the accounted epsilon to the requested one on the x axis."""
    pairs = [(s.guarantee.epsilon, s.value(x)) for s in members if s.guarantee.is_private]
    if not pairs:
        return ""
    if x == "epsilon" and all(isinstance(v, (int, float)) and v > 0 for _, v in pairs):
        ratios = [acc / req for acc, req in pairs]
        if max(ratios) <= 1.0 + 1e-9:
            return " [accounted ε ≤ requested]"
        if max(ratios) / min(ratios) < 1.01:
            return f" [accounted ε = {ratios[0]:.3g} × requested]"
        return f" [accounted ε up to {max(ratios):.3g} × requested]"
    return f" [accounted ε ≤ {max(acc for acc, _ in pairs):.3g}]"


def _twin(algorithm: str) -> str | None:
    from privbandits.algorithms import available

    cls = available().get(algorithm)
    return None if cls is None else cls.twin


def _legend_name(s: Series, name: str) -> str:
    return f"{name} [{s.guarantee.short()}]" if s.guarantee.is_private else name


def _legend_label(name: str, shorts: Sequence[str]) -> str:
    """``name [guarantee]``, or ``name [g1 | g2 | ...]`` with one accounted guarantee per panel."""
    if not shorts:
        return name
    if len(shorts) > 4:
        return f"{name} [{shorts[0]} .. {shorts[-1]}]"
    return f"{name} [{' | '.join(shorts)}]"


def plot_regret(
    series: Sequence[Series],
    out: str | Path,
    *,
    facet: str | None = None,
    band: float | str = 0.5,
    logx: bool = False,
    logy: bool = False,
    title: str | None = None,
    formats: Sequence[str] = FIGURE_FORMATS,
    dpi: int = 150,
) -> list[Path]:
    """Draw the cumulative-regret curves (:func:`regret_figure`) and save them.

    Parameters
    ----------
    series, facet, band, logx, logy, title
        As for :func:`regret_figure`.
    out : path
        Output path without suffix; one file per format is written (``out.png``, ``out.pdf``).
    formats : sequence of {"png", "pdf"}
        Files to write.
    dpi : int
        Resolution of the PNG.

    Returns
    -------
    list of Path
        The written files.
    """
    _check_formats(formats)
    fig = regret_figure(series, facet=facet, band=band, logx=logx, logy=logy, title=title)
    return _save(fig, out, formats, dpi)


def regret_figure(
    series: Sequence[Series],
    *,
    facet: str | None = None,
    band: float | str = 0.5,
    logx: bool = False,
    logy: bool = False,
    title: str | None = None,
) -> Figure:
    """Mean cumulative-regret curves with a band, one panel per facet value.

    Parameters
    ----------
    series : sequence of Series
        From :func:`~privbandits.experiments.summary.build_series`.
    facet : str, optional
        Parameter (e.g. ``"epsilon"``) whose values get one panel each.
    band : float or {"se", "ci95"}
        Half-width of the shaded band: a number of standard deviations across replications
        (>= 0; 0 draws no band), one standard error of the mean, or the normal 95 % interval
        of the mean.
    logx, logy : bool
        Logarithmic axes (log-log when both).
    title : str, optional
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
        On an Agg canvas: one line per series and panel (labelled with the series name and, for a
        private series, its accounted guarantee), one band each, and one legend for the figure.
    """
    if not series:
        raise ValidationError("nothing to plot: no results")
    width, band_text = _band_width(band)
    panels = _panels(series, facet)
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(5.0 * ncols, 3.8 * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    colors: dict[str, str] = {}
    guarantees: dict[str, list[str]] = {}
    dashed = False
    for idx, (value, members) in enumerate(panels):
        ax = fig.add_subplot(nrows, ncols, idx + 1)
        names = []
        for s in members:
            other = {k: v for k, v in s.grid.items() if k != facet}
            names.append(f"{s.label} ({format_values(other)})" if other else s.label)
        for s, name, (key, style) in zip(members, names, _styles(members, names, colors)):
            dashed = dashed or style == "--"
            color, marker = _marker(key)
            mean, std = s.curve()
            t = s.checkpoints
            ax.plot(
                t,
                mean,
                color=color,
                linestyle=style,
                marker=marker,
                markevery=max(1, len(t) // 8),
                markersize=4,
                label=name,
                linewidth=1.6,
            )
            shorts = guarantees.setdefault(name, [])
            if s.guarantee.is_private and s.guarantee.short() not in shorts:
                shorts.append(s.guarantee.short())
            w = width(s)
            if w > 0 and s.n > 1:
                ax.fill_between(
                    t, mean - w * std, mean + w * std, color=color, alpha=0.2, linewidth=0
                )
        if logx:
            ax.set_xscale("log")
        if logy:
            ax.set_yscale("log", nonpositive="mask")
        ax.set_xlabel("round t")
        ax.set_ylabel("cumulative regret")
        if value is not None:
            ax.set_title(format_values({axis_name(facet): value}))  # type: ignore[arg-type]
        ax.grid(True, alpha=0.3, which="both" if (logx or logy) else "major")
    # one legend entry per drawn name (the same style in every panel), with its accounted
    # guarantee(s): one per panel when they differ
    seen: dict[str, Any] = {}
    for ax in fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    handles = list(seen.values())
    labels = [_legend_label(n, guarantees.get(n, [])) for n in seen]
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncols=min(3, max(1, len(labels))),
        fontsize="small",
        frameon=False,
    )
    sub = f"band: ± {band_text}\nlegend: accounted guarantee [ε, δ]" + (
        "; dashed: a private algorithm's non-private twin" if dashed else ""
    )  # only what is drawn
    fig.suptitle(f"{title}\n{sub}" if title else sub, fontsize="medium")
    return fig


def _check_formats(formats: Sequence[str]) -> None:
    for fmt in formats:
        if fmt not in FIGURE_FORMATS:
            raise ValidationError(f"figure format must be one of {FIGURE_FORMATS}; got {fmt!r}")


def _save(fig: Figure, out: str | Path, formats: Sequence[str], dpi: int) -> list[Path]:
    base = Path(out)
    base.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        path = base.with_name(base.name + "." + fmt)
        fig.savefig(
            path, format=fmt, dpi=dpi, bbox_inches="tight"
        )  # titles and legends never clipped
        written.append(path)
    return written


def plot_final_vs_param(
    series: Sequence[Series],
    out: str | Path,
    *,
    x: str,
    labels: Sequence[str] = (),
    baselines: Sequence[str] = (),
    errorbars: str = "se",
    logx: bool = False,
    logy: bool = False,
    title: str | None = None,
    formats: Sequence[str] = FIGURE_FORMATS,
    dpi: int = 150,
) -> list[Path]:
    """Final regret against a parameter (e.g. epsilon), one line per series label, with error bars.

    Parameters
    ----------
    series : sequence of Series
        From :func:`~privbandits.experiments.summary.build_series`.
    out : path
        Output path without suffix.
    x : str
        The parameter on the horizontal axis (a grid or fixed parameter of the series).
    labels : sequence of str
        Series labels drawn as lines over ``x`` (default: every label with more than one value of ``x``).
    baselines : sequence of str
        Labels drawn as horizontal reference lines (mean, with a band of the same error-bar width),
        e.g. non-private algorithms.
    errorbars : {"se", "ci95"}
        Half-width of the bars: one standard error of the mean, or 1.96 of them.
    logx, logy : bool
        Logarithmic axes.
    title : str, optional
        Figure title.
    formats, dpi :
        As for :func:`plot_regret`.

    Returns
    -------
    list of Path
        The written files.
    """
    if not series:
        raise ValidationError("nothing to plot: no results")
    if errorbars not in ERRORBARS:
        raise ValidationError(f"errorbars must be one of {tuple(ERRORBARS)}; got {errorbars!r}")
    _check_formats(formats)
    width = ERRORBARS[errorbars]
    by_label: dict[str, list[Series]] = {}
    for s in series:
        if s.value(x) is not None:
            by_label.setdefault(s.label, []).append(s)
    chosen = list(labels) or [lab for lab, members in by_label.items() if len(members) > 1]
    unknown = [lab for lab in (*chosen, *baselines) if lab not in {s.label for s in series}]
    if unknown:
        raise ValidationError(
            f"no results for series {', '.join(map(repr, unknown))}; "
            f"available: {', '.join(dict.fromkeys(s.label for s in series))}"
        )
    missing_x = [lab for lab in chosen if lab not in by_label]
    if missing_x:
        raise ValidationError(f"series {', '.join(map(repr, missing_x))} have no parameter {x!r}")
    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    # one line per label and per combination of its other grid values (e.g. one per epsilon when x is S)
    lines: list[tuple[str, list[Series]]] = []
    for lab in chosen:
        groups: dict[tuple[tuple[str, Any], ...], list[Series]] = {}
        for s in by_label[lab]:
            groups.setdefault(tuple((k, v) for k, v in s.grid.items() if k != x), []).append(s)
        for rest, members in groups.items():
            lines.append(
                (f"{lab} ({format_values(dict(rest))})" if len(groups) > 1 else lab, members)
            )
    for i, (name, group) in enumerate(lines):
        members = sorted(group, key=lambda s: s.value(x))
        xs = [s.value(x) for s in members]
        ys = [s.final_mean for s in members]
        es = [width * s.final_se for s in members]
        note = _accounted_note(members, x)
        ax.errorbar(
            xs,
            ys,
            yerr=es,
            color=_COLORS[i % len(_COLORS)],
            marker="o",
            markersize=4,
            capsize=3,
            linewidth=1.6,
            label=name + note,
        )
    for j, lab in enumerate(baselines):
        s = next(s for s in series if s.label == lab)
        color = _BASELINE_COLORS[j % len(_BASELINE_COLORS)]
        ax.axhline(
            s.final_mean, color=color, linestyle="--", linewidth=1.2, label=f"{lab} (no {x})"
        )
        if s.n > 1:
            ax.axhspan(
                s.final_mean - width * s.final_se,
                s.final_mean + width * s.final_se,
                color=color,
                alpha=0.12,
                linewidth=0,
            )
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log", nonpositive="mask")
    ax.set_xlabel(axis_name(x))
    ax.set_ylabel("final cumulative regret")
    ax.grid(True, alpha=0.3, which="both" if (logx or logy) else "major")
    ax.legend(fontsize="small", frameon=False, loc="best")
    sub = f"mean ± {'1 standard error' if errorbars == 'se' else '95 % normal interval'} over replications"
    fig.suptitle(f"{title}\n{sub}" if title else sub, fontsize="medium")
    return _save(fig, out, formats, dpi)
