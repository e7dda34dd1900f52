# SPDX-License-Identifier: LGPL-2.1-or-later
"""Pools, indexes, scans and batches over libpmidx (pmidx._pmidx).

Handle lifetimes. libpmidx's handles are plain pointers: an index must be
closed before its pool, a scan before its index, and nothing may be
closed while another thread is inside a call on it. The binding makes
that safe: every C handle sits in a _Handle that counts the calls in
progress (busy) under its pool's lock; close() first refuses new calls,
waits for the running ones, closes the handle's children (a pool's
indexes, an index's scans) and only then frees it. A handle that is
garbage-collected unclosed is closed by its finalizer (at interpreter
exit too, newest first). libpmidx's pool and index handles are
thread-safe, so calls on them run concurrently (cffi releases the GIL
around each C call); a scan is one thread's at a time.
"""
import os
import threading
import weakref

from . import errors
from ._pmidx import ffi, lib
from .errors import ClosedError, error_from_errno

# Values up to this size are read in one GET; larger ones take a second
# call with the exact size (the kernel allocates the buffer's size).
GET_BUF = 4096
# Output buffer of a batch's GET and SCAN requests unless told otherwise.
BATCH_GET_BUF = 4096
BATCH_SCAN_BUF = 64 << 10
BATCH_SCAN_COUNT = 64
# The kernel uses (and counts against the BATCH cap) at most 1 MiB of a
# SCAN buffer (kmod/core/dispatch.c: SCAN_BUF_MAX); larger is no use.
_SCAN_BUF_MAX = 1 << 20
# A value that keeps growing between the sizing call and the read
_GET_TRIES = 8

_NULL = ffi.NULL


def _bytes_arg(b, what):
    """A bytes-like argument as something cffi passes as const void *:
    (pointer-like, length). str is refused: keys and values are bytes."""
    if type(b) is bytes:
        return b, len(b)
    if isinstance(b, str) or b is None:
        raise TypeError("%s must be bytes-like, not %s" % (what, type(b).__name__))
    try:
        buf = ffi.from_buffer(b)
    except TypeError:
        raise TypeError("%s must be bytes-like, not %s"
                        % (what, type(b).__name__)) from None
    return buf, len(buf)


def _opt_key(b, what):
    if b is None:
        return _NULL, 0
    return _bytes_arg(b, what)


class _Handle:
    """One C handle: its pointer (None once closed), the calls in
    progress and the child handles to close first. @lock (a Condition)
    is shared by every handle of one pool."""

    __slots__ = ("ptr", "busy", "closing", "cond", "children", "parent",
                 "free", "what", "__weakref__")

    def __init__(self, ptr, cond, free, what, parent=None):
        self.ptr = ptr
        self.busy = 0
        self.closing = False
        self.cond = cond
        self.children = set()
        self.parent = parent
        self.free = free
        self.what = what

    def enter(self, exclusive=False):
        """Start a call: the pointer, or ClosedError. @exclusive: BusyError
        if a call is in progress (a scan belongs to one thread at a
        time)."""
        with self.cond:
            if self.closing:
                raise ClosedError(self.what)
            if exclusive and self.busy:
                raise error_from_errno(16)	# EBUSY
            self.busy += 1
            return self.ptr

    def leave(self):
        with self.cond:
            self.busy -= 1
            if self.closing and not self.busy:
                self.cond.notify_all()

    def close(self):
        with self.cond:
            if self.closing:
                return
            self.closing = True	# no new call, no new child
            while self.busy:
                self.cond.wait()
        # children only appear inside a call on this handle: none now
        for c in list(self.children):
            c.close()
        ptr, self.ptr = self.ptr, None
        self.free(ptr)
        if self.parent is not None:
            with self.cond:
                self.parent.children.discard(self)


def _check(ret, filename=None):
    if ret < 0:
        raise error_from_errno(ret, filename)
    return ret


