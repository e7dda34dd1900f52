# SPDX-License-Identifier: LGPL-2.1-or-later
#
# libpmidx's embedded backend (libpmidx/src/backend_file.c): pool FILES
# attached in-process with the userspace build of kmod/core. Needs the
# top Makefile, libpmidx/libpmidx.mk and tools/testing/user.mk first:
#
#   make -f Makefile -f libpmidx/embedded.mk check-libpmidx-embedded
#
#   libpmidx-embedded        $(B)/lib/libpmidx-embedded.a: libpmidx (built
#                            with -DPMIDX_EMBEDDED) + backend_file.o + the
#                            core, engines, shim and pool-file objects of
#                            $(UB)/plain/libpmidx-user.a
#   check-libpmidx-embedded  selftests/user/test-embedded.c on a pool
#                            file; ends with "N passed, N failed"
#   libpmidx-embedded-pic    $(B)/lib/libpmidx-embedded-pic.a: the same,
#                            every object built with -fPIC (the pic
#                            variant of user.mk), for a shared object to
#                            link: the Python binding (python/python.mk)
#
# The core and libpmidx both define pmidx_pool_open, pmidx_pool_close and
# pmidx_engine_name: the core's copies are renamed pmidx_core_* (objcopy
# --redefine-sym) in this archive, as backend_file.c expects. The shared
# libpmidx.so and libpmidx.a are untouched (no embedded backend there).

EMB_SAVED_GOAL	:= $(.DEFAULT_GOAL)

EMB_OBJDIR	:= $(B)/libpmidx-embedded
EMB_LIB		:= $(B)/lib/libpmidx-embedded.a
EMB_TEST	:= $(EMB_OBJDIR)/test-embedded
EMB_CORE_A	:= $(UB)/plain/libpmidx-user.a
EMB_CORE_REN	:= $(EMB_OBJDIR)/core-renamed.a
EMB_RENAME	:= pmidx_pool_open pmidx_pool_close pmidx_engine_name
EMB_LIB_SRC	:= $(filter-out $(LIBPMIDX_DIR)/src/backend_file.c,$(LIBPMIDX_SRC))
EMB_LIB_OBJ	:= $(patsubst $(LIBPMIDX_DIR)/src/%.c,$(EMB_OBJDIR)/%.o,$(EMB_LIB_SRC))
EMB_FILE_OBJ	:= $(EMB_OBJDIR)/backend_file.o
# the shim flags of user.mk (tools/include first), libpmidx's headers after
EMB_SHIM_FLAGS	:= $(USER_CPPFLAGS) -I $(LIBPMIDX_DIR)/include -I $(LIBPMIDX_DIR)/src \
		   $(USER_BASE) $(USER_FL_plain)

.PHONY: libpmidx-embedded check-libpmidx-embedded
libpmidx-embedded: $(EMB_LIB)

# libpmidx's own sources, as libpmidx.mk builds them, plus PMIDX_EMBEDDED
$(EMB_OBJDIR)/%.o: $(LIBPMIDX_DIR)/src/%.c $(LIBPMIDX_HDR)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(LIBPMIDX_CPPFLAGS) -DPMIDX_EMBEDDED $(CFLAGS) -c $< -o $@

# the backend sees both worlds: the shim's headers and libpmidx's
$(EMB_FILE_OBJ): $(LIBPMIDX_DIR)/src/backend_file.c $(LIBPMIDX_HDR) tools/testing/pool_file.h \
		kmod/core/direct.h kmod/core/dispatch.h kmod/core/pool.h
	@mkdir -p $(@D)
	$(USER_CC_plain) $(EMB_SHIM_FLAGS) -DPMIDX_EMBEDDED -c $< -o $@

$(EMB_CORE_REN): $(EMB_CORE_A)
	@mkdir -p $(@D)
	objcopy $(foreach s,$(EMB_RENAME),--redefine-sym $(s)=$(subst pmidx_,pmidx_core_,$(s))) $< $@

