# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fixtures: pool files formatted with pmidx-poolfile (libpmidx has no
create API; the tool runs the same core), one per test.

pmidx-poolfile is $PMIDX_POOLFILE, or build/user/pmidx-poolfile of the
source tree (built with make when missing). Without it, or with a pmidx
module built against an installed libpmidx (no pool files), the tests
that need a pool are skipped.
"""
import os
import subprocess

import pytest

import pmidx
from nobody import open_as_nobody  # noqa: F401 (the tests import it from here)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# every engine the userspace build serves
ENGINES = ["ccl", "utree", "b3", "lodge", "pfart"]
POOL_SIZE = "16M"


def _poolfile_tool():
    tool = os.environ.get("PMIDX_POOLFILE")
    if tool:
        return tool
    tool = os.path.join(REPO, "build", "user", "pmidx-poolfile")
    if not os.access(tool, os.X_OK) and os.path.isfile(os.path.join(REPO, "Makefile")):
        subprocess.run(["make", "-C", REPO, "--no-print-directory", "KVER=none",
                        "build/user/pmidx-poolfile"],
                       stdout=subprocess.DEVNULL, check=False)
    return tool if os.access(tool, os.X_OK) else None


TOOL = _poolfile_tool()


def poolfile(*args):
    """Run pmidx-poolfile; its stdout."""
    r = subprocess.run([TOOL] + [str(a) for a in args], capture_output=True,
                       text=True)
    if r.returncode:
        raise RuntimeError("pmidx-poolfile %s: %s" % (" ".join(map(str, args)),
                                                      r.stderr.strip()))
    return r.stdout


@pytest.fixture(scope="session")
def template(tmp_path_factory):
    """A formatted pool file with one index per engine, named after it."""
    if not pmidx.EMBEDDED:
        pytest.skip("pmidx was built against an installed libpmidx: no pool files")
    if TOOL is None:
        pytest.skip("no pmidx-poolfile (make user-tools, or set PMIDX_POOLFILE)")
    path = tmp_path_factory.mktemp("template") / "pool"
    poolfile("format", path, POOL_SIZE)
    for e in ENGINES:
        poolfile("create-index", path, e, "--engine", e)
    return path


@pytest.fixture
def make_pool(template, tmp_path):
    """make_pool(name="pool"): a fresh copy of the template (sparse),
    removed after the test."""
    made = []

    def make(name="pool"):
        path = tmp_path / name
        subprocess.run(["cp", "--sparse=always", str(template), str(path)],
                       check=True)
        made.append(path)
        return path
    yield make
    for path in made:
        path.unlink(missing_ok=True)


@pytest.fixture
def pool_path(make_pool):
    return make_pool()


@pytest.fixture
def pool(pool_path):
    with pmidx.open(pool_path) as p:
        yield p


@pytest.fixture(params=ENGINES)
def engine(request):
    return request.param


@pytest.fixture
def idx(pool, engine):
    with pool.index(engine) as i:
        yield i


def pytest_report_header(config):
    return "pmidx %s from %s (EMBEDDED=%s), pmidx-poolfile: %s" % (
        pmidx.__version__, os.path.dirname(pmidx.__file__), pmidx.EMBEDDED, TOOL)
