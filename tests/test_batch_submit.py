"""fio counts submissions per commit (io_u_mark_submit(td, nr) in the
engine's commit: engines/libaio.c fio_libaio_commit), not per I/O: with
iodepth_batch_submit=8 at iodepth 16 the queue fills with two commits of 8
(bucket "8"), and then each reaped I/O (iodepth_batch_complete_max is the
min, 1) is replaced and committed alone (bucket "4", 1 to 4). Side by side
with the real fio 3.33 on a 16 MiB file under the test's folder (libaio,
O_DIRECT): the IO submit line is the same to its last digit (fio shows a
share under 0.1% as 0.1)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import cli

FIO = shutil.which("fio")


@pytest.mark.skipif(FIO is None, reason="the real fio is not installed")
@pytest.mark.parametrize("batch", [1, 8])
def test_submissions_are_counted_per_commit(tmp_path: Path, batch: int) -> None:
    job = (
        f"--name=j --ioengine=libaio --direct=1 --filename={tmp_path / 'f'} --size=16m "
        f"--rw=randread --bs=4k --iodepth=16 --iodepth_batch_submit={batch}"
    ).split()
    real = subprocess.run(
        [FIO or "fio", "--output-format=json", *job],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    if real.returncode != 0 and "O_DIRECT" in real.stderr + real.stdout:
        pytest.skip("the test folder's file system refuses O_DIRECT")
    assert real.returncode == 0, real.stderr
    ours = cli("run", "--device", "nullblk", "--output-format", "json", *job)
    assert ours.returncode == 0, ours.stderr
    r = json.loads(real.stdout[real.stdout.index("{") :])["jobs"][0]
    o = json.loads(ours.stdout)["jobs"][0]
    assert r["read"]["total_ios"] == o["read"]["total_ios"] == 4096
    assert o["iodepth_submit"] == r["iodepth_submit"]
    if batch == 8:
        # 2 commits of 8 among 4082: 0.049%, shown as 0.1.
        assert r["iodepth_submit"]["8"] == 0.1 and r["iodepth_submit"]["4"] == 99.951004
