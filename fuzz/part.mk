# fuzz/part.mk — one fuzz target per parser of outside input, each a
# LLVMFuzzerTestOneInput in fuzz/<name>.c with its seed corpus in
# fuzz/corpus/<name>/.
#
# In the ordinary builds (build/, build/asan/) each target is linked with
# fuzz/driver.c, a main() that replays files and directories: `make check`
# replays every corpus (tests/fuzz/test-corpora.sh), under ASan and UBSan in
# the SAN=1 pass. `make fuzz FUZZ_SECONDS=N` builds the targets again with
# clang and libFuzzer (build/fuzz/, FUZZ_LIBFUZZER=1) and runs each for N
# seconds, one after the other (scripts/fuzz.sh).
FUZZ_NAMES := $(patsubst fuzz/%.c,%,$(filter-out fuzz/driver.c,$(sort $(wildcard fuzz/*.c))))
FUZZ_BINS := $(addprefix $(BUILD)/fuzz/,$(FUZZ_NAMES))
BINS += $(FUZZ_BINS)

ifeq ($(FUZZ_LIBFUZZER),1)
FUZZ_MAIN :=
FUZZ_LINK := -fsanitize=fuzzer
$(OBJ)/fuzz/%.o: CPPFLAGS += -DGP_LIBFUZZER
else
FUZZ_MAIN := $(OBJ)/fuzz/driver.o
FUZZ_LINK :=
endif

FUZZ_JANSSON := $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson)
$(OBJ)/fuzz/%.o: CPPFLAGS += $(shell pkg-config --cflags jansson)
FUZZ_COMMON := $(BUILD)/libgpcommon.a $(OBJ)/src/common/error.o

# What each target links besides its own object and the driver.
FUZZ_DEPS_units := $(FUZZ_COMMON)
FUZZ_DEPS_channel := $(FUZZ_COMMON)
FUZZ_DEPS_ws-in := $(FUZZ_COMMON)
FUZZ_DEPS_http-response := $(FUZZ_COMMON)
FUZZ_DEPS_request := $(OBJ)/src/daemon/request.o $(OBJ)/src/daemon/util.o $(FUZZ_COMMON) $(ENGINE_LIB)
FUZZ_DEPS_queue-body := $(FUZZ_DEPS_request)
FUZZ_DEPS_daemon-config := $(OBJ)/src/daemon/config.o $(FUZZ_COMMON)
FUZZ_DEPS_inventory := $(EXEC_LIB) $(FUZZ_COMMON)
FUZZ_DEPS_squeue := $(EXEC_LIB) $(FUZZ_COMMON)
FUZZ_DEPS_gpu-use := $(EXEC_LIB) $(FUZZ_COMMON)
FUZZ_DEPS_job-gpus := $(EXEC_LIB) $(FUZZ_COMMON)
FUZZ_DEPS_executor-config := $(EXEC_LIB) $(OBJ)/src/interpose/ledger.o $(FUZZ_COMMON)
FUZZ_DEPS_interposer-env := $(OBJ)/src/interpose/config.o $(FUZZ_COMMON)
FUZZ_DEPS_sim-trace := $(SIM_LIB) $(ENGINE_LIB)
FUZZ_DEPS_http-head := $(OBJ)/src/daemon/http-head.o $(OBJ)/src/daemon/util.o $(FUZZ_COMMON)
# Targets that need more libraries than jansson.
FUZZ_LIBS_ws-in := -lwslay $(shell pkg-config --libs libcrypto)
FUZZ_LIBS_http-head := $(shell pkg-config --libs libmicrohttpd)
$(OBJ)/fuzz/http-head.o: CPPFLAGS += $(shell pkg-config --cflags libmicrohttpd)

.SECONDEXPANSION:
$(FUZZ_BINS): $(BUILD)/fuzz/%: $(OBJ)/fuzz/%.o $(FUZZ_MAIN) $$(FUZZ_DEPS_$$*)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $(FUZZ_LINK) $(filter %.o %.a,$^) -o $@ $(FUZZ_LIBS_$*) $(FUZZ_JANSSON) -ldl -lpthread $(LDLIBS)

# The libFuzzer build and run (clang from scripts/install-deps.sh).
FUZZ_SECONDS ?= 60
.PHONY: fuzz fuzz-build
fuzz-build:
	$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang FUZZ_LIBFUZZER=1 OPT="-O1 -g" \
	    SANFLAGS="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=all" \
	    $(patsubst %,build/fuzz/fuzz/%,$(FUZZ_NAMES))
fuzz: fuzz-build
	scripts/fuzz.sh build/fuzz $(FUZZ_SECONDS) $(FUZZ_NAMES)
