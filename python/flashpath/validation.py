"""The validation page: every reproduce row against its published value and
the scenario's own criterion (``flashpath reproduce all --report FILE``).

A scenario states what "reproduced" means in its ``[[criteria]]`` (copied
from SEEDS.md; the model never reads them):

- ``kind = "value"``: each row with a published value is within
  ``tolerance_pct`` percent of it;
- ``kind = "difference"``: the second mode against the first, in percent,
  is within ``tolerance_points`` of the published difference (from the two
  published values, or ``published_diff`` where a source gives only the
  difference), and with ``sign = true`` has the published sign;
- ``cases`` (``{ key = [values] }`` over the case's ``key=value`` parts) and
  ``metrics`` narrow a criterion to some rows.

A row with no published value is held out (SEEDS.md keeps some back on
purpose): the page shows the simulated value and counts it in no total.
The page is text only; the plots are written beside it, one per scenario,
and named from it. Its bytes depend only on the rows, so CI can hold it as
a golden file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from flashpath import outputs
from flashpath.reproduce import Row


@dataclass
class Check:
    """One criterion applied to one row (value) or one case and metric
    (difference)."""

    scenario: str
    case: str
    metric: str
    mode: str  # "with vs without" for a difference
    published: float | None
    simulated: float
    error: float | None  # percent for a value, points for a difference
    tolerance: str
    inside: bool | None  # None: held out

    @property
    def held_out(self) -> bool:
        return self.inside is None


def _case_parts(case: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in case.split(",") if "=" in part)


def _selects(criterion: dict[str, Any], case: str, metric: str) -> bool:
    metrics = criterion.get("metrics")
    if metrics is not None and metric not in metrics:
        return False
    parts = _case_parts(case)
    return all(parts.get(key) in values for key, values in criterion.get("cases", {}).items())


def _pct(sim: float, pub: float) -> float:
    return (sim - pub) / pub * 100


def checks(doc: dict[str, Any], rows: list[Row]) -> list[Check]:
    """Every criterion of scenario `doc` applied to its `rows`, in the
    rows' order (a difference after its case's last mode)."""
    criteria = doc.get("criteria", [])
    out: list[Check] = []
    by_case: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        by_case.setdefault((r.case, r.metric), []).append(r)
    done: set[tuple[str, str]] = set()
    for r in rows:
        for c in criteria:
            if c["kind"] != "value" or not _selects(c, r.case, r.metric):
                continue
            tol = float(c["tolerance_pct"])
            err = None if r.published is None else _pct(r.simulated, r.published)
            out.append(
                Check(
                    r.scenario, r.case, r.metric, r.mode, r.published, r.simulated, err,
                    f"±{tol:g}%", None if err is None else abs(err) <= tol,
                )
            )
        key = (r.case, r.metric)
        group = by_case[key]
        if r is not group[-1] or key in done or len(group) < 2:
            continue
        done.add(key)
        first, second = group[0], group[1]
        for c in criteria:
            if c["kind"] != "difference" or not _selects(c, r.case, r.metric):
                continue
            sim = _pct(second.simulated, first.simulated) if first.simulated else 0.0
            if first.published and second.published is not None:
                pub: float | None = _pct(second.published, first.published)
            else:
                pub = second.published_diff
            parts = []
            inside: bool | None = None
            if "tolerance_points" in c:
                parts.append(f"±{float(c['tolerance_points']):g} points")
            if c.get("sign"):
                parts.append("same sign")
            if pub is not None:
                inside = True
                if "tolerance_points" in c:
                    inside = abs(sim - pub) <= float(c["tolerance_points"])
                if c.get("sign"):
                    inside = inside and (sim > 0) == (pub > 0)
            out.append(
                Check(
                    r.scenario, r.case, r.metric, f"{second.mode} vs {first.mode}", pub, sim,
                    None if pub is None else sim - pub, ", ".join(parts), inside,
                )
            )
    return out


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.4g}"


def _signed(x: float | None, unit: str) -> str:
    return "" if x is None else f"{x:+.1f}{unit}"


def _verdict(c: Check) -> str:
    if c.inside is None:
        return "held out"
    return "yes" if c.inside else "**no**"


def page(
    docs: list[dict[str, Any]],
    rows: list[Row],
    plots: dict[str, str],
    extra: Iterable[str] = (),
) -> str:
    """The page's Markdown: a summary, then per scenario its criterion,
    plot, checks and held-out rows; `extra` sections follow."""
    per: dict[str, list[Row]] = {}
    for r in rows:
        per.setdefault(r.scenario, []).append(r)
    all_checks = {doc["name"]: checks(doc, per.get(doc["name"], [])) for doc in docs}
    lines = [
        "# Validation: flashpath against the published results",
        "",
        "Generated by `flashpath reproduce all --report docs/validation.md`",
        "(seed 0); do not edit by hand. CI checks that it is current. Each",
        "scenario's criterion is SEEDS.md's \"reproduced means\", kept in its",
        "`scenarios/NAME/scenario.toml` as `[[criteria]]`. Rows without a",
        "published value are held out on purpose: their simulated values are",
        "predictions, listed but not counted.",
        "",
        "| scenario | checks inside | held out | criterion |",
        "|---|---|---|---|",
    ]
    total = inside = 0
    for doc in docs:
        cs = all_checks[doc["name"]]
        n = sum(1 for c in cs if not c.held_out)
        k = sum(1 for c in cs if c.inside)
        held = sum(1 for c in cs if c.held_out)
        total, inside = total + n, inside + k
        lines.append(f"| {doc['name']} | {k} of {n} | {held} | {_criterion_text(doc)} |")
    lines += [f"| **all** | **{inside} of {total}** | | |", ""]
    for doc in docs:
        name = doc["name"]
        lines += [f"## {name}", "", doc.get("description", ""), ""]
        lines += [f"Criterion: {_criterion_text(doc)}.", ""]
        if name in plots:
            lines += [f"![{name}]({plots[name]})", ""]
        cs = all_checks[name]
        values = [c for c in cs if " vs " not in c.mode]
        diffs = [c for c in cs if " vs " in c.mode]
        if values:
            lines += [
                "| case | metric | mode | published | simulated | error | tolerance | inside |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for c in values:
                lines.append(
                    f"| {c.case} | {c.metric} | {c.mode} | {_num(c.published)} | "
                    f"{_num(c.simulated)} | {_signed(c.error, '%')} | {c.tolerance} | "
                    f"{_verdict(c)} |"
                )
            lines.append("")
        if diffs:
            lines += [
                "| case | metric | difference | published | simulated | error | tolerance "
                "| inside |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for c in diffs:
                lines.append(
                    f"| {c.case} | {c.metric} | {c.mode} | {_signed(c.published, '%')} | "
                    f"{_signed(c.simulated, '%')} | {_signed(c.error, ' pt')} | "
                    f"{c.tolerance} | {_verdict(c)} |"
                )
            lines.append("")
        checked = {(c.case, c.metric, c.mode) for c in values}
        rest = [r for r in per.get(name, []) if (r.case, r.metric, r.mode) not in checked]
        if rest:
            lines += [
                "Rows no criterion covers (simulated; published where given):",
                "",
                "| case | metric | mode | published | simulated |",
                "|---|---|---|---|---|",
            ]
            for r in rest:
                lines.append(
                    f"| {r.case} | {r.metric} | {r.mode} | {_num(r.published)} | "
                    f"{_num(r.simulated)} |"
                )
            lines.append("")
    for section in extra:
        lines += [section.rstrip(), ""]
    return "\n".join(lines).rstrip() + "\n"


def _criterion_text(doc: dict[str, Any]) -> str:
    parts = []
    for c in doc.get("criteria", []):
        where = "; ".join(f"{k} in {', '.join(v)}" for k, v in c.get("cases", {}).items())
        what = ", ".join(c.get("metrics", [])) or "every metric"
        if c["kind"] == "value":
            text = f"{what} within {float(c['tolerance_pct']):g}%"
        else:
            bits = []
            if "tolerance_points" in c:
                bits.append(f"within {float(c['tolerance_points']):g} points")
            if c.get("sign"):
                bits.append("with the published sign")
            text = f"{what}: difference between modes {' and '.join(bits)}"
        parts.append(f"{text} ({where})" if where else text)
    return "; ".join(parts) if parts else "none stated"


def write_plots(
    rows: list[Row],
    folder: str,
    plotters: dict[str, Callable[[list[Row], str], None]],
    fallback: Callable[[list[Row], str], None],
) -> dict[str, str]:
    """One SVG per scenario in `folder`; returns scenario -> file name.
    The SVGs carry a fixed date (SOURCE_DATE_EPOCH, which matplotlib honours
    for reproducible builds) and a fixed id salt, so a rerun with the same
    matplotlib rewrites the same bytes."""
    os.makedirs(folder, exist_ok=True)
    per: dict[str, list[Row]] = {}
    for r in rows:
        per.setdefault(r.scenario, []).append(r)
    names: dict[str, str] = {}

    def draw() -> None:
        for name, rs in per.items():
            path = os.path.join(folder, f"{name}.svg")
            with outputs.replacing(path, "--report", image=True) as tmp:
                plotters.get(name, fallback)(rs, tmp)
            names[name] = path

    _with_fixed_date(draw)
    return names


def _with_fixed_date(draw: Callable[[], None]) -> None:
    """Run `draw` with matplotlib set for reproducible SVGs: a fixed date
    (SOURCE_DATE_EPOCH) and a fixed id salt."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "flashpath-validation"
    matplotlib.rcParams["svg.fonttype"] = "none"
    saved = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = "0"
    try:
        draw()
    finally:
        if saved is None:
            del os.environ["SOURCE_DATE_EPOCH"]
        else:
            os.environ["SOURCE_DATE_EPOCH"] = saved


