/*
 * job-gpus.c — fuzz target for the slurm executor's reading of the record a
 * job's script writes of the GPUs Slurm gave it
 * (gpx__slurm_parse_gpus_record), which a job of another user writes as
 * that user: a record it accepts names a job, a clean node name and only
 * GPUs below 32, counted right.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "executors/slurm/slurm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    if (text == NULL)
        return 0;
    long job;
    char node[GP_NAME_MAX + 1];
    uint32_t idx;
    int count;
    if (gpx__slurm_parse_gpus_record(text, &job, node, sizeof node, &idx, &count) == 0 &&
        (job <= 0 || node[0] == '\0' || strpbrk(node, "/ \n") != NULL ||
         count != __builtin_popcount(idx)))
        __builtin_trap();
    free(text);
    return 0;
}
