"""`flashpath plot`: a sweep's table (Parquet) or one run's fio JSON
output as a line plot, a latency CDF or a per-layer breakdown."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flashpath import fiojson
from flashpath._messages import shown

KINDS = ("line", "cdf", "breakdown")
# The layers of breakdown_ns_per_io, bottom to top (machine/ Breakdown).
LAYERS = ("submit", "tag_wait", "device", "cstate_exit", "irq", "wakeup", "poll", "reap")
_PERCENTILE = re.compile(r"^(?P<lat>[a-z]+_ns)\.p(?P<p>[0-9.]+)$")


class PlotError(Exception):
    """A plot that cannot be drawn: one message for the user."""


# A run's fio JSON output is well under this (json+ histograms included).
JSON_MAX = 64 << 20


def _read_run(path: str) -> dict[str, Any]:
    """A run's fio JSON document, checked for what the table's rows are
    built from (`check_run`)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(JSON_MAX + 1)
        if len(raw) > JSON_MAX:
            raise PlotError(f"{shown(path)}: longer than {JSON_MAX >> 20} MiB: not a run's output")
        # fio's JSON is decoded by the one reader (docs/fio-json.md); a
        # table needs less than fio's whole layout (`check_run`).
        doc = fiojson.decode(raw.decode("utf-8"), shown(path))
    except fiojson.FioJsonError as exc:
        raise PlotError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlotError(f"{shown(path)}: not a fio JSON output: {exc}") from None
    check_run(doc, path)
    return doc


