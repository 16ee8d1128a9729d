# src/daemon/part.mk — gpupoold: the HTTP/JSON API, the SQLite store, the
# scheduling loop over libgpupool and the executors of libgpexec.
DAEMON_PKGS := libmicrohttpd jansson sqlite3 libcrypto
DAEMON_SRCS := $(sort $(wildcard src/daemon/*.c))
DAEMON_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(DAEMON_SRCS)) $(OBJ)/src/daemon/console-assets.o
# The web console's files, built into the binary as C arrays (console.h).
# xterm.js, its fit addon and their licence are vendored, unmodified, in
# console/vendor/ (refresh.sh there; docs/dependencies.md).
CONSOLE_ASSETS := $(sort $(wildcard src/daemon/console/*.html src/daemon/console/*.css \
                                    src/daemon/console/*.js)) \
                  $(sort $(wildcard src/daemon/console/vendor/*.js src/daemon/console/vendor/*.css \
                                    src/daemon/console/vendor/*.txt))
$(OBJ)/src/daemon/console-assets.c: $(CONSOLE_ASSETS) src/daemon/console/embed.sh
	@mkdir -p $(@D)
	$(Q)sh src/daemon/console/embed.sh $(CONSOLE_ASSETS) >$@.tmp && mv $@.tmp $@
$(OBJ)/src/daemon/console-assets.o: $(OBJ)/src/daemon/console-assets.c
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
DAEMON_BIN := $(BUILD)/gpupoold
BINS += $(DAEMON_BIN)
$(OBJ)/src/daemon/%.o: CPPFLAGS += $(shell pkg-config --cflags $(DAEMON_PKGS))
$(DAEMON_BIN): $(DAEMON_OBJS) $(OBJ)/src/interpose/ledger.o $(BUILD)/libgpexec.a $(BUILD)/libgpupool.a $(BUILD)/libgpcommon.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(shell pkg-config --libs $(DAEMON_PKGS)) -lwslay -lpthread -ldl $(LDLIBS)

BENCH_API_SRCS := $(sort $(wildcard bench/bench-api*.c))
BENCH_API := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_API_SRCS))
BENCHES += $(BENCH_API)
$(BENCH_API): $(BUILD)/bench/%: $(OBJ)/bench/%.o $(BUILD)/libgpcommon.a $(DAEMON_BIN)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $(filter %.o %.a,$^) -o $@ $(shell pkg-config --libs jansson) -lpthread $(LDLIBS)
$(OBJ)/bench/%.o: CPPFLAGS += $(shell pkg-config --cflags jansson)
