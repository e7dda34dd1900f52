# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scans as iterators over libpmidx's scan API."""
import pytest

import pmidx

K = pmidx.key_from_u64


def fill(idx, n, vlen=8):
    for i in range(n):
        idx.put(K(i), (b"%08d" % i) * (vlen // 8))


def test_full_scan(idx):
    assert list(idx.scan()) == []
    fill(idx, 200)
    recs = list(idx.scan())
    assert recs == [(K(i), b"%08d" % i) for i in range(200)]
    assert list(idx.keys()) == [K(i) for i in range(200)]


def test_ranges(idx):
    fill(idx, 100)
    keys = lambda s: [pmidx.key_to_u64(k) for k, _ in s]	# noqa: E731
    assert keys(idx.scan(K(10), K(20))) == list(range(10, 20))
    assert keys(idx.scan(K(10), K(20), after=True)) == list(range(11, 20))
    assert keys(idx.scan(K(90))) == list(range(90, 100))
    assert keys(idx.scan(None, K(3))) == [0, 1, 2]
    assert keys(idx.scan(K(10), limit=5)) == list(range(10, 15))
    assert keys(idx.scan(K(20), K(10))) == []
    assert keys(idx.scan(K(5), K(5))) == []
    # start/end need not be keys in the index; shorter sorts first
    assert keys(idx.scan(K(42)[:7] + b"\x2a\x00", K(44))) == [43]
    assert keys(idx.scan(b"\x00", limit=1)) == [0]


def test_many_batches(idx):
    """More records than one SCAN command returns (4096, or the 64 KiB
    buffer): the library resumes after the last key (PMIDX_SCAN_MORE)."""
    n = 5000
    for i in range(n):
        idx.put(K(i), b"v" * 40)
    got = [pmidx.key_to_u64(k) for k, v in idx.scan()]
    assert got == list(range(n))
    assert sum(1 for _ in idx.scan(K(1000), limit=4500)) == 4000


def test_big_records(idx):
    """Records larger than the iterator's first 64 KiB buffer: the kernel
    answers -ENOSPC with the size needed and the buffer grows."""
    vals = {K(i): bytes([i]) * pmidx.VALUE_MAX for i in range(5)}
    for k, v in vals.items():
        idx.put(k, v)
    idx.put(K(9), b"small")
    vals[K(9)] = b"small"
    assert dict(idx.scan()) == vals


def test_early_close(idx):
    fill(idx, 50)
    s = idx.scan()
    assert next(s) == (K(0), b"%08d" % 0)
    s.close()
    assert s.closed
    assert list(s) == []		# a closed scan is exhausted
    with idx.scan(K(3)) as s:
        assert next(s)[0] == K(3)
    assert s.closed
    s = idx.scan()
    for _ in s:
        pass
    assert s.closed			# freed at the end


def test_scan_sees_writes(idx):
    """Not a snapshot: records are fetched a batch at a time (here about
    1,100 of these per 64 KiB), so deletes and inserts beyond the batch
    being returned are seen; nothing is returned twice."""
    n = 5000
    for i in range(n):
        idx.put(K(i), b"v" * 40)
    got = []
    for k, _ in idx.scan():
        i = pmidx.key_to_u64(k)
        got.append(i)
        if i == 10:
            for j in range(4000, 4100):
                idx.delete(K(j))
            idx.put(K(100000), b"late")
    assert got == [i for i in range(n) if not 4000 <= i < 4100] + [100000]


def test_scan_closed_under_it(pool, engine):
    idx = pool.index(engine)
    fill(idx, 10)
    s = idx.scan()
    next(s)
    idx.close()
    with pytest.raises(pmidx.ClosedError):
        next(s)


def test_scan_bad_input(idx):
    with pytest.raises(pmidx.InvalidError):
        idx.scan(None, after=True)		# after needs a start key
    with pytest.raises(pmidx.InvalidError):
        idx.scan(b"k" * 256)
    with pytest.raises(pmidx.InvalidError):
        idx.scan(None, b"k" * 256)
    with pytest.raises(pmidx.InvalidError):
        idx.scan(limit=-1)
    with pytest.raises(TypeError):
        idx.scan("a")
    with pytest.raises(TypeError):
        idx.scan(None, 5)
