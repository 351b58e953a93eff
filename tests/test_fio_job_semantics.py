"""fio 3.33's semantics for jobs flashpath used to refuse: a shared log
(per_job_logs=0), a null-engine file larger than the device, a second job
whose offset lies past the first job's file.

Each test asserts what fio's source says (without fio), then, where the
real fio is installed (CI has it), that fio does the same on the same job.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import cli

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")


def run_ours(job: Path) -> dict:  # type: ignore[type-arg]
    r = cli("run", job.name, "--device", "nullblk", "--output-format", "json", cwd=job.parent)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def run_fio(job: Path) -> dict:  # type: ignore[type-arg]
    assert FIO is not None
    r = subprocess.run(
        [FIO, "--output-format=json", job.name],
        cwd=job.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def ios(doc: dict, d: str) -> list[tuple[str, int, int]]:  # type: ignore[type-arg]
    return [(j["jobname"], j[d]["total_ios"], j[d]["io_bytes"]) for j in doc["jobs"]]


SHARED_LOG = """[global]
ioengine=null
filesize=64k
write_bw_log=test
per_job_logs=0
log_offset=1
[a]
[b]
"""


def logs_of(folder: Path) -> dict[str, int]:
    return {p.name: len(p.read_text().splitlines()) for p in folder.glob("*.log")}


def test_shared_log_is_one_file_both_jobs_append_to(tmp_path: Path) -> None:
    # init.c gen_log_name: no job number with per_job_logs=0; iolog.c
    # flush_log opens it with "a", so a file already there is kept.
    (tmp_path / "job.fio").write_text(SHARED_LOG)
    (tmp_path / "test_bw.log").write_text("earlier line\n")
    run_ours(tmp_path / "job.fio")
    assert logs_of(tmp_path) == {"test_bw.log": 1 + 2 * 16}
    lines = (tmp_path / "test_bw.log").read_text().splitlines()
    assert lines[0] == "earlier line"
    # log_offset=1: the offsets of both jobs, each 0..60k in its own file.
    offsets = [int(x.split(", ")[4]) for x in lines[1:]]
    assert sorted(offsets) == sorted(list(range(0, 65536, 4096)) * 2)


@need_fio
def test_shared_log_matches_the_real_fio(tmp_path: Path) -> None:
    ours, real = tmp_path / "ours", tmp_path / "real"
    for d in (ours, real):
        d.mkdir()
        (d / "job.fio").write_text(SHARED_LOG)
    run_ours(ours / "job.fio")
    run_fio(real / "job.fio")
    assert logs_of(ours) == logs_of(real)


BIG_NULL = """[global]
ioengine=null
filesize=1T
rw=randread
number_ios=200
[a]
[b]
offset=900g
size=200g
"""


def test_null_engine_file_larger_than_the_device_runs(tmp_path: Path) -> None:
    # engines/null.c does no I/O (FIO_DISKLESSIO): the device's size is
    # no limit; the nullblk profile's device is far smaller than 1 TiB.
    (tmp_path / "job.fio").write_text(BIG_NULL)
    doc = run_ours(tmp_path / "job.fio")
    assert ios(doc, "read") == [("a", 200, 200 * 4096), ("b", 200, 200 * 4096)]
    # No disk stats: fio keeps none for a diskless engine.
    assert "disk_util" not in doc


@need_fio
def test_null_engine_file_larger_than_the_device_matches_fio(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text(BIG_NULL)
    ours, real = run_ours(tmp_path / "job.fio"), run_fio(tmp_path / "job.fio")
    assert ios(ours, "read") == ios(real, "read")
    assert ("disk_util" in ours) == ("disk_util" in real)


SHARED_FILE = """[global]
ioengine=psync
filename=shared.dat
bs=4k
rw=write
size=64k
[first]
[second]
stonewall
offset=1m
"""


def test_a_later_offset_extends_the_shared_file(tmp_path: Path) -> None:
    # filesetup.c: a job whose offset + size passes the file's end extends
    # it; both jobs write their whole size.
    (tmp_path / "job.fio").write_text(SHARED_FILE)
    doc = run_ours(tmp_path / "job.fio")
    assert ios(doc, "write") == [("first", 16, 65536), ("second", 16, 65536)]


@need_fio
def test_a_later_offset_extends_the_shared_file_as_fio_does(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text(SHARED_FILE)
    real = run_fio(tmp_path / "job.fio")
    assert (tmp_path / "shared.dat").stat().st_size == (1 << 20) + 65536
    assert ios(run_ours(tmp_path / "job.fio"), "write") == ios(real, "write")
