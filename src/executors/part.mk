# src/executors/part.mk — libgpexec, the executors (a static library): the
# registry with the gp_exec_* wrappers the daemon calls, and the `local`
# executor and the `slurm` executor (which reads Slurm's JSON with jansson).
# It uses the engine's types but none of its functions; whoever
# links it adds -ldl (NVML is loaded at run time) and libgpcommon's error.o,
# units.o and files.o (gp_strerror, sizes parsed as the daemon and the CLI do,
# gp_mkdirs).
EXEC_SRCS := src/executors/config.c src/executors/contract.c src/executors/nvml.c \
             src/executors/registry.c \
             src/executors/session-server.c src/executors/util.c \
             $(sort $(wildcard src/executors/local/*.c)) \
             $(sort $(wildcard src/executors/slurm/*.c))
EXEC_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(EXEC_SRCS))
EXEC_LIB := $(BUILD)/libgpexec.a
EXEC_LDLIBS := -ldl $(shell pkg-config --libs jansson)
$(OBJ)/src/executors/slurm/%.o: CPPFLAGS += $(shell pkg-config --cflags jansson)
LIBS += $(EXEC_LIB)
$(EXEC_LIB): $(EXEC_OBJS)
