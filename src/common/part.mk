# src/common/part.mk — libgpcommon: helpers shared by the daemon, the CLI, the
# daemon tests and the benchmarks (units, the HTTP client). error.c is not in
# it: every library that needs the error list links it itself. ws.c computes
# the WebSocket handshake with libcrypto: whoever links it (the daemon, the
# CLI, their tests) links libcrypto and libwslay.
COMMON_SRCS := $(filter-out src/common/error.c,$(sort $(wildcard src/common/*.c)))
COMMON_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(COMMON_SRCS))
COMMON_LIB := $(BUILD)/libgpcommon.a
LIBS += $(COMMON_LIB)
$(COMMON_LIB): $(COMMON_OBJS)
$(OBJ)/src/common/ws.o: CPPFLAGS += $(shell pkg-config --cflags libcrypto)
