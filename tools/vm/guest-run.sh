#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Stage 2 of a pmidx-vm guest, started by tools/vm/init as
#   chroot /host /bin/sh REPO/tools/vm/guest-run.sh REPO RUNDIR
# i.e. it runs with the host's own shell, kmod, ndctl, python... over 9p.
#
# RUNDIR/job (written by tools/pmidx-vm, POSIX sh) sets PMIDX_VM_RAW,
# PMIDX_VM_NR_PMEM, PMIDX_VM_MODULE, PMIDX_VM_KO, PMIDX_VM_MODNAME,
# PMIDX_VM_MODDIR (a debug-tier kernel's /lib/modules, else empty), exports
# the caller's PMIDX_* variables and sets the positional parameters to CMD.
#
# Steps: nvdimm drivers -> fsdax namespaces -> insmod pmidx.ko -> CMD ->
# rmmod -> (debug kernels: kmemleak scan) -> sync. Progress and status go to the control port (ttyS2) as
# @@PMIDX-VM:...@@ lines; CMD's output goes to ttyS0 only.

repo=$1
run=$2
CTL=/dev/ttyS2
OUT=/dev/ttyS0

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH

# One line per message: the host ignores lines that do not end in @@, so
# multi-line text (ndctl or insmod errors) is joined.
ctl() {
	printf '@@PMIDX-VM:%s@@\n' "$(printf '%s' "$*" | tr '\n' ' ')" >"$CTL"
}

# Informational: shown on the host's stderr (unless --quiet) and kept in
# the kernel log so the saved log tells the whole story.
info() {
	echo "pmidx-vm: $*" >/dev/kmsg
	ctl "INFO:$*"
}

# Step markers in the kernel log, to correlate kernel messages with CMD.
mark() {
	echo "pmidx-vm: $*" >/dev/kmsg
}

fail() {
	echo "pmidx-vm: setup failed: $*" >/dev/kmsg
	ctl "SETUP-FAIL:$*"
	exit 1
}

# Mode and block device of a namespace, from sysfs (ndctl list costs ~0.2 s
# of TCG time per call). Sets MODE (fsdax, raw, other) and BLK (pmemN).
# fsdax: an active pfn device claims the namespace and owns the disk;
# raw: the disk hangs off the namespace itself.
ns_state() { # namespace
	nd=/sys/bus/nd/devices
	MODE=other BLK=
	for pfn in "$nd"/pfn*; do
		[ "$(cat "$pfn/namespace" 2>/dev/null)" = "$1" ] || continue
		for b in "$pfn"/block/*; do
			[ -e "$b" ] && MODE=fsdax BLK=${b##*/}
		done
	done
	[ "$MODE" = fsdax ] && return
	for b in "$nd/$1"/block/*; do
		[ -e "$b" ] && MODE=raw BLK=${b##*/}
	done
}

wait_for() { # path seconds
	i=0
	while [ ! -e "$1" ]; do
		i=$((i + 1))
		[ $i -gt $(($2 * 10)) ] && return 1
		sleep 0.1
	done
}

# A debug-tier kernel (tools/debug-kernel) has no module tree on the host
# and everything built in: PMIDX_VM_MODDIR is a /lib/modules that pmidx-vm
# made for it (its modules.builtin, depmod-ed), mounted over the host's so
# `modprobe loop` and the like succeed as they do with Debian's kernel
# (modprobe of a built-in module is a no-op).
builtin_modules() {
	[ -n "${PMIDX_VM_MODDIR:-}" ] || return 0
	mount --bind "$PMIDX_VM_MODDIR" /lib/modules ||
		fail "cannot mount $PMIDX_VM_MODDIR on /lib/modules"
}

