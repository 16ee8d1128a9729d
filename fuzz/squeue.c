/*
 * squeue.c — fuzz target for the slurm executor's reading of squeue's text
 * answer (gpx__slurm_parse_jobs): one job a line, "<id>|<state>|<exit
 * code>|<reason>|<nodes>|<name>", where the name is whatever a user called
 * a job.
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
    gpx__slurm_job *jobs;
    size_t n;
    if (gpx__slurm_parse_jobs(text, &jobs, &n) == 0) {
        for (size_t i = 0; i < n; i++)
            if (jobs[i].id <= 0 || jobs[i].wstatus < 0 || jobs[i].state[0] == '\0' ||
                memchr(jobs[i].state, '\0', sizeof jobs[i].state) == NULL ||
                memchr(jobs[i].name, '\0', sizeof jobs[i].name) == NULL ||
                memchr(jobs[i].nodes, '\0', sizeof jobs[i].nodes) == NULL ||
                strchr(jobs[i].state, '|') != NULL || strchr(jobs[i].nodes, '|') != NULL ||
                strchr(jobs[i].name, '\n') != NULL)
                __builtin_trap();
        free(jobs);
    }
    free(text);
    return 0;
}
