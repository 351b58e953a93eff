"""fio's JSON output, read in one place.

fio 3.x writes one document per run (`--output-format=json` or `json+`;
stat.c show_thread_status_json, fio 3.33): "fio version", "jobs" (one table
per job or group-reported job, with "read", "write", "trim" and "sync"
sections, or "mixed" with unified_rw_reporting=mixed), "disk_util", and in
flashpath's output a "flashpath" section. This module reads such a
document into typed results and names every figure in one metric
namespace, which the Python API (api.py), `flashpath reproduce`
(reproduce.py), the sweep table (sweep_table.py) and `flashpath calibrate`
(calibrate.py) all use.

Metric names (docs/fio-json.md has the table), per direction
`D` = read, write, trim, sync or mixed:

- `D.io_bytes`, `D.ios` (fio's total_ios), `D.runtime_ms`, `D.iops`,
  `D.bw_bytes` (bytes/s), `D.bw` (KiB/s, fio's "bw");
- `D.K.min`, `D.K.max`, `D.K.mean`, `D.K.stddev`, `D.K.n` for the latency
  `K` = slat, clat, lat (ns, fio's `K_ns`), and its percentiles `D.K.pNN`
  (`read.clat.p99`, `read.clat.p99.9`; fio's "99.000000", "99.900000").

The names the sweep table's columns and reproduce's extractors used before
(`clat_ns.p99`, `total_ios`, `runtime`, `lat_ns.mean`, ...) map to these
through `OLD_NAMES`, one table.

A document that is not fio 3.x JSON, and a figure that is not a finite,
non-negative number below 2^64 (or breaks fio's own arithmetic), is a
`FioJsonError` naming the file, the job and the field.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# The directions fio reports per job (stat.c: DDIR_READ, DDIR_WRITE,
# DDIR_TRIM, then "sync" for fsync/fdatasync; "mixed" replaces the three
# with unified_rw_reporting=mixed).
DIRECTIONS = ("read", "write", "trim")
ALL_DIRECTIONS = ("read", "write", "trim", "sync", "mixed")
LATENCIES = ("slat", "clat", "lat")
LATENCY_FIELDS = ("min", "max", "mean", "stddev", "n")

# fio keeps I/O counts and nanosecond latencies in 64-bit unsigned
# integers (stat.h: uint64_t total_io_u, struct io_stat's u64 min/max and
# double mean of u64 samples), so no figure of a real run reaches 2^64.
U64_LIMIT = 2.0**64

# A fio JSON output is some tens of KiB (json+ adds the histograms, still
# well under 1 MiB for one job); a file past this is not one.
FILE_MAX = 64 << 20

# What a direction needs for its figures to be read: fio's layout since
# 3.0 (commit "Switch to nanoseconds": lat_ns / clat_ns, percentiles keyed
# "99.000000").
NEEDED = ("iops", "total_ios", "lat_ns", "clat_ns")

# Old names -> the namespace's: the sweep table's per-row columns (fio's
# own keys, docs/sweeps.md) and reproduce's extractors (`D.stat`,
# scenarios/*.toml). An old column is under the row's direction: `iops` on
# a read row is `read.iops`. The extractors aggregate over the jobs:
# (new name, how, divisor): "sum" adds the jobs' figures, "per_job"
# averages them, "weighted" weighs each job's by its I/Os, "min"/"max"
# take the extreme; the result is divided by the divisor to convert the
# unit (a division, not a multiplication by its inverse: the golden
# outputs of `reproduce all` keep their last bits).
OLD_NAMES: dict[str, str] = {
    "io_bytes": "io_bytes",
    "total_ios": "ios",
    "runtime": "runtime_ms",
    "iops": "iops",
    "bw_bytes": "bw_bytes",
    "bw": "bw",
    **{f"{k}_ns.{f}": f"{k}.{f}" for k in LATENCIES for f in ("min", "max", "mean", "stddev")},
    **{f"{k}_ns.N": f"{k}.n" for k in LATENCIES},
}
EXTRACTORS: dict[str, tuple[str, str, float]] = {
    "bw_MBps": ("bw_bytes", "sum", 1e6),
    "job_bw_MBps": ("bw_bytes", "per_job", 1e6),
    "bw_MiBps": ("bw_bytes", "sum", 2.0**20),
    "bw_kBps": ("bw_bytes", "sum", 1024.0),
    "iops": ("iops", "sum", 1.0),
    "lat_mean_us": ("lat.mean", "weighted", 1e3),
    "clat_mean_us": ("clat.mean", "weighted", 1e3),
    "clat_min_us": ("clat.min", "min", 1e3),
    "clat_max_us": ("clat.max", "max", 1e3),
}


class FioJsonError(Exception):
    """A document or figure that is not fio 3.x JSON: one message naming
    the file, the job and the field."""


def brief(v: object) -> str:
    """A value as a message quotes it: its JSON, cut to 40 characters."""
    try:
        text = json.dumps(v)
    except (TypeError, ValueError, RecursionError):
        text = type(v).__name__
    return text if len(text) <= 40 else text[:40] + "..."


def number(file: str, job: str, field_: str, v: object, integer: bool = False) -> float:
    """A figure: a JSON number (not a boolean or text), finite, not
    negative, below 2^64 (an integer when `integer`); anything else is a
    FioJsonError naming the file, the job and the field."""
    at = f"{file}: job {job!r}: {field_}"
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise FioJsonError(f"{at}: {brief(v)} is not a number")
    if isinstance(v, float) and not math.isfinite(v):
        raise FioJsonError(f"{at}: {v} is not a finite number")
    if v < 0:
        raise FioJsonError(f"{at}: {v} is negative")
    if v >= U64_LIMIT:
        raise FioJsonError(f"{at}: {v:g} is out of range (fio's figures are below 2^64)")
    if integer and float(v) != int(v):
        raise FioJsonError(f"{at}: {v} is not a whole number")
    return float(v)


def percentile_name(key: str) -> str:
    """fio's "99.900000" as "p99.9"."""
    return "p" + (key.rstrip("0").rstrip(".") if "." in key else key)


