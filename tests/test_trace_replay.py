"""`flashpath replay` on the real block traces in fixtures/traces (their
SOURCES.md says where each came from): the format is detected, every I/O
the trace queued is simulated, the recorded latencies come back beside the
simulated ones, and bad input is one message naming the file and the
record or line."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from conftest import FIXTURES, cli

TRACES = FIXTURES / "traces"
PROFILES = Path(__file__).resolve().parent.parent / "profiles"
BIN = TRACES / "blktrace_bin" / "blktrace_viewer_sample.blktrace.0"


def _blkparse_queued(text: str) -> tuple[int, int]:
    """blkparse's own summary of this file: reads queued, KiB."""
    for line in text.splitlines():
        if line.strip().startswith("Reads Queued:"):
            f = line.replace(",", " ").replace("KiB", " ").split()
            return int(f[2]), int(f[3])
    raise AssertionError("no summary")


def test_a_blktrace_binary_replays_with_recorded_latency(tmp_path: Path) -> None:
    lat = tmp_path / "lat.csv"
    out = cli(
        "replay",
        str(BIN),
        "--device",
        "nullblk",
        "--remap",
        "wrap",
        "--output-format",
        "json",
        "--output",
        str(tmp_path / "out.json"),
        "--lat-csv",
        str(lat),
    )
    assert out.returncode == 0, out.stderr
    j = json.loads((tmp_path / "out.json").read_text())
    text = (TRACES / "blkparse" / "regen_blktrace_viewer_sample.pipe-mode.blkparse.txt").read_text()
    n, kib = _blkparse_queued(text)
    assert j["jobs"][0]["read"]["total_ios"] == n
    assert j["jobs"][0]["read"]["io_bytes"] == kib * 1024
    t = j["flashpath"]["trace"][0]
    assert t["format"] == "blktrace" and t["recorded_ios_with_completion"] == n
    assert "recorded   simulated" in out.stderr
    rows = list(csv.DictReader(lat.open()))
    assert len(rows) == n
    assert all(int(r["recorded_lat_ns"]) > 0 and int(r["simulated_lat_ns"]) > 0 for r in rows)


@pytest.mark.parametrize("mode", ["as-recorded", "closed", "fast"])
def test_every_mode_replays_every_io(mode: str) -> None:
    msr = TRACES / "msr_csv" / "msr-cambridge1-sample.csv"
    out = cli(
        "replay",
        str(msr),
        "--device",
        "nullblk",
        "--mode",
        mode,
        "--remap",
        "wrap",
        "--time-scale",
        "10000",
        "--output-format",
        "json",
    )
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)["jobs"][0]
    # SOURCES.md: 508 reads and 492 writes.
    assert (j["read"]["total_ios"], j["write"]["total_ios"]) == (508, 492)


def test_closed_loop_keeps_its_depth() -> None:
    msr = TRACES / "msr_csv" / "msr-cambridge1-sample.csv"
    args = [
        "replay",
        str(msr),
        "--device",
        "nullblk",
        "--remap",
        "wrap",
        "--output-format",
        "json",
        "--mode",
        "closed",
    ]
    one = json.loads(cli(*args, "--iodepth", "1").stdout)["jobs"][0]
    deep = json.loads(cli(*args, "--iodepth", "16").stdout)["jobs"][0]
    # At depth 1 nothing queues behind another I/O; at 16 the queue fills.
    assert one["iodepth_level"]["1"] == 100.0
    assert deep["iodepth_level"]["16"] > 50.0


def test_a_device_filter_and_a_mapping(tmp_path: Path) -> None:
    mq = TRACES / "mqsim_ascii" / "mqsim_tpcc-small.trace"
    rows = [line.split() for line in mq.read_text().splitlines() if line.strip()]
    on4 = [r for r in rows if r[1] == "4"]
    out = cli(
        "replay",
        str(mq),
        "--device",
        "nullblk",
        "--trace-device",
        "4",
        "--mode",
        "fast",
        "--remap",
        "wrap",
        "--output-format",
        "json",
    )
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)["jobs"][0]
    assert j["read"]["total_ios"] + j["write"]["total_ios"] == len(on4)
    # The same file through a column mapping.
    out = cli(
        "replay",
        str(mq),
        "--device",
        "nullblk",
        "--format",
        "csv",
        "--columns",
        "sep=space,time=0:ns,device=1,offset=2:sectors,len=3:sectors,op=4:1/0",
        "--trace-device",
        "4",
        "--mode",
        "fast",
        "--remap",
        "wrap",
        "--output-format",
        "json",
    )
    assert out.returncode == 0, out.stderr
    j2 = json.loads(out.stdout)["jobs"][0]
    assert j2["read"]["io_bytes"] == j["read"]["io_bytes"]
    assert j2["write"]["io_bytes"] == j["write"]["io_bytes"]


