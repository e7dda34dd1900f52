#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Print the kernel release pmidx targets: the one Debian's linux-image-amd64
# metapackage currently depends on, e.g.
#   "linux-image-6.1.0-56-amd64 (= 6.1.192-2)"  ->  6.1.0-56-amd64
# Used by the top Makefile (headers in /lib/modules/$KVER/build) and by
# tools/pmidx-vm (boots /boot/vmlinuz-$KVER). Never hard-code a version: a
# Debian point release bumps the ABI number and the metapackage follows it.
#
# Fallback when the metapackage is absent: the newest /boot/vmlinuz-6.1.*.
# Exit status 1 (and nothing on stdout) when no candidate is found.
set -eu

kver=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null |
	tr ',|' '\n\n' |
	sed -n 's/^[[:space:]]*linux-image-\([0-9][^[:space:](]*\).*/\1/p' |
	sed 's/-unsigned$//' | head -n1) || kver=

if [ -z "$kver" ]; then
	# ls -v sorts 6.1.0-9 before 6.1.0-10; no version is assumed.
	kver=$(ls -1v /boot/vmlinuz-6.1.* 2>/dev/null | tail -n1 |
		sed 's|^/boot/vmlinuz-||') || kver=
fi

if [ -z "$kver" ]; then
	echo "kver.sh: cannot determine the target kernel" \
		"(no linux-image-amd64, no /boot/vmlinuz-6.1.*)" >&2
	exit 1
fi
echo "$kver"
