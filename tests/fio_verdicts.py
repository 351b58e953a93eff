"""Ask the real fio 3.33 which option values it accepts.

For every option in flashpath's table (crates/flashpath/src/workload/fio/
options.rs) this makes a battery of values (empty, bare, defaults, each
valid value fio lists, negative, 0, huge, 2^64, floats, garbage, bad
suffixes, ranges, lists, `${UNSET}`, and per-option forms), runs each as a
one-job section through a real fio run (ioengine=null, size=64k) and
records fio's verdict: `ok`, or `refused` with fio's first error line.

Pairs are run as many job sections per fio invocation (fio parses every
section before it runs any); a parse-time failure names its section
(`--debug=parse` prints "Parsing section [...]" before each), that pair is
marked and the rest are run again; run-time errors come per job from the
JSON output. A batch still running after a few seconds (rate=1,
thinktime=1h...) gets SIGINT, which makes fio stop its jobs and write the
JSON; a job that had not failed by then is `ok`.

    python3 tests/fio_verdicts.py            # writes tests/fixtures/fio-verdicts/verdicts.tsv

The same machinery re-asks fio for a sample of rows in
tests/test_fio_verdicts.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OPTIONS_RS = REPO / "crates" / "flashpath" / "src" / "workload" / "fio" / "options.rs"
OUT_DIR = REPO / "tests" / "fixtures" / "fio-verdicts"
TSV = OUT_DIR / "verdicts.tsv"

# Every pair runs in a one-job section with these lines first; an engine
# option runs on the first of these engines that has it, with direct=1.
BASE = ["ioengine=null", "size=64k"]
ENGINES_WITH_OPTIONS = ["io_uring", "libaio", "pvsync2"]
# fio parses and sets up every job before any runs; a batch still running
# after BATCH_SECONDS is interrupted (SIGINT) and its jobs judged: a job
# that had done no I/O by then is run again alone for LONG_SECONDS.
BATCH_SECONDS = 10.0
BATCH_SIZE = 25
LONG_SECONDS = 20.0
# fio allocates one io_u per iodepth slot before the job starts: an absurd
# iodepth takes this long to run out of ADDRESS_SPACE.
SETUP_SECONDS = {"iodepth": 120.0}
# A job still quiet when its time was up, alone: asked again at the end,
# one at a time, for RECHECK_SECONDS, unless its option makes it wait
# before it starts (fio starts a job after its startdelay).
UNSURE = "unsure"
RECHECK_SECONDS = 20.0
WAITS = {"startdelay"}
# fio allocates its buffers (iodepth * bs, untouched) and io_us (iodepth *
# ~440 bytes, written) up front. Its address space is capped so an absurd
# value fails to allocate instead of exhausting the machine: 16 GiB, where
# no value of the battery needs between that and the machine's 24 GiB; 6
# GiB for iodepth, whose io_us are written (iodepth=1m needs 4.7 GB).
ADDRESS_SPACE = 16 << 30
ADDRESS_SPACE_FOR = {"iodepth": 6 << 30}

# Options whose pairs run alone: they count or order jobs (numjobs,
# stonewall, wait_for), stop other jobs (exitall), share state between jobs
# (flow), pick another engine, lock memory, rename the job (name), merge
# jobs in the report (group_reporting) or leave it out (stats=0), or must
# agree within a reporting group (steadystate): a batch of one is judged by
# whatever jobs it reports.
ALONE = {
    "numjobs",
    "stonewall",
    "wait_for_previous",
    "wait_for",
    "exitall",
    "exitall_on_error",
    "exit_what",
    "flow",
    "flow_id",
    "flow_watermark",
    "flow_sleep",
    "ioengine",
    "lockmem",
    "iodepth",
    "thread",
    "name",
    "group_reporting",
    "stats",
    "steadystate",
    "steadystate_duration",
    "steadystate_ramp_time",
}

# The battery every option gets. None is the bare key (no '=').
COMMON: list[str | None] = [
    None,
    "",
    "${UNSET}",
    "0",
    "1",
    "2",
    "-1",
    "100",
    "4096",
    "4k",
    "1m",
    "2147483648",
    "4294967296",
    "9223372036854775808",
    "18446744073709551616",
    "1.5",
    "abc",
    "4x",
    "4KiB",
    "4k-8k",
    "8k:4k",
    "1,2",
    "4k,8k,16k",
    "10%",
    "0x10",
    "1s",
    "10ms",
    "1z",
]

# Forms particular to one option (options.c callbacks).
EXTRA: dict[str, list[str]] = {
    "rw": ["randread:8", "read:4k", "read:-4k", "write:abc", "randrw:0", "READ", "rea", "readx"],
    "bs": ["512", "1g", "4k,8k", ",8k", "4k,", "4k,8k,16k,32k", "0"],
    "ba": ["512", "4k,8k"],
    "bsrange": ["4k-4k", "0-4k", "4k-8k,16k-32k", "4k", "4k-", "-4k"],
    "bssplit": [
        "4k/50:8k/50",
        "4k/10:8k/10",
        "4k/60:8k/60",
        "4k/",
        "4k/abc",
        "0/50",
        "4k/50,8k/50",
        "4k/50:8k/50,16k/100,32k/100,64k/100",
        "4k/101",
        ":".join("4k/1" for _ in range(65)),
        "4k/50:1k/:32k/",
    ],
    "random_distribution": [
        "zipf",
        "zipf:1.2",
        "zipf:1",
        "zipf:0",
        "zipf:-1",
        "zipf:1.2:0.5",
        "pareto:0.5",
        "pareto:1",
        "normal:50",
        "normal:101",
        "gauss",
        "zoned:50/50:50/50",
        "zoned:60/10:30/20:10/70",
        "zoned:50/5:30/15:20/",
        "zoned:110/100",
        "zoned_abs:60/10G:30/20G:10/30G",
        "zoned_abs:60/16k:40/48k",
        "random:1",
    ],
    "cpus_allowed": ["0-1", "1-0", "0,1", "4095", "4096", "0-", "1024"],
    "cpumask": ["3", "0xff", "0x100000000"],
    "percentile_list": ["50:90:99", "101", "-1", ":".join(["50"] * 21), "99.999"],
    "startdelay": ["1-2", "2-1", "1h"],
    "runtime": ["1h", "1d"],
    "size": ["101%", "100%", "0%", "1g"],
    "offset": ["100%", "50%", "4k"],
    "io_size": ["50%", "1g"],
    "filesize": ["4k-8k", "1g"],
    "replay_skip": ["read,write", "read,x", "sync"],
    "rate": ["1m,2m", "1m,", ",1m", "1m,2m,3m,4m"],
    "rate_iops": ["100,200", ",100"],
    "numjobs": ["4", "4095", "4096", "100000"],
    "iodepth": ["65536", "65537", "100000000"],
    "verify_pattern": ["0xff", "'abc'", "%o", "0x"],
    "buffer_pattern": ["0xff", "'abc'", "%o"],
    "sync_file_range": ["write:8", "wait_before", "write", "wait_after:4"],
    "write_iolog": ["x.iolog"],
    "unified_rw_reporting": ["none", "mixed", "both"],
    "kb_base": ["1000", "1024", "1023"],
    "unit_base": ["8", "bits"],
    "verify": ["md5", "crc32c", "meta", "pattern", "sha1"],
    "clocksource": ["gettimeofday", "clock_gettime", "cpu"],
    "fadvise_hint": ["random", "sequential"],
    "mem": ["malloc", "shm", "mmap", "mmaphuge", "mmapshared", "mmap:/tmp/x"],
    "rate_process": ["linear", "poisson"],
    "ioengine": ["psync", "libaio", "io_uring", "sync", "cpuio", "nonexist", "external:x.so"],
    "thinktime": ["1ms", "1-2"],
    "thinktime_blocks_type": ["complete", "issue"],
    "exit_what": ["group", "stonewall", "all"],
    "cpus_allowed_policy": ["shared", "split"],
    "number_ios": ["16"],
    "offset_increment": ["4k", "10%"],
    "nrfiles": ["4", "100000"],
    "rwmixread": ["101", "50"],
    "rwmixwrite": ["101", "50"],
    "percentage_random": ["101", "50,50", "50,101"],
    "fsync": ["8"],
    "log_avg_msec": ["100"],
    "write_lat_log": ["lat"],
    "replay_align": ["3", "4096"],
    "replay_time_scale": ["50"],
    "continue_on_error": ["none", "read", "io", "verify", "all", "read,write"],
    "ignore_error": ["EIO", "5:6,EIO", "EXXX"],
    "steadystate": ["iops:10%", "bw_slope:0.1", "iops_slope:x"],
    "zonemode": ["none", "strided", "zbd"],
    "cgroup_weight": ["100", "1000", "1001", "99"],
    "prio": ["7", "8"],
    "prioclass": ["3", "4"],
    "nice": ["19", "20", "-20", "-21"],
    "cmdprio_percentage": ["50", "101"],
    "hipri_percentage": ["50", "101"],
    "latency_percentile": ["50", "101"],
    "dedupe_mode": ["repeat", "working_set"],
    "random_generator": ["tausworthe", "lfsr", "tausworthe64"],
    "file_service_type": ["random", "roundrobin", "sequential", "zipf:1.2", "normal", "gauss:5"],
    "fallocate": ["none", "native", "posix", "keep", "truncate"],
    "lockfile": ["none", "exclusive", "readwrite"],
    "io_submit_mode": ["inline", "offload"],
    "rw_sequencer": ["sequential", "identical"],
    "log_compression_cpus": ["0", "0-1"],
    "verify_async_cpus": ["0", "0-1"],
    "write_hint": ["none", "short", "medium", "long", "extreme"],
    "numa_cpu_nodes": ["0"],
    "numa_mem_policy": ["default", "local", "bind:0", "prefer:0", "interleave:0"],
    "cmd_type": ["nvme"],
    "cmdprio_class": ["1", "3", "4"],
    "cmdprio": ["0", "7", "8"],
    "cmdprio_bssplit": ["4k/50:8k/50"],
}


# Options whose verdict depends on how fast this machine is at the moment
# (fio fails a job whose I/O takes longer than latency_target=4x, 4 µs, or
# max_latency): a sample asked again leaves them out.
TIMING = {"latency_target", "max_latency"}


@dataclass
class Pair:
    option: str
    value: str | None
    body: list[str]  # the job section's lines, base first

    def job_text(self, name: str) -> str:
        return "[" + name + "]\n" + "".join(line + "\n" for line in self.body)


def escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def unescape(s: str) -> str:
    out = []
    i = 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append({"n": "\n", "t": "\t", "\\": "\\"}[s[i + 1]])
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def table_options() -> list[tuple[str, list[str], bool]]:
    """(name, aliases, is engine option) for each entry of flashpath's table."""
    text = OPTIONS_RS.read_text()
    out = []
    for m in re.finditer(r'\b([oe])\(\s*"([^"]+)",\s*(&\[[^\]]*\]|[A-Z_0-9]+)', text):
        kind, name, second = m.groups()
        aliases = re.findall(r'"([^"]+)"', second) if kind == "o" else []
        out.append((name, aliases, kind == "e"))
    if len(out) < 200:
        raise SystemExit(f"found only {len(out)} options in {OPTIONS_RS}")
    return out


