"""The replay options a user meets with fio's own iologs, side by side with
the real fio 3.33 (blktrace files have theirs in test_trace_fio.py):
replay_scale and replay_align on an iolog, a `read_iolog` list of several
logs, a compressed log, read_iolog_chunked, and a version-2 `wait`."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import cli

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")


def real_fio(folder: Path, job: str) -> subprocess.CompletedProcess[str]:
    (folder / "j.fio").write_text(job)
    return subprocess.run(
        [FIO or "fio", "--output-format=json", "j.fio"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
    )


def ours(folder: Path, job: str) -> subprocess.CompletedProcess[str]:
    (folder / "j.fio").write_text(job)
    return cli("run", "j.fio", "--device", "nullblk", "--output-format", "json", cwd=folder)


def v3_log(target: Path, entries: list[str]) -> str:
    f = str(target)
    lines = [f"0 {f} add", f"0 {f} open"]
    lines += [f"{10 * (i + 1)} {f} {e}" for i, e in enumerate(entries)]
    return "fio version 3 iolog\n" + "\n".join(lines) + f"\n999 {f} close\n"


def folders(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "fio", tmp_path / "flashpath"
    a.mkdir()
    b.mkdir()
    return a, b


@need_fio
def test_replay_scale_and_align_place_an_iologs_entries_as_fio(tmp_path: Path) -> None:
    """replay_scale=2, replay_align=4096 on an iolog: each offset halved,
    then rounded down to 4 KiB; an iolog's lengths stay as written (only a
    blktrace's are rounded up, blktrace.c t_bytes_align). The clat log's
    offset and size columns are the same, entry by entry."""
    target = tmp_path / "target"
    target.write_bytes(b"\0" * (1 << 20))
    log = v3_log(
        target, ["write 8192 4096", "write 13000 1024", "write 20480 3000", "read 3 512"]
    )
    job = (
        "[r]\nioengine=psync\nread_iolog=a.log\nreplay_scale=2\nreplay_align=4096\n"
        "write_lat_log=lat\nlog_offset=1\n"
    )
    logs = []
    for folder, run in zip(folders(tmp_path), (real_fio, ours), strict=True):
        (folder / "a.log").write_text(log)
        r = run(folder, job)
        assert r.returncode == 0, r.stderr
        rows = [line.split(", ") for line in (folder / "lat_clat.1.log").read_text().splitlines()]
        logs.append([(row[2], row[3], row[4]) for row in rows])
    assert logs[0] == logs[1] == [
        ("1", "4096", "4096"),
        ("1", "1024", "4096"),
        ("1", "3000", "8192"),
        ("0", "512", "0"),
    ]


@need_fio
def test_a_list_of_logs_gives_one_clone_the_first(tmp_path: Path) -> None:
    """read_iolog=a.log:b.log: fio gives numjobs clone i log i mod 2
    (get_name_by_idx on subjob_number), so one clone replays a.log; so does
    flashpath. With numjobs=2 fio's second clone replays b.log; flashpath,
    which replays one log per job section, refuses it, naming the job's
    line and what to write instead."""
    target = tmp_path / "target"
    target.write_bytes(b"\0" * (1 << 20))
    a = v3_log(target, ["write 0 4096", "write 4096 4096"])
    b = v3_log(target, ["read 0 4096", "read 4096 4096", "read 8192 4096"])
    runs = []
    for folder, run in zip(folders(tmp_path), (real_fio, ours), strict=True):
        (folder / "a.log").write_text(a)
        (folder / "b.log").write_text(b)
        r = run(folder, "[r]\nioengine=psync\nread_iolog=a.log:b.log\n")
        assert r.returncode == 0, r.stderr
        j = json.loads(r.stdout)["jobs"][0]
        runs.append((j["read"]["total_ios"], j["write"]["total_ios"]))
    assert runs[0] == runs[1] == (0, 2)
    two = "[r]\nioengine=psync\nread_iolog=a.log:b.log\nnumjobs=2\n"
    real = real_fio(tmp_path / "fio", two)
    assert [
        (j["read"]["total_ios"], j["write"]["total_ios"]) for j in json.loads(real.stdout)["jobs"]
    ] == [(0, 2), (3, 0)]
    r = ours(tmp_path / "flashpath", two)
    assert r.returncode != 0
    assert "j.fio:1" in r.stderr and "lists 2 logs for numjobs=2" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@need_fio
def test_a_compressed_log_is_refused_as_fio_fails_it(tmp_path: Path) -> None:
    """fio 3.33 reads no gzip-compressed iolog: it takes the first line for
    a version-1 log and fails the job (err=22). flashpath refuses it with
    one message saying what the file is."""
    target = tmp_path / "target"
    target.write_bytes(b"\0" * (1 << 20))
    log = gzip.compress(v3_log(target, ["write 0 4096"]).encode())
    fio_dir, our_dir = folders(tmp_path)
    for folder in (fio_dir, our_dir):
        (folder / "a.log.gz").write_bytes(log)
    job = "[r]\nioengine=psync\nread_iolog=a.log.gz\n"
    real = real_fio(fio_dir, job)
    assert "iolog version 1 is no longer supported" in real.stderr
    assert json.loads(real.stdout[real.stdout.index("{") :])["jobs"][0]["error"] == 22
    r = ours(our_dir, job)
    assert r.returncode != 0
    assert "a.log.gz" in r.stderr and "gzip-compressed file" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr


@need_fio
@pytest.mark.parametrize("chunked", ["0", "1"])
def test_read_iolog_chunked_replays_the_same_ios(tmp_path: Path, chunked: str) -> None:
    """read_iolog_chunked changes when fio reads the log, not what it
    replays: the same reads, writes and syncs either way."""
    target = tmp_path / "target"
    target.write_bytes(b"\0" * (1 << 20))
    log = v3_log(target, ["write 0 4096", "sync 0 0", "write 4096 4096", "read 0 4096"])
    got = []
    for folder, run in zip(folders(tmp_path), (real_fio, ours), strict=True):
        (folder / "a.log").write_text(log)
        r = run(folder, f"[r]\nioengine=psync\nread_iolog=a.log\nread_iolog_chunked={chunked}\n")
        assert r.returncode == 0, r.stderr
        j = json.loads(r.stdout)["jobs"][0]
        got.append(tuple(j[d]["total_ios"] for d in ("read", "write", "sync")))
    assert got[0] == got[1] == (1, 2, 1)


@need_fio
def test_a_version_2_wait_counts_from_the_runs_start(tmp_path: Path) -> None:
    """A version-2 `wait 300` holds the next I/O until 300 ms after fio's
    genesis, the run's start (iolog.c read_iolog_get: `ipo->delay >
    mtime_since_genesis()`), not the job's: after startdelay=500ms the time
    has passed and the second write goes at once, in both (fio's job runs
    a few ms; the bound, 250 ms, leaves room for a loaded machine and is
    still below the 300 ms a wait from the job's start would add). Without
    the delay flashpath's job starts at genesis and waits the 300 ms (fio's
    own job starts some ms after its genesis, so its runtime is that much
    shorter: not compared)."""
    target = tmp_path / "target"
    target.write_bytes(b"\0" * (1 << 20))
    f = str(target)
    log = (
        f"fio version 2 iolog\n{f} add\n{f} open\n{f} write 0 4096\n{f} wait 300 0\n"
        f"{f} write 4096 4096\n{f} close\n"
    )
    runtimes = []
    for folder, run in zip(folders(tmp_path), (real_fio, ours), strict=True):
        (folder / "a.log").write_text(log)
        r = run(folder, "[r]\nioengine=psync\nread_iolog=a.log\nstartdelay=500ms\n")
        assert r.returncode == 0, r.stderr
        j = json.loads(r.stdout)["jobs"][0]
        assert j["write"]["total_ios"] == 2
        runtimes.append(j["job_runtime"])
    assert runtimes[0] < 250 and runtimes[1] < 10, runtimes
    r = ours(tmp_path / "flashpath", "[r]\nioengine=psync\nread_iolog=a.log\n")
    assert r.returncode == 0, r.stderr
    assert 300 <= json.loads(r.stdout)["jobs"][0]["job_runtime"] <= 310
