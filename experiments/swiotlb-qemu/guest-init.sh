#!/bin/sh
# /init of the experiment's initramfs (busybox + Debian's fio).
# Kernel command line: fp_test=small|big|4way  fp_dev=/dev/vda|/dev/sda
#                      fp_rt=SECONDS  fp_depth=N  fp_engine=libaio|psync
#                      fp_direct=0|1  fp_shim=0|1
# Prints the swiotlb debugfs counters before and after one fio run, framed
# by FP-BEGIN / FP-END lines the host script parses, then powers off.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
for kv in $(cat /proc/cmdline); do
  case "$kv" in fp_*=*) eval "$kv" ;; esac
done
: "${fp_test:=small}" "${fp_dev:=/dev/vda}" "${fp_rt:=10}" "${fp_depth:=256}"
: "${fp_engine:=libaio}" "${fp_direct:=1}" "${fp_shim:=1}"
# The kernel is built without CONFIG_TIMERFD (build-kernels.sh): fio needs
# timerfd-shim.c (fp_shim=1, the default; fp_shim=0 with a kernel that has it).
[ "$fp_shim" = 1 ] && export LD_PRELOAD=/lib/timerfd-shim.so
case "$fp_test" in
  small) bs=4k; nj=1 ;;
  big) bs=64k; nj=1 ;;
  4way) bs=4k; nj=4 ;;
esac
D=/sys/kernel/debug/swiotlb
dump() {
  echo "FP-COUNTERS $1 nslabs=$(cat $D/io_tlb_nslabs) used=$(cat $D/io_tlb_used) hiwater=$(cat $D/io_tlb_used_hiwater) transient_nslabs=$(cat $D/io_tlb_transient_nslabs)"
  [ -r $D/fp_stats ] && sed "s/^/FP-STATS $1 /" $D/fp_stats
}
echo "FP-BEGIN test=$fp_test dev=$fp_dev rt=$fp_rt depth=$fp_depth engine=$fp_engine direct=$fp_direct cpus=$(grep -c ^processor /proc/cpuinfo)"
dmesg | grep -i -E "swiotlb|IO TLB" | sed 's/^/FP-DMESG /'
echo 0 > $D/io_tlb_used_hiwater
dump before
fio --name="$fp_test" --filename="$fp_dev" --direct="$fp_direct" \
    --ioengine="$fp_engine" --iodepth="$fp_depth" --rw=rw --bs="$bs" \
    --numjobs="$nj" --group_reporting=1 --time_based=1 --runtime="$fp_rt" \
    --size=256m --output-format=terse --terse-version=3 2>&1 | sed 's/^/FP-FIO /'
dump after
echo FP-END
poweroff -f
