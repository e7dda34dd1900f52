# SPDX-License-Identifier: LGPL-2.1-or-later
"""Batches: pmidx_batch() requests, their results and errors."""
import pytest

import pmidx

K = pmidx.key_from_u64


def test_mixed(idx):
    idx.put(b"old", b"o")
    b = idx.pool.batch()
    r = [b.put(idx, b"a", b"1"), b.get(idx, b"a"), b.get(idx, b"nope"),
         b.delete(idx, b"old"), b.delete(idx, b"old"),
         b.put(idx, b"a", b"2", insert=True), b.scan(idx)]
    assert len(b) == 7
    results = b.run()
    assert results == r and b.results == r and len(b) == 0
    assert [x.op for x in r] == ["put", "get", "get", "delete", "delete",
                                 "put", "scan"]
    assert r[0].ok and r[0].value is None
    assert r[1].value == b"1" and r[1].check() == b"1"
    assert isinstance(r[2].error, pmidx.NotFoundError) and r[2].value is None
    assert r[3].ok and isinstance(r[4].error, pmidx.NotFoundError)
    assert isinstance(r[5].error, pmidx.ExistsError)
    with pytest.raises(pmidx.ExistsError):
        r[5].check()
    assert r[6].value == [(b"a", b"1")] and not r[6].more
    assert "ok" in repr(r[0]) and "NotFoundError" in repr(r[2])


def test_check_raises_first(idx):
    b = idx.pool.batch()
    b.put(idx, b"x", b"1")
    b.delete(idx, b"missing")
    b.put(idx, b"y", b"2")
    with pytest.raises(pmidx.NotFoundError):
        b.run(check=True)
    assert idx[b"x"] == b"1" and idx[b"y"] == b"2"	# the others ran


def test_context_manager(idx):
    with idx.pool.batch() as b:
        r = b.put(idx, b"k", b"v")
    assert r.ok and idx[b"k"] == b"v"
    with pytest.raises(RuntimeError):
        with idx.pool.batch() as b:
            r = b.put(idx, b"k2", b"v")
            raise RuntimeError
    assert r.error is None and r.value is None and b"k2" not in idx	# not run


def test_empty(pool):
    assert pool.batch().run() == []


def test_large_batch(idx):
    """More than BATCH_MAX requests: several BATCH commands, in order."""
    n = 2 * pmidx.BATCH_MAX + 100
    with idx.pool.batch() as b:
        for i in range(n):
            b.put(idx, K(i), b"%d" % i)
    assert all(r.ok for r in b.results)
    with idx.pool.batch() as b:
        gets = [b.get(idx, K(i)) for i in range(n)]
    assert [r.value for r in gets] == [b"%d" % i for i in range(n)]
    assert idx.check() == n


def test_output_cap(idx):
    """GET buffers over the kernel's 16 MiB per BATCH are split over
    several commands (300 x 64 KiB)."""
    v = b"z" * pmidx.VALUE_MAX
    for i in range(3):
        idx.put(K(i), v)
    with idx.pool.batch() as b:
        gets = [b.get(idx, K(i % 3), size=pmidx.VALUE_MAX) for i in range(300)]
    assert all(r.value == v for r in gets)


def test_get_retry(idx):
    """A value over the GET's buffer is read again at its size."""
    big = b"B" * 10000
    idx.put(b"big", big)
    with idx.pool.batch() as b:
        r1 = b.get(idx, b"big")			# 4 KiB buffer
        r2 = b.get(idx, b"big", size=0)
        b.put(idx, b"other", b"x")		# another key: no conflict
    assert r1.value == big and r2.value == big


def test_get_retry_conflict(idx):
    """A later write of the same key in the batch: no retry (it would
    read that write) but BufferTooSmallError with the size needed."""
    big = b"B" * 10000
    idx.put(b"big", big)
    with idx.pool.batch() as b:
        r = b.get(idx, b"big")
        w = b.put(idx, b"big", b"small")
        r2 = b.get(idx, b"big", size=5)
    assert isinstance(r.error, pmidx.BufferTooSmallError)
    assert r.error.needed == len(big) and r.error.errno == 28
    assert w.ok and r2.value == b"small"


def test_scan_more(idx):
    """A batch SCAN returns up to count records and says whether more
    follow; resuming after the last key walks the whole range."""
    for i in range(100):
        idx.put(K(i), b"v%d" % i)
    got, start, after = [], None, False
    while True:
        with idx.pool.batch() as b:
            r = b.scan(idx, start, K(90), after=after, count=32)
        got += r.check()
        if not r.more:
            break
        start, after = r.value[-1][0], True
    assert got == [(K(i), b"v%d" % i) for i in range(90)]
    # more when the buffer, not the count, is what stopped it
    with idx.pool.batch() as b:
        r = b.scan(idx, count=100, bufsize=256)
    assert r.more and 0 < len(r.value) < 100


