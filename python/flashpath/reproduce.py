"""``flashpath reproduce``: run a published experiment's grid and compare.

A scenario lives in ``scenarios/<name>/scenario.toml`` (embedded in the
core at build time, so the installed package has them):

    name = "io-poll"
    description = "..."
    metrics = { latency_us = "read.lat_mean_us", bandwidth_MBps = "read.bw_MBps" }
    modes = { irq = ["block.io_poll=0"], poll = ["block.io_poll=1"] }
    mode_order = ["irq", "poll"]

    [[cases]]
    case = "device=dram"
    profile = "nvme-dram"
    job = '''
    [dd]
    ...
    '''
    published = { "latency_us.irq" = 19.5 }

Each case runs once per mode (the mode's ``--set`` overrides added to the
case's own ``overrides``); each metric is read from the run's fio JSON by a
named extractor. Published values are data here, to compare against; the
simulator never sees them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flashpath import _core, fiojson
from flashpath._core import FlashpathError
from flashpath._messages import shown
from flashpath.engine import Done, Task, TaskFailed, run_tasks
from flashpath.progress import Progress


@dataclass
class Row:
    scenario: str
    case: str
    metric: str
    mode: str
    simulated: float
    published: float | None
    counters: dict[str, Any] = field(default_factory=dict)
    # Published patched-vs-base difference in percent, where a source gives
    # only the difference (on the second mode's row).
    published_diff: float | None = None


# Extractors: "<ddir>.<stat>" over a fio JSON document (all jobs summed for
# bandwidth, I/O-weighted for latency): fiojson.EXTRACTORS names each
# stat's figure in the reader's namespace and how the jobs combine.
def _dir_stat(doc: dict[str, Any], ddir: str, stat: str) -> float:
    return fiojson.aggregate(fiojson.read(doc, "<run>"), ddir, stat)


def extract(doc: dict[str, Any], extractor: str) -> float:
    ddir, _, stat = extractor.partition(".")
    if ddir in ("read", "write", "trim"):
        return _dir_stat(doc, ddir, stat)
    if ddir in EXTRA_EXTRACTORS:
        return EXTRA_EXTRACTORS[ddir](doc, stat)
    raise KeyError(extractor)


# Scenario-specific extractors (e.g. iozone throughput) register here:
# name -> f(document, stat) -> float.
EXTRA_EXTRACTORS: dict[str, Callable[[dict[str, Any], str], float]] = {}


def _dd_stat(doc: dict[str, Any], stat: str) -> float:
    """dd's own summary of a run of reads: elapsed time per read (us) and
    MB/s in 10^6 bytes per second, from the job's runtime and bytes."""
    run = fiojson.read(doc, "<run>")
    dirs = [d for j in run.jobs if (d := j.direction("read")) is not None]
    if not dirs:
        return 0.0
    runtime_ms = max(d.runtime_ms or 0.0 for d in dirs)
    ios = sum(d.ios for d in dirs)
    nbytes = sum(d.io_bytes or 0.0 for d in dirs)
    if runtime_ms == 0:
        return 0.0
    if stat == "latency_us":
        return runtime_ms * 1000 / ios
    if stat == "bandwidth_MBps":
        return nbytes / (runtime_ms / 1000) / 1e6
    raise KeyError(stat)


EXTRA_EXTRACTORS["dd"] = _dd_stat


def _read_write(doc: dict[str, Any], stat: str) -> float:
    """Reads and writes together ("rw.bw_MBps"): bandwidths add."""
    if stat not in ("bw_MBps", "bw_MiBps", "bw_kBps", "iops"):
        raise KeyError(f"rw.{stat}")
    return _dir_stat(doc, "read", stat) + _dir_stat(doc, "write", stat)


EXTRA_EXTRACTORS["rw"] = _read_write

# Scenario-specific runners (e.g. iozone command lines) register here: the
# key of the case that holds the workload -> f(case, profile, overrides, seed)
# -> document.
RUNNERS: dict[str, Callable[[dict[str, Any], str, list[str], int], dict[str, Any]]] = {}


def _run_fio(case: dict[str, Any], profile: str, overrides: list[str], seed: int) -> dict[str, Any]:
    run = _core.run_job_text(
        case["job"], f"<case {case['case']}>", os.getcwd(), profile, overrides, seed, "json+"
    )
    return json.loads(run.json_text)


