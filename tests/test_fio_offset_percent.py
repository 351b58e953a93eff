"""offset=N% as fio 3.33 computes it (filesetup.c get_start_offset).

A clone starts at N% of its file's real size (get_file_sizes: the null
engine's file is `size / nrfiles`, a raw device its capacity, a regular file
that does not exist yet 0) plus `clone * offset_increment`, rounded up to
offset_align, or to the smallest block size of the three directions
(td_min_bs) when offset_align is 0. options.c str_offset_cb sets only the
plain offset, so an earlier `offset=N%` stays and wins.

Offsets are compared exactly with the real fio's write_iolog where fio can
run the job here (the null engine, a new regular file); a raw device's case
is held to get_start_offset's closed form (checked by hand with the real
fio on a 1 GiB loop device: offset=33% -> 0x151ec000, the second clone of
offset_increment=100k -> 0x15205000; CI has no loop device).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import cli

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")


def iolog_writes(path: Path) -> list[tuple[str, int, int]]:
    """The (file, offset, length) of each I/O of a version 3 iolog."""
    out = []
    for line in path.read_text().splitlines()[1:]:
        f = line.split()
        if len(f) == 5 and f[2] in ("read", "write", "trim"):
            out.append((f[1], int(f[3]), int(f[4])))
    return out


def ours(folder: Path, job: str, *extra: str) -> subprocess.CompletedProcess[str]:
    (folder / "job.fio").write_text(job)
    return cli("run", "job.fio", "--device", "nullblk", *extra, cwd=folder)


def real_fio(folder: Path, job: str) -> None:
    assert FIO is not None
    (folder / "job.fio").write_text(job)
    r = subprocess.run(
        [FIO, "--output-format=terse", "job.fio"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr


def ceil_to(x: int, a: int) -> int:
    return -(-x // a) * a


NULL_JOBS = {
    # 10% of 1 MiB is 104857, rounded up to td_min_bs = min(4k, 8k, 4k).
    "min_bs": (
        "[a]\nioengine=null\nsize=1M\noffset=10%\nrw=write\nbs=4k,8k\nwrite_iolog=io.log\n",
        [ceil_to(2**20 // 10, 4096)],
    ),
    # A plain offset after a percentage leaves the percentage in force.
    "percent_wins": (
        "[a]\nioengine=null\nsize=1M\noffset=50%\noffset=4k\nrw=write\nbs=4k\nwrite_iolog=io.log\n",
        [2**19],
    ),
    # offset_align rounds the percentage's offset up to 64 KiB.
    "offset_align": (
        "[a]\nioengine=null\nsize=1M\noffset=10%\noffset_align=64k\nrw=write\nbs=4k\n"
        "write_iolog=io.log\n",
        [ceil_to(2**20 // 10, 65536)],
    ),
}


@pytest.mark.parametrize("name", sorted(NULL_JOBS))
def test_null_engine_offset_percent_is_of_size(tmp_path: Path, name: str) -> None:
    job, starts = NULL_JOBS[name]
    r = ours(tmp_path, job)
    assert r.returncode == 0, r.stderr
    got = iolog_writes(tmp_path / "io.log")
    # The first I/O to each file starts at the closed form's offset.
    firsts: dict[str, int] = {}
    for f, off, _ in got:
        firsts.setdefault(f, off)
    assert sorted(firsts.values()) == starts


@need_fio
@pytest.mark.parametrize("name", sorted(NULL_JOBS))
def test_null_engine_offset_percent_matches_fio(tmp_path: Path, name: str) -> None:
    job, _ = NULL_JOBS[name]
    (tmp_path / "fio").mkdir()
    (tmp_path / "ours").mkdir()
    real_fio(tmp_path / "fio", job)
    r = ours(tmp_path / "ours", job)
    assert r.returncode == 0, r.stderr
    # Every I/O, in order, with its file, offset and length.
    assert iolog_writes(tmp_path / "ours" / "io.log") == iolog_writes(tmp_path / "fio" / "io.log")


NRFILES = (
    "[a]\nioengine=null\nsize=1M\nnrfiles=2\noffset=50%\nrw=write\nbs=4k\nwrite_iolog=io.log\n"
)


def test_null_engine_nrfiles_offset_percent_is_of_each_file(tmp_path: Path) -> None:
    # Each of two files is size / nrfiles = 512 KiB: both start at 256 KiB
    # and write their io_size (512 KiB) from there, in turn; the iolog
    # names each I/O's own file, a.0.0 and a.0.1, as fio's does.
    r = ours(tmp_path, NRFILES)
    assert r.returncode == 0, r.stderr
    got = [(f, off) for f, off, _ in iolog_writes(tmp_path / "io.log")]
    want = [(f"a.0.{k}", 2**18 + 4096 * i) for i in range(128) for k in (0, 1)]
    assert got == want


@need_fio
def test_null_engine_nrfiles_matches_fio(tmp_path: Path) -> None:
    (tmp_path / "fio").mkdir()
    (tmp_path / "ours").mkdir()
    real_fio(tmp_path / "fio", NRFILES)
    assert ours(tmp_path / "ours", NRFILES).returncode == 0
    # Every I/O, in order, with its own file, offset and length.
    assert iolog_writes(tmp_path / "ours" / "io.log") == iolog_writes(tmp_path / "fio" / "io.log")


NEW_FILE = "[a]\nfilename=f1\nsize=256k\noffset=50%\nrw=write\nbs=4k\nwrite_iolog=io.log\n"


def test_new_file_has_no_size_so_starts_at_zero(tmp_path: Path) -> None:
    r = ours(tmp_path, NEW_FILE)
    assert r.returncode == 0, r.stderr
    got = iolog_writes(tmp_path / "io.log")
    assert [off for _, off, _ in got] == list(range(0, 256 * 1024, 4096))


@need_fio
def test_new_file_matches_fio(tmp_path: Path) -> None:
    (tmp_path / "fio").mkdir()
    (tmp_path / "ours").mkdir()
    real_fio(tmp_path / "fio", NEW_FILE)
    assert ours(tmp_path / "ours", NEW_FILE).returncode == 0
    assert iolog_writes(tmp_path / "ours" / "io.log") == iolog_writes(tmp_path / "fio" / "io.log")


def test_raw_device_offset_percent_is_of_capacity_per_clone(tmp_path: Path) -> None:
    cap = 2**30
    job = (
        "[a]\nfilename=/dev/nvme0n1\ndirect=1\nsize=8k\noffset=33%\noffset_increment=100k\n"
        "numjobs=2\nrw=read\nbs=4k\nwrite_lat_log=lat\nlog_offset=1\n"
    )
    r = ours(tmp_path, job, "--set", "device.capacity=1GiB")
    assert r.returncode == 0, r.stderr
    for clone in (0, 1):
        lines = (tmp_path / f"lat_lat.{clone + 1}.log").read_text().splitlines()
        offsets = [int(x.split(",")[4]) for x in lines]
        start = ceil_to(cap * 33 // 100 + clone * 100 * 1024, 4096)
        assert offsets == [start, start + 4096], clone
    # The loop-device check's numbers (module docstring).
    assert ceil_to(cap * 33 // 100, 4096) == 0x151EC000
    assert ceil_to(cap * 33 // 100 + 100 * 1024, 4096) == 0x15205000


def test_null_engine_without_size_fails_as_fio(tmp_path: Path) -> None:
    # The size stays -1: fio fails the job with "you need to specify
    # valid offset=" (seen with the real fio 3.33, filesize=1M).
    r = ours(tmp_path, "[a]\nioengine=null\nfilesize=1M\noffset=50%\nrw=write\n")
    assert r.returncode != 0
    assert "you need to specify valid offset=" in r.stderr
    assert "job.fio" in r.stderr and "Traceback" not in r.stderr


def test_offset_percent_on_a_file_an_earlier_job_uses_is_refused_by_name(tmp_path: Path) -> None:
    r = ours(
        tmp_path,
        "[global]\nfilename=f1\nsize=64k\n[a]\nrw=write\n[b]\nstonewall\noffset=50%\nrw=read\n",
    )
    assert r.returncode != 0
    assert "offset=N%" in r.stderr and "not modelled" in r.stderr
    assert "job.fio:" in r.stderr
