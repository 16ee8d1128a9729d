/*
 * sim-trace.c — fuzz target for the simulator's readers of outside input:
 * node lists, pod lists and projects files (with the quota scaling built on
 * an accepted projects file). Built without libFuzzer, fuzz/driver.c replays
 * files and directories through it (see fuzz/part.mk).
 */
#include <stdint.h>
#include <stdlib.h>

#include "sim/projects.h"
#include "sim/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    sim_node *n;
    sim_pod *p;
    size_t cnt;
    if (sim_read_nodes_mem("fuzz", (const char *)data, size, &n, &cnt, err, sizeof err) == 0)
        free(n);
    if (sim_read_pods_mem("fuzz", (const char *)data, size, &p, &cnt, err, sizeof err) == 0)
        free(p);
    sim_project *pr;
    if (sim_read_projects_mem("fuzz", (const char *)data, size, &pr, &cnt, err, sizeof err) == 0) {
        int64_t *d = malloc(cnt * sizeof *d);
        if (d)
            sim_scale_quotas(pr, cnt, 8000, d);
        free(d);
        free(pr);
    }
    return 0;
}
