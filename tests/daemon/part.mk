# tests/daemon/part.mk — black-box tests of gpupoold: C programs (Check) that
# start the real daemon and speak HTTP to it, and shell tests (TAP) for the
# crash test, the store faults and the end-to-end scenarios with real processes.
DAEMON_TEST_SRCS := $(sort $(wildcard tests/daemon/test-*.c))
DAEMON_TESTS := $(patsubst tests/daemon/%.c,$(BUILD)/tests/daemon/%,$(DAEMON_TEST_SRCS))
TESTS += $(DAEMON_TESTS)
TEST_SCRIPTS += $(sort $(wildcard tests/daemon/test-*.sh))
TEST_SCRIPTS_DEPS += $(BUILD)/gpupoold $(BUILD)/gpupool $(BUILD)/tests/executors/libfakenvml.so
$(OBJ)/tests/daemon/%.o: CPPFLAGS += $(shell pkg-config --cflags jansson)
$(DAEMON_TESTS): $(BUILD)/tests/daemon/%: $(OBJ)/tests/daemon/%.o $(OBJ)/tests/daemon/harness.o $(BUILD)/libgpcommon.a | $(BUILD)/gpupoold
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $(filter %.o %.a,$^) -o $@ $(CHECK_LIBS) $(shell pkg-config --libs jansson) $(LDLIBS)
# test-usage checks the accounting arithmetic itself (pure, no daemon).
$(BUILD)/tests/daemon/test-usage: $(OBJ)/src/daemon/usage.o
