"""Options that change what fio prints about latencies: clat_percentiles,
lat_percentiles, slat_percentiles, percentile_list, unified_rw_reporting,
and the null engine's submission latency.

Each case asserts what fio 3.33's stat.c prints (a property that holds
without fio), then, where the real fio is installed (CI has it), that
flashpath's report has the same shape as fio's for the same job file: the
same direction sections, the same latency objects with percentile maps
under the same keys, the same percentile tables with the same labels.
Numbers differ (a simulated machine is not this one) and are not compared.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import cli

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")

BASE = "[job]\nioengine=null\nsize=1m\nbs=4k\n"


def job(tmp_path: Path, extra: str) -> Path:
    p = tmp_path / "job.fio"
    p.write_text(BASE + extra)
    return p


def ours(path: Path, fmt: str) -> str:
    r = cli("run", str(path), "--device", "nullblk", "--output-format", fmt)
    assert r.returncode == 0, r.stderr
    return r.stdout


def real(path: Path, fmt: str) -> str:
    assert FIO is not None
    r = subprocess.run(
        [FIO, "--output-format", fmt, path.name],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def shape(doc: dict[str, Any]) -> dict[str, Any]:
    """Per direction section of the first job: which latency objects have
    samples and which percentile keys they carry."""
    j = doc["jobs"][0]
    out: dict[str, Any] = {}
    for d in ("read", "write", "trim", "mixed"):
        if d not in j:
            continue
        sec = j[d]
        out[d] = {
            k: (sec[k]["N"] > 0, sorted(sec[k].get("percentile", {})))
            for k in ("slat_ns", "clat_ns", "lat_ns")
        }
    return out


def tables(text: str) -> list[tuple[str, list[str]]]:
    """The normal output's direction lines and percentile tables: each
    table's heading word with its labels ('50', '99.90', ...)."""
    out: list[tuple[str, list[str]]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^  (read|write|trim|mixed): IOPS", line)
        if m:
            out.append((m.group(1), []))
        m = re.match(r"^    (slat|clat|lat) percentiles \(\w+\):", line)
        if m:
            labels: list[str] = []
            for row in lines[i + 1 :]:
                if not row.startswith("     |"):
                    break
                labels += re.findall(r"([\d.]+)th=\[", row)
            out.append((m.group(1), labels))
        m = re.match(r"^\s*(READ|WRITE|TRIM|MIXED): bw=", line)
        if m:
            out.append((m.group(1), []))
    return out


CASES = {
    "defaults": "rw=randread\n",
    "clat-off": "rw=randread\nclat_percentiles=0\n",
    "lat-on": "rw=randread\nlat_percentiles=1\n",
    "lat-only-list": "rw=randread\nclat_percentiles=0\nlat_percentiles=1\npercentile_list=99:50\n",
    "slat-deep": "rw=randread\niodepth=4\nslat_percentiles=1\npercentile_list=10:99.999\n",
    "list-cut-at-zero": "rw=randread\npercentile_list=90:0:50\n",
    "mixed": "rw=randrw\nunified_rw_reporting=1\nlat_percentiles=1\n",
    "mixed-word": "rw=randrw\nunified_rw_reporting=mixed\n",
    "both": "rw=randrw\nunified_rw_reporting=both\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_report_shape_follows_stat_c(tmp_path: Path, name: str) -> None:
    """What stat.c prints, held without fio."""
    path = job(tmp_path, CASES[name])
    doc = json.loads(ours(path, "json"))
    s = shape(doc)
    text = ours(path, "normal")
    t = tables(text)
    default_labels = [
        "1.00", "5.00", "10.00", "20.00", "30.00", "40.00", "50.00", "60.00", "70.00",
        "80.00", "90.00", "95.00", "99.00", "99.50", "99.90", "99.95", "99.99",
    ]  # fmt: skip
    if name == "defaults":
        assert s["read"]["clat_ns"][1] == sorted(f"{float(x):f}" for x in default_labels)
        assert s["read"]["lat_ns"][1] == [] and s["read"]["slat_ns"][1] == []
        assert ("clat", default_labels) in t
    elif name == "clat-off":
        assert all(v[1] == [] for v in s["read"].values())
        assert not any(kind.endswith("lat") for kind, _ in t)
    elif name == "lat-on":
        assert s["read"]["clat_ns"][1] and s["read"]["lat_ns"][1]
        assert [k for k, _ in t if k.endswith("lat")] == ["clat", "lat"]
    elif name == "lat-only-list":
        # The list is sorted and printed with its own precision (none).
        assert s["read"]["lat_ns"][1] == ["50.000000", "99.000000"]
        assert s["read"]["clat_ns"][1] == []
        assert ("lat", ["50", "99"]) in t
    elif name == "slat-deep":
        # The null engine at iodepth > 1 records submission latency
        # (engines/null.c: FIO_ASYNCIO_SETS_ISSUE_TIME).
        assert s["read"]["slat_ns"] == (True, ["10.000000", "99.999000"])
        assert ("slat", ["10.000", "99.999"]) in t
    elif name == "list-cut-at-zero":
        # calc_clat_percentiles reads the list up to its first 0.
        assert s["read"]["clat_ns"][1] == ["90.000000"]
        assert ("clat", ["90"]) in t
    elif name == "both":
        # The split entries, then the mixed one (show_mixed_ddir_status,
        # add_mixed_ddir_status_json, show_mixed_group_stats).
        j = doc["jobs"][0]
        assert list(s) == ["read", "write", "trim", "mixed"]
        assert j["mixed"]["total_ios"] == j["read"]["total_ios"] + j["write"]["total_ios"] == 256
        kinds = [k for k, _ in t if k in ("read", "write", "mixed", "READ", "WRITE", "MIXED")]
        assert kinds == ["read", "write", "mixed", "READ", "WRITE", "MIXED"]
        assert len(ours(path, "terse").strip().split(";")) == 121 + 41
    else:
        j = doc["jobs"][0]
        assert list(s) == ["mixed"] and not {"read", "write", "trim"} & set(j)
        assert j["mixed"]["total_ios"] == 256
        assert [k for k, _ in t if k.isupper()] == ["MIXED"]
        assert [k for k, _ in t if k in ("read", "write", "mixed")] == ["mixed"]
        terse = ours(path, "terse").strip().split(";")
        # One direction instead of two: 41 fields (io, bw, iops, runtime,
        # slat, clat, 20 percentiles, lat, bw stats) fewer than the 121 of a
        # terse v3 line without disk stats (the null engine has none).
        assert len(terse) == 121 - 41


@need_fio
@pytest.mark.parametrize("name", sorted(CASES))
def test_report_shape_matches_the_real_fio(tmp_path: Path, name: str) -> None:
    path = job(tmp_path, CASES[name])
    assert shape(json.loads(ours(path, "json"))) == shape(json.loads(real(path, "json")))
    assert tables(ours(path, "normal")) == tables(real(path, "normal"))
    ours_terse = ours(path, "terse").strip().split(";")
    real_terse = real(path, "terse").strip().split(";")
    assert len(ours_terse) == len(real_terse)
    labels = re.compile(r"^[\d.]+%=")
    assert [x.split("=")[0] for x in ours_terse if labels.match(x)] == [
        x.split("=")[0] for x in real_terse if labels.match(x)
    ]


@need_fio
def test_out_of_range_iodepth_is_printed_and_runs_at_depth_one(tmp_path: Path) -> None:
    path = job(tmp_path, "rw=randread\niodepth=-1\n")
    r = cli("run", str(path), "--device", "nullblk")
    f = subprocess.run([FIO, path.name], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and f.returncode == 0
    assert r.stderr == f.stderr == "iodepth: min value out of range: -1 (1 min)\n"
    head = r"^job: \(g=0\):.*iodepth=(\d+)$"
    assert re.search(head, r.stdout, re.M).group(1) == "1"  # type: ignore[union-attr]
    assert re.search(head, f.stdout, re.M).group(1) == "1"  # type: ignore[union-attr]


def test_out_of_range_iodepth_without_fio(tmp_path: Path) -> None:
    path = job(tmp_path, "rw=randread\niodepth=-1\n")
    r = cli("run", str(path), "--device", "nullblk", "--output-format", "json")
    assert r.returncode == 0
    assert r.stderr == "iodepth: min value out of range: -1 (1 min)\n"
    # iodepth=0 is refused as fio refuses it (no later part to fall back on).
    bad = cli("run", str(job(tmp_path, "iodepth=0\n")), "--device", "nullblk")
    assert bad.returncode != 0 and "min value out of range: 0 (1 min)" in bad.stderr
