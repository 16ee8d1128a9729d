# tests/interpose/part.mk — the interposer's tests (run without a GPU, over
# the fake driver of tests/fake), its benchmark, and a ThreadSanitizer pass.
#
# Test programs link libgpuslice.so directly (rpath $ORIGIN/../..), which
# puts the interposer in the process exactly as LD_PRELOAD would, and also
# works under the sanitizers (whose runtime must come first in the link
# map). slice-child is a helper the multi-process tests exec.

GP_SLICE_TEST_NAMES := test-resolve test-memory test-ledger test-share
GP_SLICE_TESTS := $(GP_SLICE_TEST_NAMES:%=$(BUILD)/tests/interpose/%)
GP_SLICE_HELPER := $(BUILD)/tests/interpose/slice-child $(BUILD)/tests/interpose/libbare-driver.so \
                   $(BUILD)/tests/interpose/libdeep.so $(BUILD)/tests/interpose/linked-driver
GP_SLICE_RUNTIME := $(BUILD)/libgpuslice.so $(BUILD)/libgpledger.a \
                    $(BUILD)/fake/libcuda.so.1 $(BUILD)/fake/libnvidia-ml.so.1
GP_CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)
GP_SLICE_LINK = -L$(BUILD) -lgpuslice -Wl,-rpath,'$$ORIGIN/../..' $(BUILD)/libgpledger.a \
                -lpthread -ldl -lrt

$(GP_SLICE_TESTS): $(BUILD)/tests/interpose/%: $(OBJ)/tests/interpose/%.o \
                   $(OBJ)/tests/interpose/harness.o $(GP_SLICE_RUNTIME) $(GP_SLICE_HELPER)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(GP_SLICE_LINK) $(GP_CHECK_LIBS)

$(BUILD)/tests/interpose/slice-child: $(OBJ)/tests/interpose/slice-child.o $(GP_SLICE_RUNTIME)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(GP_SLICE_LINK)

# A driver without symbol versions (no libc, so built without the
# sanitizers' flags, which would need their runtime).
$(BUILD)/tests/interpose/libbare-driver.so: tests/interpose/bare-driver.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O1 -fPIC -shared -nostdlib -o $@ $<

# A library that calls the (fake) driver directly, for dlopen with
# RTLD_DEEPBIND and dlmopen (plain flags: it is only a call).
$(BUILD)/tests/interpose/libdeep.so: tests/interpose/deep-lib.c $(BUILD)/fake/libcuda.so.1
	@mkdir -p $(@D)
	$(CC) -std=c11 -O1 -fPIC -shared -o $@ $< $(BUILD)/fake/libcuda.so.1 \
	    -Wl,-rpath,'$$ORIGIN/../../fake'

# A workload linked with -lcuda (the fake), not with the interposer: test-
# resolve preloads the driver ahead of the interposer into it.
$(BUILD)/tests/interpose/linked-driver: $(OBJ)/tests/interpose/linked-driver.o \
                                        $(BUILD)/fake/libcuda.so.1
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/fake/libcuda.so.1 -Wl,-rpath,'$$ORIGIN/../../fake'

TESTS += $(GP_SLICE_TESTS)

# `make bench` measures the interposer's added cost against the fake driver.
$(BUILD)/bench/bench-interpose: $(OBJ)/bench/bench-interpose.o $(GP_SLICE_RUNTIME)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< -L$(BUILD) -lgpuslice -Wl,-rpath,'$$ORIGIN/..' -lpthread -ldl

BENCHES += $(BUILD)/bench/bench-interpose

# The interposer's tests in the ThreadSanitizer pass (the top Makefile's
# test-tsan), with the long loops cut tenfold (GPTEST_SCALE) since TSan is
# that much slower.
TSAN_GOALS += build/tsan/libgpuslice.so $(GP_SLICE_TEST_NAMES:%=build/tsan/tests/interpose/%)
TSAN_TESTS += $(GP_SLICE_TEST_NAMES:%=build/tsan/tests/interpose/%)
