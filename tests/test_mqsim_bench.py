"""bench/mqsim/compare.py without MQSim: the workload XML it writes, the
fio jobs (parsed and run by flashpath), the result readers and the table."""

from __future__ import annotations

import importlib.util
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

from conftest import REPO, cli

SCRIPT = REPO / "bench" / "mqsim" / "compare.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mqsim_compare", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mqsim_compare"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


cmp = _load()

# The element names MQSim's IO_Flow_Parameter_Set_Synthetic::XML_deserialize
# and its base class compare against (src/exec/IO_Flow_Parameter_Set.cpp,
# MQSim 7ec40e3): an element not in this list is silently ignored by MQSim.
MQSIM_SYNTHETIC_TAGS = {
    "Priority_Class",
    "Device_Level_Data_Caching_Mode",
    "Channel_IDs",
    "Chip_IDs",
    "Die_IDs",
    "Plane_IDs",
    "Initial_Occupancy_Percentage",
    "Working_Set_Percentage",
    "Synthetic_Generator_Type",
    "Read_Percentage",
    "Address_Distribution",
    "Percentage_of_Hot_Region",
    "Generated_Aligned_Addresses",
    "Address_Alignment_Unit",
    "Request_Size_Distribution",
    "Average_Request_Size",
    "Variance_Request_Size",
    "Seed",
    "Average_No_of_Reqs_in_Queue",
    "Bandwidth",
    "Stop_Time",
    "Total_Requests_To_Generate",
}

