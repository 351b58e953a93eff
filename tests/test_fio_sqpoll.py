"""io_uring's sqthread_poll against the real fio 3.33 and the real kernel.

flashpath models the ring's SQ thread (docs/model.md, "io_uring's
sqthread_poll"): it issues the I/Os on its own CPU (sqthread_poll_cpu's,
else one the scheduler picks) and polls there for the run; fio's commit
only writes the SQ ring's tail, and fio 3.33's SQPOLL commit never stamps
an issue time or a submit bucket. The real fio shows the statistics, the
real kernel the thread (``iou-sqp-<pid>``, io_uring/sqpoll.c
create_io_thread) and its CPU binding.

Counts, sizes and which statistics exist are compared exactly; times are
not (a loaded 2-core machine, and a tmpfs file is not the simulated disk):
only orders that hold whatever the clock (a clat from the clock's origin is
at least the I/O's total latency).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import cli

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")

JOB = """[j]
filename={file}
ioengine={engine}
direct=1
rw=randread
bs=4k
size=1m
iodepth=8
sqthread_poll=1
{extra}
"""


def run_ours(job: Path) -> dict:  # type: ignore[type-arg]
    r = cli("run", job.name, "--device", "nullblk", "--output-format", "json", cwd=job.parent)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def run_real(folder: Path, name: str) -> dict:  # type: ignore[type-arg]
    assert FIO is not None
    r = subprocess.run(
        [FIO, "--output-format=json", name],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout[r.stdout.index("{") :])  # type: ignore[no-any-return]


@need_fio
def test_statistics_are_fio_3_33s(tmp_path: Path) -> None:
    """256 reads of 4 KiB at iodepth 8: the same I/Os, no slat, no submit
    bucket, a clat at least the total latency (fio 3.33's SQPOLL commit
    returns before fio_ioring_queued: the issue time stays the io_u's
    zero), and the depth reached."""
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as t:
        folder = Path(t)
        (folder / "job.fio").write_text(JOB.format(file=f"{t}/data", engine="io_uring", extra=""))
        real_doc = run_real(folder, "job.fio")
    ours_job = tmp_path / "job.fio"
    ours_job.write_text(JOB.format(file="/dev/nullb0", engine="io_uring", extra=""))
    ours_doc = run_ours(ours_job)
    real, ours = real_doc["jobs"][0], ours_doc["jobs"][0]
    for j in (real, ours):
        r = j["read"]
        assert j["error"] == 0
        assert r["total_ios"] == 256
        assert r["io_bytes"] == 1 << 20
        assert r["slat_ns"]["N"] == 0
        assert all(v == 0 for v in j["iodepth_submit"].values()), j["iodepth_submit"]
        assert r["clat_ns"]["N"] == r["lat_ns"]["N"] == 256
        assert r["clat_ns"]["min"] >= r["lat_ns"]["min"]
        assert j["iodepth_level"]["8"] > 50.0, j["iodepth_level"]
    # flashpath's thread made no system call and never slept; its SQ
    # thread issued every I/O.
    assert ours["sys_cpu"] == 0
    assert ours["ctx"] == 0
    sq = ours_doc["flashpath"]["io_uring_sqpoll"]
    assert [s["sqes"] for s in sq] == [256]


def sq_threads(pid: int) -> list[tuple[str, str]]:
    """Each ``iou-sqp-*`` thread of `pid`: its thread id and its
    Cpus_allowed_list."""
    found = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            if (task / "comm").read_text().startswith("iou-sqp"):
                for line in (task / "status").read_text().splitlines():
                    if line.startswith("Cpus_allowed_list:"):
                        found.append((task.name, line.split(":", 1)[1].strip()))
    except OSError:
        pass  # a thread left, or fio exited, while we read
    return found


@need_fio
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs a second CPU to bind to")
def test_the_kernel_binds_the_sq_thread_to_sqthread_poll_cpu() -> None:
    """With sqthread_poll_cpu=1 the kernel creates the ring's SQ thread as
    a thread of fio's process (create_io_thread, named iou-sqp-<pid>)
    bound to CPU 1 (IORING_SETUP_SQ_AFF: set_cpus_allowed_ptr), as
    flashpath places it. A one-second time-based read of a 1 MiB tmpfs
    file, watched every 5 ms. The thread binds itself when it starts
    (io_uring/sqpoll.c io_sq_thread: set_task_comm, then
    set_cpus_allowed_ptr), so a watcher can catch it named but still with
    the mask it inherited from fio for an instant (seen once in CI; a
    second SQ thread can start while the first runs): each thread, from its
    first look at CPU 1 on, must stay there."""
    assert FIO is not None
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as t:
        folder = Path(t)
        extra = "sqthread_poll_cpu=1\ntime_based=1\nruntime=1\nthread=1"
        (folder / "job.fio").write_text(
            JOB.format(file=f"{t}/data", engine="io_uring", extra=extra)
        )
        p = subprocess.Popen(
            [FIO, "--output-format=json", "job.fio"],
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        seen: dict[str, list[str]] = {}
        deadline = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < deadline:
            for tid, mask in sq_threads(p.pid):
                seen.setdefault(tid, []).append(mask)
            time.sleep(0.005)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    inherited = next(
        line.split(":", 1)[1].strip()
        for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith("Cpus_allowed_list:")
    )
    assert seen, "no SQ thread seen"
    for tid, masks in seen.items():
        # Each SQ thread, from its first look at CPU 1 on, stays there;
        # before that it can only show the mask it inherited.
        first = masks.index("1") if "1" in masks else len(masks)
        assert set(masks[first:]) <= {"1"}, (tid, masks)
        assert set(masks[:first]) <= {inherited}, (tid, inherited, masks)
    assert any("1" in masks for masks in seen.values()), seen


@need_fio
def test_sqthread_poll_under_another_engine_is_refused_as_fio_refuses_it(
    tmp_path: Path,
) -> None:
    """sqthread_poll is an io_uring option: fio 3.33 drops a libaio job
    that sets it ("Bad option <sqthread_poll=1>", exit 1 at
    --parse-only); flashpath refuses it with a message naming the file and
    the option. Under io_uring both accept it."""
    assert FIO is not None
    for engine, accepted in (("libaio", False), ("io_uring", True)):
        job = tmp_path / f"{engine}.fio"
        job.write_text(JOB.format(file="/dev/nullb0", engine=engine, extra=""))
        real = subprocess.run(
            [FIO, "--parse-only", job.name], cwd=tmp_path, capture_output=True, text=True
        )
        ours = cli("run", "--parse-only", job.name, "--device", "nullblk", cwd=tmp_path)
        assert (real.returncode == 0) == accepted, real.stderr
        assert (ours.returncode == 0) == accepted, ours.stderr
        if not accepted:
            assert "Bad option <sqthread_poll=1>" in real.stderr
            assert job.name in ours.stderr and "sqthread_poll" in ours.stderr, ours.stderr
            assert "Traceback" not in ours.stderr