RUNNERS["job"] = _run_fio


def scenarios() -> dict[str, dict[str, Any]]:
    out = {}
    for name, text in _core.scenario_files():
        if name.endswith("/scenario"):
            doc = tomllib.loads(text)
            out[doc["name"]] = doc
    return out


def _run_case(runner_key: str, case: dict[str, Any], overrides: list[str], seed: int) -> Any:
    """One simulation of a case in one mode (in a worker process)."""
    return RUNNERS[runner_key](case, case["profile"], overrides, seed)


def _case_tasks(doc: dict[str, Any], seed: int) -> list[tuple[tuple[int, str], Task]]:
    """Each case of a scenario in each mode: ((case number, mode), task)."""
    tasks = []
    modes: dict[str, list[str]] = doc["modes"]
    for i, case in enumerate(doc["cases"]):
        runner_key = next(k for k in RUNNERS if k in case)
        for mode in doc.get("mode_order", list(modes)):
            overrides = list(case.get("overrides", [])) + list(modes[mode])
            label = f"{doc['name']} {case['case']} {mode}"
            tasks.append(((i, mode), Task(label, _run_case, (runner_key, case, overrides, seed))))
    return tasks


def _rows(doc: dict[str, Any], docs: dict[tuple[int, str], dict[str, Any]]) -> list[Row]:
    """A scenario's rows from its runs' documents, case by case, metric by
    metric, mode by mode."""
    rows: list[Row] = []
    modes: dict[str, list[str]] = doc["modes"]
    mode_order = doc.get("mode_order", list(modes))
    for i, case in enumerate(doc["cases"]):
        published = case.get("published", {})
        published_diff = case.get("published_diff", {})
        # A case may name its own extractors (swcmdq: one iozone test per case).
        for metric, extractor in case.get("metrics", doc["metrics"]).items():
            if metric in case.get("skip_metrics", []):
                continue
            for mode in mode_order:
                run_doc = docs[(i, mode)]
                rows.append(
                    Row(
                        doc["name"],
                        case["case"],
                        metric,
                        mode,
                        extract(run_doc, extractor),
                        published.get(f"{metric}.{mode}"),
                        run_doc.get("flashpath") or {},
                        published_diff.get(metric) if mode == mode_order[-1] else None,
                    )
                )
    return rows


@dataclass
class Ran:
    """How a grid ran, for the summary line."""

    runs: int = 0
    wall_s: float = 0.0
    workers: int = 1


def run_scenarios(
    docs: list[dict[str, Any]],
    seed: int = 0,
    jobs: int = 1,
    show_progress: bool | None = False,
    ran: Ran | None = None,
) -> list[Row]:
    """The rows of `docs`' grids, in the order the scenarios, cases,
    metrics and modes are listed; the runs themselves go to `jobs` worker
    processes (flashpath.engine) in any order, which cannot change a
    number: each run is deterministic and alone."""
    tasks = [(n, key, task) for n, doc in enumerate(docs) for key, task in _case_tasks(doc, seed)]
    results: dict[int, dict[tuple[int, str], dict[str, Any]]] = {n: {} for n in range(len(docs))}
    names = ", ".join(doc["name"] for doc in docs)
    progress = Progress(f"reproduce {names}", len(tasks), show=show_progress)

    def finished(i: int, done: Done) -> None:
        n, key, task = tasks[i]
        results[n][key] = done.value
        progress.advance(task.label)

    try:
        run_tasks([task for _, _, task in tasks], finished, jobs=jobs)
    except TaskFailed as failed:
        raise FlashpathError(*failed.error) from None
    finally:
        progress.close()
    if ran is not None:
        ran.runs, ran.wall_s, ran.workers = len(tasks), progress.elapsed, jobs
    return [row for n, doc in enumerate(docs) for row in _rows(doc, results[n])]


def run_scenario(doc: dict[str, Any], seed: int = 0, jobs: int = 1) -> list[Row]:
    return run_scenarios([doc], seed, jobs)


def to_csv(rows: list[Row]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["scenario", "case", "metric", "mode", "simulated", "published"])
    for r in rows:
        pub = "" if r.published is None else f"{r.published:g}"
        w.writerow([r.scenario, r.case, r.metric, r.mode, f"{r.simulated:.4g}", pub])
    return buf.getvalue()


