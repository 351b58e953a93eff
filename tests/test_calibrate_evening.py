"""The evening sitting of 2026-11-27 21:29-21:37 UTC
(tests/fixtures/calibrate-2026-11-27-evening/README.md) beside the quiet
sitting of 14:44-14:52: the same 27 jobs seven hours apart. What both show
of the disk, held here as measured properties (they fail if a sitting
says otherwise), is what the generic device's queue mechanisms answer
to (docs/calibrate.md)."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES
from flashpath import calibrate

SITTINGS = ("calibrate-2026-11-27-quiet", "calibrate-2026-11-27-evening")


def _runs(sitting: str) -> dict[str, calibrate.Measured]:
    files = sorted(str(p) for p in (FIXTURES / sitting).glob("*.json"))
    return {Path(r.file).stem: r for r in calibrate.load_runs(files)}


def test_the_evening_sitting_is_the_quiet_sittings_jobs() -> None:
    quiet, evening = (_runs(s) for s in SITTINGS)
    assert sorted(evening) == sorted(quiet)
    assert len(evening) == 27
    for name, run in evening.items():
        assert run.options == quiet[name].options | {
            "filename": run.options["filename"]
        }, name


def test_a_deep_mixs_reads_run_ahead_of_its_writes_in_both_sittings() -> None:
    # Every 4 KiB mix at iodepth 8 or more, in both sittings: the reads'
    # mean latency is below the writes' (159 against 294 us in the quiet
    # sitting's randrw50-4k-qd16), though the disk's pure 4 KiB writes at
    # QD16 ran faster than its pure reads. Arrival order (device.queue_policy
    # = fifo) gives a read and a write the same wait; this is what reads
    # first (docs/calibrate.md) is for.
    seen = 0
    for sitting in SITTINGS:
        for name, run in _runs(sitting).items():
            if set(run.dirs) != {"read", "write"} or run.option("bs") != "4k":
                continue
            if int(run.option("iodepth", "1")) < 8:
                continue
            r, w = run.dirs["read"].lat_mean_ns, run.dirs["write"].lat_mean_ns
            assert r < w, (sitting, name, r, w)
            seen += 1
    assert seen == 2 * 6
