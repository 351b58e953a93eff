#!/usr/bin/env bash
# Speed and peak memory of each trace reader on traces of at least 10M
# records (lines or binary events), made by repeating the real samples in
# tests/fixtures/traces:
#
#   bench/trace-readers.sh [WORKDIR]      (default: a temporary folder, removed after)
#
# Prints one line per format from the reader (I/O records, MB, s, records/s)
# and the peak RSS /usr/bin/time -v measured. docs/traces.md quotes a run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
[ -n "${1:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
fx="$root/tests/fixtures/traces"
target=10000000

cargo build -q --release -p flashpath --example trace_read --manifest-path "$root/Cargo.toml"
bin="$root/target/release/examples/trace_read"

# FILE FORMAT SAMPLE [FILTER]: repeat SAMPLE (its event lines only, for
# blkparse) until the file has $target lines or records.
python3 - "$work" "$fx" "$target" <<'PY'
import os, sys
work, fx, target = sys.argv[1], sys.argv[2], int(sys.argv[3])

def repeat_lines(out, sample, keep=lambda l: True, skip_until=None):
    lines = open(os.path.join(fx, sample), "rb").read().splitlines(keepends=True)
    head = []
    if skip_until:
        i = next(i for i, l in enumerate(lines) if l.startswith(skip_until))
        head, lines = lines[: i + 1], lines[i + 1 :]
    lines = [l for l in lines if keep(l)]
    block = b"".join(lines)
    with open(os.path.join(work, out), "wb") as f:
        f.write(b"".join(head))
        for _ in range(-(-target // len(lines))):
            f.write(block)

def event(l):
    return l[:1].isdigit() and b"," in l.split(b" ", 1)[0]

repeat_lines("blkparse.txt", "blkparse/regen_blktrace_viewer_sample.pipe-mode.blkparse.txt", event)
repeat_lines("msr.csv", "msr_csv/msr-cambridge1-sample.csv")
repeat_lines("mqsim.trace", "mqsim_ascii/mqsim_tpcc-small.trace")
repeat_lines("disksim.trace", "disksim_ascii/disksim_valid_ascii.first50000.trace")
repeat_lines("blkreplay.load", "blkreplay_load/windows-shared-server.load", skip_until=b"start")
repeat_lines("alibaba.csv", "quoted_excerpts/alibaba_io_traces.first7.libCacheSim_comment.csv")
repeat_lines("tencent.csv", "quoted_excerpts/tencent_cbs.9lines.TDS_article.csv")
# The binary: 6,743 records per copy (963 I/Os, 7 events each, 2 notes).
data = open(os.path.join(fx, "blktrace_bin/blktrace_viewer_sample.blktrace.0"), "rb").read()
with open(os.path.join(work, "bin.blktrace"), "wb") as f:
    for _ in range(-(-target // 6743)):
        f.write(data)
PY

for spec in bin.blktrace:blktrace blkparse.txt:blkparse msr.csv:msr mqsim.trace:mqsim \
            disksim.trace:disksim blkreplay.load:blkreplay alibaba.csv:alibaba tencent.csv:tencent; do
  file="${spec%%:*}"
  fmt="${spec##*:}"
  /usr/bin/time -v "$bin" "$work/$file" "$fmt" 2>"$work/time.txt"
  echo "  peak RSS: $(grep 'Maximum resident' "$work/time.txt" | awk '{print $NF}') KiB"
done
