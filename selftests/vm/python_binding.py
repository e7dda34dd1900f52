#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The Python binding (python/, package pmidx) through the device: a pool
attached in the kernel, /dev/pmidx0, reached with libpmidx's ioctl path.
Run in a pmidx-vm guest by selftests/vm/python_binding.sh (the pool
files of python/tests need no VM):

    tools/pmidx-vm --pmem IMG -- selftests/vm/python_binding.sh

For each engine the module serves (ccl, utree, b3, lodge, pfart): point operations and
their errors, scans over several SCAN commands, batches, the open pool
pinning the device (detach refused until close()), the data surviving a
detach/attach, and an index dropped under an open handle
(StaleHandleError). Then device-only errors: not a pmidx device, a block
device, no such device, no permission (uid 65534).
KTAP lines, last line "N passed, N failed".
"""
import os
import subprocess
import sys
import traceback

import pmidx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "../../python/tests"))
from nobody import open_as_nobody  # noqa: E402

CTL = "build/bin/pmidxctl"
DEV = "/dev/pmidx0"
PMEM = "/dev/pmem0"
ENGINES = ["ccl", "utree", "b3", "lodge", "pfart"]
K = pmidx.key_from_u64

n = passed = failed = skipped = 0


def ok(cond, name):
    global n, passed, failed
    n += 1
    if cond:
        passed += 1
        print("ok %d - %s" % (n, name), flush=True)
    else:
        failed += 1
        print("not ok %d - %s" % (n, name), flush=True)
    return cond


def skip(name, why):
    global n, skipped
    n += 1
    skipped += 1
    print("ok %d - %s # SKIP %s" % (n, name, why), flush=True)


def test(name, fn, *args):
    """ok(fn(*args)) with an exception as a failure and its traceback."""
    try:
        r = fn(*args)
    except Exception:
        traceback.print_exc(file=sys.stdout)
        r = False
    return ok(r is not False, name)


def raises(cls, fn, *args):
    try:
        fn(*args)
    except cls:
        return True
    except Exception as e:
        print("# %s raised %r, not %s" % (getattr(fn, "__name__", fn), e, cls.__name__))
        return False
    print("# %s did not raise %s" % (getattr(fn, "__name__", fn), cls.__name__))
    return False


def ctl(*args):
    r = subprocess.run([CTL] + list(args), capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def point_ops(idx):
    idx.put(b"alpha", b"1")
    idx[b"beta"] = b"2" * 10000		# over the first GET's 4 KiB buffer
    assert idx[b"alpha"] == b"1" and idx[b"beta"] == b"2" * 10000
    assert b"alpha" in idx and b"gamma" not in idx
    assert idx.get(b"gamma", b"d") == b"d"
    idx.put(b"alpha", b"11")
    assert idx[b"alpha"] == b"11"
    assert raises(pmidx.ExistsError, idx.put, b"alpha", b"x", True)
    idx.delete(b"alpha")
    assert raises(pmidx.NotFoundError, idx.delete, b"alpha")
    assert raises(KeyError, idx.__getitem__, b"alpha")
    idx.put(b"k" * pmidx.KEY_MAX, b"")
    assert idx[b"k" * pmidx.KEY_MAX] == b""
    idx.put(b"max", b"m" * pmidx.VALUE_MAX)
    assert idx[b"max"] == b"m" * pmidx.VALUE_MAX


def bad_input(idx):
    assert raises(pmidx.InvalidError, idx.put, b"k" * (pmidx.KEY_MAX + 1), b"v")
    assert raises(pmidx.InvalidError, idx.get, b"")
    assert raises(pmidx.InvalidError, idx.put, b"big", b"v" * (pmidx.VALUE_MAX + 1))
    assert raises(TypeError, idx.put, "str", b"v")
    assert raises(pmidx.InvalidError, lambda: idx.scan(None, None, after=True))


def scans(idx):
    for i in range(3000):
        idx.put(K(i), b"v" * 48)		# about 1,000 records per SCAN
    got = [pmidx.key_to_u64(k) for k, _ in idx.scan(K(0), K(3000))]
    assert got == list(range(3000)), got[:5]
    got = [pmidx.key_to_u64(k) for k, _ in idx.scan(K(100), K(200), after=True)]
    assert got == list(range(101, 200))
    assert sum(1 for _ in idx.scan(K(0), limit=2500)) == 2500
    with idx.scan(K(10)) as s:
        assert next(s) == (K(10), b"v" * 48)
    assert s.closed


def batches(pool, idx):
    b = pool.batch()
    puts = [b.put(idx, K(10000 + i), b"b%d" % i) for i in range(1500)]
    g = b.get(idx, b"beta")			# 10,000 bytes: retried at its size
    miss = b.get(idx, b"nope")
    d = b.delete(idx, K(10000))
    sc = b.scan(idx, K(10000), K(10010), count=4)
    b.run()
    assert all(r.ok for r in puts)
    assert g.value == b"2" * 10000
    assert isinstance(miss.error, pmidx.NotFoundError) and d.ok
    assert [pmidx.key_to_u64(k) for k, _ in sc.value] == [10001, 10002, 10003, 10004]
    assert sc.more
    b = pool.batch()
    first = b.put(idx, b"refused", b"v")
    b.put(idx, b"", b"v")			# malformed: the command is refused
    assert raises(pmidx.InvalidError, b.run)
    assert isinstance(first.error, pmidx.CanceledError)
    assert b"refused" not in idx


def pinned():
    """An open /dev/pmidxN pins the pool: detach is refused (EBUSY) until
    the binding closed its descriptor."""
    rc, out = ctl("detach", DEV)
    if rc == 0 or not ("busy" in out.lower() or "in use" in out):
        print("# detach: rc %d: %s" % (rc, out.strip()))
        return False
    return True


def stale(e):
    """drop-index under an open index handle (allowed: uapi): the handle's
    id answers -ENXIO, StaleHandleError."""
    with pmidx.open(DEV) as pool, pool.index(e) as idx:
        assert idx[b"beta"] == b"2" * 10000
        rc, out = ctl("drop-index", e)
        assert rc == 0, out
        assert raises(pmidx.StaleHandleError, idx.get, b"beta")
        assert raises(pmidx.StaleHandleError, idx.put, b"beta", b"x")
        assert raises(pmidx.NotFoundError, pool.index, e)


def engine_tests(e):
    rc, out = ctl("create-index", e, "--engine", e)
    if rc and "engine not built into this module" in out:
        skip("%s: the binding on a %s index" % (e, e), "engine %s is not built into pmidx.ko" % e)
        return
    if not ok(rc == 0, "%s: create-index" % e):
        print("# " + out.strip())
        return
    with pmidx.open(DEV) as pool:
        ok(pool.fd is not None and pool.fd >= 0 and pool.path == DEV,
           "%s: open %s (ioctl path, fd %s)" % (e, DEV, pool.fd))
        with pool.index(e) as idx:
            ok(idx.engine == e, "%s: index engine is %s" % (e, idx.engine))
            test("%s: put/get/delete, mapping access, errors" % e, point_ops, idx)
            test("%s: bad input" % e, bad_input, idx)
            test("%s: scans over several SCAN commands" % e, scans, idx)
            test("%s: batches" % e, batches, pool, idx)
            ok(idx.check() == 3000 + 1499 + 3, "%s: check() counts the keys" % e)
            ok(pinned(), "%s: detach refused while the binding holds the pool" % e)
    # closed: the pool is free again; detach + attach, then the data
    rc1, _ = ctl("detach", DEV)
    rc2, _ = ctl("attach", PMEM)
    if not ok(rc1 == 0 and rc2 == 0, "%s: detach and attach after close()" % e):
        return

    def reread():
        with pmidx.open(DEV) as pool, pool.index(e) as idx:
            assert idx[b"beta"] == b"2" * 10000
            assert idx[b"max"] == b"m" * pmidx.VALUE_MAX
            assert sum(1 for _ in idx.keys(K(0), K(3000))) == 3000
            assert idx.check() == 3000 + 1499 + 3
    test("%s: the data after a detach/attach" % e, reread)
    test("%s: index dropped under its handle: StaleHandleError" % e, stale, e)


def device_errors():
    ok(raises(pmidx.UnsupportedError, pmidx.open, "/dev/null"),
       "a char device that is not pmidx: UnsupportedError (ENOTTY)")
    ok(raises(pmidx.UnsupportedError, pmidx.open, PMEM),
       "a block device: UnsupportedError (EOPNOTSUPP)")
    ok(raises(pmidx.NotFoundError, pmidx.open, "/dev/pmidx9"),
       "no such device: NotFoundError")
    with pmidx.open(DEV) as pool:
        ok(raises(pmidx.NotFoundError, pool.index, "nosuch"),
           "no such index: NotFoundError")
    os.chmod(DEV, 0o600)
    ok(open_as_nobody(DEV) == 7, "uid 65534 without access: PermissionDeniedError")


def main():
    print("TAP version 13")
    print("# pmidx %s from %s" % (pmidx.__version__, os.path.dirname(pmidx.__file__)))
    for d in sorted(os.listdir("/dev")):
        if d.startswith("pmidx") and d[5:].isdigit():
            ctl("detach", "/dev/" + d)
    rc1, o1 = ctl("format", PMEM, "--force")
    rc2, o2 = ctl("attach", PMEM)
    if not ok(rc1 == 0 and rc2 == 0 and os.path.exists(DEV),
              "setup: %s formatted and attached as %s" % (PMEM, DEV)):
        print("# " + (o1 + o2).strip())
    else:
        for e in ENGINES:
            engine_tests(e)
        device_errors()
    if skipped:
        print("# %d skipped" % skipped)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
