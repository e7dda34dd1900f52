#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel slab held by one index's DRAM structures, inside a pmidx-vm guest:
#   tools/pmidx-vm --pmem IMG -- docs/measurements/slab-guest.sh ENGINE N
# Loads keys 0..N-1 (8-byte values) through the sample in-kernel client
# and prints the growth of /proc/meminfo's Slab beside the engine's own
# dram_bytes statistic, then the pmidx caches' lines of /proc/slabinfo.
set -eu
cd "$(dirname "$0")/../.."
[ "${PMIDX_VM:-}" = 1 ] || { echo "slab-guest: run me under tools/pmidx-vm"; exit 2; }
ENGINE=${1:-utree}
N=${2:-200000}
CTL=build/bin/pmidxctl

slab_kb() { awk '/^Slab:/ { print $2 }' /proc/meminfo; }

$CTL format --force /dev/pmem0 >/dev/null
$CTL attach /dev/pmem0 >/dev/null
$CTL create-index s --engine "$ENGINE" >/dev/null
insmod "${PMIDX_DENTRY_KO:-samples/pmidx_dentry/pmidx_dentry.ko}"
exec 3<>/dev/pmidx_dentry
printf 'open pmidx0 s\n' >&3
sync; echo 3 >/proc/sys/vm/drop_caches
before=$(slab_kb)
printf 'bench put 0 %s 8\n' "$N" >&3
sync; echo 3 >/proc/sys/vm/drop_caches
after=$(slab_kb)
dram=$($CTL stats s --json | python3 -c '
import json, sys
def find(o):
    if isinstance(o, dict):
        if "dram_bytes" in o:
            return o["dram_bytes"]
        o = list(o.values())
    if isinstance(o, list):
        for v in o:
            r = find(v)
            if r is not None:
                return r
print(find(json.load(sys.stdin)) or 0)')
echo "engine=$ENGINE keys=$N slab_growth_kib=$((after - before)) dram_bytes_kib=$((dram / 1024))"
grep -E '^(pmidx_|kmalloc-2k |kmalloc-1k |kmalloc-512 )' /proc/slabinfo || true
printf 'close\n' >&3
exec 3>&-
rmmod pmidx_dentry
