#!/bin/sh
# The seed's three tests in both kernels, alternating base / revert within
# each repetition (and swapping which goes first every other repetition), so
# that drift in the shared host hits both alike.
# Usage: run-all.sh LOGDIR DISK REPS "TESTS" [extra kernel args]
#   e.g. run-all.sh logs/virtio virtio 3 "small big 4way" fp_rt=10
# Kernel: $FP_WORK/bzImage-both, booted with fp_swiotlb_order=pool-first
# ("base": the order before 55c543865b76) or area-first ("patched").
# Log names: ORDER-DISK-TEST-REP.log.
set -eu
here=$(dirname "$(realpath "$0")")
work=${FP_WORK:-/work/swiotlb-exp}
logdir=$1 disk=$2 reps=$3 tests=$4
shift 4
mkdir -p "$logdir"
rep=1
while [ "$rep" -le "$reps" ]; do
  for test in $tests; do
    if [ $((rep % 2)) -eq 1 ]; then order="base patched"; else order="patched base"; fi
    for label in $order; do
      [ "$label" = base ] && o=pool-first || o=area-first
      "$here/run-one.sh" "$work/bzImage-both" "$disk" "$test" \
        "$logdir/$label-$disk-$test-$rep.log" fp_swiotlb_order=$o "$@"
      echo "$(date -u +%T) $label $disk $test rep $rep: $(grep -c FP-END "$logdir/$label-$disk-$test-$rep.log") end"
    done
  done
  rep=$((rep + 1))
done