def fio_help(name: str) -> tuple[str | None, list[str]]:
    """fio's default and valid values for an option (`fio --cmdhelp`)."""
    r = subprocess.run(["fio", f"--cmdhelp={name}"], capture_output=True, text=True)
    default = None
    values = []
    in_values = False
    for line in r.stdout.splitlines():
        key, _, rest = line.partition(":")
        key = key.strip()
        if key == "default" and rest.strip() != "no default":
            default = rest.strip()
        if key == "valid values":
            in_values = True
        elif key:
            in_values = False
        if in_values and rest.strip():
            values.append(rest.split()[0])
    return default, values


def engine_options() -> dict[str, str]:
    """Engine option -> the first engine (of ENGINES_WITH_OPTIONS) with it."""
    out: dict[str, str] = {}
    for engine in ENGINES_WITH_OPTIONS:
        r = subprocess.run(["fio", f"--enghelp={engine}"], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            name = line.split(":")[0].strip()
            if name:
                out.setdefault(name, engine)
    return out


# Pairs left out: numjobs=4KiB (4,000) forks 4,000 fio processes.
SKIP = {("numjobs", "4KiB")}


def make_pairs() -> list[Pair]:
    options = table_options()
    engines = engine_options()
    with ThreadPoolExecutor(4) as ex:
        helps = dict(
            zip(
                [o[0] for o in options],
                ex.map(fio_help, [o[0] for o in options]),
                strict=True,
            )
        )
    pairs: list[Pair] = []
    seen: set[tuple[str, str | None]] = set()
    for name, aliases, is_engine in options:
        base = BASE
        if is_engine:
            if name not in engines:
                raise SystemExit(f"fio lists no engine with option {name}")
            base = [f"ioengine={engines[name]}", "direct=1", "size=64k"]
        default, valid = helps[name]
        values: list[str | None] = list(COMMON)
        if default is not None:
            values.append(default)
        values += valid
        values += [v + "x" for v in valid[:1]]
        values += EXTRA.get(name, [])
        for value in values:
            if (name, value) in seen or (name, value) in SKIP:
                continue
            seen.add((name, value))
            line = name if value is None else f"{name}={value}"
            pairs.append(Pair(name, value, [*base, line]))
        # Each alias reads as its option.
        for alias in aliases:
            for value in ["1", "abc"]:
                pairs.append(Pair(alias, value, [*base, f"{alias}={value}"]))
    return pairs


def _limit_memory(limit: int) -> Callable[[], None]:
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return set_limit


def fio_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "UNSET"}
    env["LC_ALL"] = "C"
    return env