@dataclass(frozen=True)
class Latency:
    """One latency of one direction (fio's `slat_ns`, `clat_ns`,
    `lat_ns`), in ns; `percentiles` by name (`p99`, `p99.9`) in fio's
    order; `bins` json+'s histogram (a bin's latency in ns -> its I/Os,
    stat.c add_ddir_status_json "bins"), empty in plain json."""

    min: float | None
    max: float | None
    mean: float | None
    stddev: float | None
    n: float | None
    percentiles: dict[str, float] = field(default_factory=dict)
    bins: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Direction:
    """One direction of one job. `io_bytes` ... `bw` are None when the
    section lacks them (fio's "sync" has only total_ios and lat_ns)."""

    name: str
    ios: int
    io_bytes: float | None
    runtime_ms: float | None
    iops: float | None
    bw_bytes: float | None
    bw: float | None
    slat: Latency | None
    clat: Latency | None
    lat: Latency | None

    def metrics(self) -> dict[str, float]:
        """This direction's figures by their names in the namespace."""
        out: dict[str, float] = {}
        for key in ("io_bytes", "ios", "runtime_ms", "iops", "bw_bytes", "bw"):
            v = getattr(self, key)
            if v is not None:
                out[f"{self.name}.{key}"] = float(v)
        for kind in LATENCIES:
            lat: Latency | None = getattr(self, kind)
            if lat is None:
                continue
            for f in LATENCY_FIELDS:
                v = getattr(lat, f)
                if v is not None:
                    out[f"{self.name}.{kind}.{f}"] = v
            for p, v in lat.percentiles.items():
                out[f"{self.name}.{kind}.{p}"] = v
        return out


