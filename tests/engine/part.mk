# tests/engine/part.mk — one test program per engine rule, each linked with
# libgpupool and the shared helpers in tests/engine/helpers.c.
ENGINE_TEST_SRCS := $(sort $(wildcard tests/engine/test-*.c))
ENGINE_TESTS := $(patsubst tests/engine/%.c,$(BUILD)/tests/engine/%,$(ENGINE_TEST_SRCS))
TESTS += $(ENGINE_TESTS)
$(ENGINE_TESTS): $(BUILD)/tests/engine/%: $(OBJ)/tests/engine/%.o $(OBJ)/tests/engine/helpers.o $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)

# The fair-share division against its second implementation, written from
# docs/fairshare.md alone (test-fairshare-ref.sh runs fairshare_ref.py).
$(BUILD)/tests/engine/fairshare-dump: $(OBJ)/tests/engine/fairshare-dump.o $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)
TEST_SCRIPTS += tests/engine/test-fairshare-ref.sh
TEST_SCRIPTS_DEPS += $(BUILD)/tests/engine/fairshare-dump
