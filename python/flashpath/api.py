"""The Python API: run a fio job on a profile and look at the result."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from flashpath import _core


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

    def breakdown(self) -> dict[str, float]:
        """Mean ns per I/O spent in each layer of the path."""
        return dict(self.fio_json()["flashpath"]["breakdown_ns_per_io"])

    def to_pandas(self) -> Any:
        """One row per job and direction that did I/O."""
        import pandas as pd

        rows = []
        for job in self.fio_json()["jobs"]:
            for ddir in ("read", "write", "trim"):
                d = job[ddir]
                if d["total_ios"] == 0:
                    continue
                rows.append(
                    {
                        "job": job["jobname"],
                        "groupid": job["groupid"],
                        "ddir": ddir,
                        "io_bytes": d["io_bytes"],
                        "total_ios": d["total_ios"],
                        "runtime_ms": d["runtime"],
                        "bw_KiBps": d["bw"],
                        "iops": d["iops"],
                        "clat_mean_ns": d["clat_ns"]["mean"],
                        "clat_p99_ns": d["clat_ns"].get("percentile", {}).get("99.000000"),
                        "lat_mean_ns": d["lat_ns"]["mean"],
                    }
                )
        return pd.DataFrame(rows)


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
    if isinstance(overrides, dict):
        overrides = [f"{k}={v}" for k, v in overrides.items()]
    job_str = os.fspath(job)
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
