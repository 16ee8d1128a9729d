# gpupool — top-level build.
#
# Every part of the system describes its own targets in a fragment next to its
# sources (src/<part>/part.mk, tests/<part>/part.mk, bench/part.mk); this file
# only holds the toolchain settings, the generic rules and the top-level goals.
#
#   make            build everything into build/
#   make test       build and run every test, again under ASan + UBSan, and the
#                   threaded parts under TSan (tests/all.sh); ends with the total
#   make check      run the tests of one build only (BUILD=..., SAN=...)
#   make bench      build and run the benchmarks in bench/
#   make fuzz       build the fuzz targets with libFuzzer and run each for
#                   FUZZ_SECONDS (default 60), one at a time (fuzz/part.mk)
#   make test-tsan  run the tests of threaded parts under ThreadSanitizer
#   make run        build and start the main job with its embedded defaults
#   make install    install under PREFIX (default /usr/local; DESTDIR for staging)
#   make deb        build a Debian package with dpkg-buildpackage (contrib/install.mk)
#
# SAN=1 selects the sanitizer build (AddressSanitizer + UndefinedBehaviorSanitizer),
# which lives in build/asan so that both builds can coexist.

SAN ?=
ifeq ($(SAN),1)
BUILD ?= build/asan
OPT ?= -O1 -g -fno-omit-frame-pointer
SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all
else
BUILD ?= build
OPT ?= -O2 -g
SANFLAGS =
endif

CC ?= cc
WARN = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
       -Wformat=2 -Wundef -Wpointer-arith -Wvla -Wcast-qual -Wwrite-strings
CPPFLAGS = -D_GNU_SOURCE -Isrc -Itests/lib
CFLAGS = -std=c11 $(OPT) $(WARN) $(SANFLAGS) -fPIC -MMD -MP
LDFLAGS = $(SANFLAGS)
LDLIBS = -lm
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)

OBJ = $(BUILD)/obj

# Filled in by the fragments.
LIBS :=
BINS :=
TSAN_GOALS :=
TSAN_TESTS :=
TESTS :=
TEST_SCRIPTS :=
BENCHES :=

.PHONY: all test check bench run clean format
all:

# Libraries first, then what links them: prerequisites expand as they are read.
include $(sort $(wildcard src/*/part.mk src/*/*/part.mk))
include $(sort $(wildcard tests/*/part.mk))
include $(wildcard bench/part.mk)
include $(wildcard fuzz/part.mk)
include contrib/install.mk

all: $(LIBS) $(BINS) $(TESTS) $(TEST_SCRIPTS_DEPS) $(BENCHES)

# V=1 prints whole command lines.
Q = $(if $(V),,@)

$(OBJ)/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# Static archive of a part: $(call gp_archive,NAME,OBJECTS)
$(BUILD)/lib%.a:
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

check: $(TESTS) $(TEST_SCRIPTS_DEPS)
	@tests/run.sh $(BUILD) $(TESTS) $(TEST_SCRIPTS)

test:
	@tests/all.sh

# The main job: the pool service on its embedded defaults (RUN_ARGS adds flags),
# with the command and the simulator built beside it.
run: $(BUILD)/gpupoold $(BUILD)/gpupool $(BUILD)/gpupool-sim $(BUILD)/libgpuslice.so
	$(BUILD)/gpupoold $(RUN_ARGS)

bench: $(BENCHES)
	@for b in $(BENCHES); do echo "== $$b"; $$b || exit 1; done

# ThreadSanitizer pass (its own build, build/tsan) over the parts with
# threads of their own (the interposer, the daemon): each part adds what to
# build to TSAN_GOALS and what to run to TSAN_TESTS; one run adds them up.
# die_after_fork=0: the ledger's tests fork children from a process whose
# fake driver already runs a thread, and the children start threads of their
# own, which TSan otherwise refuses outright.
.PHONY: test-tsan
test-tsan:
	$(MAKE) BUILD=build/tsan OPT='-O1 -g' SANFLAGS=-fsanitize=thread $(TSAN_GOALS)
	GPTEST_SCALE=10 TSAN_OPTIONS='halt_on_error=1 report_signal_unsafe=0 die_after_fork=0' \
	    tests/run.sh build/tsan $(TSAN_TESTS)

clean:
	rm -rf build

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
