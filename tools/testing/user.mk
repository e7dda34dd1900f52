# SPDX-License-Identifier: GPL-2.0
#
# Userspace build of kmod/core ("One source, two builds", DESIGN.md) and
# the test tooling on it. Included by the top Makefile; needs only CC and
# B from there. Everything goes to $(B)/user/.
#
#   check-user-unit    unit tests, plain -O2 (gcc)
#   check-user-asan    the same tests under ASan+UBSan
#   check-user-tsan    the concurrent tests under ThreadSanitizer, and the
#                      real engines (writers against the GC kthread,
#                      parallel recovery, the crash simulator)
#   check-user-crash   ADR/eADR crash simulator over multi-step workloads
#   check-user-fuzz    libFuzzer on pool images (bounded), plus the plain
#                      replay driver over the corpus
#   check-user-engines the real engines: key/value round trips, recovery,
#                      crash simulation, CHECK under writes and the key
#                      counters (plain and ASan)
#   check-user-prefix  the crash simulator's store-prefix model (prefix
#                      build): its self-test, the core's and the engines'
#                      crash simulations, short samples
#   check-user-prefix-long  the same with the full samples (opt-in, long)
#   check-user-suites  all of the above ($(USER_SUITES)); ends with
#                      "N passed, N failed"
#
#   user-tools         build/user/pmidx-poolfile, build/user/pmidx-xpline,
#                      build/user/libpmidx-user.a (core + engines + shim +
#                      pool files + crash simulator + XPLine model)
#   user-measure       build/user/pmidx-xpline-engines (XPLine model on the
#                      engines, uniform/zipfian upserts) and
#                      build/user/pmidx-recovery-time
#
# Knobs: USER_CLANG (clang binary, empty to use $(CC) everywhere),
# USER_SUITES (what check-user-suites runs), USER_FUZZ_TIME (seconds,
# default 30), USER_SEED (base seed), USER_CRASH_ARGS, USER_JOBS.
# See tools/testing/README.md.

_USER_SAVED_GOAL := $(.DEFAULT_GOAL)
USER_MK_FILE	:= $(lastword $(MAKEFILE_LIST))

B		?= build
UB		:= $(B)/user
USER_CC		?= $(CC)
USER_CLANG	?= $(shell command -v clang 2>/dev/null)
USER_SAN_CC	:= $(if $(USER_CLANG),$(USER_CLANG),$(USER_CC))
USER_FUZZ_TIME	?= 30
USER_SEED	?=
USER_CRASH_ARGS	?=

USER_CPPFLAGS	:= -D_GNU_SOURCE -DPMIDX_TEST_ENGINES \
		   -I tools/include -I uapi -I kmod -I tools/testing \
		   -I selftests/user -I $(UB)/gen
# the kernel's own warning set (Makefile, scripts/Makefile.extrawarn, W=0)
USER_WARN	:= -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare \
		   -Wno-missing-field-initializers -Wno-type-limits \
		   -Wno-shift-negative-value -Wno-pointer-sign \
		   -Wno-format-truncation -Wno-format-overflow -Wno-stringop-truncation \
		   -Wno-stringop-overflow -Wno-restrict -Wno-address-of-packed-member
# the shim's RCU is liburcu's (tools/include/linux/rcupdate.h)
USER_LDLIBS	:= -lurcu-memb
USER_BASE	:= -std=gnu11 -g -pthread -fno-strict-aliasing -MMD -MP $(USER_WARN)

# per-variant compiler and flags
USER_CC_plain	:= $(USER_CC)
USER_FL_plain	:= -O2
# plain, position-independent: what a shared object links (the Python
# binding's extension module, python/python.mk, via libpmidx/embedded.mk)
USER_CC_pic	:= $(USER_CC)
USER_FL_pic	:= -O2 -fPIC
USER_CC_asan	:= $(USER_SAN_CC)
USER_FL_asan	:= -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
		   -fno-sanitize-recover=all
USER_CC_tsan	:= $(USER_SAN_CC)
USER_FL_tsan	:= -O1 -fno-omit-frame-pointer -fsanitize=thread
USER_CC_fuzz	:= $(USER_SAN_CC)
USER_FL_fuzz	:= -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
		   -fno-sanitize-recover=all
