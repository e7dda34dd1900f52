#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Stage 2 of a pmidx-vm guest, started by tools/vm/init as
#   chroot /host /bin/sh REPO/tools/vm/guest-run.sh REPO RUNDIR
# i.e. it runs with the host's own shell, kmod, ndctl, python... over 9p.
#
# RUNDIR/job (written by tools/pmidx-vm, POSIX sh) sets PMIDX_VM_RAW,
# PMIDX_VM_NR_PMEM, PMIDX_VM_MODULE, PMIDX_VM_KO, PMIDX_VM_MODNAME, exports
# the caller's PMIDX_* variables and sets the positional parameters to CMD.
#
# Steps: nvdimm drivers -> fsdax namespaces -> insmod pmidx.ko -> CMD ->
# rmmod -> sync. Progress and status go to the control port (ttyS2) as
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

setup_pmem
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

unload_module
sync
ctl DONE