# The part of MQSim's ssdconfig.xml the script reads, with the shipped
# values (8 channels x 4 chips x 2 dies x 2 planes).
SSDCONFIG = """<?xml version="1.0" encoding="us-ascii"?>
<Execution_Parameter_Set>
\t<Host_Parameter_Set><PCIe_Lane_Count>4</PCIe_Lane_Count></Host_Parameter_Set>
\t<Device_Parameter_Set>
\t\t<Seed>321</Seed>
\t\t<Enabled_Preconditioning>false</Enabled_Preconditioning>
\t\t<Flash_Channel_Count>8</Flash_Channel_Count>
\t\t<Chip_No_Per_Channel>4</Chip_No_Per_Channel>
\t\t<Flash_Parameter_Set>
\t\t\t<Die_No_Per_Chip>2</Die_No_Per_Chip>
\t\t\t<Plane_No_Per_Die>2</Plane_No_Per_Die>
\t\t</Flash_Parameter_Set>
\t</Device_Parameter_Set>
</Execution_Parameter_Set>
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """An MQSim checkout as far as the input writer needs one."""
    src = tmp_path / "MQSim"
    src.mkdir()
    (src / "ssdconfig.xml").write_text(SSDCONFIG)
    return src


def flow(text: str) -> dict[str, str]:
    root = ET.fromstring(text.split("\n", 1)[1])
    assert root.tag == "MQSim_IO_Scenarios"
    scenarios = root.findall("IO_Scenario")
    assert len(scenarios) == 1
    flows = list(scenarios[0])
    assert [f.tag for f in flows] == ["IO_Flow_Parameter_Set_Synthetic"]
    return {e.tag: (e.text or "") for e in flows[0]}


@pytest.mark.parametrize("w", cmp.WORKLOADS, ids=lambda w: w.name)
def test_workload_xml_has_the_flow_asked_for(w: object) -> None:
    config = ET.fromstring(SSDCONFIG.split("\n", 1)[1])
    f = flow(cmp.mqsim_workload(w, 123_457, 17, config))
    assert set(f) <= MQSIM_SYNTHETIC_TAGS, set(f) - MQSIM_SYNTHETIC_TAGS
    assert f["Total_Requests_To_Generate"] == "123457"
    # Any other stop time makes MQSim ignore the request count.
    assert f["Stop_Time"] == "0"
    assert f["Synthetic_Generator_Type"] == "QUEUE_DEPTH"
    assert f["Average_No_of_Reqs_in_Queue"] == "17"
    assert int(f["Average_Request_Size"]) * 512 == w.block_kib * 1024
    assert f["Address_Alignment_Unit"] == f["Average_Request_Size"]
    assert f["Read_Percentage"] == str(w.read_percent)
    assert f["Address_Distribution"] == ("STREAMING" if w.sequential else "RANDOM_UNIFORM")
    assert f["Working_Set_Percentage"] == "100"
    assert f["Channel_IDs"] == "0,1,2,3,4,5,6,7"
    assert f["Chip_IDs"] == "0,1,2,3"
    assert f["Die_IDs"] == f["Plane_IDs"] == "0,1"


def test_write_inputs_writes_every_file_and_one_precondition_change(
    checkout: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    chosen = [w for w in cmp.WORKLOADS if w.name in ("randrw", "seqread")]
    cmp.write_inputs(work, checkout, chosen, 5000, 4)
    assert sorted(p.name for p in work.iterdir()) == [
        "randrw.fio",
        "randrw.xml",
        "seqread.fio",
        "seqread.xml",
        "ssdconfig-precondition.xml",
        "ssdconfig.xml",
    ]
    assert flow((work / "randrw.xml").read_text())["Read_Percentage"] == "70"

    def elements(path: Path) -> list[tuple[str, str]]:
        root = ET.parse(path).getroot()
        return [(e.tag, (e.text or "").strip()) for e in root.iter()]

    plain = elements(work / "ssdconfig.xml")
    pre = elements(work / "ssdconfig-precondition.xml")
    assert plain == elements(checkout / "ssdconfig.xml")
    diff = [(a, b) for a, b in zip(plain, pre, strict=True) if a != b]
    assert diff == [(("Enabled_Preconditioning", "false"), ("Enabled_Preconditioning", "true"))]


def test_fio_job_text() -> None:
    w = next(w for w in cmp.WORKLOADS if w.name == "randrw")
    lines = cmp.fio_job(w, 1000, 32).splitlines()
    assert "[randrw]" in lines
    for want in ("rw=randrw", "rwmixread=70", "bs=4k", "iodepth=32", "number_ios=1000"):
        assert want in lines


def device_sets(w: object) -> list[str]:
    device, base = cmp.device_choice(cmp.FALLBACK_DEVICE, [])
    return [device, *(x for s in cmp.flashpath_sets(base, w, []) for x in ("--set", s))]


def without_preconditioning(args: list[str]) -> list[str]:
    """The --set list less the steady state's preconditioning: building a
    device preconditions its FTL, minutes for 512 GiB, even for
    --parse-only. test_steady_overrides_are_valid checks that value."""
    out: list[str] = []
    for a in args:
        if a in cmp.STEADY_OVERRIDES:
            out.pop()
        else:
            out.append(a)
    return out


@pytest.mark.parametrize("w", cmp.WORKLOADS, ids=lambda w: w.name)
def test_fio_jobs_parse_with_flashpath_on_the_mqsim_device(w: object, tmp_path: Path) -> None:
    job = tmp_path / "job.fio"
    job.write_text(cmp.fio_job(w, 1_000_000, 32))
    device, *sets = without_preconditioning(device_sets(w))
    r = cli("run", str(job), "--device", device, *sets, "--parse-only")
    assert r.returncode == 0, r.stderr


def test_steady_overrides_are_valid() -> None:
    steady = next(w for w in cmp.WORKLOADS if w.steady)
    device, *sets = device_sets(steady)
    r = cli("profile", "show", device, *sets)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if "precondition_random_overwrites" in ln)
    assert line.split()[1] == "1"


def test_override_list_gives_mqsim_geometry() -> None:
    device, base = cmp.device_choice(cmp.FALLBACK_DEVICE, [])
    r = cli("profile", "show", device, *(x for s in base for x in ("--set", s)))
    assert r.returncode == 0, r.stderr
    shown = {ln.split()[0]: ln.split()[1] for ln in r.stdout.splitlines() if ln[:1].isalpha()}
    expect = {
        "device.flash.channels": "8",
        "device.flash.chips_per_channel": "4",
        "device.flash.dies_per_chip": "2",
        "device.flash.planes_per_die": "2",
        "device.flash.blocks_per_plane": "2048",
        "device.flash.pages_per_block": "256",
        "device.flash.t_read": "75",
        "device.flash.t_prog": "750",
        "device.flash.t_erase": "3.8",
    }
    assert {k: shown.get(k) for k in expect} == expect


def test_a_short_run_does_the_requested_requests_and_reads_back(tmp_path: Path) -> None:
    w = next(w for w in cmp.WORKLOADS if w.name == "randrw")
    job = tmp_path / "job.fio"
    job.write_text(cmp.fio_job(w, 3000, 32))
    device, *sets = device_sets(w)
    r = cli("run", str(job), "--device", device, *sets, "--output-format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rd, wr = doc["jobs"][0]["read"], doc["jobs"][0]["write"]
    assert rd["total_ios"] + wr["total_ios"] == 3000
    assert rd["total_ios"] > wr["total_ios"] > 0
    iops, lat_us = cmp.flashpath_result(r.stdout, "job")
    assert iops == pytest.approx(rd["iops"] + wr["iops"])
    lo, hi = sorted((rd["lat_ns"]["mean"], wr["lat_ns"]["mean"]))
    assert lo / 1000 <= lat_us <= hi / 1000


def test_flashpath_result_weights_latency_by_ios() -> None:
    def d(iops: float, ios: int, lat: float) -> dict[str, object]:
        return {"iops": iops, "total_ios": ios, "lat_ns": {"mean": lat}}

    doc = {"jobs": [{"read": d(700, 7, 1000.0), "write": d(300, 3, 11000.0)}]}
    assert cmp.flashpath_result(json.dumps(doc), "x") == (1000.0, 4.0)
    with pytest.raises(cmp.BenchError, match="x: not a fio JSON report"):
        cmp.flashpath_result("{}", "x")
    empty = {"jobs": [{"read": d(0, 0, 0.0), "write": d(0, 0, 0.0)}]}
    with pytest.raises(cmp.BenchError, match="completed no I/O"):
        cmp.flashpath_result(json.dumps(empty), "x")


def test_mqsim_result_reads_the_flow_statistics(tmp_path: Path) -> None:
    # The shape of MQSim's <workload>_scenario_1.xml (XmlWriter writes each
    # "attribute" as a child element): Host, then one Host.IO_Flow per flow
    # (Host_System::Report_results_in_XML, IO_Flow_Base.cpp).
    def result(delay: str) -> Path:
        p = tmp_path / "w_scenario_1.xml"
        p.write_text(
            '<?xml version="1.0" encoding="us-ascii"?>\n<MQSim_Results><Host>'
            "<Host.IO_Flow><Name>Host.IO_Flow.Synth.No_0</Name>"
            "<Request_Count>300</Request_Count><IOPS>inf</IOPS>"
            "<Device_Response_Time>10</Device_Response_Time>"
            f"<End_to_End_Request_Delay>{delay}</End_to_End_Request_Delay></Host.IO_Flow>"
            "<Host.IO_Flow><Name>Host.IO_Flow.Synth.No_1</Name>"
            "<Request_Count>100</Request_Count><IOPS>100.000000</IOPS>"
            "<Device_Response_Time>30</Device_Response_Time>"
            "<End_to_End_Request_Delay>64</End_to_End_Request_Delay></Host.IO_Flow>"
            "</Host><SSDDevice/></MQSim_Results>\n"
        )
        return p

    # Little's law on each closed queue: 32 in flight, 20 us and 64 us each;
    # MQSim's own IOPS (whole-second division) is not used.
    iops, delay = cmp.mqsim_result(result("20"), 32)
    assert iops == pytest.approx(32 / 20e-6 + 32 / 64e-6)
    assert delay == (300 * 20 + 100 * 64) / 400
    with pytest.raises(cmp.BenchError, match="bad Host.IO_Flow statistic"):
        cmp.mqsim_result(result("lots"), 32)
    with pytest.raises(cmp.BenchError, match="End_to_End_Request_Delay 0.0, not above 0"):
        cmp.mqsim_result(result("0"), 32)
    with pytest.raises(cmp.BenchError, match="cannot read MQSim's results"):
        cmp.mqsim_result(tmp_path / "missing.xml", 32)


def test_table_medians_and_ratios() -> None:
    s = cmp.Sample
    fp = [s(1.0, 20.0, 100.0, 5.0), s(3.0, 24.0, 100.0, 5.0), s(2.0, 22.0, 100.0, 5.0)]
    mq = [s(30.0, 2000.0, 90.0, 6.0), s(50.0, 2200.0, 90.0, 6.0), s(40.0, 2100.0, 90.0, 6.0)]
    out = cmp.table([("4 KiB random read", fp, mq)]).splitlines()
    assert len(out) == 3
    assert out[0].count("|") == out[1].count("|") == out[2].count("|") == 8
    cells = [c.strip() for c in out[2].strip("|").split("|")]
    assert cells == [
        "4 KiB random read",
        "2.00 s, 22 MiB",
        "40.00 s, 2100 MiB",
        "20.0x",
        "95.5x",
        "100, 5 us",
        "90, 6 us",
    ]
    big = cmp.table([("w", [s(0.1, 10.0, 1e6, 1.0)], [s(25.0, 3000.0, 1e6, 1.0)])])
    assert "| 250x | 300x |" in big
    with pytest.raises(ValueError, match="w: no runs"):
        cmp.table([("w", [], mq)])


def test_device_choice_prefers_the_mqsim_profile() -> None:
    assert cmp.device_choice(None, ["nullblk", "mqsim-default"]) == ("mqsim-default", [])
    device, base = cmp.device_choice(None, ["nullblk", "ufs21-64g"])
    assert (device, base) == ("ufs21-64g", list(cmp.MQSIM_OVERRIDES))
    assert cmp.device_choice("nvme-intel", ["ufs21-64g"]) == ("nvme-intel", [])
    steady = next(w for w in cmp.WORKLOADS if w.steady)
    sets = cmp.flashpath_sets(["a=1"], steady, ["a=2"])
    assert sets == ["a=1", *cmp.STEADY_OVERRIDES, "a=2"]


def test_options_and_bad_input(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = cmp.parse_args([str(checkout), "--quick"])
    assert (a.requests, a.runs, a.qd) == (20_000, 1, 32)
    a = cmp.parse_args([str(checkout)])
    assert (a.requests, a.runs) == (1_000_000, 3)
    assert [w.name for w in a.selected] == [w.name for w in cmp.WORKLOADS]
    for bad, msg in (
        (["--workloads", "randread,nope"], "--workloads: unknown nope"),
        (["--qd", "0"], "--qd: must be at least 1"),
        (["--set", "novalue"], "--set novalue: expected KEY=VALUE"),
        (["--write-only"], "--write-only needs --work"),
    ):
        with pytest.raises(SystemExit) as e:
            cmp.parse_args([str(checkout), *bad])
        assert e.value.code == 2
        assert msg in capsys.readouterr().err
    assert cmp.main([str(checkout.parent / "nowhere"), "--quick"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an MQSim checkout" in err
    a_file = checkout / "ssdconfig.xml"
    assert cmp.main([str(checkout), "--quick", "--work", str(a_file)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--work {a_file}: cannot write" in err
    assert (
        cmp.main([str(checkout), "--quick", "--work", str(checkout / "w"), "--flashpath", "/no/fp"])
        == 1
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot run /no/fp" in err
    a = cmp.parse_args([str(checkout), "--precondition-all"])
    assert a.precondition_all and not cmp.parse_args([str(checkout)]).precondition_all


# A stand-in for MQSim, built by a Makefile as compare.py builds MQSim: it
# reads the workload it is given and writes a results file in MQSim's shape
# (QD 4 requests in flight, each 50 us end to end), logging the config.
FAKE_MQSIM = """#!PYTHON
import sys, xml.etree.ElementTree as ET
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
flow = ET.parse(args["-w"]).getroot().find("IO_Scenario/IO_Flow_Parameter_Set_Synthetic")
n = flow.findtext("Total_Requests_To_Generate")
with open("fake.log", "a") as log:
    log.write(args["-i"] + " " + args["-w"] + "\\n")
