#!/usr/bin/env python3
"""flashpath and MQSim side by side on matched synthetic workloads.

    python3 bench/mqsim/compare.py MQSIM_DIR [--requests N] [--qd N] [--runs N]
                                   [--quick] [--workloads a,b] [--device NAME]
                                   [--set KEY=VALUE ...] [--work DIR]

MQSIM_DIR is a checkout of CMU-SAFARI/MQSim; it is built with its own
Makefile (-O3). For every workload the script writes an MQSim workload XML
(one synthetic flow) and the matching fio job, runs the two simulators
alternately --runs times (the order flips every round, so a machine whose
load drifts charges both alike) and prints a markdown table: whole-process
wall time and peak RSS (os.wait4's ru_maxrss, as /usr/bin/time -v reports
it), their ratios, and each tool's simulated IOPS and mean latency so a
reader can see the two model the same device. README.md says what is
matched and what is not. Standard library only.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

SECTOR = 512  # MQSim counts request sizes and addresses in 512 B sectors.

# MQSim's default device (ssdconfig.xml of 7ec40e3) in flashpath terms, on
# top of the ufs21-64g profile, for a flashpath without the mqsim-default
# profile. Each value is read off ssdconfig.xml or derived from it:
MQSIM_OVERRIDES: tuple[str, ...] = (
    # Flash_Channel_Count, Chip_No_Per_Channel, Die_No_Per_Chip,
    # Plane_No_Per_Die, Block_No_Per_Plane, Page_No_Per_Block, Page_Capacity.
    "device.flash.channels=8",
    "device.flash.chips_per_channel=4",
    "device.flash.dies_per_chip=2",
    "device.flash.planes_per_die=2",
    "device.flash.blocks_per_plane=2048",
    "device.flash.pages_per_block=256",
    "device.flash.page_bytes=8KiB",
    # Page_Read_Latency_*, Page_Program_Latency_* (equal for LSB/CSB/MSB),
    # Block_Erase_Latency.
    "device.flash.t_read=75us",
    "device.flash.t_prog=750us",
    "device.flash.t_erase=3.8ms",
    # Channel_Transfer_Rate 333 MT/s x Flash_Channel_Width 1 byte.
    "device.flash.channel_rate=333MB/s",
    "device.flash.over_provisioning=0.07",
    # CMT_Capacity 2 MiB. MQSim sizes a cached entry as
    # ceil((2 log2(physical pages) + sectors per page) / 8) = ceil(68/8) = 9 B
    # (Address_Mapping_Unit_Page_Level.cpp), so 2097152 / 9 = 233016 entries
    # of one 8 KiB page each: 1.78 GiB of LBA. Its translation pages are
    # flash pages (8 KiB); flashpath's 8 KiB map page of 4 B entries covers
    # 8 MiB, so 227 of them cover the same 1.78 GiB. Assumption: equal LBA
    # coverage is what matters (MQSim caches entries, flashpath map pages).
    "device.flash.map_page_bytes=8KiB",
    "device.flash.map_cache_pages=227",
    # Data_Cache_Capacity 256 MiB used as a write cache (the flows'
    # Device_Level_Data_Caching_Mode WRITE_CACHE), in 4 KiB units.
    "device.flash.write_buffer_units=65536",
    # GC_Exec_Threshold 0.05: MQSim reclaims a block of a plane when fewer
    # than 0.05 x 2048 = 102 of the plane's blocks are free
    # (GC_and_WL_Unit_Base.cpp); a flashpath block spans the die's planes,
    # so GC starts under 102 free blocks and frees one.
    "device.flash.gc_low_free_blocks=102",
    "device.flash.gc_high_free_blocks=103",
)
FALLBACK_DEVICE = "ufs21-64g"
MQSIM_PROFILE = "mqsim-default"


@dataclass(frozen=True)
class Workload:
    name: str
    label: str
    fio_rw: str
    block_kib: int
    read_percent: int
    sequential: bool = False
    # Steady state: the device is full and every page has been overwritten
    # at random once before the measured requests (MQSim's
    # Enabled_Preconditioning, flashpath's precondition_random_overwrites).
    steady: bool = False


WORKLOADS: tuple[Workload, ...] = (
    Workload("randread", "4 KiB random read", "randread", 4, 100),
    Workload("randwrite", "4 KiB random write", "randwrite", 4, 0),
    Workload("seqread", "128 KiB sequential read", "read", 128, 100, sequential=True),
    Workload("randrw", "4 KiB random 70/30 read/write", "randrw", 4, 70),
    Workload(
        "steady-randwrite", "4 KiB random write, steady state", "randwrite", 4, 0, steady=True
    ),
)
STEADY_OVERRIDES = ("device.flash.precondition_random_overwrites=1",)


class BenchError(Exception):
    """A problem the user can fix, reported as one line."""


# ---------------------------------------------------------------- inputs


def fio_job(w: Workload, requests: int, qd: int) -> str:
    """The fio job flashpath runs for `w`: direct async I/O at depth `qd`
    over the whole device, `requests` I/Os in all (fio's number_ios)."""
    lines = [
        f"; {w.label}, {requests} requests at QD{qd}: the flashpath side of",
        "; bench/mqsim/compare.py (the MQSim side is the flow of the same name).",
        f"[{w.name}]",
        "ioengine=libaio",
        "direct=1",
        f"rw={w.fio_rw}",
    ]
    if w.fio_rw == "randrw":
        lines.append(f"rwmixread={w.read_percent}")
    lines += [
        f"bs={w.block_kib}k",
        f"iodepth={qd}",
        "filename=/dev/sda",
        # MQSim draws every address independently (Uniform_ulong in
        # IO_Flow_Synthetic.cpp): no random map.
        "norandommap",
        f"number_ios={requests}",
    ]
    return "\n".join(lines) + "\n"


def _geometry_ids(ssdconfig: ET.Element) -> dict[str, str]:
    """The flow's Channel/Chip/Die/Plane ID lists: every unit of the device."""

    def count(tag: str) -> int:
        node = ssdconfig.find(f".//{tag}")
        if node is None or not (node.text or "").strip().isdigit():
            raise BenchError(f"ssdconfig.xml: no numeric <{tag}>")
        return int((node.text or "").strip())

    def ids(n: int) -> str:
        return ",".join(str(i) for i in range(n))

    return {
        "Channel_IDs": ids(count("Flash_Channel_Count")),
        "Chip_IDs": ids(count("Chip_No_Per_Channel")),
        "Die_IDs": ids(count("Die_No_Per_Chip")),
        "Plane_IDs": ids(count("Plane_No_Per_Die")),
    }


def mqsim_workload(w: Workload, requests: int, qd: int, ssdconfig: ET.Element) -> str:
    """MQSim's workload XML for `w`: one scenario, one synthetic flow over the
    whole logical space that keeps `qd` requests queued and ends after
    `requests` (Stop_Time 0: MQSim ends a flow on Total_Requests_To_Generate
    only when Stop_Time is 0, IO_Flow_Synthetic.cpp)."""
    sectors = w.block_kib * 1024 // SECTOR
    flow: list[tuple[str, str]] = [
        ("Priority_Class", "HIGH"),
        ("Device_Level_Data_Caching_Mode", "WRITE_CACHE"),
        *_geometry_ids(ssdconfig).items(),
        # Read only when Enabled_Preconditioning is true: the steady-state
        # run fills every logical page, as flashpath's prefilled device.
        ("Initial_Occupancy_Percentage", "100"),
        ("Working_Set_Percentage", "100"),
        ("Synthetic_Generator_Type", "QUEUE_DEPTH"),
        ("Read_Percentage", str(w.read_percent)),
        ("Address_Distribution", "STREAMING" if w.sequential else "RANDOM_UNIFORM"),
        ("Percentage_of_Hot_Region", "0"),
        ("Generated_Aligned_Addresses", "true"),
        # fio aligns offsets to the block size (blockalign defaults to bs).
        ("Address_Alignment_Unit", str(sectors)),
        ("Request_Size_Distribution", "FIXED"),
        ("Average_Request_Size", str(sectors)),
        ("Variance_Request_Size", "0"),
        ("Seed", "798"),
        ("Average_No_of_Reqs_in_Queue", str(qd)),
        ("Stop_Time", "0"),
        ("Total_Requests_To_Generate", str(requests)),
    ]
    root = ET.Element("MQSim_IO_Scenarios")
    synthetic = ET.SubElement(ET.SubElement(root, "IO_Scenario"), "IO_Flow_Parameter_Set_Synthetic")
    for tag, value in flow:
        ET.SubElement(synthetic, tag).text = value
    ET.indent(root, space="\t")
    return '<?xml version="1.0" encoding="us-ascii"?>\n' + ET.tostring(root, "unicode") + "\n"


def mqsim_ssdconfig(default: Path, precondition: bool) -> str:
    """MQSim's own ssdconfig.xml with Enabled_Preconditioning set as asked
    (false in the shipped file); nothing else changes."""
    try:
        tree = ET.parse(default)
    except (OSError, ET.ParseError) as exc:
        raise BenchError(f"{default}: cannot read MQSim's device: {exc}") from exc
    node = tree.getroot().find(".//Enabled_Preconditioning")
    if node is None:
        raise BenchError(f"{default}: no <Enabled_Preconditioning>")
    node.text = "true" if precondition else "false"
    return '<?xml version="1.0" encoding="us-ascii"?>\n' + ET.tostring(tree.getroot(), "unicode")


# ---------------------------------------------------------------- outputs


@dataclass
class Sample:
    wall_s: float
    rss_mib: float
    iops: float
    mean_lat_us: float


def flashpath_result(text: str, where: str) -> tuple[float, float]:
    """(IOPS, mean total latency in us) of a fio JSON report: reads and
    writes of every job, the latency weighted by I/O count."""
    try:
        report = json.loads(text)
        iops = 0.0
        lat_sum = 0.0
        ios = 0
        for job in report["jobs"]:
            for ddir in ("read", "write"):
                d = job[ddir]
                iops += float(d["iops"])
                lat_sum += float(d["lat_ns"]["mean"]) * int(d["total_ios"])
                ios += int(d["total_ios"])
    except (ValueError, KeyError, TypeError) as exc:
        raise BenchError(f"{where}: not a fio JSON report ({exc})") from exc
    if ios == 0:
        raise BenchError(f"{where}: the run completed no I/O")
    return iops, lat_sum / ios / 1000.0


def mqsim_result(path: Path, qd: int) -> tuple[float, float]:
    """(IOPS, mean end-to-end request delay in us) of the flows in MQSim's
    results file: one Host.IO_Flow element per flow, each statistic a child
    element (IO_Flow_Base::Report_results_in_XML). MQSim's own IOPS divides
    by the simulated time in whole seconds (an integer division of
    nanoseconds, IO_Flow_Base.cpp), inf under 1 s and up to 2x off under
    2 s; so the IOPS here is Little's law on the closed queue its
    QUEUE_DEPTH generator keeps, `qd` requests in flight per flow:
    qd / mean end-to-end delay."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise BenchError(f"{path}: cannot read MQSim's results: {exc}") from exc
    flows = root.findall("./Host/Host.IO_Flow")
    if not flows:
        raise BenchError(f"{path}: no Host/Host.IO_Flow element")
    iops = 0.0
    delay_sum = 0.0
    total = 0
    for f in flows:
        try:
            count = int(f.findtext("Request_Count", ""))
            delay = float(f.findtext("End_to_End_Request_Delay", ""))
        except ValueError as exc:
            raise BenchError(f"{path}: bad Host.IO_Flow statistic ({exc})") from exc
        if delay <= 0:
            raise BenchError(f"{path}: End_to_End_Request_Delay {delay}, not above 0")
        iops += qd / (delay * 1e-6)
        delay_sum += count * delay
        total += count
    if total == 0:
        raise BenchError(f"{path}: MQSim serviced no request")
    return iops, delay_sum / total


def fmt_wall(s: float) -> str:
    return f"{s:.2f} s" if s < 100 else f"{s:.0f} s"


def fmt_ratio(x: float) -> str:
    return f"{x:.1f}x" if x < 100 else f"{x:.0f}x"


def table(rows: Sequence[tuple[str, Sequence[Sample], Sequence[Sample]]]) -> str:
    """The markdown table: the median of each tool's runs for wall time and
    peak RSS, the ratios MQSim / flashpath (above 1: flashpath is faster or
    smaller), and the simulated IOPS and mean latency of each tool."""
    out = [
        "| workload | flashpath wall, RSS | MQSim wall, RSS | wall ratio | RSS ratio "
        "| flashpath IOPS, mean lat | MQSim IOPS, mean lat |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, fp, mq in rows:
        if not fp or not mq:
            raise ValueError(f"{label}: no runs to summarise")
        med = {
            k: (
                statistics.median(getattr(s, k) for s in fp),
                statistics.median(getattr(s, k) for s in mq),
            )
            for k in ("wall_s", "rss_mib", "iops", "mean_lat_us")
        }
        fw, mw = med["wall_s"]
        fr, mr = med["rss_mib"]
        fi, mi = med["iops"]
        fl, ml = med["mean_lat_us"]
        out.append(
            f"| {label} | {fmt_wall(fw)}, {fr:.0f} MiB | {fmt_wall(mw)}, {mr:.0f} MiB "
            f"| {fmt_ratio(mw / fw)} | {fmt_ratio(mr / fr)} "
            f"| {fi:,.0f}, {fl:,.0f} us | {mi:,.0f}, {ml:,.0f} us |"
        )
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- running


def timed(argv: Sequence[str], cwd: Path, stdout: Path, stderr: Path) -> tuple[float, float, int]:
    """Run `argv` to its end: (wall s, peak RSS MiB, exit status). The RSS is
    wait4's ru_maxrss (KiB on Linux) of the process and the children it
    waited for, as /usr/bin/time -v reports it."""
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        t0 = time.perf_counter()
        # MQSim waits for a key press at its end (cin.get() in main.cpp):
        # stdin at end of file lets it exit.
        try:
            proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        except OSError as exc:
            raise BenchError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024.0, proc.returncode


def flashpath_command(given: str | None) -> list[str]:
    if given:
        return shlex.split(given)
    if importlib.util.find_spec("flashpath") is not None:
        return [sys.executable, "-m", "flashpath.cli"]
    found = shutil.which("flashpath")
    if found is None:
        raise BenchError("flashpath is neither importable nor on PATH: give --flashpath CMD")
    return [found]


def profiles(fp: list[str]) -> list[str]:
    try:
        res = subprocess.run([*fp, "profiles"], capture_output=True, text=True)
    except OSError as exc:
        raise BenchError(f"cannot run {fp[0]}: {exc.strerror or exc}") from exc
    if res.returncode != 0:
        raise BenchError(f"{shlex.join(fp)} profiles failed: {res.stderr.strip()}")
    return [line.split()[0] for line in res.stdout.splitlines() if line.strip()]


def device_choice(device: str | None, available: Sequence[str]) -> tuple[str, list[str]]:
    """(profile, its overrides): mqsim-default when installed, else ufs21-64g
    with MQSIM_OVERRIDES; --device picks another (ufs21-64g always gets the
    override list)."""
    if device is None:
        device = MQSIM_PROFILE if MQSIM_PROFILE in available else FALLBACK_DEVICE
    return device, list(MQSIM_OVERRIDES) if device == FALLBACK_DEVICE else []


def flashpath_sets(base: Sequence[str], w: Workload, user: Sequence[str]) -> list[str]:
    """The --set list of one run: the device's, the workload's
    (preconditioning), then the user's, so the user's win."""
    return [*base, *(STEADY_OVERRIDES if w.steady else ()), *user]


def build_mqsim(src: Path, jobs: int) -> Path:
    makefile = src / "Makefile"
    if not makefile.is_file() or not (src / "src" / "main.cpp").is_file():
        raise BenchError(f"{src}: not an MQSim checkout (no Makefile and src/main.cpp)")
    if "-O3" not in makefile.read_text(errors="replace"):
        print(f"warning: {makefile} does not build with -O3", file=sys.stderr)
    try:
        res = subprocess.run(["make", "-C", str(src), f"-j{jobs}"], capture_output=True, text=True)
    except OSError as exc:
        raise BenchError(f"cannot run make: {exc.strerror or exc}") from exc
    binary = src / "MQSim"
    if res.returncode != 0 or not binary.is_file():
        tail = "\n".join(res.stderr.strip().splitlines()[-5:])
        raise BenchError(f"{src}: make failed (exit {res.returncode}):\n{tail}")
    return binary


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="compare.py", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    p.add_argument("mqsim", type=Path, help="MQSim checkout (built here with its Makefile)")
    p.add_argument("--requests", type=int, default=None, help="requests per workload (1000000)")
    p.add_argument("--qd", type=int, default=32, help="queue depth (32)")
    p.add_argument("--runs", type=int, default=None, help="alternating runs per tool (3)")
    p.add_argument(
        "--quick", action="store_true", help="smoke run: 20000 requests, 1 run unless given"
    )
    p.add_argument(
        "--workloads",
        default=",".join(w.name for w in WORKLOADS),
        help="comma list of " + ", ".join(w.name for w in WORKLOADS),
    )
    p.add_argument(
        "--device",
        default=None,
        help=f"flashpath profile ({MQSIM_PROFILE} if installed, else {FALLBACK_DEVICE} "
        "with MQSim's geometry and timings)",
    )
    p.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="flashpath override, after the device's (repeatable)",
    )
    p.add_argument(
        "--flashpath",
        default=None,
        help="flashpath command (default: this Python's flashpath, else PATH)",
    )
    p.add_argument(
        "--work",
        type=Path,
        default=None,
        help="folder for inputs, outputs and results.json (default: a new temporary one)",
    )
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="make -j for MQSim")
    p.add_argument(
        "--precondition-all",
        action="store_true",
        help="MQSim preconditions every workload (Initial_Occupancy_Percentage 100), so its "
        "device is as full as flashpath's prefilled one; default: the steady-state row only",
    )
    p.add_argument("--write-only", action="store_true", help="write the inputs to --work and stop")
    a = p.parse_args(argv)
    if a.requests is None:
        a.requests = 20_000 if a.quick else 1_000_000
    if a.runs is None:
        a.runs = 1 if a.quick else 3
    for opt in ("requests", "qd", "runs", "jobs"):
        if getattr(a, opt) < 1:
            p.error(f"--{opt}: must be at least 1, got {getattr(a, opt)}")
    names = [n.strip() for n in a.workloads.split(",") if n.strip()]
    known = {w.name: w for w in WORKLOADS}
    bad = [n for n in names if n not in known]
    if bad or not names:
        p.error(f"--workloads: unknown {', '.join(bad) or '(empty)'}; known: {', '.join(known)}")
    a.selected = [known[n] for n in names]
    if a.write_only and a.work is None:
        p.error("--write-only needs --work")
    for s in a.sets:
        if "=" not in s:
            p.error(f"--set {s}: expected KEY=VALUE")
    return a


def write_inputs(
    work: Path, mqsim_src: Path, selected: Sequence[Workload], requests: int, qd: int
) -> None:
    """Every input file in `work`: ssdconfig{,-precondition}.xml, and per
    workload NAME.xml (MQSim) and NAME.fio (flashpath)."""
    default = mqsim_src / "ssdconfig.xml"
    work.mkdir(parents=True, exist_ok=True)
    (work / "ssdconfig.xml").write_text(mqsim_ssdconfig(default, False), encoding="ascii")
    (work / "ssdconfig-precondition.xml").write_text(
        mqsim_ssdconfig(default, True), encoding="ascii"
    )
    config = ET.parse(default).getroot()
    for w in selected:
        (work / f"{w.name}.xml").write_text(
            mqsim_workload(w, requests, qd, config), encoding="ascii"
        )
        (work / f"{w.name}.fio").write_text(fio_job(w, requests, qd), encoding="ascii")


def run_flashpath(
    fp: Sequence[str], work: Path, tag: str, w: Workload, device: str, sets: Sequence[str]
) -> Sample:
    argv = [*fp, "run", f"{w.name}.fio", "--device", device]
    for s in sets:
        argv += ["--set", s]
    argv += ["--output-format", "json"]
    out, err = work / f"{tag}.json", work / f"{tag}.err"
    wall, rss, rc = timed(argv, work, out, err)
    if rc != 0:
        raise BenchError(f"flashpath failed on {w.name} (exit {rc}): see {err}")
    iops, lat = flashpath_result(out.read_text(), str(out))
    return Sample(wall, rss, iops, lat)


def run_mqsim(binary: Path, work: Path, tag: str, w: Workload, qd: int, fill: bool) -> Sample:
    config = "ssdconfig-precondition.xml" if w.steady or fill else "ssdconfig.xml"
    # MQSim names its results after the workload file (main.cpp).
    result = work / f"{w.name}_scenario_1.xml"
    result.unlink(missing_ok=True)
    out = work / f"{tag}.out"
    argv = [str(binary), "-i", config, "-w", f"{w.name}.xml"]
    wall, rss, rc = timed(argv, work, out, work / f"{tag}.err")
    if rc != 0:
        raise BenchError(f"MQSim failed on {w.name} (exit {rc}): see {out}")
    iops, lat = mqsim_result(result, qd)
    result.rename(work / f"{tag}.result.xml")
    return Sample(wall, rss, iops, lat)


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    try:
        src = a.mqsim.resolve()
        if not (src / "ssdconfig.xml").is_file():
            raise BenchError(f"{a.mqsim}: not an MQSim checkout (no ssdconfig.xml)")
        work = (a.work or Path(tempfile.mkdtemp(prefix="mqsim-bench-"))).resolve()
        if any(work.glob("*.result.xml")) and not a.write_only:
            raise BenchError(f"{work}: holds results of an earlier run; give an empty --work")
        try:
            write_inputs(work, src, a.selected, a.requests, a.qd)
        except OSError as exc:
            raise BenchError(f"--work {work}: cannot write: {exc.strerror or exc}") from exc
        if a.write_only:
            print(f"inputs written to {work}")
            return 0
        fp = flashpath_command(a.flashpath)
        device, base = device_choice(a.device, profiles(fp))
        binary = build_mqsim(src, a.jobs)
        samples: dict[str, tuple[list[Sample], list[Sample]]] = {
            w.name: ([], []) for w in a.selected
        }
        for run in range(a.runs):
            # The order flips every round: load drift is charged to both.
            first_fp = run % 2 == 0
            for w in a.selected:
                for tool in ("flashpath", "mqsim") if first_fp else ("mqsim", "flashpath"):
                    tag = f"{w.name}.{tool}.{run}"
                    if tool == "flashpath":
                        sets = flashpath_sets(base, w, a.sets)
                        sample = run_flashpath(fp, work, tag, w, device, sets)
                        samples[w.name][0].append(sample)
                    else:
                        sample = run_mqsim(binary, work, tag, w, a.qd, a.precondition_all)
                        samples[w.name][1].append(sample)
                    print(
                        f"{tag}: {sample.wall_s:.2f} s, {sample.rss_mib:.0f} MiB", file=sys.stderr
                    )
        commit = _git_head(src)
        record = {
            "requests": a.requests,
            "qd": a.qd,
            "runs": a.runs,
            "device": device,
            "sets": [*base, *a.sets],
            "mqsim_commit": commit,
            "mqsim_precondition_all": a.precondition_all,
            "samples": {
                k: {"flashpath": [asdict(s) for s in f], "mqsim": [asdict(s) for s in m]}
                for k, (f, m) in samples.items()
            },
        }
        (work / "results.json").write_text(json.dumps(record, indent=1) + "\n")
        n_sets = len(base) + len(a.sets)
        print(
            f"{a.requests:,} requests at QD{a.qd}, median of {a.runs} alternating run(s); "
            f"flashpath --device {device}{f' with {n_sets} --set' if n_sets else ''}; "
            f"MQSim {commit} on its ssdconfig.xml"
            f"{', preconditioned on every row' if a.precondition_all else ''}. "
            f"Inputs and outputs: {work}\n"
        )
        print(table([(w.label, *samples[w.name]) for w in a.selected]), end="")
    except BenchError as err:
        print(f"compare.py: error: {err}", file=sys.stderr)
        return 1
    return 0


def _git_head(src: Path) -> str:
    res = subprocess.run(
        ["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return res.stdout.strip() if res.returncode == 0 else "(not a git checkout)"


if __name__ == "__main__":
    sys.exit(main())
