#!/bin/sh
# The seed's three tests in both kernels, alternating base / revert within
# each repetition (and swapping which goes first every other repetition), so
# that drift in the shared host hits both alike.
# Usage: run-all.sh LOGDIR DISK REPS "TESTS" [extra kernel args]
#   e.g. run-all.sh logs/virtio virtio 3 "small big 4way" fp_rt=10
# Kernels: $FP_WORK/bzImage-$FP_BASE and bzImage-$FP_REVERT
# (default base-instr / revert-instr). Log names: KERNEL-DISK-TEST-REP.log.
set -eu
here=$(dirname "$(realpath "$0")")
work=${FP_WORK:-/work/swiotlb-exp}
logdir=$1 disk=$2 reps=$3 tests=$4
shift 4
mkdir -p "$logdir"
b=${FP_BASE:-base-instr} r=${FP_REVERT:-revert-instr}
rep=1
while [ "$rep" -le "$reps" ]; do
  for test in $tests; do
    if [ $((rep % 2)) -eq 1 ]; then order="$r $b"; else order="$b $r"; fi
    for k in $order; do
      # "base" is the stock 6.12 (patched, area-first); "revert" the pool-first order.
      label=${k%-instr}
      [ "$label" = base ] && label=patched || label=base
      "$here/run-one.sh" "$work/bzImage-$k" "$disk" "$test" \
        "$logdir/$label-$disk-$test-$rep.log" "$@"
      echo "$(date -u +%T) $label $disk $test rep $rep: $(grep -c FP-END "$logdir/$label-$disk-$test-$rep.log") end"
    done
  done
  rep=$((rep + 1))
done