FTL_TOLERANCE_PCT = 5.0  # issue 16.5: "fix the FTL where it is off by more than 5%"


def ftl_wa_rows() -> list[dict[str, float]]:
    """The FTL's steady-state write amplification against the closed form
    at 7-50% spare (the core's ``wa_table``, as
    ``cargo run --release -p flashpath --example ftl_wa`` prints it)."""
    from flashpath import _core

    return _core.ftl_wa_table()


def ftl_section(wa: list[dict[str, float]], plot: str | None) -> str:
    """The page's section for the FTL write-amplification curve."""
    lines = [
        "## FTL write amplification",
        "",
        "Uniform random 4 KiB writes at steady state on one die of 512 blocks",
        "x 512 units, greedy cleaning, against the closed form for LRW /",
        "large-block greedy (Desnoyers, SYSTOR 2012; Hu et al., SYSTOR 2009) at",
        "the effective spare (GC reserve taken out); docs/ftl-write-amplification.md",
        "derives it. Criterion: simulated within "
        f"{FTL_TOLERANCE_PCT:g}% of the closed form.",
        "",
    ]
    if plot:
        lines += [f"![ftl-wa]({plot})", ""]
    lines += [
        "| over-provisioning | effective spare | analytic WA | greedy mean field "
        "| simulated WA | error | inside |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in wa:
        err = (r["simulated_wa"] / r["analytic_wa"] - 1) * 100
        ok = "yes" if abs(err) <= FTL_TOLERANCE_PCT else "**no**"
        lines.append(
            f"| {r['over_provisioning'] * 100:.0f}% | {r['effective_spare_factor'] * 100:.2f}% | "
            f"{r['analytic_wa']:.3f} | {r['greedy_mean_field_wa']:.3f} | "
            f"{r['simulated_wa']:.3f} | {err:+.1f}% | {ok} |"
        )
    return "\n".join(lines) + "\n"


def plot_ftl(wa: list[dict[str, float]], path: str) -> None:
    """WA against the effective spare factor: the closed-form curve and the
    simulated points."""
    import matplotlib.pyplot as plt

    xs = [r["effective_spare_factor"] * 100 for r in wa]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(xs, [r["analytic_wa"] for r in wa], "-", label="closed form (LRW)")
    ax.plot(xs, [r["greedy_mean_field_wa"] for r in wa], ":", label="greedy mean field")
    ax.plot(xs, [r["simulated_wa"] for r in wa], "o", label="flashpath FTL")
    ax.set_xlabel("effective spare factor (%)")
    ax.set_ylabel("write amplification")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    with outputs.replacing(path, "--report", image=True) as tmp:
        fig.savefig(tmp)
    plt.close(fig)


def docs_for(rows: list[Row]) -> list[dict[str, Any]]:
    """The scenario documents of `rows`, in the rows' order."""
    from flashpath.reproduce import scenarios

    known = scenarios()
    names = list(dict.fromkeys(r.scenario for r in rows))
    return [known[n] for n in names]


def write_report(
    rows: list[Row], path: str, wa: list[dict[str, float]] | None = None
) -> str:
    """Write the page to `path` and its plots to the folder named as the
    page without its extension (docs/validation.md -> docs/validation/),
    with the FTL section when `wa` (from :func:`ftl_wa_rows`) is given;
    returns the page's text."""
    from flashpath import reproduce as rp

    stem = os.path.splitext(path)[0]
    folder_name = os.path.basename(stem)
    written = write_plots(rows, stem, rp.PLOTTERS, rp.plot)
    links = {name: f"{folder_name}/{os.path.basename(p)}" for name, p in written.items()}
    extra = []
    if wa is not None:
        ftl_plot = os.path.join(stem, "ftl-wa.svg")
        _with_fixed_date(lambda: plot_ftl(wa, ftl_plot))
        extra.append(ftl_section(wa, f"{folder_name}/ftl-wa.svg"))
    text = page(docs_for(rows), rows, links, extra)
    outputs.write_text(path, text, "--report")
    return text
