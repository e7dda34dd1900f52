# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Python binding (python/, package pmidx), included by the top
# Makefile after libpmidx/embedded.mk.
#
#   python-ext     the extension module pmidx/_pmidx*.so built in place
#                  (python/pmidx_build.py: cffi, API mode) on the
#                  position-independent embedded libpmidx, for the tests
#                  and the VM test to import with PYTHONPATH=python
#   check-python   the pytest suite on pool files (python/tests); ends
#                  with "N passed, N failed"
#
# PYTHON: Debian's interpreter by default, the one the VM guest runs
# (tools/vm/guest-run.sh's PATH) with python3-cffi and python3-pytest
# (tools/install-deps). `pip install ./python` is the other way in
# (python/README.md).

PY_SAVED_GOAL	:= $(.DEFAULT_GOAL)

PYTHON		?= $(if $(wildcard /usr/bin/python3),/usr/bin/python3,python3)
PY_DIR		:= python
PY_STAMP	:= $(B)/python/ext.stamp

.PHONY: python-ext check-python
python-ext: $(PY_STAMP)
	@ls $(PY_DIR)/pmidx/_pmidx.*.so >/dev/null 2>&1 || \
		{ rm -f $(PY_STAMP); $(MAKE) --no-print-directory $(PY_STAMP); }

$(PY_STAMP): $(EMB_PIC_LIB) $(PY_DIR)/pmidx_build.py $(LIBPMIDX_DIR)/include/pmidx.h \
		uapi/linux/pmidx.h
	@mkdir -p $(@D)
	@rm -f $(PY_DIR)/pmidx/_pmidx.*.so
	cd $(PY_DIR) && PMIDX_NO_MAKE=1 PMIDX_PIC_LIB=$(CURDIR)/$(EMB_PIC_LIB) $(PYTHON) pmidx_build.py
	@touch $@

check-python: python-ext $(UB)/pmidx-poolfile
	@PYTHONPATH=$(CURDIR)/$(PY_DIR) PMIDX_POOLFILE=$(CURDIR)/$(UB)/pmidx-poolfile PMIDX_EXPECT_EMBEDDED=1 \
		$(PYTHON) $(PY_DIR)/tests/run_suite.py

ifeq ($(PY_SAVED_GOAL),)
.DEFAULT_GOAL :=
endif
