"""How many of the fixture job files that the real fio 3.33 accepts does
flashpath run, and why not the rest.

Over every `tests/fixtures/fio/**/*.fio`, in the job file's own folder
(fio finds `include` files there):

- `fio --parse-only JOB` exit 0: fio accepts the job;
- `fio --showcmd JOB` names its engines (`psync`, fio's default, when none);
  a job counts when every engine does its I/O on this machine's own storage
  (`LOCAL_ENGINES`; network, remote-storage, CPU-only and external engines
  do not);
- `flashpath run --parse-only JOB --device nullblk`, as a new user would try
  it: accepted, or refused with a message, grouped by cause (the message
  with its file name, line number and numbers taken out).

Some jobs fio 3.33 accepts at `--parse-only` fail when fio runs them on a
machine like the simulated one (`FAILS_AS_FIO`: no `size=`, a size below the
block size, a CPU the host lacks, a missing iolog, polled I/O on a queue
without polling). flashpath refusing such a job with fio's own message is
what fio does: those count as "fails as fio fails", apart from the jobs
flashpath runs. tests/test_fio_coverage.py runs the real fio on each of
them and holds fio to the message.

    python3 tests/fio_coverage.py            # the table
    python3 tests/fio_coverage.py --jobs     # and each job's verdict
                                             # (ok, ff: fails as fio fails, NO)

tests/test_fio_coverage.py runs the same count and holds it to a floor.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIO_FIXTURES = REPO / "tests" / "fixtures" / "fio"

# Engines whose I/O goes to a file or block device of this machine (fio's
# engines/*.c). The ones flashpath does not model are counted, and refused
# by name, so that the count shows them.
LOCAL_ENGINES = frozenset(
    {
        "sync",
        "psync",
        "vsync",
        "pvsync",
        "pvsync2",
        "libaio",
        "io_uring",
        "io_uring_cmd",
        "posixaio",
        "null",
        "mmap",
        "splice",
        "sg",
        "libzbc",
        "e4defrag",
        "falloc",
        "ftruncate",
    }
)


# Jobs fio 3.33 accepts at --parse-only but fails at run time, each with
# the line fio prints (verified with the real fio: test_fio_coverage.py
# test_fio_fails_these_jobs_with_its_message). A job counts as "fails as
# fio fails" when flashpath refuses it and its message carries fio's line.
SIZE_BELOW_BS = "size too small, must not be less than minimum block size: 4000 < 4096"
SG_NOT_SCSI = (
    "ioengine sg unable to successfully execute read capacity to get block size and maximum lba"
)
NOT_NVME_NS = "failed to fetch namespace-id"
FAILS_AS_FIO: dict[str, str] = {
    # filesetup.c total_file_size: no size= and no existing file to size.
    "examples/butterfly.fio": "you need to specify size=",
    "parse-probes/globals-order.fio": "you need to specify size=",
    "parse-probes/keywords.fio": "you need to specify size=",
    "parse-probes/value-whitespace.fio": "you need to specify size=",
    "parse-probes/time-units.fio": "you need to specify size=",
    # size=20% of a file that does not exist yet.
    "parse-probes/ranges-and-splits.fio": "you need to specify size=",
    # init.c fixup_options: size=4k with kb_base=1000 is 4000 < bs=4096.
    "parse-probes/units-kb_base-1000.fio": SIZE_BELOW_BS,
    "parse-probes/units-ki-mi-kb1000.fio": SIZE_BELOW_BS,
    # options.c str_cpus_allowed_cb on a 2-CPU host (the simulated host's
    # CPUs; fio counts the machine's, so the real-fio check needs 2 CPUs).
    "upstream-tests/t0009-f8b0bd10.fio": "CPU 2 too large (max=1)",
    # options.c str_numa_cpunodes_cb: libnuma's numa_parse_nodestring
    # refuses node 1 on a one-node host (the simulated host, and this
    # machine; the real-fio check needs a one-node machine).
    "examples/numa.fio": "failed parsing numa_cpu_nodes=0-1",
    # iolog.c init_iolog: t0031 reads the iolog t0031-pre.fio writes.
    "upstream-tests/t0031.fio": "fopen read iolog: No such file or directory",
    # backend.c fio_verify_load_state: the -post job loads the state file
    # its -pre job saves (local-job-0-verify.state); alone, it has none.
    "upstream-tests/t0036-post.fio": "open state file: No such file or directory",
    "upstream-tests/t0037-post.fio": "open state file: No such file or directory",
    # io_uring/rw.c io_iopoll_check / the file's missing ->iopoll: polled
    # I/O on a queue without poll queues fails with EOPNOTSUPP (err=95).
    "real-runs/iouring-hipri/job.fio": "Operation not supported",
    # engines/sg.c fio_sgio_get_file_size: on a block device that is not
    # SCSI (the nullblk disk; a loop device for the real-fio check) SG_IO's
    # READ CAPACITY fails with ENOTTY before any I/O.
    "examples/sg_verify.fio": SG_NOT_SCSI,
    "examples/sg_verify-fail.fio": SG_NOT_SCSI,
    "examples/sg_write_same_ndob.fio": SG_NOT_SCSI,
    # engines/nvme.c fio_nvme_get_info: io_uring_cmd on a character device
    # that is not an NVMe namespace (nullb0 has no /dev/ngXnY; /dev/null
    # for the real-fio check) fails its NVME_IOCTL_ID before any I/O.
    "examples/uring-cmd-ng.fio": NOT_NVME_NS,
    "examples/uring-cmd-zoned.fio": NOT_NVME_NS,
}


@dataclass(frozen=True)
class Verdict:
    job: Path
    fio_ok: bool
    engines: tuple[str, ...]
    local: bool
    ok: bool
    cause: str
    # Refused with fio's own run-time failure (FAILS_AS_FIO).
    fails_as_fio: bool = False

    @property
    def counted(self) -> bool:
        return self.fio_ok and self.local

    @property
    def matches_fio(self) -> bool:
        """Runs, or fails as the real fio fails."""
        return self.ok or self.fails_as_fio


def fails_as_fio(job: Path, message: str | None) -> bool:
    """Whether a refusal is fio's own run-time failure of this job."""
    rel = job.relative_to(FIO_FIXTURES).as_posix() if job.is_relative_to(FIO_FIXTURES) else ""
    want = FAILS_AS_FIO.get(rel)
    return message is not None and want is not None and want in message


