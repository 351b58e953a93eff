"""Failed I/O as fio 3.33 reports it, against the real fio: the same job
runs on real fio, whose file fails bytes 16384..20480 with EIO (an
LD_PRELOAD shim, tests/fixtures/fio/eio-shim/eio_shim.c), and on flashpath's
null_blk with the same bytes as `device.badblocks` (sectors 32..39). The
error lines, the job's err= and issued counts, the JSON error fields and
the exit status must be the same."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, cli

SHIM = FIXTURES / "fio" / "eio-shim" / "eio_shim.c"
BAD_BYTES = (16384, 20480)
BAD_SECTORS = "device.badblocks=[32, 39]"


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed to build the EIO shim for real fio"
    assert shutil.which("fio"), "real fio 3.33 is needed for this comparison"
    out = tmp_path_factory.mktemp("shim") / "eio_shim.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out), str(SHIM), "-ldl"], check=True)
    return out


def real_fio(job: str, fmt: str, tmp: Path, shim: Path) -> subprocess.CompletedProcess[str]:
    (tmp / "f").write_bytes(b"\0" * (1 << 20))
    (tmp / "job.fio").write_text(job)
    env = dict(os.environ)
    env.update(
        LD_PRELOAD=str(shim), BAD_START=str(BAD_BYTES[0]), BAD_END=str(BAD_BYTES[1])
    )
    return subprocess.run(
        ["fio", f"--output-format={fmt}", "job.fio"],
        capture_output=True,
        text=True,
        cwd=tmp,
        env=env,
        timeout=120,
    )


def sim(job: str, fmt: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    (tmp / "job.fio").write_text(job)
    return cli(
        "run", "job.fio", "--device", "nullblk", "--set", BAD_SECTORS,
        "--output-format", fmt, cwd=tmp,
    )  # fmt: skip


def io_u_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("fio: io_u error")]


def facts(normal: str) -> dict[str, object]:
    """What must match in the normal output: the exit line and the job
    line without pids and dates, the issued and error counts."""
    out: dict[str, object] = {}
    exit_lines = [re.sub(r"pid=\d+", "pid=N", ln) for ln in normal.splitlines()
                  if ln.startswith("fio: pid=")]  # fmt: skip
    out["exit"] = exit_lines
    m = re.search(r"\): (err=\s*\d+(?: \(.*?\))?): pid=", normal)
    out["err"] = m.group(1) if m else None
    for key in ("issued rwts:", "errors    :"):
        found = [ln.strip() for ln in normal.splitlines() if ln.strip().startswith(key)]
        out[key] = found
    return out


def json_facts(stdout: str) -> dict[str, object]:
    job = json.loads(stdout[stdout.index("{"):])["jobs"][0]
    return {
        "error": job["error"],
        "total_err": job.get("total_err"),
        "first_error": job.get("first_error"),
        **{
            f"{d}.{k}": job[d][k]
            for d in ("read", "write")
            for k in ("total_ios", "io_bytes")
        },
        "read.clat.N": job["read"]["clat_ns"]["N"],
    }


BASE = "[j]\nfilename=f\nsize=64k\ndirect=1\n"
JOBS = {
    "libaio-qd4-read-stops": BASE + "rw=read\nbs=4k\nioengine=libaio\niodepth=4\n",
    "libaio-qd1-continue-read": BASE
    + "rw=read\nbs=4k\nioengine=libaio\niodepth=1\ncontinue_on_error=read\n",
    "psync-read-stops": BASE + "rw=read\nbs=4k\nioengine=psync\n",
    "psync-read-continue": BASE + "rw=read\nbs=4k\nioengine=psync\ncontinue_on_error=read\n",
    "psync-write-stops": BASE + "rw=write\nbs=8k\nioengine=psync\n",
    "psync-read-continue-write-only": BASE
    + "rw=read\nbs=4k\nioengine=psync\ncontinue_on_error=write\n",
    "libaio-ignore-eio-dumped": BASE
    + "rw=read\nbs=4k\nioengine=libaio\niodepth=2\nignore_error=EIO\nerror_dump=1\n",
}


@pytest.mark.parametrize("name", sorted(JOBS))
def test_failed_io_reads_as_real_fio(name: str, shim: Path, tmp_path: Path) -> None:
    job = JOBS[name]
    real = real_fio(job, "normal", tmp_path, shim)
    ours = sim(job, "normal", tmp_path)
    # The fault bit on real fio (every job here meets the bad block).
    assert facts(real.stdout)["err"] != "err= 0", real.stdout + real.stderr
    assert "Traceback" not in ours.stderr
    assert ours.returncode == real.returncode, (real.stdout, real.stderr, ours.stdout, ours.stderr)
    assert io_u_lines(ours.stderr) == io_u_lines(real.stderr)
    assert facts(ours.stdout) == facts(real.stdout), (real.stdout, ours.stdout)
    real_j = real_fio(job, "json", tmp_path, shim)
    ours_j = sim(job, "json", tmp_path)
    assert ours_j.returncode == real_j.returncode
    assert json_facts(ours_j.stdout) == json_facts(real_j.stdout)
    # fio prints its exit line ahead of the JSON; flashpath keeps the JSON
    # clean and puts the line with its notes.
    real_exit = [ln for ln in real_j.stdout.splitlines() if ln.startswith("fio: pid=")]
    ours_exit = [ln for ln in ours_j.stderr.splitlines() if ln.startswith("fio: pid=")]
    assert len(ours_exit) == len(real_exit)
    json.loads(ours_j.stdout)

