#!/bin/sh
# Build the guest kernels of the experiment from Debian's linux-source-6.12.
# Usage: build-kernels.sh [WORKDIR]   (default /work/swiotlb-exp)
# Produces WORKDIR/bzImage-stock (Debian's 6.12 swiotlb.c, which has
# 55c543865b76: area-first search) and WORKDIR/bzImage-both: swiotlb.c with
# both search orders (both-orders.py: the boot parameter
# fp_swiotlb_order=pool-first runs the loop of revert-55c54386.patch, else
# the stock loop) and instrument.py's per-CPU counters. One kernel for both
# sides of the comparison: the first plan (one reverted build) lost its
# incremental rebuild to a config change on a loaded 2-core machine.
# fio needs timerfd, which this config lacks: guest-init.sh preloads
# timerfd-shim.c.
set -eu
here=$(dirname "$(realpath "$0")")
work=${1:-/work/swiotlb-exp}
src=$work/linux-source-6.12
mkdir -p "$work"
[ -d "$src" ] || tar -C "$work" -xJf /usr/src/linux-source-6.12.tar.xz
cd "$src"
if [ ! -f "$work/swiotlb.c.orig" ]; then
  cp kernel/dma/swiotlb.c "$work/swiotlb.c.orig"
fi
if [ ! -f .config ]; then
  make tinyconfig >/dev/null
  # x86_64 SMP guest: PCI with MSI, virtio-pci + virtio-blk, AHCI + sd,
  # devtmpfs, initramfs, debugfs, serial console, what fio needs (futex,
  # epoll, aio, io_uring, SysV shm, timers), dynamic swiotlb, ftrace's
  # function profiler, PVH entry (for a KVM try), -O2.
  scripts/config -e 64BIT -e SMP --set-val NR_CPUS 8 -e PCI -e PCI_MSI -e PCI_DIRECT \
    -e VIRTIO_MENU -e VIRTIO -e VIRTIO_PCI -e BLK_DEV -e VIRTIO_BLK -e BLK_MQ_VIRTIO \
    -e ATA -e SATA_AHCI -e SCSI -e BLK_DEV_SD -e BLOCK \
    -e DEVTMPFS -e DEVTMPFS_MOUNT -e BLK_DEV_INITRD -e TMPFS -e DEBUG_FS -e DEBUG_FS_ALLOW_ALL \
    -e PRINTK -e EARLY_PRINTK -e TTY -e SERIAL_8250 -e SERIAL_8250_CONSOLE \
    -e BINFMT_ELF -e BINFMT_SCRIPT -e PROC_FS -e SYSFS -e FUTEX -e EPOLL -e SHMEM -e AIO \
    -e IO_URING -e POSIX_TIMERS -e MULTIUSER -e FILE_LOCKING -e SYSVIPC \
    -e SWIOTLB_DYNAMIC -e HYPERVISOR_GUEST -e PARAVIRT -e KVM_GUEST -e PVH \
    -e ACPI -e X86_LOCAL_APIC -e X86_IO_APIC -e HIGH_RES_TIMERS -e NO_HZ_IDLE -e HZ_1000 \
    -e FTRACE -e FUNCTION_TRACER -e FUNCTION_GRAPH_TRACER -e DYNAMIC_FTRACE \
    -e FUNCTION_PROFILER -e KPROBES -e KPROBE_EVENTS -e PROFILING -e PERF_EVENTS \
    -d NET -d CC_OPTIMIZE_FOR_SIZE -e CC_OPTIMIZE_FOR_PERFORMANCE -d DEBUG_INFO
  make olddefconfig >/dev/null
fi
grep -q '^CONFIG_SWIOTLB_DYNAMIC=y' .config || { echo "CONFIG_SWIOTLB_DYNAMIC is off" >&2; exit 1; }
cp "$work/swiotlb.c.orig" "$work/swiotlb.c.revert"
patch -s "$work/swiotlb.c.revert" "$here/revert-55c54386.patch"
python3 "$here/both-orders.py" "$work/swiotlb.c.orig" "$work/swiotlb.c.revert" "$work/swiotlb.c.both"
python3 "$here/instrument.py" "$work/swiotlb.c.both" "$work/swiotlb.c.both-instr"
for v in stock both; do
  case $v in stock) f=$work/swiotlb.c.orig ;; both) f=$work/swiotlb.c.both-instr ;; esac
  cmp -s "$f" kernel/dma/swiotlb.c || cp "$f" kernel/dma/swiotlb.c
  nice make -j2 bzImage </dev/null >"$work/build-$v.log" 2>&1
  cp arch/x86/boot/bzImage "$work/bzImage-$v"
  echo "built $work/bzImage-$v"
done
