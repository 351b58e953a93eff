"""The direction switch of the generic device (device/queue.rs
`switch_delay`, docs/calibrate.md): its closed form at iodepth 1, the fit's
reading of it from simulated runs of a device whose switch is known, and
what the fit reports about it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conftest import REPO, cli
from flashpath import calibrate

HOST = "hosts/x86-generic"


def _figs(iops: float, mean_us: float) -> calibrate.Figures:
    return calibrate.Figures(iops, mean_us * 1e3, None)


def _run(name: str, rw: str, dirs: dict[str, calibrate.Figures], **more: str) -> calibrate.Measured:
    opts = {"rw": rw, "bs": "4k", "iodepth": "1", "ioengine": "libaio", "direct": "1", **more}
    return calibrate.Measured(f"{name}.json", name, opts, dirs)


def test_the_switch_cost_is_the_mixs_excess_over_the_pure_jobs_per_switch() -> None:
    # Reads 50 us, writes 60 us alone; a 50/50 mix (as many reads as
    # writes) at 70 and 90 us: 80 us per I/O against 55 us from the pure
    # jobs, and half the I/Os switch: 50 us a switch.
    runs = [
        _run("r", "randread", {"read": _figs(20000, 50)}),
        _run("w", "randwrite", {"write": _figs(16000, 60)}),
        _run("m", "randrw", {"read": _figs(6000, 70), "write": _figs(6000, 90)}, rwmixread="50"),
    ]
    sw = calibrate.switch_from_runs(runs)
    assert sw is not None
    assert sw.p == pytest.approx(0.5)
    assert sw.delay_ns == pytest.approx(50_000)
    # A 70/30 mix: 2 p (1 - p) = 0.42 of the I/Os switch.
    runs[2] = _run(
        "m", "randrw", {"read": _figs(7000, 60), "write": _figs(3000, 80)}, rwmixread="70"
    )
    sw = calibrate.switch_from_runs(runs)
    assert sw is not None
    pure = 0.7 * 50 + 0.3 * 60
    assert sw.delay_ns == pytest.approx((0.7 * 60 + 0.3 * 80 - pure) / 0.42 * 1e3)
    # Without a pure write job at iodepth 1 (or of another block size),
    # nothing to compare the mix with.
    assert calibrate.switch_from_runs([runs[0], runs[2]]) is None
    other = _run("w8", "randwrite", {"write": _figs(16000, 60)}, bs="8k")
    assert calibrate.switch_from_runs([runs[0], other, runs[2]]) is None


def _simulated(profile: Path, jobs: list[tuple[str, str, str]]) -> list[calibrate.Measured]:
    """Each plan job (name, rw, rwmixread) simulated on `profile` for two
    seconds, as a run file of it would read (the block size from the
    name)."""
    out = []
    for name, rw, mix in jobs:
        opts = {
            "rw": rw,
            "bs": name.split("-")[1],
            "iodepth": name.rsplit("qd", 1)[1],
            "ioengine": "libaio",
            "direct": "1",
            "size": "2g",
            "norandommap": "1",
            "randrepeat": "1",
        }
        if mix:
            opts["rwmixread"] = mix
        run = calibrate.Measured(f"{name}.json", name, opts, {})
        dirs = calibrate.simulate_run(run, 2000, str(profile), [])
        out.append(calibrate.Measured(f"{name}.json", name, opts, dirs))
    return out


def _profile(tmp_path: Path, cand: calibrate.Candidate) -> Path:
    path = tmp_path / "known.toml"
    # The built-in host profile by name, as `calibrate fit` includes it
    # (a path found from the package's file holds only in an editable
    # install).
    path.write_text(calibrate.profile_text(f"{HOST}.toml", cand, {}), encoding="utf-8")
    return path


QD1_JOBS = [
    ("randread-4k-qd1", "randread", ""),
    ("randwrite-4k-qd1", "randwrite", ""),
    ("randrw70-4k-qd1", "randrw", "70"),
]


@pytest.mark.parametrize("delay_us", [20.0, 55.0])
def test_the_closed_form_recovers_a_known_switch_delay_from_simulated_runs(
    tmp_path: Path, delay_us: float
) -> None:
    # A device with a known switch delay (one server, fixed service
    # times): the plan's three iodepth-1 jobs simulated on it, read back
    # as runs, give the delay within 5% (fio's random mix switches on
    # about 2 p (1 - p) of the I/Os, not exactly: 2 s of I/Os).
    cand = calibrate.Candidate(
        40_000, 50_000, 1e9, 0, 0, 1, "shared", switch_delay_ns=delay_us * 1e3
    )
    runs = _simulated(_profile(tmp_path, cand), QD1_JOBS)
    sw = calibrate.switch_from_runs(runs)
    assert sw is not None
    assert sw.p == pytest.approx(0.7, abs=0.02)
    assert sw.delay_ns == pytest.approx(delay_us * 1e3, rel=0.05)


def test_a_switch_delay_is_hidden_at_depth_where_a_turnaround_costs_throughput(
    tmp_path: Path,
) -> None:
    # The two mechanisms agree at iodepth 1 (an idle server: both add the
    # full cost to a switching I/O) and part at depth: 4 busy servers hide
    # the delay behind queued work, the turnaround takes server time.
    base = dict(
        read_fixed_ns=40_000.0,
        write_fixed_ns=50_000.0,
        transfer_rate=1e9,
        iops_cap=0.0,
        bandwidth_cap=0.0,
        servers=4,
        dispatch="shared",
    )
    jobs = [("randrw50-4k-qd1", "randrw", "50"), ("randrw50-4k-qd32", "randrw", "50")]
    none = _simulated(_profile(tmp_path, calibrate.Candidate(**base)), jobs)
    delay = _simulated(
        _profile(tmp_path, calibrate.Candidate(**base, switch_delay_ns=30_000.0)), jobs
    )
    turn = _simulated(_profile(tmp_path, calibrate.Candidate(**base, turnaround_ns=30_000.0)), jobs)

    def total(run: calibrate.Measured) -> float:
        return sum(f.iops for f in run.dirs.values())

    # iodepth 1: 45 us a mean I/O, 15 us more for a switch on half of
    # them: both 25% slower (IOPS within 3%: the fio mix's switch share).
    for slow in (delay, turn):
        assert total(slow[0]) / total(none[0]) == pytest.approx(60 / 75, rel=0.03)
    # iodepth 32: the delay costs nothing, the turnaround about a quarter.
    assert total(delay[1]) / total(none[1]) == pytest.approx(1.0, abs=0.01)
    assert total(turn[1]) / total(none[1]) == pytest.approx(45 / 60, rel=0.03)


def test_the_fit_keeps_the_switch_that_the_runs_show_and_says_so(tmp_path: Path) -> None:
    # Runs simulated on a device with a 40 us switch delay: the fit,
    # offered both ways a switch may cost, keeps the delay near its value
    # and reports the turnaround as not identified.
    known = calibrate.Candidate(30_000, 45_000, 1e9, 0, 0, 2, "shared", switch_delay_ns=40_000.0)
    jobs = QD1_JOBS + [
        ("randread-4k-qd4", "randread", ""),
        ("randread-64k-qd1", "randread", ""),
        ("randrw50-4k-qd16", "randrw", "50"),
    ]
    runs = _simulated(_profile(tmp_path, known), jobs)
    result = calibrate.fit(
        runs, HOST, tmp_path / "fit.toml", jobs=2, servers=(2,), dispatches=("shared",)
    )
    assert "device.turnaround" in result.not_identified
    assert "device.switch_delay" not in result.not_identified
    assert result.cand.switch_delay_ns == pytest.approx(40_000, rel=0.15)
    assert result.sources["device.switch_delay"].startswith("fitted to randrw")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("-3us", "outside 0 to 1000000 us"),
        ("5s", "outside 0 to 1000000 us"),
        ("soon", "device.switch_delay"),
    ],
)
def test_a_bad_switch_delay_is_one_message(tmp_path: Path, value: str, expected: str) -> None:
    job = tmp_path / "mix.fio"
    job.write_text("[j]\nioengine=libaio\ndirect=1\nrw=randrw\nbs=4k\nsize=1g\nnumber_ios=100\n")
    profile = REPO / "profiles" / "virtio-vda-fitted.toml"
    r = cli("run", str(job), "--device", str(profile), "--set", f"device.switch_delay={value}")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert "device.switch_delay" in lines[0] and expected in lines[0], lines[0]


def test_the_search_stays_inside_what_a_profile_accepts() -> None:
    # A start whose transfer rate is already near 1 TB/s (large blocks
    # that cost no more than small ones, as pass 2 of 2026-11-27 gave):
    # the bounds keep the rate and the caps at most 1 TB/s (profile/mod.rs
    # limits::RATE), each range non-empty, the rest 100x either way.
    x0 = [math.log(v) for v in (40e3, 50e3, 5e11, 1e5, 4e11, 0.5, 1.0, 5e3)]
    lo, hi = calibrate.search_bounds(x0[:6])
    for i in (2, 3, 4):
        assert math.exp(hi[i]) <= calibrate.RATE_MAX
        assert math.exp(lo[i]) >= calibrate.RATE_MIN
        assert lo[i] < hi[i]
    assert hi[0] - x0[0] == pytest.approx(4.6) and x0[0] - lo[0] == pytest.approx(4.6)
    assert hi[3] - x0[3] == pytest.approx(4.6)
    assert len(calibrate.search_bounds(x0[:7])[0]) == 7
