"""A clone whose offset lies past the end of its raw device, as fio 3.33
handles it (filesetup.c setup_files): without size=, fio sizes the clone's
I/O as 0 and a `->file_offset` past `->real_file_size` fails the clone at
setup ("<job>: you need to specify valid offset="); the job's other clones
run. The failed clone does no I/O, is left out of the normal report,
stays in the JSON with zeros and error 0, and counts in fio's exit status.

examples/cross-stripe-verify.fio is such a job: 30 clones 124 GiB apart
(offset_increment=124g) on a device it assumes is about 3.7 TiB. On the
nullblk profile's 250 GB device the first two clones run and the others fail.

The numbers below are what the real fio 3.33 gave for the scaled job
(`SCALED`, offset_increment=124m, numjobs=10) on a 1 GiB loop device
(/dev/shm backing file; `test_the_real_fio_fails_the_same_clones` runs it
again where a loop device can be made, and CI, which has none, holds
flashpath to them): nine clones wrote and read back 32 blocks of 16 KiB each, the
tenth (120k + 9 * 124 MiB > 1 GiB) failed with the message, exit status 1;
with numjobs=30 and group_reporting: one report with jobs=30, 288 writes,
exit status 21.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, cli
from flashpath import fiojson

SCALED = """[global]
bs=16k
direct=1
rw=write:112k
verify=crc32c
filename=/dev/nvme0n1
verify_backlog=1
offset_increment=124m
io_size=256k
offset=120k
verify_dump=1
loops=2

[write-verify]
numjobs={n}
{extra}"""

GiB = "device.capacity=1GiB"


def run(folder: Path, n: int, extra: str, fmt: str) -> tuple[int, str, str]:
    (folder / "job.fio").write_text(SCALED.format(n=n, extra=extra))
    r = cli(
        "run", "job.fio", "--device", "nullblk", "--set", GiB, "--output-format", fmt, cwd=folder
    )
    return r.returncode, r.stdout, r.stderr


def test_clones_past_the_device_fail_at_setup_and_the_rest_run(tmp_path: Path) -> None:
    rc, out, err = run(tmp_path, 10, "", "json")
    # Clone i starts at 120k + i * 124 MiB: clone 9 is past 1 GiB.
    starts = [120 * 1024 + i * 124 * 2**20 for i in range(10)]
    past = [s > 2**30 for s in starts]
    assert past == [False] * 9 + [True]
    assert rc == 1, err
    assert err.count("write-verify: you need to specify valid offset=") == 1
    doc = json.loads(out)
    rows = [
        (j["error"], j["write"]["total_ios"], j["read"]["total_ios"], j["write"]["io_bytes"])
        for j in doc["jobs"]
    ]
    assert len(rows) == 10
    # io_size counts the bytes written: 256 KiB / 16 KiB = 16 writes per
    # loop (each followed by a 112 KiB hole), 2 loops, each read back.
    assert sorted(rows) == [(0, 0, 0, 0)] + [(0, 32, 32, 32 * 16384)] * 9


def test_failed_clone_is_left_out_of_the_normal_report(tmp_path: Path) -> None:
    rc, out, _ = run(tmp_path, 10, "", "normal")
    assert rc == 1
    assert len(re.findall(r"^write-verify: \(groupid=0, jobs=1\)", out, re.M)) == 9
    # No `fio: pid=N, err=` line: the clone did not end on an I/O error.
    assert "fio: pid=" not in out


def test_group_report_counts_every_clone(tmp_path: Path) -> None:
    rc, out, err = run(tmp_path, 30, "group_reporting\n", "normal")
    assert rc == 21, err
    assert err.count("you need to specify valid offset=") == 21
    assert re.search(r"^write-verify: \(groupid=0, jobs=30\): err= 0", out, re.M)
    assert re.search(r"issued rwts: total=288,288,0,0", out)


def test_cross_stripe_verify_is_accepted_on_the_default_device() -> None:
    job = REPO / "tests" / "fixtures" / "fio" / "examples" / "cross-stripe-verify.fio"
    r = cli("run", "--parse-only", job.name, "--device", "nullblk", cwd=job.parent)
    assert r.returncode == 0, r.stderr


def loop_device(tmp_path: Path) -> str | None:
    """A 1 GiB loop device over a sparse file, or None where this machine
    cannot make one (not root, no loop driver: CI)."""
    if shutil.which("losetup") is None or os.geteuid() != 0:
        return None
    backing = Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp_path
    img = backing / f"flashpath-test-{os.getpid()}.img"
    with open(img, "wb") as f:
        f.truncate(2**30)
    r = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True)
    img.unlink()  # the loop device keeps the file open
    return r.stdout.strip() if r.returncode == 0 else None


@pytest.mark.skipif(shutil.which("fio") is None, reason="the real fio is not installed")
def test_the_real_fio_fails_the_same_clones(tmp_path: Path) -> None:
    dev = loop_device(tmp_path)
    if dev is None:
        pytest.skip("no loop device here (needs root and the loop driver)")
    try:
        (tmp_path / "job.fio").write_text(
            SCALED.format(n=10, extra="").replace("/dev/nvme0n1", dev)
        )
        r = subprocess.run(
            ["fio", "--output-format=json", "job.fio"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True)
    assert r.returncode == 1, r.stderr
    assert r.stderr.count("write-verify: you need to specify valid offset=") == 1
    doc = fiojson.decode(r.stdout, "fio")
    rows = sorted(
        (j["error"], j["write"]["total_ios"], j["read"]["total_ios"], j["write"]["io_bytes"])
        for j in doc["jobs"]
    )
    assert rows == [(0, 0, 0, 0)] + [(0, 32, 32, 32 * 16384)] * 9
