# src/interpose/part.mk — the interposer: libgpuslice.so (LD_PRELOAD into a
# workload) and libgpledger.a (the slice-ledger reader the node side links).
#
# The library is compiled with hidden visibility: it exports only the CUDA
# and NVML entry points it wraps, dlsym, dlvsym, dlopen and dlmopen
# (tests/interpose/test-resolve checks this with nm -D). -Bsymbolic makes the library's references to its
# own wrappers (the tables handed out by dlsym and cuGetProcAddress) bind to
# itself, whatever else is loaded.

GP_SLICE_SRCS := $(addprefix src/interpose/,config.c context.c ledger.c libcdl.c memory.c \
                   report.c resolve.c share.c slice.c track.c truth.c)
GP_SLICE_OBJS := $(GP_SLICE_SRCS:%.c=$(OBJ)/%.o)

$(GP_SLICE_OBJS): CFLAGS += -fvisibility=hidden

# Sizes are read by libgpcommon's gp_parse_size, as everywhere in gpupool;
# --exclude-libs keeps what the library takes from it unexported.
$(BUILD)/libgpuslice.so: $(GP_SLICE_OBJS) $(BUILD)/libgpcommon.a
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS) -Wl,-Bsymbolic -Wl,--exclude-libs,ALL -Wl,-soname,libgpuslice.so \
	    -o $@ $^ -ldl -lpthread -lrt

$(BUILD)/libgpledger.a: $(OBJ)/src/interpose/ledger.o

LIBS += $(BUILD)/libgpuslice.so $(BUILD)/libgpledger.a
