"""`flashpath replay` on the real block traces in fixtures/traces (their
SOURCES.md says where each came from): the format is detected, every I/O
the trace queued is simulated, the recorded latencies come back beside the
simulated ones, and bad input is one message naming the file and the
record or line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from conftest import FIXTURES, cli

TRACES = FIXTURES / "traces"
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
    job.write_text(
        f"[r]\nioengine=libaio\ndirect=1\niodepth=8\nread_iolog={BIN}\nreplay_no_stall=1\n"
        "replay_scale=1024\n"
    )
    out = cli("run", str(job), "--device", "nullblk", "--output-format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["jobs"][0]["read"]["total_ios"] == 963


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
def test_replay_latency_is_the_devices_unless_fio_333_is_asked(
    tmp_path: Path, delay: str
) -> None:
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
