"""Sweeps: the table's numbers against a closed form, its bytes whatever
the worker count, resuming after a kill, and a changed spec."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import REPO, cli
from flashpath.sweep_run import SweepError, run_sweep
from flashpath.sweep_spec import load_spec, parse_spec

# libaio at queue depth 1 on null_blk (nullblk profile: irqmode=2, one CPU
# does everything, no idle states): every read takes the same time.
QD1 = """device = "nullblk"
job_text = '''
[qd1]
ioengine=libaio
direct=1
rw=randread
bs=4k
iodepth=1
size=64m
number_ios=50
'''
[grid]
device.completion_nsec = [2000, 10000, 35000]
host.cost.context_switch = [500, 1500, 4000]
"""


def test_fixed_latency_sweep_gives_the_closed_form_per_point(tmp_path: Path) -> None:
    table = run_sweep(parse_spec(QD1, "qd1.toml", tmp_path)).table
    rows = table.to_pylist()
    assert len(rows) == 9
    profile = {
        "irq_entry": 300,
        "irq_handler": 100,
        "blk_complete": 400,
        "wakeup": 400,
        "syscall_exit": 100,
        "fio_submit": 400,
        "syscall_entry": 100,
        "blk_submit": 600,
        "queue_rq": 150,
    }
    for row in rows:
        device, switch = row["device.completion_nsec"], row["host.cost.context_switch"]
        # design.md 3.1: the interrupt (irq_entry + irq_handler +
        # blk_complete), the wake-up, the switch and the syscall's exit
        # follow the device's completion.
        clat = (
            device
            + profile["irq_entry"]
            + profile["irq_handler"]
            + profile["blk_complete"]
            + profile["wakeup"]
            + switch
            + profile["syscall_exit"]
        )
        # io_submit: fio's user part, then entry, block layer, driver, exit.
        slat = sum(
            profile[k]
            for k in ("fio_submit", "syscall_entry", "blk_submit", "queue_rq", "syscall_exit")
        )
        assert row["clat_ns.min"] == row["clat_ns.max"] == clat, row
        assert row["clat_ns.mean"] == clat and row["slat_ns.mean"] == slat
        assert row["lat_ns.mean"] == clat + slat
        assert row["fp.breakdown_ns_per_io.device"] == device
        assert row["total_ios"] == 50 and row["ddir"] == "read" and row["job"] == "qd1"
    # Row order is point order: the last axis varies fastest.
    assert [r["point"] for r in rows] == list(range(9))
    assert [r["host.cost.context_switch"] for r in rows[:3]] == [500, 1500, 4000]


def test_the_table_has_axes_fio_figures_breakdown_and_counters(tmp_path: Path) -> None:
    (tmp_path / "j.fio").write_text(
        "[a]\nioengine=libaio\ndirect=1\nrw=randrw\nbs=4k\nsize=16m\nnumber_ios=64\n"
        "[b]\nioengine=psync\ndirect=1\nrw=read\nbs=4k\nsize=16m\nnumber_ios=32\n"
    )
    (tmp_path / "s.toml").write_text(
        'job = "j.fio"\n[grid]\ndevice = ["nullblk", "nvme-dram"]\nfio.iodepth = [2, 4]\n'
    )
    table = run_sweep(load_spec(tmp_path / "s.toml")).table
    names = table.column_names
    # The axes, then seed (always a column), then what identifies a row.
    assert names[:8] == [
        "point",
        "device",
        "fio.iodepth",
        "seed",
        "job_index",
        "job",
        "groupid",
        "ddir",
    ]
    for column in (
        "iops",
        "bw_bytes",
        "clat_ns.p99",
        "clat_ns.p99.9",
        "slat_ns.stddev",
        "lat_ns.mean",
        "job.usr_cpu",
        "job.iodepth_level.4",
        "sim_time_ms",
        "fp.breakdown_ns_per_io.device",
        "fp.events",
        "fp.cpus.0.idle_ns",
        "fp.driver.driver",
        "disk_util.0.util",
    ):
        assert column in names, column
    assert not any(".bins" in n for n in names)
    rows = table.to_pylist()
    # Per point: job a reads and writes, job b reads; 4 points.
    assert [(r["point"], r["job"], r["ddir"]) for r in rows[:3]] == [
        (0, "a", "read"),
        (0, "a", "write"),
        (0, "b", "read"),
    ]
    assert len(rows) == 12
    # Each device's own counters; null where the other device has none.
    assert {r["fp.driver.kind"] for r in rows if r["device"] == "nvme-dram"} == {"nvme"}
    assert {r["fp.driver.kind"] for r in rows if r["device"] == "nullblk"} == {None}
    assert {r["fp.driver.driver"] for r in rows if r["device"] == "nullblk"} == {"null_blk"}
    meta = table.schema.metadata
    assert meta[b"flashpath.schema"] == b"1"
    assert json.loads(meta[b"flashpath.axes"]) == ["device", "fio.iodepth"]
    types = {f.name: str(f.type) for f in table.schema}
    assert types["fio.iodepth"] == "int64" and types["device"] == "string"
    assert types["seed"] == "uint64" and {r["seed"] for r in rows} == {0}
    assert types["clat_ns.mean"] == "double" and types["total_ios"] == "int64"


def _sweep_files(tmp_path: Path, ios: int, points: int = 12) -> Path:
    """A spec of `points` points (queue depth x seed) of random reads on
    UFS, where the seed moves the numbers (map-cache hits): randrepeat=0
    makes the run seed draw the offsets, as fio draws them afresh."""
    (tmp_path / "j.fio").write_text(
        "[r]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\nsize=8g\nnorandommap\nrandrepeat=0\n"
        f"filename=/dev/sda\nnumber_ios={ios}\n"
    )
    seeds = ", ".join(str(s) for s in range(1, points // 2 + 1))
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'job = "j.fio"\ndevice = "ufs21-64g"\n[grid]\nfio.iodepth = [1, 8]\nseed = [{seeds}]\n'
    )
    return spec


def test_one_and_two_workers_write_the_same_bytes(tmp_path: Path) -> None:
    spec = load_spec(_sweep_files(tmp_path, 2000))
    one = run_sweep(spec, tmp_path / "one.parquet", jobs=1)
    two = run_sweep(spec, tmp_path / "two.parquet", jobs=2)
    assert one.ran == two.ran == 12
    assert (tmp_path / "one.parquet").read_bytes() == (tmp_path / "two.parquet").read_bytes()
    # The seeds differ, so the points do: the bytes are not equal by accident.
    iops = pq.read_table(tmp_path / "one.parquet").column("iops").to_pylist()
    assert len(set(iops)) > 2
    # The run log has the wall times, one line per point and one per sweep.
    log = [json.loads(line) for line in (tmp_path / "two.parquet.log").read_text().splitlines()]
    assert sum(1 for r in log if r["event"] == "point") == 12
    assert log[-1]["event"] == "sweep" and log[-1]["jobs"] == 2 and log[-1]["ran"] == 12


def test_a_rerun_recomputes_nothing_and_rewrites_the_same_bytes(tmp_path: Path) -> None:
    spec = load_spec(_sweep_files(tmp_path, 500, points=4))
    out = tmp_path / "r.parquet"
    first = run_sweep(spec, out)
    before = out.read_bytes()
    out.unlink()
    again = run_sweep(spec, out)
    assert (first.ran, again.ran, again.reused) == (4, 0, 4)
    assert out.read_bytes() == before


def test_an_interrupted_sweep_resumes_where_it_stopped(tmp_path: Path) -> None:
    spec = load_spec(_sweep_files(tmp_path, 500))
    whole = tmp_path / "whole.parquet"
    run_sweep(spec, whole)

    out = tmp_path / "cut.parquet"
    seen: list[int] = []

    def stop_after_five(index: int, finished: int) -> None:
        seen.append(index)
        if finished == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, out, on_point=stop_after_five)
    assert not out.exists()
    parts = tmp_path / "cut.parquet.parts"
    assert len(list(parts.glob("*.json"))) == 5 + 1  # and the manifest
    # A part a user broke is run again, not read.
    broken = sorted(p for p in parts.glob("*.json") if p.name != "sweep.json")[0]
    broken.write_text('{"format": 1, "key": "')
    resumed = run_sweep(spec, out)
    assert (resumed.ran, resumed.reused) == (12 - 4, 4)
    assert out.read_bytes() == whole.read_bytes()


def test_a_killed_sweep_resumes_to_the_same_bytes(tmp_path: Path) -> None:
    """A real kill (SIGKILL, at any moment) of the command."""
    spec_path = _sweep_files(tmp_path, 150_000)
    whole = tmp_path / "whole.parquet"
    run_sweep(load_spec(spec_path), whole, jobs=2)
    parts = tmp_path / "cut.parquet.parts"
    cmd = [sys.executable, "-m", "flashpath.cli", "sweep", "s.toml", "--out", "cut.parquet"]
    proc = subprocess.Popen([*cmd, "--jobs", "1"], cwd=tmp_path, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(list(parts.glob("*.json"))) < 4 and time.monotonic() < deadline:
        assert proc.poll() is None, "the sweep ended before it could be killed"
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    assert proc.returncode == -9
    done = len([p for p in parts.glob("*.json") if p.name != "sweep.json"])
    assert 3 <= done < 12
    assert not (tmp_path / "cut.parquet").exists()
    r = subprocess.run([*cmd, "--jobs", "2"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"12 points ({12 - done} run, {done} reused)" in r.stderr
    assert (tmp_path / "cut.parquet").read_bytes() == whole.read_bytes()


def test_a_changed_spec_is_refused_unless_extended(tmp_path: Path) -> None:
    spec_path = _sweep_files(tmp_path, 300, points=4)
    out = tmp_path / "x.parquet"
    run_sweep(load_spec(spec_path), out)
    text = spec_path.read_text().replace("fio.iodepth = [1, 8]", "fio.iodepth = [1, 8, 32]")
    spec_path.write_text(text)
    bigger = load_spec(spec_path)
    with pytest.raises(SweepError) as info:
        run_sweep(bigger, out)
    message = str(info.value)
    assert "another spec" in message and "--extend" in message
    assert "2 of this spec's 6 points are new" in message
    extended = run_sweep(bigger, out, extend=True)
    assert (extended.ran, extended.reused) == (2, 4)
    fresh = tmp_path / "fresh.parquet"
    run_sweep(bigger, fresh)
    assert out.read_bytes() == fresh.read_bytes()


def test_the_example_spec_runs(tmp_path: Path) -> None:
    """examples/sweep-qd-mapcache.toml, with fewer I/Os per point."""
    text = (REPO / "examples" / "sweep-qd-mapcache.toml").read_text()
    (tmp_path / "sweep-qd-mapcache.fio").write_text(
        (REPO / "examples" / "sweep-qd-mapcache.fio").read_text()
    )
    spec_path = tmp_path / "small.toml"
    spec_path.write_text(text + "\n[fixed]\nfio.number_ios = 300\n")
    outcome = run_sweep(load_spec(spec_path), tmp_path / "q.parquet", jobs=2)
    assert outcome.points == outcome.ran == 36
    df = pq.read_table(tmp_path / "q.parquet").to_pandas()
    assert set(df["fio.iodepth"]) == {1, 4, 16, 32}
    assert (df["total_ios"] == 300).all()
    # A bigger map cache misses less (the same I/O sequence for each seed).
    hits = df.groupby("device.flash.map_cache_pages")["fp.driver.ftl.map_hit_ratio"].mean()
    assert hits[24] < hits[96] < hits[384]


def test_progress_is_quiet_off_a_terminal_unless_asked(tmp_path: Path) -> None:
    _sweep_files(tmp_path, 200, points=4)
    quiet = cli("sweep", "s.toml", "--out", "q.parquet", "--jobs", "1", cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == ""
    [line] = quiet.stderr.splitlines()
    assert line.startswith("flashpath sweep s: 4 points (4 run, 0 reused) in ")
    assert "; 4 rows -> q.parquet" in line
    shown = cli("sweep", "s.toml", "--out", "p.parquet", "--jobs", "1", "--progress", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    # tqdm's bar: points done of the total, and the rate.
    assert "0/4 [" in shown.stderr and "pt/s" in shown.stderr
    assert shown.stderr.splitlines()[-1].startswith("flashpath sweep s: 4 points")


def test_the_bytes_do_not_depend_on_the_folder(tmp_path: Path) -> None:
    outs = []
    for name in ("a", "deeper/b"):
        folder = tmp_path / name
        folder.mkdir(parents=True)
        spec = _sweep_files(folder, 300, points=4)
        # Run from elsewhere: paths in the spec are relative to it.
        r = cli("sweep", str(spec), "--out", f"{name.replace('/', '-')}.parquet", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        outs.append((tmp_path / f"{name.replace('/', '-')}.parquet").read_bytes())
    assert outs[0] == outs[1]


def test_a_worker_that_dies_is_one_message(tmp_path: Path) -> None:
    from flashpath.engine import Task, run_tasks

    tasks = [Task("dies", _exit_now, ()), Task("dies too", _exit_now, ())]
    with pytest.raises(RuntimeError, match="a worker process died while running 'die"):
        run_tasks(tasks, lambda i, done: None, jobs=2)


def _exit_now() -> None:
    import os

    os._exit(3)
