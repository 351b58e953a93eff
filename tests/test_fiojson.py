"""The fio JSON reader (python/flashpath/fiojson.py) on every fio 3.33
output the repository keeps, and on flashpath's own: the figures it reads
obey fio's own arithmetic (stat.c), the metric names are the documented
ones, and the old names map to them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from flashpath import api, fiojson, reproduce
from flashpath.sweep_table import rows_of_run

# Every fio JSON document under tests/fixtures: the real fio 3.33 runs, the
# calibration runs and the trace captures (all written by real fio).
FIO_DOCS = sorted(
    p
    for p in FIXTURES.rglob("*.json")
    if (text := p.read_text(errors="replace")).lstrip().startswith(("{", "fio"))
    and '"fio version"' in text
)


def test_every_kept_fio_output_is_found() -> None:
    # The real runs alone are 20 documents (json and json+ of ten jobs).
    assert len(FIO_DOCS) >= 30, FIO_DOCS
    assert any("jsonplus" in p.name for p in FIO_DOCS)


@pytest.mark.parametrize("path", FIO_DOCS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_real_fio_output_reads_with_fios_arithmetic(path: Path) -> None:
    run = fiojson.load(path)
    doc = json.loads(path.read_text()[path.read_text().find("{") :])
    assert run.version == doc["fio version"] and run.version.startswith("fio-3.")
    assert [j.name for j in run.jobs] == [j["jobname"] for j in doc["jobs"]]
    assert run.flashpath is None  # real fio has no "flashpath" section
    for job in run.jobs:
        dirs = job.directions()
        for name, d in dirs.items():
            raw = job.raw[name]
            assert d.ios == raw["total_ios"] > 0
            if name == "sync" or job.error:
                continue
            # stat.c show_ddir_status: iops = 1000 * total_io_u / runtime,
            # bw_bytes = 1000 * io_bytes / runtime (runtime in ms), bw in KiB/s.
            assert d.runtime_ms and d.io_bytes is not None and d.bw is not None
            assert d.iops == pytest.approx(1000 * d.ios / d.runtime_ms, rel=1e-6)
            assert d.bw_bytes == pytest.approx(1000 * d.io_bytes / d.runtime_ms, rel=1e-6)
            assert d.bw == d.bw_bytes // 1024
            for kind in fiojson.LATENCIES:
                lat = getattr(d, kind)
                if lat is None or not lat.n:
                    continue
                assert lat.min <= lat.mean <= lat.max, (kind, lat)
                values = list(lat.percentiles.values())
                assert values == sorted(values), (kind, values)
                # json+ counts every sample in its histogram (stat.c).
                if "jsonplus" in path.name and lat.bins:
                    assert sum(lat.bins.values()) == lat.n, (kind, lat.n)
            if "jsonplus" in path.name:
                assert d.clat is not None and d.clat.bins, name
            m = d.metrics()
            assert m[f"{name}.iops"] == raw["iops"]
            assert m[f"{name}.ios"] == raw["total_ios"]
            assert m[f"{name}.lat.mean"] == raw["lat_ns"]["mean"]
            if "99.000000" in raw["clat_ns"].get("percentile", {}):
                assert m[f"{name}.clat.p99"] == raw["clat_ns"]["percentile"]["99.000000"]


def test_the_namespace_names_are_the_documented_ones() -> None:
    page = (REPO / "docs" / "fio-json.md").read_text()
    run = api.run(
        "[j]\nioengine=libaio\ndirect=1\nrw=randrw\nbs=4k\niodepth=4\nsize=1m\nnumber_ios=200\n",
        "nullblk",
        output_format="json+",
    ).run()
    names = run.jobs[0].metrics()
    assert {"read.iops", "read.clat.p99", "write.lat.mean", "read.ios"} <= set(names)
    for name in names:
        # `read.clat.p99.9` is documented as `D.K.pNN`.
        generic = re.sub(r"^(read|write|trim|sync|mixed)\.", "D.", name)
        generic = re.sub(r"\.(slat|clat|lat)\.", ".K.", generic)
        generic = re.sub(r"\.p[0-9.]+$", ".pNN", generic)
        assert f"`{generic}`" in page, name
    assert run.flashpath is not None and "breakdown_ns_per_io" in run.flashpath


def test_old_column_names_map_to_the_same_figures() -> None:
    """Each direction column of the sweep table (docs/sweeps.md) that has a
    name in the namespace holds that figure."""
    checked = 0
    for path in FIO_DOCS:
        run = fiojson.load(path)
        if any(j.error for j in run.jobs):
            continue
        for row in rows_of_run(run.raw):
            ddir = row["ddir"]
            if ddir == "none":
                continue
            metrics = run.jobs[row["job_index"]].metrics()
            for column, value in row.items():
                new = fiojson.new_name(column, ddir)
                if new in metrics:
                    assert metrics[new] == value, (path, column, new)
                    checked += 1
        for old in fiojson.OLD_NAMES:
            assert fiojson.new_name(old, "read").startswith("read.")
    assert checked > 500


def test_reproduce_extractors_are_the_readers_aggregates() -> None:
    """reproduce's `D.stat` extractors (scenarios/*.toml) computed by hand
    from fio's figures on a real run of three jobs, two of them writing."""
    path = FIXTURES / "fio" / "real-runs" / "multi-section-global" / "out.json"
    doc = json.loads(path.read_text())
    writes = [j["write"] for j in doc["jobs"] if j["write"]["total_ios"] > 0]
    n = sum(d["total_ios"] for d in writes)
    assert len(writes) == 2
    expected = {
        "write.bw_MBps": sum(d["bw_bytes"] for d in writes) / 1e6,
        "write.job_bw_MBps": sum(d["bw_bytes"] for d in writes) / 2 / 1e6,
        "write.iops": sum(d["iops"] for d in writes),
        "write.lat_mean_us": sum(d["lat_ns"]["mean"] * d["total_ios"] for d in writes) / n / 1e3,
        "write.clat_min_us": min(d["clat_ns"]["min"] for d in writes) / 1e3,
        "write.clat_max_us": max(d["clat_ns"]["max"] for d in writes) / 1e3,
        "trim.iops": 0.0,
        "rw.bw_MiBps": sum(j[k]["bw_bytes"] for j in doc["jobs"] for k in ("read", "write"))
        / 2**20,
    }
    for extractor, value in expected.items():
        assert reproduce.extract(doc, extractor) == pytest.approx(value, rel=1e-12), extractor
    with pytest.raises(KeyError):
        reproduce.extract(doc, "write.no_such_stat")


