/*
 * sim-trace.c — fuzz target for the simulator's readers of outside input:
 * node lists, pod lists and projects files (with the quota scaling built on
 * an accepted projects file). With libFuzzer (-fsanitize=fuzzer) LLVMFuzzerTestOneInput is
 * the entry point; built without it, main() feeds it each file named on the
 * command line, so the corpus can be replayed under the sanitizers.
 */
#include <stdint.h>
#include <stdio.h>
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

#ifndef GP_LIBFUZZER
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            perror(argv[i]);
            return 1;
        }
        static uint8_t buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
    }
    return 0;
}
#endif
