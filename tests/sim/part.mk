# tests/sim/part.mk — one test program per simulator module, each linked with
# the simulator's library and libgpupool, and the shell test of its command
# line. (That it uses the engine's public API only is checked with every other
# part's rules by tests/style/test-architecture.sh.)
SIM_TEST_SRCS := $(sort $(wildcard tests/sim/test-*.c))
SIM_TESTS := $(patsubst tests/sim/%.c,$(BUILD)/tests/sim/%,$(SIM_TEST_SRCS))
TESTS += $(SIM_TESTS)
$(SIM_TESTS): $(BUILD)/tests/sim/%: $(OBJ)/tests/sim/%.o $(SIM_LIB) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(SIM_LDLIBS) $(LDLIBS)

TEST_SCRIPTS += tests/sim/test-cli.sh tests/sim/test-sample.sh
TEST_SCRIPTS_DEPS += $(SIM_LIB_OBJS) $(OBJ)/src/sim/main.o $(BUILD)/gpupool-sim
