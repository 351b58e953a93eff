#!/usr/bin/env python3
"""Summarise the guest logs of run-all.sh: bandwidth and swiotlb counters.

Usage: parse.py LOGDIR. Log names are KERNEL-DISK-TEST-REP.log (run-all.sh).
Prints one CSV line per run, then a Markdown table per (disk, test): mean
read+write bandwidth over the runs, its coefficient of variation, the
patched-vs-base difference and the per-map counters (fp_stats deltas).
"""
from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

FIELDS = ("maps unmaps visits fastfail scanfail slots contended ucontended transient grow "
          "fails find_ns unmap_ns").split()


def parse(path: Path) -> dict[str, object] | None:
    kernel, rest = path.stem.split("-", 1)
    disk, test, rep = rest.rsplit("-", 2)
    run: dict[str, object] = {"kernel": kernel, "disk": disk, "test": test, "rep": int(rep)}
    stats: dict[str, dict[int, list[int]]] = {"before": {}, "after": {}}
    counters: dict[str, dict[str, int]] = {}
    bw = None
    for line in path.read_text(errors="replace").splitlines():
        line = line.strip("\r")
        if line.startswith("FP-FIO ") and ";" in line:
            f = line[len("FP-FIO "):].split(";")
            bw = (int(f[6]) + int(f[47])) / 1024.0  # KiB/s read + write -> MiB/s
            kib = int(f[5]) + int(f[46])
            run["ios"] = kib // (64 if test == "big" else 4)
        elif line.startswith("FP-COUNTERS "):
            _, when, *kv = line.split()
            counters[when] = {k: int(v) for k, v in (x.split("=") for x in kv)}
        elif line.startswith("FP-STATS ") and not line.split()[2] == "cpu":
            _, when, cpu, *vals = line.split()
            stats[when][int(cpu)] = [int(v) for v in vals]
    if bw is None or "after" not in counters:
        return None
    run["bw_MiBps"] = bw
    for k, v in counters["after"].items():
        run[k] = v
    run["pools_MiB"] = counters["after"]["nslabs"] * 2048 / 2**20
    if stats["after"]:
        tot = [0] * len(FIELDS)
        for cpu, after in stats["after"].items():
            before = stats["before"].get(cpu, [0] * len(FIELDS))
            d = [a - b for a, b in zip(after, before, strict=True)]
            run[f"maps_cpu{cpu}"] = d[0]
            run[f"unmaps_cpu{cpu}"] = d[1]
            tot = [t + x for t, x in zip(tot, d, strict=True)]
        run.update(dict(zip(FIELDS, tot, strict=True)))
    return run


def main() -> None:
    runs = [r for p in sorted(Path(sys.argv[1]).glob("*.log")) if (r := parse(p))]
    keys: list[str] = []
    for r in runs:
        keys += [k for k in r if k not in keys]
    print(",".join(keys))
    for r in runs:
        print(",".join(str(r.get(k, "")) for k in keys))
    groups: dict[tuple[str, str], dict[str, list[dict[str, object]]]] = defaultdict(
        lambda: defaultdict(list))
    for r in runs:
        groups[(str(r["disk"]), str(r["test"]))][str(r["kernel"])].append(r)
    print()
    print("| disk | test | kernel | runs | MiB/s | CV | diff | pools MiB | hiwater | transient "
          "| maps/IO | areas/map | slots/map | contended/map | find ns/map | maps by CPU "
          "| unmaps by CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (disk, test), by_kernel in sorted(groups.items()):
        base = by_kernel.get("base")
        base_bw = statistics.mean(float(r["bw_MiBps"]) for r in base) if base else None
        for kernel in sorted(by_kernel):
            rs = by_kernel[kernel]
            bws = [float(r["bw_MiBps"]) for r in rs]
            mean = statistics.mean(bws)
            cv = statistics.pstdev(bws) / mean * 100 if mean else 0.0
            diff = f"{(mean / base_bw - 1) * 100:+.1f}%" if base_bw and kernel != "base" else ""

            def per_map(field: str, rs: list[dict[str, object]] = rs) -> str:
                maps = sum(int(r.get("maps", 0)) for r in rs)
                return f"{sum(int(r.get(field, 0)) for r in rs) / maps:.2f}" if maps else "-"

            def ios_per_map(rs: list[dict[str, object]] = rs) -> str:
                ios = sum(int(r.get("ios", 0)) for r in rs)
                maps = sum(int(r.get("maps", 0)) for r in rs)
                return f"{maps / ios:.2f}" if ios and maps else "-"

            def spread(prefix: str, rs: list[dict[str, object]] = rs) -> str:
                cpus = sorted({k for r in rs for k in r if k.startswith(prefix)})
                return "/".join(str(sum(int(r.get(c, 0)) for r in rs) // len(rs)) for c in cpus)

            print(f"| {disk} | {test} | {kernel} | {len(rs)} | {mean:.1f} | {cv:.1f}% | {diff} "
                  f"| {statistics.mean(float(r['pools_MiB']) for r in rs):.1f} "
                  f"| {max(int(r['hiwater']) for r in rs)} "
                  f"| {statistics.mean(int(r.get('transient', 0)) for r in rs):.0f} "
                  f"| {ios_per_map()} | {per_map('visits')} | {per_map('slots')} | {per_map('contended')} "
                  f"| {per_map('find_ns')} | {spread('maps_cpu')} | {spread('unmaps_cpu')} |")


if __name__ == "__main__":
    main()
