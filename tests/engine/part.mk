# tests/engine/part.mk — one test program per engine rule, each linked with
# libgpupool and the shared helpers in tests/engine/helpers.c.
ENGINE_TEST_SRCS := $(sort $(wildcard tests/engine/test-*.c))
ENGINE_TESTS := $(patsubst tests/engine/%.c,$(BUILD)/tests/engine/%,$(ENGINE_TEST_SRCS))
TESTS += $(ENGINE_TESTS)
$(ENGINE_TESTS): $(BUILD)/tests/engine/%: $(OBJ)/tests/engine/%.o $(OBJ)/tests/engine/helpers.o $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