class Pool:
    """A pmidx pool: /dev/pmidxN (a pool attached in the kernel) or a pool
    file (attached in this process by the embedded backend, see
    EMBEDDED). A context manager: close() on exit."""

    def __init__(self, path):
        path = os.fspath(path)	# str, bytes or os.PathLike; else TypeError
        bpath = path.encode() if isinstance(path, str) else path
        if b"\0" in bpath:
            raise error_from_errno(22, path)
        out = ffi.new("struct pmidx_pool **")
        _check(lib.pmidx_pool_open(bpath, 0, out), path)
        self._h = _Handle(out[0], threading.Condition(threading.Lock()),
                          lib.pmidx_pool_close, "pool")
        self._path = path
        self._finalizer = weakref.finalize(self, self._h.close)

    @property
    def path(self):
        return self._path

    @property
    def closed(self):
        return self._h.closing

    @property
    def fd(self):
        """The device's descriptor (io_uring), or None for a pool file."""
        p = self._h.enter()
        try:
            fd = lib.pmidx_pool_fd(p)
        finally:
            self._h.leave()
        return fd if fd >= 0 else None

    def index(self, name):
        """Open the index @name (str): an Index, or NotFoundError."""
        return Index(self, name)

    def batch(self):
        """A Batch of requests to run on this pool."""
        return Batch(self)

    def close(self):
        """Close the pool and every index and scan opened on it
        (waiting for calls in progress). Idempotent."""
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<pmidx.Pool %r%s>" % (self._path, " closed" if self.closed else "")


class Index:
    """An index of a pool, by name. Keys are 1..255 bytes in memcmp order
    (Python's bytes order), values 0..65536 bytes; every write is durable
    when it returns. Mapping-style access: idx[k], idx[k] = v, del idx[k],
    k in idx. A context manager: close() on exit."""

    def __init__(self, pool, name):
        if not isinstance(pool, Pool):
            raise TypeError("pool must be a pmidx.Pool")
        if not isinstance(name, str):
            raise TypeError("index name must be str, not %s" % type(name).__name__)
        bname = name.encode()
        if b"\0" in bname:
            raise error_from_errno(22, name)
        ph = pool._h
        out = ffi.new("struct pmidx_index **")
        p = ph.enter()
        try:
            _check(lib.pmidx_index_open(p, bname, out), name)
            ptr = out[0]
            self._h = _Handle(ptr, ph.cond, lib.pmidx_index_close, "index", ph)
            with ph.cond:
                ph.children.add(self._h)
        finally:
            ph.leave()
        self._pool = pool
        self._name = name
        self._id = lib.pmidx_index_id(ptr)
        self._engine_id = lib.pmidx_index_engine(ptr)
        self._finalizer = weakref.finalize(self, self._h.close)

    pool = property(lambda self: self._pool)
    name = property(lambda self: self._name)
    id = property(lambda self: self._id, doc="slot in the pool's index table")

    @property
    def engine(self):
        """The engine's name ("ccl", "utree", "b3", ...)."""
        s = lib.pmidx_engine_name(self._engine_id)
        return ffi.string(s).decode() if s != _NULL else str(self._engine_id)

    @property
    def closed(self):
        return self._h.closing

    # ---- point operations ----------------------------------------------

    def get(self, key, default=None):
        """The value of @key (bytes), or @default if it is absent."""
        try:
            return self._get(key)
        except errors.NotFoundError:
            return default

    def _get(self, key):
        k, klen = _bytes_arg(key, "key")
        cap = GET_BUF
        n = ffi.new("size_t *")
        h = self._h
        p = h.enter()
        try:
            for _ in range(_GET_TRIES):
                buf = ffi.new("char[]", cap)
                n[0] = cap
                ret = lib.pmidx_get(p, k, klen, buf, n)
                if ret == 0:
                    return ffi.unpack(buf, n[0])
                if ret != -28:	# ENOSPC: n := the size needed
                    raise error_from_errno(ret, key)
                cap = n[0]
            raise error_from_errno(11, key)	# EAGAIN: kept growing
        finally:
            h.leave()

    def put(self, key, value, insert=False):
        """Store @value under @key (upsert); insert=True: ExistsError if
        the key is present. Durable when it returns."""
        k, klen = _bytes_arg(key, "key")
        v, vlen = _bytes_arg(value, "value")
        h = self._h
        p = h.enter()
        try:
            ret = lib.pmidx_put(p, k, klen, v, vlen,
                                lib.PMIDX_PUT_INSERT if insert else 0)
        finally:
            h.leave()
        if ret:
            raise error_from_errno(ret, key)

    def delete(self, key):
        """Remove @key: NotFoundError if it is absent."""
        k, klen = _bytes_arg(key, "key")
        h = self._h
        p = h.enter()
        try:
            ret = lib.pmidx_del(p, k, klen)
        finally:
            h.leave()
        if ret:
            raise error_from_errno(ret, key)

    def __getitem__(self, key):
        return self._get(key)

    def __setitem__(self, key, value):
        self.put(key, value)

    def __delitem__(self, key):
        self.delete(key)

    def __contains__(self, key):
        k, klen = _bytes_arg(key, "key")
        n = ffi.new("size_t *")	# a 0-byte buffer: -ENOSPC if present
        h = self._h
        p = h.enter()
        try:
            ret = lib.pmidx_get(p, k, klen, _NULL, n)
        finally:
            h.leave()
        if ret in (0, -28):
            return True
        if ret == -2:
            return False
        raise error_from_errno(ret, key)

    def check(self):
        """Run the engine's structural checker: the number of live keys,
        or CorruptionError (EUCLEAN) for a damaged index."""
        keys = ffi.new("uint64_t *")
        h = self._h
        p = h.enter()
        try:
            ret = lib.pmidx_check(p, keys)
        finally:
            h.leave()
        _check(ret, self._name)
        return keys[0]

    # ---- scans ----------------------------------------------------------

    def scan(self, start=None, end=None, *, after=False, limit=0):
        """An iterator of (key, value) in key order from @start (inclusive;
        after=True: exclusive; None: the first key) to @end (exclusive;
        None: unbounded), at most @limit records (0: all). Not a snapshot:
        each record is a committed version, no key comes twice. Close it
        (or use it as a context manager) when leaving it early."""
        return Scan(self, start, end, after, limit)

    def keys(self, start=None, end=None, *, after=False, limit=0):
        """The keys of scan(...)."""
        with self.scan(start, end, after=after, limit=limit) as s:
            for k, _ in s:
                yield k

    def close(self):
        """Close the index and its scans. Idempotent."""
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<pmidx.Index %r (%s)%s>" % (self._name, self.engine,
                                            " closed" if self.closed else "")


