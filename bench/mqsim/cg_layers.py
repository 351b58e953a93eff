"""Instructions per I/O by layer, from two cachegrind runs of one job.

Run the same job at two lengths under `valgrind --tool=cachegrind
--cache-sim=no` and give both output files and the difference in I/Os:
start-up and the report cancel out, and what is left is the cost of the
I/Os between. Each function's instructions, standard-library code inlined
into it included, are charged to the module path of the function
(`flashpath::device::ftl::...` -> device/ftl), so a layer's row is what its
own functions execute. docs/performance.md shows the commands.

    python3 bench/mqsim/cg_layers.py cg.short.out cg.long.out 40000 [--functions 15]
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

_STD = ("alloc::", "core::", "std::", "<alloc", "<core", "<std", "hashbrown")
_EVENT_LOOP = "flashpath::machine::Machine::run"
_PATH = re.compile(r"<?flashpath::([a-z_]+)(?:::([a-z_]+))?")


def load(path: Path) -> collections.Counter[str]:
    """Ir per function name of a cachegrind output file."""
    ir: collections.Counter[str] = collections.Counter()
    fn = "?"
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise SystemExit(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if not lines or not lines[0].startswith(("desc:", "version:")):
        raise SystemExit(f"{path}: line 1: not a cachegrind output file")
    for line in lines:
        if line.startswith("fn="):
            fn = line[3:].strip()
        elif line[:1].isdigit():
            fields = line.split()
            if len(fields) >= 2:
                ir[fn] += int(fields[1])
    return ir


def layer(fn: str) -> str:
    """The layer a function belongs to, by its module path."""
    m = _PATH.match(fn)
    if m is None:
        if fn.startswith(_STD):
            return "Rust std (out of line)"
        return "other (Python, libc)"
    top, sub = m.groups()
    # The event loop: run::Prepared::run before the loop moved to the
    # machine, machine::Machine::run after; the heap's pop and the event
    # dispatch are inlined into it.
    if top == "run" or fn == _EVENT_LOOP:
        return "event loop (Machine::run)"
    if top in ("device", "sim", "host") and sub:
        return f"{top}/{sub}"
    return top


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("short", type=Path, help="cachegrind output of the shorter run")
    ap.add_argument("long", type=Path, help="cachegrind output of the longer run")
    ap.add_argument("ios", type=int, help="I/Os the longer run did more")
    ap.add_argument("--functions", type=int, default=0, help="also list the N costliest functions")
    a = ap.parse_args(argv)
    if a.ios <= 0:
        ap.error(f"ios must be positive, got {a.ios}")
    short = load(a.short)
    diff = load(a.long)
    diff.subtract(short)
    layers: collections.Counter[str] = collections.Counter()
    for fn, v in diff.items():
        layers[layer(fn)] += v
    print(f"total\t{sum(layers.values()) / a.ios:.0f}")
    for name, v in layers.most_common():
        if abs(v) / a.ios >= 15:
            print(f"{name}\t{v / a.ios:.0f}")
    for fn, v in diff.most_common(a.functions):
        print(f"{v / a.ios:8.0f}  {fn[:140]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
