# tests/executors/part.mk — one test program per module of the executors,
# each linked with libgpexec and the shared helpers in tests/executors/helpers.c.
# The NVML path runs on the fake libnvidia-ml.so.1 of tests/fake (over the
# fake libcuda's GPUs), which the tests dlopen from the build.
EXEC_TEST_SRCS := $(sort $(wildcard tests/executors/test-*.c))
EXEC_TESTS := $(patsubst tests/executors/%.c,$(BUILD)/tests/executors/%,$(EXEC_TEST_SRCS))
EXEC_FAKE_NVML := $(BUILD)/fake/libnvidia-ml.so.1
TESTS += $(EXEC_TESTS)
$(EXEC_TESTS): $(BUILD)/tests/executors/%: $(OBJ)/tests/executors/%.o \
		$(OBJ)/tests/executors/helpers.o $(EXEC_LIB) $(OBJ)/src/common/error.o \
		$(OBJ)/src/common/units.o $(OBJ)/src/common/files.o | $(EXEC_FAKE_NVML)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(EXEC_LDLIBS) $(LDLIBS)
# test-env also links the slice ledger's reader, which makes the local
# executor's poll() report the GPU memory a slice uses (see local.c).
$(BUILD)/tests/executors/test-env: $(OBJ)/src/interpose/ledger.o
# `make bench` times what the watchdog's scan adds to a poll, over the fake NVML.
$(BUILD)/bench/bench-watchdog: $(OBJ)/bench/bench-watchdog.o $(EXEC_LIB) $(OBJ)/src/common/error.o \
		$(OBJ)/src/common/units.o $(OBJ)/src/common/files.o | $(EXEC_FAKE_NVML)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(EXEC_LDLIBS) $(LDLIBS)
BENCHES += $(BUILD)/bench/bench-watchdog
# The names the environment builder can set, compared with the table of
# docs/workload-contract.md by test-contract-doc.sh.
$(BUILD)/tests/executors/contract-names: $(OBJ)/tests/executors/contract-names.o $(EXEC_LIB) \
		$(OBJ)/src/common/error.o $(OBJ)/src/common/units.o $(OBJ)/src/common/files.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(EXEC_LDLIBS) $(LDLIBS)
TEST_SCRIPTS += tests/executors/test-contract-doc.sh tests/executors/test-slurm-sampler.sh
TEST_SCRIPTS_DEPS += $(BUILD)/tests/executors/contract-names
# The CUDA workload of the pause tests, over the fake driver.
EXEC_CUDA_HOLDER := $(BUILD)/tests/executors/cuda-holder
$(EXEC_CUDA_HOLDER): $(OBJ)/tests/executors/cuda-holder.o $(BUILD)/fake/libcuda.so.1
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/fake/libcuda.so.1 -Wl,-rpath,'$$ORIGIN/../../fake' \
	    -lpthread -lrt
# test-pause links the ledger as well: a resume onto other GPUs moves a slice's books.
# Its slices run the interposer, the fake NVML and the compute share's loop.
$(BUILD)/tests/executors/test-pause: $(OBJ)/src/interpose/ledger.o | $(EXEC_CUDA_HOLDER) \
		$(BUILD)/fake/libcuda.so.1 $(BUILD)/fake/libnvidia-ml.so.1 $(BUILD)/libgpuslice.so \
		$(BUILD)/tests/daemon/share-loop
# `make bench`: pause and resume against the GPU memory held, on the fake driver.
$(BUILD)/bench/bench-pause: $(OBJ)/bench/bench-pause.o $(EXEC_LIB) $(OBJ)/src/common/error.o \
		$(OBJ)/src/common/units.o $(OBJ)/src/common/files.o | $(EXEC_CUDA_HOLDER) $(BUILD)/fake/libcuda.so.1
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(EXEC_LDLIBS) $(LDLIBS)
BENCHES += $(BUILD)/bench/bench-pause
# test-slurm-relay runs gpupool-slurm-session's relay, once with this
# preloaded to make its reads of standard input fail with EAGAIN.
$(BUILD)/tests/executors/stdin-eagain.so: tests/executors/stdin-eagain.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -shared $< -o $@ -ldl
$(BUILD)/tests/executors/test-slurm-relay: | $(SLURM_SESSION_BIN) \
		$(BUILD)/tests/executors/stdin-eagain.so
