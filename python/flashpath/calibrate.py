"""Calibration: a device profile fitted to the user's own fio runs.

`plan` writes fio jobs that identify the generic queueing device
(`device.kind = "generic"`, crates/flashpath/src/device/queue.rs); `fit`
finds the device parameters that make the simulated jobs match the
measured ones (scipy.optimize); `check` sets simulated against measured,
job by job.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from flashpath import fiojson


@dataclass(frozen=True)
class PlanJob:
    """One fio job of the plan (or of a check set)."""

    name: str
    rw: str
    bs: str
    iodepth: int
    why: str
    rwmixread: int | None = None


# Each job pins one part of the model (device/queue.rs): QD1 4 KiB reads
# the fixed read service time, deeper 4 KiB reads the number of servers and
# the IOPS cap, large reads the per-byte transfer time, the sequential 1 MiB
# read at depth the bandwidth cap, random writes the write service time
# (and, from their rare long completions, the write-back cache), mixes of
# reads and writes what a direction switch costs.
PLAN: tuple[PlanJob, ...] = (
    PlanJob("randread-4k-qd1", "randread", "4k", 1, "fixed read service time"),
    PlanJob("randread-4k-qd4", "randread", "4k", 4, "parallel servers"),
    PlanJob("randread-4k-qd16", "randread", "4k", 16, "parallel servers, IOPS cap"),
    PlanJob("randread-4k-qd32", "randread", "4k", 32, "IOPS cap"),
    PlanJob("randread-64k-qd1", "randread", "64k", 1, "per-byte transfer time"),
    PlanJob("randread-128k-qd4", "randread", "128k", 4, "per-byte transfer time"),
    PlanJob("read-1m-qd8", "read", "1m", 8, "bandwidth cap"),
    PlanJob("randwrite-4k-qd1", "randwrite", "4k", 1, "fixed write service time"),
    PlanJob("randwrite-4k-qd16", "randwrite", "4k", 16, "write parallelism"),
    PlanJob(
        "randrw70-4k-qd1", "randrw", "4k", 1, "read/write turnaround, unloaded", rwmixread=70
    ),
    PlanJob(
        "randrw50-4k-qd16", "randrw", "4k", 16, "read/write turnaround, loaded", rwmixread=50
    ),
)

# Jobs outside the plan, to test a fitted profile's predictions (other block
# sizes, depths and a mix).
CHECKS: tuple[PlanJob, ...] = (
    PlanJob("check-randread-8k-qd8", "randread", "8k", 8, "prediction"),
    PlanJob("check-randread-16k-qd2", "randread", "16k", 2, "prediction"),
    PlanJob("check-randrw-4k-qd8", "randrw", "4k", 8, "prediction", rwmixread=70),
    PlanJob("check-read-32k-qd4", "read", "32k", 4, "prediction"),
    PlanJob("check-randrw70-4k-qd16", "randrw", "4k", 16, "prediction", rwmixread=70),
    PlanJob("check-randrw30-4k-qd4", "randrw", "4k", 4, "prediction", rwmixread=30),
)

# Long enough for thousands of I/Os even at QD1 on a slow disk, short
# enough that the plan and its checks run in about three minutes.
RUNTIME_S = 8
SIZE = "2g"


def job_text(job: PlanJob, filename: str, runtime_s: int = RUNTIME_S) -> str:
    """The fio job file of `job` on `filename`."""
    lines = [
        f"# flashpath calibrate: {job.why}",
        f"[{job.name}]",
        f"filename={filename}",
        f"size={SIZE}",
        "ioengine=libaio",
        "direct=1",
        f"rw={job.rw}",
        f"bs={job.bs}",
        f"iodepth={job.iodepth}",
        "time_based=1",
        f"runtime={runtime_s}",
        "randrepeat=1",
        "norandommap=1",
        "group_reporting=1",
    ]
    if job.rwmixread is not None:
        lines.append(f"rwmixread={job.rwmixread}")
    return "\n".join(lines) + "\n"


README = """\
# flashpath calibration runs

These fio jobs identify your device for `flashpath calibrate fit`. They read
and WRITE {filename}: give a scratch file, never a device or a file you need.

1. Fill the file with real data first (not `fallocate`: its unwritten
   extents read as zeros without touching the device):

       dd if=/dev/urandom of={filename} bs=1M count=2048 oflag=direct

