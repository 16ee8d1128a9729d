# src/executors/part.mk — libgpexec, the executors (a static library): the
# registry with the gp_exec_* wrappers the daemon calls, and the `local`
# executor. It uses the engine's types but none of its functions; whoever
# links it adds -ldl (NVML is loaded at run time) and libgpcommon's error.o
# and units.o (gp_strerror, and sizes parsed as the daemon and the CLI do).
EXEC_SRCS := src/executors/registry.c $(sort $(wildcard src/executors/local/*.c))
EXEC_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(EXEC_SRCS))
EXEC_LIB := $(BUILD)/libgpexec.a
EXEC_LDLIBS := -ldl
LIBS += $(EXEC_LIB)
$(EXEC_LIB): $(EXEC_OBJS)