# Lines fio prints that are no refusal: our SIGINT, the debug banner, and
# warnings about jobs it runs anyway.
NOT_ERRORS = [
    "terminating on signal",
    "set debug option",
    "time_based requires a runtime",
    "may be ignored",
    "Any use of blockalign",
    "norandommap given for variable",
    "multiple writers may overwrite",
    "verification read phase will never",
    "is deprecated",
]
ERROR_LINE = re.compile(r"^(fio:|error|Error|Bad option|[a-z_]+: )")


def _stray_processes(workdir: Path) -> list[int]:
    """fio's job processes call setsid(), so a job still running when the
    main process is gone is in no process group of ours: find them by the
    batch's (unique) job file on their command line."""
    marker = str(workdir / "batch.fio").encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def run_fio(pairs: Sequence[Pair], workdir: Path, seconds: float) -> tuple[str, bool, int]:
    """Run the pairs as sections fv_0.. of one job file; fio's whole output,
    whether it had to be interrupted, and its exit status."""
    job = workdir / "batch.fio"
    job.write_text("".join(p.job_text(f"fv_{i}") for i, p in enumerate(pairs)))
    limit = min(ADDRESS_SPACE_FOR.get(p.option, ADDRESS_SPACE) for p in pairs)
    out = workdir / "out.txt"
    early = workdir / "early.txt"
    with early.open("wb") as early_f:
        proc = subprocess.Popen(
            ["fio", "--debug=parse", "--output-format=json", f"--output={out}", str(job)],
            cwd=workdir,
            stdout=early_f,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=fio_env(),
            preexec_fn=_limit_memory(limit),
            start_new_session=True,
        )
        interrupted = False
        try:
            proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            interrupted = True
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    # Jobs left behind (a job stuck after its main process died).
    for pid in _stray_processes(workdir):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    text = out.read_text(errors="replace") if out.exists() else ""
    return early.read_text(errors="replace") + "\n" + text, interrupted, proc.returncode


