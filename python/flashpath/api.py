"""The Python API: run a fio job on a profile and look at the result."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from flashpath import _core, fiojson
from flashpath._core import FlashpathError


@dataclass
class RunResult:
    """One simulation's result: fio's json+ document plus flashpath's own
    section (per-layer breakdown, model counters)."""

    text: str
    json_text: str
    events: int
    completed_ios: int
    notes: list[str] = field(default_factory=list)
    # Logs the job asked for (write_lat_log, write_iolog): name -> text.
    # The API does not write them; `flashpath run` does, as fio would.
    logs: dict[str, str] = field(default_factory=dict)

    def fio_json(self) -> dict[str, Any]:
        """The result as fio's json+ output, parsed."""
        return json.loads(self.json_text)

    def run(self) -> fiojson.FioRun:
        """The result read by the fio JSON reader (docs/fio-json.md): its
        jobs, their directions and figures, the "flashpath" section."""
        return fiojson.read(self.fio_json(), "<run>")

    def metric(self, name: str, job: int = 0) -> float:
        """One figure of job `job` by its name in the namespace
        (docs/fio-json.md: `read.iops`, `read.clat.p99`, `write.lat.mean`;
        the sweep table's old names with the direction in front, such as
        `read.clat_ns.p99`, are read too). A figure the run does not have
        (a direction that did no I/O, a percentile the job did not ask
        for) is a KeyError naming it."""
        ddir, _, rest = name.partition(".")
        key = fiojson.new_name(rest, ddir)
        if key == rest:
            key = name
        metrics = self.run().jobs[job].metrics()
        if key not in metrics:
            dirs = sorted({m.partition(".")[0] for m in metrics}, key=fiojson.ALL_DIRECTIONS.index)
            raise KeyError(
                f"{name}: not a figure of job {job} (its directions with I/O: "
                f"{', '.join(dirs) or 'none'}; docs/fio-json.md has the names)"
            )
        return metrics[key]

    def breakdown(self) -> dict[str, float]:
        """Mean ns per I/O spent in each layer of the path."""
        return dict(self.fio_json()["flashpath"]["breakdown_ns_per_io"])

    def to_pandas(self) -> Any:
        """One row per job and direction that did I/O."""
        import pandas as pd

        rows = []
        for job in self.run().jobs:
            for ddir in fiojson.DIRECTIONS:
                d = job.direction(ddir)
                if d is None:
                    continue
                m = d.metrics()
                # fio's counts as fio wrote them (integers: the frame's
                # int64 columns); the checked figures from the reader.
                rows.append(
                    {
                        "job": job.name,
                        "groupid": job.groupid,
                        "ddir": ddir,
                        "io_bytes": job.raw[ddir]["io_bytes"],
                        "total_ios": job.raw[ddir]["total_ios"],
                        "runtime_ms": job.raw[ddir]["runtime"],
                        "bw_KiBps": job.raw[ddir]["bw"],
                        "iops": m[f"{ddir}.iops"],
                        "clat_mean_ns": m[f"{ddir}.clat.mean"],
                        "clat_p99_ns": m.get(f"{ddir}.clat.p99"),
                        "lat_mean_ns": m[f"{ddir}.lat.mean"],
                    }
                )
        return pd.DataFrame(rows)

    def summary(self) -> Any:
        """Every fio figure of every job and direction, one row each (with
        the percentiles as `clat_ns.p99` and so on, fio's per-job figures
        as `job.*` and the "flashpath" section flattened as `fp.*`): the
        columns of a sweep's table (docs/sweeps.md) without the axes."""
        import pandas as pd

        from flashpath.sweep_table import rows_of_run

        return pd.DataFrame(rows_of_run(self.fio_json()))

    def histogram(self) -> Any:
        """fio's json+ latency histograms: one row per job, direction,
        latency (`clat` always; `lat` and `slat` when the job logs them)
        and bin, with the bin's latency in ns (fio's bin value) and its
        count of I/Os."""
        import pandas as pd

        rows = []
        for index, job in enumerate(self.run().jobs):
            for ddir in fiojson.DIRECTIONS:
                d = job.direction(ddir, required=False)
                for kind in ("clat", "lat", "slat"):
                    lat = getattr(d, kind) if d is not None else None
                    for ns, count in sorted(lat.bins.items() if lat is not None else ()):
                        rows.append(
                            {
                                "job_index": index,
                                "job": job.name,
                                "ddir": ddir,
                                "latency": kind,
                                "ns": ns,
                                "count": count,
                            }
                        )
        columns = ["job_index", "job", "ddir", "latency", "ns", "count"]
        return pd.DataFrame(rows, columns=columns)

    def log_frames(self) -> dict[str, Any]:
        """The logs the job asked for, as DataFrames by file name: fio's
        latency, bandwidth and IOPS logs (`time_ms, value, ddir, bs[,
        offset], prio`, as fio 3.33 writes them with and without
        log_offset) and iologs (`write_iolog`: the lines after the header,
        as `time` (version 3), `file`, `action`, `offset`, `length`)."""
        return {name: _log_frame(text) for name, text in self.logs.items()}


_SAMPLE_COLUMNS = {
    5: ["time_ms", "value", "ddir", "bs", "prio"],
    6: ["time_ms", "value", "ddir", "bs", "offset", "prio"],
}


