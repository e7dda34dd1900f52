# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmidx's errors as Python exceptions.

libpmidx returns 0 or a negative errno; the binding raises the subclass
of PmidxError (an OSError: .errno, .strerror, .filename) that the errno
maps to, with pmidx_strerror()'s text. Where the errno means something
else to Python as well, the class derives from the built-in one too
(NotFoundError is a KeyError, InvalidError a ValueError,
PermissionDeniedError a PermissionError), so idiomatic handlers work.

-ENOSPC means two things in pmidx: a pool that is full (NoSpaceError)
and an output buffer that is too small for a value or a scan record
(BufferTooSmallError). The binding sizes its buffers itself, so the
second reaches the caller only from a batch (see Batch).
"""
import errno as _errno
import os as _os

__all__ = [
    "PmidxError", "NotFoundError", "ExistsError", "NoSpaceError",
    "BufferTooSmallError", "InvalidError", "PermissionDeniedError",
    "MediaError", "CorruptionError", "UnsupportedError", "BusyError",
    "StaleHandleError", "CanceledError", "ClosedError", "error_from_errno",
]


class PmidxError(OSError):
    """Base class of every error pmidx reports (errno > 0)."""


class NotFoundError(PmidxError, KeyError):
    """ENOENT: no such key, index or pool file."""


class ExistsError(PmidxError):
    """EEXIST: put(insert=True) of a key that is present."""


class NoSpaceError(PmidxError):
    """ENOSPC from a write: the pool is full."""


class BufferTooSmallError(PmidxError):
    """ENOSPC from a GET or SCAN of a batch: its buffer was too small;
    .needed is the size that would have done."""

    needed = None


class InvalidError(PmidxError, ValueError):
    """EINVAL, E2BIG, EFAULT, EXDEV, ENAMETOOLONG: a malformed request (empty
    or oversize key, value over 65536 bytes, bad index name, an index of
    another pool in a batch)."""


class PermissionDeniedError(PmidxError, PermissionError):
    """EACCES, EPERM, EROFS, EBADF: no access to the device or file (EBADF:
    a write through a descriptor without write access)."""


class MediaError(PmidxError):
    """EIO: the data could not be read (a poisoned persistent-memory line)."""


class CorruptionError(PmidxError):
    """EUCLEAN: the index structure is damaged (check()); EPROTO: a
    malformed reply from the pool."""


class UnsupportedError(PmidxError):
    """EOPNOTSUPP, ENOTTY, EISDIR: not a pmidx device or pool file, an
    engine this module or build lacks, a pool file without the
    embedded backend."""


class BusyError(PmidxError):
    """EBUSY, EAGAIN: the pool or index is busy (a pool file attached by
    another process; a value that kept changing size)."""


class StaleHandleError(PmidxError):
    """ENXIO, ENODEV: the index was dropped or the pool detached since the
    handle was opened."""


class CanceledError(PmidxError):
    """ECANCELED: a request of a batch that did not run because the kernel
    refused its command as a whole."""


class ClosedError(PmidxError, ValueError):
    """An operation on a pool, index or scan that is closed (raised by the
    binding, errno EBADF)."""

    def __init__(self, what="handle"):
        super().__init__(_errno.EBADF, "operation on a closed pmidx " + what)


_MAP = {
    _errno.ENOENT: NotFoundError,
    _errno.ENOTDIR: NotFoundError,
    _errno.EEXIST: ExistsError,
    _errno.ENOSPC: NoSpaceError,
    _errno.EINVAL: InvalidError,
    _errno.E2BIG: InvalidError,
    _errno.EFAULT: InvalidError,
    _errno.EXDEV: InvalidError,
    _errno.ENAMETOOLONG: InvalidError,
    _errno.EACCES: PermissionDeniedError,
    _errno.EPERM: PermissionDeniedError,
    _errno.EROFS: PermissionDeniedError,
    _errno.EBADF: PermissionDeniedError,
    _errno.EIO: MediaError,
    _errno.EUCLEAN: CorruptionError,
    _errno.EPROTO: CorruptionError,
    _errno.EOPNOTSUPP: UnsupportedError,
    _errno.ENOTTY: UnsupportedError,
    _errno.EISDIR: UnsupportedError,
    _errno.EBUSY: BusyError,
    _errno.EAGAIN: BusyError,
    _errno.ENXIO: StaleHandleError,
    _errno.ENODEV: StaleHandleError,
    _errno.ECANCELED: CanceledError,
}

_strerror = None	# pmidx_strerror(), set by the package once loaded


def error_from_errno(err, filename=None, buffer=False, needed=None):
    """The exception for errno @err (positive or negative): PmidxError's
    subclass for it, or PmidxError itself. @buffer: the errno came from
    a GET/SCAN output buffer (ENOSPC is then BufferTooSmallError with
    .needed)."""
    err = abs(int(err))
    if buffer and err == _errno.ENOSPC:
        cls = BufferTooSmallError
    else:
        cls = _MAP.get(err, PmidxError)
    if cls is NoSpaceError:
        # pmidx_strerror() describes the buffer meaning of ENOSPC
        msg = "No space left in the pool"
    else:
        msg = _strerror(err) if _strerror else None
    if not msg:
        msg = _os.strerror(err)
    if filename is None:
        e = cls(err, msg)
    else:
        e = cls(err, msg, filename)
    if cls is BufferTooSmallError:
        e.needed = needed
    return e
