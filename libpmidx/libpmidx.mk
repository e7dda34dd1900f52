# SPDX-License-Identifier: LGPL-2.1-or-later
#
# libpmidx build fragment, included by the top Makefile (which provides
# CC, CFLAGS, CPPFLAGS with -I uapi, B and BIN).
#
#   libpmidx          shared (libpmidx.so.1, versioned symbols) and static
#                     library in $(B)/lib
#   libpmidx-tests    the unit test binary $(BIN)/libpmidx-unit
#   check-libpmidx    run the unit tests and the ABI check
#   install-libpmidx  headers, libraries and pmidx.pc under
#                     $(DESTDIR)$(PREFIX) (PREFIX=/usr/local by default)
#
# pmidxctl and the async_api VM test link the static library: this
# fragment adds it to their links (target-specific NL_LIBS/CPPFLAGS, and
# a prerequisite).

# Whatever the inclusion point, this fragment never sets the default goal.
LIBPMIDX_SAVED_GOAL := $(.DEFAULT_GOAL)

LIBPMIDX_VERSION := 1.1.0
LIBPMIDX_SOMAJOR := 1
LIBPMIDX_DIR	 := libpmidx
LIBPMIDX_OBJDIR	 := $(B)/libpmidx
LIBPMIDX_LIBDIR	 := $(B)/lib
LIBPMIDX_SRC	 := $(wildcard $(LIBPMIDX_DIR)/src/*.c)
LIBPMIDX_HDR	 := $(wildcard $(LIBPMIDX_DIR)/include/*.h $(LIBPMIDX_DIR)/src/*.h) \
		    uapi/linux/pmidx.h
LIBPMIDX_OBJ	 := $(patsubst $(LIBPMIDX_DIR)/src/%.c,$(LIBPMIDX_OBJDIR)/%.o,$(LIBPMIDX_SRC))
LIBPMIDX_CPPFLAGS := -I $(LIBPMIDX_DIR)/include
LIBPMIDX_SO	 := $(LIBPMIDX_LIBDIR)/libpmidx.so.$(LIBPMIDX_VERSION)
LIBPMIDX_A	 := $(LIBPMIDX_LIBDIR)/libpmidx.a
LIBPMIDX_UNIT	 := $(BIN)/libpmidx-unit
# rings use io_uring through liburing (Debian 12: 2.3)
LIBPMIDX_LIBS	 := -luring

PREFIX		?= /usr/local
LIBDIR		?= $(PREFIX)/lib
INCLUDEDIR	?= $(PREFIX)/include
PKGCONFIGDIR	?= $(LIBDIR)/pkgconfig

.PHONY: libpmidx libpmidx-tests check-libpmidx install-libpmidx
libpmidx: $(LIBPMIDX_SO) $(LIBPMIDX_A)
libpmidx-tests: $(LIBPMIDX_UNIT)

$(LIBPMIDX_OBJDIR)/%.o: $(LIBPMIDX_DIR)/src/%.c $(LIBPMIDX_HDR)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(LIBPMIDX_CPPFLAGS) $(CFLAGS) -fPIC -c $< -o $@

$(LIBPMIDX_SO): $(LIBPMIDX_OBJ) $(LIBPMIDX_DIR)/libpmidx.map
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libpmidx.so.$(LIBPMIDX_SOMAJOR) \
		-Wl,--version-script,$(LIBPMIDX_DIR)/libpmidx.map -Wl,-z,defs \
		$(LIBPMIDX_OBJ) -o $@ $(LIBPMIDX_LIBS)
	ln -sf $(@F) $(@D)/libpmidx.so.$(LIBPMIDX_SOMAJOR)
	ln -sf libpmidx.so.$(LIBPMIDX_SOMAJOR) $(@D)/libpmidx.so

$(LIBPMIDX_A): $(LIBPMIDX_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(LIBPMIDX_UNIT): $(wildcard $(LIBPMIDX_DIR)/tests/*.c $(LIBPMIDX_DIR)/tests/*.h) $(LIBPMIDX_A)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(LIBPMIDX_CPPFLAGS) -I $(LIBPMIDX_DIR)/src $(CFLAGS) \
		$(filter %.c,$^) -o $@ $(LIBPMIDX_A) $(LIBPMIDX_LIBS)

check-libpmidx: $(LIBPMIDX_UNIT) $(LIBPMIDX_SO)
	@$(LIBPMIDX_UNIT)
	@$(LIBPMIDX_DIR)/tests/abi.sh $(LIBPMIDX_LIBDIR) $(LIBPMIDX_DIR)

install-libpmidx: $(LIBPMIDX_SO) $(LIBPMIDX_A)
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR)
	install -m 644 $(LIBPMIDX_DIR)/include/pmidx.h $(DESTDIR)$(INCLUDEDIR)/pmidx.h
	install -m 755 $(LIBPMIDX_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libpmidx.so.$(LIBPMIDX_VERSION) $(DESTDIR)$(LIBDIR)/libpmidx.so.$(LIBPMIDX_SOMAJOR)
	ln -sf libpmidx.so.$(LIBPMIDX_SOMAJOR) $(DESTDIR)$(LIBDIR)/libpmidx.so
	install -m 644 $(LIBPMIDX_A) $(DESTDIR)$(LIBDIR)/libpmidx.a
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(LIBPMIDX_VERSION)|' \
	    $(LIBPMIDX_DIR)/pmidx.pc.in >$(DESTDIR)$(PKGCONFIGDIR)/pmidx.pc

# pmidxctl's data subcommands (tools/pmidxctl/data.c) use the static
# library; "private" keeps these flags off the prerequisites' builds.
$(BIN)/pmidxctl: $(LIBPMIDX_A) $(LIBPMIDX_DIR)/include/pmidx.h
$(BIN)/pmidxctl: private CPPFLAGS += $(LIBPMIDX_CPPFLAGS)
$(BIN)/pmidxctl: private NL_LIBS += $(LIBPMIDX_A)

# The VM test of the async API (selftests/vm/async_api.c) links it too.
$(BIN)/selftests/async_api: $(LIBPMIDX_A) $(LIBPMIDX_DIR)/include/pmidx.h
$(BIN)/selftests/async_api: private CPPFLAGS += $(LIBPMIDX_CPPFLAGS)
$(BIN)/selftests/async_api: private NL_LIBS += $(LIBPMIDX_A)

ifeq ($(LIBPMIDX_SAVED_GOAL),)
.DEFAULT_GOAL :=
endif