@dataclass(frozen=True)
class Job:
    """One job of a document (its "jobname", "groupid", "error": fio's
    errno, 0 when the job ended well); its directions are read on demand
    (`direction`) or all at once (`directions`)."""

    file: str
    name: str
    groupid: Any
    error: Any
    raw: dict[str, Any]

    @property
    def total_err(self) -> int | None:
        """fio's count of I/O errors the job went on after, and the errno
        of the first: written only for a job with continue_on_error
        (stat.c show_thread_status_json); None otherwise."""
        return self._count("total_err")

    @property
    def first_error(self) -> int | None:
        """See `total_err`."""
        return self._count("first_error")

    def _count(self, key: str) -> int | None:
        if key not in self.raw:
            return None
        return int(number(self.file, self.name, key, self.raw[key], integer=True))

    def direction(self, ddir: str, required: bool = True) -> Direction | None:
        """Direction `ddir`'s figures, each checked; None when it did no
        I/O (or, unless `required`, when the job has no such section)."""
        d = self.raw.get(ddir)
        if d is None and not required:
            return None
        return read_direction(self.file, self.name, ddir, d, failed=bool(self.error))

    def directions(self) -> dict[str, Direction]:
        """Every direction that did I/O, in fio's order."""
        out = {}
        for ddir in ALL_DIRECTIONS:
            d = self.direction(ddir, required=ddir in DIRECTIONS and "mixed" not in self.raw)
            if d is not None:
                out[ddir] = d
        return out

    def metrics(self) -> dict[str, float]:
        """Every figure of the job by its name in the namespace."""
        out: dict[str, float] = {}
        for d in self.directions().values():
            out.update(d.metrics())
        out.update(self.steadystate())
        return out

    def steadystate(self) -> dict[str, float]:
        """The "steadystate" section of a job with `ss_dur` (stat.c
        show_thread_status_json): `steadystate.attained` (0 or 1),
        `steadystate.duration` (s), `steadystate.iops_mean`,
        `steadystate.bw_mean` (bytes/s) over the window, and
        `steadystate.criterion` (the slope or the deviation, in % of the
        mean when the limit is; negative for a falling slope). Empty
        without the section."""
        ss = self.raw.get("steadystate")
        if ss is None:
            return {}
        at = f"{self.file}: job {self.name!r}: steadystate"
        if not isinstance(ss, dict) or not isinstance(ss.get("data"), dict):
            raise FioJsonError(f"{at}: {brief(ss)} is not fio's steadystate object")
        data = ss["data"]

        def n(key: str, v: object) -> float:
            return number(self.file, self.name, f"steadystate.{key}", v, integer=True)

        crit = ss.get("criterion")
        try:
            value = float(str(crit).removesuffix("%")) if isinstance(crit, str) else math.nan
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise FioJsonError(f"{at}.criterion: {brief(crit)} is not fio's criterion text")
        return {
            "steadystate.attained": n("attained", ss.get("attained")),
            "steadystate.duration": n("duration", ss.get("duration")),
            "steadystate.iops_mean": n("data.iops_mean", data.get("iops_mean")),
            "steadystate.bw_mean": n("data.bw_mean", data.get("bw_mean")),
            "steadystate.criterion": value,
        }


@dataclass(frozen=True)
class FioRun:
    """One fio JSON document: its jobs in report order and the
    "flashpath" section (None in real fio's output)."""

    file: str
    version: str
    jobs: list[Job]
    flashpath: dict[str, Any] | None
    raw: dict[str, Any]


