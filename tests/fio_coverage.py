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

    python3 tests/fio_coverage.py            # the table
    python3 tests/fio_coverage.py --jobs     # and each job's verdict

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


@dataclass(frozen=True)
class Verdict:
    job: Path
    fio_ok: bool
    engines: tuple[str, ...]
    local: bool
    ok: bool
    cause: str

    @property
    def counted(self) -> bool:
        return self.fio_ok and self.local


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
        out.append(Verdict(job, fio_ok, eng, local, why is None, cause))
    return out


def table(verdicts: list[Verdict]) -> str:
    counted = [v for v in verdicts if v.counted]
    ok = sum(v.ok for v in counted)
    out = [
        f"{len(verdicts)} job files; fio 3.33 accepts {sum(v.fio_ok for v in verdicts)}, "
        f"{len(counted)} of them with local engines",
        f"flashpath accepts {ok} of {len(counted)}",
        "",
        "jobs  refusal cause",
    ]
    for cause, n in Counter(v.cause for v in counted if not v.ok).most_common():
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
                print(f"{'ok' if v.ok else 'NO':2}  {rel}  {v.cause}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
