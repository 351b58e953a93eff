"""fio 3.33's verify family: verify_backlog (and its batch), a verify pass
after each loop, experimental_verify; verify_state_load and verify_async
refused as fio fails them on a machine without the state file or threads.

The written data is known to the simulator, so a verify read is real I/O
that costs time and is reported in the read direction, as fio reports it
(fio's stat.c counts IO_U_F_VER_LIST reads with the reads). Each test
asserts what fio's source says (io_u.c check_get_verify, backend.c
thread_main) without fio, then, where the real fio is installed, that fio
issues the same sequence on the same job (its write_iolog).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import cli, real_fio_json

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")


def job_text(folder: Path, extra: str) -> str:
    # A small file under the test's folder, buffered: the real fio can run
    # it anywhere; flashpath simulates it on the null block device.
    return f"[v]\nfilename={folder / 'data'}\nbs=4k\nwrite_iolog=io.log\n{extra}"


def iolog_ops(path: Path) -> list[tuple[str, int]]:
    """(action, offset) of each read or write in a version-3 iolog."""
    out = []
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) == 5 and f[2] in ("read", "write"):
            out.append((f[2], int(f[3])))
    return out


def runs(ops: list[tuple[str, int]]) -> list[str]:
    """Runs of equal actions, e.g. ['32w', '32r']."""
    out: list[list[object]] = []
    for action, _ in ops:
        if out and out[-1][1] == action:
            out[-1][0] = int(str(out[-1][0])) + 1
        else:
            out.append([1, action])
    return [f"{n}{str(a)[0]}" for n, a in out]


def run_ours(folder: Path, extra: str) -> tuple[dict, list[tuple[str, int]]]:  # type: ignore[type-arg]
    (folder / "job.fio").write_text(job_text(folder, extra))
    r = cli("run", "job.fio", "--device", "nullblk", "--output-format", "json", cwd=folder)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), iolog_ops(folder / "io.log")


def run_fio(folder: Path, extra: str) -> tuple[dict, list[tuple[str, int]]]:  # type: ignore[type-arg]
    assert FIO is not None
    (folder / "job.fio").write_text(job_text(folder, extra))
    return real_fio_json(folder), iolog_ops(folder / "io.log")


def totals(doc: dict) -> tuple[int, int, int, int]:  # type: ignore[type-arg]
    j = doc["jobs"][0]
    return (
        j["read"]["total_ios"],
        j["read"]["io_bytes"],
        j["write"]["total_ios"],
        j["write"]["io_bytes"],
    )


BACKLOG = "rw=write\nsize=1m\nverify=md5\nverify_backlog={n}\n"
# io_u.c check_get_verify: when the logged writes reach a multiple of the
# backlog after a write, read back that many; the rest after the writes.
BACKLOG_RUNS = {
    32: ["32w", "32r"] * 8,
    100: ["100w", "100r", "100w", "100r", "56w", "56r"],
}


@pytest.mark.parametrize("n", sorted(BACKLOG_RUNS))
def test_verify_backlog_reads_back_while_writing(tmp_path: Path, n: int) -> None:
    doc, ops = run_ours(tmp_path, BACKLOG.format(n=n))
    # Verify reads are reads in the report, and do not eat the job's size.
    assert totals(doc) == (256, 1 << 20, 256, 1 << 20)
    assert runs(ops) == BACKLOG_RUNS[n]
    writes = [o for a, o in ops if a == "write"]
    assert [o for a, o in ops if a == "read"] == writes == list(range(0, 1 << 20, 4096))
    # The reads cost time: the job takes longer than without verify.
    (tmp_path / "plain").mkdir()
    plain, _ = run_ours(tmp_path / "plain", "rw=write\nsize=1m\n")
    assert doc["jobs"][0]["job_runtime"] > plain["jobs"][0]["job_runtime"]


@need_fio
@pytest.mark.parametrize("n", sorted(BACKLOG_RUNS))
def test_verify_backlog_matches_the_real_fio(tmp_path: Path, n: int) -> None:
    (tmp_path / "ours").mkdir()
    (tmp_path / "real").mkdir()
    doc, ours = run_ours(tmp_path / "ours", BACKLOG.format(n=n))
    real_doc, real = run_fio(tmp_path / "real", BACKLOG.format(n=n))
    assert ours == real
    assert totals(doc) == totals(real_doc)


LOOPS = "rw=randwrite\nsize=64k\nloops=3\nverify=md5\n"


def test_a_looped_job_verifies_after_each_pass(tmp_path: Path) -> None:
    # backend.c thread_main: do_io, then do_verify, in every loop.
    doc, ops = run_ours(tmp_path, LOOPS)
    assert totals(doc) == (48, 48 * 4096, 48, 48 * 4096)
    assert runs(ops) == ["16w", "16r"] * 3
    for p in range(3):
        chunk = ops[32 * p : 32 * (p + 1)]
        assert [o for _, o in chunk[:16]] == [o for _, o in chunk[16:]]
        assert sorted(o for _, o in chunk[:16]) == list(range(0, 64 << 10, 4096))


@need_fio
def test_a_looped_job_verifies_after_each_pass_in_the_real_fio(tmp_path: Path) -> None:
    doc, ops = run_fio(tmp_path, LOOPS)
    assert totals(doc) == (48, 48 * 4096, 48, 48 * 4096)
    assert runs(ops) == ["16w", "16r"] * 3


EXPERIMENTAL = "rw=randwrite\nsize=128k\nverify=md5\nexperimental_verify=1\n"


def test_experimental_verify_reads_back_what_was_written(tmp_path: Path) -> None:
    # fio regenerates the offsets from its seeds instead of logging them:
    # the same reads in the same order.
    doc, ops = run_ours(tmp_path, EXPERIMENTAL)
    assert totals(doc) == (32, 128 << 10, 32, 128 << 10)
    assert runs(ops) == ["32w", "32r"]
    assert [o for _, o in ops[:32]] == [o for _, o in ops[32:]]


@need_fio
def test_experimental_verify_in_the_real_fio(tmp_path: Path) -> None:
    doc, ops = run_fio(tmp_path, EXPERIMENTAL)
    assert totals(doc) == (32, 128 << 10, 32, 128 << 10)
    assert runs(ops) == ["32w", "32r"]
    assert [o for _, o in ops[:32]] == [o for _, o in ops[32:]]


def refusal(folder: Path, extra: str) -> str:
    (folder / "job.fio").write_text(job_text(folder, extra))
    r = cli("run", "job.fio", "--device", "nullblk", "--output-format", "json", cwd=folder)
    assert r.returncode != 0, r.stdout
    return r.stderr


def test_verify_state_load_is_refused_as_fio_fails_without_the_state_file(tmp_path: Path) -> None:
    # fio 3.33 fails the job when the state file a verify_state_save run
    # writes is not there (verify.c verify_load_state, fio-verdicts); the
    # simulator writes none. verify_state_load=0 runs as the plain job.
    err = refusal(tmp_path, "rw=read\nsize=512k\nverify=md5\nverify_state_load=1\n")
    assert "verify_state_load" in err and "job.fio" in err
    doc, ops = run_ours(tmp_path, "rw=read\nsize=512k\nverify=md5\nverify_state_load=0\n")
    assert totals(doc) == (128, 512 << 10, 0, 0)
    assert runs(ops) == ["128r"]


@need_fio
def test_verify_state_load_fails_in_the_real_fio_without_a_state_file(tmp_path: Path) -> None:
    assert FIO is not None
    (tmp_path / "job.fio").write_text(
        job_text(tmp_path, "rw=read\nsize=512k\nverify=md5\nverify_state_load=1\n")
    )
    r = subprocess.run(
        [FIO, "--output-format=json", "job.fio"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "open state file" in r.stdout + r.stderr


def test_verify_async_threads_are_refused_and_zero_runs_the_plain_job(tmp_path: Path) -> None:
    # fio creates verify_async's threads at the job's start and fails when
    # it cannot (fio-verdicts: a negative count crashes fio 3.33, 1m fails
    # with EAGAIN): a limit of the machine, so any count but 0 is refused.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    err = refusal(tmp_path / "c", BACKLOG.format(n=32) + "verify_async=4\n")
    assert "verify_async" in err
    doc, ops = run_ours(tmp_path / "a", BACKLOG.format(n=32) + "verify_async=0\n")
    plain_doc, plain_ops = run_ours(tmp_path / "b", BACKLOG.format(n=32))
    assert ops == plain_ops
    assert totals(doc) == totals(plain_doc) == (256, 1 << 20, 256, 1 << 20)