2. Run every job once as a warm-up and throw its outputs away (a file
   idle for a while can run several times slower for the first minutes:
   docs/calibrate.md, the 2026-11-27 quiet sitting), then run every job,
   one JSON output each, in one session (a disk's figures drift from day
   to day, so measure the fit's runs and any check runs together), with
   nothing else busy on the machine:

       for j in *.fio; do fio "$j" --output=/dev/null; done
       for j in *.fio; do fio "$j" --output-format=json+ --output="${{j%.fio}}.json"; done

3. Fit a profile over your host profile and check it:

       flashpath calibrate fit --host HOST.toml *.json --out my-device.toml
       flashpath calibrate check my-device.toml *.json

Jobs (each {runtime} s):
{jobs}
"""


def scratch_file_problem(filename: str) -> str | None:
    """Why `filename` cannot be the plan's scratch file, or None. The jobs
    WRITE it and fio reads it from a job line: never a device (a block or
    character device, or a name under /dev), a folder, a FIFO or an empty
    name; nothing a job line cuts or expands (';', '#', '$', a newline,
    which would start a new line of every job); no ':', which fio's
    filename= reads as a list of files (fio's HOWTO, filename)."""
    import stat

    from flashpath._jobtext import job_value_problem

    if not filename.strip():
        return "an empty file name"
    problem = job_value_problem(filename)
    if problem:
        return problem
    if filename != filename.lstrip():
        return "it starts with blanks, which a fio job line drops"
    if ":" in filename:
        return "it holds ':', which fio's filename= reads as a separator of several files"
    resolved = os.path.realpath(filename)
    if resolved == "/dev" or resolved.startswith("/dev/"):
        return "it names a device (under /dev): the jobs write it"
    try:
        mode = os.stat(filename).st_mode
    except OSError:
        return None
    if stat.S_ISBLK(mode) or stat.S_ISCHR(mode):
        return "it is a device: the jobs write it"
    if stat.S_ISDIR(mode):
        return "it is a folder, not a file"
    if not stat.S_ISREG(mode):
        return "it is not a regular file (a FIFO or socket)"
    return None


def plan_files(checks: bool = False) -> list[str]:
    """The names `write_plan` writes into its folder."""
    return [f"{j.name}.fio" for j in PLAN + (CHECKS if checks else ())] + ["README.md"]


def write_plan(out: Path, filename: str, checks: bool = False, force: bool = False) -> list[Path]:
    """Write the plan's job files (and the check jobs if asked) and a README
    into `out`; returns the files written. A bad scratch file is a
    CalibrateError; a folder that already holds any of the files is
    refused unless `force` (outputs.OutputError)."""
    import shlex

    from flashpath import outputs
    from flashpath._messages import shown

    problem = scratch_file_problem(filename)
    if problem:
        raise CalibrateError(f"--file {shown(filename)}: {problem}")
    scratch = [outputs.Named(filename, "the scratch file (--file)")]
    outputs.check_folder(out, plan_files(checks), "--out", force, scratch)
    out.mkdir(parents=True, exist_ok=True)
    jobs = PLAN + (CHECKS if checks else ())
    written = []
    for job in jobs:
        path = out / f"{job.name}.fio"
        outputs.write_text(path, job_text(job, filename), "--out")
        written.append(path)
    listing = "\n".join(f"- {j.name}.fio: {j.why}" for j in jobs)
    readme = out / "README.md"
    text = README.format(filename=shlex.quote(filename), runtime=RUNTIME_S, jobs=listing)
    outputs.write_text(readme, text, "--out")
    written.append(readme)
    return written


# ----------------------------------------------------------------------
# Measured runs


class CalibrateError(Exception):
    """A run, profile or fit the user must fix: one message."""


@dataclass(frozen=True)
class Figures:
    """One direction of one job: IOPS, mean total latency, p99 and p99.9
    completion latency (ns), as fio reports them, and json+'s completion
    latency histogram (bin value in ns, count) when the run has one."""

    iops: float
    lat_mean_ns: float
    clat_p99_ns: float | None
    clat_p999_ns: float | None = None
    clat_bins: tuple[tuple[float, int], ...] = ()


@dataclass(frozen=True)
class Measured:
    """One job of one fio JSON output."""

    file: str
    name: str
    options: dict[str, str]
    dirs: dict[str, Figures]

    @property
    def label(self) -> str:
        return self.name

    def option(self, key: str, default: str = "") -> str:
        return self.options.get(key, default)


DIRECTIONS = ("read", "write")


def _brief(v: object) -> str:
    return fiojson.brief(v)


def _figures(file: str, job: str, ddir: str, d: object) -> Figures | None:
    """One direction's figures as the reader checks them
    (fiojson.read_direction): IOPS, mean total latency, p99 clat."""
    try:
        got = fiojson.read_direction(file, job, ddir, d)
    except fiojson.FioJsonError as err:
        raise CalibrateError(str(err)) from None
    if got is None:
        return None
    return _figures_of(got)


def _figures_of(d: fiojson.Direction) -> Figures:
    assert d.iops is not None and d.lat is not None and d.lat.mean is not None
    p99 = p999 = None
    bins: tuple[tuple[float, int], ...] = ()
    if d.clat is not None:
        p99 = d.clat.percentiles.get("p99")
        p999 = d.clat.percentiles.get("p99.9")
        bins = tuple(sorted((float(at), n) for at, n in d.clat.bins.items()))
    return Figures(d.iops, d.lat.mean, p99, p999, bins)


_OPTION_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _options(
    path: str, name: str, doc: dict[str, object], job: dict[str, object]
) -> dict[str, str]:
    """A job's options (the "global options" under its "job options"),
    each a name and a value a fio job line can carry: they are written
    into the simulated job (`sim_job_text`), so a newline in one would
    add a line to it. A job with neither is refused: fio 3.33 leaves out
    "job options" only when the job's own section is empty, and a job with
    no options at all would be simulated as fio's default job."""
    from flashpath._jobtext import job_value_problem

    merged: dict[str, str] = {}
    for key in ("global options", "job options"):
        table = doc.get(key) if key == "global options" else job.get(key)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise CalibrateError(f"{path}: job {name!r}: {key!r} is not a table of options")
        for k, v in table.items():
            if not _OPTION_NAME.fullmatch(k):
                raise CalibrateError(f"{path}: job {name!r}: {key}: {k!r} is not a fio option name")
            if isinstance(v, bool) or not isinstance(v, str | int | float):
                raise CalibrateError(
                    f"{path}: job {name!r}: {key}: {k}: {_brief(v)} is not an option value "
                    "(fio writes each as text)"
                )
            text = str(v)
            # Where and how long are not written into the simulated job.
            skipped = k in _WHERE_AND_HOW_LONG
            problem = job_value_problem(text) if text and not skipped else None
            if problem:
                raise CalibrateError(f"{path}: job {name!r}: {key}: {k}: {problem}")
            merged[k] = text
    if not merged:
        raise CalibrateError(
            f'{path}: job {name!r}: no "job options" (and no "global options"): nothing says '
            "what the job did, so it cannot be simulated; use the JSON output fio wrote for "
            "the job file"
        )
    return merged


def load_runs(paths: list[str]) -> list[Measured]:
    """Every job of the fio JSON outputs `paths`; a file that is not fio
    3.x JSON, a job that ended with an error, or a figure that is not a
    finite, non-negative number in range is a CalibrateError naming the
    file, the job and the field. `flashpath calibrate` and the Python API
    both read runs here."""
    if isinstance(paths, str | bytes) or not paths:
        raise CalibrateError("no fio JSON outputs given (a list of paths)")
    runs: list[Measured] = []
    try:
        for path in paths:
            doc = fiojson.load_document(path)
            path = os.fspath(path)
            for job in fiojson.jobs(doc, path):
                name = job.name
                if job.error:
                    raise CalibrateError(
                        f"{path}: job {name!r} ended with error {_brief(job.error)} "
                        f"({os_error(job.error)}): its figures measure nothing; fix the job "
                        "and run it again"
                    )
                options = _options(path, name, doc, job.raw)
                dirs = {}
                for ddir in DIRECTIONS:
                    got = job.direction(ddir)
                    if got is not None:
                        dirs[ddir] = _figures_of(got)
                if not dirs:
                    raise CalibrateError(f"{path}: job {name!r} completed no I/O")
                runs.append(Measured(path, name, options, dirs))
    except fiojson.FioJsonError as err:
        raise CalibrateError(str(err)) from None
    return runs


def os_error(code: object) -> str:
    try:
        return os.strerror(int(str(code)))
    except (ValueError, OverflowError):
        return "unknown error"


# ----------------------------------------------------------------------
# Simulating a measured job on a candidate profile

# Options that say where fio ran or for how long, not what it did: the
# simulated job runs a fixed number of I/Os instead (a candidate's
# figures settle within a few thousand I/Os of a steady closed loop).
_WHERE_AND_HOW_LONG = {
    "filename",
    "directory",
    "runtime",
    "time_based",
    "ramp_time",
    "startdelay",
    "output",
    "output-format",
    "number_ios",
    "loops",
}


def sim_job_text(run: Measured, runtime_ms: int) -> str:
    """The fio job file that simulates `run`: its options, for `runtime_ms`
    of simulated time instead of its runtime, on no file."""
    lines = [f"[{run.name}]"]
    for key, value in run.options.items():
        if key in _WHERE_AND_HOW_LONG:
            continue
        lines.append(f"{key}={value}" if value != "" else key)
    if "size" not in run.options:
        lines.append(f"size={SIZE}")
    lines += ["time_based=1", f"runtime={runtime_ms}ms"]
    return "\n".join(lines) + "\n"


def simulate_run(
    run: Measured, runtime_ms: int, device: str, overrides: list[str]
) -> dict[str, Figures]:
    """`run`'s job simulated for `runtime_ms`; a job the simulator refuses
    is a CalibrateError naming the run's file."""
    from flashpath._core import FlashpathError

    try:
        return simulate(sim_job_text(run, runtime_ms), run.name, device, overrides)
    except FlashpathError as err:
        raise CalibrateError(
            f"{run.file}: job {run.name!r}: the simulator cannot run it: {err.args[0]}"
        ) from None


def simulate(job_text: str, name: str, device: str, overrides: list[str]) -> dict[str, Figures]:
    """Run one job on `device` (a profile path) with `overrides`; its
    figures per direction. A module-level function: the sweep engine
    runs it in a worker."""
    import json

    from flashpath import _core

    run = _core.run_job_text(job_text, name, str(Path(device).parent), device, overrides, 0, "json")
    doc = json.loads(run.json_text)
    job = doc["jobs"][0]
    out = {}
    for ddir in DIRECTIONS:
        figs = _figures(name, name, ddir, job.get(ddir))
        if figs is not None:
            out[ddir] = figs
    return out


# ----------------------------------------------------------------------
# The generic device's profile


@dataclass(frozen=True)
class Candidate:
    """One point of the generic model."""

    read_fixed_ns: float
    write_fixed_ns: float
    transfer_rate: float
    iops_cap: float
    bandwidth_cap: float
    servers: int
    dispatch: str
    service_cv: float = 0.0
    service_tail: float = 0.0
    turnaround_ns: float = 0.0
    writeback_bytes: float = 0.0
    writeback_flush_ns: float = 0.0
    writeback_spread: float = 0.0
    switch_delay_ns: float = 0.0
    # The device's queue (device/queue.rs `policy`): reads taken before
    # waiting writes, up to `writes_starved` reads passing one; False:
    # arrival order. The fit leaves it at arrival order (`_sources` says
    # why); a profile's user may set it.
    reads_first: bool = False
    writes_starved: int = 2

    def overrides(self) -> list[str]:
        return [
            f"device.read_fixed={max(0.0, self.read_fixed_ns):.0f}ns",
            f"device.write_fixed={max(0.0, self.write_fixed_ns):.0f}ns",
            f"device.transfer_rate={self.transfer_rate:.0f}B/s",
            f"device.iops_cap={self.iops_cap:.0f}",
            f"device.bandwidth_cap={self.bandwidth_cap:.0f}B/s",
            f"device.servers={self.servers}",
            f"device.dispatch={self.dispatch}",
            f"device.service_cv={self.service_cv:.4f}",
            f"device.service_tail={self.service_tail:.4f}",
            f"device.turnaround={max(0.0, self.turnaround_ns):.0f}ns",
            f"device.writeback_bytes={self.writeback_bytes:.0f}B",
            f"device.writeback_flush={max(0.0, self.writeback_flush_ns):.0f}ns",
            f"device.writeback_spread={self.writeback_spread:.4f}",
            f"device.switch_delay={max(0.0, self.switch_delay_ns):.0f}ns",
            f"device.queue_policy={'reads-first' if self.reads_first else 'fifo'}",
            f"device.writes_starved={self.writes_starved}",
        ]


# The profile's fixed parameters: (key, value, unit, source). The
# driver's own costs are not fitted (the runs see them only summed with
# the device's service time); a virtio-blk guest's, as
# profiles/virtio-ramdisk.toml estimates them.
BLOCK: list[tuple[str, bool | int | float | str | list[object], str, str]] = [
    ("block.io_poll", 0, "bool", "no poll queues assumed for a device of unknown inside"),
    ("block.io_poll_delay", -1, "count", "io_poll_delay default -1 (block/blk-mq.c)"),
    ("block.nr_requests", 256, "count", "blk-mq's default with the none scheduler: the tag set depth (block/blk-mq.c)"),
]
DEVICE: list[tuple[str, bool | int | float | str | list[object], str, str]] = [
    ("device.badblocks", [], "count", "none: bad sector ranges [first, last, ...] (512-byte sectors) that fail with EIO, as null_blk's configfs badblocks attribute (drivers/block/null_blk/main.c null_handle_badblocks); a fault to inject, not a property of the device"),
    ("device.kind", "generic", "name", "a device whose inside is unknown: the generic queueing model (crates/flashpath/src/device/queue.rs)"),
    ("device.capacity", 256, "GiB", "assumption: only bounds the jobs' offsets"),
    ("device.queue_depth", 256, "count", "assumption: the tag set depth of a virtio-blk queue (QEMU queue-size 256); the runs go no deeper"),
    ("device.hw_queues", 1, "count", "assumption: one queue, as a one-job fio run uses"),
]
DRIVER: list[tuple[str, bool | int | float | str | list[object], str, str]] = [
    ("driver.queue_rq", 3000, "ns", "assumption, not fitted: virtio_queue_rq ~1 us plus the kick's VM exit ~2 us (profiles/virtio-ramdisk.toml); the fitted service times absorb any difference"),
    ("driver.irq_handler", 2000, "ns", "assumption, not fitted: vring_interrupt + virtblk_done with the EOI's exit in a guest (profiles/virtio-ramdisk.toml)"),
]
HEADER = [
    "Written by flashpath calibrate fit: the generic queueing device",
    '(device.kind = "generic", docs/calibrate.md) fitted to fio runs.',
]


def _fixed(x: float, digits: int) -> float:
    """`x` at `digits` decimals, as the profile states it."""
    return float(f"{x:.{digits}f}")


def profile_text(
    host_include: str,
    cand: Candidate,
    sources: dict[str, str],
    name: str = "calibrated",
    description: str = "a device fitted to fio runs (flashpath calibrate)",
    notes: tuple[str, ...] = (),
) -> str:
    """A generic-device profile over the host profile `host_include`;
    `sources` gives each fitted key's source; `notes` are comment lines
    after the header's. The core's profile writer (profile/write.rs)
    writes it and checks that it reads back."""
    from flashpath import _core

    def src(key: str) -> str:
        return sources.get(key, "fitted")

    fitted: list[tuple[str, bool | int | float | str | list[object], str, str]] = [
        ("device.servers", cand.servers, "count", src("device.servers")),
        ("device.dispatch", cand.dispatch, "name", src("device.dispatch")),
        ("device.service_cv", _fixed(cand.service_cv, 4), "ratio", src("device.service_cv")),
        ("device.read_fixed", _fixed(cand.read_fixed_ns / 1e3, 3), "us", src("device.read_fixed")),
        ("device.write_fixed", _fixed(cand.write_fixed_ns / 1e3, 3), "us", src("device.write_fixed")),
        ("device.transfer_rate", _fixed(cand.transfer_rate / 1e6, 3), "MB/s", src("device.transfer_rate")),
        ("device.iops_cap", int(f"{cand.iops_cap:.0f}"), "count", src("device.iops_cap")),
        ("device.bandwidth_cap", _fixed(cand.bandwidth_cap / 1e6, 3), "MB/s", src("device.bandwidth_cap")),
        ("device.service_tail", _fixed(cand.service_tail, 4), "ratio", src("device.service_tail")),
        ("device.turnaround", _fixed(cand.turnaround_ns / 1e3, 3), "us", src("device.turnaround")),
        ("device.switch_delay", _fixed(cand.switch_delay_ns / 1e3, 3), "us", src("device.switch_delay")),
        ("device.writeback_bytes", int(f"{cand.writeback_bytes / 1024:.0f}"), "KiB", src("device.writeback_bytes")),
        ("device.writeback_flush", _fixed(cand.writeback_flush_ns / 1e3, 1), "us", src("device.writeback_flush")),
        ("device.writeback_spread", _fixed(cand.writeback_spread, 4), "ratio", src("device.writeback_spread")),
        ("device.queue_policy", "reads-first" if cand.reads_first else "fifo", "name", src("device.queue_policy")),
        ("device.writes_starved", cand.writes_starved, "count", src("device.writes_starved")),
    ]
    return _core.write_profile(
        name, description, [host_include], BLOCK + DEVICE + fitted + DRIVER, HEADER + list(notes)
    )


# ----------------------------------------------------------------------
# Fitting

# The service time's variation is fitted from 1% (as good as fixed) to 1
# (exponential), in log space as every other parameter.
CV_LOG_MIN = -4.6
# The search: every server count and dispatch briefly on shorter runs,
# then the best few to the end.
COARSE_NFEV = 6
FINE_NFEV = 20
FINALISTS = 2

# The server counts tried, for each dispatch: 1 to 64 commands at once
# (beyond, no fio run of the plan could tell them apart).
SERVERS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64)
DISPATCHES = ("shared", "by-address")
# Simulated time per job while fitting and checking: fio's IOPS is
# I/Os over whole milliseconds of runtime, so a run under a second would
# round its IOPS by a percent or more.
FIT_MS = 1000
CHECK_MS = 3000


def _bs_bytes(text: str) -> int | None:
    """fio's bs=, when it is one size (k, m as fio's power-of-2 units)."""
    t = text.strip().lower().rstrip("b").rstrip("i")
    factor = 1
    for suffix, f in (("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30)):
        if t.endswith(suffix):
            t, factor = t[:-1], f
            break
    try:
        return int(t) * factor
    except ValueError:
        return None


def _depth(run: Measured) -> int:
    try:
        return int(run.option("iodepth", "1"))
    except ValueError:
        return 1


def identifiability(runs: list[Measured]) -> list[str]:
    """What the runs cannot identify: one line per parameter, naming the
    job the plan runs for it (empty: everything is identified)."""
    reads = [r for r in runs if "read" in r.dirs]
    writes = [r for r in runs if "write" in r.dirs]
    sizes = {_bs_bytes(r.option("bs", "4k")) for r in reads}
    problems = []
    if not any(_depth(r) == 1 for r in reads):
        problems.append("device.read_fixed: no read job at iodepth=1 (the plan's randread-4k-qd1)")
    if not writes:
        problems.append("device.write_fixed: no job writes (the plan's randwrite-4k-qd1)")
    if len(sizes - {None}) < 2:
        problems.append(
            "device.transfer_rate: reads of one block size only (the plan's randread-64k-qd1)"
        )
    if not any(_depth(r) > 1 for r in runs):
        problems.append(
            "device.servers: no job deeper than iodepth=1 (the plan's randread-4k-qd16)"
        )
    for r in runs:
        if _bs_bytes(r.option("bs", "4k")) is None:
            problems.append(f"{r.file}: job {r.name!r}: bs={r.option('bs')!r} is not one size")
    return problems


class Objective:
    """Log errors of simulated IOPS and mean latency against the runs,
    for one server count and dispatch, the write-back cache read from the
    runs (`writeback_from_runs`) and a fixed service tail. The parameters
    are read_fixed, write_fixed, transfer_rate, the two caps and
    service_cv, and, when the vector has a seventh, the direction switch's
    cost: the turnaround or the switch delay, as `switch` names (all in
    log space). The p99s are `labelled` too but not in `errors`: they are
    fitted through the tail alone (`fit_tail`), so that a tail the runs
    do not need cannot pull the mean figures."""

    def __init__(
        self,
        runs: list[Measured],
        base: str,
        servers: int,
        dispatch: str,
        runtime_ms: int,
        writeback: tuple[float, float, float] = (0.0, 0.0, 0.0),
        tail: float = 0.0,
        switch: str = "turnaround",
        cv: float | None = None,
    ) -> None:
        self.switch = switch
        # A service cv held (the tail stage's, fitted to the p99s): the
        # vector's sixth entry is then ignored.
        self.cv = cv
        self.runs = runs
        self.base = base
        self.servers = servers
        self.dispatch = dispatch
        self.runtime_ms = runtime_ms
        self.writeback = writeback
        self.tail = tail

    def candidate(self, x: list[float]) -> Candidate:
        import math

        rf, wf, rate, iops, bw, cv = (math.exp(v) for v in x[:6])
        cost = math.exp(x[6]) if len(x) > 6 else 0.0
        turn, delay = (cost, 0.0) if self.switch == "turnaround" else (0.0, cost)
        return Candidate(
            rf,
            wf,
            rate,
            iops,
            bw,
            self.servers,
            self.dispatch,
            min(1.0, cv) if self.cv is None else self.cv,
            self.tail,
            turn,
            self.writeback[0],
            self.writeback[1],
            self.writeback[2],
            delay,
        )

    def labelled(self, cand: Candidate) -> list[tuple[Measured, str, float]]:
        """(run, figure, log error) of every figure: IOPS, mean latency
        and, where the run has one, p99 completion latency."""
        import math

        out = []
        for run in self.runs:
            sim = simulate_run(run, self.runtime_ms, self.base, cand.overrides())
            for ddir, meas in run.dirs.items():
                got = sim.get(ddir)
                if got is None:
                    raise CalibrateError(
                        f"{run.file}: job {run.name!r}: the simulated job did no {ddir}s"
                    )
                out.append((run, f"{ddir} iops", math.log(got.iops / meas.iops)))
                out.append((run, f"{ddir} mean lat", math.log(got.lat_mean_ns / meas.lat_mean_ns)))
                # The tail's figure: p99 (p99.9 is a handful of I/Os in a
                # second of simulated time, and is checked, not fitted).
                if meas.clat_p99_ns and got.clat_p99_ns:
                    out.append((run, f"{ddir} p99", math.log(got.clat_p99_ns / meas.clat_p99_ns)))
        return out

    def errors(self, cand: Candidate) -> list[float]:
        return [e for (_, fig, e) in self.labelled(cand) if not fig.endswith("p99")]

    def __call__(self, x: list[float]) -> list[float]:
        return self.errors(self.candidate(x))


def _costs(labelled: list[tuple[Measured, str, float]]) -> tuple[float, float]:
    """The summed squared log errors of the mean figures (IOPS, mean
    latency) and of the p99s."""
    means = sum(e * e for (_, fig, e) in labelled if not fig.endswith("p99"))
    tails = sum(e * e for (_, fig, e) in labelled if fig.endswith("p99"))
    return means, tails


# The log-normal tail's σ: from 0.05 (as narrow as a fixed time) to 3.
TAIL_MIN = 0.05
TAIL_MAX = 3.0
# A transfer rate or cap the profile accepts (profile/mod.rs limits::RATE,
# driver/generic.rs CAP): 1 kB/s to 1 TB/s.
RATE_MIN = 1e3
RATE_MAX = 1e12
# The turnaround and the switch delay: from 0.1 us (none, as far as a run
# can tell) to 1 ms.
TURN_MIN_NS = 100.0
TURN_MAX_NS = 1e6


def fit_candidate(
    runs: list[Measured],
    base: str,
    servers: int,
    dispatch: str,
    x0: list[float],
    runtime_ms: int,
    max_nfev: int,
    writeback: tuple[float, float, float] = (0.0, 0.0, 0.0),
    switch: str = "turnaround",
    cv: float | None = None,
) -> tuple[float, list[float]]:
    """The best fit for one server count and dispatch (scipy's trust-region
    least squares over the log parameters, `Objective`'s; a seventh is the
    direction switch's cost, `switch`: "turnaround" or "switch_delay"):
    its summed squared log error and parameters. A module-level function,
    run by the sweep engine."""
    from scipy.optimize import least_squares

    obj = Objective(runs, base, servers, dispatch, runtime_ms, writeback, switch=switch, cv=cv)
    lo, hi = search_bounds(x0)
    start = [min(max(v, a + 1e-6), b - 1e-6) for v, a, b in zip(x0, lo, hi, strict=True)]
    res = least_squares(obj, start, bounds=(lo, hi), diff_step=0.03, max_nfev=max_nfev)
    return float(2.0 * res.cost), [float(v) for v in res.x]


def search_bounds(x0: list[float]) -> tuple[list[float], list[float]]:
    """The bounds of `fit_candidate`'s search around the log parameters
    `x0`."""
    import math

    # Parameters within 100x of the start either way; a step of a few
    # percent is what a simulated figure answers to (a smaller one drowns
    # in the finite run's noise).
    lo = [v - 4.6 for v in x0[:5]] + [CV_LOG_MIN] + [math.log(TURN_MIN_NS)] * (len(x0) > 6)
    hi = [v + 4.6 for v in x0[:5]] + [0.0] + [math.log(TURN_MAX_NS)] * (len(x0) > 6)
    # The transfer rate and the two caps stay inside what a profile
    # accepts (profile/mod.rs limits::RATE, driver/generic.rs CAP: at
    # most 1 TB/s or 1 T commands a second): runs whose large blocks cost
    # no more than small ones would otherwise drive the rate past it, and
    # the candidate's simulation would refuse it (2026-11-27 11:55, pass
    # 2: 1.1 TB/s).
    # Only a bound past a limit moves (to just inside it), so that a search
    # far from the limits keeps its bounds, and with them its steps.
    for i in (2, 3, 4):
        hi[i] = min(hi[i], math.log(RATE_MAX) - 1e-3)
        lo[i] = max(min(lo[i], hi[i] - 1.0), math.log(RATE_MIN) + 1e-3)
    return lo, hi


# How much better a fit with an optional mechanism (a cap, the
# turnaround, the write-back cache, the tail) must be than the fit
# without it for the runs to identify it: 2% of the summed squared error,
# more than the one-second simulations' own noise between candidates.
KEEP_FACTOR = 0.98
# The two ways a direction switch may cost (device/queue.rs): holding the
# server (`turnaround`) or delaying a command's start alongside the
# server's queued work (`switch_delay`).
SWITCHES = ("turnaround", "switch_delay")


@dataclass(frozen=True)
class Switch:
    """A direction switch's cost as the iodepth=1 runs show it in closed
    form: at iodepth 1 nothing queues, so a mix's mean latency per I/O
    exceeds the pure jobs' (`read_ns`, `write_ns`, weighted by its share of
    reads `p`) by the switch's cost times the share of I/Os that switch,
    2 p (1 - p) when each I/O's direction is drawn independently (fio's
    rwmixread, io_u.c get_rw_ddir)."""

    file: str
    p: float
    read_ns: float
    write_ns: float
    mix_ns: float

    @property
    def delay_ns(self) -> float:
        pure = self.p * self.read_ns + (1 - self.p) * self.write_ns
        return (self.mix_ns - pure) / (2 * self.p * (1 - self.p))


def switch_from_runs(runs: list[Measured]) -> Switch | None:
    """The switch cost of the iodepth=1 mix (the plan's randrw70-4k-qd1)
    against the iodepth=1 pure read and write jobs of its block size; None
    without all three."""

    def qd1(dirs: set[str], bs: int | None) -> list[Measured]:
        return [
            r
            for r in runs
            if set(r.dirs) == dirs
            and _depth(r) == 1
            and _bs_bytes(r.option("bs", "4k")) == bs
        ]

    for mix in (r for r in runs if set(r.dirs) == {"read", "write"} and _depth(r) == 1):
        bs = _bs_bytes(mix.option("bs", "4k"))
        reads, writes = qd1({"read"}, bs), qd1({"write"}, bs)
        if not reads or not writes:
            continue
        r, w = mix.dirs["read"], mix.dirs["write"]
        n = r.iops + w.iops
        return Switch(
            mix.file,
            r.iops / n,
            reads[0].dirs["read"].lat_mean_ns,
            writes[0].dirs["write"].lat_mean_ns,
            (r.iops * r.lat_mean_ns + w.iops * w.lat_mean_ns) / n,
        )
    return None
def fit_cv(obj: Objective, cand: Candidate, start: float, max_nfev: int) -> float:
    """The service cv that best matches the runs' p99s with every other
    parameter held (least squares in log cv from `start`)."""
    from scipy.optimize import least_squares

    def p99_errors(x: list[float]) -> list[float]:
        trial = Candidate(**{**cand.__dict__, "service_cv": min(1.0, math.exp(x[0]))})
        return [e for (_, fig, e) in obj.labelled(trial) if fig.endswith("p99")]

    x0 = min(max(math.log(start), CV_LOG_MIN + 1e-6), -1e-6)
    res = least_squares(
        p99_errors, [x0], bounds=([CV_LOG_MIN], [0.0]), diff_step=0.03, max_nfev=max_nfev
    )
    return float(min(1.0, math.exp(res.x[0])))


def _cv_start(runs: list[Measured]) -> float:
    """The service cv the QD1 read run's completion latencies show, in
    closed form: with a shifted exponential service time of mean m and cv
    c, p99 - p50 = c m ln 50, and m is at most the mean completion latency
    (which also holds the host path), so c is at least
    (p99 - p50) / (ln 50 * mean). 0.5 without a QD1 read run with json+
    bins."""
    for r in runs:
        d = r.dirs.get("read")
        if set(r.dirs) == {"read"} and _depth(r) == 1 and d is not None and d.clat_bins:
            total = sum(n for _, n in d.clat_bins)
            mean = sum(at * n for at, n in d.clat_bins) / total
            p50, p99 = (_quantile(d.clat_bins, q) for q in (0.5, 0.99))
            if p99 > p50 and mean > 0:
                return min(1.0, max(math.exp(CV_LOG_MIN), (p99 - p50) / (math.log(50) * mean)))
    return 0.5


def fit_tail(obj: Objective, cand: Candidate, start: float, max_nfev: int) -> float:
    """The log-normal σ that best matches the runs' p99s with every other
    parameter held (least squares in log σ from `start`)."""
    import math

    from scipy.optimize import least_squares

    def p99_errors(x: list[float]) -> list[float]:
        trial = Candidate(**{**cand.__dict__, "service_tail": math.exp(x[0])})
        return [e for (_, fig, e) in obj.labelled(trial) if fig.endswith("p99")]

    lo, hi = math.log(TAIL_MIN), math.log(TAIL_MAX)
    x0 = min(max(math.log(start), lo + 1e-6), hi - 1e-6)
    res = least_squares(p99_errors, [x0], bounds=([lo], [hi]), diff_step=0.03, max_nfev=max_nfev)
    return float(math.exp(res.x[0]))


@dataclass
class FitResult:
    cand: Candidate
    sources: dict[str, str]
    # The figures the parameters were fitted to (IOPS, mean latency) and
    # the p99s (fitted through the tail when it is identified, otherwise
    # only reported): (file, job, figure, relative error).
    errors: list[tuple[str, str, str, float]]
    tail_errors: list[tuple[str, str, str, float]]
    not_identified: list[str]
    profile: str


def _host_include(host: str, out_dir: Path) -> str:
    """How the fitted profile names the host profile: a file's path
    relative to the output's folder, or a built-in name as given."""
    import os

    p = Path(host)
    if p.is_file():
        return os.path.relpath(p.resolve(), out_dir.resolve())
    return host if host.endswith(".toml") else host + ".toml"


def fit(
    runs: list[Measured],
    host: str,
    out: Path,
    jobs: int = 1,
    runtime_ms: int = FIT_MS,
    servers: tuple[int, ...] = SERVERS,
    dispatches: tuple[str, ...] = DISPATCHES,
) -> FitResult:
    """Fit the generic device to `runs` over the host profile `host`."""
    import tempfile

    from flashpath import _core
    from flashpath._core import FlashpathError
    from flashpath.engine import Done, Task, TaskFailed, run_tasks

    try:
        _core.profile_show(host, [])
    except FlashpathError as err:
        raise CalibrateError("--host: " + str(err.args[0]).removeprefix("--device: ")) from None
    problems = identifiability(runs)
    if problems:
        raise CalibrateError(
            "the runs cannot identify " + "; ".join(problems) + ": add those jobs' runs"
        )
    include = _host_include(host, out.parent)
    wb = writeback_from_runs(runs)
    writeback = (wb.bytes, wb.flush_ns, wb.spread) if wb else (0.0, 0.0, 0.0)
    with tempfile.TemporaryDirectory(prefix="flashpath-calibrate-") as tmp:
        base = str(Path(tmp) / "candidate.toml")
        abs_include = str(Path(host).resolve()) if Path(host).is_file() else include
        zero = Candidate(0, 0, 1e12, 0, 0, 1, "shared", 0.0)
        Path(base).write_text(profile_text(abs_include, zero, {}), encoding="utf-8")
        x0 = _start(runs, base)
        combos = [(d, n) for d in dispatches for n in servers]

        def search(
            starts: list[list[float]], picks: list[int], ms: int, nfev: int
        ) -> dict[int, tuple[float, list[float]]]:
            tasks = [
                Task(
                    f"{combos[i][0]} x{combos[i][1]}",
                    fit_candidate,
                    (runs, base, combos[i][1], combos[i][0], x, ms, nfev),
                )
                for i, x in zip(picks, starts, strict=True)
            ]
            found: dict[int, tuple[float, list[float]]] = {}

            def keep(k: int, done: Done) -> None:
                found[picks[k]] = done.value

            try:
                run_tasks(tasks, keep, jobs=jobs)
            except TaskFailed as err:
                raise CalibrateError(f"a candidate's simulation failed: {err}") from None
            return found

        def ranked(found: dict[int, tuple[float, list[float]]]) -> list[int]:
            # The lowest error; on a tie the fewer servers (the simpler model).
            return sorted(found, key=lambda i: (round(found[i][0], 9), combos[i][1], i))

        # The base model (no write-back, no turnaround, an exponential
        # service time) over every server count and dispatch, fitted to
        # the mean figures alone.
        everything = list(range(len(combos)))
        coarse = search([x0[:6]] * len(combos), everything, max(200, runtime_ms // 4), COARSE_NFEV)
        finalists = ranked(coarse)[:FINALISTS]
        fine = search([coarse[i][1] for i in finalists], finalists, runtime_ms, FINE_NFEV)
        best = ranked(fine)[0]
        dispatch, nserv = combos[best]
        tried = len(combos)
        x = fine[best][1]
        obj = Objective(runs, base, nserv, dispatch, runtime_ms)
        cand = obj.candidate(x)
        labelled = obj.labelled(cand)
        cost = _costs(labelled)[0]
        not_identified = []
        # Each optional mechanism is kept only when, refitted with it, the
        # plan's runs are matched better than without it (by KEEP_FACTOR):
        # a model selection on the runs given, never on jobs held out.
        # The write-back cache and the turnaround answer to the mean
        # figures they change; the tail to the p99s, and it may not make
        # the mean figures worse.
        with_wb = Objective(runs, base, nserv, dispatch, runtime_ms, writeback)
        if wb is not None:
            # From the base fit with a write's share of the write-backs
            # taken off its time (`_start`).
            x_wb = [x[0], _start(runs, base, writeback)[1], *x[2:]]
            _, x_wb = fit_candidate(
                runs, base, nserv, dispatch, x_wb, runtime_ms, FINE_NFEV, writeback
            )
            cand_wb = with_wb.candidate(x_wb)
            labelled_wb = with_wb.labelled(cand_wb)
            cost_wb = _costs(labelled_wb)[0]
            if cost_wb < cost * KEEP_FACTOR:
                obj, x, cand, labelled, cost = with_wb, x_wb, cand_wb, labelled_wb, cost_wb
            else:
                not_identified.append("device.writeback_bytes")
        # A direction switch: a turnaround (it holds the server) or a
        # switch delay (it overlaps queued work), each refitted from the
        # mixes' closed form (`switch_from_runs`); the better one is kept
        # if it beats the fit without (KEEP_FACTOR), the other is not
        # identified.
        switch0 = switch_from_runs(runs)
        if any(len(r.dirs) > 1 for r in runs):
            start = math.log(min(max(switch0.delay_ns, 2 * TURN_MIN_NS), TURN_MAX_NS / 2)) if (
                switch0 is not None
            ) else x0[6]
            tried_switch = []
            for kind in SWITCHES:
                _, x_sw = fit_candidate(
                    runs,
                    base,
                    nserv,
                    dispatch,
                    [*x, start],
                    runtime_ms,
                    FINE_NFEV,
                    obj.writeback,
                    kind,
                )
                obj_sw = Objective(
                    runs, base, nserv, dispatch, runtime_ms, obj.writeback, switch=kind
                )
                cand_sw = obj_sw.candidate(x_sw)
                labelled_sw = obj_sw.labelled(cand_sw)
                tried_switch.append((_costs(labelled_sw)[0], kind, x_sw, cand_sw, labelled_sw))
            cost_sw, kind, x_sw, cand_sw, labelled_sw = min(tried_switch, key=lambda t: t[0])
            if cost_sw < cost * KEEP_FACTOR:
                x, cand, labelled, cost = x_sw, cand_sw, labelled_sw, cost_sw
                not_identified += [f"device.{k}" for k in SWITCHES if k != kind]
            else:
                not_identified += [f"device.{k}" for k in SWITCHES]
        else:
            not_identified += [f"device.{k}" for k in SWITCHES]
        # The service time's spread from the tail: the mean figures pin the
        # service cv only weakly (an exponential part and address
        # collisions both make IOPS rise gradually with depth), the p99s
        # pin it. The cv that matches the p99s with the rest held (from
        # the QD1 reads' closed form), then the other parameters refitted
        # with it held on each finalist server count and dispatch; kept
        # on the tail's rule (the p99s matched better by KEEP_FACTOR, the
        # mean figures no worse than KEEP_FACTOR allows).
        cv_p99 = fit_cv(obj, cand, _cv_start(runs), FINE_NFEV)
        kind_kept = "switch_delay" if cand.switch_delay_ns > 0 else "turnaround"
        tried_cv = []
        for i in finalists:
            d_i, n_i = combos[i]
            x_i = [*fine[i][1][:6], *x[6:]]
            _, x_cv = fit_candidate(
                runs, base, n_i, d_i, x_i, runtime_ms, FINE_NFEV, obj.writeback, kind_kept, cv_p99
            )
            obj_cv = Objective(
                runs, base, n_i, d_i, runtime_ms, obj.writeback, switch=kind_kept, cv=cv_p99
            )
            cand_cv = obj_cv.candidate(x_cv)
            labelled_cv = obj_cv.labelled(cand_cv)
            tried_cv.append((_costs(labelled_cv)[0], n_i, i, cand_cv, labelled_cv))
        cost_cv, _, best_cv, cand_cv, labelled_cv = min(tried_cv, key=lambda t: t[:3])
        if (
            _costs(labelled_cv)[1] < _costs(labelled)[1] * KEEP_FACTOR
            and cost_cv <= cost / KEEP_FACTOR
        ):
            cand, labelled, cost = cand_cv, labelled_cv, cost_cv
            dispatch, nserv = combos[best_cv]
            obj = Objective(runs, base, nserv, dispatch, runtime_ms, obj.writeback)
            cv_from_p99 = True
        else:
            cv_from_p99 = False
        tail = fit_tail(obj, cand, math.exp(x0[7]), FINE_NFEV)
        cand_tail = Candidate(**{**cand.__dict__, "service_tail": tail})
        labelled_tail = obj.labelled(cand_tail)
        means_tail, tails_tail = _costs(labelled_tail)
        if tails_tail < _costs(labelled)[1] * KEEP_FACTOR and means_tail <= cost / KEEP_FACTOR:
            cand, labelled, cost = cand_tail, labelled_tail, means_tail
        else:
            not_identified.append("device.service_tail")
        # A cap no run reaches is not identified: without it the fit is as
        # good, so it is reported and left out (0 = no cap), not guessed.
        for field, key in (("iops_cap", "device.iops_cap"), ("bandwidth_cap", "device.bandwidth_cap")):
            trial = Candidate(**{**cand.__dict__, field: 0.0})
            trial_labelled = obj.labelled(trial)
            trial_cost = _costs(trial_labelled)[0]
            if trial_cost <= cost / KEEP_FACTOR + 1e-4:
                cand, labelled, cost = trial, trial_labelled, trial_cost
                not_identified.append(key)
    rows = _rows(labelled)
    kept_wb = wb if cand.writeback_bytes else None
    sources = _sources(runs, rows, not_identified, nserv, dispatch, tried, kept_wb, wb)
    if cv_from_p99:
        p99s = [abs(r[3]) for r in rows if r[2].endswith("p99")]
        sources["device.service_cv"] = (
            f"fitted to the p99 completion latencies of {len(p99s)} figures of the runs, p99 "
            f"error {100 * sum(p99s) / max(1, len(p99s)):.1f}% (the mean figures pin it "
            "weakly), the other parameters refitted with it held"
        )
    text = profile_text(include, cand, sources, name=out.stem)
    means = [r for r in rows if not r[2].endswith("p99")]
    tails = [r for r in rows if r[2].endswith("p99")]
    return FitResult(cand, sources, means, tails, not_identified, text)


@dataclass(frozen=True)
class Writeback:
    """The write-back cache as one QD1 write run's completion latencies
    show it: `stalls` of its `writes` took over `STALL_FACTOR` times the
    median (`median_ns`), on average `flush_ns` longer than the median,
    the log-sd of their excess `spread`."""

    file: str
    writes: int
    stalls: int
    median_ns: float
    flush_ns: float
    bytes: float
    spread: float


# A write is stalled (it waited for a write-back) when its completion
# took over this many times the median: the body of a QD1 run's
# latencies stays within ~5x its median at p99.9 (the read runs of
# docs/calibrate.md), a write-back is milliseconds.
STALL_FACTOR = 10.0


def writeback_from_runs(runs: list[Measured]) -> Writeback | None:
    """The write-back cache from the write-only QD1 run with json+ bins
    (the plan's randwrite-4k-qd1): at QD1 a write waits for nothing else,
    so a stall is the write-back alone. One write-back per `bytes` written
    (the bytes written over the stalls) lasting the stalls' mean excess
    over the median. None when no such run, or no write stalled."""
    qd1 = [
        r
        for r in runs
        if set(r.dirs) == {"write"} and _depth(r) == 1 and r.dirs["write"].clat_bins
    ]
    if not qd1:
        return None
    run = qd1[0]
    bins = run.dirs["write"].clat_bins
    writes = sum(c for _, c in bins)
    half, seen, med = writes / 2, 0, bins[-1][0]
    for at, c in bins:
        seen += c
        if seen >= half:
            med = at
            break
    stalled = [(at, c) for at, c in bins if at > STALL_FACTOR * med]
    stalls = sum(c for _, c in stalled)
    bs = _bs_bytes(run.option("bs", "4k")) or 4096
    if not stalls or not writes:
        return None
    flush = sum((at - med) * c for at, c in stalled) / stalls
    logs = [(math.log(at - med), c) for at, c in stalled]
    mean_log = sum(v * c for v, c in logs) / stalls
    spread = math.sqrt(sum((v - mean_log) ** 2 * c for v, c in logs) / stalls)
    spread = min(spread, TAIL_MAX)
    return Writeback(run.file, writes, stalls, med, flush, bs * writes / stalls, spread)


def _start(
    runs: list[Measured], base: str, writeback: tuple[float, float, float] = (0.0, 0.0, 0.0)
) -> list[float]:
    """Starting parameters from the runs' closed forms: the QD1 latency
    less the host path (the job simulated on a device that takes no time)
    is the service time; two read sizes give the per-byte term; a write's
    share of the write-backs is taken off its time; the caps start above
    everything measured."""
    import math

    zero = Candidate(0, 0, 1e12, 0, 0, 1, "shared", 0.0).overrides()

    def service(run: Measured, ddir: str) -> float:
        sim = simulate_run(run, 200, base, zero)
        return max(1000.0, run.dirs[ddir].lat_mean_ns - sim[ddir].lat_mean_ns)

    qd1_reads = sorted(
        (r for r in runs if "read" in r.dirs and "write" not in r.dirs and _depth(r) == 1),
        key=lambda r: _bs_bytes(r.option("bs", "4k")) or 0,
    )
    small = qd1_reads[0] if qd1_reads else next(r for r in runs if "read" in r.dirs)
    s_small = service(small, "read")
    bs_small = _bs_bytes(small.option("bs", "4k")) or 4096
    rate = 1e9
    if len(qd1_reads) > 1:
        large = qd1_reads[-1]
        bs_large = _bs_bytes(large.option("bs", "4k")) or 4096
        extra = service(large, "read") - s_small
        if bs_large > bs_small and extra > 0:
            rate = (bs_large - bs_small) / extra * 1e9
    read_fixed = max(1000.0, s_small - bs_small / rate * 1e9)
    writes = sorted((r for r in runs if "write" in r.dirs), key=_depth)
    w = writes[0]
    w_bs = _bs_bytes(w.option("bs", "4k")) or 4096
    stall_share = writeback[1] * w_bs / writeback[0] if writeback[0] else 0.0
    write_fixed = max(1000.0, service(w, "write") - stall_share - w_bs / rate * 1e9)
    iops = max(f.iops for r in runs for f in r.dirs.values())
    bw = max(
        f.iops * (_bs_bytes(r.option("bs", "4k")) or 4096) for r in runs for f in r.dirs.values()
    )
    tail = _tail_start(small)
    return [
        math.log(v) for v in (read_fixed, write_fixed, rate, 2 * iops, 2 * bw, 0.5, tail, 5000.0)
    ]


def _quantile(bins: tuple[tuple[float, int], ...], q: float) -> float:
    """The q-quantile of a json+ histogram, as fio reads a percentile (the
    first bin where the running count reaches q of the samples)."""
    total = sum(c for _, c in bins)
    seen = 0
    for at, c in bins:
        seen += c
        if seen >= q * total:
            return at
    return bins[-1][0]


def _tail_start(run: Measured) -> float:
    """The log-normal σ of the QD1 read run's completion latencies above
    their floor (p1: the host path and the fixed part of the service):
    ln((p99 - p1) / (p50 - p1)) / 2.326, p99 being 2.326 standard
    deviations above the median of a normal. 1 when the run has no json+
    histogram or no spread."""
    bins = run.dirs["read"].clat_bins
    if not bins:
        return 1.0
    p1, p50, p99 = (_quantile(bins, q) for q in (0.01, 0.5, 0.99))
    if not p99 > p50 > p1:
        return 1.0
    return min(TAIL_MAX, max(TAIL_MIN, math.log((p99 - p1) / (p50 - p1)) / 2.326))


def _rows(labelled: list[tuple[Measured, str, float]]) -> list[tuple[str, str, str, float]]:
    """(file, job, figure, relative error) of each fitted figure."""
    import math

    return [(run.file, run.name, figure, math.exp(e) - 1) for (run, figure, e) in labelled]


def _sources(
    runs: list[Measured],
    rows: list[tuple[str, str, str, float]],
    not_identified: list[str],
    servers: int,
    dispatch: str,
    tried: int,
    wb: Writeback | None = None,
    seen: Writeback | None = None,
) -> dict[str, str]:
    """Each fitted key's source: the run files that pin it and the fit's
    error on them (the mean absolute relative error of their figures;
    the tail's on their p99s)."""

    def err(select: list[Measured], figure: str = "") -> str:
        names = {r.name for r in select}
        # The mean figures' error unless a figure is named: the p99s have
        # their own (the tail's), and the fit keeps them out of the means.
        vals = [
            abs(e)
            for (_, job, fig, e) in rows
            if job in names and (figure in fig if figure else not fig.endswith("p99"))
        ]
        mean = sum(vals) / len(vals) if vals else 0.0
        files = ", ".join(sorted({Path(r.file).name for r in select}))
        what = f"{figure} " if figure else ""
        return f"fitted to {files}, {what}error {100 * mean:.1f}%"

    src = {key: err(sel, fig) for key, (sel, fig) in pinned_by(runs).items()}
    for key in ("device.servers", "device.dispatch"):
        src[key] += f" (best of {tried} server counts and dispatches)"
    if wb is not None:
        closed = (
            f"from {Path(wb.file).name}'s completion latencies (json+ bins): {wb.stalls} of "
            f"{wb.writes} writes took over {STALL_FACTOR:g}x the median "
            f"({wb.median_ns / 1e3:.1f} us)"
        )
        src["device.writeback_bytes"] = closed + ": one write-back per bytes written over stalls"
        src["device.writeback_flush"] = closed + ": their mean excess over the median"
        src["device.writeback_spread"] = closed + ": the log-sd of their excess over the median"
    elif seen is not None:
        for key in ("device.writeback_bytes", "device.writeback_flush", "device.writeback_spread"):
            src[key] = (
                f"not identified by the runs: {seen.stalls} of {seen.writes} writes of "
                f"{Path(seen.file).name} took over {STALL_FACTOR:g}x the median, but the "
                "fit with a write-back cache matches the runs no better than without, so none: 0"
            )
    else:
        for key in ("device.writeback_bytes", "device.writeback_flush", "device.writeback_spread"):
            src[key] = (
                "not identified by the runs (no write-only iodepth=1 run with json+ bins, or "
                "no write in it took 10x the median), so none: 0; run the plan's "
                "randwrite-4k-qd1 with --output-format=json+"
            )
    # The queue's policy is not fitted: reads first over one shared queue
    # matched the quiet sitting's deep mixes (their p99s too) but not its
    # pure reads at depth, which need queues by address (docs/calibrate.md,
    # "Reads first over a shared queue: the trial").
    src["device.queue_policy"] = (
        "not identified by the runs: the fit keeps arrival order (fifo); reads first over "
        "one shared queue matched a sitting's deep mixes but not its pure reads at depth "
        "(docs/calibrate.md)"
    )
    src["device.writes_starved"] = (
        "not identified by the runs: used only under queue_policy = reads-first; "
        "mq-deadline's default 2 (block/mq-deadline.c writes_starved)"
    )
    for key in not_identified:
        if key == "device.writeback_bytes":
            continue
        if key == "device.service_tail":
            src[key] = (
                "not identified by the runs (an exponential service time matches their p99s "
                "as well, or the tail fitted to them makes the mean figures worse), so 0: "
                "exponential"
            )
        elif key in ("device.turnaround", "device.switch_delay"):
            src[key] = (
                "not identified by the runs (the fit is as good without one, or the other way "
                "a direction switch costs fits better, or no job mixes reads and writes), so "
                "none: 0; run the plan's randrw jobs to find it"
            )
        else:
            src[key] = (
                "not identified by the runs (no run reaches a cap: the fit is as good without "
                "one), so none: 0; run deeper or larger jobs to find it"
            )
    return src


def pinned_by(runs: list[Measured]) -> dict[str, tuple[list[Measured], str]]:
    """Which of `runs` pin each fitted key (and the figure that does, ''
    for all of a run's): docs/calibrate.md's table of the generic
    device."""
    reads = [r for r in runs if "read" in r.dirs]
    qd1_reads = [r for r in reads if _depth(r) == 1] or reads
    writes = [r for r in runs if "write" in r.dirs]
    deep = [r for r in runs if _depth(r) > 1]
    large = [r for r in reads if (_bs_bytes(r.option("bs", "4k")) or 0) > 4096] or reads
    mixed = [r for r in runs if len(r.dirs) > 1]
    qd1_writes = [r for r in writes if set(r.dirs) == {"write"} and _depth(r) == 1]
    return {
        "device.read_fixed": (qd1_reads, ""),
        "device.write_fixed": (writes, ""),
        "device.transfer_rate": (large, ""),
        "device.servers": (deep, ""),
        "device.dispatch": (deep, ""),
        "device.service_cv": (deep, ""),
        "device.iops_cap": (deep, ""),
        "device.bandwidth_cap": (large, ""),
        "device.service_tail": (runs, "p99"),
        "device.turnaround": (mixed, ""),
        "device.switch_delay": (mixed, ""),
        "device.writeback_bytes": (qd1_writes, ""),
        "device.writeback_flush": (qd1_writes, ""),
        "device.writeback_spread": (qd1_writes, ""),
    }


def pins(runs: list[Measured]) -> dict[str, list[str]]:
    """Each run's job name and the keys it pins (`pinned_by` turned
    round), for `check`'s report."""
    out: dict[str, list[str]] = {r.name: [] for r in runs}
    for key, (sel, _) in pinned_by(runs).items():
        for r in sel:
            out[r.name].append(key.removeprefix("device."))
    return out


# ----------------------------------------------------------------------
# Checking a profile against runs


@dataclass(frozen=True)
class CheckRow:
    """One figure of one job: measured, simulated, relative error."""

    file: str
    job: str
    figure: str
    measured: float
    simulated: float

    @property
    def error(self) -> float:
        return self.simulated / self.measured - 1.0


def check(profile: str, runs: list[Measured], runtime_ms: int = CHECK_MS) -> list[CheckRow]:
    """Simulate every run's job on `profile`: IOPS, mean latency, p99 and
    p99.9 completion latency of each direction, against the measured
    ones."""
    rows = []
    for run in runs:
        sim = simulate_run(run, runtime_ms, profile, [])
        for ddir, meas in run.dirs.items():
            got = sim.get(ddir)
            if got is None:
                raise CalibrateError(f"{run.file}: job {run.name!r}: the simulation did no {ddir}s")
            name = Path(run.file).name
            rows.append(CheckRow(name, run.name, f"{ddir} iops", meas.iops, got.iops))
            rows.append(
                CheckRow(
                    name,
                    run.name,
                    f"{ddir} mean lat us",
                    meas.lat_mean_ns / 1e3,
                    got.lat_mean_ns / 1e3,
                )
            )
            for figure, m, g in (
                ("p99 clat us", meas.clat_p99_ns, got.clat_p99_ns),
                ("p99.9 clat us", meas.clat_p999_ns, got.clat_p999_ns),
            ):
                if m and g:
                    rows.append(CheckRow(name, run.name, f"{ddir} {figure}", m / 1e3, g / 1e3))
    return rows


def table(rows: list[CheckRow]) -> str:
    """The rows as a plain-text table, with the median and worst absolute
    error of IOPS, mean latency, p99 and p99.9 at the end."""
    width = max([len(r.job) for r in rows] + [3])
    lines = [f"{'job':<{width}}  {'figure':<16} {'measured':>12} {'simulated':>12} {'error':>8}"]
    for r in rows:
        lines.append(
            f"{r.job:<{width}}  {r.figure:<16} {r.measured:>12.1f} {r.simulated:>12.1f} "
            f"{100 * r.error:>+7.1f}%"
        )
    for what in ("iops", "mean lat", "p99 clat", "p99.9 clat"):
        errs = sorted(abs(r.error) for r in rows if what in r.figure)
        if errs:
            lines.append(
                f"{what}: median error {100 * median(errs):.1f}%, worst {100 * errs[-1]:.1f}%"
            )
    return "\n".join(lines) + "\n"


def pins_text(runs: list[Measured]) -> str:
    """Which of the generic device's parameters each run pins (the ones
    its figures answer to; docs/calibrate.md)."""
    lines = ["parameters each run pins:"]
    for job, keys in pins(runs).items():
        lines.append(f"  {job}: {', '.join(keys) if keys else 'none'}")
    return "\n".join(lines) + "\n"


def median(values: list[float]) -> float:
    import statistics

    return statistics.median(values)


def plot(rows: list[CheckRow], path: str) -> None:
    """Simulated against measured, one panel per figure kind, log axes,
    with the 10% and 20% bands."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    kinds = [("iops", "IOPS"), ("mean lat", "mean latency (us)"), ("p99 clat", "p99 clat (us)")]
    fig = Figure(figsize=(13, 4.5))
    axes = fig.subplots(1, 3)
    for ax, (key, title) in zip(axes, kinds, strict=True):
        sel = [r for r in rows if key in r.figure]
        if not sel:
            ax.set_visible(False)
            continue
        xs = [r.measured for r in sel]
        ys = [r.simulated for r in sel]
        lo, hi = min(xs + ys) * 0.7, max(xs + ys) * 1.4
        ax.plot([lo, hi], [lo, hi], color="black", linewidth=0.8)
        for band, style in ((0.1, "--"), (0.2, ":")):
            ax.plot([lo, hi], [lo * (1 + band), hi * (1 + band)], "grey", linestyle=style)
            ax.plot([lo, hi], [lo * (1 - band), hi * (1 - band)], "grey", linestyle=style)
        ax.scatter(xs, ys, s=18)
        for r in sel:
            ax.annotate(r.job, (r.measured, r.simulated), fontsize=6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("measured")
        ax.set_ylabel("simulated")
        ax.set_title(title)
    fig.tight_layout()
    from flashpath import outputs

    with outputs.replacing(path, "--plot", image=True) as tmp:
        fig.savefig(tmp, dpi=110)
