"""flashpath calibrate on the quiet sitting of 2026-11-27 14:44-14:52 UTC
(tests/fixtures/calibrate-2026-11-27-quiet/README.md): the plan's eleven
runs, its six checks and ten more mixes, measured with nothing else running.

Issue 30's goal (every held-out job within 20% on IOPS and mean latency,
medians within 10%, p99 within 30%) is NOT met on these runs
(docs/calibrate.md says by how much and why: the disk's own pass-to-pass
spread is a median 13%, and the mixes' reads run faster than the model's
shared servers let them). What is held here is what the fit does reach,
each bound a property that failed before the change it guards:

- the service cv is fitted to the p99s (the mean figures pin it weakly):
  the held-out p99s' median error was 130% with the cv the mean
  figures chose (0.99), and is 35% with the cv the p99s choose;
- the pure-read checks, which no mix mechanism touches, are within the
  goal's 20%.

This is a real measurement: if the model stops describing the disk the
test fails, as it should."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conftest import FIXTURES
from flashpath import calibrate

RUNS = FIXTURES / "calibrate-2026-11-27-quiet"
PLAN = sorted(str(p) for p in RUNS.glob("*.json") if not p.name.startswith(("check-", "x-")))
HELD = sorted(str(p) for p in RUNS.glob("*.json") if p.name.startswith(("check-", "x-")))


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, calibrate.FitResult]:
    out = tmp_path_factory.mktemp("fit") / "vda.toml"
    # A narrower search than the command's (the server counts around the
    # full search's answer, 6 by address, which gives the same fit), to
    # keep the test short on CI's two cores: 8.5 min on this machine's two
    # cores at load 17, the full search's fit 6 min at load 12.
    result = calibrate.fit(
        calibrate.load_runs(PLAN),
        "hosts/x86-generic",
        out,
        jobs=2,
        servers=(4, 6, 8),
        dispatches=("by-address",),
    )
    out.write_text(result.profile)
    return out, result


def test_the_sitting_is_the_plan_its_checks_and_ten_mixes() -> None:
    assert len(PLAN) == len(calibrate.PLAN)
    checks = [p for p in HELD if Path(p).name.startswith("check-")]
    assert len(checks) == len(calibrate.CHECKS)
    mixes = [r for r in calibrate.load_runs(HELD) if set(r.dirs) == {"read", "write"}]
    assert len(mixes) == 3 + 10


def test_the_service_cv_is_fitted_to_the_p99s(
    fitted: tuple[Path, calibrate.FitResult],
) -> None:
    _, result = fitted
    src = result.sources["device.service_cv"]
    assert src.startswith("fitted to the p99"), src
    # The QD1 reads' p99 is 1.7x their median (107 against 62 us): a
    # service time far from exponential (cv 1 gives p99 = 4.6x its mean).
    assert result.cand.service_cv < 0.5, result.cand
    p99s = sorted(abs(e) for (_, _, _, e) in result.tail_errors)
    assert calibrate.median(p99s) <= 0.35, p99s


def test_held_out_p99s_and_pure_reads(fitted: tuple[Path, calibrate.FitResult]) -> None:
    out, _ = fitted
    rows = calibrate.check(str(out), calibrate.load_runs(HELD))
    print(calibrate.table(rows))
    # 29 p99s (16 jobs, 13 of them mixes with two directions each): their
    # median error was 130% before the cv was fitted to the p99s, 35% with
    # it (the full search's fit); 40% leaves room for the narrower search.
    p99 = sorted(abs(r.error) for r in rows if r.figure.endswith("p99 clat us"))
    assert len(p99) == 29
    assert calibrate.median(p99) <= 0.40, p99
    for job in ("check-randread-16k-qd2", "check-randread-8k-qd8"):
        for r in rows:
            if r.job == job and ("iops" in r.figure or "mean lat" in r.figure):
                assert abs(r.error) <= 0.20, (job, r.figure, r.error)


def test_the_cv_start_is_the_closed_form_of_the_qd1_reads() -> None:
    # p50 50 us, p99 60 us, mean 55.9 us: cv = 10 / (ln 50 * 55.9).
    bins = ((50_000.0, 50), (60_000.0, 49), (150_000.0, 1))
    fig = calibrate.Figures(1000.0, 56_000.0, 60_000.0, None, bins)
    run = calibrate.Measured("r.json", "randread-4k-qd1", {"rw": "randread"}, {"read": fig})
    assert calibrate._cv_start([run]) == pytest.approx(10_000 / (math.log(50) * 55_900))
    # No json+ bins: the search's usual start.
    plain = calibrate.Figures(1000.0, 56_000.0, 60_000.0)
    run = calibrate.Measured("r.json", "randread-4k-qd1", {"rw": "randread"}, {"read": plain})
    assert calibrate._cv_start([run]) == 0.5


def test_the_plan_readme_runs_a_warm_up_pass_first(tmp_path: Path) -> None:
    # Pass 1's first 75 s of this sitting ran 1.3-14x slower than the same
    # jobs later (the fixture's README): the plan says to throw a first
    # pass away, before the pass whose outputs are kept.
    calibrate.write_plan(tmp_path, "/scratch/testfile")
    text = (tmp_path / "README.md").read_text()
    warm = text.index('for j in *.fio; do fio "$j" --output=/dev/null; done')
    kept = text.index('--output-format=json+ --output="${j%.fio}.json"')
    assert warm < kept
