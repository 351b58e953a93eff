"""Block traces in job files, side by side with the real fio 3.33 replaying
the same blktrace binary (fio's blktrace.c reads it under `read_iolog=`;
`replay_redirect` sends its I/O to a file under the test's folder, and the
null engine does no I/O at all).

The binaries are made here, record by record, as the kernel's blktrace
writes them (`struct blk_io_trace`, include/uapi/linux/blktrace_api.h):
the queue event `Q` of each I/O and its completion `C`."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, cli

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")

MAGIC = 0x65617407  # BLK_IO_TRACE_MAGIC | version 7
TA_QUEUE, TA_COMPLETE = 1, 8


def tc(bit: int) -> int:
    """A BLK_TC_* category bit, shifted into the action word (BLK_TC_ACT)."""
    return 1 << (bit + 16)


WRITE_Q = TA_QUEUE | tc(1) | tc(4)  # BLK_TC_WRITE | BLK_TC_QUEUE
WRITE_C = TA_COMPLETE | tc(1) | tc(7)  # BLK_TC_WRITE | BLK_TC_COMPLETE


def record(
    seq: int,
    time_ns: int,
    sector: int,
    nbytes: int,
    action: int,
    cpu: int = 0,
    big_endian: bool = False,
) -> bytes:
    # magic, sequence, time, sector, bytes, action, pid, device (8,16), cpu,
    # error, pdu_len
    return struct.pack(
        (">" if big_endian else "<") + "IIQQIIIIIHH",
        MAGIC,
        seq,
        time_ns,
        sector,
        nbytes,
        action,
        42,
        (8 << 20) | 16,
        cpu,
        0,
        0,
    )


def writes(
    n: int,
    t0: int = 1_000,
    gap: int = 10_000,
    first_sector: int = 0,
    cpu: int = 0,
    big_endian: bool = False,
) -> bytes:
    """`n` 4 KiB writes, one every `gap` ns, each completing 500 ns after
    its queue event."""
    out = b""
    for i in range(n):
        t, sector = t0 + i * gap, first_sector + 8 * i
        out += record(2 * i + 1, t, sector, 4096, WRITE_Q, cpu, big_endian)
        out += record(2 * i + 2, t + 500, sector, 4096, WRITE_C, cpu, big_endian)
    return out


def real_fio(job: Path) -> dict:
    out = subprocess.run(
        [FIO or "fio", "--output-format=json", str(job)],
        capture_output=True,
        text=True,
        cwd=job.parent,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["jobs"][0]


def ours(job: Path) -> dict:
    out = cli("run", str(job), "--device", "nullblk", "--output-format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["jobs"][0]


@need_fio
@pytest.mark.parametrize(
    "engine,iodepth", [("null", 4), ("null", 128), ("libaio", 8), ("psync", 1)]
)
def test_the_ios_in_flight_when_the_trace_ends_are_counted_but_not_reaped(
    tmp_path: Path, engine: str, iodepth: int
) -> None:
    """683 writes of 4 KiB: fio issues and counts all 683 but reports the
    bytes of those still in flight when the trace runs out as never done
    (read_iolog_get sets td->done, after which td_io_getevents reaps
    nothing): 4,096 bytes fewer on the null engine at any iodepth past 1
    (its queue is busy until the last commit's event is reaped, so one is in
    flight), iodepth - 1 I/Os fewer on libaio, none on a synchronous engine.
    flashpath reports the same bytes and clat samples."""
    (tmp_path / "w.blktrace.0").write_bytes(writes(683))
    (tmp_path / "target").write_bytes(b"")
    job = tmp_path / "j.fio"
    job.write_text(
        f"[r]\nioengine={engine}\niodepth={iodepth}\nread_iolog=w.blktrace.0\n"
        f"replay_redirect={tmp_path / 'target'}\n"
    )
    real, sim = real_fio(job), ours(job)
    w_real, w_sim = real["write"], sim["write"]
    assert w_sim["total_ios"] == w_real["total_ios"] == 683
    assert w_sim["io_bytes"] == w_real["io_bytes"]
    assert w_sim["clat_ns"]["N"] == w_real["clat_ns"]["N"]
    lost = {"null": 1, "libaio": iodepth - 1, "psync": 0}[engine]
    assert w_real["io_bytes"] == (683 - lost) * 4096


TA_BACKMERGE = 3
READ_C = TA_COMPLETE | tc(0) | tc(7)  # BLK_TC_READ | BLK_TC_COMPLETE
WRITE_M = TA_BACKMERGE | tc(1) | tc(4)  # a write bio merged into a request
FLUSH = tc(2)  # BLK_TC_FLUSH: the bio asked for a preflush


def merged_writes(groups: int) -> bytes:
    """`groups` times: three 4 KiB write bios queued, the third back-merged
    into the second's request, one completion: fio's probe counts 3 - 1 = 2
    in flight before each completion."""
    out, seq, t = b"", 1, 1_000
    for i in range(groups):
        for j in range(3):
            out += record(seq, t, 24 * i + 8 * j, 4096, WRITE_Q)
            seq, t = seq + 1, t + 100
        out += record(seq, t, 24 * i + 8, 4096, WRITE_M)
        out += record(seq + 1, t + 100, 24 * i, 12288, WRITE_C)
        seq, t = seq + 2, t + 200
    return out


def four_reads_in_flight(groups: int, t0: int, seq0: int) -> bytes:
    out, seq, t = b"", seq0, t0
    for i in range(groups):
        for j in range(4):
            out += record(seq, t, 4096 + 32 * i + 8 * j, 4096, READ_Q)
            seq, t = seq + 1, t + 100
        out += record(seq, t, 4096 + 32 * i, 16384, READ_C)
        seq, t = seq + 1, t + 100
    return out


@need_fio
@pytest.mark.parametrize("engine", ["null", "libaio"])
@pytest.mark.parametrize("mix", ["writes", "reads and writes"])
def test_without_iodepth_a_trace_job_runs_at_the_depth_fio_probes(
    tmp_path: Path, engine: str, mix: str
) -> None:
    """No iodepth in the job: fio 3.33 takes the trace's own depth
    (blktrace.c read_blktrace: per direction, +1 per queue event, -1 per
    merge, the most before each completion; the job's iodepth is the
    largest): 2 for the merged writes, 4 once four reads are queued
    together. That depth decides how many I/Os are still in flight, never
    reaped, when the log ends: one on the null engine (the 4,096 bytes
    fio's replay of 683 writes moved fewer than flashpath's, which ran at
    iodepth 1), depth - 1 on libaio. fio reports the depth as
    latency_depth; flashpath reports the same depth, bytes and samples."""
    trace = merged_writes(5)
    if mix != "writes":
        trace += four_reads_in_flight(2, t0=100_000, seq0=1_000)
    (tmp_path / "t.blktrace.0").write_bytes(trace)
    with (tmp_path / "target").open("wb") as f:
        f.truncate(16 << 20)
    job = tmp_path / "j.fio"
    job.write_text(
        f"[r]\nioengine={engine}\nread_iolog=t.blktrace.0\nreplay_redirect={tmp_path / 'target'}\n"
    )
    real, sim = real_fio(job), ours(job)
    depth = 2 if mix == "writes" else 4
    assert real["latency_depth"] == sim["latency_depth"] == depth
    for d in ("read", "write"):
        for key in ("total_ios", "io_bytes"):
            assert sim[d][key] == real[d][key], (d, key)
        assert sim[d]["clat_ns"]["N"] == real[d]["clat_ns"]["N"], d
    assert real["write"]["total_ios"] == 15
    # The last I/Os issued are the reads when there are any: they are the
    # ones left in flight.
    last = "write" if mix == "writes" else "read"
    lost = {"null": 1, "libaio": depth - 1}[engine]
    assert real[last]["io_bytes"] == (real[last]["total_ios"] - lost) * 4096


@need_fio
def test_a_write_with_a_preflush_is_a_sync_to_fio(tmp_path: Path) -> None:
    """Six 4 KiB writes, every other one with a preflush (BLK_TC_FLUSH and
    data: blkparse's `Q FWS 8 + 8`), and one flush of no data: fio's
    queue_trace tests the flush category before handle_trace_fs, so it
    replays the three preflush writes and the flush as four syncs and
    their data not at all (3 writes, 12,288 bytes). A job file replays the
    same writes and the same four syncs (fio's sync section: total_ios and
    lat_ns N; each sync marks the IO depths line as an I/O does).
    `flashpath replay` keeps a preflush write a write, as blkparse counts
    it ("Writes Queued": 6), and replays the one flush as a sync."""
    out, seq, t = b"", 1, 1_000
    for i in range(6):
        flush = FLUSH if i % 2 else 0
        out += record(seq, t, 8 * i, 4096, WRITE_Q | flush)
        out += record(seq + 1, t + 100, 8 * i, 4096, WRITE_C | flush)
        seq, t = seq + 2, t + 200
    out += record(seq, t, 0, 0, WRITE_Q | FLUSH) + record(seq + 1, t + 100, 0, 0, WRITE_C | FLUSH)
    (tmp_path / "t.blktrace.0").write_bytes(out)
    with (tmp_path / "target").open("wb") as f:
        f.truncate(1 << 20)
    job = tmp_path / "j.fio"
    job.write_text(
        f"[r]\nioengine=psync\nread_iolog=t.blktrace.0\nreplay_redirect={tmp_path / 'target'}\n"
    )
    real = real_fio(job)
    run = cli("run", str(job), "--device", "nullblk", "--output-format", "json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    sim, note = doc["jobs"][0], doc["flashpath"]["trace"][0]
    assert (real["write"]["total_ios"], real["write"]["io_bytes"]) == (3, 12288)
    assert (sim["write"]["total_ios"], sim["write"]["io_bytes"]) == (3, 12288)
    assert real["sync"]["total_ios"] == sim["sync"]["total_ios"] == 4
    assert real["sync"]["lat_ns"]["N"] == sim["sync"]["lat_ns"]["N"] == 4
    assert note["flushes"] == note["flushes_replayed_as_syncs"] == 4
    assert real["iodepth_level"] == sim["iodepth_level"]
    out = cli(
        "replay", str(tmp_path / "t.blktrace.0"), "--device", "nullblk", "--output-format", "json"
    )
    assert out.returncode == 0, out.stderr
    replayed = json.loads(out.stdout)
    assert replayed["jobs"][0]["write"]["total_ios"] == 6
    assert replayed["flashpath"]["trace"][0]["flushes"] == 1
    assert replayed["flashpath"]["trace"][0]["flushes_replayed_as_syncs"] == 1
    assert replayed["jobs"][0]["sync"]["total_ios"] == 1


@need_fio
def test_a_per_cpu_file_in_a_job_file_is_read_alone_as_fio_reads_it(tmp_path: Path) -> None:
    """fio's read_iolog=sdb.blktrace.0 opens that one file (blktrace.c
    init_blktrace_read), whatever sdb.blktrace.1 holds; flashpath's job
    file does the same. `flashpath replay` merges the per-CPU files by
    default (as blkparse -i sdb reads them) and replays the named one alone
    with --per-cpu named."""
    (tmp_path / "sdb.blktrace.0").write_bytes(writes(5, t0=1_000))
    (tmp_path / "sdb.blktrace.1").write_bytes(writes(3, t0=6_000, first_sector=4096, cpu=1))
    (tmp_path / "target").write_bytes(b"")
    job = tmp_path / "j.fio"
    job.write_text(
        f"[r]\nioengine=psync\nread_iolog=sdb.blktrace.0\nreplay_redirect={tmp_path / 'target'}\n"
    )
    assert real_fio(job)["write"]["total_ios"] == ours(job)["write"]["total_ios"] == 5

    def replay(*extra: str) -> int:
        out = cli(
            "replay",
            str(tmp_path / "sdb.blktrace.0"),
            "--device",
            "nullblk",
            "--output-format",
            "json",
            *extra,
        )
        assert out.returncode == 0, out.stderr
        return int(json.loads(out.stdout)["jobs"][0]["write"]["total_ios"])

    assert replay() == replay("--per-cpu", "merge") == 8
    assert replay("--per-cpu", "named") == 5
    out = cli("replay", str(tmp_path / "sdb.blktrace.0"), "--device", "nullblk", "--per-cpu", "x")
    assert out.returncode != 0 and "--per-cpu" in out.stderr and "Traceback" not in out.stderr


READ_Q = TA_QUEUE | tc(0) | tc(4)  # BLK_TC_READ | BLK_TC_QUEUE


@need_fio
def test_a_skipped_event_takes_its_wait_with_it(tmp_path: Path) -> None:
    """Reads at 0 and 200 ms with a write queued at 100 ms between them:
    with replay_skip=write, fio's queue_trace still takes the write's time
    (delay_since_ttime) before dropping it, so the second read waits only
    the 100 ms since the write and the job runs about 100 ms, not 200."""
    ms = 1_000_000
    trace = (
        record(1, 1_000, 0, 4096, READ_Q)
        + record(2, 1_000 + 100 * ms, 64, 4096, WRITE_Q)
        + record(3, 1_000 + 200 * ms, 128, 4096, READ_Q)
    )
    (tmp_path / "t.blktrace.0").write_bytes(trace)
    # Reads need bytes to read: a sparse 1 MiB file.
    with (tmp_path / "target").open("wb") as f:
        f.truncate(1 << 20)
    job = tmp_path / "j.fio"
    job.write_text(
        "[r]\nioengine=psync\nread_iolog=t.blktrace.0\nreplay_skip=write\n"
        f"replay_redirect={tmp_path / 'target'}\n"
    )
    real, sim = real_fio(job), ours(job)
    assert real["read"]["total_ios"] == sim["read"]["total_ios"] == 2
    assert real["write"]["total_ios"] == sim["write"]["total_ios"] == 0
    for j in (real, sim):
        assert 100 <= j["job_runtime"] < 150, j["job_runtime"]


def _times(merged: Path) -> list[tuple[int, int]]:
    """Each merged record's time and action (all bare: pdu_len 0)."""
    data = merged.read_bytes()
    assert len(data) % 48 == 0
    recs = [struct.unpack_from("<IIQQIIIIIHH", data, i) for i in range(0, len(data), 48)]
    assert all(r[0] == MAGIC and r[10] == 0 for r in recs)
    return [(r[2], r[5]) for r in recs]


