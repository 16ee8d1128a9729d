# tests/daemon/part.mk — black-box tests of gpupoold: C programs (Check) that
# start the real daemon and speak HTTP to it, and shell tests (TAP) for the
# crash test, the store faults and the end-to-end scenarios with real processes.
DAEMON_TEST_SRCS := $(sort $(wildcard tests/daemon/test-*.c))
DAEMON_TESTS := $(patsubst tests/daemon/%.c,$(BUILD)/tests/daemon/%,$(DAEMON_TEST_SRCS))
TESTS += $(DAEMON_TESTS)
TEST_SCRIPTS += $(sort $(wildcard tests/daemon/test-*.sh))
TEST_SCRIPTS_DEPS += $(BUILD)/gpupoold $(BUILD)/gpupool $(BUILD)/fake/libnvidia-ml.so.1
$(OBJ)/tests/daemon/%.o: CPPFLAGS += $(shell pkg-config --cflags jansson)
$(DAEMON_TESTS): $(BUILD)/tests/daemon/%: $(OBJ)/tests/daemon/%.o $(OBJ)/tests/daemon/harness.o $(BUILD)/libgpcommon.a | $(BUILD)/gpupoold
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $(filter %.o %.a,$^) -o $@ $(CHECK_LIBS) $(shell pkg-config --libs jansson) $(LDLIBS)
# The ThreadSanitizer pass (the top Makefile's test-tsan) runs gpupoold built
# with TSan under its black-box tests, which drive all its thread kinds (the
# HTTP pool, the scheduling loop, the store's writer, the connection guard):
# a data race stops the daemon (halt_on_error) and fails the test driving it.
DAEMON_TSAN_SCRIPTS := tests/daemon/test-scenario.sh tests/daemon/test-crash.sh \
                       tests/daemon/test-describe.sh tests/daemon/test-idle.sh
TSAN_GOALS += build/tsan/gpupoold build/tsan/gpupool build/tsan/tests/daemon/test-hardening \
              build/tsan/tests/daemon/test-api build/tsan/tests/daemon/test-mailbox \
              build/tsan/fake/libnvidia-ml.so.1
TSAN_TESTS += build/tsan/tests/daemon/test-hardening build/tsan/tests/daemon/test-api \
              build/tsan/tests/daemon/test-mailbox $(DAEMON_TSAN_SCRIPTS)
# test-usage checks the accounting arithmetic itself (pure, no daemon).
$(BUILD)/tests/daemon/test-usage: $(OBJ)/src/daemon/usage.o
# test-mailbox checks the mailbox of the daemon's threads on its own.
$(BUILD)/tests/daemon/test-mailbox: $(OBJ)/src/daemon/mailbox.o $(OBJ)/src/daemon/util.o \
                                    $(OBJ)/src/common/error.o
# test-share.sh runs this workload on the fake driver (a plain program: the
# interposer is preloaded into it by the executor, as into any workload).
$(BUILD)/tests/daemon/share-loop: $(OBJ)/tests/daemon/share-loop.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ -ldl
TEST_SCRIPTS_DEPS += $(BUILD)/tests/daemon/share-loop
# test-oom.sh preloads this into gpupoold to make its allocations fail.
$(BUILD)/tests/daemon/failalloc.so: tests/daemon/failalloc.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -shared $< -o $@ -ldl
TEST_SCRIPTS_DEPS += $(BUILD)/tests/daemon/failalloc.so
# test-oom.sh learns from this the size of a queue's spec and of a token,
# to make the growth of the daemon's lists of them fail.
$(BUILD)/tests/daemon/type-size: $(OBJ)/tests/daemon/type-size.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@
TEST_SCRIPTS_DEPS += $(BUILD)/tests/daemon/type-size
# test-names.sh learns from this the names of the lists the API speaks, to
# hold the console's and the CLI's copies to them.
$(BUILD)/tests/daemon/enum-names: $(OBJ)/tests/daemon/enum-names.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@
TEST_SCRIPTS_DEPS += $(BUILD)/tests/daemon/enum-names
# test-store-errors.sh preloads this into gpupoold to make a store statement fail.
$(BUILD)/tests/daemon/failstep.so: tests/daemon/failstep.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(shell pkg-config --cflags sqlite3) $(CFLAGS) -shared $< -o $@ -ldl
TEST_SCRIPTS_DEPS += $(BUILD)/tests/daemon/failstep.so
# test-pause-faults.sh kills this copy of gpupoold at each step of a pause
# and a resume (GPUPOOL_TEST_PAUSE_KILL, pause-kill.c), test-launch-crash.sh
# right after it forks a launch (GPUPOOL_TEST_SPAWN_HOLD); only tests build it.
$(BUILD)/tests/daemon/gpupoold-pausekill: $(OBJ)/tests/daemon/pause-kill.o $(DAEMON_OBJS) \
		$(OBJ)/src/interpose/ledger.o $(BUILD)/libgpexec.a $(BUILD)/libgpupool.a \
		$(BUILD)/libgpcommon.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(shell pkg-config --libs $(DAEMON_PKGS)) -lwslay -lpthread -ldl $(LDLIBS)
TEST_SCRIPTS_DEPS += $(BUILD)/tests/daemon/gpupoold-pausekill $(BUILD)/tests/executors/cuda-holder
# test-launch-fork.sh preloads this into gpupoold to make its forks fail.
$(BUILD)/tests/daemon/failfork.so: tests/daemon/failfork.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -shared $< -o $@ -ldl
TEST_SCRIPTS_DEPS += $(BUILD)/tests/daemon/failfork.so