def first_error(lines: Iterable[str]) -> str:
    """fio's own words for a failure: a "failed parsing" line, else the
    first error-looking line (debug output and our SIGINT left out)."""
    found = []
    for line in lines:
        s = line.strip()
        if not s or s.startswith("parse ") or any(w in s for w in NOT_ERRORS):
            continue
        if ERROR_LINE.match(s) or "error" in s.lower() or "failed" in s.lower():
            found.append(s)
    for s in found:
        if "failed parsing" not in s and "dropped" not in s:
            return s[:200]
    return found[0][:200] if found else ""


def judge(pairs: Sequence[Pair], workdir: Path, seconds: float = 0.0) -> list[tuple[str, str]]:
    """fio's verdict for each pair: ("ok", "") or ("refused", message)."""
    verdicts: list[tuple[str, str] | None] = [None] * len(pairs)
    todo = list(range(len(pairs)))
    while todo:
        batch = [pairs[i] for i in todo]
        text, interrupted, status = run_fio(batch, workdir, seconds or BATCH_SECONDS)
        start = text.find("\n{\n")
        lines = text.splitlines()
        crashed = status < 0 and not interrupted
        sections = re.findall(r"Parsing section \[fv_(\d+)\]", text)
        if (crashed or not sections) and start < 0:
            # fio died (bare ignore_error segfaults in 3.33) or failed
            # before naming a section: its buffered output is lost, so
            # only a single pair can be blamed.
            if len(batch) == 1:
                why = f"fio crashed (signal {-status})" if crashed else "fio failed"
                verdicts[todo[0]] = ("refused", first_error(lines) or why)
                todo = []
                continue
            half = len(todo) // 2
            for part in (todo[:half], todo[half:]):
                found = judge([pairs[i] for i in part], workdir, seconds)
                for i, v in zip(part, found, strict=True):
                    verdicts[i] = v
            todo = []
            continue
        if start < 0:
            # Nothing ran: a section failed to parse or set up. The last
            # section fio started parsing is the one.
            message = first_error(lines) or "fio exited without running"
            k = int(sections[-1])
            if k == len(batch) - 1 and len(batch) > 1:
                # The last section may have parsed and something after
                # parsing failed: the blame is certain only if it fails alone.
                alone = judge([batch[k]], workdir)[0]
                if alone[0] == "ok":
                    half = len(todo) // 2
                    for part in (todo[:half], todo[half:]):
                        found = judge([pairs[i] for i in part], workdir)
                        for i, v in zip(part, found, strict=True):
                            verdicts[i] = v
                    todo = []
                    continue
                verdicts[todo[k]] = alone
            else:
                verdicts[todo[k]] = ("refused", message)
            del todo[k]
            continue
        report, _ = json.JSONDecoder().raw_decode(text[start + 1 :])
        lines = text[:start].splitlines()
        errors: dict[str, int] = {}
        ios: dict[str, int] = {}
        for job in report.get("jobs", []):
            # A batch of one is that pair's, whatever the job calls itself.
            name = job.get("jobname", "") if len(todo) > 1 else "fv_0"
            done = sum(job.get(d, {}).get("total_ios", 0) for d in ("read", "write", "trim"))
            ios[name] = ios.get(name, 0) + done
            if job.get("error"):
                errors[name] = job["error"]
        complaint = first_error(lines)
        for k, i in enumerate(todo):
            name = f"fv_{k}"
            if name in errors:
                verdicts[i] = ("refused", f"job error {errors[name]}: {complaint}"[:200])
            elif ios.get(name, 0) > 0:
                verdicts[i] = ("ok", "")
            elif len(todo) > 1 and (interrupted or complaint or name not in ios):
                # No I/O and a word from fio (whose?), or cut short before
                # it started (a busy machine forks slowly): alone it tells.
                option = batch[k].body[-1].split("=")[0]
                longer = SETUP_SECONDS.get(option, LONG_SECONDS)
                verdicts[i] = judge([batch[k]], workdir, longer)[0]
            elif interrupted and seconds < LONG_SECONDS:
                option = batch[k].body[-1].split("=")[0]
                longer = SETUP_SECONDS.get(option, LONG_SECONDS)
                verdicts[i] = judge([batch[k]], workdir, longer)[0]
            elif complaint and not interrupted:
                # Alone, no I/O and fio complained: it could not start
                # ("unable to allocate aligned memory" with error 0).
                verdicts[i] = ("refused", complaint)
            elif interrupted:
                # Alone, cut short, quiet and without I/O: waiting by design
                # (startdelay=1h), or not started yet on a busy machine;
                # judge_all asks again once the other batches are done.
                verdicts[i] = (UNSURE, "")
            else:
                # Alone and quiet: did nothing (stats=0 leaves the report).
                verdicts[i] = ("ok", "")
        todo = []
    return [v if v is not None else ("refused", "no verdict") for v in verdicts]


