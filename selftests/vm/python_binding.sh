#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The Python binding through the device, inside a pmidx-vm guest:
#   tools/pmidx-vm --pmem IMG -- selftests/vm/python_binding.sh
# The guest runs the host's own python3 (the host root over 9p, PATH of
# tools/vm/guest-run.sh: Debian's /usr/bin/python3) on the extension
# module built in place (make python-ext: python/pmidx/_pmidx*.so), which
# needs python3-cffi-backend at run time. Wipes /dev/pmem0.
# Last line "N passed, N failed" (selftests/vm/python_binding.py).
set -u
cd "$(dirname "$0")/../.." || exit 1
[ "${PMIDX_VM:-}" = 1 ] || { echo "python_binding: run me under tools/pmidx-vm"; exit 2; }
if ! PYTHONPATH=python python3 -c 'import pmidx' 2>/dev/null; then
	PYTHONPATH=python python3 -c 'import pmidx'
	echo "python_binding: the binding does not import (make python-ext)"
	echo "0 passed, 1 failed"
	exit 1
fi
PYTHONPATH=python exec python3 selftests/vm/python_binding.py
