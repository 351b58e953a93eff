#!/usr/bin/env bash
# The conventional / ZNS / FDP comparison of docs/zoned.md, regenerated
# from runs of flashpath:
#
#   bench/zoned-compare.sh          (rewrites the table in docs/zoned.md)
#   bench/zoned-compare.sh --print  (prints it only)
#
# It runs the test crates/flashpath/tests/zoned_compare.rs, which runs the
# four cases through the whole simulated path, checks what the mechanisms
# imply, and prints the table between <!-- zoned-compare:begin/end -->
# markers; the same markers delimit the table in the doc.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(nice -n 19 cargo test -q --manifest-path "$root/Cargo.toml" -p flashpath \
    --test zoned_compare -- --nocapture --test-threads=1 2>&1)" || {
    printf '%s\n' "$out" >&2
    echo "bench/zoned-compare.sh: the comparison test failed (output above)" >&2
    exit 1
}
table="$(printf '%s\n' "$out" | sed -n '/^<!-- zoned-compare:begin -->$/,/^<!-- zoned-compare:end -->$/p')"
if [ -z "$table" ]; then
    echo "bench/zoned-compare.sh: the test printed no table" >&2
    exit 1
fi
if [ "${1:-}" = "--print" ]; then
    printf '%s\n' "$table"
    exit 0
fi
python3 - "$root/docs/zoned.md" "$table" <<'PY'
import sys
path, table = sys.argv[1], sys.argv[2]
text = open(path).read()
begin, end = "<!-- zoned-compare:begin -->", "<!-- zoned-compare:end -->"
i, j = text.find(begin), text.find(end)
if i < 0 or j < i:
    sys.exit(f"bench/zoned-compare.sh: {path} has no {begin} ... {end} block")
open(path, "w").write(text[:i] + table + text[j + len(end):])
print(f"{path}: table rewritten")
PY
