# SPDX-License-Identifier: GPL-2.0
"""A pmidx.open() refused for lack of access, seen as root: shared by the
pool-file tests (conftest.py) and the VM test (selftests/vm/python_binding.py)."""
import os

import pmidx


def open_as_nobody(path):
    """pmidx.open(@path) as uid/gid 65534 in a forked child (the binding is
    already loaded): 7 for PermissionDeniedError, 1 otherwise."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            pmidx.open(path)
        except pmidx.PermissionDeniedError:
            code = 7
        except BaseException as e:
            print("# as uid 65534: %r" % (e,), flush=True)
        os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
