/*
 * grid.h — `gpupool-sim fgd --grid`: the FGD experiment over workloads x
 * policies x seeds on parallel threads, and the comparison with the FGD
 * paper's published results (../shared/traces/fgd-atc23-expected-results).
 */
#ifndef GP_SIM_GRID_H
#define GP_SIM_GRID_H

#include <stddef.h>
#include <stdio.h>

#include "sim/fgd.h"

#define SIM_GRID_MAX_POLICIES GP_PLACE_COUNT
#define SIM_GRID_MAX_SEEDS    64

typedef struct sim_grid_opts {
    const char *nodes_path; /* the node list */
    const char *pods_dir;   /* holds openb_pod_list_<workload>.csv */
    const char **workloads; /* names such as "default", "cpu050" */
    size_t nworkloads;
    gp_placement policies[SIM_GRID_MAX_POLICIES];
    size_t npolicies;
    uint64_t seeds[SIM_GRID_MAX_SEEDS];
    size_t nseeds;
    double tune;
    int jobs;                 /* threads */
    const char *expected_dir; /* NULL: no comparison */
    int progress;             /* print progress to stderr */
} sim_grid_opts;

/* One run's numbers at 100% and 130% arrived demand (allocation %). */
typedef struct sim_grid_cell {
    double alloc100, alloc130;
    int has100, has130; /* 0: no pod arrived near that demand */
    double seconds;
    int done;
} sim_grid_cell;

/* Runs the grid and prints the per-workload, per-policy means (and, with
 * expected_dir, the published means and the differences) to out; with json,
 * one JSON object instead. Returns 0 or a negative code with err filled. */
int sim_grid_run(const sim_grid_opts *o, int json, FILE *out, char *err, size_t errlen);

#endif /* GP_SIM_GRID_H */
