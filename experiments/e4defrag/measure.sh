#!/bin/sh
# The real fio 3.33's e4defrag engine on an ext4 file: per-I/O latency and
# the device I/O it causes. Usage: measure.sh DIR DEV (DIR an ext4 directory
# on block device DEV, e.g. /mnt/defrag loop0). Each row: fresh files, caches
# dropped, one job of 8 MiB. dev_rd/dev_wr: KiB the device read and wrote
# during the job (overwrite=1's dev_wr is fio's own layout); wb_after: KiB
# written by the sync after it (writeback of what the job left dirty).
dir=$1; dev=$2
printf '%-6s %-7s %-9s %6s %10s %9s %10s %8s %8s %8s\n' bs inplace overwrite ios clat_mean clat_p50 cpu_per_io dev_rd dev_wr wb_after
for ow in 0 1; do for ip in 0 1; do for bs in 4k 32k 128k; do
  rm -f "$dir/e4d.file" "$dir/e4d.def"; sync; echo 3 > /proc/sys/vm/drop_caches
  s0=$(cat /sys/block/$dev/stat)
  fio --output-format=json --name=j --ioengine=e4defrag --directory="$dir" \
      --filename=e4d.file --donorname=e4d.def --size=8M --filesize=8M --bs=$bs \
      --inplace=$ip --overwrite=$ow --rw=write > /tmp/e4d.json
  s1=$(cat /sys/block/$dev/stat); sync; s2=$(cat /sys/block/$dev/stat)
  python3 - "$bs" "$ip" "$ow" "$s0" "$s1" "$s2" <<'PY'
import json, sys
bs, ip, ow = sys.argv[1:4]
s = [list(map(int, x.split())) for x in sys.argv[4:]]
j = json.load(open('/tmp/e4d.json'))['jobs'][0]
w = j['write']
# The job's CPU time (usr + sys, fio's getrusage over its runtime) per I/O.
cpu = (j['usr_cpu'] + j['sys_cpu']) / 100 * j['job_runtime'] * 1e3 / w['total_ios']
kib = lambda a, b, i: (s[b][i] - s[a][i]) // 2
print(f"{bs:<6} {ip:<7} {ow:<9} {w['total_ios']:6} {w['clat_ns']['mean']/1e3:8.1f}us "
      f"{w['clat_ns']['percentile']['50.000000']/1e3:7.1f}us {cpu:8.1f}us {kib(0,1,2):6}Ki "
      f"{kib(0,1,6):6}Ki {kib(1,2,6):6}Ki")
PY
done; done; done
