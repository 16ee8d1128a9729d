# tests/common/part.mk — tests of libgpcommon (units, the error list, the HTTP
# client's response reader against hostile answers, the WebSocket frame the
# CLI writes and the handshake's accept value), linked with the library and the error list, and what a test
# names in COMMON_TEST_LIBS_<name>.
COMMON_TEST_SRCS := $(sort $(wildcard tests/common/test-*.c))
COMMON_TESTS := $(patsubst tests/common/%.c,$(BUILD)/tests/common/%,$(COMMON_TEST_SRCS))
TESTS += $(COMMON_TESTS)
$(COMMON_TESTS): $(BUILD)/tests/common/%: $(OBJ)/tests/common/%.o $(BUILD)/libgpcommon.a \
		$(OBJ)/src/common/error.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(COMMON_TEST_LIBS_$*) $(CHECK_LIBS) $(LDLIBS)
COMMON_TEST_LIBS_test-ws := -lwslay $(shell pkg-config --libs libcrypto)
# What the one list of a submission's fields says, for test-submit-fields.sh.
$(BUILD)/tests/common/submit-fields: $(OBJ)/tests/common/submit-fields.o $(BUILD)/libgpcommon.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)
TEST_SCRIPTS += tests/common/test-submit-fields.sh
TEST_SCRIPTS_DEPS += $(BUILD)/tests/common/submit-fields $(BUILD)/gpupool
# What the one list of a queue's fields says, for test-queue-fields.sh.
$(BUILD)/tests/common/queue-fields: $(OBJ)/tests/common/queue-fields.o $(BUILD)/libgpcommon.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)
TEST_SCRIPTS += tests/common/test-queue-fields.sh
TEST_SCRIPTS_DEPS += $(BUILD)/tests/common/queue-fields $(BUILD)/gpupool $(BUILD)/gpupoold
