# SPDX-License-Identifier: GPL-2.0
#
# pmidx top-level build.
#
#   make              module (against the target Debian kernel), tools, tests
#   make check        check-user + check-vm, ends with "N passed, N failed"
#   make compat-check the module against Debian's 6.12 headers as well
#   make modules-6.12 pmidx.ko, the test module and the sample client for
#                     Debian's 6.12 kernel (build/k612; the 6.12 VM suites)
#   make install      library, tools, man pages, completions (PREFIX=/usr/local)
#   make deb          Debian packages in build/deb (packaging/packaging.mk)
#   make dkms-install the module through DKMS (as root; dkms-remove undoes it)
#
# Out-of-tree kbuild runs in this directory (Kbuild); everything else
# goes to build/.

KVER	?= $(shell tools/kver.sh)
KDIR	?= /lib/modules/$(KVER)/build
# the newest 6.12 headers of the generic flavour (version order: 6.12.10 > 6.12.9)
ifndef KDIR612
KDIR612	:= $(shell ls -d /usr/src/linux-headers-6.12.*-amd64 2>/dev/null | \
	grep -v -e -cloud- -e -rt- | sort -V | tail -n1)
endif
B	:= build
# The project's version: Debian packages (debian/changelog), DKMS, pmidxctl.
PMIDX_VERSION := 0.1.0
BIN	:= $(B)/bin

CC	?= gcc
CFLAGS	?= -O2 -g
CFLAGS	+= -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare \
	   -Wno-missing-field-initializers
CPPFLAGS += -I uapi
NL_CFLAGS = $(shell pkg-config --cflags libnl-genl-3.0)
NL_LIBS	  = $(shell pkg-config --libs libnl-genl-3.0)

KSFT_DIR := $(B)/kselftest
KSFT_HDR := $(KSFT_DIR)/kselftest_harness.h

