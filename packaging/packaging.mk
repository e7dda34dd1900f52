# SPDX-License-Identifier: GPL-2.0
#
# Packaging fragment, included by the top Makefile (which provides B, BIN,
# the libpmidx and tools targets and PREFIX/LIBDIR from libpmidx.mk).
#
#   man            man pages from man/*.scd (scdoc) into $(B)/man, plus a
#                  ".so" page for every function a man3 page's NAME lists
#   install        (top Makefile) library, header, pmidx.pc, pmidxctl,
#                  pmidx-bench, man pages, bash completions under
#                  $(DESTDIR)$(PREFIX); the udev rule when UDEVRULESDIR is set
#   install-udev   the udev rule into $(DESTDIR)$(UDEVRULESDIR)
#                  (/etc/udev/rules.d by default) and the group pmidx
#   dkms-src       the module's DKMS source tree in $(DKMS_SRC)
#   dkms-install   as root: /usr/src/pmidx-VERSION, dkms add, build, install
#                  (the running kernel, or DKMS_FLAGS="-k KVER ...")
#   dkms-remove    as root: dkms remove --all, /usr/src/pmidx-VERSION gone
#   deb            Debian packages (dpkg-buildpackage -us -uc -b) built in
#                  $(B)/deb from a copy of the tree; the .debs land there

PKG_SAVED_GOAL	:= $(.DEFAULT_GOAL)

BINDIR		?= $(PREFIX)/bin
MANDIR		?= $(PREFIX)/share/man
BASHCOMPDIR	?= $(PREFIX)/share/bash-completion/completions
UDEVRULESDIR	?=

MAN_SCD		:= $(wildcard man/*.scd)
MAN_PAGES	:= $(patsubst man/%.scd,$(B)/man/%,$(MAN_SCD))
MAN_LINKS	:= $(B)/man/links.stamp

.PHONY: man install-tools install-man install-completion install-udev \
	dkms-src dkms-install dkms-remove deb

man: $(MAN_PAGES) $(MAN_LINKS)

$(B)/man/%: man/%.scd
	@mkdir -p $(@D)
	scdoc <$< >$@.tmp && mv $@.tmp $@

# man3 pages document a family: NAME is "f1, f2, ... - what"; every fN but
# the page's own name gets a one-line ".so man3/PAGE.3" page.
$(MAN_LINKS): $(filter %.3.scd,$(MAN_SCD))
	@mkdir -p $(@D)
	@rm -f $(B)/man/*.3.so-link
	@for f in $^; do \
		page=$$(basename $$f .scd); \
		awk '/^# NAME/ { n = 1; next } n && NF { sub(/ - .*/, ""); print; exit }' $$f | \
		tr ',' '\n' | tr -d ' ' | while read -r fn; do \
			[ -n "$$fn" ] && [ "$$fn.3" != "$$page" ] || continue; \
			echo ".so man3/$$page" >$(B)/man/$$fn.3.so-link; \
		done; \
	done
	@touch $@

install-man: man
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(MANDIR)/man4 $(DESTDIR)$(MANDIR)/man8
	@set -e; for p in $(MAN_PAGES); do \
		s=$${p##*.}; \
		echo "install -m 644 $$p $(DESTDIR)$(MANDIR)/man$$s/"; \
		install -m 644 $$p $(DESTDIR)$(MANDIR)/man$$s/; \
	done
	@set -e; for l in $(B)/man/*.3.so-link; do \
		install -m 644 $$l $(DESTDIR)$(MANDIR)/man3/$$(basename $$l .so-link); \
	done

install-tools: tools
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(BIN)/pmidxctl $(BIN)/pmidx-bench $(DESTDIR)$(BINDIR)/

install-completion:
	install -d $(DESTDIR)$(BASHCOMPDIR)
	install -m 644 packaging/bash-completion/pmidxctl $(DESTDIR)$(BASHCOMPDIR)/pmidxctl
	ln -sf pmidxctl $(DESTDIR)$(BASHCOMPDIR)/pmidx-bench

install-udev:
	install -d $(DESTDIR)$(or $(UDEVRULESDIR),/etc/udev/rules.d)
	install -m 644 packaging/udev/60-pmidx.rules $(DESTDIR)$(or $(UDEVRULESDIR),/etc/udev/rules.d)/
	@if [ -z "$(DESTDIR)" ] && ! getent group pmidx >/dev/null; then \
		echo "groupadd --system pmidx"; groupadd --system pmidx; fi

# ---- DKMS -----------------------------------------------------------------

DKMS_SRC	?= $(B)/dkms-src/pmidx-$(PMIDX_VERSION)
DKMS_FLAGS	?=
DKMS_SRC_FILES	 = $(shell find kmod uapi include -name '*.[ch]')

# The module's sources as DKMS builds them: no sample client (a test
# fixture), no objects, dkms.conf with the version filled in.
dkms-src:
	@rm -rf $(DKMS_SRC) && mkdir -p $(DKMS_SRC)
	@tar -cf - $(DKMS_SRC_FILES) | tar -xf - -C $(DKMS_SRC)
	@sed '/^obj-m += samples/d' Kbuild >$(DKMS_SRC)/Kbuild
	@sed 's/#MODULE_VERSION#/$(PMIDX_VERSION)/' dkms.conf >$(DKMS_SRC)/dkms.conf
	@echo "dkms-src: $(DKMS_SRC)"

dkms-install:
	@if dkms status -m pmidx -v $(PMIDX_VERSION) 2>/dev/null | grep -q .; then \
		echo "dkms remove -m pmidx -v $(PMIDX_VERSION) --all"; \
		dkms remove -m pmidx -v $(PMIDX_VERSION) --all; fi
	$(MAKE) --no-print-directory dkms-src DKMS_SRC=/usr/src/pmidx-$(PMIDX_VERSION)
	dkms add -m pmidx -v $(PMIDX_VERSION)
	dkms build -m pmidx -v $(PMIDX_VERSION) $(DKMS_FLAGS)
	dkms install -m pmidx -v $(PMIDX_VERSION) $(DKMS_FLAGS)

# DKMS_FLAGS="-k KVER": that kernel's module only (the sources stay for
# the others); otherwise every kernel's, and the sources.
dkms-remove:
	-dkms remove -m pmidx -v $(PMIDX_VERSION) $(or $(DKMS_FLAGS),--all)
	$(if $(DKMS_FLAGS),,rm -rf /usr/src/pmidx-$(PMIDX_VERSION))

# ---- Debian packages ----------------------------------------------------------

# Built from a copy of the tree (tracked and untracked files git does not
# ignore; without git: everything but build outputs), so the checkout's
# build/ and its parent directory are left alone. DEB_BUILD_OPTIONS is
# passed through (CI: nocheck parallel=2).
DEB_DIR		:= $(B)/deb
DEB_SRC		:= $(DEB_DIR)/pmidx-$(PMIDX_VERSION)

deb:
	@rm -rf $(DEB_DIR) && mkdir -p $(DEB_SRC)
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		git ls-files -z -c -o --exclude-standard | \
			xargs -0 sh -c 'for f; do [ -e "$$f" ] && printf "%s\0" "$$f"; done' sh | \
			tar --null -T - -cf - ; \
	else \
		tar --exclude=./build --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' \
			--exclude='*.mod*' --exclude=Module.symvers --exclude=modules.order -cf - . ; \
	fi | tar -xf - -C $(DEB_SRC)
	cd $(DEB_SRC) && dpkg-buildpackage -us -uc -b
	@ls -1 $(DEB_DIR)/*.deb

ifeq ($(PKG_SAVED_GOAL),)
.DEFAULT_GOAL :=
endif