def to_json(rows: list[Row]) -> str:
    return json.dumps(
        [
            {
                "scenario": r.scenario,
                "case": r.case,
                "metric": r.metric,
                "mode": r.mode,
                "simulated": r.simulated,
                "published": r.published,
            }
            for r in rows
        ],
        indent=2,
    )


def to_table(rows: list[Row]) -> str:
    """For people: one line per (case, metric) with every mode, the
    difference between the first two modes and, where published, the error."""
    lines = []
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.scenario, r.case, r.metric), []).append(r)
    header = (
        f"{'scenario':12} {'case':44} {'metric':16} {'mode':>10} "
        f"{'simulated':>12} {'published':>12} {'error':>8}"
    )
    lines.append(header)
    lines.append("-" * len(header))
    for (_scen, _case, _metric), rs in groups.items():
        for r in rs:
            err = ""
            if r.published:
                err = f"{(r.simulated - r.published) / r.published * 100:+.1f}%"
            pub = "" if r.published is None else f"{r.published:.6g}"
            lines.append(
                f"{r.scenario:12} {r.case:44} {r.metric:16} {r.mode:>10} "
                f"{r.simulated:12.6g} {pub:>12} {err:>8}"
            )
        if len(rs) >= 2 and rs[0].simulated:
            sim_diff = (rs[1].simulated - rs[0].simulated) / rs[0].simulated * 100
            pub_diff = ""
            if rs[0].published and rs[1].published:
                pub_pct = (rs[1].published - rs[0].published) / rs[0].published * 100
                pub_diff = f" (published {pub_pct:+.2f}%)"
            elif rs[1].published_diff is not None:
                pub_diff = (
                    f" (published {rs[1].published_diff:+.2f}%, "
                    f"error {sim_diff - rs[1].published_diff:+.2f} points)"
                )
            lines.append(f"{'':74} {rs[1].mode} vs {rs[0].mode}: {sim_diff:+.2f}%{pub_diff}")
    return "\n".join(lines) + "\n"


def plot_formats() -> dict[str, str]:
    """The image formats matplotlib writes: extension -> description."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return dict(Figure().canvas.get_supported_filetypes())


def plot(rows: list[Row], path: str) -> None:
    """Simulated against published, per case, metric and mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r.case}\n{r.metric} {r.mode}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(6, len(rows) * 0.6), 4.5))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r.simulated for r in rows], width=0.4, label="simulated")
    ax.bar(
        [x + 0.2 for x in xs],
        [r.published or 0 for r in rows],
        width=0.4,
        label="published",
    )
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax.legend()
    ax.set_title(", ".join(sorted({r.scenario for r in rows})))
    fig.tight_layout()
    fig.savefig(path)


PLOTTERS: dict[str, Callable[[list[Row], str], None]] = {}

# Layers of flashpath.breakdown_ns_per_io, bottom to top, with their labels.
_IO_POLL_LAYERS = [
    ("submit", "submit path (user, syscall, block, driver)"),
    ("tag_wait", "tag wait"),
    ("device", "device (link + service)"),
    ("poll", "poll (completion to noticed)"),
    ("cstate_exit", "C-state exit"),
    ("irq", "interrupt + completion"),
    ("wakeup", "wake-up, IPI, switch"),
    ("reap", "completion path (polled)"),
]