class Scan:
    """Iterator over libpmidx's scan (pmidx_scan_open/next/close): records
    come in batches of SCAN commands resumed after the last key (the
    library follows PMIDX_SCAN_MORE and grows its buffer when a record
    does not fit); each record is copied out before the next call. Closed
    at the end of the iteration, on an error, by close() or on exit from
    a with block."""

    def __init__(self, index, start, end, after, limit):
        s, slen = _opt_key(start, "start key")
        e, elen = _opt_key(end, "end key")
        if limit < 0:
            raise error_from_errno(22)
        ih = index._h
        out = ffi.new("struct pmidx_scan **")
        p = ih.enter()
        try:
            _check(lib.pmidx_scan_open(p, s, slen, e, elen, limit,
                                       lib.PMIDX_SCAN_AFTER if after else 0,
                                       out))
            self._h = _Handle(out[0], ih.cond, lib.pmidx_scan_close, "scan", ih)
            with ih.cond:
                ih.children.add(self._h)
        finally:
            ih.leave()
        self._index = index
        self._kv = ffi.new("struct pmidx_kv *")
        self._ended = False	# exhausted, failed or closed by close()
        self._finalizer = weakref.finalize(self, self._h.close)

    def __iter__(self):
        return self

    def __next__(self):
        h = self._h
        kv = self._kv
        try:
            p = h.enter(exclusive=True)
        except ClosedError:
            if self._ended:
                raise StopIteration from None
            raise	# its index or pool was closed under it
        try:
            ret = lib.pmidx_scan_next(p, kv)
            if ret == 1:
                return (ffi.unpack(ffi.cast("char *", kv.key), kv.key_len),
                        ffi.unpack(ffi.cast("char *", kv.val), kv.val_len))
        finally:
            h.leave()
        self.close()
        if ret == 0:
            raise StopIteration
        raise error_from_errno(ret)

    @property
    def closed(self):
        return self._h.closing

    def close(self):
        """Free the scan; the iteration ends. Idempotent."""
        self._ended = True
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Result:
    """The outcome of one request of a batch.

    op      "get", "put", "delete" or "scan"
    key     the request's key (SCAN: its start key, or None)
    error   None, or the PmidxError it failed with
    value   GET: the value (bytes); SCAN: a list of (key, value); else None
    more    SCAN: True when more records follow (resume after value[-1][0]
            with after=True)
    """

    __slots__ = ("op", "key", "error", "value", "more")

    def __init__(self, op, key):
        self.op = op
        self.key = key
        self.error = None
        self.value = None
        self.more = False

    @property
    def ok(self):
        return self.error is None

    def check(self):
        """The value, or raise the error."""
        if self.error is not None:
            raise self.error
        return self.value

    def __repr__(self):
        return "<pmidx.Result %s %r %s>" % (
            self.op, self.key, "ok" if self.ok else repr(self.error))


class _Req:
    __slots__ = ("op", "index", "key", "value", "end", "flags", "cap",
                 "count", "result")

    def __init__(self, op, index, key, value=None, end=None, flags=0, cap=0,
                 count=0):
        self.op = op
        self.index = index
        self.key = key
        self.value = value
        self.end = end
        self.flags = flags
        self.cap = cap
        self.count = count
        self.result = Result(op, key)

    def out_bytes(self):
        """What the request's output buffer counts against the kernel's
        per-BATCH cap."""
        if self.op == "get":
            return self.cap
        if self.op == "scan":
            return self.cap
        return 0


