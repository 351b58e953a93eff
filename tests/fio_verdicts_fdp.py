"""Ask a real fio 3.38 what it makes of its data placement options.

fio 3.33 (the fio the rest of flashpath follows, tests/fio_verdicts.py) has
no data placement options: fio 3.34 added ``fdp`` and ``fdp_pli``, 3.35
``fdp_pli_select``, 3.38 ``dataplacement``, ``plids`` and ``plid_select``
(the older names their aliases). This runs each pair below as a one-job
section (``ioengine=null``, ``size=64k``, ``rw=write``, and what the pair
needs to get past the option's parse) through a fio 3.38 built from fio's
tag ``fio-3.38`` (``./configure --prefix=/opt/fio-new && make install``) and
records its verdict: ``ok``, or ``refused`` with its first error line; the
same columns as verdicts.tsv. With ``ioengine=null`` every FDP job fails its
setup (the engine cannot fetch the reclaim unit handles): the pairs that get
that far are what the ``streams`` interface runs.

    python3 tests/fio_verdicts_fdp.py [--fio /opt/fio-new/bin/fio]

writes tests/fixtures/fio-verdicts/fdp-3.38.tsv;
crates/flashpath/tests/fdp.rs checks flashpath against it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TSV = REPO / "tests" / "fixtures" / "fio-verdicts" / "fdp-3.38.tsv"
BASE = ["ioengine=null", "size=64k", "rw=write"]
STREAMS = ["dataplacement=streams", "plids=1,2"]

# (option, value or None for the bare option, extra lines the pair needs).
PAIRS: list[tuple[str, str | None, list[str]]] = [
    ("fdp", "0", []),
    ("fdp", "1", []),
    ("fdp", None, []),
    ("fdp", "2", []),
    ("fdp", "abc", []),
    ("fdp", "1", ["dataplacement=none"]),
    ("fdp", "1", ["dataplacement=streams", "plids=1"]),
    ("dataplacement", "none", []),
    ("dataplacement", "fdp", []),
    ("dataplacement", "streams", []),
    ("dataplacement", "streams", ["plids=0,3"]),
    ("dataplacement", "abc", []),
    ("dataplacement", None, []),
    ("data_placement", "streams", ["plids=1"]),
    ("plid_select", "roundrobin", STREAMS),
    ("plid_select", "random", STREAMS),
    ("plid_select", "abc", STREAMS),
    ("fdp_pli_select", "random", STREAMS),
    ("plids", "0,1,2,3", ["dataplacement=streams"]),
    ("plids", "3,1-2", ["dataplacement=streams"]),
    ("plids", "1,2,x", ["dataplacement=streams"]),
    ("plids", "1,,2", ["dataplacement=streams"]),
    ("plids", "0x10", ["dataplacement=streams"]),
    ("plids", "010", ["dataplacement=streams"]),
    ("plids", "1-", ["dataplacement=streams"]),
    ("plids", "-3", ["dataplacement=streams"]),
    ("plids", "", ["dataplacement=streams"]),
    ("plids", "3-1", ["dataplacement=streams"]),
    ("plids", "70000", ["dataplacement=streams"]),
    ("plids", "0-200", ["dataplacement=streams"]),
    ("plids", "0-127", ["dataplacement=streams"]),
    ("fdp_pli", "4,5", ["dataplacement=streams"]),
]


def first_error(text: str) -> str:
    for line in text.splitlines():
        s = line.strip()
        if s and ("fio:" in s or "fail" in s or "cannot" in s or "lacks" in s or "only" in s):
            return s
    return ""


def verdict(fio: str, lines: list[str]) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as d:
        job = Path(d) / "j.fio"
        job.write_text("[fv]\n" + "\n".join(lines) + "\n")
        r = subprocess.run(
            [fio, str(job), "--output-format=json"],
            cwd=d,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    if r.returncode == 0:
        return "ok", ""
    if r.returncode < 0:
        return "refused", f"fio died of signal {-r.returncode}"
    return "refused", first_error(r.stderr + r.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fio", default="/opt/fio-new/bin/fio")
    args = ap.parse_args()
    version = subprocess.run([args.fio, "--version"], capture_output=True, text=True, check=True)
    if version.stdout.strip() != "fio-3.38":
        print(f"{args.fio} is {version.stdout.strip()}, not fio-3.38", file=sys.stderr)
        return 1
    rows = ["option\tvalue\tjob\tfio\tfio_message"]
    for option, value, extra in PAIRS:
        pair = option if value is None else f"{option}={value}"
        lines = [*BASE, *extra, pair]
        got, message = verdict(args.fio, lines)
        shown = "<bare>" if value is None else value
        rows.append("\t".join([option, shown, "\\n".join(lines), got, message]))
    TSV.write_text("\n".join(rows) + "\n")
    print(f"wrote {len(rows) - 1} rows to {TSV}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