def _latency(file: str, job: str, at: str, v: object) -> Latency | None:
    """One latency table; percentiles need fio's keys ("99.000000")."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise FioJsonError(f"{file}: job {job!r}: {at} is not a table")
    figs: dict[str, float | None] = {}
    for f, key in zip(LATENCY_FIELDS, ("min", "max", "mean", "stddev", "N"), strict=True):
        figs[f] = number(file, job, f"{at}.{key}", v[key]) if key in v else None
    percentiles = v.get("percentile")
    if percentiles is not None and not isinstance(percentiles, dict):
        raise FioJsonError(f"{file}: job {job!r}: {at}.percentile is not a table")
    named: dict[str, float] = {}
    for key, pv in (percentiles or {}).items():
        try:
            ok = 0 <= float(key) <= 100
        except ValueError:
            ok = False
        if not ok:
            raise FioJsonError(
                f"{file}: job {job!r}: {at}.percentile: {brief(key)} is not a percentile"
            )
        if pv is not None:
            named[percentile_name(key)] = number(file, job, f"{at}.percentile.{key}", pv)
    bins = v.get("bins")
    if bins is not None and not isinstance(bins, dict):
        raise FioJsonError(f"{file}: job {job!r}: {at}.bins is not a table")
    counts: dict[int, int] = {}
    for key, count in (bins or {}).items():
        if not (key.isascii() and key.isdigit()):
            raise FioJsonError(
                f"{file}: job {job!r}: {at}.bins: {brief(key)} is not a latency in ns"
            )
        counts[int(key)] = int(number(file, job, f"{at}.bins.{key}", count, integer=True))
    return Latency(figs["min"], figs["max"], figs["mean"], figs["stddev"], figs["n"], named, counts)


def read_direction(
    file: str, job: str, ddir: str, d: object, failed: bool = False
) -> Direction | None:
    """One direction's figures, each checked (`number`): the I/O count,
    IOPS at most 1000 per I/O (fio's iops is total_ios over the runtime in
    ms, times 1000, and a runtime is at least 1 ms: stat.c
    show_ddir_status), latencies above zero when I/Os were done. None when
    the direction did no I/O. A `failed` job (fio's "error" not 0) may
    have counted I/Os it never completed, with no runtime, IOPS or
    latency (fio 3.33 does so for a job whose first I/O fails:
    tests/fixtures/fio/real-runs/iouring-hipri): only the numbers are
    checked then."""
    if not isinstance(d, dict):
        raise FioJsonError(f"{file}: job {job!r}: no {ddir!r} section (not fio 3.x JSON)")
    needed = ("total_ios", "lat_ns") if ddir == "sync" else NEEDED
    missing = [k for k in needed if k not in d]
    if missing:
        raise FioJsonError(
            f"{file}: job {job!r}: {ddir} has no {', '.join(missing)}: a fio JSON layout "
            "other than fio 3.x's (lat_ns, clat_ns); run fio 3.x with --output-format=json+"
        )
    ios = number(file, job, f"{ddir}.total_ios", d["total_ios"], integer=True)
    if not ios:
        return None
    iops = None
    if ddir != "sync":
        iops = number(file, job, f"{ddir}.iops", d["iops"])
        if (iops <= 0 and not failed) or iops > 1000 * ios:
            raise FioJsonError(
                f"{file}: job {job!r}: {ddir}.iops: {iops:g} with {ios:.0f} I/Os is out of "
                f"range (above 0 and at most 1000 per I/O: fio's runtime is at least 1 ms)"
            )
    lat = d["lat_ns"]
    if not isinstance(lat, dict) or "mean" not in lat:
        raise FioJsonError(f"{file}: job {job!r}: {ddir}.lat_ns has no mean")
    mean = number(file, job, f"{ddir}.lat_ns.mean", lat["mean"])
    if mean <= 0 and not failed:
        raise FioJsonError(
            f"{file}: job {job!r}: {ddir}.lat_ns.mean: 0 for {ios:.0f} I/Os (an I/O takes time)"
        )
    if ddir != "sync" and not isinstance(d["clat_ns"], dict):
        raise FioJsonError(f"{file}: job {job!r}: {ddir}.clat_ns is not a table")
    clat = _latency(file, job, f"{ddir}.clat_ns", d.get("clat_ns"))
    lat_ = _latency(file, job, f"{ddir}.lat_ns", lat)
    slat = _latency(file, job, f"{ddir}.slat_ns", d.get("slat_ns"))

    def opt(key: str, integer: bool = False) -> float | None:
        return number(file, job, f"{ddir}.{key}", d[key], integer) if key in d else None

    return Direction(
        ddir,
        int(ios),
        opt("io_bytes", integer=True),
        opt("runtime"),
        iops,
        opt("bw_bytes"),
        opt("bw"),
        slat,
        clat,
        lat_,
    )


def job_name_problem(name: str) -> bool:
    """Whether `name` cannot be a job section's name (`[NAME]`): empty, a
    bracket, a control character."""
    return not name or "]" in name or "[" in name or any(ord(c) < 32 or ord(c) == 127 for c in name)


def jobs(doc: dict[str, Any], file: str) -> Iterator[Job]:
    """The document's jobs in report order, each with a name a job file
    can carry; the figures are read when asked for."""
    for job in doc["jobs"]:
        if not isinstance(job, dict) or "jobname" not in job:
            raise FioJsonError(f"{file}: a job without a name: not fio JSON output")
        if not isinstance(job["jobname"], str) or job_name_problem(job["jobname"]):
            raise FioJsonError(
                f"{file}: job {brief(job['jobname'])}: not a fio job name "
                "(text without brackets or control characters)"
            )
        yield Job(file, job["jobname"], job.get("groupid"), job.get("error", 0), job)


def check_document(doc: object, file: str) -> dict[str, Any]:
    """`doc` if it is fio 3.x's JSON layout: 'fio version' 3.x and a
    non-empty list of jobs."""
    if not isinstance(doc, dict) or "jobs" not in doc or "fio version" not in doc:
        raise FioJsonError(f"{file}: not fio JSON output: no 'fio version' and 'jobs'")
    version = str(doc["fio version"])
    if not version.startswith("fio-3."):
        raise FioJsonError(f"{file}: written by {version[:40]}: only fio 3.x's JSON layout is read")
    if not isinstance(doc["jobs"], list) or not doc["jobs"]:
        raise FioJsonError(f"{file}: no jobs in the fio output")
    return doc


def decode(text: str, file: str) -> Any:
    """The JSON value in `text` (fio's --output file), not yet checked as
    fio's layout. fio may put notes ("fio: ...") before the JSON; the
    document starts at the first "{" then."""
    start = text.find("{") if text.lstrip().startswith("fio") else 0
    try:
        return json.loads(text[max(start, 0) :])
    except RecursionError:
        raise FioJsonError(f"{file}: not fio JSON output: nested too deeply to read") from None
    except ValueError as exc:
        raise FioJsonError(
            f"{file}: not fio JSON output ({exc}); run fio with --output-format=json+ --output=FILE"
        ) from None


def parse_text(text: str, file: str) -> dict[str, Any]:
    """The document in `text` (`decode`), checked by `check_document`."""
    return check_document(decode(text, file), file)


def load_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The fio JSON document in file `path`, read up to `FILE_MAX` bytes."""
    if not isinstance(path, str | os.PathLike):
        raise FioJsonError(f"{path!r}: a run file is a path")
    path = os.fspath(path)
    try:
        # By stat first: open(2) on a FIFO blocks until a writer comes
        # (fs/pipe.c fifo_open), and calibrate would hang on it.
        mode = os.stat(path).st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket"
            raise FioJsonError(f"{path}: is {kind}, not a run file; copy it to a file")
        with open(path, "rb") as f:
            raw = f.read(FILE_MAX + 1)
        if len(raw) > FILE_MAX:
            raise FioJsonError(f"{path}: longer than {FILE_MAX >> 20} MiB: not one fio JSON output")
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise FioJsonError(f"{path}: cannot read: {reason}") from None
    return parse_text(text, path)


def read(doc: dict[str, Any], file: str = "<fio json>") -> FioRun:
    """A parsed document as a FioRun: every job's name checked (its
    figures are checked when read)."""
    doc = check_document(doc, file)
    section = doc.get("flashpath")
    return FioRun(
        file,
        str(doc["fio version"]),
        list(jobs(doc, file)),
        section if isinstance(section, dict) else None,
        doc,
    )


def load(path: str | os.PathLike[str]) -> FioRun:
    """The fio JSON output in file `path` as a FioRun."""
    return read(load_document(path), os.fspath(path))


def new_name(old: str, ddir: str) -> str:
    """An old column name (`clat_ns.p99`, `total_ios`) on a `ddir` row as
    the namespace's (`read.clat.p99`, `read.ios`); a name already in the
    namespace is returned as it is."""
    if old in OLD_NAMES:
        return f"{ddir}.{OLD_NAMES[old]}"
    kind, _, rest = old.partition("_ns.")
    if kind in LATENCIES and rest.startswith("p"):
        return f"{ddir}.{kind}.{rest}"
    return old


def aggregate(run: FioRun, ddir: str, extractor: str) -> float:
    """An extractor of `EXTRACTORS` (`bw_MBps`, `lat_mean_us`, ...) over
    the jobs' direction `ddir` that did I/O; 0 when none did. A job whose
    direction lacks the figure is a FioJsonError naming it."""
    metric, how, divisor = EXTRACTORS[extractor]
    pairs = [(j, d) for j in run.jobs if (d := j.direction(ddir)) is not None]
    if not pairs:
        return 0.0
    dirs = [d for _, d in pairs]
    values = []
    for job, d in pairs:
        got = d.metrics().get(f"{ddir}.{metric}")
        if got is None:
            raise FioJsonError(
                f"{run.file}: job {job.name!r}: {ddir} has no {metric} for {extractor}"
            )
        values.append(got)
    if how == "sum":
        v = sum(values)
    elif how == "per_job":
        v = sum(values) / len(values)
    elif how == "weighted":
        v = sum(x * d.ios for x, d in zip(values, dirs, strict=True)) / sum(d.ios for d in dirs)
    elif how == "min":
        v = min(values)
    else:
        v = max(values)
    return v / divisor
