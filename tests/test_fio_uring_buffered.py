"""io_uring on buffered I/O (direct=0) against the real fio 3.33 and the
real kernel.

flashpath models it as Linux runs it on a block device (docs/model.md,
"io_uring on buffered I/O"): reads are tried inline and a miss is finished
by task_work after the page-unlock callback, never by an io-wq worker;
writes are punted to an io-wq worker (blkdev_write_iter refuses
IOCB_NOWAIT). The kernel's threads show it: an io-wq worker is a thread
of fio's process named ``iou-wrk-<tid>``, which a block device's buffered
writes start and its buffered reads do not. That check needs a block
device: a loop device over a small /dev/shm file (root and the loop
driver; skipped without them).

Counts and sizes are compared exactly with the real fio; times are not
(a loaded 2-core machine, and tmpfs or loop are not the simulated disk).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import cli

FIO = shutil.which("fio")
LOSETUP = shutil.which("losetup")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")

MIXED = """[j]
filename={file}
ioengine=io_uring
direct=0
rw=randrw
bs=4k
size=256k
"""


def run_ours(job: Path) -> dict:  # type: ignore[type-arg]
    r = cli("run", job.name, "--device", "nullblk", "--output-format", "json", cwd=job.parent)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def test_flashpath_punts_exactly_the_writes_of_a_mixed_job(tmp_path: Path) -> None:
    job = tmp_path / "mixed.fio"
    job.write_text(MIXED.format(file="/dev/nullb0"))
    doc = run_ours(job)
    j = doc["jobs"][0]
    u = doc["flashpath"]["io_uring_buffered"]
    assert j["read"]["total_ios"] + j["write"]["total_ios"] == 64
    assert u["iowq_punts"] == j["write"]["total_ios"]
    assert u["inline"] + u["async_read_retries"] == j["read"]["total_ios"]
    assert u["iowq_cpu_ns"] > 0


@need_fio
def test_counts_and_sizes_match_the_real_fio(tmp_path: Path) -> None:
    """The same job (a 256 KiB file, 4 KiB random reads and writes) moves
    the same I/Os: 64 in all, 256 KiB, split between reads and writes by
    fio's rwmix draw."""
    assert FIO is not None
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as tmp:
        job = Path(tmp) / "mixed.fio"
        job.write_text(MIXED.format(file=f"{tmp}/data"))
        r = subprocess.run(
            [FIO, "--output-format=json", job.name],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert r.returncode == 0, r.stderr
    real = json.loads(r.stdout[r.stdout.index("{") :])["jobs"][0]
    ours_job = tmp_path / "mixed.fio"
    ours_job.write_text(MIXED.format(file="/dev/nullb0"))
    ours = run_ours(ours_job)["jobs"][0]
    total = sum(real[d]["total_ios"] for d in ("read", "write"))
    assert total == sum(ours[d]["total_ios"] for d in ("read", "write")) == 64
    assert sum(real[d]["io_bytes"] for d in ("read", "write")) == 256 * 1024
    assert sum(ours[d]["io_bytes"] for d in ("read", "write")) == 256 * 1024


@pytest.fixture
def loop_device() -> Iterator[str]:
    """A loop device over a 4 MiB /dev/shm file (a block device, whose
    file ops are def_blk_fops as the simulated disk's)."""
    if LOSETUP is None or os.geteuid() != 0:
        pytest.skip("needs root and losetup for a loop device")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
        img = Path(tmp) / "loop.img"
        with img.open("wb") as f:
            f.truncate(4 << 20)
        r = subprocess.run([LOSETUP, "-f", "--show", str(img)], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"no loop device here: {r.stderr.strip()}")
        dev = r.stdout.strip()
        try:
            yield dev
        finally:
            subprocess.run([LOSETUP, "-d", dev], capture_output=True)


def io_wq_threads_seen(job: str, cwd: Path) -> tuple[bool, str]:
    """Run the real fio on `job` and watch its threads (every 5 ms) for an
    io-wq worker (comm ``iou-wrk-<tid>``, io_uring/io-wq.c
    create_io_thread). Returns whether one was seen, and fio's stderr."""
    assert FIO is not None
    # thread=1: the job runs in fio's own process, whose tasks we read.
    p = subprocess.Popen(
        [FIO, "--output-format=json", "--thread", job],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = False
    deadline = time.monotonic() + 60
    while p.poll() is None and time.monotonic() < deadline:
        try:
            for task in Path(f"/proc/{p.pid}/task").iterdir():
                comm = (task / "comm").read_text().strip()
                seen = seen or comm.startswith("iou-wrk")
        except OSError:
            pass  # a thread left, or fio exited, while we read
        time.sleep(0.005)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    return seen, err


@need_fio
def test_the_kernel_punts_buffered_writes_to_io_wq_and_not_reads(
    loop_device: str, tmp_path: Path
) -> None:
    # 2,000 writes of 4 KiB a second for a second: 8 MiB into the loop
    # device's page cache (an idle io-wq worker lives 5 s, io-wq.c
    # WORKER_IDLE_TIMEOUT, so the watcher cannot miss it).
    common = f"[j]\nfilename={loop_device}\nioengine=io_uring\ndirect=0\nbs=4k\nsize=4m\n"
    (tmp_path / "w.fio").write_text(
        common + "rw=randwrite\ntime_based=1\nruntime=1\nrate_iops=2000\n"
    )
    seen, err = io_wq_threads_seen("w.fio", tmp_path)
    assert seen, "no io-wq worker for buffered writes to a block device: " + err
    # Reads, the first ones from an emptied cache (invalidate=1: BLKFLSBUF):
    # misses wait for the page-unlock callback, in fio's own thread.
    (tmp_path / "r.fio").write_text(common + "rw=randread\ninvalidate=1\ntime_based=1\nruntime=1\n")
    seen, err = io_wq_threads_seen("r.fio", tmp_path)
    assert not seen, "an io-wq worker for buffered reads of a block device: " + err