_TYPES = {"get": lib.PMIDX_REQ_GET, "put": lib.PMIDX_REQ_PUT,
          "delete": lib.PMIDX_REQ_DEL, "scan": lib.PMIDX_REQ_SCAN}


class Batch:
    """Requests run together with pmidx_batch(): up to 1024 per BATCH
    command, one syscall each (the binding also keeps a command's output
    buffers under the kernel's 16 MiB cap). They run in order; each write
    is durable once it ran (a crash keeps a prefix), all when run()
    returns. Not atomic as a group.

    Each of get/put/delete/scan queues one request and returns its
    Result, filled in by run(). A request that fails has .error set
    (NotFoundError, ExistsError, ...) and does not stop the others; when
    the kernel refuses a command as a whole (a malformed request, e.g. an
    oversize key) run() raises that request's error, with .results: the
    requests of that command and after it are CanceledError (earlier
    commands did run).

    A GET or SCAN whose buffer (size=, bufsize=) is too small is run again
    with the size the kernel reported, unless a later request of the
    batch writes what it reads (a GET: the same key; a SCAN: the same
    index), which the retry would see: then its error is
    BufferTooSmallError with .needed.

    Keys and values are read when run() runs, not when queued.

    As a context manager, run() is called on a clean exit of the block.
    """

    def __init__(self, pool):
        if not isinstance(pool, Pool):
            raise TypeError("pool must be a pmidx.Pool")
        self._pool = pool
        self._reqs = []
        self.results = None

    def _add(self, index, req):
        if not isinstance(index, Index):
            raise TypeError("index must be a pmidx.Index")
        if index._pool is not self._pool:
            raise error_from_errno(18, index.name)	# EXDEV
        self._reqs.append(req)
        return req.result

    def get(self, index, key, size=BATCH_GET_BUF):
        """GET @key into a buffer of @size bytes (see the class)."""
        _bytes_arg(key, "key")
        if not 0 <= size <= lib.PMIDX_VALUE_MAX:
            raise error_from_errno(22)
        return self._add(index, _Req("get", index, key, cap=size))

    def put(self, index, key, value, insert=False):
        _bytes_arg(key, "key")
        _bytes_arg(value, "value")
        return self._add(index, _Req("put", index, key, value,
                                     flags=lib.PMIDX_PUT_INSERT if insert else 0))

    def delete(self, index, key):
        _bytes_arg(key, "key")
        return self._add(index, _Req("delete", index, key))

    def scan(self, index, start=None, end=None, *, after=False,
             count=BATCH_SCAN_COUNT, bufsize=BATCH_SCAN_BUF):
        """One SCAN: up to @count records from @start (after=True:
        exclusive) to @end (exclusive) into a buffer of @bufsize bytes.
        .value is the list of records, .more says whether more follow."""
        _opt_key(start, "start key")
        _opt_key(end, "end key")
        if not 1 <= count <= 0xffffffff or not 0 <= bufsize <= 0xffffffff:
            raise error_from_errno(22)
        if after and start is None:
            raise error_from_errno(22)
        return self._add(index, _Req("scan", index, start, end=end,
                                     flags=lib.PMIDX_SCAN_AFTER if after else 0,
                                     cap=min(bufsize, _SCAN_BUF_MAX), count=count))

    def __len__(self):
        return len(self._reqs)

    def run(self, check=False):
        """Run the queued requests: their Results, in order (also in
        .results). check=True: raise the first request's error instead."""
        reqs, self._reqs = self._reqs, []
        results = [q.result for q in reqs]
        self.results = results
        try:
            _run(self._pool, reqs)
            retry = _retriable(reqs)
            for _ in range(_GET_TRIES):
                if not retry:
                    break
                for q in retry:
                    q.cap = q.result.error.needed
                    q.result.error = None
                _run(self._pool, retry)
                retry = _retriable(retry, reqs)
            for q in retry:		# still growing
                q.result.error = error_from_errno(11, q.key)
        except errors.PmidxError as e:
            e.results = results
            raise
        if check:
            for r in results:
                if r.error is not None:
                    raise r.error
        return results

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.run()