PMIDXCTL_SRC := $(wildcard tools/pmidxctl/*.c)
SELFTEST_SRC := $(wildcard selftests/vm/*.c)
SELFTEST_BIN := $(patsubst selftests/vm/%.c,$(BIN)/selftests/%,$(SELFTEST_SRC))

.PHONY: all module tools selftests deps check check-user check-vm \
	compat-check checkpatch clean demo install crash-long test-module \
	modules-6.12 check-6.12
all: module test-module libpmidx tools selftests user-tools python-ext

include libpmidx/libpmidx.mk
include tools/testing/user.mk
include libpmidx/embedded.mk
include python/python.mk
include packaging/packaging.mk

install: install-libpmidx install-tools install-man install-completion \
	$(if $(UDEVRULESDIR),install-udev)
	@[ -n "$(DESTDIR)" ] || [ "$$(id -u)" != 0 ] || ldconfig

deps:
	@tools/install-deps

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

# The module with its test interface (uapi/linux/pmidx_test.h), built
# from a copy of the sources: $(B)/test-module/pmidx.ko, for the suites
# that exercise the allocator through it (PMIDX_KO=...).
TEST_KO := $(B)/test-module/pmidx.ko
test-module: $(TEST_KO)
$(TEST_KO): $(shell find Kbuild kmod uapi include -name '*.[ch]' -o -name Kbuild)
	@rm -rf $(B)/test-module && mkdir -p $(B)/test-module
	@cp -r Kbuild kmod uapi include $(B)/test-module/
	@find $(B)/test-module -name '*.o' -o -name '*.cmd' -o -name '*.mod*' | xargs rm -f
	@sed -i '/^obj-m += samples/d' $(B)/test-module/Kbuild
	$(MAKE) -C $(KDIR) M=$(CURDIR)/$(B)/test-module CONFIG_PMIDX_TEST=y modules

# Debian's 6.12 kernel, the release of the newest installed headers
# (KDIR612): $(K612)/pmidx.ko with the sample client
# ($(K612)/samples/pmidx_dentry/) and $(K612)/test-module/pmidx.ko
# (CONFIG_PMIDX_TEST=y, no sample), which the 6.12 VM suites load
# (tools/run-suites 6.12). kbuild writes its objects next to the sources,
# so it builds copies; only changed files are copied, so a rebuild redoes
# what changed. The kernel-dir stamp rebuilds them for other headers.
K612	:= $(B)/k612
K612_SRC := $(shell find Kbuild kmod uapi include samples \
	-name '*.[ch]' ! -name '*.mod.c' -o -name Kbuild)
K612_TEST_SRC := $(filter-out Kbuild samples/%,$(K612_SRC))

# k612_build DIR,SOURCES[,MAKE ARGS]: copy the changed SOURCES into DIR,
# build DIR against the 6.12 headers.
define k612_build
	@for f in $(2); do \
		cmp -s $$f $(1)/$$f || { mkdir -p $(1)/$$(dirname $$f) && cp $$f $(1)/$$f; }; \
	done
	+$(MAKE) -C $(KDIR612) M=$(CURDIR)/$(1) $(3) modules
	@touch $(1)/pmidx.ko
endef

modules-6.12: $(K612)/pmidx.ko $(K612)/test-module/pmidx.ko

.PHONY: FORCE
FORCE:
$(K612)/kernel-dir: FORCE
	@test -n "$(KDIR612)" || \
		{ echo "modules-6.12: no linux-headers-6.12.*-amd64 (make deps)" >&2; exit 1; }
	@mkdir -p $(@D)
	@[ "$$(cat $@ 2>/dev/null)" = "$(KDIR612)" ] || echo "$(KDIR612)" >$@

$(K612)/pmidx.ko: $(K612_SRC) $(K612)/kernel-dir
	$(call k612_build,$(K612),$(K612_SRC))

$(K612)/test-module/pmidx.ko: $(K612_TEST_SRC) Kbuild $(K612)/kernel-dir
	@mkdir -p $(@D)
	@sed '/^obj-m += samples/d' Kbuild | cmp -s - $(@D)/Kbuild || \
		sed '/^obj-m += samples/d' Kbuild >$(@D)/Kbuild
	$(call k612_build,$(K612)/test-module,$(K612_TEST_SRC),CONFIG_PMIDX_TEST=y)

# The compat header against the 6.12 headers: the module (with the sample
# client and the test interface) builds for them.
compat-check: modules-6.12
	@echo "compat-check: pmidx.ko builds against $(notdir $(KDIR612))"

tools: $(BIN)/pmidxctl $(BIN)/pmidx-bench

$(BIN)/pmidxctl: $(PMIDXCTL_SRC) $(wildcard tools/pmidxctl/*.h) uapi/linux/pmidx.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(NL_CFLAGS) $(LDFLAGS) $(PMIDXCTL_SRC) -o $@ $(NL_LIBS)

# pmidx-bench links the embedded libpmidx: pool files in-process and
# kernel pools through the same API; and Debian's liblmdb for its
# baseline path (tools/bench/path_lmdb.c).
BENCH_SRC := $(wildcard tools/bench/*.c)
$(BIN)/pmidx-bench: $(BENCH_SRC) $(wildcard tools/bench/*.h) $(EMB_LIB) libpmidx/include/pmidx.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -I libpmidx/include $(LDFLAGS) $(BENCH_SRC) $(EMB_LIB) \
		-luring -llmdb -lurcu-memb -lpthread -lm -o $@

# kselftest headers come from Debian's linux-source at build time (GPL-2.0,
# never committed).
$(KSFT_HDR):
	tools/fetch-kernel-files $(KSFT_DIR)

selftests: $(SELFTEST_BIN)

$(BIN)/selftests/%: selftests/vm/%.c $(KSFT_HDR) uapi/linux/pmidx.h $(wildcard selftests/vm/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -I $(KSFT_DIR) -I selftests/vm $(CFLAGS) \
		-Wno-unused-function $(NL_CFLAGS) $< -o $@ $(NL_LIBS) -luring -lpthread

checkpatch: $(KSFT_HDR)
	$(KSFT_DIR)/checkpatch.pl --no-tree --terse --show-types \
		--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG \
		-f $(shell find kmod uapi -name '*.[ch]')

check-user: tools
	@tools/run-suites user

check-vm: all
	@tools/run-suites vm

check: deps
	@$(MAKE) --no-print-directory all
	@tools/run-suites all

# make check's 6.12 section alone: VM suites on Debian's 6.12 kernel
check-6.12: all
	@tools/run-suites 6.12

# Opt-in: >= 100,000 ADR crash points per engine (tools/testing/crash-long)
crash-long:
	@$(MAKE) --no-print-directory -f tools/testing/user.mk B=$(B) \
		$(B)/user/plain/test-lifetime $(B)/user/prefix/test-lifetime
	@UB=$(B)/user tools/testing/crash-long

demo: deps
	@$(MAKE) --no-print-directory all
	@tools/demo

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean || true
	rm -rf $(B) python/build python/pmidx.egg-info
	rm -f python/pmidx/_pmidx.*.so

# Debug tier (README.md, "Debug kernel"): a guest kernel with KASAN,
# lockdep, kmemleak, debug objects, built from Debian's linux-source-6.1 and
# cached in /var/cache/pmidx/kernel (PMIDX_KERNEL_CACHE), and pmidx.ko built
# against it in build/debug. `make check` runs its suites (run-suites debug);
# PMIDX_VM_KERNEL=debug tools/pmidx-vm ... boots it by hand.
.PHONY: debug-kernel check-kcsan check-debug-long
debug-kernel:
	@tools/debug-kernel

# Opt-in: the debug tier's long run (race tests 60 s each, the full
# data_path workload, four power cuts); about 25 minutes under TCG.
check-debug-long: all
	@tools/run-suites debug-long

# Opt-in: the debug tier's guest suites (selftests/vm/debug_tier.sh) on a
# KCSAN kernel (build/kcsan). A data race fails the run; the distinct races
# are listed from the guest log (build/results/*-kcsan.dmesg).
check-kcsan: all
	@tools/run-suites kcsan; rc=$$?; \
	echo "== KCSAN reports (distinct, count):"; \
	grep -h 'BUG: KCSAN:' $(B)/results/*-kcsan.dmesg 2>/dev/null | \
		sed 's/^\[[ 0-9.]*\] //' | sort | uniq -c | sort -rn; \
	exit $$rc