def test_merge_blktrace_file_merges_as_fios_blktrace_c_means_it(tmp_path: Path) -> None:
    """merge_blktrace_file: read_iolog's files (':'-separated) merged into
    one before the run (blktrace.c merge_blktrace_iologs), the queue events
    only, earliest first, file i's times (t + iter * length) * scalar / 100
    where length is the time of its last record; the job replays the merge."""
    (tmp_path / "a.bin").write_bytes(writes(5, t0=1_000))
    (tmp_path / "b.bin").write_bytes(writes(3, t0=6_000, first_sector=4096, cpu=1))
    job = tmp_path / "j.fio"
    base = "[m]\nioengine=psync\nread_iolog=a.bin:b.bin\nmerge_blktrace_file=merged.bin\n"
    job.write_text(base)
    assert ours(job)["write"]["total_ios"] == 8
    a = [1_000 + 10_000 * i for i in range(5)]
    b = [6_000 + 10_000 * i for i in range(3)]
    assert _times(tmp_path / "merged.bin") == [(t, WRITE_Q) for t in sorted(a + b)]
    # The first file at half time, the second twice: its second pass starts
    # after its last record (a completion, 500 ns after its last queue),
    # and that completion, still in fio's cursor when the pass ends, is
    # written once more at its own time (the replay skips it).
    job.write_text(base + "merge_blktrace_scalars=50:100\nmerge_blktrace_iters=1:2\n")
    assert ours(job)["write"]["total_ios"] == 11
    length_b = b[-1] + 500
    want = [t * 50 // 100 for t in a] + b + [t + length_b for t in b]
    got = _times(tmp_path / "merged.bin")
    assert [t for t, act in got if act == WRITE_Q] == sorted(want)
    assert [t for t, act in got if act != WRITE_Q] == [length_b]
    assert got[[t for t, _ in got].index(length_b)] == (length_b, WRITE_C)


MERGES = FIXTURES / "traces" / "fio-merge"


@pytest.mark.parametrize(
    "name,files,extra",
    [
        ("plain", "a.bin:b.bin", ""),
        ("iters", "a.bin:b.bin", "merge_blktrace_scalars=50:100\nmerge_blktrace_iters=1:2\n"),
        (
            "three",
            "a.bin:b.bin:c.bin",
            "merge_blktrace_scalars=200:50:100\nmerge_blktrace_iters=2:3:1\n",
        ),
    ],
)
def test_the_merged_file_is_the_fixed_fios_byte_for_byte(
    tmp_path: Path, name: str, files: str, extra: str
) -> None:
    """The merged file flashpath writes is, byte for byte, the one fio
    writes with its merge fixed (commit c55d29ef, built from fio's source
    after 3.39, its cursors zeroed: tests/fixtures/traces/fio-merge/README.md
    says how each was made): queue events only, times (t + iter * length)
    * scalar / 100, a big-endian input swapped to this machine's order, and
    the completion a non-final pass ends on written once more."""
    (tmp_path / "a.bin").write_bytes(writes(5, t0=1_000))
    (tmp_path / "b.bin").write_bytes(writes(3, t0=6_000, first_sector=4096, cpu=1))
    (tmp_path / "c.bin").write_bytes(
        writes(4, t0=3_000, gap=7_000, first_sector=8192, cpu=2, big_endian=True)
    )
    job = tmp_path / "j.fio"
    job.write_text(
        f"[m]\nioengine=psync\nread_iolog={files}\nmerge_blktrace_file=merged.bin\n{extra}"
    )
    out = cli("run", str(job), "--device", "nullblk", "--parse-only")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "merged.bin").read_bytes() == (MERGES / f"{name}.merged.bin").read_bytes()


