"""Syncs in replayed logs and traces, side by side with the real fio 3.33.

fio replays an iolog's `sync` / `datasync` entry (iolog.c read_iolog2:
DDIR_SYNC, DDIR_DATASYNC) and a blktrace flush (blktrace.c
handle_trace_flush: DDIR_SYNC) as the engine's fsync / fdatasync of the
file, paced as an I/O. Its report: the sync section's `lat_ns` holds both
kinds (stat.c add_sync_clat_sample), `total_ios` only the fsyncs
(`total_io_u[DDIR_SYNC]`), and each sync marks the IO depths line as an I/O
does (ioengines.c td_io_queue: io_u_mark_depth), whose shares are over the
reads, writes and trims alone, so they pass 100%. Counts and depth shares
are compared exactly; the sync's latency is not (fio's fsync of a tmpfs
file against flashpath's flush of the simulated device)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from test_trace_fio import FLUSH, WRITE_C, WRITE_Q, record

from conftest import cli

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")


def both(job: Path) -> tuple[dict, dict]:
    """The job's JSON from the real fio and from flashpath (null device)."""
    real = subprocess.run(
        [FIO or "fio", "--output-format=json", str(job)],
        capture_output=True,
        text=True,
        cwd=job.parent,
        timeout=120,
    )
    assert real.returncode == 0, real.stderr
    ours = cli("run", str(job), "--device", "nullblk", "--output-format", "json")
    assert ours.returncode == 0, ours.stderr
    return json.loads(real.stdout)["jobs"][0], json.loads(ours.stdout)["jobs"][0]


def iolog(target: Path) -> str:
    """Three writes, two fsyncs and a fdatasync between them, one read."""
    f = str(target)
    return (
        "fio version 3 iolog\n"
        f"0 {f} add\n0 {f} open\n"
        f"10 {f} write 0 4096\n"
        f"20 {f} write 4096 4096\n"
        f"30 {f} sync 0 0\n"
        f"40 {f} write 8192 4096\n"
        f"50 {f} datasync 0 0\n"
        f"60 {f} sync 0 0\n"
        f"70 {f} read 0 4096\n"
        f"80 {f} close\n"
    )


@need_fio
@pytest.mark.parametrize("engine", ["psync", "libaio", "null"])
def test_an_iologs_syncs_are_replayed_as_fios(tmp_path: Path, engine: str) -> None:
    """Two fsyncs and a fdatasync: fio's sync total_ios is 2, its sync
    lat_ns has 3 samples, and IO depths shows 1=175% (4 I/Os, 7 marks).
    `replay_skip` does not apply to an iolog in fio 3.33 (only blktrace.c
    reads it): with `replay_skip=write,sync` both replay everything."""
    target = tmp_path / "target"
    target.write_bytes(b"\0" * (1 << 20))
    (tmp_path / "s.iolog").write_text(iolog(target))
    for extra in ("", "replay_skip=write,sync\n"):
        job = tmp_path / "j.fio"
        job.write_text(f"[r]\nioengine={engine}\nread_iolog=s.iolog\n{extra}")
        real, sim = both(job)
        for d in ("read", "write"):
            assert sim[d]["total_ios"] == real[d]["total_ios"], (d, extra)
        assert (real["write"]["total_ios"], real["read"]["total_ios"]) == (3, 1)
        assert sim["sync"]["total_ios"] == real["sync"]["total_ios"] == 2
        assert sim["sync"]["lat_ns"]["N"] == real["sync"]["lat_ns"]["N"] == 3
        assert sim["iodepth_level"] == real["iodepth_level"]
        assert real["iodepth_level"]["1"] == 175.0


