# SPDX-License-Identifier: LGPL-2.1-or-later
"""Opening pools and indexes, handle lifetimes, bad paths and names."""
import gc
import os
import pathlib
import subprocess
import sys
import tempfile

import pytest

import pmidx
from conftest import ENGINES, open_as_nobody, poolfile


def test_open_path_types(pool_path):
    for path in (str(pool_path), bytes(pool_path), pathlib.Path(pool_path)):
        with pmidx.open(path) as p:
            assert p.path == os.fspath(path) and not p.closed
            assert p.fd is None		# a pool file has no device descriptor
        assert p.closed


def test_pool_class_and_repr(pool_path):
    p = pmidx.Pool(pool_path)
    assert "Pool" in repr(p)
    p.close()
    p.close()		# idempotent
    assert "closed" in repr(p)


def test_open_errors(tmp_path):
    with pytest.raises(pmidx.NotFoundError) as e:
        pmidx.open(tmp_path / "nonexistent")
    assert e.value.filename == str(tmp_path / "nonexistent")
    with pytest.raises(pmidx.UnsupportedError):	# EISDIR
        pmidx.open(tmp_path)
    with pytest.raises(pmidx.UnsupportedError) as e:	# a char device, not pmidx
        pmidx.open("/dev/null")
    assert e.value.errno == 25		# ENOTTY
    zero = tmp_path / "zero"
    zero.write_bytes(b"\0" * (16 << 20))
    tiny = tmp_path / "tiny"
    tiny.write_bytes(b"x" * 4096)
    if pmidx.EMBEDDED:
        with pytest.raises(pmidx.InvalidError):	# not a pool
            pmidx.open(zero)
        with pytest.raises(pmidx.NoSpaceError):	# too small for a pool
            pmidx.open(tiny)
    else:			# no backend for regular files
        with pytest.raises(pmidx.UnsupportedError) as e:
            pmidx.open(zero)
        assert e.value.errno == 95
    with pytest.raises(pmidx.InvalidError):
        pmidx.open("a\0b")
    for bad in (None, 5):
        with pytest.raises(TypeError):
            pmidx.open(bad)


def test_pool_file_is_exclusive(pool_path):
    """A pool file is attached by one process at a time (flock): BUSY."""
    with pmidx.open(pool_path):
        with pytest.raises(pmidx.BusyError):
            pmidx.open(pool_path)
        r = subprocess.run([sys.executable, "-c", "import pmidx, sys\n"
                            "try:\n pmidx.open(sys.argv[1])\n"
                            "except pmidx.BusyError:\n sys.exit(7)\n",
                            str(pool_path)],
                           env=dict(os.environ, PYTHONPATH=os.path.dirname(
                               os.path.dirname(pmidx.__file__))))
        assert r.returncode == 7
    with pmidx.open(pool_path):		# free again
        pass


def test_permission_denied(template):
    """A pool file the caller may not write: PermissionDeniedError."""
    d = tempfile.mkdtemp()
    try:
        os.chmod(d, 0o755)
        path = os.path.join(d, "pool")
        subprocess.run(["cp", "--sparse=always", str(template), path], check=True)
        os.chmod(path, 0o644)
        if os.geteuid() == 0:
            assert open_as_nobody(path) == 7
        else:
            os.chmod(path, 0o444)
            with pytest.raises(PermissionError) as e:
                pmidx.open(path)
            assert isinstance(e.value, pmidx.PermissionDeniedError)
    finally:
        subprocess.run(["rm", "-rf", d])


def test_index_open(pool):
    for i, e in enumerate(ENGINES):
        with pool.index(e) as idx:
            assert idx.name == e and idx.engine == e
            assert idx.id == i and idx.pool is pool
            assert repr(idx) == "<pmidx.Index %r (%s)>" % (e, e)
        assert idx.closed and "closed" in repr(idx)


def test_index_open_errors(pool):
    with pytest.raises(pmidx.NotFoundError):
        pool.index("nosuch")
    with pytest.raises(KeyError):
        pool.index("nosuch")
    with pytest.raises(pmidx.InvalidError):
        pool.index("")
    with pytest.raises(pmidx.InvalidError):
        pool.index("x" * (pmidx.NAME_MAX + 1))
    with pytest.raises(pmidx.InvalidError):
        pool.index("cc\0l")
    with pytest.raises(TypeError):
        pool.index(b"ccl")
    with pytest.raises(TypeError):
        pmidx.Index("not a pool", "ccl")


