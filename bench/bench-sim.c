/*
 * bench-sim.c — how long one FGD-experiment run takes through the engine:
 * the default openb pod list, policy fgd and gpupool, seed 42, five runs
 * each, median printed. Skips (exit 0) when ../shared/traces is absent.
 */
#include <stdio.h>
#include <stdlib.h>

#include "sim/fgd.h"

#define RUNS   5
#define TRACES "../shared/traces/alibaba-gpu-2023/"

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void) {
    sim_node *nodes;
    sim_pod *pods;
    size_t nn, np;
    char err[512];
    if (sim_read_nodes(TRACES "openb_node_list_gpu_node.csv", &nodes, &nn, err, sizeof err) < 0 ||
        sim_read_pods(TRACES "openb_pod_list_default.csv", &pods, &np, err, sizeof err) < 0) {
        printf("bench-sim: skipped (%s)\n", err);
        return 0;
    }
    static const gp_placement pols[] = {GP_PLACE_BESTFIT, GP_PLACE_FGD, GP_PLACE_GPUPOOL};
    sim_fgd_result *r = malloc(sizeof *r);
    for (size_t k = 0; r && k < sizeof pols / sizeof *pols; k++) {
        double t[RUNS];
        for (int i = 0; i < RUNS; i++) {
            sim_fgd_opts o = {pols[k], 42, 1.3};
            if (sim_fgd_run(nodes, nn, pods, np, &o, r, err, sizeof err) < 0) {
                fprintf(stderr, "bench-sim: %s\n", err);
                return 1;
            }
            t[i] = r->seconds;
        }
        qsort(t, RUNS, sizeof *t, cmp);
        printf("fgd run, default pod list, %-8s: median %.3f s (min %.3f, max %.3f), %zu pods\n",
               gp_placement_name(pols[k]), t[RUNS / 2], t[0], t[RUNS - 1], r->arrived);
    }
    free(r);
    free(nodes);
    free(pods);
    return 0;
}
