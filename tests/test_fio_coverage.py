"""How many of the fixture job files the real fio 3.33 accepts (with a
local engine) flashpath runs: held to a floor so that a change that
refuses more of them fails here. tests/fio_coverage.py prints the table,
by refusal cause."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from fio_coverage import FAILS_AS_FIO, FIO_FIXTURES, core_verdict, survey

# flashpath accepted 46 of these 119 jobs before issue 25's work, 67
# after its first part and 78 with the verify family and flow control
# (python3 tests/fio_coverage.py); 76 on this branch's base, 78 with fio's
# cmdprio-percentage.fio and cmdprio-bssplit.fio (issue 28's priorities).
# 93 counting the jobs that fail as the real fio fails (FAILS_AS_FIO: 14)
# and t0038 (fio 3.33 skips an iolog's trims); 98 with fio's zoned examples
# (issue 29: zbd-rand-write.fio, zbd-seq-read.fio,
# zbd-rand-write-trim-gc.fio, zbd-rand-write-zone-reset-gc.fio with
# zonemode=zbd, disk-zone-profile.fio with zonemode=strided); 100 with
# the falloc and ftruncate engines (falloc.fio, ftruncate.fio), 101 with
# steady state (steadystate.fio), 102 with fill_device (surface-scan.fio),
# 103 with latency_target (latency-profile.fio).
FLOOR = 107


@pytest.mark.skipif(shutil.which("fio") is None, reason="the real fio is not installed")
def test_flashpath_runs_at_least_the_floor_of_what_fio_accepts() -> None:
    verdicts = survey(core_verdict)
    counted = [v for v in verdicts if v.counted]
    ok = [v for v in counted if v.matches_fio]
    # The count is over real job files: fio accepts most of the fixtures.
    assert len(counted) >= 100, len(counted)
    assert len(ok) >= FLOOR, "\n".join(
        f"{v.job.name}: {v.cause}" for v in counted if not v.matches_fio
    )
    # Every refusal names its cause.
    assert all(v.cause for v in counted if not v.ok)


# The real fio 3.33's run of a FAILS_AS_FIO job, in a copy of its folder on
# tmpfs: each fails before it moves a byte, except the polled job, whose
# 128 MiB file on the machine's disk is swapped for a 1 MiB one on tmpfs
# (what fails is the queue's missing poll support, not the file's size);
# numa.fio's device is swapped for a tmpfs file too.
@pytest.mark.skipif(shutil.which("fio") is None, reason="the real fio is not installed")
@pytest.mark.parametrize("rel", sorted(FAILS_AS_FIO))
def test_fio_fails_these_jobs_with_its_message(rel: str) -> None:
    if rel.startswith("upstream-tests/t0009") and os.cpu_count() != 2:
        pytest.skip("fio checks cpus_allowed against this machine's CPUs; the reference is 2")
    if rel == "examples/numa.fio" and Path("/sys/devices/system/node/node1").exists():
        pytest.skip("fio checks NUMA nodes against this machine's; the reference has one")
    job = FIO_FIXTURES / rel
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as tmp:
        folder = Path(tmp) / "jobs"
        shutil.copytree(job.parent, folder)
        if rel in ("real-runs/iouring-hipri/job.fio", "examples/numa.fio"):
            # Never the machine's disk (numa.fio names /dev/sdb1).
            text = (folder / job.name).read_text()
            text = re.sub(r"(?m)^filename=.*$", f"filename={tmp}/data.dat", text)
            text = re.sub(r"(?m)^size=.*$", "size=1m", text)
            text = re.sub(r"(?m)^runtime=.*$", "runtime=1", text)
            (folder / job.name).write_text(text)
        r = subprocess.run(
            ["fio", "--output-format=json", job.name],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert r.returncode != 0, r.stdout[-2000:]
    assert FAILS_AS_FIO[rel] in r.stderr, r.stderr[-2000:]


def test_flashpath_refuses_these_jobs_with_fios_message() -> None:
    """flashpath's refusal of each FAILS_AS_FIO job carries fio's line (its
    own check, not the real fio: this holds without fio installed)."""
    for rel, want in sorted(FAILS_AS_FIO.items()):
        why = core_verdict(FIO_FIXTURES / rel)
        assert why is not None and want in why, (rel, why)
