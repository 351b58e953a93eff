#!/usr/bin/env bash
# The conventional / ZNS / FDP comparison of docs/zoned.md, regenerated
# from runs of flashpath:
#
#   bench/zoned-compare.sh          (rewrites the table in docs/zoned.md)
#   bench/zoned-compare.sh --print  (prints it only)
#
# It runs the tests of crates/flashpath/tests/zoned_compare.rs, which run
# the four cases through the whole simulated path (and the ZNS case with
# two write buffer sizes), check what the mechanisms imply, and print the
# tables between <!-- zoned-compare:begin/end --> and <!-- zoned-buffer:
# begin/end --> markers; the same markers delimit the tables in the doc.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(nice -n 19 cargo test -q --manifest-path "$root/Cargo.toml" -p flashpath \
    --test zoned_compare -- --nocapture --test-threads=1 2>&1)" || {
    printf '%s\n' "$out" >&2
    echo "bench/zoned-compare.sh: the comparison test failed (output above)" >&2
    exit 1
}
# The tables: the comparison and the ZNS write buffer's sensitivity
# (zns_write_tail_is_the_zone_buffer_draining), each between its markers.
tables="$(printf '%s\n' "$out" | sed -n \
    -e '/^<!-- zoned-compare:begin -->$/,/^<!-- zoned-compare:end -->$/p' \
    -e '/^<!-- zoned-buffer:begin -->$/,/^<!-- zoned-buffer:end -->$/p')"
for name in zoned-compare zoned-buffer; do
    if ! printf '%s\n' "$tables" | grep -q "^<!-- $name:begin -->$"; then
        echo "bench/zoned-compare.sh: the test printed no $name table" >&2
        exit 1
    fi
done
if [ "${1:-}" = "--print" ]; then
    printf '%s\n' "$tables"
    exit 0
fi
python3 - "$root/docs/zoned.md" "$tables" <<'PY'
import sys
path, tables = sys.argv[1], sys.argv[2]
text = open(path).read()
for name in ("zoned-compare", "zoned-buffer"):
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    table = tables[tables.index(begin):tables.index(end) + len(end)]
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        sys.exit(f"bench/zoned-compare.sh: {path} has no {begin} ... {end} block")
    text = text[:i] + table + text[j + len(end):]
open(path, "w").write(text)
print(f"{path}: tables rewritten")
PY
