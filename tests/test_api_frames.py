"""The Python API's DataFrames: a run's summary, latency histogram and
logs, and flashpath.sweep()."""

from __future__ import annotations

from pathlib import Path

import pytest

import flashpath

# libaio QD1 on null_blk: every read's clat is 12,800 ns (design.md 3.1).
JOB = (
    "[j]\nioengine=libaio\ndirect=1\nrw=randrw\nbs=4k\nsize=1m\nnumber_ios=40\n"
    "write_lat_log=lj\nwrite_iolog=io.log\n"
)


def test_summary_has_every_figure_per_direction() -> None:
    res = flashpath.run(JOB, device="nullblk")
    df = res.summary()
    assert list(df["ddir"]) == ["read", "write"]
    assert int(df["total_ios"].sum()) == 40
    assert (df["clat_ns.mean"] == 12800).all()
    # Percentiles are fio's histogram bin values: the bin that holds 12,800.
    assert (df["clat_ns.p99"] == df["clat_ns.p1"]).all()
    assert ((df["clat_ns.p99"] >= 12800) & (df["clat_ns.p99"] < 12800 * 1.04)).all()
    assert "fp.breakdown_ns_per_io.device" in df and "job.usr_cpu" in df


def test_histogram_bins_count_every_io() -> None:
    res = flashpath.run(JOB, device="nullblk")
    hist = res.histogram()
    clat = hist[hist["latency"] == "clat"]
    doc = res.fio_json()["jobs"][0]
    for ddir in ("read", "write"):
        rows = clat[clat["ddir"] == ddir]
        assert int(rows["count"].sum()) == doc[ddir]["total_ios"]
        # fio's histogram bin holding 12,800 ns (its bins are coarse).
        assert list(rows["ns"]) == [int(k) for k in doc[ddir]["clat_ns"]["bins"]]
        assert 12800 <= rows["ns"].iloc[0] < 12800 * 1.04


def test_log_frames_read_fio_logs_and_iologs() -> None:
    res = flashpath.run(JOB, device="nullblk")
    frames = res.log_frames()
    lat = frames["lj_clat.1.log"]
    assert list(lat.columns) == ["time_ms", "value", "ddir", "bs", "prio"]
    assert len(lat) == 40 and (lat["value"] == 12800).all() and set(lat["ddir"]) == {0, 1}
    iolog = frames["io.log"]
    assert list(iolog.columns) == ["time", "file", "action", "offset", "length"]
    io = iolog[iolog["action"].isin(["read", "write"])]
    assert len(io) == 40 and (io["length"] == 4096).all()
    assert (io["offset"] % 4096 == 0).all() and (io["offset"] < 2**20).all()


def test_sweep_api_returns_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    spec = (
        'device = "nullblk"\njob_text = """\n[j]\nioengine=psync\ndirect=1\nrw=read\n'
        'bs=4k\nsize=1m\nnumber_ios=10\n"""\n[grid]\ndevice.completion_nsec = [1000, 3000]\n'
    )
    df = flashpath.sweep(spec)
    assert list(df["device.completion_nsec"]) == [1000, 3000]
    assert df["clat_ns.mean"].diff().iloc[1] == 2000
    with pytest.raises(
        flashpath.FlashpathError, match=r"^<sweep spec>:12: device.completion_nsec = -3: "
    ):
        flashpath.sweep(spec.replace("3000]", "-3]"))
