# SPDX-License-Identifier: LGPL-2.1-or-later
"""Handles shared by threads; closing under running calls."""
import threading

import pytest

import pmidx

K = pmidx.key_from_u64


def test_concurrent_writers(idx):
    def writer(t):
        for i in range(500):
            idx.put(K(t << 32 | i), b"%d" % t)

    ts = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert idx.check() == 2000
    assert sum(1 for _ in idx.scan()) == 2000


def test_close_under_calls(pool_path):
    """Closing the pool while threads call into it waits for the calls in
    progress; later calls raise ClosedError (never a crash)."""
    p = pmidx.open(pool_path)
    idx = p.index("ccl")
    idx.put(b"k", b"v" * 100)
    started = threading.Barrier(5)
    seen = []

    def reader():
        started.wait()
        n = 0
        try:
            while True:
                assert idx[b"k"] == b"v" * 100
                with idx.pool.batch() as b:
                    b.get(idx, b"k")
                for _ in idx.scan():
                    pass
                n += 1
        except pmidx.ClosedError:
            seen.append(n)

    ts = [threading.Thread(target=reader) for _ in range(4)]
    for t in ts:
        t.start()
    started.wait()
    p.close()
    for t in ts:
        t.join(10)
    assert len(seen) == 4
    with pmidx.open(pool_path) as p2:	# closed for real: the flock is gone
        assert p2.index("ccl")[b"k"] == b"v" * 100


def test_scan_one_thread_at_a_time(idx):
    """A scan's C iterator is one thread's: a second next() while one runs
    is refused with BusyError instead of racing (simulated: the handle
    is marked busy)."""
    idx.put(b"a", b"1")
    s = idx.scan()
    s._h.enter()
    try:
        with pytest.raises(pmidx.BusyError):
            next(s)
    finally:
        s._h.leave()
    assert next(s) == (b"a", b"1")
    s.close()
