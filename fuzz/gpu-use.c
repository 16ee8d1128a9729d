/*
 * gpu-use.c — fuzz target for the slurm executor's reading of an
 * interactive task's GPU use record (gpx__gpu_use_parse), which the task's
 * user can write anything into: a record it accepts holds figures in range
 * and writes back as the same record.
 */
#include <stdint.h>
#include <string.h>

#include "executors/slurm/gpuuse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gpx__gpu_use u, again;
    if (gpx__gpu_use_parse((const char *)data, size, &u) < 0)
        return 0;
    if (u.at < 0 || u.n < 0 || u.n > GPX__GPU_USE_MAX)
        __builtin_trap();
    for (int i = 0; i < u.n; i++)
        if (u.busy[i] < -1 || u.busy[i] > 1000 || u.mem[i] < -1)
            __builtin_trap();
    char rec[GPX__GPU_USE_RECORD];
    if (gpx__gpu_use_format(&u, rec) < 0 || gpx__gpu_use_parse(rec, sizeof rec, &again) < 0 ||
        memcmp(&u, &again, sizeof u) != 0)
        __builtin_trap();
    return 0;
}
