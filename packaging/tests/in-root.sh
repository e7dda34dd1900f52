#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Stage 2 of tools/packaging-check, run as root inside a chroot whose root
# is a throwaway overlay of the host's / (nothing here reaches the host's
# filesystem or its kernel: no module is loaded, /lib/modules and
# /var/lib/dkms are the overlay's).
#
#   in-root.sh REPO DEBDIR OUTDIR VERSION KVER...
#
# Installs the packages of DEBDIR with dpkg (their maintainer scripts
# included: the pmidx group, DKMS add/build/install), checks the
# installed files, copies what the guest smoke test needs to OUTDIR
# (which is on the host: a bind mount), purges the packages and checks
# that nothing is left. Then `make install` of the checkout into
# /usr/local and `man pmidxctl`. Prints "ok - ..." / "not ok - ..." lines.
set -u
repo=$1 debdir=$2 out=$3 ver=$4
shift 4
kvers="$*"
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 MANPAGER=cat PAGER=cat
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
log=$out/in-root.log
: >"$log"

ok() { echo "ok - $*"; }
no() { echo "not ok - $*"; }
t() { # DESC CMD...: quiet on success, output shown on failure
	local d=$1 o s=$SECONDS
	shift
	if o=$("$@" 2>&1); then
		ok "$d ($((SECONDS - s))s)"
	else
		no "$d ($((SECONDS - s))s)"
		printf '%s\n' "$o" | tail -n 25 | sed 's/^/    /'
	fi
	printf '== %s\n%s\n' "$d" "$o" >>"$log"
}

# no man-db index rebuild on every dpkg run (the pages are read directly)
echo 'man-db man-db/auto-update boolean false' | debconf-set-selections

debs=$(ls "$debdir"/pmidx-dkms_*.deb "$debdir"/libpmidx1_*.deb \
	"$debdir"/libpmidx-dev_*.deb "$debdir"/pmidx-tools_*.deb)
# man pages even where dpkg is configured to drop them (slim images)
t "dpkg -i pmidx-dkms libpmidx1 libpmidx-dev pmidx-tools (maintainer scripts: DKMS build for the installed kernels)" \
	dpkg --path-include='/usr/share/man/*' -i $debs

# The postinst builds for the running kernel and the newest, or for every
# /lib/modules entry when the running kernel is not installed (a CI
# container): make sure both targets are covered, then check them.
for k in $kvers; do
	if ! dkms status -m pmidx -v "$ver" -k "$k" 2>/dev/null | grep -q installed; then
		echo "  (postinst did not build for $k: dkms install -k $k)"
		dkms install -m pmidx -v "$ver" -k "$k" >>"$log" 2>&1
	fi
	ko=$(find /lib/modules/"$k"/updates/dkms -name 'pmidx.ko*' 2>/dev/null | head -n1)
	t "dkms: pmidx/$ver installed for $k" \
		sh -c "dkms status -m pmidx -v $ver -k $k 2>/dev/null | grep -q installed && [ -n '$ko' ]"
	t "modinfo pmidx.ko for $k: vermagic $k, parameter persist" \
		sh -c "modinfo -F vermagic '$ko' | grep -q '^$k ' &&
		       modinfo -F parm '$ko' | grep -q '^persist:'"
	mkdir -p "$out/$k" && cp "$ko" "$out/$k/"
done

t "pmidx-dkms: /usr/src/pmidx-$ver is make dkms-src's tree" \
	sh -c "make -s -C '$repo' --no-print-directory KVER=none dkms-src DKMS_SRC=/tmp/dkms-src-ref >/dev/null &&
	       diff -r /tmp/dkms-src-ref /usr/src/pmidx-$ver"

