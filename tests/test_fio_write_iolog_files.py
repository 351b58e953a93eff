"""write_iolog names each I/O's own file, as fio 3.33 writes it.

With nrfiles > 1 fio's files are `name.clone.k` (init.c get_file_name) and
iolog.c logs every I/O against its file with the offset in that file; the
files are added as the job sets up, opened as fio first uses them and
closed at the end. Before, flashpath logged every I/O against `name.0.0`
with the file's place in the job's region as the offset (file k at k x file
size). Compared exactly with the real fio's log for sequential jobs (their
order of files and offsets is fio's file_service_type=roundrobin, with no
random choice); times are not compared (fio's are wall-clock).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import cli, real_fio

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")


def entries(path: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str, int, int]]]:
    """A version 3 iolog's file actions (file, action) in order, and its
    I/Os (file, action, offset, length)."""
    lines = path.read_text().splitlines()
    assert lines[0] == "fio version 3 iolog", lines[:1]
    actions, ios = [], []
    for line in lines[1:]:
        f = line.split()
        if len(f) == 3:
            actions.append((f[1], f[2]))
        else:
            ios.append((f[1], f[2], int(f[3]), int(f[4])))
    return actions, ios


JOBS = {
    "two_files_read": "[a]\nioengine=null\nrw=read\nbs=4k\nsize=64k\nnrfiles=2\n",
    "three_files_write_offset": (
        "[b]\nioengine=null\nrw=write\nbs=8k\nsize=96k\nnrfiles=3\noffset=8k\n"
    ),
    "four_files_filesize": (
        "[d]\nioengine=null\nrw=write\nbs=4k\nsize=64k\nnrfiles=4\nfilesize=16k\n"
    ),
}


@need_fio
@pytest.mark.parametrize("name", sorted(JOBS))
def test_each_io_is_logged_against_its_own_file(tmp_path: Path, name: str) -> None:
    job = JOBS[name]
    logs = {}
    for who in ("fio", "ours"):
        folder = tmp_path / who
        folder.mkdir()
        (folder / "job.fio").write_text(job + "write_iolog=io.log\n")
        if who == "fio":
            r = real_fio(folder, "--output-format=terse", "job.fio")
        else:
            r = cli("run", "job.fio", "--device", "nullblk", cwd=folder)
        assert r.returncode == 0, r.stderr
        logs[who] = entries(folder / "io.log")
    (fio_actions, fio_ios), (our_actions, our_ios) = logs["fio"], logs["ours"]
    assert our_ios == fio_ios
    assert our_actions == fio_actions
