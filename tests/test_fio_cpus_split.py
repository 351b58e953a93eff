"""cpus_allowed_policy=split numbers threads over the whole run.

flashpath gives each thread of a split job the (thread number - 1) mod
count-th CPU of its cpus_allowed set, the thread number counted over every
job of the run (backend.c thread_main: fio_cpus_split(&o->cpumask,
td->thread_number - 1)); crates/flashpath/tests/wake_placement.rs holds the
simulated threads to it. Here the real fio 3.33 is held to the same rule:
its exec engine runs a program in each job thread, which reads the
affinity it inherited from /proc/self/status.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

FIO = shutil.which("fio")


@pytest.mark.skipif(FIO is None, reason="the real fio is not installed")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two CPUs")
def test_the_real_fio_splits_by_the_thread_number_in_the_run(tmp_path: Path) -> None:
    assert FIO is not None
    out = tmp_path / "cpus.txt"
    probe = tmp_path / "probe.sh"
    probe.write_text(
        f'#!/bin/sh\necho "$1 $(grep Cpus_allowed_list /proc/self/status | cut -f2)" >> {out}\n'
    )
    probe.chmod(0o755)
    (tmp_path / "job.fio").write_text(
        "[global]\nioengine=exec\n"
        f"program={probe}\narguments=%n\n"
        "cpus_allowed=0-1\ncpus_allowed_policy=split\ntime_based=1\nruntime=1\n"
        "[a]\n[b]\n[c]\nnumjobs=3\n"
    )
    r = subprocess.run([FIO, "job.fio"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    seen: dict[str, list[str]] = {}
    for line in out.read_text().splitlines():
        name, cpus = line.split()
        seen.setdefault(name, []).append(cpus)
    # Threads 1 to 5 over {0, 1}: a is 1 (CPU 0), b is 2 (CPU 1), c's three
    # clones 3, 4, 5 (CPUs 0, 1, 0). Numbered per job, b would get CPU 0.
    assert seen["a"] == ["0"], seen
    assert seen["b"] == ["1"], seen
    assert sorted(seen["c"]) == ["0", "0", "1"], seen
