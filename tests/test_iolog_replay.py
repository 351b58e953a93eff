"""Replaying a real fio iolog (fixtures/traces/fio-iolog-randrw, recorded and
replayed by fio 3.33 on the fixtures' VM) against fio's own replay.

The replay is paced by the log's timestamps: fio sleeps each gap after the
previous issue without reaping, and reaps one event per getevents call
(iodepth_batch_complete_max defaults to the min, 1), so the queue stays at
3-4 and each I/O's completion latency is about three gaps. That shape does
not depend on the device, so it is compared on the null device."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, cli

TRACE = FIXTURES / "traces" / "fio-iolog-randrw"


def _log_totals(log: Path) -> dict[str, tuple[int, int]]:
    totals: dict[str, list[int]] = {"read": [0, 0], "write": [0, 0]}
    lines = log.read_text().splitlines()
    assert lines[0] == "fio version 3 iolog"
    for line in lines[1:]:
        f = line.split()
        if f[2] in totals:
            totals[f[2]][0] += 1
            totals[f[2]][1] += int(f[4])
    return {k: (v[0], v[1]) for k, v in totals.items()}


@pytest.fixture(scope="module")
def replay() -> tuple[dict, dict]:
    out = cli("run", str(TRACE / "replay.fio"), "--device", "nullblk", "--output-format", "json")
    assert out.returncode == 0, out.stderr
    ours = json.loads(out.stdout)["jobs"][0]
    real = json.loads((TRACE / "replay.out.json").read_text())["jobs"][0]
    return ours, real


def test_every_logged_io_is_replayed_once(replay: tuple[dict, dict]) -> None:
    """Every logged I/O is issued and counted (total_ios); the ones still in
    flight when the log runs out are never reaped, as in fio (read_iolog_get
    sets td->done, and td_io_getevents reaps nothing after that), so their
    bytes and latencies are missing from the report: the real replay's
    53,248 read and 65,536 write bytes fewer than the log (traces/README.md),
    byte for byte, and one clat sample fewer per I/O left in flight."""
    ours, real = replay
    for ddir, (ios, nbytes) in _log_totals(TRACE / "trace.iolog").items():
        assert ours[ddir]["total_ios"] == ios == real[ddir]["total_ios"]
        assert ours[ddir]["io_bytes"] == real[ddir]["io_bytes"] < nbytes
        assert ours[ddir]["clat_ns"]["N"] == real[ddir]["clat_ns"]["N"] < ios


def test_queue_depth_and_latency_follow_the_pacing(replay: tuple[dict, dict]) -> None:
    ours, real = replay
    for bucket, pct in real["iodepth_level"].items():
        assert abs(ours["iodepth_level"][bucket] - pct) <= 2.0, (bucket, ours["iodepth_level"])
    for ddir in ("read", "write"):
        o, r = ours[ddir]["clat_ns"], real[ddir]["clat_ns"]
        assert abs(o["mean"] / r["mean"] - 1) < 0.15, (ddir, o["mean"], r["mean"])
        for p in ("10.000000", "50.000000", "90.000000"):
            assert abs(o["percentile"][p] / r["percentile"][p] - 1) < 0.2, (ddir, p)
    # The log spans 2.0 s; fio's wall time adds its sleeps' overshoot.
    assert 1990 <= ours["job_runtime"] <= real["job_runtime"]


def test_no_stall_replays_as_fast_as_the_device_allows(tmp_path: Path) -> None:
    job = tmp_path / "fast.fio"
    job.write_text(
        "[fast]\nioengine=libaio\ndirect=1\niodepth=4\nreplay_no_stall=1\n"
        f"read_iolog={TRACE / 'trace.iolog'}\n"
    )
    out = cli("run", str(job), "--device", "nullblk", "--output-format", "json")
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)["jobs"][0]
    assert j["read"]["total_ios"] == 555 and j["write"]["total_ios"] == 619
    assert j["job_runtime"] < 100


def test_replay_command_runs_the_job_fio_would() -> None:
    out = cli(
        "replay",
        str(TRACE / "trace.iolog"),
        "--device",
        "nullblk",
        "--iodepth",
        "4",
        "--output-format",
        "json",
    )
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)["jobs"][0]
    assert (j["read"]["total_ios"], j["write"]["total_ios"]) == (555, 619)
    # The header shows the log's directions and its largest I/O, as fio's.
    assert j["job options"]["read_iolog"].endswith("trace.iolog")
    header = cli("replay", str(TRACE / "trace.iolog"), "--device", "nullblk").stdout
    assert "rw=rw," in header and "4096B-64.0KiB" in header


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--format", "nope"], "unknown trace format 'nope'"),
        (["--format", "csv"], "needs a column mapping"),
        (["--remap", "sideways"], "--remap: remap 'sideways'"),
        (["--iodepth", "0"], "iodepth"),
    ],
)
def test_replay_command_refuses_what_it_cannot_read(args: list[str], needle: str) -> None:
    out = cli("replay", str(TRACE / "trace.iolog"), "--device", "nullblk", *args)
    assert out.returncode != 0 and needle in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_capture_writes_fios_logs_and_keeps_the_byte_rates(tmp_path: Path) -> None:
    """The capture job itself (rate_iops=1000 with bssplit and rwmixread=70,
    write_iolog, write_lat_log, log_offset): fio turns the IOPS cap into a
    byte cap at the smallest block size and switches to the direction that
    is due (rate_ddir), so both directions move the same bytes; it writes
    the I/O log and three latency logs named as fio names them."""
    out = cli(
        "run",
        str(TRACE / "job.fio"),
        "--device",
        "nullblk",
        "--output-format",
        "json",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    ours = json.loads(out.stdout)["jobs"][0]
    real = json.loads((TRACE / "capture.out.json").read_text())["jobs"][0]
    for ddir in ("read", "write"):
        assert abs(ours[ddir]["io_bytes"] / real[ddir]["io_bytes"] - 1) < 0.03, ddir
    total = ours["read"]["total_ios"] + ours["write"]["total_ios"]
    logs = {
        k: (tmp_path / f"trace_{k}.1.log").read_text().splitlines() for k in ("lat", "clat", "slat")
    }
    real_clat = (TRACE / "trace_clat.1.log").read_text().splitlines()
    assert all(len(v) == total for v in logs.values())
    times = []
    for lat, clat, slat in zip(logs["lat"], logs["clat"], logs["slat"], strict=True):
        fl, fc, fs = (line.split(", ") for line in (lat, clat, slat))
        assert len(fl) == len(real_clat[0].split(", ")) == 6
        assert int(fl[1]) == int(fc[1]) + int(fs[1])
        assert fl[2:] == fc[2:] == fs[2:]
        times.append(int(fl[0]))
    assert times == sorted(times) and times[-1] <= ours["job_runtime"]
    # The I/O log replays to the same I/Os.
    log = (tmp_path / "trace.iolog").read_text().splitlines()
    assert log[0] == "fio version 3 iolog" and log[-1].endswith(" close")
    replay = tmp_path / "replay.fio"
    replay.write_text("[r]\nioengine=libaio\ndirect=1\niodepth=4\nread_iolog=trace.iolog\n")
    again = cli("run", str(replay), "--device", "nullblk", "--output-format", "json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    j = json.loads(again.stdout)["jobs"][0]
    # Every I/O is issued again; the last ones, in flight when the log runs
    # out, are never reaped (as in fio), so their bytes are missing.
    entries = [line.split() for line in log[1:] if line.split()[2] in ("read", "write")]
    unreaped = sum(j[d]["total_ios"] - j[d]["clat_ns"]["N"] for d in ("read", "write"))
    assert 0 < unreaped < 4  # iodepth=4: at most three wait behind the last issue
    for ddir in ("read", "write"):
        assert j[ddir]["total_ios"] == ours[ddir]["total_ios"]
        tail = sum(int(e[4]) for e in entries[-unreaped:] if e[2] == ddir)
        assert j[ddir]["io_bytes"] == ours[ddir]["io_bytes"] - tail


def test_bw_and_iops_logs_follow_each_completion(tmp_path: Path) -> None:
    """Per-I/O bandwidth and IOPS logs (log_avg_msec=0): fio's
    add_bw_sample logs bytes * 10^6 / clat ns per completion, add_iops_sample
    logs 1, with the same time, direction and size as the clat log."""
    job = tmp_path / "logs.fio"
    job.write_text(
        "[j]\nioengine=libaio\ndirect=1\nrw=randrw\nbs=4k\niodepth=4\nsize=4m\n"
        "write_lat_log=t\nwrite_bw_log=t\nwrite_iops_log=t\n"
    )
    out = cli("run", str(job), "--device", "nullblk", "--output-format", "json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)["jobs"][0]
    logs = {k: (tmp_path / f"t_{k}.1.log").read_text().splitlines() for k in ("clat", "bw", "iops")}
    assert len(logs["bw"]) == len(logs["iops"]) == j["read"]["total_ios"] + j["write"]["total_ios"]
    for clat, bw, iops in zip(logs["clat"], logs["bw"], logs["iops"], strict=True):
        c, b, i = (line.split(", ") for line in (clat, bw, iops))
        assert len(b) == 5  # no log_offset: time, value, direction, size, priority
        assert b[0] == c[0] == i[0] and b[2:] == c[2:] == i[2:]
        assert int(b[1]) == int(c[3]) * 1_000_000 // int(c[1])
        assert i[1] == "1"


def test_averaged_logs_follow_fios_windows(tmp_path: Path) -> None:
    """log_avg_msec=100 over a 1 s run on null_blk (fixed device time):
    the clat log has a mean for each 100 ms window that a later sample
    closes, plus the final flush at the end (the real fio 3.33: 10 lines
    for 1 s), every mean equals the constant
    per-I/O clat; the bandwidth log has one KiB/s rate per period, their
    bytes add up to the job's, and the JSON bandwidth statistics use the
    same windows (the real fio: bw_samples 9 at 100 ms where it is 1
    without the log)."""
    job = tmp_path / "avg.fio"
    job.write_text(
        "[j]\nioengine=psync\ndirect=1\nrw=randread\nbs=4k\nsize=64m\ntime_based\n"
        "runtime=1\ncpus_allowed=0\nwrite_lat_log=t\nwrite_bw_log=t\nlog_avg_msec=100\n"
    )
    out = cli("run", str(job), "--device", "nullblk", "--output-format", "json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    read = json.loads(out.stdout)["jobs"][0]["read"]
    clat = [line.split(", ") for line in (tmp_path / "t_clat.1.log").read_text().splitlines()]
    assert len(clat) == 10  # nine windows closed by samples, the final flush
    assert [int(c[0]) for c in clat] == list(range(100, 1001, 100))
    assert {c[1] for c in clat} == {str(read["clat_ns"]["min"])}
    assert all(c[3] == "0" for c in clat)  # averaged entries carry no size
    bw = [line.split(", ") for line in (tmp_path / "t_bw.1.log").read_text().splitlines()]
    assert [int(b[0]) for b in bw] == list(range(100, 1001, 100))
    logged = sum(int(b[1]) for b in bw) * 1024 * 100 // 1000
    # Up to the truncation of each rate and the block that completes as
    # the run ends (after the last window).
    assert abs(logged - read["io_bytes"]) <= len(bw) * 1024 * 100 // 1000 + 4096
    assert read["bw_samples"] in (9, 10)


@pytest.mark.skipif(shutil.which("fio") is None, reason="the real fio is not installed")
def test_a_replay_writes_no_iolog_as_fio(tmp_path: Path) -> None:
    """write_iolog beside read_iolog: fio 3.33 writes no log (iolog.c
    init_iolog opens write_iolog only without read_iolog); run by the real
    fio (null engine, no data) and by flashpath, in folders of their own."""
    log = "fio version 2 iolog\n/f add\n/f open\n/f read 0 4096\n/f write 4096 4096\n/f close\n"
    job = "[r]\nioengine=null\nread_iolog=in.log\nwrite_iolog=out.log\n"
    for who in ("fio", "flashpath"):
        folder = tmp_path / who
        folder.mkdir()
        (folder / "in.log").write_text(log)
        (folder / "job.fio").write_text(job)
        if who == "fio":
            r = subprocess.run(
                ["fio", "--output-format=json", "job.fio"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=60,
            )
        else:
            r = cli("run", "job.fio", "--device", "nullblk", "--output-format", "json", cwd=folder)
        assert r.returncode == 0, (who, r.stderr)
        assert json.loads(r.stdout)["jobs"][0]["write"]["total_ios"] == 1, who
        assert sorted(p.name for p in folder.iterdir()) == ["in.log", "job.fio"], who
