"""flashpath calibrate on real fio runs of this project's VM disk
(tests/fixtures/calibrate/README.md): a profile fitted to the plan's runs
predicts jobs outside the plan (issue 19's goal: median error <= 10%,
none over 20%, for IOPS and mean latency), and bad runs get one message.

This is a real measurement: if the model stops describing the disk the
prediction test fails, as it should."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, cli
from flashpath import _core, calibrate

RUNS = FIXTURES / "calibrate"
# The plan of eleven jobs and six checks, measured on a loaded machine
# (its README): what the plan writes today; not held to the accuracy goal.
LOADED = FIXTURES / "calibrate-2026-11-27-loaded"
PLAN = sorted(str(p) for p in RUNS.glob("*.json") if not p.name.startswith("check-"))
CHECKS = sorted(str(p) for p in RUNS.glob("check-*.json"))


def one_message(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_the_plan_is_what_was_measured_and_parses(tmp_path: Path) -> None:
    written = calibrate.write_plan(tmp_path, "/scratch/testfile", checks=True)
    jobs = [p for p in written if p.suffix == ".fio"]
    assert len(jobs) == len(calibrate.PLAN) + len(calibrate.CHECKS)
    for job in jobs:
        # The measured runs came from these very job files: all of them in
        # the loaded sitting, the nine plan jobs and four checks of the
        # quiet one (measured before the plan had mixes).
        text = job.read_text().replace("/scratch/testfile", "/work/calib-data/testfile")
        assert (LOADED / job.name).read_text() == text, job.name
        if (RUNS / job.name).exists():
            assert (RUNS / job.name).read_text() == text, job.name
        # The simulator takes them as they are.
        _core.parse_only(str(job), "nullblk")
        if shutil.which("fio"):
            r = subprocess.run(["fio", "--parse-only", str(job)], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
    assert "--output-format=json+" in (tmp_path / "README.md").read_text()


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, calibrate.FitResult]:
    out = tmp_path_factory.mktemp("fit") / "vda.toml"
    # A narrower search than the command's (the server counts around the
    # answer), to keep the test short on CI's two cores.
    result = calibrate.fit(
        calibrate.load_runs(PLAN), "hosts/x86-generic", out, jobs=2, servers=(2, 4, 8)
    )
    out.write_text(result.profile)
    return out, result


def test_a_fit_to_the_plan_predicts_the_jobs_outside_it(
    fitted: tuple[Path, calibrate.FitResult],
) -> None:
    out, result = fitted
    rows = calibrate.check(str(out), calibrate.load_runs(CHECKS))
    print(calibrate.table(rows))
    for what in ("iops", "mean lat"):
        errs = sorted(abs(r.error) for r in rows if what in r.figure)
        assert len(errs) == 5, what  # four jobs, the mix in both directions
        assert calibrate.median(errs) <= 0.10, (what, errs)
        assert errs[-1] <= 0.20, (what, errs)
    # The fit's own figures are close too, and every source says so.
    assert all(abs(e) < 0.2 for (_, _, _, e) in result.errors), result.errors
    for key in ("device.read_fixed", "device.servers", "device.transfer_rate"):
        assert result.sources[key].startswith("fitted to "), result.sources[key]
        assert "error " in result.sources[key]


def test_the_fitted_profile_runs_by_path(fitted: tuple[Path, calibrate.FitResult]) -> None:
    out, _ = fitted
    job = out.parent / "qd1.fio"
    job.write_text("[j]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\nsize=1g\nnumber_ios=500\n")
    r = cli("run", str(job), "--device", str(out), "--output-format", "json")
    assert r.returncode == 0, r.stderr
    lat = json.loads(r.stdout)["jobs"][0]["read"]["lat_ns"]["mean"]
    measured = calibrate.load_runs([str(RUNS / "randread-4k-qd1.json")])[0]
    assert abs(lat / measured.dirs["read"].lat_mean_ns - 1) < 0.2


def _edited(tmp_path: Path, name: str, edit) -> str:  # type: ignore[no-untyped-def]
    doc = json.loads((RUNS / "randread-4k-qd1.json").read_text())
    edit(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def _old_layout(doc: dict) -> None:  # type: ignore[type-arg]
    # fio 2.x: latencies in us under "lat" and "clat", no "_ns" sections.
    doc["fio version"] = "fio-2.2.10"
    for ddir in ("read", "write", "trim"):
        doc["jobs"][0][ddir]["lat"] = doc["jobs"][0][ddir].pop("lat_ns")
        doc["jobs"][0][ddir]["clat"] = doc["jobs"][0][ddir].pop("clat_ns")


def _errored(doc: dict) -> None:  # type: ignore[type-arg]
    doc["jobs"][0]["error"] = 5


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda t: str(RUNS / "randread-4k-qd1.fio"), "not fio JSON output"),
        (lambda t: _edited(t, "old.json", _old_layout), "written by fio-2.2.10"),
        (lambda t: _edited(t, "err.json", _errored), "ended with error 5"),
    ],
)
def test_bad_runs_get_one_message(tmp_path: Path, make, expected: str) -> None:  # type: ignore[no-untyped-def]
    bad = make(tmp_path)
    for args in (
        ["calibrate", "fit", "--host", "hosts/x86-generic", "--out", str(tmp_path / "o.toml")],
        ["calibrate", "check", "nullblk"],
    ):
        line = one_message(cli(*args, bad, *PLAN[:1]))
        assert expected in line and Path(bad).name in line, line


def test_runs_that_cannot_identify_a_parameter_are_refused(tmp_path: Path) -> None:
    # The plan runs that only read (not the writes, nor the mixes).
    reads_only = [p for p in PLAN if "write" not in p and "randrw" not in p]
    line = one_message(
        cli(
            "calibrate",
            "fit",
            "--host",
            "hosts/x86-generic",
            "--out",
            str(tmp_path / "o.toml"),
            *reads_only,
        )
    )
    assert "cannot identify device.write_fixed" in line, line
    assert not (tmp_path / "o.toml").exists()


def test_plan_command_and_notes_before_the_json(tmp_path: Path) -> None:
    r = cli("calibrate", "plan", "--out", str(tmp_path / "plan"), "--file", "/scratch/f")
    assert r.returncode == 0, r.stderr
    assert len(list((tmp_path / "plan").glob("*.fio"))) == len(calibrate.PLAN)
    # A note fio wrote before its JSON does not hide the run.
    noted = tmp_path / "noted.json"
    noted.write_text(
        "fio: file hash not empty on exit\n" + (RUNS / "randread-4k-qd1.json").read_text()
    )
    (run,) = calibrate.load_runs([str(noted)])
    assert run.name == "randread-4k-qd1" and run.dirs["read"].iops > 0


def test_a_run_the_simulator_cannot_run_is_named(tmp_path: Path) -> None:
    def rbd(doc: dict) -> None:  # type: ignore[type-arg]
        doc["jobs"][0]["job options"]["ioengine"] = "rbd"

    bad = _edited(tmp_path, "rbd.json", rbd)
    line = one_message(cli("calibrate", "check", "nullblk", bad))
    assert "rbd.json" in line and "not modelled by flashpath" in line, line


def test_an_unknown_host_profile_is_one_message(tmp_path: Path) -> None:
    out = tmp_path / "o.toml"
    line = one_message(cli("calibrate", "fit", "--host", "nosuch", "--out", str(out), *PLAN))
    assert line.startswith("flashpath: error: --host: no profile named 'nosuch'"), line


def _write_run(bins: tuple[tuple[float, int], ...]) -> calibrate.Measured:
    figs = calibrate.Figures(1000.0, 50_000.0, None, None, bins)
    options = {"rw": "randwrite", "bs": "4k", "iodepth": "1"}
    return calibrate.Measured("w.json", "randwrite-4k-qd1", options, {"write": figs})


def test_the_write_back_cache_is_read_from_the_qd1_writes_stalls() -> None:
    # 1000 writes at 30 us, 10 at 5 ms and 10 at 15 ms: the median is
    # 30 us, the 20 over 10x it are the write-backs, one per 1020 / 20
    # writes of 4 KiB, their excess over the median 4.97 and 14.97 ms.
    bins = ((30_000.0, 1000), (5_000_000.0, 10), (15_000_000.0, 10))
    wb = calibrate.writeback_from_runs([_write_run(bins)])
    assert wb is not None
    assert (wb.writes, wb.stalls, wb.median_ns) == (1020, 20, 30_000.0)
    assert wb.bytes == pytest.approx(4096 * 1020 / 20)
    assert wb.flush_ns == pytest.approx((4_970_000 + 14_970_000) / 2)
    # The log-sd of two equal groups is half their log distance.
    assert wb.spread == pytest.approx(math.log(14_970_000 / 4_970_000) / 2)
    # No write over 10x the median, or no histogram: not identified.
    assert calibrate.writeback_from_runs([_write_run(((30_000.0, 1000), (200_000.0, 5)))]) is None
    assert calibrate.writeback_from_runs([_write_run(())]) is None


def test_the_tail_starts_from_the_qd1_reads_spread_above_their_floor() -> None:
    # 1% at 10 us, the median at 20 us, the 99th percentile at
    # 10 us + 10 us * exp(2.326 * 0.7): a log-normal excess of σ 0.7.
    p99 = 10_000.0 + 10_000.0 * math.exp(2.326 * 0.7)
    bins = ((10_000.0, 10), (15_000.0, 479), (20_000.0, 500), (p99, 10), (p99 * 3, 1))
    figs = calibrate.Figures(1000.0, 20_000.0, p99, None, bins)
    run = calibrate.Measured("r.json", "randread-4k-qd1", {"rw": "randread"}, {"read": figs})
    assert calibrate._tail_start(run) == pytest.approx(0.7)
    # Without a histogram: the exponential's neighbourhood, 1.
    plain = calibrate.Figures(1000.0, 20_000.0, p99)
    run = calibrate.Measured("r.json", "randread-4k-qd1", {"rw": "randread"}, {"read": plain})
    assert calibrate._tail_start(run) == 1.0


def test_what_the_fit_leaves_out_does_not_help_the_plan(
    fitted: tuple[Path, calibrate.FitResult],
) -> None:
    out, result = fitted
    cand = result.cand
    # Every mechanism left out is 0 and its source says why.
    for key, value in (
        ("device.service_tail", cand.service_tail),
        ("device.turnaround", cand.turnaround_ns),
        ("device.writeback_bytes", cand.writeback_bytes),
    ):
        if key in result.not_identified:
            assert value == 0.0, key
            assert result.sources[key].startswith("not identified"), result.sources[key]
        else:
            assert value > 0.0, key
    # A tail left out is no better on the plan's p99s at the σ the QD1
    # reads' spread suggests (the tail fit's start) than at its optimum:
    # the plan's p99s do not improve by the keep margin, or the mean
    # figures get worse. The p99s are reported, never in the fitted errors.
    assert all(not fig.endswith("p99") for (_, _, fig, _) in result.errors)
    assert {fig for (_, _, fig, _) in result.tail_errors} <= {"read p99", "write p99"}
    if "device.service_tail" in result.not_identified:
        runs = calibrate.load_runs(PLAN)
        obj = calibrate.Objective(runs, str(out), cand.servers, cand.dispatch, calibrate.FIT_MS)
        means0, tails0 = calibrate._costs(obj.labelled(cand))
        qd1 = next(r for r in runs if r.name == "randread-4k-qd1")
        sigma = calibrate._tail_start(qd1)
        trial = calibrate.Candidate(**{**cand.__dict__, "service_tail": sigma})
        means, tails = calibrate._costs(obj.labelled(trial))
        assert tails >= tails0 * calibrate.KEEP_FACTOR or means > means0 / calibrate.KEEP_FACTOR