def test_closed_handles(pool_path):
    p = pmidx.open(pool_path)
    idx = p.index("ccl")
    idx.put(b"k", b"v")
    s = idx.scan()
    p.close()			# closes the index and the scan first
    assert idx.closed and s.closed
    for op in (lambda: idx.get(b"k"), lambda: idx.put(b"k", b"v"),
               lambda: idx.delete(b"k"), lambda: b"k" in idx,
               lambda: idx[b"k"], idx.check, idx.scan, lambda: p.index("ccl"),
               lambda: p.fd, lambda: next(s)):
        with pytest.raises(pmidx.ClosedError):
            op()
    with pytest.raises(ValueError):		# ClosedError is a ValueError
        idx.get(b"k")
    b = pmidx.Batch(p)
    with pytest.raises(pmidx.ClosedError):
        b.get(idx, b"k")
        b.run()
    idx.close()		# idempotent after the pool closed it
    p.close()


def test_index_close_keeps_pool(pool):
    idx = pool.index("ccl")
    idx.close()
    with pool.index("ccl") as again:
        again.put(b"a", b"b")
    assert not pool.closed


def test_context_managers(pool_path):
    with pmidx.open(pool_path) as p:
        with p.index("utree") as idx:
            idx.put(b"x", b"1")
        assert idx.closed and not p.closed
        idx2 = p.index("utree")
    assert p.closed and idx2.closed
    # an exception in the block still closes
    with pytest.raises(RuntimeError):
        with pmidx.open(pool_path) as p:
            raise RuntimeError
    assert p.closed
    with pmidx.open(pool_path) as p, p.index("utree") as idx:
        assert idx.get(b"x") == b"1"


def test_gc_closes(pool_path):
    """Unreferenced handles are closed by their finalizers: the pool file
    is free for the next open."""
    p = pmidx.open(pool_path)
    idx = p.index("b3")
    idx.put(b"k", b"v")
    s = idx.scan()
    del p, idx, s
    gc.collect()
    with pmidx.open(pool_path) as p, p.index("b3") as idx:
        assert idx[b"k"] == b"v"


def test_index_keeps_pool_alive(pool_path):
    def get_index():
        return pmidx.open(pool_path).index("ccl")
    idx = get_index()
    gc.collect()
    idx.put(b"a", b"b")		# the pool is referenced by the index
    assert idx.pool.index("ccl").get(b"a") == b"b"
    idx.pool.close()


def test_persistence(make_pool):
    path = make_pool()
    with pmidx.open(path) as p:
        for e in ENGINES:
            with p.index(e) as idx:
                for i in range(100):
                    idx.put(pmidx.key_from_u64(i), b"%s-%d" % (e.encode(), i))
                idx.delete(pmidx.key_from_u64(50))
    with pmidx.open(path) as p:
        for e in ENGINES:
            with p.index(e) as idx:
                assert idx.check() == 99
                assert idx[pmidx.key_from_u64(7)] == b"%s-7" % e.encode()
                assert pmidx.key_from_u64(50) not in idx
    out = poolfile("check", path)
    assert "ok" in out


def test_unknown_engine(make_pool):
    """An engine name no build knows: the pool file tool refuses it."""
    path = make_pool()
    with pytest.raises(RuntimeError):
        poolfile("create-index", path, "pf", "--engine", "btrfs")
    with pmidx.open(path) as p, pytest.raises(pmidx.NotFoundError):
        p.index("pf")


def test_module_constants():
    assert pmidx.KEY_MAX == 255 and pmidx.VALUE_MAX == 65536
    assert pmidx.NAME_MAX == 63 and pmidx.BATCH_MAX == 1024
    assert isinstance(pmidx.EMBEDDED, bool)
    # make check-python: the module built in the tree has the pool files
    if os.environ.get("PMIDX_EXPECT_EMBEDDED") == "1":
        assert pmidx.EMBEDDED
    assert pmidx.__version__
