"""flashpath calibrate on the loaded sitting of 2026-11-27
(tests/fixtures/calibrate-2026-11-27-loaded/README.md): the plan's eleven
jobs and six checks, measured while other work loaded the machine and its
disk, so that a job's two passes differ 2-4x. Only what holds on any
sitting is tested here: the accuracy goal is held to the quiet sitting
(tests/test_calibrate.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, cli
from flashpath import calibrate

LOADED = FIXTURES / "calibrate-2026-11-27-loaded"
PLAN = sorted(str(p) for p in LOADED.glob("*.json") if not p.name.startswith("check-"))
CHECKS = sorted(str(p) for p in LOADED.glob("check-*.json"))
MIXES = [p for p in CHECKS if "randrw" in p]


def test_each_run_pins_the_parameters_its_figures_answer_to() -> None:
    runs = calibrate.load_runs(PLAN + CHECKS)
    pins = calibrate.pins(runs)
    assert "turnaround" in pins["randrw70-4k-qd1"]
    assert "turnaround" not in pins["randread-4k-qd1"]
    assert {"writeback_bytes", "writeback_flush"} <= set(pins["randwrite-4k-qd1"])
    assert "read_fixed" in pins["randread-4k-qd1"]
    assert all("service_tail" in keys for keys in pins.values())
    text = calibrate.pins_text(runs)
    assert text.count("\n") == len(runs) + 1


def test_check_prints_the_mixes_directions_their_tails_and_the_pins() -> None:
    r = cli("calibrate", "check", "virtio-vda-fitted", *MIXES)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for path in MIXES:
        job = json.loads(Path(path).read_text())["jobs"][0]
        name = job["jobname"]
        for ddir in ("read", "write"):
            for figure in ("iops", "mean lat us", "p99 clat us", "p99.9 clat us"):
                lines = [ln for ln in out.splitlines() if ln.startswith(name + " ")]
                row = [ln for ln in lines if f" {ddir} {figure} " in ln]
                assert len(row) == 1, (name, ddir, figure, out)
            # The measured figure printed is fio's own, to the 0.1.
            iops = [ln for ln in lines if f" {ddir} iops " in ln][0].split()
            assert float(iops[3]) == pytest.approx(job[ddir]["iops"], abs=0.05)
            p99 = [ln for ln in lines if f" {ddir} p99 clat us " in ln][0].split()
            fio_p99 = job[ddir]["clat_ns"]["percentile"]["99.000000"] / 1e3
            assert float(p99[5]) == pytest.approx(fio_p99, abs=0.05)
    for what in ("iops", "mean lat", "p99 clat", "p99.9 clat"):
        assert f"{what}: median error " in out, out
    assert "parameters each run pins:" in out
    assert out.count("turnaround") >= len(MIXES), out


def test_the_write_back_detection_finds_the_stalls_fio_reports() -> None:
    runs = calibrate.load_runs(PLAN)
    wb = calibrate.writeback_from_runs(runs)
    assert wb is not None
    doc = json.loads((LOADED / "randwrite-4k-qd1.json").read_text())
    write = doc["jobs"][0]["write"]
    # Every write of the histogram, and fio's own median.
    assert wb.writes == write["total_ios"]
    pct = {float(k): v for k, v in write["clat_ns"]["percentile"].items()}
    assert wb.median_ns == pct[50.0]
    # fio's percentiles put the stalls where the detection counts them:
    # every percentile below the stalls' share is within 10x the median,
    # every one above it beyond.
    share = wb.stalls / wb.writes
    assert 0.005 < share < 0.1, share
    for q, v in pct.items():
        if q / 100 < 1 - share - 1e-9:
            assert v <= calibrate.STALL_FACTOR * wb.median_ns, (q, v)
        elif q / 100 > 1 - share + 1e-9:
            assert v > calibrate.STALL_FACTOR * wb.median_ns, (q, v)
    # One write-back per the bytes written over the stalls.
    assert wb.bytes == pytest.approx(4096 * wb.writes / wb.stalls)
