# SPDX-License-Identifier: GPL-2.0
#
# Userspace build of kmod/core ("One source, two builds", DESIGN.md) and
# the test tooling on it. Included by the top Makefile; needs only CC and
# B from there. Everything goes to $(B)/user/.
#
#   check-user-unit    unit tests, plain -O2 (gcc)
#   check-user-asan    the same tests under ASan+UBSan
#   check-user-tsan    the concurrent tests under ThreadSanitizer
#   check-user-crash   ADR/eADR crash simulator over multi-step workloads
#   check-user-fuzz    libFuzzer on pool images (bounded), plus the plain
#                      replay driver over the corpus
#   check-user-suites  all of the above; ends with "N passed, N failed"
#
#   user-tools         build/user/pmidx-poolfile, build/user/pmidx-xpline,
#                      build/user/libpmidx-user.a (core + shim + pool file)
#
# Knobs: USER_CLANG (clang binary, empty to use $(CC) everywhere),
# USER_FUZZ_TIME (seconds, default 30), USER_CRASH_ARGS, USER_SEED.

_USER_SAVED_GOAL := $(.DEFAULT_GOAL)

B		?= build
UB		:= $(B)/user
USER_CC		?= $(CC)
USER_CLANG	?= $(shell command -v clang 2>/dev/null)
USER_SAN_CC	:= $(if $(USER_CLANG),$(USER_CLANG),$(USER_CC))
USER_FUZZ_TIME	?= 30
USER_SEED	?=
USER_CRASH_ARGS	?=

USER_CPPFLAGS	:= -D_GNU_SOURCE -I tools/include -I uapi -I kmod -I tools/testing \
		   -I selftests/user
USER_WARN	:= -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare \
		   -Wno-missing-field-initializers
USER_BASE	:= -std=gnu11 -g -pthread -fno-strict-aliasing -MMD -MP $(USER_WARN)

# per-variant compiler and flags
USER_CC_plain	:= $(USER_CC)
USER_FL_plain	:= -O2
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

USER_CORE_SRC	:= $(wildcard kmod/core/*.c)
USER_SHIM_SRC	:= $(wildcard tools/testing/shim/*.c)
USER_TOOL_SRC	:= tools/testing/pool_file.c tools/testing/crashsim.c \
		   tools/testing/xpline.c selftests/user/harness.c
USER_LIB_SRC	:= $(USER_CORE_SRC) $(USER_SHIM_SRC) $(USER_TOOL_SRC)

USER_VARIANTS	:= plain asan tsan fuzz replay

# $(1): variant
define USER_VARIANT_RULES
USER_OBJ_$(1) := $$(patsubst %.c,$(UB)/$(1)/obj/%.o,$(USER_LIB_SRC))
-include $$(USER_OBJ_$(1):.o=.d)

$(UB)/$(1)/obj/%.o: %.c
	@mkdir -p $$(@D)
	$$(USER_CC_$(1)) $$(USER_CPPFLAGS) $$(USER_BASE) $$(USER_FL_$(1)) -c $$< -o $$@

$(UB)/$(1)/libpmidx-user.a: $$(USER_OBJ_$(1))
	@rm -f $$@
	ar rcs $$@ $$^

$(UB)/$(1)/%: $(UB)/$(1)/obj/selftests/user/%.o $(UB)/$(1)/libpmidx-user.a
	$$(USER_CC_$(1)) $$(USER_BASE) $$(USER_FL_$(1)) $$^ -o $$@
endef

$(foreach v,$(USER_VARIANTS),$(eval $(call USER_VARIANT_RULES,$(v))))

.PHONY: user-lib
user-lib: $(UB)/plain/libpmidx-user.a

.DEFAULT_GOAL := $(_USER_SAVED_GOAL)
