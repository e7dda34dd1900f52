# SPDX-License-Identifier: LGPL-2.1-or-later
"""Point operations on every engine, and bad input."""
import pytest

import pmidx
from conftest import poolfile


def test_put_get_delete(idx):
    idx.put(b"alpha", b"1")
    assert idx.get(b"alpha") == b"1"
    assert idx[b"alpha"] == b"1"
    idx.put(b"alpha", b"22")		# upsert
    assert idx[b"alpha"] == b"22"
    idx.delete(b"alpha")
    assert idx.get(b"alpha") is None
    assert idx.get(b"alpha", b"dflt") == b"dflt"
    with pytest.raises(pmidx.NotFoundError) as e:
        idx[b"alpha"]
    assert e.value.errno == 2 and e.value.filename == b"alpha"
    with pytest.raises(KeyError):
        idx.delete(b"alpha")


def test_insert_exists(idx):
    idx.put(b"k", b"v", insert=True)
    with pytest.raises(pmidx.ExistsError) as e:
        idx.put(b"k", b"w", insert=True)
    assert e.value.errno == 17
    assert idx[b"k"] == b"v"


def test_mapping_protocol(idx):
    idx[b"a"] = b"x"
    assert b"a" in idx and b"b" not in idx
    del idx[b"a"]
    assert b"a" not in idx
    with pytest.raises(KeyError):
        del idx[b"a"]
    idx[b"e"] = b""			# an empty value is present
    assert b"e" in idx and idx[b"e"] == b""


def test_value_sizes(idx):
    """Values up to 64 KiB; those over the first read's 4 KiB buffer take
    a second call with the size the kernel reports."""
    for n in (0, 1, 4095, 4096, 4097, 30000, pmidx.VALUE_MAX):
        v = bytes((i * 7 + n) & 0xff for i in range(n))
        idx.put(b"v%d" % n, v)
        assert idx[b"v%d" % n] == v
    with pytest.raises(pmidx.InvalidError) as e:
        idx.put(b"big", b"x" * (pmidx.VALUE_MAX + 1))
    assert e.value.errno == 7		# E2BIG
    assert b"big" not in idx


def test_key_sizes(idx):
    k = b"k" * pmidx.KEY_MAX
    idx.put(k, b"max")
    assert idx[k] == b"max"
    for bad in (b"k" * (pmidx.KEY_MAX + 1), b"k" * 4096, b""):
        for op in (lambda: idx.put(bad, b"v"), lambda: idx.get(bad),
                   lambda: idx.delete(bad), lambda: bad in idx):
            with pytest.raises(pmidx.InvalidError) as e:
                op()
            assert e.value.errno == 22
            with pytest.raises(ValueError):
                op()


def test_binary_keys(idx):
    keys = [b"\0", b"\0\0", b"\xff" * 3, b"a\0b", bytes(range(256))[:255]]
    for i, k in enumerate(keys):
        idx.put(k, b"%d" % i)
    for i, k in enumerate(keys):
        assert idx[k] == b"%d" % i
    assert [k for k, _ in idx.scan()] == sorted(keys)


def test_bytes_like(idx):
    idx.put(bytearray(b"ba"), memoryview(b"mv-value"))
    assert idx[memoryview(b"ba")] == b"mv-value"
    assert idx.get(bytearray(b"ba")) == b"mv-value"
    buf = bytearray(b"0123456789")
    idx.put(memoryview(buf)[2:5], memoryview(buf)[5:])
    assert idx[b"234"] == b"56789"
    assert isinstance(idx[b"234"], bytes)


def test_bad_types(idx):
    for bad in ("str", None, 5, 1.5, object()):
        with pytest.raises(TypeError):
            idx.put(bad, b"v")
        with pytest.raises(TypeError):
            idx.put(b"k", bad)
        with pytest.raises(TypeError):
            idx.get(bad)
        with pytest.raises(TypeError):
            idx.delete(bad)
        with pytest.raises(TypeError):
            bad in idx	# noqa: B015
    assert b"k" not in idx


def test_check_counts(idx):
    assert idx.check() == 0
    for i in range(300):
        idx.put(pmidx.key_from_u64(i), b"v")
    for i in range(0, 300, 3):
        idx.delete(pmidx.key_from_u64(i))
    assert idx.check() == 200


def test_u64_keys():
    assert pmidx.key_from_u64(1) == b"\0" * 7 + b"\1"
    assert pmidx.key_from_u64(2**64 - 1) == b"\xff" * 8
    for v in (0, 1, 255, 256, 2**32, 2**64 - 1):
        assert pmidx.key_to_u64(pmidx.key_from_u64(v)) == v
    assert pmidx.key_from_u64(9) < pmidx.key_from_u64(10)
    with pytest.raises(OverflowError):
        pmidx.key_from_u64(-1)
    with pytest.raises(OverflowError):
        pmidx.key_from_u64(2**64)
    with pytest.raises(pmidx.InvalidError):
        pmidx.key_to_u64(b"1234567")


def test_pool_full(make_pool, engine):
    """ENOSPC from a write is NoSpaceError; what was written stays."""
    path = make_pool()
    n = 0
    with pmidx.open(path) as p, p.index(engine) as idx:
        with pytest.raises(pmidx.NoSpaceError) as e:
            while n < 10000:
                idx.put(pmidx.key_from_u64(n), b"v" * 60000)
                n += 1
        assert e.value.errno == 28 and "pool" in e.value.strerror
        assert 0 < n < 10000
        assert idx.check() == n
        assert idx[pmidx.key_from_u64(n - 1)] == b"v" * 60000
    assert "ok" in poolfile("check", path)
