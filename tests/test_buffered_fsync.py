"""fsync of a buffered job (direct=0): fio 3.33 issues a sync after every
`fsync` writes but the last, each timed in the JSON's `sync` section, and
end_fsync's final fsync is not timed there. flashpath writes the dirty
pages back and then flushes the device cache (blkdev_fsync: the writeback,
then blkdev_issue_flush), so on a drive with a volatile cache each sync
reaches the device as a flush; on a power-loss protected one none does.

Each test asserts fio's rule (without fio), then, where the real fio is
installed (CI has it), that fio on a /tmp file gives the same section.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import cli, real_fio_json

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")

JOB = """[j]
filename={file}
ioengine=psync
direct=0
rw=write
bs=4k
size={size}
{extra}
"""


def ours(tmp_path: Path, device: str, size: str, extra: str) -> dict:  # type: ignore[type-arg]
    (tmp_path / "job.fio").write_text(JOB.format(file="/dev/nvme0n1", size=size, extra=extra))
    r = cli("run", "job.fio", "--device", device, "--output-format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def real(tmp_path: Path, size: str, extra: str) -> dict:  # type: ignore[type-arg]
    assert FIO is not None
    text = JOB.format(file=tmp_path / "data", size=size, extra=extra)
    (tmp_path / "job.fio").write_text(text)
    return real_fio_json(tmp_path)


def syncs(doc: dict) -> int:  # type: ignore[type-arg]
    return int(doc["jobs"][0]["sync"]["lat_ns"]["N"])


def flushes(doc: dict) -> int:  # type: ignore[type-arg]
    return int(doc["flashpath"]["driver"]["device"]["front_end"]["flushes"])


def test_buffered_fsync_syncs_and_flushes_a_volatile_cache(tmp_path: Path) -> None:
    doc = ours(tmp_path, "nvme-970evoplus-1tb", "1m", "fsync=4")
    # 256 writes, a sync after every 4th but the last.
    assert syncs(doc) == 63
    assert flushes(doc) == 63
    assert doc["jobs"][0]["sync"]["lat_ns"]["min"] > 0
    protected = ours(tmp_path, "nvme-d7p5510-3t84", "1m", "fsync=4")
    assert syncs(protected) == 63
    assert flushes(protected) == 0


def test_buffered_end_fsync_flushes_once_and_is_not_timed(tmp_path: Path) -> None:
    doc = ours(tmp_path, "nvme-970evoplus-1tb", "64k", "end_fsync=1")
    assert syncs(doc) == 0
    assert flushes(doc) == 1


@need_fio
@pytest.mark.parametrize(("size", "extra"), [("1m", "fsync=4"), ("64k", "end_fsync=1")])
def test_the_sync_section_has_the_real_fios_shape(tmp_path: Path, size: str, extra: str) -> None:
    mine = ours(tmp_path, "nvme-970evoplus-1tb", size, extra)
    theirs = real(tmp_path, size, extra)
    assert syncs(mine) == syncs(theirs)
    assert set(mine["jobs"][0]["sync"]) == set(theirs["jobs"][0]["sync"])
    assert mine["jobs"][0]["write"]["total_ios"] == theirs["jobs"][0]["write"]["total_ios"]
