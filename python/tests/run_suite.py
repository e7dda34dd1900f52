# SPDX-License-Identifier: LGPL-2.1-or-later
"""Run the binding's pytest suite for tools/run-suites: pytest's own
output, then a "SKIP: reason" line per skipped test and, last, the
"N passed, N failed" line the suite runner counts (a test that fails in
setup, call or teardown, or a module that fails to import, is one
failure). Temporary files go to /dev/shm when it is writable.

    python3 python/tests/run_suite.py [PYTEST ARGS...]
"""
import os
import shutil
import sys
import tempfile

import pytest


class Totals:
    def __init__(self):
        self.passed = set()
        self.failed = set()
        self.skipped = {}

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed.add(report.nodeid)
        elif report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) \
                else str(report.longrepr)
            if reason.startswith("Skipped: "):
                reason = reason[len("Skipped: "):]
            self.skipped[report.nodeid] = reason
        elif report.when == "call" and report.passed:
            self.passed.add(report.nodeid)

    def pytest_collectreport(self, report):
        if report.failed:
            self.failed.add(report.nodeid or "collection")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    args = sys.argv[1:]
    tmp = None
    # pool files on tmpfs: closing a pool msync()s it, on a disk that is
    # half of the suite's time
    if not any(a.startswith("--basetemp") for a in args) and \
            os.access("/dev/shm", os.W_OK):
        tmp = tempfile.mkdtemp(prefix="pmidx-python.", dir="/dev/shm")
        args += ["--basetemp", os.path.join(tmp, "t")]
    t = Totals()
    try:
        rc = pytest.main(["-q", "-p", "no:cacheprovider", "-rfEs", here] + args,
                         plugins=[t])
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    for reason in t.skipped.values():
        print("SKIP: " + reason)
    passed = len(t.passed - t.failed)
    failed = len(t.failed)
    if rc not in (0, 5) and not failed:	# usage or internal error
        failed = 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