def plot_io_poll(rows: list[Row], path: str) -> None:
    """Where one I/O's microseconds go, per device and mode: a stacked bar
    of the run's per-layer breakdown, with the published latency marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = [r for r in rows if r.metric == "latency_us"]
    fig, ax = plt.subplots(figsize=(max(6, len(bars) * 1.2) + 3, 5))
    xs = list(range(len(bars)))
    bottoms = [0.0] * len(bars)
    for key, label in _IO_POLL_LAYERS:
        heights = [
            float((r.counters.get("breakdown_ns_per_io") or {}).get(key, 0.0)) / 1000 for r in bars
        ]
        if not any(heights):
            continue
        ax.bar(xs, heights, bottom=bottoms, label=label)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    pub = [(x, r.published) for x, r in zip(xs, bars, strict=True) if r.published]
    if pub:
        ax.scatter(
            [p[0] for p in pub],
            [p[1] for p in pub],
            marker="_",
            s=600,
            color="black",
            zorder=3,
            label="published latency",
        )
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{r.case.split('=')[-1]}\n{r.mode}" for r in bars])
    top = max(bottoms + [p[1] for p in pub] + [1.0])
    ax.set_ylim(0, top * 1.08)
    ax.set_ylabel("us per I/O")
    ax.set_title("io-poll: where one 4 KiB read's time goes")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path)


PLOTTERS["io-poll"] = plot_io_poll


def _plot_swiotlb(rows: list[Row], path: str) -> None:
    """Bandwidth per case and mode, and the allocator's counters: areas
    visited per map, lock spins, pools, transient pools."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = list(dict.fromkeys(r.case for r in rows))
    modes = list(dict.fromkeys(r.mode for r in rows))
    panels = [
        ("bandwidth (MB/s)", lambda r: r.simulated),
        ("areas visited per map", lambda r: _swiotlb(r, "areas_visited_per_map")),
        ("lock spins", lambda r: _swiotlb(r, "lock_spins")),
        ("pools at end", lambda r: _swiotlb(r, "pools")),
        ("transient pools", lambda r: _swiotlb(r, "transient_pools")),
    ]
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 2.6 * len(panels)), sharex=True)
    width = 0.8 / max(1, len(modes))
    for ax, (title, get) in zip(axes, panels, strict=True):
        for i, mode in enumerate(modes):
            vals = []
            for c in cases:
                r = next((r for r in rows if r.case == c and r.mode == mode), None)
                vals.append(get(r) if r else 0.0)
            xs = [x + (i - (len(modes) - 1) / 2) * width for x in range(len(cases))]
            ax.bar(xs, vals, width, label=mode)
        ax.set_ylabel(title, fontsize=8)
    axes[0].legend()
    axes[-1].set_xticks(range(len(cases)))
    axes[-1].set_xticklabels(cases, rotation=30, ha="right", fontsize=8)
    fig.suptitle("swiotlb=512,4,force: pool-first (base) vs area-first (patched)")
    fig.tight_layout()
    fig.savefig(path)


def _swiotlb(r: Row, key: str) -> float:
    return float((r.counters.get("swiotlb") or {}).get(key, 0.0))


PLOTTERS["swiotlb"] = _plot_swiotlb


def reproduce(
    name: str,
    seed: int = 0,
    jobs: int = 1,
    show_progress: bool | None = False,
    ran: Ran | None = None,
) -> list[Row]:
    """The rows of scenario `name` (or of all, in their order), run on
    `jobs` worker processes."""
    all_scenarios = scenarios()
    if name == "all":
        return run_scenarios(list(all_scenarios.values()), seed, jobs, show_progress, ran)
    if name not in all_scenarios:
        known = ", ".join([*sorted(all_scenarios), "all"])
        what = f"no scenario named {shown(name)} (scenarios: {known})"
        # The core's error arguments: message, file, line, what is wrong.
        raise FlashpathError(f"reproduce: {what}", "reproduce", None, what)
    return run_scenarios([all_scenarios[name]], seed, jobs, show_progress, ran)


# iozone command lines (scenario key ``iozone``): the document is
# ``{"tests": [...], "flashpath": {...}}``; the extractor
# ``iozone.<test name>`` gives the "Children see" throughput in MB/s
# (iozone's kB/s / 1024), ``iozone.<test name>@kBps`` in kB/s.
def _run_iozone(
    case: dict[str, Any], profile: str, overrides: list[str], seed: int
) -> dict[str, Any]:
    import shlex

    run = _core.run_iozone(shlex.split(case["iozone"]), profile, overrides, seed)
    return json.loads(run.json_text)


def _iozone_stat(doc: dict[str, Any], stat: str) -> float:
    name, _, unit = stat.partition("@")
    for t in doc["tests"]:
        if t["test"] == name:
            return t["children_kBps"] if unit == "kBps" else t["children_kBps"] / 1024
    raise KeyError(stat)


RUNNERS["iozone"] = _run_iozone
EXTRA_EXTRACTORS["iozone"] = _iozone_stat


