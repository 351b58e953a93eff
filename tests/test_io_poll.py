"""The io-poll scenario from the installed package, and the dd front end."""

from __future__ import annotations

import csv
import io

import pytest

from flashpath import _core
from flashpath import reproduce as rp
from flashpath._core import FlashpathError


def test_io_poll_grid_csv_and_tolerance(tmp_path):
    rows = rp.reproduce("io-poll")
    out = list(csv.reader(io.StringIO(rp.to_csv(rows))))
    assert out[0] == ["scenario", "case", "metric", "mode", "simulated", "published"]
    body = out[1:]
    # 3 devices x 2 metrics x 2 modes, held-out rows included.
    assert len(body) == 12
    keys = {(r[1], r[2], r[3]) for r in body}
    for dev in ("dram", "samsung", "intel"):
        for metric in ("latency_us", "bandwidth_MBps"):
            for mode in ("irq", "poll"):
                assert (f"device={dev}", metric, mode) in keys
    held_out = [r for r in body if r[1] == "device=intel" and r[3] == "irq"]
    assert all(r[5] == "" for r in held_out)
    for r in rows:
        if r.published and r.case in ("device=dram", "device=samsung"):
            assert abs(r.simulated - r.published) / r.published <= 0.10, r
    plot = tmp_path / "io-poll.png"
    rp.PLOTTERS["io-poll"](rows, str(plot))
    assert plot.stat().st_size > 0


def test_dd_command_line_becomes_the_fio_job():
    job = _core.dd_job(["if=/dev/nvme0n1", "of=/dev/null", "bs=4096", "iflag=direct", "count=200k"])
    assert "number_ios=204800" in job and "size=838860800" in job and "direct=1" in job
    # dd's read(2) sets no RWF_HIPRI: the scenario's pvsync2 + hipri stands
    # for v4.4 polling every synchronous O_DIRECT read by itself.
    assert "hipri" not in job and "ioengine=sync" in job
    # Without iflag=direct, dd's read(2) goes through the page cache.
    job = _core.dd_job(["if=/dev/nvme0n1", "bs=4096", "count=1"])
    assert "direct=0" in job and "ioengine=sync" in job
    with pytest.raises(FlashpathError, match="count= is required"):
        _core.dd_job(["if=/dev/nvme0n1", "bs=4096"])  # no count
