"""fio's `fill_device=1` (`fill_fs`): write until the device (the file
system) is full. init.c fixup_options sets an unset size to -1, so the file
grows until a write fails with ENOSPC, and fio ends the job there without
an error (backend.c). A later job that names the file without a size reads
it at the size it has (filesetup.c get_file_sizes), as fio's
examples/surface-scan.fio does.

fio cannot fill this machine's disk within the project's limits, so the
fill itself is checked against fio's source; a sizeless job reading an
earlier job's file is checked against the real fio 3.33.
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
MIB = 1 << 20


def run_ours(folder: Path, text: str, capacity: str = "64MiB") -> dict:  # type: ignore[type-arg]
    (folder / "job.fio").write_text(text)
    r = cli(
        "run", "job.fio", "--device", "nullblk", "--set", f"device.capacity={capacity}",
        "--output-format", "json", cwd=folder,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def moved(doc: dict) -> list[tuple[str, int, int, int]]:  # type: ignore[type-arg]
    return [
        (j["jobname"], j["error"], j["read"]["io_bytes"], j["write"]["io_bytes"])
        for j in doc["jobs"]
    ]


SURFACE = """[global]
ioengine=psync
direct=1
bs=64k
[other]
filename=other.dat
size=16m
rw=write
[write-phase]
stonewall
filename=datafile.tmp
rw=write
fill_device=1
{size}
[verify-phase]
stonewall
filename=datafile.tmp
rw=read
"""


def test_the_write_fills_what_the_device_has_left(tmp_path: Path) -> None:
    # 64 MiB device, 16 MiB taken by another file: the fill writes the
    # other 48 MiB, ends without an error, and the sizeless reader after it
    # reads the whole file.
    doc = run_ours(tmp_path, SURFACE.format(size=""))
    assert moved(doc) == [
        ("other", 0, 0, 16 * MIB),
        ("write-phase", 0, 0, 48 * MIB),
        ("verify-phase", 0, 48 * MIB, 0),
    ]


def test_a_size_past_the_room_left_ends_at_enospc(tmp_path: Path) -> None:
    doc = run_ours(tmp_path, SURFACE.format(size="size=1g"))
    assert moved(doc)[1] == ("write-phase", 0, 0, 48 * MIB)


def test_a_size_within_the_room_is_written_whole(tmp_path: Path) -> None:
    doc = run_ours(tmp_path, SURFACE.format(size="size=8m"))
    assert moved(doc)[1:] == [("write-phase", 0, 0, 8 * MIB), ("verify-phase", 0, 8 * MIB, 0)]


def test_a_raw_device_is_written_whole(tmp_path: Path) -> None:
    text = "[w]\nioengine=psync\ndirect=1\nbs=64k\nrw=write\nfilename=/dev/nullb0\nfill_device=1\n"
    assert moved(run_ours(tmp_path, text)) == [("w", 0, 0, 64 * MIB)]


@pytest.mark.parametrize("extra", ["rw=randwrite\n", "rw=write\ntime_based\nruntime=5\n"])
def test_what_is_not_modelled_is_refused(tmp_path: Path, extra: str) -> None:
    (tmp_path / "job.fio").write_text(
        "[w]\nioengine=psync\ndirect=1\nbs=64k\nfilename=f\nfill_device=1\n" + extra
    )
    r = cli("run", "job.fio", "--device", "nullblk", cwd=tmp_path)
    assert r.returncode != 0
    assert "job.fio:1" in r.stderr and "fill_device=1" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_sizeless_job_needs_an_earlier_file(tmp_path: Path) -> None:
    # The reader comes first: no file yet, fio's "you need to specify size=".
    (tmp_path / "job.fio").write_text(
        "[r]\nfilename=f\nrw=read\n[w]\nstonewall\nfilename=f\nsize=1m\nrw=write\n"
    )
    r = cli("run", "job.fio", "--device", "nullblk", cwd=tmp_path)
    assert r.returncode != 0
    assert "you need to specify size=" in r.stderr


@need_fio
def test_a_sizeless_reader_reads_the_earlier_file_as_the_real_fio(tmp_path: Path) -> None:
    text = (
        "[global]\nioengine=psync\nbs=64k\n"
        "[w]\nfilename=f\nsize=3m\nrw=write\n[r]\nstonewall\nfilename=f\nrw=read\n"
    )
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "job.fio").write_text(text)
    assert FIO is not None
    real = subprocess.run(
        [FIO, "--output-format=json", "job.fio"],
        cwd=tmp_path / "real",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert real.returncode == 0, real.stderr
    ours = run_ours(tmp_path, text)
    assert (
        moved(ours)
        == moved(json.loads(real.stdout))
        == [
            ("w", 0, 0, 3 * MIB),
            ("r", 0, 3 * MIB, 0),
        ]
    )