def _doc() -> dict:  # type: ignore[type-arg]
    return json.loads((FIXTURES / "calibrate" / "randread-4k-qd1.json").read_text())


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d.pop("fio version"), "not fio JSON output: no 'fio version' and 'jobs'"),
        (lambda d: d.update({"jobs": []}), "no jobs in the fio output"),
        (lambda d: d["jobs"][0].update(jobname="a]b"), 'job "a]b": not a fio job name'),
        (lambda d: d["jobs"][0]["read"].update(iops="7"), "job 'randread-4k-qd1': read.iops: "),
        (lambda d: d["jobs"][0]["read"]["clat_ns"].update(min=-1), "read.clat_ns.min: -1 is neg"),
        (
            lambda d: d["jobs"][0]["read"]["clat_ns"]["percentile"].update({"x": 5}),
            'read.clat_ns.percentile: "x" is not a percentile',
        ),
        (lambda d: d["jobs"][0]["read"].update(slat_ns=[]), "read.slat_ns is not a table"),
        (
            lambda d: d["jobs"][0]["read"]["clat_ns"].update(bins={"1e3": 1}),
            'read.clat_ns.bins: "1e3" is not a latency in ns',
        ),
        (
            lambda d: d["jobs"][0]["read"]["clat_ns"].update(bins={"1000": 1.5}),
            "read.clat_ns.bins.1000: 1.5 is not a whole number",
        ),
        (lambda d: d["jobs"][0].pop("trim"), "no 'trim' section"),
    ],
)
def test_a_bad_document_is_one_message_naming_the_field(edit, expected: str) -> None:  # type: ignore[no-untyped-def]
    doc = _doc()
    edit(doc)
    with pytest.raises(fiojson.FioJsonError) as err:
        for job in fiojson.read(doc, "run.json").jobs:
            job.directions()
    assert str(err.value).startswith("run.json: "), err.value
    assert expected in str(err.value), err.value