def test_a_job_file_replays_a_blktrace_through_read_iolog(tmp_path: Path) -> None:
    job = tmp_path / "j.fio"
    # replay_scale=1024 leaves offsets off the sector grid, which O_DIRECT
    # refuses (EINVAL); replay_align puts them back on it, as in fio.
    text = (
        f"[r]\nioengine=libaio\ndirect=1\niodepth=8\nread_iolog={BIN}\nreplay_no_stall=1\n"
        "replay_scale=1024\n"
    )
    job.write_text(text + "replay_align=4096\n")
    out = cli("run", str(job), "--device", "nullblk", "--output-format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["jobs"][0]["read"]["total_ios"] == 963
    job.write_text(text)
    out = cli("run", str(job), "--device", "nullblk")
    assert out.returncode != 0 and "EINVAL" in out.stderr, out.stderr


@pytest.mark.parametrize(
    "content,needle",
    [
        (BIN.read_bytes()[:100], "record 2 (byte 64): truncated: 36 of the record's 48 bytes"),
        (b"hello\nworld\n", "cannot tell the trace's format"),
        (
            b"259,0 1 1 0.1 5 Q W 8 + 8 [a]\n259,0 1 2 0.2 5 K W 8 + 8 [a]\n",
            "t.trace:2: unknown blkparse action 'K'",
        ),
    ],
)
def test_bad_traces_get_one_message(tmp_path: Path, content: bytes, needle: str) -> None:
    f = tmp_path / "t.trace"
    f.write_bytes(content)
    out = cli("replay", str(f), "--device", "nullblk")
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], out.stderr
    assert lines[0].startswith("flashpath: error: ")


def test_an_address_past_the_device_names_the_record() -> None:
    out = cli("replay", str(BIN), "--device", "nullblk")
    assert out.returncode != 0
    assert "blktrace_viewer_sample.blktrace.0: record " in out.stderr
    assert "reaches past the end of the device" in out.stderr and "--remap" in out.stderr


# Three 4 KiB reads one second apart (MQSim: time_ns device lba sectors type).
_THREE_READS = "0 0 0 8 1\n1000000000 0 8 8 1\n2000000000 0 16 8 1\n"


@pytest.mark.parametrize("delay", ["reap", "sleep"])
def test_replay_latency_is_the_devices_unless_fio_333_is_asked(tmp_path: Path, delay: str) -> None:
    trace = tmp_path / "three.mqsim"
    trace.write_text(_THREE_READS)
    lat = tmp_path / "lat.csv"
    out = cli(
        "replay",
        str(trace),
        "--device",
        "nullblk",
        "--replay-delay",
        delay,
        "--output-format",
        "json",
        "--output",
        str(tmp_path / "out.json"),
        "--lat-csv",
        str(lat),
    )
    assert out.returncode == 0, out.stderr
    sim = [int(r["simulated_lat_ns"]) for r in csv.DictReader(lat.open())]
    j = json.loads((tmp_path / "out.json").read_text())
    assert j["flashpath"]["replay_delay"].startswith(delay)
    if delay == "reap":
        # fio 3.36: reaped as it completes, nullblk's tens of us.
        assert max(sim) < 100_000, sim
    else:
        # fio 3.33: reaped after the last issue, so the gaps show.
        assert 2.0e9 <= sim[0] < 2.001e9 and 1.0e9 <= sim[1] < 1.001e9, sim
        assert sim[2] < 100_000, sim


