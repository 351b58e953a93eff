#!/bin/sh
# Boot one guest, run one fio test, save the console log.
# Usage: run-one.sh BZIMAGE DISK(ahci|virtio) TEST(small|big|4way) LOG [extra kernel args]
# Environment: FP_ACCEL (default tcg), FP_SMP (4), FP_MEM (1G),
#              FP_INITRD (default $FP_WORK/initramfs.cpio), FP_WORK (/work/swiotlb-exp)
set -eu
kernel=$1 disk=$2 test=$3 log=$4
shift 4
work=${FP_WORK:-/work/swiotlb-exp}
img=/dev/shm/fp-swiotlb-disk.img
# The seed's "RAM-based block device on the host": a file in tmpfs.
[ -f $img ] || truncate -s 1G $img
case "$disk" in
  # libata maps every command's scatterlist with dma_map_sg: swiotlb=force bounces it.
  ahci) dev=/dev/sda; qdisk="-device ahci,id=ahci -device ide-hd,drive=d0,bus=ahci.0" ;;
  # virtio uses the DMA API only with VIRTIO_F_ACCESS_PLATFORM (vring_use_dma_api).
  virtio) dev=/dev/vda; qdisk="-device virtio-blk-pci,drive=d0,disable-legacy=on,iommu_platform=on" ;;
  virtio-noplat) dev=/dev/vda; qdisk="-device virtio-blk-pci,drive=d0" ;;
  *) echo "run-one.sh: unknown disk '$disk' (ahci, virtio, virtio-noplat)" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086
timeout "${FP_TIMEOUT:-600}" qemu-system-x86_64 -accel "${FP_ACCEL:-tcg}" -smp "${FP_SMP:-4}" -m "${FP_MEM:-1G}" \
  -nographic -no-reboot -nic none \
  -kernel "$kernel" -initrd "${FP_INITRD:-$work/initramfs.cpio}" \
  -drive file=$img,format=raw,if=none,id=d0,cache=writeback,aio=threads $qdisk \
  -append "console=ttyS0 quiet panic=-1 no_timer_check swiotlb=512,4,force fp_test=$test fp_dev=$dev $*" \
  > "$log" 2>&1 </dev/null
