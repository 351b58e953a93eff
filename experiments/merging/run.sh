#!/bin/bash
# usage: run.sh NAME SCHED NOMERGES RW ENGINE BATCH
L=loop0; D=/dev/$L
echo $2 > /sys/block/$L/queue/scheduler; echo $3 > /sys/block/$L/queue/nomerges
B=$(cat /sys/block/$L/stat)
fio --name=$1 --filename=$D --direct=1 --rw=$4 --bs=${BS:-4k} --size=32M --ioengine=$5 --iodepth_batch_submit=$6 --iodepth_batch_complete_min=$7 --iodepth=${8:-32} --randrepeat=0 --output-format=json --output=$1.json >/dev/null 2>$1.err
A=$(cat /sys/block/$L/stat)
python3 - "$1" "$B" "$A" <<'PY'
import sys, json
n,b,a=sys.argv[1],list(map(int,sys.argv[2].split())),list(map(int,sys.argv[3].split()))
d=[y-x for x,y in zip(b,a)]
j=json.load(open(n+'.json'))
du=[x for x in j.get('disk_util',[]) if x['name']=='loop0']
print(n, 'stat: read_ios',d[0],'read_merges',d[1],'write_ios',d[4],'write_merges',d[5],'write_sectors',d[6], '| fio disk_util', {k:du[0][k] for k in ('read_ios','write_ios','read_merges','write_merges')} if du else None, '| submit', j['jobs'][0]['iodepth_submit'])
PY