# one archive (members of the core archive keep their duplicate names)
$(EMB_LIB): $(EMB_LIB_OBJ) $(EMB_FILE_OBJ) $(EMB_CORE_REN)
	@mkdir -p $(@D)
	rm -f $@
	{ echo "CREATE $@"; \
	  for o in $(EMB_LIB_OBJ) $(EMB_FILE_OBJ); do echo "ADDMOD $$o"; done; \
	  echo "ADDLIB $(EMB_CORE_REN)"; echo SAVE; echo END; } | $(AR) -M
	$(AR) s $@

$(EMB_TEST): selftests/user/test-embedded.c $(EMB_LIB) $(LIBPMIDX_DIR)/include/pmidx.h \
		tools/testing/pool_file.h
	@mkdir -p $(@D)
	$(USER_CC_plain) $(USER_CPPFLAGS) -I $(LIBPMIDX_DIR)/include -I $(LIBPMIDX_DIR)/src $(USER_BASE) \
		$(USER_FL_plain) $< $(EMB_LIB) $(USER_LDLIBS) -o $@

# The same archive, position-independent (python/python.mk links it into
# the Python extension module, a shared object).
EMB_PIC_OBJDIR	:= $(B)/libpmidx-embedded-pic
EMB_PIC_LIB	:= $(B)/lib/libpmidx-embedded-pic.a
EMB_PIC_CORE_REN := $(EMB_PIC_OBJDIR)/core-renamed.a
EMB_PIC_LIB_OBJ	:= $(patsubst $(LIBPMIDX_DIR)/src/%.c,$(EMB_PIC_OBJDIR)/%.o,$(EMB_LIB_SRC))
EMB_PIC_FILE_OBJ := $(EMB_PIC_OBJDIR)/backend_file.o

.PHONY: libpmidx-embedded-pic
libpmidx-embedded-pic: $(EMB_PIC_LIB)

$(EMB_PIC_OBJDIR)/%.o: $(LIBPMIDX_DIR)/src/%.c $(LIBPMIDX_HDR)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(LIBPMIDX_CPPFLAGS) -DPMIDX_EMBEDDED $(CFLAGS) -fPIC -c $< -o $@

$(EMB_PIC_FILE_OBJ): $(LIBPMIDX_DIR)/src/backend_file.c $(LIBPMIDX_HDR) tools/testing/pool_file.h \
		kmod/core/direct.h kmod/core/dispatch.h kmod/core/pool.h
	@mkdir -p $(@D)
	$(USER_CC_pic) $(USER_CPPFLAGS) -I $(LIBPMIDX_DIR)/include -I $(LIBPMIDX_DIR)/src \
		$(USER_BASE) $(USER_FL_pic) -DPMIDX_EMBEDDED -c $< -o $@

$(EMB_PIC_CORE_REN): $(UB)/pic/libpmidx-user.a
	@mkdir -p $(@D)
	objcopy $(foreach s,$(EMB_RENAME),--redefine-sym $(s)=$(subst pmidx_,pmidx_core_,$(s))) $< $@

$(EMB_PIC_LIB): $(EMB_PIC_LIB_OBJ) $(EMB_PIC_FILE_OBJ) $(EMB_PIC_CORE_REN)
	@mkdir -p $(@D)
	rm -f $@
	{ echo "CREATE $@"; \
	  for o in $(EMB_PIC_LIB_OBJ) $(EMB_PIC_FILE_OBJ); do echo "ADDMOD $$o"; done; \
	  echo "ADDLIB $(EMB_PIC_CORE_REN)"; echo SAVE; echo END; } | $(AR) -M
	$(AR) s $@

check-libpmidx-embedded: $(EMB_TEST) $(UB)/pmidx-poolfile
	@$(EMB_TEST) $(UB)/pmidx-poolfile $(EMB_OBJDIR)/test.pool

ifeq ($(EMB_SAVED_GOAL),)
.DEFAULT_GOAL :=
endif