def _refused(out: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert out.returncode != 0, out.stdout
    assert "Traceback" not in out.stderr and "panicked" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    for n in needles:
        assert n in out.stderr, out.stderr


def test_a_fifo_or_a_device_as_trace_says_what_it_is(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # No writer: opening it would block; the command must not.
    out = cli("replay", str(fifo), "--device", "nullblk")
    _refused(out, "pipe: is a FIFO (named pipe), not a trace file")
    out = cli("replay", "/dev/zero", "--device", "nullblk")
    _refused(out, "/dev/zero: is a character device, not a trace file")
    # A job file's read_iolog too (the Rust side checks before it opens).
    job = tmp_path / "j.fio"
    job.write_text(f"[r]\nioengine=libaio\ndirect=1\nread_iolog={fifo}\n")
    out = cli("run", str(job), "--device", "nullblk")
    _refused(out, "is a FIFO (named pipe), not a trace file")
    out = cli("replay", str(tmp_path / "nothing"), "--device", "nullblk")
    _refused(out, "nothing: no such trace file")


def test_the_blktrace_stem_form_replays_every_cpu_file(tmp_path: Path) -> None:
    (tmp_path / "sdb.blktrace.0").write_bytes(BIN.read_bytes())
    out = cli(
        "replay",
        str(tmp_path / "sdb"),
        "--device",
        "nullblk",
        "--remap",
        "wrap",
        "--output-format",
        "json",
    )
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)
    whole = cli(
        "replay", str(BIN), "--device", "nullblk", "--remap", "wrap", "--output-format", "json"
    )
    assert whole.returncode == 0, whole.stderr
    w = json.loads(whole.stdout)
    assert j["flashpath"]["trace"][0]["format"] == "blktrace"
    assert j["jobs"][0]["read"]["total_ios"] == w["jobs"][0]["read"]["total_ios"] > 0


def test_one_bad_line_in_a_blkreplay_file_is_named(tmp_path: Path) -> None:
    src = (TRACES / "blkreplay_load" / "windows-shared-server.load").read_text().splitlines()
    head = next(i for i, line in enumerate(src) if line.strip().startswith("start"))
    bad = head + 3
    src[bad] = "0.5 ; 123 ; eight ; R ; 0.0 ; 0.0"
    trace = tmp_path / "bad.load"
    trace.write_text("\n".join(src) + "\n")
    out = cli("replay", str(trace), "--device", "nullblk", "--remap", "wrap")
    _refused(out, f"bad.load:{bad + 1}:", "'eight'")
    assert "cannot tell the trace's format" not in out.stderr


def test_profiles_lists_each_profiles_own_description() -> None:
    out = cli("profiles")
    assert out.returncode == 0, out.stderr
    rows = dict(line.split(None, 1) for line in out.stdout.splitlines() if line.strip())
    for name in ("nullblk", "brd", "rpi4-sdcard", "virtio-vda-fitted"):
        own = tomllib.loads((PROFILES / f"{name}.toml").read_text())["profile"]["description"]
        assert rows[name].strip() == own, (name, rows[name])


def test_replay_latency_on_a_real_trace_holds_no_think_gaps(tmp_path: Path) -> None:
    """The real blktrace sample's I/Os are a median of tens of us apart;
    replayed on nullblk with fio 3.36's reaping wait (flashpath replay's
    default) every I/O's simulated latency is the device path's, below that
    gap; with fio 3.33's sleep the waits show in it, as they do in fio."""

    def simulated(delay: str) -> tuple[list[int], list[int]]:
        lat = tmp_path / f"{delay}.csv"
        out = cli(
            "replay",
            str(BIN),
            "--device",
            "nullblk",
            "--remap",
            "wrap",
            "--replay-delay",
            delay,
            "--lat-csv",
            str(lat),
        )
        assert out.returncode == 0, out.stderr
        rows = list(csv.DictReader(lat.open()))
        times = [int(r["time_ns"]) for r in rows]
        gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
        return [int(r["simulated_lat_ns"]) for r in rows], gaps

    sim, gaps = simulated("reap")
    median_gap = gaps[len(gaps) // 2]
    assert len(sim) == 963
    assert max(sim) < median_gap, (max(sim), median_gap)
    slept, _ = simulated("sleep")
    assert sorted(slept)[len(slept) // 2] >= median_gap
