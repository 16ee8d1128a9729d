# tests/cli/part.mk — the gpupool command's own tests (shell, TAP) against a
# hostile stand-in server (tests/cli/fake-server.pl).
TEST_SCRIPTS += $(sort $(wildcard tests/cli/test-*.sh))
TEST_SCRIPTS_DEPS += $(BUILD)/gpupool
