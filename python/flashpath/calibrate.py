"""Calibration: a device profile fitted to the user's own fio runs.

`plan` writes fio jobs that identify the generic queueing device
(`device.kind = "generic"`, crates/flashpath/src/device/queue.rs); `fit`
finds the device parameters that make the simulated jobs match the
measured ones (scipy.optimize); `check` sets simulated against measured,
job by job.
"""

from __future__ import annotations

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
# read at depth the bandwidth cap, random writes the write service time.
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
)

# Jobs outside the plan, to test a fitted profile's predictions (other block
# sizes, depths and a mix).
CHECKS: tuple[PlanJob, ...] = (
    PlanJob("check-randread-8k-qd8", "randread", "8k", 8, "prediction"),
    PlanJob("check-randread-16k-qd2", "randread", "16k", 2, "prediction"),
    PlanJob("check-randrw-4k-qd8", "randrw", "4k", 8, "prediction", rwmixread=70),
    PlanJob("check-read-32k-qd4", "read", "32k", 4, "prediction"),
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

2. Run every job, one JSON output each, in one session (a disk's figures
   drift from day to day, so measure the fit's runs and any check runs
   together), with nothing else busy on the machine:

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
    """One direction of one job: IOPS, mean total latency and p99
    completion latency (ns), as fio reports them."""

    iops: float
    lat_mean_ns: float
    clat_p99_ns: float | None


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
    p99 = d.clat.percentiles.get("p99") if d.clat is not None else None
    return Figures(d.iops, d.lat.mean, p99)


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
    """Log errors of simulated IOPS and mean latency against the runs, for
    one server count and dispatch."""

    def __init__(
        self, runs: list[Measured], base: str, servers: int, dispatch: str, runtime_ms: int
    ) -> None:
        self.runs = runs
        self.base = base
        self.servers = servers
        self.dispatch = dispatch
        self.runtime_ms = runtime_ms

    def candidate(self, x: list[float]) -> Candidate:
        import math

        rf, wf, rate, iops, bw, cv = (math.exp(v) for v in x)
        return Candidate(rf, wf, rate, iops, bw, self.servers, self.dispatch, min(1.0, cv))

    def errors(self, cand: Candidate) -> list[float]:
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
                out.append(math.log(got.iops / meas.iops))
                out.append(math.log(got.lat_mean_ns / meas.lat_mean_ns))
        return out

    def __call__(self, x: list[float]) -> list[float]:
        return self.errors(self.candidate(x))


def fit_candidate(
    runs: list[Measured],
    base: str,
    servers: int,
    dispatch: str,
    x0: list[float],
    runtime_ms: int,
    max_nfev: int,
) -> tuple[float, list[float]]:
    """The best fit for one server count and dispatch (scipy's trust-region
    least squares over the log parameters): its summed squared log error
    and parameters. A module-level function, run by the sweep engine."""
    from scipy.optimize import least_squares

    obj = Objective(runs, base, servers, dispatch, runtime_ms)
    # Parameters within 100x of the start either way; a step of a few
    # percent is what a simulated figure answers to (a smaller one drowns
    # in the finite run's noise).
    lo = [v - 4.6 for v in x0[:5]] + [CV_LOG_MIN]
    hi = [v + 4.6 for v in x0[:5]] + [0.0]
    start = [min(max(v, a + 1e-6), b - 1e-6) for v, a, b in zip(x0, lo, hi, strict=True)]
    res = least_squares(obj, start, bounds=(lo, hi), diff_step=0.03, max_nfev=max_nfev)
    return float(2.0 * res.cost), [float(v) for v in res.x]


@dataclass
class FitResult:
    cand: Candidate
    sources: dict[str, str]
    errors: list[tuple[str, str, str, float]]
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

        everything = list(range(len(combos)))
        coarse = search([x0] * len(combos), everything, max(200, runtime_ms // 4), COARSE_NFEV)
        finalists = ranked(coarse)[:FINALISTS]
        fine = search([coarse[i][1] for i in finalists], finalists, runtime_ms, FINE_NFEV)
        best = ranked(fine)[0]
        dispatch, nserv = combos[best]
        tried = len(combos)
        obj = Objective(runs, base, nserv, dispatch, runtime_ms)
        cand = obj.candidate(fine[best][1])
        errs = obj.errors(cand)
        cost = sum(e * e for e in errs)
        # A cap no run reaches is not identified: without it the fit is as
        # good, so it is reported and left out (0 = no cap), not guessed.
        not_identified = []
        for field, key in (
            ("iops_cap", "device.iops_cap"),
            ("bandwidth_cap", "device.bandwidth_cap"),
        ):
            trial = Candidate(**{**cand.__dict__, field: 0.0})
            trial_errs = obj.errors(trial)
            trial_cost = sum(e * e for e in trial_errs)
            if trial_cost <= cost * 1.02 + 1e-4:
                cand, errs, cost = trial, trial_errs, trial_cost
                not_identified.append(key)
    rows = _rows(runs, errs)
    sources = _sources(runs, rows, not_identified, nserv, dispatch, tried)
    text = profile_text(include, cand, sources, name=out.stem)
    return FitResult(cand, sources, rows, not_identified, text)


def _start(runs: list[Measured], base: str) -> list[float]:
    """Starting parameters from the runs' closed forms: the QD1 latency
    less the host path (the job simulated on a device that takes no time)
    is the service time; two read sizes give the per-byte term; the caps
    start above everything measured."""
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
    write_fixed = max(
        1000.0, service(w, "write") - (_bs_bytes(w.option("bs", "4k")) or 4096) / rate * 1e9
    )
    iops = max(f.iops for r in runs for f in r.dirs.values())
    bw = max(
        f.iops * (_bs_bytes(r.option("bs", "4k")) or 4096) for r in runs for f in r.dirs.values()
    )
    return [math.log(v) for v in (read_fixed, write_fixed, rate, 2 * iops, 2 * bw, 0.5)]


def _rows(runs: list[Measured], errs: list[float]) -> list[tuple[str, str, str, float]]:
    """(file, job, figure, relative error) of each fitted figure."""
    import math

    rows = []
    i = 0
    for run in runs:
        for ddir in run.dirs:
            rows.append((run.file, run.name, f"{ddir} iops", math.exp(errs[i]) - 1))
            rows.append((run.file, run.name, f"{ddir} mean lat", math.exp(errs[i + 1]) - 1))
            i += 2
    return rows


def _sources(
    runs: list[Measured],
    rows: list[tuple[str, str, str, float]],
    not_identified: list[str],
    servers: int,
    dispatch: str,
    tried: int,
) -> dict[str, str]:
    """Each fitted key's source: the run files that pin it and the fit's
    error on them (the mean absolute relative error of their figures)."""

    def err(select: list[Measured]) -> str:
        names = {r.name for r in select}
        vals = [abs(e) for (_, job, _, e) in rows if job in names]
        mean = sum(vals) / len(vals) if vals else 0.0
        files = ", ".join(sorted({Path(r.file).name for r in select}))
        return f"fitted to {files}, error {100 * mean:.1f}%"

    reads = [r for r in runs if "read" in r.dirs]
    qd1_reads = [r for r in reads if _depth(r) == 1] or reads
    writes = [r for r in runs if "write" in r.dirs]
    deep = [r for r in runs if _depth(r) > 1]
    large = [r for r in reads if (_bs_bytes(r.option("bs", "4k")) or 0) > 4096] or reads
    src = {
        "device.read_fixed": err(qd1_reads),
        "device.write_fixed": err(writes),
        "device.transfer_rate": err(large),
        "device.servers": err(deep) + f" (best of {tried} server counts and dispatches)",
        "device.dispatch": err(deep) + f" (best of {tried} server counts and dispatches)",
        "device.service_cv": err(deep),
        "device.iops_cap": err(deep),
        "device.bandwidth_cap": err(large),
    }
    for key in not_identified:
        src[key] = (
            "not identified by the runs (no run reaches a cap: the fit is as good without "
            "one), so none: 0; run deeper or larger jobs to find it"
        )
    return src


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
    """Simulate every run's job on `profile`: IOPS, mean latency and p99
    completion latency of each direction, against the measured ones."""
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
            if meas.clat_p99_ns and got.clat_p99_ns:
                rows.append(
                    CheckRow(
                        name,
                        run.name,
                        f"{ddir} p99 clat us",
                        meas.clat_p99_ns / 1e3,
                        got.clat_p99_ns / 1e3,
                    )
                )
    return rows


def table(rows: list[CheckRow]) -> str:
    """The rows as a plain-text table, with the median and worst absolute
    error of IOPS and mean latency at the end."""
    width = max([len(r.job) for r in rows] + [3])
    lines = [f"{'job':<{width}}  {'figure':<16} {'measured':>12} {'simulated':>12} {'error':>8}"]
    for r in rows:
        lines.append(
            f"{r.job:<{width}}  {r.figure:<16} {r.measured:>12.1f} {r.simulated:>12.1f} "
            f"{100 * r.error:>+7.1f}%"
        )
    for what in ("iops", "mean lat"):
        errs = sorted(abs(r.error) for r in rows if what in r.figure)
        if errs:
            lines.append(
                f"{what}: median error {100 * median(errs):.1f}%, worst {100 * errs[-1]:.1f}%"
            )
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

    kinds = [("iops", "IOPS"), ("mean lat", "mean latency (us)"), ("p99", "p99 clat (us)")]
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
