# src/engine/part.mk — libgpupool, the scheduling engine (a static library).
# It depends on nothing but libc and the shared error list in src/common.
ENGINE_SRCS := src/common/error.c $(sort $(wildcard src/engine/*.c))
ENGINE_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(ENGINE_SRCS))
ENGINE_LIB := $(BUILD)/libgpupool.a
LIBS += $(ENGINE_LIB)
$(ENGINE_LIB): $(ENGINE_OBJS)