@pytest.mark.parametrize(
    "extra,needle",
    [
        (
            "merge_blktrace_scalars=50\n",
            "j.fio:1: job 'm': merge_blktrace_scalars(1) != nr_logs(2)",
        ),
        ("merge_blktrace_iters=1:2:3\n", "merge_blktrace_iters(3) != nr_logs(2)"),
    ],
)
def test_merge_lists_of_another_length_are_refused(tmp_path: Path, extra: str, needle: str) -> None:
    (tmp_path / "a.bin").write_bytes(writes(2))
    (tmp_path / "b.bin").write_bytes(writes(2))
    job = tmp_path / "j.fio"
    job.write_text(
        "[m]\nioengine=psync\nread_iolog=a.bin:b.bin\nmerge_blktrace_file=out.bin\n" + extra
    )
    out = cli("run", str(job), "--device", "nullblk")
    assert out.returncode != 0 and needle in out.stderr, out.stderr
    assert not (tmp_path / "out.bin").exists()


def test_a_merge_of_what_is_no_blktrace_or_onto_its_input_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(writes(2))
    (tmp_path / "t.iolog").write_text("fio version 3 iolog\n")
    job = tmp_path / "j.fio"
    job.write_text("[m]\nioengine=psync\nread_iolog=a.bin:t.iolog\nmerge_blktrace_file=o.bin\n")
    out = cli("run", str(job), "--device", "nullblk")
    assert out.returncode != 0 and "t.iolog: job 'm': merge_blktrace_file: file is not a " in (
        out.stderr
    ), out.stderr
    before = (tmp_path / "a.bin").read_bytes()
    job.write_text("[m]\nioengine=psync\nread_iolog=a.bin\nmerge_blktrace_file=a.bin\n")
    out = cli("run", str(job), "--device", "nullblk")
    assert out.returncode != 0 and "would destroy it" in out.stderr, out.stderr
    assert (tmp_path / "a.bin").read_bytes() == before