def check_run(doc: Any, path: str) -> None:
    """What a table built from a run's fio JSON needs (sweep_table.rows_of_run
    and the json+ histograms): "jobs" a list of jobs, each with a text
    jobname, an integer groupid, its directions tables with a whole
    total_ios, and json+ bins of whole counts keyed by whole ns."""
    name = shown(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise PlotError(f'{name}: not a fio JSON output (no "jobs")')
    if not isinstance(doc.get("disk_util") or [], list):
        raise PlotError(f"{name}: disk_util: not a list of disks")
    for i, job in enumerate(doc["jobs"]):
        at = f"{name}: jobs[{i}]"
        if not isinstance(job, dict):
            raise PlotError(f"{at}: not a job (a JSON object)")
        if not isinstance(job.get("jobname"), str):
            raise PlotError(f"{at}: no jobname (text)")
        groupid = job.get("groupid")
        if isinstance(groupid, bool) or not isinstance(groupid, int):
            raise PlotError(f"{at}: no groupid (an integer)")
        for ddir in ("read", "write", "trim"):
            d = job.get(ddir)
            if d is None:
                continue
            if not isinstance(d, dict):
                raise PlotError(f"{at}.{ddir}: not a table of figures")
            ios = d.get("total_ios", 0)
            if isinstance(ios, bool) or not isinstance(ios, int) or ios < 0:
                raise PlotError(f"{at}.{ddir}.total_ios: not a count of I/Os")
            for kind, lat in d.items():
                if not isinstance(lat, dict) or "bins" not in lat:
                    continue
                bins = lat["bins"]
                ok = isinstance(bins, dict) and all(
                    k.isdigit() and isinstance(v, int) and not isinstance(v, bool) and v >= 0
                    for k, v in bins.items()
                )
                if not ok:
                    raise PlotError(
                        f"{at}.{ddir}.{kind}.bins: not fio's json+ bins (ns -> count of I/Os)"
                    )


def load(path: str) -> Any:
    """A sweep's table (.parquet) or a run's fio JSON (`flashpath run
    --output-format json`) as a DataFrame with the sweep table's columns;
    a table without rows is refused."""
    import pandas as pd

    from flashpath.sweep_table import rows_of_run

    if Path(path).suffix.lower() == ".json":
        df = pd.DataFrame(rows_of_run(_read_run(path)))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            df = pq.read_table(path).to_pandas()
        except (OSError, pa.ArrowException, ValueError, RecursionError) as exc:
            raise PlotError(f"{shown(path)}: not a Parquet table: {exc}") from None
    if df.empty:
        raise PlotError(f"{shown(path)}: the table has no rows: nothing to plot")
    return df


def _numeric(df: Any, column: str, what: str) -> None:
    """Refuse a column that is not numbers (text, booleans, a mix): a plot
    of it would fail inside matplotlib or pandas."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    series = df[column]
    if is_numeric_dtype(series) and not is_bool_dtype(series):
        return
    sample = next((v for v in series if v is not None), None)
    raise PlotError(
        f"{what} {shown(column)}: not a column of numbers (it holds values such as "
        f"{shown(str(sample), limit=30)}); name a numeric column"
    )


def _column(df: Any, key: str, what: str) -> str:
    if key in df.columns:
        return key
    hint = difflib.get_close_matches(key, [str(c) for c in df.columns], n=1)
    also = f"; did you mean {hint[0]!r}?" if hint else ""
    raise PlotError(f"{what} {shown(key)}: no such column{also}")


def select(df: Any, where: Sequence[str]) -> Any:
    """Rows whose KEY equals VALUE for each `KEY=VALUE` (compared as text,
    so `fio.iodepth=4` and `ddir=read` both work)."""
    for cond in where:
        key, eq, value = cond.partition("=")
        if not eq:
            raise PlotError(f"--where {shown(cond)}: write KEY=VALUE")
        col = _column(df, key, "--where")
        text = df[col].map(lambda v: str(v).lower() if isinstance(v, bool) else str(v))
        df = df[text == value]
        if df.empty:
            raise PlotError(f"--where {shown(cond)}: no row has {key} = {shown(value)}")
    return df


def _ordered(values: Sequence[Any]) -> list[Any]:
    """Distinct values: sorted when numbers, else in table order."""
    distinct = list(dict.fromkeys(v for v in values if v is not None))
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in distinct):
        return sorted(distinct)
    return distinct


def _save(fig: Any, path: str) -> None:
    """The image, written by the output rule (flashpath.outputs): whole,
    under the very name given (a name without an extension holds a PNG)."""
    from flashpath import outputs

    with outputs.replacing(path, "--output", image=True) as tmp:
        fig.savefig(tmp)


def _figure(width: float = 7.0, height: float = 4.5) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    return fig, fig.add_subplot()


def plot_line(df: Any, x: str, y: str, hue: str | None, path: str) -> Any:
    """Mean of Y against X, one line per HUE value; the band spans the
    smallest to the largest value at each X (seeds, jobs, directions)."""
    x, y = _column(df, x, "--x"), _column(df, y, "--y")
    _numeric(df, y, "--y")
    hue = _column(df, hue, "--hue") if hue else None
    fig, ax = _figure()
    xs = _ordered(list(df[x]))
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in xs)
    groups = _ordered(list(df[hue])) if hue else [None]
    for g in groups:
        part = df if g is None else df[df[hue] == g]
        stats = part.groupby(x, sort=False)[y].agg(["mean", "min", "max"])
        here = [v for v in xs if v in stats.index]
        pos = here if numeric else [xs.index(v) for v in here]
        label = None if g is None else f"{hue}={g}"
        ax.plot(pos, [stats.loc[v, "mean"] for v in here], "-o", label=label)
        lo, hi = [stats.loc[v, "min"] for v in here], [stats.loc[v, "max"] for v in here]
        if lo != hi:
            ax.fill_between(pos, lo, hi, alpha=0.2)
    if not numeric:
        ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    elif len(xs) > 2 and xs[0] > 0 and xs[-1] / xs[0] >= 16:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(alpha=0.3)
    if hue:
        ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)
    return fig


def plot_cdf(df: Any, latency: str, hue: str | None, path: str) -> Any:
    """The latency distribution (fio's percentiles of `latency`, e.g.
    clat_ns) as a CDF, one curve per HUE value (or per job and direction
    for a single run); several rows per curve are averaged percentile by
    percentile."""
    latency = latency.removesuffix(".")
    columns = [c for c in df.columns if (m := _PERCENTILE.match(str(c))) and m["lat"] == latency]
    if not columns:
        kinds = sorted({m["lat"] for c in df.columns if (m := _PERCENTILE.match(str(c)))})
        raise PlotError(
            f"--y {shown(latency)}: no percentiles of that latency (the table has "
            f"{', '.join(kinds) or 'none'}; fio reports clat_ns, and lat_ns with lat_percentiles)"
        )
    for c in columns:
        _numeric(df, c, "--y")
    columns.sort(key=lambda c: float(_PERCENTILE.match(c)["p"]))  # type: ignore[index]
    fractions = [float(_PERCENTILE.match(c)["p"]) / 100 for c in columns]  # type: ignore[index]
    if hue:
        hue = _column(df, hue, "--hue")
        series = [(f"{hue}={g}", df[df[hue] == g]) for g in _ordered(list(df[hue]))]
    else:
        keys = [k for k in ("job", "ddir") if k in df.columns and df[k].nunique() > 1]
        if keys:
            series = [
                (" ".join(map(str, g if isinstance(g, tuple) else (g,))), part)
                for g, part in df.groupby(keys, sort=False)
            ]
        else:
            series = [(None, df)]
    fig, ax = _figure()
    lows, highs = [], []
    for label, part in series:
        values = part[columns].mean()
        xs = [values[c] / 1000 for c in columns]
        ax.plot(xs, fractions, "-", label=label)
        lows.append(min(xs))
        highs.append(max(xs))
    _log_x_if_wide(ax, lows, highs)
    ax.set_xlabel(f"{latency.removesuffix('_ns')} (us)")
    ax.set_ylabel("fraction of I/Os at or below")
    ax.set_ylim(0, 1.0)
    ax.grid(alpha=0.3)
    if any(label for label, _ in series):
        ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)
    return fig


def _histogram(source: str, latency: str) -> dict[str, dict[int, int]] | None:
    """A single run's json+ latency histogram of `latency` (clat_ns...):
    per job and direction, fio's bins (ns -> I/Os); None for a table or a
    run written without json+ bins."""
    if Path(source).suffix.lower() != ".json":
        return None
    doc = _read_run(source)
    out: dict[str, dict[int, int]] = {}
    for job in doc["jobs"]:
        for ddir in ("read", "write", "trim"):
            # `latency` names any figure (--y iops): only a latency's
            # table has bins (check_run checked them).
            figure = (job.get(ddir) or {}).get(latency)
            bins = figure.get("bins") if isinstance(figure, dict) else None
            if bins:
                out[f"{job['jobname']} {ddir}"] = {int(k): int(v) for k, v in bins.items()}
    return out or None


def plot_histogram_cdf(series: dict[str, dict[int, int]], latency: str, path: str) -> Any:
    """A single run's latency CDF from fio's json+ histogram bins (every
    I/O counted, at fio's bin resolution), one step curve per job and
    direction."""
    fig, ax = _figure()
    for label, bins in series.items():
        total = sum(bins.values())
        running = 0
        # From 0 below the first bin, so a curve that jumps there shows it.
        xs, ys = [min(bins) / 1000], [0.0]
        for ns in sorted(bins):
            running += bins[ns]
            xs.append(ns / 1000)
            ys.append(running / total)
        ax.step(xs, ys, where="post", label=label)
    _log_x_if_wide(ax, [min(b) for b in series.values()], [max(b) for b in series.values()])
    ax.set_xlabel(f"{latency.removesuffix('_ns')} (us)")
    ax.set_ylabel("fraction of I/Os at or below")
    ax.set_ylim(0, 1.0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)
    return fig


def _log_x_if_wide(ax: Any, lows: Sequence[float], highs: Sequence[float]) -> None:
    """Latencies over more than two decades read better on a log axis."""
    if lows and min(lows) > 0 and max(highs) / min(lows) > 100:
        ax.set_xscale("log")


def plot_breakdown(df: Any, x: str | None, path: str) -> Any:
    """Where an I/O's time goes: stacked bars of the mean ns per I/O in
    each layer (flashpath's breakdown_ns_per_io), one bar per X value (or
    per job for a single run)."""
    layers = [(k, f"fp.breakdown_ns_per_io.{k}") for k in LAYERS]
    layers = [(k, c) for k, c in layers if c in df.columns]
    if not layers:
        raise PlotError("the table has no fp.breakdown_ns_per_io columns")
    for _, c in layers:
        _numeric(df, c, "breakdown column")
    x = _column(df, x, "--x") if x else ("job" if "job" in df.columns else None)
    if x is None:
        raise PlotError("--x: name the column to put on the x axis")
    xs = _ordered(list(df[x]))
    means = df.groupby(x, sort=False)[[c for _, c in layers]].mean()
    fig, ax = _figure(max(6.0, 0.6 * len(xs) + 3), 4.5)
    bottom = [0.0] * len(xs)
    for key, col in layers:
        heights = [float(means.loc[v, col]) / 1000 for v in xs]
        if not any(heights):
            continue
        ax.bar(range(len(xs)), heights, bottom=bottom, label=key)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    ax.set_xlabel(x)
    ax.set_ylabel("us per I/O")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    _save(fig, path)
    return fig


def plot(
    source: str,
    out: str,
    kind: str = "line",
    x: str | None = None,
    y: str | None = None,
    hue: str | None = None,
    where: Sequence[str] = (),
) -> Any:
    """Draw `source` to `out`; returns the matplotlib Figure. `out` is
    checked by the output rule (flashpath.outputs) first: never the
    table itself, a folder or a device node."""
    from flashpath import outputs

    outputs.check_output(out, "--output", [outputs.Named(source, "the table")])
    df = select(load(source), where)
    if kind == "line":
        if not x or not y:
            raise PlotError("--kind line: give --x and --y")
        return plot_line(df, x, y, hue, out)
    if kind == "cdf":
        bins = _histogram(source, y or "clat_ns") if not where and not hue else None
        if bins:
            return plot_histogram_cdf(bins, y or "clat_ns", out)
        return plot_cdf(df, y or "clat_ns", hue, out)
    if kind == "breakdown":
        return plot_breakdown(df, x, out)
    raise PlotError(f"--kind {shown(kind)}: one of {', '.join(KINDS)}")
