# contrib/install.mk — `make install` and `make deb` (included by the top
# Makefile; docs/install.md says what goes where and why).
#
#   make install [PREFIX=/usr/local] [DESTDIR=]   the programs, the interposer,
#       the man pages, the bash completion, the Grafana dashboard, the sample
#       trace, the systemd unit and its configuration file
#   make uninstall [PREFIX=...] [DESTDIR=]        removes what install put there
#   make deb                                      a Debian package built by
#       dpkg-buildpackage (debian/) from a copy of this tree: $(BUILD)/deb/*.deb
#
# The configuration lives in SYSCONFDIR/gpupool whatever the prefix (the unit
# reads it there), the state in /var/lib/gpupool (the unit's StateDirectory).

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
GPLIBDIR ?= $(PREFIX)/lib/gpupool
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share/gpupool
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc

GP_VERSION := $(shell awk 'NR == 1 { gsub(/[()]/, "", $$2); print $$2 }' debian/changelog)

INSTALL_FILES := $(BUILD)/gpupool $(BUILD)/gpupool-sim $(BUILD)/gpupoold $(BUILD)/libgpuslice.so \
                 $(BUILD)/gpupool-slurm-session

.PHONY: install uninstall deb
$(BUILD)/gpupoold.service: contrib/gpupoold.service.in
	@mkdir -p $(@D)
	$(Q)sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $< >$@.tmp && mv $@.tmp $@

# The unit's paths depend on the prefix: it is made again at every install.
install: $(INSTALL_FILES)
	@rm -f $(BUILD)/gpupoold.service
	$(Q)$(MAKE) --no-print-directory $(BUILD)/gpupoold.service
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(GPLIBDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DATADIR)/grafana \
	    $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSCONFDIR)/gpupool
	install -m 755 $(BUILD)/gpupool $(BUILD)/gpupool-sim $(DESTDIR)$(BINDIR)/
	install -m 755 $(BUILD)/gpupoold $(DESTDIR)$(SBINDIR)/
	install -m 644 $(BUILD)/libgpuslice.so $(DESTDIR)$(GPLIBDIR)/
	install -m 755 $(BUILD)/gpupool-slurm-session $(DESTDIR)$(GPLIBDIR)/
	install -m 644 contrib/gpupool.1 contrib/gpupool-sim.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 contrib/gpupoold.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 644 contrib/gpupool.bash-completion $(DESTDIR)$(BASHCOMPDIR)/gpupool
	install -m 644 contrib/grafana/gpupool-dashboard.json $(DESTDIR)$(DATADIR)/grafana/
	install -d $(DESTDIR)$(DATADIR)/traces/openb-sample
	install -m 644 $(addprefix examples/traces/openb-sample/,README.md LICENSE nodes.csv pods.csv) \
	    $(DESTDIR)$(DATADIR)/traces/openb-sample/
	install -m 644 $(BUILD)/gpupoold.service $(DESTDIR)$(SYSTEMDUNITDIR)/
	@# An administrator's edited configuration is kept.
	[ -e $(DESTDIR)$(SYSCONFDIR)/gpupool/gpupoold.conf ] || \
	    install -m 644 contrib/gpupoold.conf $(DESTDIR)$(SYSCONFDIR)/gpupool/gpupoold.conf

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gpupool $(DESTDIR)$(BINDIR)/gpupool-sim \
	    $(DESTDIR)$(SBINDIR)/gpupoold $(DESTDIR)$(GPLIBDIR)/libgpuslice.so \
	    $(DESTDIR)$(GPLIBDIR)/gpupool-slurm-session \
	    $(DESTDIR)$(MANDIR)/man1/gpupool.1 $(DESTDIR)$(MANDIR)/man1/gpupool-sim.1 \
	    $(DESTDIR)$(MANDIR)/man8/gpupoold.8 $(DESTDIR)$(BASHCOMPDIR)/gpupool \
	    $(DESTDIR)$(DATADIR)/grafana/gpupool-dashboard.json \
	    $(DESTDIR)$(SYSTEMDUNITDIR)/gpupoold.service
	rm -rf $(DESTDIR)$(DATADIR)/traces/openb-sample
	-rmdir $(DESTDIR)$(GPLIBDIR) $(DESTDIR)$(DATADIR)/grafana $(DESTDIR)$(DATADIR)/traces \
	    $(DESTDIR)$(DATADIR) 2>/dev/null

# dpkg-buildpackage writes its packages beside the source tree it builds, so
# it builds a copy of this one (without build outputs) in $(BUILD)/deb.
DEB_SRC := $(BUILD)/deb/gpupool-$(GP_VERSION)
deb:
	rm -rf $(BUILD)/deb && mkdir -p $(DEB_SRC)
	tar -cf - --exclude=./build --exclude=./.git --exclude=./gpupool-data \
	    --exclude=./tests/console/node_modules . | tar -C $(DEB_SRC) -xf -
	cd $(DEB_SRC) && DEB_BUILD_OPTIONS="nocheck parallel=$${GP_DEB_JOBS:-2} $${DEB_BUILD_OPTIONS:-}" \
	    dpkg-buildpackage -b -us -uc
	@ls $(BUILD)/deb/*.deb