def _retriable(done, order=None):
    """The GETs and SCANs of @done that failed for a small buffer and can
    run again: no later request of the batch (@order, default @done)
    writes what they read (a GET: its key; a SCAN: its index)."""
    if not any(isinstance(q.result.error, errors.BufferTooSmallError)
               for q in done):
        return []
    order = done if order is None else order
    last_index, last_key = {}, {}
    for i, q in enumerate(order):
        if q.op in ("put", "delete"):
            last_index[q.index._id] = i
            last_key[(q.index._id, bytes(q.key))] = i
    pos = {id(q): i for i, q in enumerate(order)}
    out = []
    for q in done:
        e = q.result.error
        if not isinstance(e, errors.BufferTooSmallError) or not e.needed:
            continue
        if q.op == "get":
            last = last_key.get((q.index._id, bytes(q.key)), -1)
        else:
            last = last_index.get(q.index._id, -1)
        if last < pos[id(q)]:
            out.append(q)
    return out


def _segments(reqs):
    """Consecutive runs of at most BATCH_MAX requests whose output buffers
    fit the kernel's cap on one BATCH command."""
    seg, out = [], 0
    cap = lib.PMIDX_PY_BATCH_OUT_MAX
    for q in reqs:
        n = q.out_bytes()
        if seg and (len(seg) == lib.PMIDX_BATCH_MAX or out + n > cap):
            yield seg
            seg, out = [], 0
        seg.append(q)
        out += n
    if seg:
        yield seg


def _run(pool, reqs):
    """Run @reqs (in order) and fill their results. Raise the error of a
    command the kernel refused as a whole (the results say what ran)."""
    segs = list(_segments(reqs))
    for si, seg in enumerate(segs):
        try:
            _run_one(pool, seg)
        except errors.PmidxError:
            for later in segs[si + 1:]:
                for q in later:
                    q.result.error = error_from_errno(125, q.key)	# ECANCELED
            raise


def _run_one(pool, seg):
    n = len(seg)
    arr = ffi.new("struct pmidx_req[]", n)
    keep = []
    # one output buffer for the segment's GETs and SCANs (8-byte aligned)
    out = ffi.new("char[]", max(sum((q.out_bytes() + 7) & ~7 for q in seg), 1))
    off = 0
    handles = {}		# id(_Handle) -> (handle, its pointer), entered once
    ph = pool._h
    pp = ph.enter()
    try:
        for i, q in enumerate(seg):
            ih = q.index._h
            e = handles.get(id(ih))
            if e is None:
                e = handles[id(ih)] = (ih, ih.enter())
            r = arr[i]
            r.idx = e[1]
            r.type = _TYPES[q.op]
            r.flags = q.flags
            if q.key is not None:
                r.key, r.key_len = _pinned(q.key, keep)
            if q.op == "put":
                r.val, r.val_len = _pinned(q.value, keep)
            elif q.op in ("get", "scan"):
                r.val = out + off
                r.val_len = q.cap
                off += (q.cap + 7) & ~7
                if q.op == "scan":
                    r.count = q.count
                    if q.end is not None:
                        r.end_key, r.end_key_len = _pinned(q.end, keep)
        ret = lib.pmidx_batch(pp, arr, n)
    finally:
        for ih, _ in handles.values():
            ih.leave()
        ph.leave()
    for i, q in enumerate(seg):
        _outputs(q, arr[i])
    if ret < 0:
        bad = [q for i, q in enumerate(seg) if arr[i].res != -125]
        raise bad[0].result.error if bad else error_from_errno(ret)


def _pinned(b, keep):
    """A bytes-like object's buffer as a pointer for a struct field, kept
    alive (and unresizable) in @keep until the batch has run."""
    c = ffi.from_buffer(b)
    keep.append(c)
    return ffi.cast("void *", c), len(c)


def _outputs(q, r):
    res = q.result
    if r.res:
        res.error = error_from_errno(r.res, q.key,
                                     buffer=q.op in ("get", "scan"),
                                     needed=r.val_len if r.res == -28 else None)
        return
    if q.op == "get":
        res.value = ffi.unpack(ffi.cast("char *", r.val), r.val_len)
    elif q.op == "scan":
        recs = []
        off = ffi.new("size_t *")
        kv = ffi.new("struct pmidx_kv *")
        while True:
            ret = lib.pmidx_rec_parse(r.val, r.val_len, off, kv)
            if ret <= 0:
                break
            recs.append((ffi.unpack(ffi.cast("char *", kv.key), kv.key_len),
                         ffi.unpack(ffi.cast("char *", kv.val), kv.val_len)))
        if ret < 0 or len(recs) != r.count:
            res.error = error_from_errno(ret if ret < 0 else 71, q.key)	# EPROTO
            return
        res.value = recs
        res.more = bool(r.flags & lib.PMIDX_SCAN_MORE)
