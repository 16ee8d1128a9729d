# src/executors/slurm/part.mk — gpupool-slurm-session, the program the slurm
# executor runs inside a job for an interactive task (its terminal and
# session server) and to open a session with it (srun --overlap); installed
# beside gpupoold. It links the session server every executor shares, the
# NVML loader with which it samples its job's GPUs, and nothing of
# gpupoold's.
SLURM_SESSION_BIN := $(BUILD)/gpupool-slurm-session
BINS += $(SLURM_SESSION_BIN)
$(SLURM_SESSION_BIN): $(OBJ)/src/executors/slurm/prog/gpupool-slurm-session.o \
                      $(OBJ)/src/executors/session-server.o $(OBJ)/src/executors/nvml.o \
                      $(OBJ)/src/executors/slurm/gpuuse.o $(OBJ)/src/executors/util.o \
                      $(OBJ)/src/common/files.o $(OBJ)/src/common/error.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -ldl