setup_pmem() {
	mark "loading nvdimm drivers"
	# No udev in the guest, so nothing autoloads drivers: load them here.
	modprobe -a nfit nd_pmem || fail "modprobe nfit nd_pmem failed"

	n=0
	while [ $n -lt "$PMIDX_VM_NR_PMEM" ]; do
		wait_for "/sys/bus/nd/devices/namespace$n.0" 15 ||
			fail "namespace$n.0 did not appear (nvdimm $n)"
		n=$((n + 1))
	done
	# Region and namespace probing is asynchronous: reading wait_probe
	# flushes it, so ndctl sees the final state (e.g. fsdax from a
	# previous boot on the same backing file).
	cat /sys/bus/nd/devices/ndbus*/wait_probe >/dev/null 2>&1

	n=0
	while [ $n -lt "$PMIDX_VM_NR_PMEM" ]; do
		setup_namespace "namespace$n.0"
		n=$((n + 1))
	done
}

setup_namespace() { # namespace
	ns=$1
	ns_state "$ns"
	if [ "$PMIDX_VM_RAW" = 1 ]; then
		info "$ns: mode $MODE${BLK:+ ($BLK)}, left as is (--raw)"
		return
	fi
	if [ "$MODE" = fsdax ]; then
		# The pfn info block lives in the backing file: a reboot on
		# the same --pmem file finds it, nothing to convert.
		info "$ns: already fsdax ($BLK)"
	else
		out=$(ndctl create-namespace -f -e "$ns" -m fsdax -M mem 2>&1) ||
			fail "ndctl create-namespace -e $ns -m fsdax failed: $out"
		ns_state "$ns"
		[ "$MODE" = fsdax ] || fail "$ns is not fsdax after ndctl create-namespace"
		info "$ns: converted to fsdax ($BLK)"
	fi
	dax=$(cat "/sys/block/$BLK/queue/dax" 2>/dev/null)
	[ "$dax" = 1 ] || fail "/sys/block/$BLK/queue/dax is '$dax', expected 1"
}

load_module() {
	[ "$PMIDX_VM_MODULE" = 1 ] || return 0
	[ -r "$PMIDX_VM_KO" ] || fail "$PMIDX_VM_KO not found (build it first)"
	modprobe libcrc32c 2>/dev/null
	out=$(insmod "$PMIDX_VM_KO" 2>&1) || fail "insmod $PMIDX_VM_KO failed: $out"
	info "loaded $PMIDX_VM_KO"
}

# kmemleak (debug kernels only): KMEMLEAK=/sys/kernel/debug/kmemleak when
# the kernel has it. A scan costs ~10 s of TCG time, so there is no
# "scan; clear" after boot: kmemleak_start notes jiffies before insmod and
# kmemleak_check (after rmmod) drops the objects allocated before (each
# report gives its allocation's jiffies). kmemleak_check scans twice (an object is reported
# once it is unreferenced, older than 5 s and unchanged between two
# scans), resolves addresses of the unloaded module with the symbols
# kmemleak_syms saved before rmmod and copies the report into the kernel
# log, where the host's splat scan ("unreferenced object 0x") fails the run.
KMEMLEAK=/sys/kernel/debug/kmemleak
KMEMLEAK_J0=0
KMEMLEAK_SYMS=/tmp/.pmidx-vm-module.syms
kmemleak_init() {
	[ -d /sys/kernel/debug ] && [ ! -e "$KMEMLEAK" ] &&
		mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	[ -w "$KMEMLEAK" ] || KMEMLEAK=
}

kmemleak_start() {
	[ -n "$KMEMLEAK" ] || return 0
	echo clear >"$KMEMLEAK" 2>/dev/null
	KMEMLEAK_J0=$(sed -n 's/^jiffies: *\([0-9]*\)$/\1/p' /proc/timer_list | head -n1)
	mark "kmemleak: objects allocated from jiffies ${KMEMLEAK_J0:=0} on are checked"
}

kmemleak_syms() {
	[ -n "$KMEMLEAK" ] || return 0
	# Every module's (a sample client CMD loaded may be gone already).
	awk 'NF == 4' /proc/kallsyms >"$KMEMLEAK_SYMS" 2>/dev/null
}