def test_the_api_reads_its_result_through_the_reader() -> None:
    result = api.run(
        "[j]\nioengine=libaio\ndirect=1\nrw=randrw\nbs=4k\niodepth=2\nsize=1m\nnumber_ios=300\n",
        "nullblk",
        output_format="json+",
    )
    raw = result.fio_json()["jobs"][0]
    assert result.metric("read.iops") == raw["read"]["iops"]
    p99 = raw["write"]["clat_ns"]["percentile"]["99.000000"]
    assert result.metric("write.clat.p99") == result.metric("write.clat_ns.p99") == p99
    assert result.metric("read.ios") == result.metric("read.total_ios") == raw["read"]["total_ios"]
    with pytest.raises(KeyError, match="trim.iops: not a figure of job 0"):
        result.metric("trim.iops")
    frame = result.to_pandas()
    assert list(frame["ddir"]) == ["read", "write"]
    for _, row in frame.iterrows():
        d = raw[row["ddir"]]
        assert row["total_ios"] == d["total_ios"] and row["iops"] == d["iops"]
        assert row["clat_p99_ns"] == d["clat_ns"]["percentile"]["99.000000"]
        assert row["lat_mean_ns"] == d["lat_ns"]["mean"]


def test_plot_decodes_a_run_through_the_reader(tmp_path: Path) -> None:
    from flashpath.plot import PlotError, plot

    source = tmp_path / "bad.json"
    source.write_text('{"jobs": [}')
    with pytest.raises(PlotError) as err:
        plot(str(source), str(tmp_path / "p.png"), kind="cdf")
    # The file as plot's messages quote it, then the reader's words.
    assert str(err.value).startswith("'/"), err.value
    assert ": not fio JSON output (Expecting value" in str(err.value)
    assert not (tmp_path / "p.png").exists()
    # fio's notes before the document are skipped, as for calibrate.
    source.write_text("fio: note\n" + json.dumps(_doc()))
    plot(str(source), str(tmp_path / "p.png"), kind="cdf")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_an_extractor_over_a_run_without_its_figure_names_it() -> None:
    # Found by the fio_json fuzz target: a latency table without "min"
    # made reproduce's clat_min_us a KeyError.
    doc = _doc()
    del doc["jobs"][0]["read"]["clat_ns"]["min"]
    with pytest.raises(
        fiojson.FioJsonError,
        match="<run>: job 'randread-4k-qd1': read has no clat.min for clat_min_us",
    ):
        reproduce.extract(doc, "read.clat_min_us")
    assert reproduce.extract(doc, "read.clat_max_us") > 0


def test_a_jobs_errors_are_read_as_fio_writes_them() -> None:
    # Reads over a bad sector range with continue_on_error: fio 3.33
    # writes error (the first errno), total_err and first_error.
    job = "[j]\nioengine=libaio\ndirect=1\nrw=read\nbs=4k\nsize=1m\ncontinue_on_error=read\n"
    result = api.run(job, "nullblk", ["device.badblocks=[0,15]"], output_format="json")
    [j] = result.run().jobs
    assert (j.error, j.total_err, j.first_error) == (5, 2, 5)
    # The I/Os that failed are counted with those that did not (fio's
    # total_ios), and the figures are still checked.
    assert j.direction("read") is not None and j.direction("read").ios == 256
    clean = api.run(job, "nullblk", output_format="json").run().jobs[0]
    assert (clean.error, clean.total_err, clean.first_error) == (0, 0, 0)
    plain = fiojson.read(_doc(), "run.json").jobs[0]
    assert (plain.error, plain.total_err, plain.first_error) == (0, None, None)
