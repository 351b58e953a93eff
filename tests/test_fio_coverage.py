"""How many of the fixture job files the real fio 3.33 accepts (with a
local engine) flashpath runs: held to a floor so that a change that
refuses more of them fails here. tests/fio_coverage.py prints the table,
by refusal cause."""

from __future__ import annotations

import shutil

import pytest

from fio_coverage import core_verdict, survey

# flashpath accepted 46 of these 119 jobs before issue 25's work, 67
# after its first part and 78 with the verify family and flow control
# (python3 tests/fio_coverage.py); 76 on this branch's base, 78 with fio's
# cmdprio-percentage.fio and cmdprio-bssplit.fio (issue 28's priorities);
# 83 with fio's zoned examples (issue 29: zbd-rand-write.fio,
# zbd-seq-read.fio, zbd-rand-write-trim-gc.fio,
# zbd-rand-write-zone-reset-gc.fio with zonemode=zbd, disk-zone-profile.fio
# with zonemode=strided).
FLOOR = 83


@pytest.mark.skipif(shutil.which("fio") is None, reason="the real fio is not installed")
def test_flashpath_runs_at_least_the_floor_of_what_fio_accepts() -> None:
    verdicts = survey(core_verdict)
    counted = [v for v in verdicts if v.counted]
    ok = [v for v in counted if v.ok]
    # The count is over real job files: fio accepts most of the fixtures.
    assert len(counted) >= 100, len(counted)
    assert len(ok) >= FLOOR, "\n".join(f"{v.job.name}: {v.cause}" for v in counted if not v.ok)
    # Every refusal names its cause.
    assert all(v.cause for v in counted if not v.ok)
