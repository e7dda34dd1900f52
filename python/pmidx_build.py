# SPDX-License-Identifier: LGPL-2.1-or-later
"""cffi builder of pmidx._pmidx, the C half of the Python binding.

Out-of-line API mode: the declarations below are compiled against
<pmidx.h> by the C compiler, so a signature or struct that drifts from
the header fails the build instead of corrupting memory at run time.

Two ways to link libpmidx (pmidx_library() decides):

* from a pmidx source tree (the directory above this one, or
  $PMIDX_SRCDIR): build/lib/libpmidx-embedded-pic.a, libpmidx with the
  in-process backend for pool *files* and the userspace build of the
  core and engines, all position-independent (`make
  libpmidx-embedded-pic`; setup.py runs it). The module then serves both
  /dev/pmidxN and pool files, and needs no libpmidx.so at run time.
  ($PMIDX_PIC_LIB: another archive, e.g. of a build with make B=DIR.)
* otherwise the installed libpmidx (pkg-config pmidx, -lpmidx: the
  libpmidx1 package or `make install`): devices only; a pool file is
  refused with UnsupportedError (-EOPNOTSUPP).

Run directly (`python3 pmidx_build.py`), it builds the module in place
(pmidx/_pmidx*.so) for the tests in this tree; python/python.mk does.
"""
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
PIC_LIB = "build/lib/libpmidx-embedded-pic.a"

CDEF = r"""
#define PMIDX_NAME_MAX ...
#define PMIDX_KEY_MAX ...
#define PMIDX_VALUE_MAX ...
#define PMIDX_PUT_INSERT ...
#define PMIDX_SCAN_AFTER ...
#define PMIDX_SCAN_MORE ...
#define PMIDX_BATCH_MAX ...
#define PMIDX_U64_KEY_LEN ...
/* not from pmidx.h: set by the C source below */
#define PMIDX_PY_EMBEDDED ...
#define PMIDX_PY_BATCH_OUT_MAX ...

struct pmidx_pool;
struct pmidx_index;
struct pmidx_scan;

struct pmidx_kv {
    const void *key;
    size_t key_len;
    const void *val;
    size_t val_len;
};

enum pmidx_req_type {
    PMIDX_REQ_GET = 2,
    PMIDX_REQ_PUT = 3,
    PMIDX_REQ_DEL = 4,
    PMIDX_REQ_SCAN = 5,
    ...
};

struct pmidx_req {
    struct pmidx_index *idx;
    unsigned int type;
    unsigned int flags;
    const void *key;
    size_t key_len;
    const void *end_key;
    size_t end_key_len;
    void *val;
    size_t val_len;
    uint32_t count;
    int res;
};

int pmidx_pool_open(const char *path, unsigned int flags,
                    struct pmidx_pool **pool);
void pmidx_pool_close(struct pmidx_pool *pool);
const char *pmidx_pool_path(const struct pmidx_pool *pool);
int pmidx_pool_fd(const struct pmidx_pool *pool);

int pmidx_index_open(struct pmidx_pool *pool, const char *name,
                     struct pmidx_index **idx);
void pmidx_index_close(struct pmidx_index *idx);
const char *pmidx_index_name(const struct pmidx_index *idx);
uint32_t pmidx_index_id(const struct pmidx_index *idx);
uint32_t pmidx_index_engine(const struct pmidx_index *idx);
const char *pmidx_engine_name(uint32_t engine);

int pmidx_get(struct pmidx_index *idx, const void *key, size_t key_len,
              void *val, size_t *val_len);
int pmidx_put(struct pmidx_index *idx, const void *key, size_t key_len,
              const void *val, size_t val_len, unsigned int flags);
int pmidx_del(struct pmidx_index *idx, const void *key, size_t key_len);
int pmidx_check(struct pmidx_index *idx, uint64_t *keys);

int pmidx_scan_open(struct pmidx_index *idx, const void *start,
                    size_t start_len, const void *end, size_t end_len,
                    uint64_t limit, unsigned int flags,
                    struct pmidx_scan **scan);
int pmidx_scan_next(struct pmidx_scan *scan, struct pmidx_kv *kv);
void pmidx_scan_close(struct pmidx_scan *scan);
int pmidx_rec_parse(const void *buf, size_t used, size_t *off,
                    struct pmidx_kv *kv);

int pmidx_batch(struct pmidx_pool *pool, struct pmidx_req *reqs,
                unsigned int n);

void pmidx_key_from_u64(uint64_t v, void *key);
int pmidx_key_to_u64(const void *key, size_t key_len, uint64_t *v);
int pmidx_key_cmp(const void *a, size_t a_len, const void *b, size_t b_len);
const char *pmidx_strerror(int err);
"""

