# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmidx: persistent-memory key-value indexes, from Python.

A binding of libpmidx (see libpmidx(3) and python/README.md)::

    import pmidx

    with pmidx.open("/dev/pmidx0") as pool, pool.index("inodes") as idx:
        idx.put(b"k", b"v")                 # durable when it returns
        idx[b"k"]                           # b"v"; NotFoundError if absent
        for key, value in idx.scan(b"a", b"b"):
            ...
        with pool.batch() as b:             # one BATCH command
            r = b.get(idx, b"k")
            b.delete(idx, b"old")
        r.value

A pool is /dev/pmidxN (attached in the kernel) or a pool file, attached
in this process when the module was built from the pmidx source tree
(EMBEDDED is True). Keys and values are bytes-like; errors are
PmidxError's subclasses (pmidx.errors).
"""
from . import errors
from ._handles import Batch, Index, Pool, Result, Scan
from ._pmidx import ffi as _ffi, lib as _lib
from .errors import (BufferTooSmallError, BusyError, CanceledError,
                     ClosedError, CorruptionError, ExistsError, InvalidError,
                     MediaError, NoSpaceError, NotFoundError,
                     PermissionDeniedError, PmidxError, StaleHandleError,
                     UnsupportedError)

__version__ = "0.1.0"

__all__ = [
    "open", "Pool", "Index", "Scan", "Batch", "Result",
    "key_from_u64", "key_to_u64", "strerror",
    "NAME_MAX", "KEY_MAX", "VALUE_MAX", "BATCH_MAX", "EMBEDDED",
    "PmidxError", "NotFoundError", "ExistsError", "NoSpaceError",
    "BufferTooSmallError", "InvalidError", "PermissionDeniedError",
    "MediaError", "CorruptionError", "UnsupportedError", "BusyError",
    "StaleHandleError", "CanceledError", "ClosedError",
]

NAME_MAX = _lib.PMIDX_NAME_MAX		# index name bytes
KEY_MAX = _lib.PMIDX_KEY_MAX		# key bytes (1..255)
VALUE_MAX = _lib.PMIDX_VALUE_MAX	# value bytes (0..65536)
BATCH_MAX = _lib.PMIDX_BATCH_MAX	# requests per BATCH command
# True when this module has libpmidx's embedded backend: pool files open
# in-process. False when built against an installed libpmidx (devices only).
EMBEDDED = bool(_lib.PMIDX_PY_EMBEDDED)


def strerror(err):
    """pmidx_strerror(): what errno @err (either sign) means to pmidx."""
    return _ffi.string(_lib.pmidx_strerror(int(err))).decode()


errors._strerror = strerror


def open(path):
    """Open the pool at @path (/dev/pmidxN or a pool file): a Pool."""
    return Pool(path)


def key_from_u64(v):
    """The 8-byte big-endian key of @v: numeric order = key order."""
    if not 0 <= v < 1 << 64:
        raise OverflowError("key_from_u64: %r is not a u64" % (v,))
    buf = _ffi.new("char[8]")
    _lib.pmidx_key_from_u64(v, buf)
    return _ffi.unpack(buf, 8)


def key_to_u64(key):
    """The u64 of an 8-byte key (InvalidError for another length)."""
    out = _ffi.new("uint64_t *")
    b = _ffi.from_buffer(key)
    ret = _lib.pmidx_key_to_u64(b, len(b), out)
    if ret:
        raise errors.error_from_errno(ret, key)
    return out[0]