t "pmidxctl --version is $ver" sh -c "pmidxctl --version | grep -q '^pmidxctl $ver '"
t "pmidx-bench --help" sh -c "pmidx-bench --help | grep -q -- --workload"
t "group pmidx exists (pmidx-tools postinst)" getent group pmidx
t "udev rule installed: /dev/pmidxN to group pmidx" \
	grep -q 'GROUP="pmidx"' /lib/udev/rules.d/60-pmidx.rules
for p in pmidxctl.8 pmidx-bench.1 pmidx.4 libpmidx.3 pmidx_pool_open.3 pmidx_ring_wait.3 \
	pmidx_strerror.3 pmidx_batch.3 pmidx_scan_next.3 pmidx_put.3; do
	t "man ${p%.*}(${p##*.}) from the packages" \
		sh -c "man ${p##*.} ${p%.*} | grep -q '^NAME'"
done
t "bash completion: pmidxctl cr<TAB> -> create-index" bash -c '
	. /usr/share/bash-completion/bash_completion
	_completion_loader pmidxctl
	COMP_WORDS=(pmidxctl cr); COMP_CWORD=1; COMP_LINE="pmidxctl cr"; COMP_POINT=11
	_pmidxctl pmidxctl cr pmidxctl
	[ "${COMPREPLY[*]}" = create-index ]'

# libpmidx-dev: the installed header, pkg-config file and libraries only
smoke=$repo/packaging/tests/smoke.c
t "pkg-config pmidx: version, -lpmidx" \
	sh -c "[ \"\$(pkg-config --modversion pmidx)\" = 1.1.0 ] && pkg-config --libs pmidx | grep -q -- -lpmidx"
t "smoke.c builds against the installed <pmidx.h> and libpmidx.so.1" \
	sh -c "cd /tmp && cc -Wall -Werror \$(pkg-config --cflags pmidx) $smoke -o smoke \$(pkg-config --libs pmidx) &&
	       ldd ./smoke | grep -q 'lib/$ma/libpmidx.so.1'"
t "smoke.c links statically (pkg-config --static)" \
	sh -c "cd /tmp && cc \$(pkg-config --cflags pmidx) $smoke -o smoke-static -Wl,-Bstatic \$(pkg-config --static --libs pmidx) -Wl,-Bdynamic &&
	       ! ldd ./smoke-static | grep -q libpmidx"
echo "# smoke (installed libpmidx.so.1, no kernel):"
/tmp/smoke || true
cp /tmp/smoke "$out/smoke"
mkdir -p "$out/bin" "$out/lib"
cp /usr/bin/pmidxctl /usr/bin/pmidx-bench "$out/bin/"
cp -a /usr/lib/"$ma"/libpmidx.so.1* "$out/lib/"

t "dpkg --purge: prerm removes the DKMS modules" \
	dpkg --purge pmidx-tools libpmidx-dev libpmidx1 pmidx-dkms
t "nothing left: no pmidx.ko, /usr/src/pmidx-$ver, dkms entry, pmidxctl" \
	sh -c "! find /lib/modules -name 'pmidx.ko*' | grep -q . && [ ! -e /usr/src/pmidx-$ver ] &&
	       ! dkms status -m pmidx | grep -q . && [ ! -e /usr/bin/pmidxctl ]"

# make install from the checkout (PREFIX=/usr/local), then man pmidxctl
t "make install (PREFIX=/usr/local): man pmidxctl, man 3 pmidx_get, pkg-config" \
	sh -c "make -C '$repo' --no-print-directory KVER=none install >/dev/null &&
	       man -w pmidxctl | grep -q '^/usr/local/.*man8/pmidxctl.8' &&
	       man pmidxctl | grep -q 'attach' && man 3 pmidx_get | grep -q '^NAME' &&
	       PKG_CONFIG_PATH=/usr/local/lib/pkgconfig pkg-config --libs pmidx | grep -q -- -lpmidx &&
	       /usr/local/bin/pmidxctl --version >/dev/null &&
	       ldconfig -p | grep -q '=> /usr/local/lib/libpmidx.so.1$'"
exit 0