SOURCE_HEAD = r"""
#include <linux/pmidx.h>
#include "pmidx.h"

/* the kernel's cap on the output buffers of one BATCH command */
#define PMIDX_PY_BATCH_OUT_MAX	PMIDX_BATCH_OUT_MAX
"""


def source_dir():
    """The pmidx source tree to build from, or None (installed libpmidx)."""
    d = os.environ.get("PMIDX_SRCDIR")
    if d:
        return os.path.abspath(d)
    d = os.path.dirname(HERE)
    if os.path.isfile(os.path.join(d, "libpmidx", "include", "pmidx.h")) and \
            os.path.isfile(os.path.join(d, "libpmidx", "embedded.mk")):
        return d
    return None


def make_library(src):
    """Build the PIC archive in the source tree (incremental: fast when
    `make` already built it). PMIDX_NO_MAKE=1 skips it."""
    if os.environ.get("PMIDX_NO_MAKE") == "1":
        return
    make = os.environ.get("MAKE", "make")
    cmd = [make, "-C", src, "--no-print-directory", "KVER=none",
           "libpmidx-embedded-pic"]
    print("pmidx: " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True)


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config"] + list(args) + ["pmidx"],
                             check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return shlex.split(out.stdout)


def pmidx_library():
    """set_source() keyword arguments for the libpmidx to link."""
    src = source_dir()
    common = {
        "extra_compile_args": ["-O2", "-Wall", "-Wno-unused-function"],
    }
    if src:
        return src, dict(common,
                         define_macros=[("PMIDX_PY_EMBEDDED", "1")],
                         include_dirs=[os.path.join(src, "libpmidx", "include"),
                                       os.path.join(src, "uapi")],
                         extra_objects=[os.environ.get("PMIDX_PIC_LIB") or
                                        os.path.join(src, PIC_LIB)],
                         libraries=["uring", "urcu-memb", "pthread"],
                         # the core's and shim's symbols stay inside the module
                         extra_link_args=["-Wl,--exclude-libs,ALL"])
    cflags = pkg_config("--cflags") or []
    libs = pkg_config("--libs") or ["-lpmidx"]
    return None, dict(common,
                      define_macros=[("PMIDX_PY_EMBEDDED", "0")],
                      include_dirs=[f[2:] for f in cflags if f.startswith("-I")],
                      library_dirs=[f[2:] for f in libs if f.startswith("-L")],
                      libraries=[f[2:] for f in libs if f.startswith("-l")])


SRC, KW = pmidx_library()
ffibuilder = FFI()
ffibuilder.cdef(CDEF)
if SRC is None:
    # an installed <pmidx.h> has no <linux/pmidx.h> beside it for sure:
    # the BATCH output cap is the uapi's, restated
    ffibuilder.set_source("pmidx._pmidx",
                          '#include "pmidx.h"\n'
                          "#define PMIDX_PY_BATCH_OUT_MAX (16U << 20)\n",
                          **KW)
else:
    ffibuilder.set_source("pmidx._pmidx", SOURCE_HEAD, **KW)


def build_inplace():
    """Build pmidx/_pmidx*.so beside the sources (tests from the tree)."""
    if SRC:
        make_library(SRC)
    tmp = os.path.join(SRC or HERE, "build", "python")
    os.makedirs(tmp, exist_ok=True)
    so = ffibuilder.compile(tmpdir=tmp, verbose=bool(os.environ.get("V")))
    dst = os.path.join(HERE, "pmidx", os.path.basename(so))
    shutil.copyfile(so, dst + ".tmp")
    os.replace(dst + ".tmp", dst)
    print("pmidx: built " + os.path.relpath(dst), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--ext-suffix":
        print(sysconfig.get_config_var("EXT_SUFFIX"))
    else:
        build_inplace()