out = args["-w"].rsplit(".", 1)[0] + "_scenario_1.xml"
open(out, "w").write(
    "<MQSim_Results><Host><Host.IO_Flow><Request_Count>" + n + "</Request_Count>"
    "<IOPS>inf</IOPS><End_to_End_Request_Delay>50</End_to_End_Request_Delay>"
    "</Host.IO_Flow></Host></MQSim_Results>"
)
sys.stdin.read()
"""


def test_main_runs_both_tools_alternately(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (checkout / "src").mkdir()
    (checkout / "src" / "main.cpp").write_text("")
    (checkout / "fake.py").write_text(FAKE_MQSIM.replace("PYTHON", sys.executable))
    (checkout / "Makefile").write_text(
        "CC_FLAGS := -O3\nall:\n\tcp fake.py MQSim\n\tchmod +x MQSim\n"
    )
    work = tmp_path / "work"
    argv = [str(checkout), "--workloads", "randread,seqread", "--requests", "200"]
    rc = cmp.main([*argv, "--qd", "4", "--runs", "2", "--work", str(work), "--precondition-all"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    rows = [ln for ln in out.splitlines() if ln.startswith("| 4 KiB") or ln.startswith("| 128")]
    assert len(rows) == 2
    # Little's law on the stand-in's closed queue: 4 / 50 us.
    assert all("| 80,000, 50 us |" in r for r in rows)
    record = json.loads((work / "results.json").read_text())
    for name in ("randread", "seqread"):
        for tool in ("flashpath", "mqsim"):
            assert len(record["samples"][name][tool]) == 2
    fp = record["samples"]["randread"]["flashpath"][0]
    assert fp["wall_s"] > 0 and fp["rss_mib"] > 10 and fp["iops"] > 0
    # Every MQSim run got the preconditioned config, as asked.
    log = (work / "fake.log").read_text().splitlines()
    assert (
        log
        == ["ssdconfig-precondition.xml randread.xml", "ssdconfig-precondition.xml seqread.xml"] * 2
    )

    # The order flips every round: flashpath first in round 0, MQSim in 1.
    def t(name: str) -> int:
        return (work / name).stat().st_mtime_ns

    assert t("randread.flashpath.0.json") < t("randread.mqsim.0.out")
    assert t("randread.mqsim.1.out") < t("randread.flashpath.1.json")
    # A second run into the same folder would mix results: refused.
    assert cmp.main([*argv, "--work", str(work)]) == 1
    assert "holds results of an earlier run" in capsys.readouterr().err
