"""fio's e4defrag engine (engines/e4defrag.c, fio 3.33): each write one
EXT4_IOC_MOVE_EXT ioctl that swaps the file's blocks in the I/O's range with
the donor file's (machine/defrag.rs), with `inplace=1` between the donor's
fallocate and its ftruncate to 0; anything but a write fails with EINVAL.
FIO_SYNCIO: no submission latency.

fio lays out a write job's file by fallocating it, so the kernel moves
unwritten extents: no data is read or written (measured:
experiments/e4defrag/README.md). flashpath models that move and refuses the
data-copying one (a file fio lays out with data).

The tests without fio hold the model's properties; the ones with the real
fio 3.33 run it on an ext4 file (tmp_path, skipped where that is not ext4)
and compare counts, sizes, errors and the JSON's latency sections exactly.
Times are not compared (the kernel's move on a loaded 2-core machine has a
long tail: its mean is several times its median, README.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import cli

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")


def is_ext4(path: Path) -> bool:
    # statfs's f_type: EXT4_SUPER_MAGIC 0xef53 ("ext2/ext3" to stat -f).
    r = subprocess.run(
        ["stat", "-f", "-c", "%t", str(path)], capture_output=True, text=True, check=True
    )
    return r.stdout.strip() == "ef53"


def job_text(folder: Path, rw: str = "write", bs: str = "32k", extra: str = "") -> str:
    return (
        f"[j]\nioengine=e4defrag\ndirectory={folder}\nfilename=f\ndonorname=f.def\n"
        f"size=1M\nfilesize=1M\nbs={bs}\nrw={rw}\nrandrepeat=1\n{extra}"
    )


def run_ours(folder: Path, text: str) -> dict:  # type: ignore[type-arg]
    (folder / "job.fio").write_text(text)
    r = cli("run", "job.fio", "--device", "nullblk", "--output-format", "json", cwd=folder)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def refusal(folder: Path, text: str) -> str:
    (folder / "job.fio").write_text(text)
    r = cli("run", "job.fio", "--device", "nullblk", cwd=folder)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert "job.fio:" in r.stderr
    return r.stderr


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


def counts(doc: dict) -> list[tuple[int, int, int]]:  # type: ignore[type-arg]
    j = doc["jobs"][0]
    return [
        (j[d]["total_ios"], j[d]["io_bytes"], j[d]["short_ios"]) for d in ("read", "write", "trim")
    ]


@pytest.mark.parametrize(("rw", "bs"), [("write", "4k"), ("write", "32k"), ("randwrite", "8k")])
def test_each_write_is_one_move_and_no_device_io(tmp_path: Path, rw: str, bs: str) -> None:
    doc = run_ours(tmp_path, job_text(tmp_path, rw, bs))
    j = doc["jobs"][0]
    n = 1024 // int(bs[:-1])
    assert counts(doc) == [(0, 0, 0), (n, 1 << 20, 0), (0, 0, 0)]
    assert j["error"] == 0
    w = j["write"]
    # FIO_SYNCIO: no slat; clat covers the calls, which cost something.
    assert w["slat_ns"]["N"] == 0
    assert w["clat_ns"]["N"] == n
    assert w["clat_ns"]["min"] > 0
    # The move of unwritten extents reads and writes nothing on the device.
    disk = doc["disk_util"][0]
    assert (disk["read_ios"], disk["write_ios"]) == (0, 0)


def test_a_move_costs_in_proportion_to_its_pages(tmp_path: Path) -> None:
    # The kernel moves page by page (move_extent_per_page): the call's cost
    # above its fixed part grows linearly with the pages, so the step from
    # 1 to 8 pages and the one from 8 to 32 are in the ratio 7 : 24.
    # (Deterministic: the same job runs the same every time; 1% allows the
    # histogram's bucket rounding of the percentiles' neighbours, the means
    # are exact to the ns.)
    means = {}
    for bs in ("4k", "32k", "128k"):
        doc = run_ours(tmp_path, job_text(tmp_path, "write", bs))
        means[bs] = doc["jobs"][0]["write"]["clat_ns"]["mean"]
    step_small = means["32k"] - means["4k"]
    step_large = means["128k"] - means["32k"]
    assert step_small > 0
    assert step_large / step_small == pytest.approx(24 / 7, rel=0.01)


def test_inplace_adds_the_donors_two_calls(tmp_path: Path) -> None:
    # inplace=1: fallocate(donor) before the move and ftruncate(donor, 0)
    # after it, each a system call on the thread's core; same I/O.
    a = run_ours(tmp_path, job_text(tmp_path, extra="inplace=0\n"))
    b = run_ours(tmp_path, job_text(tmp_path, extra="inplace=1\n"))
    assert counts(a) == counts(b)
    assert b["jobs"][0]["write"]["clat_ns"]["min"] > a["jobs"][0]["write"]["clat_ns"]["min"]
    assert b["disk_util"][0]["write_ios"] == 0


def test_direct_does_not_change_the_move(tmp_path: Path) -> None:
    # The ioctl goes through neither O_DIRECT nor the job's buffer:
    # buffered=0 (the examples' setting) and direct=0 run alike.
    a = run_ours(tmp_path, job_text(tmp_path, extra="direct=1\n"))
    b = run_ours(tmp_path, job_text(tmp_path, extra="direct=0\n"))
    assert a["jobs"][0]["write"]["clat_ns"] == b["jobs"][0]["write"]["clat_ns"]


def e4(extra: str, rw: str = "write") -> str:
    return f"[j]\nioengine=e4defrag\nfilename=f\nsize=1M\nrw={rw}\n{extra}"


# What fio 3.33 fails, with its message and the job's errno (None: it fails
# at start, before any I/O), each checked against the real fio below.
FIO_FAILS = [
    ("no-donor", e4("filesize=1M\n"), "'donorname' options required", None),
    (
        "no-filesize",
        e4("donorname=d\n"),
        "e4defrag.c:113, func=io_queue_init, error=Invalid argument",
        None,
    ),
    (
        "read",
        e4("donorname=d\ninplace=1\n", "read"),
        "func=td_io_queue, error=Invalid argument",
        22,
    ),
    (
        "trim",
        e4("donorname=d\ninplace=1\n", "randtrim"),
        "func=td_io_queue, error=Invalid argument",
        22,
    ),
    # A verifying write job reads its data back through the engine.
    (
        "verify",
        e4("donorname=d\ninplace=1\nverify=md5\n"),
        "func=td_io_queue, error=Invalid argument",
        22,
    ),
    # fio's layout without new_layout (filesetup.c extend_file): none
    # creates the file empty, keep allocates without the size, truncate
    # leaves a hole: the move has nothing to move.
    (
        "fallocate-none",
        e4("donorname=d\ninplace=1\nfallocate=none\n"),
        "error=Invalid argument",
        22,
    ),
    ("fallocate-0", e4("donorname=d\ninplace=1\nfallocate=0\n"), "error=Invalid argument", 22),
    (
        "fallocate-keep",
        e4("donorname=d\ninplace=1\nfallocate=keep\n"),
        "error=Invalid argument",
        22,
    ),
    (
        "fallocate-truncate",
        e4("donorname=d\ninplace=1\nfallocate=truncate\n"),
        "error=No data available",
        61,
    ),
]

# What flashpath does not model (the kernel copies the data).
NOT_MODELLED = [
    (
        "raw",
        e4("donorname=d\ninplace=1\n").replace("filename=f", "filename=/dev/nullb0"),
        "needs a regular file on ext4",
    ),
    ("overwrite", e4("donorname=d\ninplace=1\noverwrite=1\n"), "a file fio lays out with data"),
    (
        "read-first",
        "[r]\nfilename=f\nsize=1M\nrw=read\n\n" + e4("donorname=d\ninplace=1\n"),
        "a file fio lays out with data",
    ),
]


@pytest.mark.parametrize(
    ("case", "text", "message"),
    [f[:3] for f in FIO_FAILS] + NOT_MODELLED,
)
def test_refuses_with_a_message(tmp_path: Path, case: str, text: str, message: str) -> None:
    err = refusal(tmp_path, text)
    assert message in err, err
    # The line is the e4defrag job's header.
    line = text[: text.index("ioengine=e4defrag")].count("\n")
    assert f"job.fio:{line}" in err, err


def test_posix_and_native_layouts_run(tmp_path: Path) -> None:
    # fallocate=posix (and its alias 1) and native give unwritten extents.
    for mode in ("posix", "1", "native"):
        doc = run_ours(tmp_path, job_text(tmp_path, extra=f"fallocate={mode}\n"))
        assert counts(doc)[1] == (32, 1 << 20, 0)


@pytest.fixture
def ext4_dir(tmp_path: Path) -> Path:
    if not is_ext4(tmp_path):
        pytest.skip(f"{tmp_path} is not on ext4 (EXT4_IOC_MOVE_EXT needs it)")
    return tmp_path


def latency_sections(d: dict) -> dict[str, bool]:  # type: ignore[type-arg]
    # Which of a direction's latency sections fio fills (a section with
    # N=0 is printed empty).
    return {k: d[k]["N"] > 0 for k in ("slat_ns", "clat_ns", "lat_ns")}


@need_fio
@pytest.mark.parametrize(
    ("rw", "bs", "inplace"),
    [
        ("write", "4k", 0),
        ("write", "32k", 0),
        ("randwrite", "8k", 0),
        ("write", "32k", 1),
        ("randwrite", "4k", 1),
    ],
)
def test_counts_and_shape_match_the_real_fio(
    ext4_dir: Path, rw: str, bs: str, inplace: int
) -> None:
    real_dir, ours_dir = ext4_dir / "real", ext4_dir / "ours"
    real_dir.mkdir()
    ours_dir.mkdir()
    real = run_fio(real_dir, job_text(real_dir, rw, bs, f"inplace={inplace}\n"))
    assert real.returncode == 0, real.stderr
    real_doc = json.loads(real.stdout)
    ours = run_ours(ours_dir, job_text(ours_dir, rw, bs, f"inplace={inplace}\n"))
    assert counts(ours) == counts(real_doc)
    rj, oj = real_doc["jobs"][0], ours["jobs"][0]
    assert oj["error"] == rj["error"] == 0
    for d in ("read", "write", "trim"):
        assert latency_sections(oj[d]) == latency_sections(rj[d]), d
    # The real move left the donor at its size (inplace=0: fallocated at
    # start) or empty (inplace=1: truncated after each move).
    donor = (real_dir / "f.def").stat().st_size
    assert donor == (0 if inplace else 1 << 20)


@need_fio
@pytest.mark.parametrize(("case", "text", "message", "errno"), FIO_FAILS)
def test_the_real_fio_fails_these_jobs(
    ext4_dir: Path, case: str, text: str, message: str, errno: int | None
) -> None:
    real = run_fio(ext4_dir, text)
    out = real.stdout + real.stderr
    assert message in out, out
    if errno is not None:
        doc = json.loads(real.stdout[real.stdout.index("{") :])
        assert doc["jobs"][0]["error"] == errno


@need_fio
@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("losetup") is None,
    reason="a loop device needs root and losetup",
)
def test_the_real_fio_fails_on_a_block_device(ext4_dir: Path) -> None:
    # On a raw block device the ioctl reaches the block driver, which does
    # not know it: fio fails the first I/O (a loop device answers EINVAL).
    backing = ext4_dir / "disk.img"
    with backing.open("wb") as f:
        f.truncate(8 << 20)
    dev = subprocess.run(
        ["losetup", "-f", "--show", str(backing)], capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        text = (
            f"[j]\nioengine=e4defrag\nfilename={dev}\ndonorname={ext4_dir}/d\nsize=1M\n"
            "inplace=1\nrw=write\n"
        )
        real = run_fio(ext4_dir, text)
        assert "func=td_io_queue, error=Invalid argument" in real.stdout + real.stderr
        assert json.loads(real.stdout[real.stdout.index("{") :])["jobs"][0]["error"] == 22
        # flashpath refuses the same job on its own device path.
        err = refusal(ext4_dir, text.replace(dev, "/dev/nullb0"))
        assert "func=td_io_queue, error=Invalid argument" in err
    finally:
        subprocess.run(["losetup", "-d", dev], check=True)


def example_like(folder: Path) -> str:
    # examples/e4defrag2.fio's e4defrag groups at 1 MiB, reported per job:
    # four clones sharing one donor, two jobs each using a donor named
    # after the other, and the random 4 KiB in-place mover.
    return (
        f"[global]\nioengine=e4defrag\ndirectory={folder}\nnrfiles=1\nfilesize=1M\nsize=1M\n"
        "donorname=file.def\nbs=32k\n\n"
        "[parallel-e4defrag]\nbuffered=0\ninplace=0\nrw=write\nnumjobs=4\n\n"
        "[e4defrag-1]\nstonewall\ninplace=0\nrw=write\ndonorname=e4defrag-2\n\n"
        "[e4defrag-2]\ninplace=0\nrw=write\ndonorname=e4defrag-1\n\n"
        "[e4defrag-fuzzer-4k]\nstonewall\ninplace=1\nbs=4k\nrw=randwrite\nfilename=file\n"
        "donorname=file.def\n"
    )


def per_job(doc: dict) -> list[tuple[str, int, int, int]]:  # type: ignore[type-arg]
    return [
        (j["jobname"], j["error"], j["write"]["total_ios"], j["write"]["io_bytes"])
        for j in doc["jobs"]
    ]


def test_the_examples_groups_run(tmp_path: Path) -> None:
    doc = run_ours(tmp_path, example_like(tmp_path))
    assert per_job(doc) == [("parallel-e4defrag", 0, 32, 1 << 20)] * 4 + [
        ("e4defrag-1", 0, 32, 1 << 20),
        ("e4defrag-2", 0, 32, 1 << 20),
        ("e4defrag-fuzzer-4k", 0, 256, 1 << 20),
    ]


@need_fio
def test_the_examples_groups_match_the_real_fio(ext4_dir: Path) -> None:
    real_dir, ours_dir = ext4_dir / "real", ext4_dir / "ours"
    real_dir.mkdir()
    ours_dir.mkdir()
    real = run_fio(real_dir, example_like(real_dir))
    assert real.returncode == 0, real.stderr
    ours = run_ours(ours_dir, example_like(ours_dir))
    assert per_job(ours) == per_job(json.loads(real.stdout))
