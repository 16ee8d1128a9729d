# tests/install/part.mk — what an administrator installs: `make install` into a
# prefix (the installed daemon finds its interposer, the unit passes
# systemd-analyze verify), and the Debian package installed with dpkg, run as
# the unit runs it, and purged without a trace (root only).
TEST_SCRIPTS += tests/install/test-install.sh tests/install/test-deb.sh
TEST_SCRIPTS_DEPS += $(BUILD)/gpupoold $(BUILD)/gpupool $(BUILD)/gpupool-sim $(BUILD)/libgpuslice.so
