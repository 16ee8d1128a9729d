# src/sim/part.mk — gpupool-sim, the trace-replay simulator, built on the
# engine's public API only (tests/style/test-architecture.sh checks that), plus its
# library of readers and metrics that the sim tests, the fuzz target
# (fuzz/part.mk) and the benchmark link.
SIM_LIB_SRCS := $(filter-out src/sim/main.c,$(sort $(wildcard src/sim/*.c)))
SIM_LIB_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(SIM_LIB_SRCS))
SIM_LIB := $(BUILD)/libgpsim.a
SIM_LDLIBS := $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson) -lpthread
LIBS += $(SIM_LIB)
BINS += $(BUILD)/gpupool-sim
$(SIM_LIB): $(SIM_LIB_OBJS)
$(BUILD)/gpupool-sim: $(OBJ)/src/sim/main.o $(SIM_LIB) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(SIM_LDLIBS) $(LDLIBS)

BENCHES += $(BUILD)/bench-sim
$(BUILD)/bench-sim: $(OBJ)/bench/bench-sim.o $(SIM_LIB) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(SIM_LDLIBS) $(LDLIBS)