def judge_all(pairs: Sequence[Pair], workers: int = 2) -> list[tuple[str, str]]:
    """Batches of BATCH_SIZE pairs of one option (pairs of an ALONE option
    one by one), judged on `workers` fio processes at once."""
    canonical = {alias: name for name, aliases, _ in table_options() for alias in aliases}

    def alone(p: Pair) -> bool:
        return canonical.get(p.option, p.option) in ALONE

    batches: list[list[int]] = []
    for i, p in enumerate(pairs):
        if (
            not batches
            or alone(p)
            or len(batches[-1]) >= BATCH_SIZE
            or alone(pairs[batches[-1][0]])
        ):
            batches.append([i])
        else:
            batches[-1].append(i)
    root = Path(tempfile.mkdtemp(prefix="fio-verdicts-", dir="/var/tmp"))

    def one(n_batch: tuple[int, list[int]]) -> list[tuple[str, str]]:
        n, batch = n_batch
        workdir = root / str(n)
        workdir.mkdir()
        try:
            return judge([pairs[i] for i in batch], workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    verdicts: list[tuple[str, str]] = [("", "")] * len(pairs)
    try:
        with ThreadPoolExecutor(workers) as ex:
            for batch, result in zip(batches, ex.map(one, enumerate(batches)), strict=True):
                for i, v in zip(batch, result, strict=True):
                    verdicts[i] = v
        for i, (verdict, _) in enumerate(verdicts):
            if verdict == UNSURE and pairs[i].option in WAITS:
                verdicts[i] = ("ok", "")
            elif verdict == UNSURE:
                print(f"asking again: {pairs[i].body[-1][:80]}", file=sys.stderr)
                workdir = root / f"recheck-{i}"
                workdir.mkdir()
                again = judge([pairs[i]], workdir, RECHECK_SECONDS)[0]
                verdicts[i] = ("ok", "") if again[0] == UNSURE else again
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return verdicts


HEADER = ["option", "value", "job", "fio", "fio_message"]
BARE = "<bare>"


def write_tsv(pairs: Sequence[Pair], verdicts: Sequence[tuple[str, str]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        f.write("\t".join(HEADER) + "\n")
        for p, (verdict, message) in zip(pairs, verdicts, strict=True):
            value = BARE if p.value is None else escape(p.value)
            row = [p.option, value, escape("\n".join(p.body)), verdict, escape(message)]
            f.write("\t".join(row) + "\n")


@dataclass
class Row:
    option: str
    value: str | None
    body: list[str]
    verdict: str
    message: str

    def pair(self) -> Pair:
        return Pair(self.option, self.value, self.body)


def read_tsv(path: Path = TSV) -> list[Row]:
    rows = []
    lines = path.read_text().splitlines()
    if lines[0].split("\t") != HEADER:
        raise ValueError(f"{path}: header is not {HEADER}")
    for n, line in enumerate(lines[1:], start=2):
        cols = line.split("\t")
        if len(cols) != len(HEADER):
            raise ValueError(f"{path}:{n}: {len(cols)} columns")
        option, value, body, verdict, message = cols
        rows.append(
            Row(
                option,
                None if value == BARE else unescape(value),
                unescape(body).split("\n"),
                verdict,
                unescape(message),
            )
        )
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=TSV)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", help="only options matching this regular expression")
    args = ap.parse_args(argv)
    version = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    if version != "fio-3.33":
        raise SystemExit(f"need fio-3.33, found {version!r}")
    pairs = make_pairs()
    if args.only:
        pairs = [p for p in pairs if re.fullmatch(args.only, p.option)]
    verdicts = judge_all(pairs, args.workers)
    write_tsv(pairs, verdicts, args.out)
    refused = sum(v[0] == "refused" for v in verdicts)
    print(f"{len(pairs)} pairs, fio refused {refused}: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
