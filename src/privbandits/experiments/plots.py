"""Regret curves: mean cumulative regret vs t with a +/- band, one panel per facet value.

The band is ``band`` times the sample standard deviation across all replications of all seeds of
a series (0.5 in Han et al. 2021, Fig. 5.1, and most of the papers implemented here).  Figures are
drawn on matplotlib's Agg canvas directly (no pyplot, no global backend switch), so plotting works
headless and never touches interactive state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_nonnegative
from privbandits.experiments.summary import Series, format_values

__all__ = ["FIGURE_FORMATS", "plot_regret", "regret_figure"]

FIGURE_FORMATS: tuple[str, ...] = ("png", "pdf")
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")


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
        raise ValidationError(f"facet {facet!r} is not a parameter of any result; "
                              f"available: {', '.join(keys) or '(none)'}")
    values.sort(key=lambda v: (isinstance(v, str), v))
    return [(v, [s for s in series if s.value(facet) in (None, v)]) for v in values]


def plot_regret(series: Sequence[Series], out: str | Path, *, facet: str | None = None, band: float = 0.5,
                logx: bool = False, logy: bool = False, title: str | None = None,
                formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """Draw mean +/- ``band`` x std cumulative-regret curves (:func:`regret_figure`) and save them.

    Parameters
    ----------
    series, facet, band, logx, logy, title
        As for :func:`regret_figure`.
    out : path
        Output path without suffix; one file per format is written (``out.png``, ``out.pdf``).
    formats : sequence of {"png", "pdf"}
        Files to write.

    Returns
    -------
    list of Path
        The written files.
    """
    for fmt in formats:
        if fmt not in FIGURE_FORMATS:
            raise ValidationError(f"figure format must be one of {FIGURE_FORMATS}; got {fmt!r}")
    fig = regret_figure(series, facet=facet, band=band, logx=logx, logy=logy, title=title)
    base = Path(out)
    base.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        path = base.with_name(base.name + "." + fmt)
        fig.savefig(path, format=fmt, dpi=150)
        written.append(path)
    return written


def regret_figure(series: Sequence[Series], *, facet: str | None = None, band: float = 0.5,
                  logx: bool = False, logy: bool = False, title: str | None = None) -> Figure:
    """The figure of mean +/- ``band`` x std cumulative-regret curves, one panel per facet value.

    Parameters
    ----------
    series : sequence of Series
        From :func:`~privbandits.experiments.summary.build_series`.
    facet : str, optional
        Parameter (e.g. ``"epsilon"``) whose values get one panel each.
    band : float
        Half-width of the shaded band in standard deviations (>= 0; 0 draws no band).
    logx, logy : bool
        Logarithmic axes (log-log when both).
    title : str, optional
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
        On an Agg canvas; one line (labelled with the series name) and one band per series and panel.
    """
    if not series:
        raise ValidationError("nothing to plot: no results")
    band = check_nonnegative("band", band)
    panels = _panels(series, facet)
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(5.0 * ncols, 3.8 * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    colors: dict[str, str] = {}
    for idx, (value, members) in enumerate(panels):
        ax = fig.add_subplot(nrows, ncols, idx + 1)
        for s in members:
            mean, std = s.curve()
            t = s.checkpoints
            other = {k: v for k, v in s.grid.items() if k != facet}
            name = f"{s.label} ({format_values(other)})" if other else s.label
            color = colors.setdefault(name, _COLORS[len(colors) % len(_COLORS)])
            ax.plot(t, mean, color=color, label=name, linewidth=1.6)
            if band > 0 and s.n > 1:
                ax.fill_between(t, mean - band * std, mean + band * std, color=color, alpha=0.2, linewidth=0)
        if logx:
            ax.set_xscale("log")
        if logy:
            ax.set_yscale("log", nonpositive="mask")
        ax.set_xlabel("round t")
        ax.set_ylabel("cumulative regret")
        if value is not None:
            ax.set_title(format_values({facet: value}))  # type: ignore[dict-item]
        ax.grid(True, alpha=0.3, which="both" if (logx or logy) else "major")
        ax.legend(fontsize="small", frameon=False)
    sub = f"mean ± {band:g} std over replications and seeds"
    fig.suptitle(f"{title}\n{sub}" if title else sub, fontsize="medium")
    return fig