# stdin: kmemleak's report; stdout: the objects allocated from jiffies $1
# on, addresses of (unloaded) modules resolved with the symbols in $2.
kmemleak_filter() { # jiffies0 symfile
	python3 -c '
import re, sys
j0 = int(sys.argv[1])
syms = []
try:
    for l in open(sys.argv[2]):
        f = l.split()
        syms.append((int(f[0], 16), f[2], f[3] if len(f) > 3 else ""))
except OSError:
    pass
syms.sort()
def name(a):
    best = None
    for s in syms:
        if s[0] > a:
            break
        best = s
    if not best or a - best[0] >= 1 << 20:
        return None
    return "%s+0x%x %s" % (best[1], a - best[0], best[2])
blocks, cur = [], None
for l in sys.stdin.read().splitlines():
    if l.startswith("unreferenced object"):
        cur = [l]; blocks.append(cur)
    elif cur is not None:
        m = re.match(r"(\s*\[<[0-9a-f]+>\]) 0x([0-9a-f]+)$", l)
        if m and name(int(m.group(2), 16)):
            l = "%s %s" % (m.group(1), name(int(m.group(2), 16)))
        cur.append(l)
for b in blocks:
    m = re.search(r", jiffies ([0-9]+)", "\n".join(b))
    if m and int(m.group(1)) < j0:
        continue
    print("\n".join(b))
' "$1" "$2" 2>/dev/null
}

kmemleak_check() {
	[ -n "$KMEMLEAK" ] || return 0
	# No sleep between the scans: one takes longer than kmemleak's 5 s
	# minimum age under TCG.
	echo scan >"$KMEMLEAK" 2>/dev/null
	echo scan >"$KMEMLEAK" 2>/dev/null
	all=$(cat "$KMEMLEAK" 2>/dev/null)
	if [ -z "$all" ]; then
		mark "kmemleak: no leaks"
		return 0
	fi
	leaks=$(printf '%s\n' "$all" | kmemleak_filter "$KMEMLEAK_J0" "$KMEMLEAK_SYMS") ||
		leaks=$all
	n=$(printf '%s\n' "$all" | grep -c '^unreferenced object')
	m=$(printf '%s\n' "$leaks" | grep -c '^unreferenced object')
	[ "$m" -lt "$n" ] &&
		mark "kmemleak: $((n - m)) unreferenced objects from before jiffies $KMEMLEAK_J0 ignored"
	if [ "$m" = 0 ]; then
		mark "kmemleak: no leaks"
		return 0
	fi
	info "kmemleak: $m unreferenced objects (in the kernel log)"
	printf '%s\n' "$leaks" | while IFS= read -r l; do
		echo "pmidx-vm: kmemleak: $l" >/dev/kmsg
	done
}

unload_module() {
	[ "$PMIDX_VM_MODULE" = 1 ] || return 0
	# CMD may have unloaded it itself (reload tests): that is fine.
	[ -d "/sys/module/$PMIDX_VM_MODNAME" ] || return 0
	out=$(rmmod "$PMIDX_VM_MODNAME" 2>&1) && return 0
	echo "pmidx-vm: rmmod $PMIDX_VM_MODNAME failed: $out" >/dev/kmsg
	ctl "RMMOD-FAIL:$out"
}

# One argument is a shell command line (so `-- 'a | b'` works); several are
# an argv, run exactly as given.
run_cmd() {
	if [ $# -eq 1 ]; then
		sh -c "$1"
	else
		"$@"
	fi
}

mark "stage 2"
. "$run/job" || fail "cannot read $run/job"

builtin_modules
kmemleak_init
setup_pmem
kmemleak_start
# pmidx code runs from here on (the host's boot watchdog stops here).
ctl LOADING
load_module

cd "$repo" || fail "cd $repo"
PATH=$repo/tools:$repo/build/bin:$PATH
HOME=/tmp
TERM=dumb
PMIDX_VM=1
export PATH HOME TERM PMIDX_VM

mark "CMD started"
ctl START
# Subshell: a builtin CMD such as `exit 3` must not end this script.
(run_cmd "$@") </dev/null >"$OUT" 2>&1
rc=$?
mark "CMD exited with status $rc"
ctl "RC=$rc"

kmemleak_syms
unload_module
kmemleak_check
sync
ctl DONE
