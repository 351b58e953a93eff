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

from fio_coverage import (
    FAILS_AS_FIO,
    FIO_FIXTURES,
    NOT_NVME_NS,
    SG_NOT_SCSI,
    core_verdict,
    survey,
)

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
# 103 with latency_target (latency-profile.fio), 104 with clones past a
# raw device's end failing at setup as fio fails them
# (cross-stripe-verify.fio); 107 with the sg
# examples (sg_verify.fio, sg_verify-fail.fio, sg_write_same_ndob.fio),
# which fail on the nullblk disk as fio fails on any block device that is
# not SCSI (READ CAPACITY). fio's libzbc examples stay refused there: on
# it libzbc's zbc_open fails, and this machine's fio has no libzbc to
# check fio's message with; 111 with io_uring on buffered I/O
# (t0018) and io_submit_mode=offload (t0010, fixed-rate-submission,
# poisson-rate-submission); 113 with io_uring's sqthread_poll
# (uring-cmd-ng.fio and uring-cmd-zoned.fio, which then fail on the
# nullblk disk as fio fails on a character device that is not an NVMe
# namespace: NVME_IOCTL_ID); 114 with serialize_overlap across the jobs
# of an offloaded run (t0013, rate-submit.c check_overlap); 116 with the
# e4defrag engine (examples/e4defrag.fio and e4defrag2.fio).
FLOOR = 116


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
        if FAILS_AS_FIO[rel] == SG_NOT_SCSI:
            # Never the machine's /dev/sdb (the jobs write it): a loop
            # device over a tmpfs file, a block device that is not SCSI.
            r = _fio_on_loop_device(folder, job.name, Path(tmp) / "disk.img")
            assert r.returncode != 0, r.stdout[-2000:]
            assert SG_NOT_SCSI in r.stderr, r.stderr[-2000:]
            return
        if FAILS_AS_FIO[rel] == NOT_NVME_NS:
            # A character device that is not an NVMe namespace, as nullb0
            # is: fio fails its NVME_IOCTL_ID at setup, before any I/O.
            text = (folder / job.name).read_text()
            (folder / job.name).write_text(re.sub(r"(?m)^filename=.*$", "filename=/dev/null", text))
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


def _fio_on_loop_device(folder: Path, name: str, image: Path) -> subprocess.CompletedProcess[str]:
    """The real fio's run of job `name` in `folder` with its filename= a
    loop device over a 1 MiB file `image` (skips where none can be made:
    losetup needs root and /dev/loop-control)."""
    image.write_bytes(bytes(1 << 20))
    if shutil.which("losetup") is None:
        pytest.skip("losetup is not installed")
    made = subprocess.run(
        ["losetup", "--find", "--show", str(image)], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"no loop device here: {made.stderr.strip()}")
    dev = made.stdout.strip()
    try:
        text = (folder / name).read_text()
        (folder / name).write_text(re.sub(r"(?m)^filename=.*$", f"filename={dev}", text))
        return subprocess.run(
            ["fio", "--output-format=json", name],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        subprocess.run(["losetup", "--detach", dev], capture_output=True)


def test_flashpath_refuses_these_jobs_with_fios_message() -> None:
    """flashpath's refusal of each FAILS_AS_FIO job carries fio's line (its
    own check, not the real fio: this holds without fio installed)."""
    for rel, want in sorted(FAILS_AS_FIO.items()):
        why = core_verdict(FIO_FIXTURES / rel)
        assert why is not None and want in why, (rel, why)