USER_CC_replay	:= $(USER_CC)
USER_FL_replay	:= -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
		   -fno-sanitize-recover=all
# The prefix build (the crash simulator's store-prefix model, crashsim.h):
# the sources in USER_INSTR_prefix get gcc's kernel-address instrumentation
# with every check a call and stores only, so that each store calls
# tools/testing/store_trace.c; the shim, the simulator and store_trace.c
# stay uninstrumented. PMIDX_STORE_TRACE routes mem* through store_trace.c.
USER_PREFIX_CC	?= gcc
USER_CC_prefix	:= $(USER_PREFIX_CC)
USER_FL_prefix	:= -O2 -DPMIDX_STORE_TRACE
USER_INSTR_prefix := kmod/% selftests/%
USER_INSTR_FL_prefix := -fsanitize=kernel-address \
		   --param asan-instrumentation-with-call-threshold=0 \
		   --param asan-stack=0 --param asan-globals=0 \
		   --param asan-instrument-reads=0
USER_SRC_prefix	:= tools/testing/store_trace.c

# kmod/core and kmod/engines compile unchanged, whatever files they hold
USER_CORE_SRC	:= $(wildcard kmod/core/*.c)
USER_ENGINE_SRC	:= $(wildcard kmod/engines/*/*.c)
USER_SHIM_SRC	:= $(wildcard tools/testing/shim/*.c)
USER_TOOL_SRC	:= tools/testing/pool_file.c tools/testing/crashsim.c \
		   tools/testing/crashsim-model.c \
		   tools/testing/xpline.c selftests/user/harness.c \
		   selftests/user/toy-engine.c selftests/user/engine-kv.c
USER_LIB_SRC	:= $(USER_CORE_SRC) $(USER_ENGINE_SRC) $(USER_SHIM_SRC) $(USER_TOOL_SRC)
USER_NOENG_SRC	:= $(USER_CORE_SRC) $(USER_SHIM_SRC) $(USER_TOOL_SRC) \
		   tools/testing/null-engine.c

USER_VARIANTS	:= plain asan tsan fuzz replay prefix pic

# tests of every engine through the engine ops (selftests/user/test-NAME.c)
USER_ENG_TESTS	:= engines lifetime check
# media errors on the data path (test-media.c, issue 11)
USER_ENG_TESTS	+= media
# committed-mode engines: the core's part (toy engines beside ccl, utree)
USER_ENG_TESTS	+= committed
# no-wait writes: never sleep, a refusal changes nothing (test-nowait.c)
USER_ENG_TESTS	+= nowait

# the engines' own crash tests: selftests/user/<engine>-crash.c
USER_ENG_CRASH_ALL := $(filter-out test-crash,\
		      $(patsubst selftests/user/%.c,%,$(wildcard selftests/user/*-crash.c)))

# $(1): variant
define USER_VARIANT_RULES
USER_OBJ_$(1) := $$(patsubst %.c,$(UB)/$(1)/obj/%.o,$(USER_LIB_SRC) $$(USER_SRC_$(1)))

$(UB)/$(1)/obj/%.o: %.c
	@mkdir -p $$(@D)
	@echo "  CC [$(1)] $$<"
	@$$(USER_CC_$(1)) $$(USER_CPPFLAGS) $$(USER_BASE) $$(USER_FL_$(1)) \
		$$(if $$(findstring clang,$$(USER_CC_$(1))),-Wno-unknown-warning-option) \
		$$(if $$(filter $$(USER_INSTR_$(1)),$$<),$$(USER_INSTR_FL_$(1))) \
		-c $$< -o $$@

USER_COREOBJ_$(1) := $$(patsubst %.c,$(UB)/$(1)/obj/%.o,$(USER_NOENG_SRC) $$(USER_SRC_$(1)))

$(UB)/$(1)/obj/tools/testing/null-engine.o: $(UB)/gen/null-engines.inc

# core + engines + shim + tools: what libpmidx and the tools link
$(UB)/$(1)/libpmidx-user.a: $$(USER_OBJ_$(1))
	@rm -f $$@
	@echo "  AR [$(1)] $$@"
	@ar rcs $$@ $$^

# core + null engines + shim + tools: what the core's tests link
$(UB)/$(1)/libpmidx-core.a: $$(USER_COREOBJ_$(1))
	@rm -f $$@
	@echo "  AR [$(1)] $$@"
	@ar rcs $$@ $$^

# the engine tests ($(USER_ENG_TESTS)) and the engines' own crash tests
# (selftests/user/*-crash.c) link the real engines
$(USER_ENG_TESTS:%=$(UB)/$(1)/test-%): $(UB)/$(1)/test-%: $(UB)/$(1)/obj/selftests/user/test-%.o \
		$(UB)/$(1)/libpmidx-user.a
	@echo "  LD [$(1)] $$@"
	@$$(USER_CC_$(1)) $$(USER_BASE) $$(USER_FL_$(1)) $$^ $$(USER_LDLIBS) -o $$@

$(USER_ENG_CRASH_ALL:%=$(UB)/$(1)/%): $(UB)/$(1)/%: $(UB)/$(1)/obj/selftests/user/%.o \
		$(UB)/$(1)/libpmidx-user.a
	@echo "  LD [$(1)] $$@"
	@$$(USER_CC_$(1)) $$(USER_BASE) $$(USER_FL_$(1)) $$^ $$(USER_LDLIBS) -o $$@

$(UB)/$(1)/test-%: $(UB)/$(1)/obj/selftests/user/test-%.o $(UB)/$(1)/libpmidx-core.a
	@echo "  LD [$(1)] $$@"
	@$$(USER_CC_$(1)) $$(USER_BASE) $$(USER_FL_$(1)) $$^ $$(USER_LDLIBS) -o $$@
endef

# The engine table of kmod/core/engine.c, as NULL_ENGINE(id, symbol) lines.
$(UB)/gen/null-engines.inc: kmod/core/engine.c
	@mkdir -p $(@D)
	@sed -n 's/^[[:space:]]*\[\(PMIDX_ENGINE_[A-Z0-9_]*\)\][[:space:]]*=[[:space:]]*&\([A-Za-z0-9_]*\),.*/NULL_ENGINE(\1, \2)/p' $< >$@.tmp
	@mv $@.tmp $@

$(foreach v,$(USER_VARIANTS),$(eval $(call USER_VARIANT_RULES,$(v))))
-include $(wildcard $(UB)/*/obj/*/*/*.d $(UB)/*/obj/*/*/*/*.d)

.PRECIOUS: $(foreach v,$(USER_VARIANTS),$(UB)/$(v)/obj/%.o)

# ---- tools ---------------------------------------------------------------

USER_TOOLS	:= $(UB)/pmidx-poolfile $(UB)/pmidx-xpline $(UB)/libpmidx-user.a

$(UB)/pmidx-%: $(UB)/plain/obj/tools/testing/pmidx-%.o $(UB)/plain/libpmidx-user.a
	@echo "  LD      $@"
	@$(USER_CC_plain) $(USER_BASE) $(USER_FL_plain) $^ $(USER_LDLIBS) -o $@

$(UB)/libpmidx-user.a: $(UB)/plain/libpmidx-user.a
	@cp $< $@

# Measurement tools on the real engines (docs/measurements/): the XPLine
# model under ccl/utree upserts (selftests/user/ccl-xpline.c, zipfian keys
# from tools/bench/zipf.c) and attach/recovery times of pool files
# (selftests/user/recovery-time.c). Not part of user-tools.
USER_MEASURE	:= $(UB)/pmidx-xpline-engines $(UB)/pmidx-recovery-time

$(UB)/pmidx-xpline-engines: $(UB)/plain/obj/selftests/user/ccl-xpline.o \
		$(UB)/plain/obj/tools/bench/zipf.o $(UB)/plain/libpmidx-user.a
	@echo "  LD      $@"
	@$(USER_CC_plain) $(USER_BASE) $(USER_FL_plain) $^ -lm $(USER_LDLIBS) -o $@

$(UB)/pmidx-recovery-time: $(UB)/plain/obj/selftests/user/recovery-time.o \
		$(UB)/plain/libpmidx-user.a
	@echo "  LD      $@"
	@$(USER_CC_plain) $(USER_BASE) $(USER_FL_plain) $^ $(USER_LDLIBS) -o $@

.PHONY: user-measure
user-measure: $(USER_MEASURE)

# ---- fuzzing ----------------------------------------------------------------

# libFuzzer build (clang); a stub that exits 77 when the runtime is missing
$(UB)/fuzz/fuzz-pool: $(UB)/fuzz/obj/selftests/user/fuzz-pool.o $(UB)/fuzz/libpmidx-core.a
	@echo "  LD [fuzz] $@"
	@$(USER_CC_fuzz) $(USER_BASE) $(subst fuzzer-no-link,fuzzer,$(USER_FL_fuzz)) $^ $(USER_LDLIBS) -o $@ 2>$@.log || \
		{ echo "  (no libFuzzer runtime: replay only, see $@.log)"; \
		  printf '#!/bin/sh\nexit 77\n' >$@; chmod +x $@; touch -d @0 $@; }

# plain driver over the corpus (gcc, ASan/UBSan)
$(UB)/replay/fuzz-replay: $(UB)/replay/obj/selftests/user/fuzz-replay.o \
		$(UB)/replay/obj/selftests/user/fuzz-pool.o $(UB)/replay/libpmidx-core.a
	@echo "  LD [replay] $@"
	@$(USER_CC_replay) $(USER_BASE) $(USER_FL_replay) $^ $(USER_LDLIBS) -o $@

# Engine recovery on mutated engine images (selftests/user/fuzz-engines.c):
# links the real engines, libFuzzer (or the exit-77 stub) and the plain
# driver. Seeds: selftests/user/corpus-engines (fuzz-engines-seeds
# regenerates them); reproducers of bugs not fixed yet:
# selftests/user/fuzz-engines-findings/.
$(UB)/fuzz/obj/selftests/user/fuzz-engines.o: USER_FL_fuzz += -DPMIDX_LIBFUZZER

$(UB)/fuzz/fuzz-engines: $(UB)/fuzz/obj/selftests/user/fuzz-engines.o $(UB)/fuzz/libpmidx-user.a
	@echo "  LD [fuzz] $@"
	@$(USER_CC_fuzz) $(USER_BASE) $(subst fuzzer-no-link,fuzzer,$(USER_FL_fuzz)) $^ $(USER_LDLIBS) -o $@ 2>$@.log || \
		{ echo "  (no libFuzzer runtime: replay only, see $@.log)"; \
		  printf '#!/bin/sh\nexit 77\n' >$@; chmod +x $@; touch -d @0 $@; }

$(UB)/replay/fuzz-engines: $(UB)/replay/obj/selftests/user/fuzz-replay.o \
		$(UB)/replay/obj/selftests/user/fuzz-engines.o $(UB)/replay/libpmidx-user.a
	@echo "  LD [replay] $@"
	@$(USER_CC_replay) $(USER_BASE) $(USER_FL_replay) $^ $(USER_LDLIBS) -o $@

USER_FE_BIN	:= $(if $(USER_CLANG),$(UB)/fuzz/fuzz-engines) $(UB)/replay/fuzz-engines

.PHONY: fuzz-engines-seeds fuzz-engines-long
# rewrites the seed corpus (deterministic)
fuzz-engines-seeds: $(UB)/replay/fuzz-engines
	@$< --make-seeds selftests/user/corpus-engines

# opt-in long run of the engine fuzzer alone (USER_FUZZ_TIME, default 600 s;
# a random libFuzzer seed unless USER_FUZZ_SEED names one)
fuzz-engines-long: $(USER_FE_BIN)
	@UB=$(UB) USER_FUZZ_TIME=$(if $(filter command line environment,$(origin USER_FUZZ_TIME)),$(USER_FUZZ_TIME),600) \
		USER_FUZZ_SEED=$${USER_FUZZ_SEED:-0} USER_FUZZ_ONLY=engines \
		tools/testing/run-user-suite fuzz

.PHONY: user-tools user-lib
user-tools: $(USER_TOOLS)
user-lib: $(UB)/libpmidx-user.a

# ---- suites --------------------------------------------------------------------

USER_UNIT	:= shim super itable alloc storm wal
USER_TSAN	:= shim storm engines check nowait
USER_BIN_unit	:= $(USER_UNIT:%=$(UB)/plain/test-%)
USER_BIN_asan	:= $(USER_UNIT:%=$(UB)/asan/test-%)
USER_BIN_tsan	:= $(USER_TSAN:%=$(UB)/tsan/test-%)
USER_BIN_crash	:= $(UB)/plain/test-crash
USER_BIN_fuzz	:= $(if $(USER_CLANG),$(UB)/fuzz/fuzz-pool) $(UB)/replay/fuzz-replay \
		   $(USER_FE_BIN)
# The engines' own crash tests (selftests/user/*-crash.c, e.g. ccl-crash)
# take minutes under ASan: run with the engines suite only when asked
# (make USER_ENGINE_CRASH=1 check-user-engines).
USER_ENG_CRASH	:= $(if $(USER_ENGINE_CRASH),$(USER_ENG_CRASH_ALL))
USER_BIN_engines := $(UB)/plain/test-engines $(UB)/asan/test-engines \
		    $(UB)/plain/test-lifetime $(UB)/asan/test-lifetime \
		    $(UB)/plain/test-check $(UB)/asan/test-check \
		    $(USER_ENG_CRASH:%=$(UB)/asan/%)
USER_BIN_engines += $(UB)/plain/test-media $(UB)/asan/test-media
USER_BIN_engines += $(UB)/plain/test-committed $(UB)/asan/test-committed
USER_BIN_engines += $(UB)/plain/test-nowait $(UB)/asan/test-nowait
# The prefix model (crashsim.h) in the prefix build: the simulator's
# self-test and the core's workloads, the engines' key/value crash
# simulation and the engines' own crash tests on a short sample of crash
# points (USER_PREFIX_SAMPLES, default 20); check-user-prefix-long runs
# their full samples with 32 images per point.
USER_BIN_prefix	:= $(UB)/prefix/test-crash $(UB)/prefix/test-engines \
		   $(UB)/prefix/test-lifetime $(UB)/prefix/test-committed \
		   $(USER_ENG_CRASH_ALL:%=$(UB)/prefix/%)
USER_PREFIX_SAMPLES ?= 20
USER_RUN	= UB=$(UB) USER_FUZZ_TIME=$(USER_FUZZ_TIME) USER_SEED=$(USER_SEED) \
		  USER_ENG_CRASH="$(USER_ENG_CRASH)" \
		  USER_PREFIX_CRASH="$(USER_ENG_CRASH_ALL)" \
		  USER_PREFIX_SAMPLES=$(USER_PREFIX_SAMPLES) \
		  USER_CRASH_ARGS="$(USER_CRASH_ARGS)" tools/testing/run-user-suite

.PHONY: check-user-unit check-user-asan check-user-tsan check-user-crash \
	check-user-fuzz check-user-engines check-user-prefix \
	check-user-prefix-long check-user-suites user-build
check-user-unit: $(USER_BIN_unit)
	@$(USER_RUN) unit
check-user-asan: $(USER_BIN_asan)
	@$(USER_RUN) asan
check-user-tsan: $(USER_BIN_tsan)
	@$(USER_RUN) tsan
check-user-crash: $(USER_BIN_crash)
	@$(USER_RUN) crash
check-user-fuzz: $(USER_BIN_fuzz)
	@$(USER_RUN) fuzz
# the real engines, through the engine ops and the crash simulator
check-user-engines: $(USER_BIN_engines)
	@$(USER_RUN) engines
check-user-prefix: $(USER_BIN_prefix)
	@$(USER_RUN) prefix
check-user-prefix-long: $(USER_BIN_prefix)
	@USER_PREFIX_LONG=1 $(USER_RUN) prefix

# What check-user-suites runs. The engines suite links the real engines
# (kmod/engines/); every other suite links the core with null engines.
USER_SUITES	?= unit asan tsan crash fuzz engines prefix

user-build: $(foreach s,$(USER_SUITES),$(USER_BIN_$(s)))

# The build goes through a parallel sub-make (unless a jobserver is
# there) that keeps going past a failure: a binary that did not build
# fails its suite, the other suites still run.
USER_JOBS	?= $(shell nproc 2>/dev/null || echo 2)
USER_MK		:= $(USER_MK_FILE)

check-user-suites:
	@$(MAKE) --no-print-directory -k -f $(USER_MK) CC="$(CC)" B="$(B)" \
		$(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(USER_JOBS)) user-build || \
		echo "# check-user-suites: some binaries did not build (their suites fail)"
	@$(USER_RUN) $(USER_SUITES)

.DEFAULT_GOAL := $(_USER_SAVED_GOAL)