def test_scan_buffer_retry(idx):
    idx.put(b"k", b"x" * 5000)
    with idx.pool.batch() as b:
        r = b.scan(idx, bufsize=64)		# not even one record fits
    assert r.value == [(b"k", b"x" * 5000)]
    with idx.pool.batch() as b:
        r = b.scan(idx, bufsize=64)
        b.put(idx, b"j", b"")			# a later write to the index
    assert isinstance(r.error, pmidx.BufferTooSmallError) and r.error.needed > 5000


def test_refused_batch(idx):
    """A malformed request: the kernel runs nothing of that command; run()
    raises its error and the results say what happened."""
    b = idx.pool.batch()
    ok = b.put(idx, b"a", b"1")
    bad = b.put(idx, b"k" * 256, b"v")
    after = b.get(idx, b"a")
    with pytest.raises(pmidx.InvalidError) as e:
        b.run()
    assert e.value is bad.error
    assert e.value.results == [ok, bad, after]
    assert isinstance(ok.error, pmidx.CanceledError)
    assert isinstance(after.error, pmidx.CanceledError)
    assert b"a" not in idx				# nothing ran
    b = idx.pool.batch()
    b.put(idx, b"big", b"v" * (pmidx.VALUE_MAX + 1))
    with pytest.raises(pmidx.InvalidError):
        b.run()


def test_refused_later_command(idx):
    """Requests in an earlier BATCH command ran; the refused one and the
    ones after it did not."""
    b = idx.pool.batch()
    first = [b.put(idx, K(i), b"v") for i in range(pmidx.BATCH_MAX)]
    bad = b.delete(idx, b"")
    last = b.put(idx, b"last", b"v")
    with pytest.raises(pmidx.InvalidError):
        b.run()
    assert all(r.ok for r in first) and idx.check() == pmidx.BATCH_MAX
    assert isinstance(bad.error, pmidx.InvalidError)
    assert isinstance(last.error, pmidx.CanceledError)


def test_several_indexes(pool):
    a, u = pool.index("ccl"), pool.index("utree")
    with pool.batch() as b:
        b.put(a, b"k", b"in-ccl")
        b.put(u, b"k", b"in-utree")
        ra, ru = b.get(a, b"k"), b.get(u, b"k")
    assert (ra.value, ru.value) == (b"in-ccl", b"in-utree")


def test_bad_requests(pool, make_pool):
    idx = pool.index("ccl")
    b = pool.batch()
    with pytest.raises(TypeError):
        b.put(idx, "k", b"v")
    with pytest.raises(TypeError):
        b.get(idx, None)
    with pytest.raises(TypeError):
        b.put("ccl", b"k", b"v")
    with pytest.raises(pmidx.InvalidError):
        b.get(idx, b"k", size=pmidx.VALUE_MAX + 1)
    with pytest.raises(pmidx.InvalidError):
        b.scan(idx, count=0)
    with pytest.raises(pmidx.InvalidError):
        b.scan(idx, None, after=True)
    with pytest.raises(TypeError):
        pmidx.Batch("pool")
    with pmidx.open(make_pool("other")) as other, other.index("ccl") as oidx:
        with pytest.raises(pmidx.InvalidError) as e:
            b.put(oidx, b"k", b"v")		# an index of another pool
        assert e.value.errno == 18
    assert len(b) == 0


def test_closed_index_in_batch(pool):
    idx = pool.index("ccl")
    b = pool.batch()
    r = b.put(idx, b"k", b"v")
    idx.close()
    with pytest.raises(pmidx.ClosedError):
        b.run()
    assert r.value is None


def test_scan_bufsize_capped(idx):
    """The kernel fills at most 1 MiB of a SCAN buffer: a larger bufsize
    allocates no more than that."""
    idx.put(b"a", b"1")
    with idx.pool.batch() as b:
        r = b.scan(idx, count=10, bufsize=0xffffffff)
    assert r.value == [(b"a", b"1")] and not r.more


def test_values_read_at_run(idx):
    """A bytearray queued and changed before run(): run() stores what it
    holds then."""
    v = bytearray(b"before")
    b = idx.pool.batch()
    b.put(idx, b"k", v)
    v[:] = b"after!"
    b.run()
    assert idx[b"k"] == b"after!"
