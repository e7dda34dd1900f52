# SPDX-License-Identifier: LGPL-2.1-or-later
"""setup.py: only what pyproject.toml cannot say. cffi_modules builds the
extension pmidx._pmidx (pmidx_build.py); build_ext first builds the
position-independent libpmidx archive in the source tree (make), so that
`pip install ./python` works from a checkout with nothing built yet."""
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmidx_build  # noqa: E402


class BuildExt(build_ext):
    def run(self):
        if pmidx_build.SRC:
            pmidx_build.make_library(pmidx_build.SRC)
        super().run()


setup(cffi_modules=["pmidx_build.py:ffibuilder"],
      cmdclass={"build_ext": BuildExt})