def _plot_hpb(rows: list[Row], path: str) -> None:
    """Throughput against I/O range for HPB on and off with the published
    points; map-cache and HPB hit ratios underneath."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def gb(case: str) -> float:
        return float(case.split("=")[1].rstrip("GB"))

    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(6.5, 7), sharex=True)
    for mode, color in (("on", "tab:blue"), ("off", "tab:red")):
        rs = sorted((r for r in rows if r.mode == mode), key=lambda r: gb(r.case))
        xs = [gb(r.case) for r in rs]
        ax.plot(xs, [r.simulated for r in rs], "-o", color=color, label=f"HPB {mode} (simulated)")
        pub = [(gb(r.case), r.published) for r in rs if r.published is not None]
        if pub:
            pub_x, pub_y = zip(*pub, strict=True)
            ax.plot(pub_x, pub_y, "x", color=color, ms=10, mew=2, label=f"HPB {mode} (published)")
        drv = [(r.counters or {}).get("driver", {}) for r in rs]
        ax2.plot(
            xs,
            [d.get("read_map_hit_ratio", 0) for d in drv],
            "--s",
            color=color,
            label=f"device map-cache hit ratio, HPB {mode}",
        )
        if mode == "on":
            ax2.plot(
                xs,
                [(d.get("hpb") or {}).get("hit_ratio", 0) for d in drv],
                "-^",
                color="tab:green",
                label="HPB hit ratio",
            )
    ax.set_ylabel("iozone random read throughput (MB/s)")
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=8)
    ax.set_title("UFS HPB: 16 x 4 KiB O_DIRECT random readers")
    ax2.set_xlabel("I/O range (GB)")
    ax2.set_ylabel("hit ratio")
    ax2.set_ylim(0, 1.05)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


PLOTTERS["hpb"] = _plot_hpb


def _plot_devfreq_qos(rows: list[Row], path: str) -> None:
    """Device (UFS core) clock over time for both modes of each case, with
    the block layer's PM QoS request held, and the clat min/avg/max per mode
    against the published values. Per-I/O clat over time is not drawn: the
    run's JSON carries latency histograms, not a per-I/O log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = sorted({r.case for r in rows})
    fig, axes = plt.subplots(len(cases), 2, figsize=(12, 3.6 * len(cases)), squeeze=False)
    colors = {"enabled": "tab:blue", "disabled": "tab:red"}
    for i, case in enumerate(cases):
        ax, ax2 = axes[i]
        seen: set[str] = set()
        for r in rows:
            if r.case != case or r.mode in seen:
                continue
            seen.add(r.mode)
            clk = (r.counters or {}).get("driver", {}).get("clk_scaling") or {}
            trace = clk.get("trace") or []
            if trace:
                xs = [t / 1e9 for t, _ in trace]
                ys = [f / 1e6 for _, f in trace]
                end = max(xs[-1], 100.0)
                ax.step(
                    xs + [end],
                    ys + [ys[-1]],
                    where="post",
                    color=colors.get(r.mode),
                    label=f"{r.mode}: UFS core clock",
                )
            qos = (r.counters or {}).get("dev_freq_qos") or {}
            for (t_add, _), (t_rm, _) in zip(
                qos.get("added", []), qos.get("removed", []), strict=False
            ):
                ax.axvspan(t_add / 1e9, t_rm / 1e9, color="tab:green", alpha=0.15)
        ax.set_xlim(0, 100)
        ax.set_xlabel("time (s); green: PM QoS min-frequency request held")
        ax.set_ylabel("MHz")
        ax.set_title(f"devfreq-qos {case}")
        ax.legend(fontsize=8)
        metrics = ["clat_min_us", "clat_avg_us", "clat_max_us"]
        for j, mode in enumerate(("enabled", "disabled")):
            vals = {r.metric: r for r in rows if r.case == case and r.mode == mode}
            xs = [k + (j - 0.5) * 0.4 for k in range(len(metrics))]
            ax2.bar(
                xs,
                [vals[m].simulated if m in vals else 0 for m in metrics],
                width=0.4,
                color=colors[mode],
                label=f"{mode} (simulated)",
            )
            pub = [
                (x, vals[m].published)
                for x, m in zip(xs, metrics, strict=True)
                if m in vals and vals[m].published is not None
            ]
            if pub:
                px, py = zip(*pub, strict=True)
                ax2.plot(px, py, "kx", ms=9, mew=2)
        ax2.set_xticks(range(len(metrics)))
        ax2.set_xticklabels(metrics)
        ax2.set_ylabel("us (x: published)")
        ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


PLOTTERS["devfreq-qos"] = _plot_devfreq_qos
