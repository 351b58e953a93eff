"""flashpath calibrate on the mixes of 2026-11-27 11:51 UTC
(tests/fixtures/calibrate-2026-11-27-mixes/README.md): what these real
runs of the VM's disk show of reads and writes mixed, which the generic
device's direction switch (device/queue.rs: turnaround, switch_delay) is
there to express, and `check` reporting every mix per direction. These are
measurements: a new sitting of another disk may show otherwise, and then
these tests say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, cli
from flashpath import calibrate

MIXES = FIXTURES / "calibrate-2026-11-27-mixes"


def _runs(*names: str) -> list[calibrate.Measured]:
    return calibrate.load_runs([str(MIXES / f"{n}.json") for n in names])


def _total(run: calibrate.Measured) -> float:
    return sum(f.iops for f in run.dirs.values())


def _parts(run: calibrate.Measured, read: calibrate.Measured, write: calibrate.Measured) -> float:
    """The IOPS a mix would have if each I/O took what it takes in the
    pure job of its direction at the same depth (the harmonic mean of the
    pure jobs' IOPS, weighted by the mix's shares)."""
    p = run.dirs["read"].iops / _total(run)
    return 1 / (p / _total(read) + (1 - p) / _total(write))


def test_at_iodepth_1_a_mix_pays_for_each_switch_the_same_in_two_mixes() -> None:
    # The plan's 70/30 mix and the extra 50/50 one, each against the pure
    # iodepth-1 jobs: both well below their parts (42% and 50% of the
    # I/Os switch: fio's io_u.c get_rw_ddir redraws the direction once the
    # issued count passes set_rwmix_bytes' threshold, which after the
    # first I/Os it always has), and the closed form gives one cost a
    # switch for both: a property of the disk, not of one run.
    read, write, m70, m50 = _runs(
        "randread-4k-qd1", "randwrite-4k-qd1", "randrw70-4k-qd1", "x-randrw50-4k-qd1"
    )
    for mix in (m70, m50):
        assert _total(mix) < 0.8 * _parts(mix, read, write), mix.name
    sw70 = calibrate.switch_from_runs([read, write, m70])
    sw50 = calibrate.switch_from_runs([read, write, m50])
    assert sw70 is not None and sw50 is not None
    assert sw70.p == pytest.approx(0.7, abs=0.01)
    assert sw50.p == pytest.approx(0.5, abs=0.01)
    # Tens of microseconds a switch, a QD1 I/O's own size.
    assert 20_000 < sw70.delay_ns < 100_000
    assert sw50.delay_ns == pytest.approx(sw70.delay_ns, rel=0.25)


def test_at_iodepth_16_mixes_run_about_as_fast_as_their_parts() -> None:
    # The same disk's 4 KiB mixes at QD16 lose little or nothing against
    # the pure QD16 jobs (within 15%), where at QD1 they lose over 20%:
    # the switch overlaps queued work (device/queue.rs switch_delay).
    read, write = _runs("randread-4k-qd16", "randwrite-4k-qd16")
    for mix in _runs("randrw50-4k-qd16", "check-randrw70-4k-qd16", "x-randrw30-4k-qd16"):
        assert _total(mix) == pytest.approx(_parts(mix, read, write), rel=0.15), mix.name


def test_check_reports_each_mix_per_direction_and_what_it_pins() -> None:
    mixes = sorted(str(p) for p in MIXES.glob("x-*.json"))
    r = cli("calibrate", "check", "virtio-vda-fitted", *mixes)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for path in mixes:
        job = Path(path).stem
        for figure in ("iops", "mean lat us", "p99 clat us", "p99.9 clat us"):
            for ddir in ("read", "write"):
                assert any(
                    line.startswith(job) and f"{ddir} {figure}" in line for line in out.splitlines()
                ), (job, ddir, figure)
        pinned = next(line for line in out.splitlines() if line.strip().startswith(job + ":"))
        assert "turnaround" in pinned and "switch_delay" in pinned, pinned
