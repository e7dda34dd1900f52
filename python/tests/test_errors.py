# SPDX-License-Identifier: LGPL-2.1-or-later
"""The errno -> exception mapping and the hierarchy (no pool needed)."""
import errno

import pytest

import pmidx
from pmidx import errors

MAPPING = [
    (errno.ENOENT, pmidx.NotFoundError),
    (errno.ENOTDIR, pmidx.NotFoundError),
    (errno.EEXIST, pmidx.ExistsError),
    (errno.ENOSPC, pmidx.NoSpaceError),
    (errno.EINVAL, pmidx.InvalidError),
    (errno.E2BIG, pmidx.InvalidError),
    (errno.EFAULT, pmidx.InvalidError),
    (errno.EXDEV, pmidx.InvalidError),
    (errno.ENAMETOOLONG, pmidx.InvalidError),
    (errno.EACCES, pmidx.PermissionDeniedError),
    (errno.EPERM, pmidx.PermissionDeniedError),
    (errno.EROFS, pmidx.PermissionDeniedError),
    (errno.EBADF, pmidx.PermissionDeniedError),
    (errno.EIO, pmidx.MediaError),
    (errno.EUCLEAN, pmidx.CorruptionError),
    (errno.EPROTO, pmidx.CorruptionError),
    (errno.EOPNOTSUPP, pmidx.UnsupportedError),
    (errno.ENOTTY, pmidx.UnsupportedError),
    (errno.EISDIR, pmidx.UnsupportedError),
    (errno.EBUSY, pmidx.BusyError),
    (errno.EAGAIN, pmidx.BusyError),
    (errno.ENXIO, pmidx.StaleHandleError),
    (errno.ENODEV, pmidx.StaleHandleError),
    (errno.ECANCELED, pmidx.CanceledError),
]


@pytest.mark.parametrize("err,cls", MAPPING, ids=[errno.errorcode[e] for e, _ in MAPPING])
def test_mapping(err, cls):
    for sign in (-1, 1):
        e = errors.error_from_errno(sign * err, "what")
        assert type(e) is cls
        assert isinstance(e, pmidx.PmidxError) and isinstance(e, OSError)
        assert e.errno == err
        assert e.filename == "what"
        assert e.strerror
        assert "[Errno %d]" % err in str(e)


def test_unmapped_is_base():
    e = errors.error_from_errno(-errno.EINTR)
    assert type(e) is pmidx.PmidxError
    assert e.errno == errno.EINTR and e.strerror == pmidx.strerror(errno.EINTR)


def test_builtin_bases():
    assert issubclass(pmidx.NotFoundError, KeyError)
    assert issubclass(pmidx.InvalidError, ValueError)
    assert issubclass(pmidx.PermissionDeniedError, PermissionError)
    assert issubclass(pmidx.ClosedError, ValueError)
    for cls in (pmidx.ExistsError, pmidx.NoSpaceError, pmidx.MediaError,
                pmidx.BufferTooSmallError, pmidx.CanceledError):
        assert issubclass(cls, pmidx.PmidxError)
    # every exception the package exports is a PmidxError
    for name in pmidx.__all__:
        obj = getattr(pmidx, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert issubclass(obj, pmidx.PmidxError)


def test_strerror_is_pmidx_text():
    assert pmidx.strerror(-errno.ENOENT) == "No such key or index"
    assert pmidx.strerror(errno.ENOENT) == "No such key or index"
    assert pmidx.strerror(0) == "Success"
    assert pmidx.strerror(-errno.EUCLEAN).startswith("Index structure is damaged")
    assert errors.error_from_errno(-errno.EEXIST).strerror == "Key already exists"


def test_enospc_two_meanings():
    full = errors.error_from_errno(-errno.ENOSPC)
    assert type(full) is pmidx.NoSpaceError
    assert "pool" in full.strerror
    small = errors.error_from_errno(-errno.ENOSPC, buffer=True, needed=5000)
    assert type(small) is pmidx.BufferTooSmallError
    assert small.needed == 5000
    # buffer=True only changes ENOSPC
    assert type(errors.error_from_errno(-errno.ENOENT, buffer=True)) is pmidx.NotFoundError


def test_closed_error():
    e = pmidx.ClosedError("index")
    assert e.errno == errno.EBADF and "closed pmidx index" in str(e)


def test_catch_as_keyerror():
    with pytest.raises(KeyError):
        raise errors.error_from_errno(-errno.ENOENT, b"k")