def engines(job: Path) -> tuple[str, ...]:
    """The engines of a job file's jobs, as fio --showcmd spells them."""
    r = subprocess.run(
        ["fio", "--showcmd", job.name], cwd=job.parent, capture_output=True, text=True, timeout=60
    )
    found = sorted(set(re.findall(r"--ioengine=(\S+)", r.stdout)))
    names = tuple(e.split(":", 1)[0] for e in found)
    # A job file that names no engine anywhere runs fio's default.
    return names or ("psync",)


def cause_of(message: str) -> str:
    """A refusal's cause: its first line without the job file, line
    number, job name and long numbers, so equal causes group."""
    lines = [ln for ln in message.strip().splitlines() if ln.strip()]
    line = lines[0] if lines else "(no message)"
    line = re.sub(r"^flashpath: error:\s*", "", line)
    line = re.sub(r"^[^:]*\.fio(:\d+)*:\s*", "", line)
    line = re.sub(r"^job '[^']*': ", "", line)
    line = re.sub(r"\d{3,}", "N", line)
    return line[:120]


def fio_verdict(job: Path) -> tuple[bool, tuple[str, ...]]:
    """Whether fio 3.33 accepts the job file, and its engines."""
    fio = subprocess.run(
        ["fio", "--parse-only", job.name],
        cwd=job.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if fio.returncode != 0:
        return False, ()
    return True, engines(job)


def cli_verdict(job: Path) -> str | None:
    """`flashpath run --parse-only JOB --device nullblk` as a user runs
    it, in the job's folder: None when accepted, else its message."""
    ours = subprocess.run(
        [sys.executable, "-m", "flashpath.cli", "run", "--parse-only", job.name]
        + ["--device", "nullblk"],
        cwd=job.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return None if ours.returncode == 0 else ours.stderr


def core_verdict(job: Path) -> str | None:
    """The same check in this process (what the CLI calls), for the test."""
    import os

    from flashpath import _core

    here = os.getcwd()
    os.chdir(job.parent)
    try:
        _core.parse_only(job.name, "nullblk", [])
        return None
    except Exception as exc:  # the core raises FlashpathError, a ValueError
        return str(exc.args[0] if exc.args else exc)
    finally:
        os.chdir(here)


def survey(
    verdict: Callable[[Path], str | None] = cli_verdict, jobs: Iterable[Path] | None = None
) -> list[Verdict]:
    todo = sorted(jobs if jobs is not None else FIO_FIXTURES.rglob("*.fio"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        fio = list(pool.map(fio_verdict, todo))
    out = []
    for job, (fio_ok, eng) in zip(todo, fio, strict=True):
        local = all(e in LOCAL_ENGINES for e in eng)
        why = verdict(job) if fio_ok and local else None
        cause = "" if why is None else cause_of(why)
        out.append(Verdict(job, fio_ok, eng, local, why is None, cause, fails_as_fio(job, why)))
    return out


def table(verdicts: list[Verdict]) -> str:
    counted = [v for v in verdicts if v.counted]
    ok = sum(v.ok for v in counted)
    failing = sum(v.fails_as_fio for v in counted)
    out = [
        f"{len(verdicts)} job files; fio 3.33 accepts {sum(v.fio_ok for v in verdicts)}, "
        f"{len(counted)} of them with local engines",
        f"flashpath accepts {ok} of {len(counted)}, and fails {failing} more as fio fails: "
        f"{ok + failing} of {len(counted)} ({100 * (ok + failing) / max(len(counted), 1):.1f}%) "
        "as fio 3.33",
        "",
        "jobs  refusal cause",
    ]
    for cause, n in Counter(v.cause for v in counted if not v.matches_fio).most_common():
        out.append(f"{n:4}  {cause}")
    out += ["", "jobs  fails as fio fails"]
    for cause, n in Counter(v.cause for v in counted if v.fails_as_fio).most_common():
        out.append(f"{n:4}  {cause}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", action="store_true", help="list each counted job's verdict")
    args = ap.parse_args(argv)
    if shutil.which("fio") is None:
        print("fio_coverage: the real fio is needed (apt-get install fio)", file=sys.stderr)
        return 2
    verdicts = survey()
    sys.stdout.write(table(verdicts))
    if args.jobs:
        print()
        for v in verdicts:
            if v.counted:
                rel = v.job.relative_to(FIO_FIXTURES)
                mark = "ok" if v.ok else "ff" if v.fails_as_fio else "NO"
                print(f"{mark}  {rel}  {v.cause}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