@need_fio
def test_fio_333_itself_never_merges(tmp_path: Path) -> None:
    """Why the merge is checked against fio's source, not its output: fio
    3.33's read_trace reads 8 bytes into the record pointer, so the merge
    stops at once ("fio: iolog short read"), the merged file stays empty,
    and the job replays read_iolog's first file (fixed in fio commit
    c55d29ef)."""
    version = subprocess.run([FIO or "fio", "--version"], capture_output=True, text=True)
    if version.stdout.strip() != "fio-3.33":
        pytest.skip(f"this is about fio 3.33, not {version.stdout.strip()}")
    (tmp_path / "a.bin").write_bytes(writes(5))
    (tmp_path / "b.bin").write_bytes(writes(3, first_sector=4096))
    (tmp_path / "target").write_bytes(b"")
    job = tmp_path / "j.fio"
    job.write_text(
        "[m]\nioengine=null\nread_iolog=a.bin:b.bin\nmerge_blktrace_file=merged.bin\n"
        f"replay_redirect={tmp_path / 'target'}\n"
    )
    out = subprocess.run(
        [FIO or "fio", "--output-format=json", str(job)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert "fio: iolog short read" in out.stderr
    assert (tmp_path / "merged.bin").read_bytes() == b""
    assert json.loads(out.stdout)["jobs"][0]["write"]["total_ios"] == 5


SECOND = 1_000_000_000


def three_reads_a_second_apart(tmp_path: Path, iodepth: int) -> Path:
    """A libaio job replaying a blktrace of three 4 KiB reads 1 s apart onto
    a 1 MiB file at `iodepth`."""
    trace = b"".join(record(i + 1, 1_000 + i * SECOND, 8 * i, 4096, READ_Q) for i in range(3))
    (tmp_path / "t.blktrace.0").write_bytes(trace)
    with (tmp_path / "target").open("wb") as f:
        f.truncate(1 << 20)
    job = tmp_path / "j.fio"
    job.write_text(
        f"[r]\nioengine=libaio\niodepth={iodepth}\nread_iolog=t.blktrace.0\n"
        f"replay_redirect={tmp_path / 'target'}\n"
    )
    return job


@need_fio
def test_fio_333_sleeps_between_paced_ios_without_reaping(tmp_path: Path) -> None:
    """Three reads one second apart at iodepth 2 (libaio): fio 3.33 sleeps
    each gap without reaping (iolog_delay), so the first two are reaped
    only when the queue is full, each with a clat of about the 1 s it
    waited, and the third is still in flight when the log ends, never
    reaped: 3 reads issued, 8,192 bytes, 2 clat samples near 1 s.

    The real fio sleeps in wall-clock time and carries an oversleep into the
    next gap (iolog.c iolog_delay: td->time_offset is subtracted from the
    next delay), so its clat may fall a little short of 1 s as well as
    over it (CI measured 999,876,757 ns), and under load it oversleeps
    (1,011,291,241 ns at a load average of 10 on 2 cores): its clat is held
    from 10 ms short to 250 ms over the second, as the other real-fio timing
    tests hold a wall-clock sleep. The simulated sleep is exact, so
    flashpath's clat is held to within 1% over the full second."""
    job = three_reads_a_second_apart(tmp_path, iodepth=2)
    real, sim = real_fio(job)["read"], ours(job)["read"]
    assert real["total_ios"] == sim["total_ios"] == 3
    assert real["io_bytes"] == sim["io_bytes"] == 8192
    assert real["clat_ns"]["N"] == sim["clat_ns"]["N"] == 2
    assert 0.99 * SECOND <= real["clat_ns"]["min"] <= real["clat_ns"]["max"] < 1.25 * SECOND
    assert SECOND <= sim["clat_ns"]["min"] <= sim["clat_ns"]["max"] < 1.01 * SECOND


@need_fio
def test_replay_scale_and_align_place_each_io_as_fio(tmp_path: Path) -> None:
    """replay_scale=2 and replay_align=4096 on writes of 4096, 1024, 3000
    and 512 bytes at sectors 1, 9, 1000 and 77777: fio divides each byte
    offset by 2 and rounds it down to 4096 (blktrace.c store_ipo,
    ipo_bytes_align) and rounds each length up to 4096 (t_bytes_align).
    The per-I/O latency logs (log_offset=1) of the real fio and flashpath
    list the same directions, sizes and offsets."""
    spec = [(1, 4096), (9, 1024), (1000, 3000), (77777, 512)]
    trace = b"".join(
        record(i + 1, 1_000 + i * 1_000, s, n, WRITE_Q) for i, (s, n) in enumerate(spec)
    )
    (tmp_path / "t.blktrace.0").write_bytes(trace)
    with (tmp_path / "target").open("wb") as f:
        f.truncate(64 << 20)
    job = tmp_path / "j.fio"
    job.write_text(
        "[r]\nioengine=psync\nread_iolog=t.blktrace.0\nreplay_scale=2\nreplay_align=4096\n"
        f"replay_redirect={tmp_path / 'target'}\nwrite_lat_log=lat\nlog_offset=1\n"
    )

    def logged() -> list[tuple[str, ...]]:
        lines = (tmp_path / "lat_lat.1.log").read_text().splitlines()
        (tmp_path / "lat_lat.1.log").unlink()
        return [tuple(f.strip() for f in line.split(",")[2:5]) for line in lines]

    real_fio(job)
    real = logged()
    out = cli("run", str(job), "--device", "nullblk", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert logged() == real
    assert [int(r[2]) for r in real] == [0, 0, 253952, 19910656]


@need_fio
def test_replay_time_scale_shortens_the_waits_as_fio(tmp_path: Path) -> None:
    """Three reads 100 ms apart with replay_time_scale=200: fio waits each
    gap times 100 / 200 (iolog.c delay_since_ttime), so both run about
    100 ms, not 200."""
    ms = 1_000_000
    trace = b"".join(record(i + 1, 1_000 + i * 100 * ms, 8 * i, 4096, READ_Q) for i in range(3))
    (tmp_path / "t.blktrace.0").write_bytes(trace)
    with (tmp_path / "target").open("wb") as f:
        f.truncate(1 << 20)
    job = tmp_path / "j.fio"
    job.write_text(
        "[r]\nioengine=psync\nread_iolog=t.blktrace.0\nreplay_time_scale=200\n"
        f"replay_redirect={tmp_path / 'target'}\n"
    )
    for j in (real_fio(job), ours(job)):
        assert j["read"]["total_ios"] == 3
        assert 100 <= j["job_runtime"] < 150, j["job_runtime"]


@need_fio
def test_a_direction_with_no_bytes_reaped_has_no_runtime(tmp_path: Path) -> None:
    """Three reads 1 s apart at iodepth 8: all are in flight when the log
    ends, none is reaped, so fio never adds the direction's runtime
    (backend.c: update_runtime only for a direction with io_bytes): read
    runtime 0 and 0 IOPS, while the job ran its 2 s."""
    job = three_reads_a_second_apart(tmp_path, iodepth=8)
    for j in (real_fio(job), ours(job)):
        r = j["read"]
        assert (r["total_ios"], r["io_bytes"], r["runtime"], r["iops"]) == (3, 0, 0, 0.0)
        assert 2000 <= j["job_runtime"] < 2100
