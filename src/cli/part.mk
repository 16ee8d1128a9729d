# src/cli/part.mk — gpupool, the command; it speaks only HTTP to gpupoold.
CLI_SRCS := $(sort $(wildcard src/cli/*.c))
CLI_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(CLI_SRCS))
CLI_BIN := $(BUILD)/gpupool
BINS += $(CLI_BIN)
$(OBJ)/src/cli/%.o: CPPFLAGS += $(shell pkg-config --cflags jansson libcrypto)
$(CLI_BIN): $(CLI_OBJS) $(BUILD)/libgpcommon.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(shell pkg-config --libs jansson libcrypto) -lwslay -lpthread $(LDLIBS)