@need_fio
def test_the_normal_output_counts_the_fsyncs_in_issued_rwts(tmp_path: Path) -> None:
    """fio's `issued rwts: total=R,W,T,S` line prints total_io_u[DDIR_SYNC]:
    the two fsyncs, not the fdatasync."""
    target = tmp_path / "target"
    target.write_bytes(b"\0" * (1 << 20))
    (tmp_path / "s.iolog").write_text(iolog(target))
    job = tmp_path / "j.fio"
    job.write_text("[r]\nioengine=psync\nread_iolog=s.iolog\n")
    real = subprocess.run(
        [FIO or "fio", str(job)], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    ours = cli("run", str(job), "--device", "nullblk")
    assert real.returncode == 0 and ours.returncode == 0, (real.stderr, ours.stderr)

    def issued(text: str) -> str:
        return next(
            line.split(":", 1)[1].split()[0] for line in text.splitlines() if "issued rwts" in line
        )

    assert issued(real.stdout) == issued(ours.stdout) == "total=1,3,0,2"


@need_fio
def test_fsync_n_marks_its_syncs_in_the_io_depths_line(tmp_path: Path) -> None:
    """fsync=2 on psync, 16 writes: 7 syncs (none after the last write),
    and IO depths 1=143.75% (23 marks over 16 writes), as fio prints it."""
    target = tmp_path / "target"
    job = tmp_path / "j.fio"
    job.write_text(f"[w]\nioengine=psync\nfilename={target}\nsize=64k\nrw=write\nfsync=2\n")
    real, sim = both(job)
    assert sim["write"]["total_ios"] == real["write"]["total_ios"] == 16
    assert sim["sync"]["total_ios"] == real["sync"]["total_ios"] == 7
    assert sim["iodepth_level"] == real["iodepth_level"]
    assert real["iodepth_level"]["1"] == 143.75


def flush_trace() -> bytes:
    """Four 4 KiB writes, a flush of no data after the second and after the
    fourth (blkparse's `Q FWFS`), each with its completion."""
    out, seq, t = b"", 1, 1_000
    for i in range(4):
        out += record(seq, t, 8 * i, 4096, WRITE_Q) + record(seq + 1, t + 100, 8 * i, 4096, WRITE_C)
        seq, t = seq + 2, t + 1_000
        if i % 2:
            out += record(seq, t, 0, 0, WRITE_Q | FLUSH)
            out += record(seq + 1, t + 100, 0, 0, WRITE_C | FLUSH)
            seq, t = seq + 2, t + 1_000
    return out


@need_fio
@pytest.mark.parametrize("skip", ["", "sync"])
def test_a_blktrace_flush_is_a_sync_unless_replay_skip_drops_it(tmp_path: Path, skip: str) -> None:
    """Two flushes among four writes: fio replays them as two syncs; with
    `replay_skip=sync` as none (blktrace.c handle_trace_flush returns
    early). flashpath's job file replays the same; `flashpath replay`
    replays the flushes as syncs and says how many."""
    (tmp_path / "t.blktrace.0").write_bytes(flush_trace())
    target = tmp_path / "target"
    target.write_bytes(b"\0" * (1 << 20))
    job = tmp_path / "j.fio"
    job.write_text(
        f"[r]\nioengine=psync\nread_iolog=t.blktrace.0\nreplay_redirect={target}\n"
        + (f"replay_skip={skip}\n" if skip else "")
    )
    real, sim = both(job)
    syncs = 0 if skip else 2
    assert sim["write"]["total_ios"] == real["write"]["total_ios"] == 4
    assert sim["sync"]["total_ios"] == real["sync"]["total_ios"] == syncs
    assert sim["sync"]["lat_ns"]["N"] == real["sync"]["lat_ns"]["N"] == syncs
    assert sim["iodepth_level"] == real["iodepth_level"]
    if skip:
        return
    out = cli(
        "replay", str(tmp_path / "t.blktrace.0"), "--device", "nullblk", "--output-format", "json"
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    note = doc["flashpath"]["trace"][0]
    assert (note["flushes"], note["flushes_replayed_as_syncs"]) == (2, 2)
    assert doc["jobs"][0]["sync"]["total_ios"] == 2
    assert doc["jobs"][0]["write"]["total_ios"] == 4
    text = cli("replay", str(tmp_path / "t.blktrace.0"), "--device", "nullblk")
    assert "2 flushes replayed as syncs" in text.stderr
