# tests/fake/part.mk — TEST DOUBLES: a fake libcuda.so.1 and libnvidia-ml.so.1
# (see tests/fake/fake.h) that the interposer's tests load instead of
# NVIDIA's driver. Never installed, never loaded in production.

GP_FAKE_CUDA_OBJS := $(OBJ)/tests/fake/fake_cuda.o $(OBJ)/tests/fake/fake_state.o \
                     $(OBJ)/tests/fake/fake_ckpt.o \
                     $(OBJ)/src/interpose/config.o
GP_FAKE_NVML_OBJS := $(OBJ)/tests/fake/fake_nvml.o

$(GP_FAKE_CUDA_OBJS) $(GP_FAKE_NVML_OBJS): CFLAGS += -fvisibility=hidden

$(BUILD)/fake/libcuda.so.1: $(GP_FAKE_CUDA_OBJS) $(BUILD)/libgpcommon.a
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS) -Wl,-Bsymbolic -Wl,--exclude-libs,ALL -Wl,-soname,libcuda.so.1 \
	    -o $@ $^ -lpthread -lrt

$(BUILD)/fake/libnvidia-ml.so.1: $(GP_FAKE_NVML_OBJS) $(BUILD)/fake/libcuda.so.1
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS) -Wl,-Bsymbolic -Wl,-soname,libnvidia-ml.so.1 -o $@ \
	    $(GP_FAKE_NVML_OBJS) $(BUILD)/fake/libcuda.so.1 -Wl,-rpath,'$$ORIGIN'

LIBS += $(BUILD)/fake/libcuda.so.1 $(BUILD)/fake/libnvidia-ml.so.1

# The fake's own test: its checkpoint API against the driver's state machine.
$(BUILD)/tests/fake/test-checkpoint: $(OBJ)/tests/fake/test-checkpoint.o $(BUILD)/fake/libcuda.so.1
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/fake/libcuda.so.1 -Wl,-rpath,'$$ORIGIN/../../fake' \
	    -lpthread -lrt $(CHECK_LIBS)

TESTS += $(BUILD)/tests/fake/test-checkpoint
