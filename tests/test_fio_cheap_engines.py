"""fio's falloc and ftruncate engines: each I/O one system call on the file
that moves no data (engines/falloc.c: fallocate(2) per I/O, a read with
FALLOC_FL_KEEP_SIZE, a write with mode 0, a trim punching a hole;
engines/ftruncate.c: ftruncate(2) to the write's offset, EINVAL for
anything else). Both are FIO_SYNCIO: no submission latency.

Each test asserts what fio's source says (without fio), then, where the real
fio is installed (CI has it), that fio does the same on the same job: the
counts, sizes and errors exactly. Times are not compared: the real calls'
file-system work (a punched hole costs milliseconds on ext4) is not
modelled, only the system call.
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


def job_text(engine: str, rw: str, filename: Path, extra: str = "") -> str:
    return (
        f"[j]\nioengine={engine}\nfilename={filename}\nsize=256k\nbs=4k\nrw={rw}\n"
        f"randrepeat=1\n{extra}"
    )


def run_ours(folder: Path, text: str) -> dict:  # type: ignore[type-arg]
    (folder / "job.fio").write_text(text)
    r = cli("run", "job.fio", "--device", "nullblk", "--output-format", "json", cwd=folder)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def run_fio(folder: Path, text: str) -> subprocess.CompletedProcess[str]:
    assert FIO is not None
    (folder / "job.fio").write_text(text)
    return subprocess.run(
        [FIO, "--output-format=json", "job.fio"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )


def counts(doc: dict) -> list[tuple[int, int]]:  # type: ignore[type-arg]
    j = doc["jobs"][0]
    return [(j[d]["total_ios"], j[d]["io_bytes"]) for d in ("read", "write", "trim")]


MIXES = [
    ("falloc", "randwrite"),
    ("falloc", "randtrim"),
    ("falloc", "randrw"),
    ("falloc", "trimwrite"),
    ("falloc", "randread"),
    ("ftruncate", "write"),
    ("ftruncate", "randwrite"),
]


@pytest.mark.parametrize(("engine", "rw"), MIXES)
def test_each_io_is_one_call_and_no_device_io(tmp_path: Path, engine: str, rw: str) -> None:
    doc = run_ours(tmp_path, job_text(engine, rw, tmp_path / "f"))
    j = doc["jobs"][0]
    # 256k in 4k I/Os, each direction's share, all of them done;
    # trimwrite trims each block, then writes it (io_u.c get_next_ddir).
    per_block = 2 if rw == "trimwrite" else 1
    assert sum(n for n, _ in counts(doc)) == 64 * per_block
    assert sum(b for _, b in counts(doc)) == 256 * 1024 * per_block
    assert j["error"] == 0
    for d in ("read", "write", "trim"):
        if j[d]["total_ios"]:
            # FIO_SYNCIO: no slat; clat covers the system call, which costs
            # something on the host.
            assert j[d]["slat_ns"]["N"] == 0
            assert j[d]["clat_ns"]["N"] == j[d]["total_ios"]
            assert j[d]["clat_ns"]["min"] > 0
    # No data moves: not one request reaches the device.
    disk = doc["disk_util"][0]
    assert (disk["read_ios"], disk["write_ios"]) == (0, 0)


def test_falloc_direct0_does_not_use_the_page_cache(tmp_path: Path) -> None:
    # falloc.c opens its own file and calls fallocate: direct=0 changes
    # nothing (examples/falloc.fio runs it so), and takes no page cache.
    a = run_ours(tmp_path, job_text("falloc", "randwrite", tmp_path / "f", "direct=0\n"))
    b = run_ours(tmp_path, job_text("falloc", "randwrite", tmp_path / "f", "direct=1\n"))
    assert counts(a) == counts(b)
    assert a["jobs"][0]["write"]["clat_ns"] == b["jobs"][0]["write"]["clat_ns"]


@pytest.mark.parametrize("rw", ["read", "randtrim", "rw"])
def test_ftruncate_refuses_what_fio_fails(tmp_path: Path, rw: str) -> None:
    (tmp_path / "job.fio").write_text(job_text("ftruncate", rw, tmp_path / "f"))
    r = cli("run", "job.fio", "--device", "nullblk", cwd=tmp_path)
    assert r.returncode != 0
    assert "job.fio:1" in r.stderr
    assert "ioengine=ftruncate does only writes" in r.stderr
    assert "Invalid argument" in r.stderr
    assert "Traceback" not in r.stderr


@need_fio
@pytest.mark.parametrize(("engine", "rw"), MIXES)
def test_counts_match_the_real_fio(tmp_path: Path, engine: str, rw: str) -> None:
    real_dir, ours_dir = tmp_path / "real", tmp_path / "ours"
    real_dir.mkdir()
    ours_dir.mkdir()
    text = job_text(engine, rw, real_dir / "f")
    real = run_fio(real_dir, text)
    assert real.returncode == 0, real.stderr
    real_doc = json.loads(real.stdout)
    ours = run_ours(ours_dir, text)
    if rw == "randrw":
        # The read/write split of a mixed job differs by one I/O from fio's
        # with every engine (psync and null too: flashpath's rwmix draw is
        # not fio's), so only the totals are the engine's to match here.
        assert [sum(x) for x in zip(*counts(ours), strict=True)] == [
            sum(x) for x in zip(*counts(real_doc), strict=True)
        ]
    else:
        assert counts(ours) == counts(real_doc)
    assert ours["jobs"][0]["error"] == real_doc["jobs"][0]["error"] == 0
    for d in ("read", "write", "trim"):
        # Neither records a submission latency (FIO_SYNCIO).
        assert ours["jobs"][0][d]["slat_ns"]["N"] == real_doc["jobs"][0][d]["slat_ns"]["N"] == 0


@need_fio
@pytest.mark.parametrize("rw", ["read", "randtrim"])
def test_ftruncate_fails_in_the_real_fio_too(tmp_path: Path, rw: str) -> None:
    real = run_fio(tmp_path, job_text("ftruncate", rw, tmp_path / "f"))
    out = real.stdout + real.stderr
    assert "func=td_io_queue, error=Invalid argument" in out
    assert json.loads(real.stdout[real.stdout.index("{") :])["jobs"][0]["error"] == 22