def _log_frame(text: str) -> Any:
    """One log's text as a DataFrame (see RunResult.log_frames)."""
    import pandas as pd

    lines = text.splitlines()
    if lines and lines[0].startswith("fio version"):
        version3 = lines[0].startswith("fio version 3")
        rows = []
        for line in lines[1:]:
            parts = line.split()
            if version3:
                time_, parts = int(parts[0]), parts[1:]
            else:
                time_ = None
            offset = int(parts[2]) if len(parts) > 2 else None
            length = int(parts[3]) if len(parts) > 3 else None
            rows.append(
                {
                    "time": time_,
                    "file": parts[0],
                    "action": parts[1],
                    "offset": offset,
                    "length": length,
                }
            )
        frame = pd.DataFrame(rows, columns=["time", "file", "action", "offset", "length"])
        return frame if version3 else frame.drop(columns="time")
    samples = [[int(v) for v in line.split(",")] for line in lines if line.strip()]
    width = len(samples[0]) if samples else 5
    columns = _SAMPLE_COLUMNS.get(width) or [f"field{i}" for i in range(width)]
    return pd.DataFrame(samples, columns=columns)


class ArgumentError(FlashpathError):
    """A Python call with an argument of the wrong type or out of range:
    the message names the argument, as the command line names its option."""


# Seeds are 64-bit, as the core's (and `--seed` on the command line).
SEED_MAX = 2**64 - 1


def _path_or_text(value: Any, what: str) -> str:
    if isinstance(value, bytes | bytearray):
        raise ArgumentError(
            f"{what}: a path or the text itself as str, not bytes (decode it first: "
            f"{what}.decode())"
        )
    if not isinstance(value, str | os.PathLike):
        raise ArgumentError(f"{what}: a path or text, not {type(value).__name__}")
    text = os.fspath(value)
    if not isinstance(text, str):
        raise ArgumentError(f"{what}: a path as str, not {type(text).__name__}")
    if not text:
        raise ArgumentError(f"{what}: an empty path")
    return text


def check_run_arguments(
    job: Any, device: Any, overrides: Any, seed: Any, output_format: Any
) -> tuple[str, list[str]]:
    """The checks `flashpath run` gets from its command line, for `run`:
    the job (path or text) and the overrides as the core takes them."""
    job_str = _path_or_text(job, "job")
    if not isinstance(device, str) or not device:
        raise ArgumentError(f"device: a profile name or .toml path, not {device!r}"[:200])
    if isinstance(overrides, dict):
        overrides = [f"{k}={v}" for k, v in overrides.items()]
    # Listed once: a generator checked by all() and then listed again would
    # reach the core empty, its overrides silently dropped.
    if isinstance(overrides, str | bytes) or not isinstance(overrides, Iterable):
        overrides = [None]
    overrides = list(overrides)
    if not all(isinstance(o, str) for o in overrides):
        raise ArgumentError(
            "overrides: a list of 'key=value' strings or a mapping of keys to values"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise ArgumentError(f"seed: an integer from 0 to 2^64 - 1, not {seed!r}"[:200])
    if not isinstance(output_format, str):
        raise ArgumentError(f"output_format: text such as 'json', not {output_format!r}"[:200])
    return job_str, list(overrides)


def run(
    job: str | os.PathLike[str],
    device: str,
    overrides: Sequence[str] | dict[str, Any] = (),
    seed: int = 0,
    output_format: str = "normal",
) -> RunResult:
    """Run a fio job on a profile.

    ``job`` is a path to a job file, or the job text itself when it contains
    a newline. ``overrides`` are ``key=value`` strings or a mapping, as
    ``--set`` takes them.
    """
    job_str, overrides = check_run_arguments(job, device, overrides, seed, output_format)
    if "\n" in job_str:
        # Job text: messages name it `<job text>` and its line; relative
        # includes and iologs are looked for in the current directory.
        run_ = _core.run_job_text(
            job_str, "<job text>", os.getcwd(), device, list(overrides), seed, output_format
        )
    else:
        run_ = _core.run_job(job_str, device, list(overrides), seed, output_format)
    logs = {log.name: log.contents for log in run_.logs}
    return RunResult(run_.text, run_.json_text, run_.events, run_.completed_ios, run_.notes, logs)


def profiles() -> list[str]:
    """Names of the shipped profiles."""
    return list(_core.profiles())


def sweep(
    spec: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    jobs: int = 1,
    backend: str = "local",
    address: str | None = None,
    extend: bool = False,
    progress: bool = False,
) -> Any:
    """Run a sweep (docs/sweeps.md) and return its table as a pandas
    DataFrame: one row per point, job and direction.

    ``spec`` is a path to a spec file, or the spec's TOML text itself when
    it contains a newline (relative paths in it are then read from the
    current directory). With ``out``, the table is also written there as
    Parquet, each finished point is kept in ``out``.parts/ and a rerun
    resumes; ``jobs`` worker processes, or ``backend="ray"`` (``address``
    of a cluster, or a local Ray instance). A bad spec raises
    ``FlashpathError`` naming the spec, its line and the key."""
    from pathlib import Path

    from flashpath.sweep_run import run_sweep
    from flashpath.sweep_spec import load_spec, parse_spec

    text = _path_or_text(spec, "spec")
    parsed = parse_spec(text, "<sweep spec>", Path.cwd()) if "\n" in text else load_spec(text)
    outcome = run_sweep(
        parsed,
        out,
        jobs=jobs,
        backend=backend,
        address=address,
        extend=extend,
        show_progress=progress,
    )
    return outcome.table.to_pandas()
