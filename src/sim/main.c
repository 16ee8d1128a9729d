/*
 * main.c — the gpupool-sim command line: `fgd` (the FGD paper's experiment,
 * one run or the whole grid), `replay` (a trace in virtual time through the
 * full engine cycle) and `plan` (the capacity-planning report). Options are
 * parsed here (replay's and plan's in plan.c); the work is in fgd.c, grid.c,
 * replay.c, plan.c and html.c. Exit
 * status: 0 on success, 1 on bad input or a failed run, 2 on bad usage.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/fgd.h"
#include "sim/grid.h"
#include "sim/replay.h"

#define DEFAULT_TRACES "../shared/traces"

static void usage(FILE *f) {
    fputs("usage: gpupool-sim fgd --nodes NODES.csv --pods PODS.csv [--policy P] [--seed S]\n"
          "                       [--tune R] [--json]\n"
          "       gpupool-sim fgd --grid [--traces DIR] [--workloads W,...] [--policies P,...]\n"
          "                       [--seeds A-B] [--jobs N] [--expected DIR] [--json]\n"
          "       gpupool-sim replay --nodes NODES.csv --pods PODS.csv [--projects FILE]\n"
          "                       [--mode static|pooled|pooled-fractional|all] [--policy P]\n"
          "                       [--seed S] [--grace S] [--min-runtime S] [--tick S]\n"
          "                       [--scale F] [--compress F] [--json] [--quiet]\n"
          "       gpupool-sim plan --nodes NODES.csv --pods PODS.csv [--projects FILE]\n"
          "                       [--p95-target SECONDS] [--price-per-gpu N] [--currency C]\n"
          "                       [--out PREFIX] [replay options]\n"
          "policies: random dotprod gpuclustering gpupacking bestfit fgd gpupool binpack spread\n",
          f);
}

/* The value of option argv[*i] (the next argument), advancing *i. */
static const char *optval(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        fprintf(stderr, "gpupool-sim: option %s needs a value\n", argv[*i]);
        exit(2);
    }
    return argv[++*i];
}

static uint64_t parse_u64(const char *opt, const char *s) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || s[0] == '-') {
        fprintf(stderr, "gpupool-sim: %s: '%s' is not a non-negative integer\n", opt, s);
        exit(2);
    }
    return v;
}

static double parse_double(const char *opt, const char *s, double min, double max) {
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= min && v <= max)) {
        fprintf(stderr, "gpupool-sim: %s: '%s' is not a number in [%g, %g]\n", opt, s, min, max);
        exit(2);
    }
    return v;
}

static gp_placement parse_policy(const char *s) {
    gp_placement p;
    if (gp_placement_parse(s, &p) < 0) {
        fprintf(stderr, "gpupool-sim: unknown policy '%s'\n", s);
        exit(2);
    }
    return p;
}

/* Splits a comma-separated list in place; returns the count. */
static size_t split_list(char *s, const char **out, size_t max) {
    size_t n = 0;
    for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}

static void print_fgd(const sim_fgd_result *r, const char *workload, const sim_fgd_opts *o,
                      int json) {
    static const char *const keys[SIM_CURVE_VALUES] = {"allocation", "frag", "frag_ratio"};
    if (json) {
        json_t *rows = json_array();
        for (int x = 0; x <= SIM_CURVE_MAX; x++) {
            json_t *row = json_pack("{s:i}", "arrived", x);
            for (int k = 0; k < SIM_CURVE_VALUES; k++)
                json_object_set_new(row, keys[k],
                                    r->rows[x].present ? json_real(r->rows[x].y[k]) : json_null());
            json_array_append_new(rows, row);
        }
        json_t *root =
            json_pack("{s:s, s:s, s:I, s:f, s:f, s:I, s:I, s:o}", "workload", workload, "policy",
                      gp_placement_name(o->policy), "seed", (json_int_t)o->seed, "tune", o->tune,
                      "seconds", r->seconds, "pods", (json_int_t)r->arrived, "failed",
                      (json_int_t)r->failed, "rows", rows);
        json_dumpf(root, stdout, JSON_COMPACT);
        fputc('\n', stdout);
        json_decref(root);
        return;
    }
    printf("# workload %s, policy %s, seed %llu, tune %.2f: %zu pods, %zu failed, %.3f s\n",
           workload, gp_placement_name(o->policy), (unsigned long long)o->seed, o->tune, r->arrived,
           r->failed, r->seconds);
    printf("%7s %10s %8s %10s\n", "arrived", "allocation", "frag", "frag_ratio");
    for (int x = 0; x <= SIM_CURVE_MAX; x++) {
        if (!r->rows[x].present)
            printf("%7d %10s %8s %10s\n", x, "-", "-", "-");
        else
            printf("%7d %10.2f %8.2f %10.2f\n", x, r->rows[x].y[0], r->rows[x].y[1],
                   r->rows[x].y[2]);
    }
}

/* The workload name of a pod list path: "openb_pod_list_default.csv" ->
 * "default"; otherwise the file name. */
static void workload_name(const char *path, char *out, size_t size) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!strncmp(base, "openb_pod_list_", 15))
        base += 15;
    snprintf(out, size, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && !strcmp(dot, ".csv"))
        *dot = '\0';
}

static int cmd_fgd(int argc, char **argv) {
    const char *nodes_path = NULL, *pods_path = NULL, *traces = DEFAULT_TRACES;
    const char *expected = NULL;
    char *workloads_arg = NULL, *policies_arg = NULL;
    sim_fgd_opts o = {GP_PLACE_FGD, 42, 1.3};
    int json = 0, grid = 0, jobs = 2;
    uint64_t seed_lo = 42, seed_hi = 51;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--nodes"))
            nodes_path = optval(argc, argv, &i);
        else if (!strcmp(a, "--pods"))
            pods_path = optval(argc, argv, &i);
        else if (!strcmp(a, "--policy"))
            o.policy = parse_policy(optval(argc, argv, &i));
        else if (!strcmp(a, "--seed"))
            o.seed = parse_u64(a, optval(argc, argv, &i));
        else if (!strcmp(a, "--tune"))
            o.tune = parse_double(a, optval(argc, argv, &i), 0, 100);
        else if (!strcmp(a, "--json"))
            json = 1;
        else if (!strcmp(a, "--grid"))
            grid = 1;
        else if (!strcmp(a, "--traces"))
            traces = optval(argc, argv, &i);
        else if (!strcmp(a, "--expected"))
            expected = optval(argc, argv, &i);
        else if (!strcmp(a, "--workloads"))
            workloads_arg = (char *)(uintptr_t)optval(argc, argv, &i);
        else if (!strcmp(a, "--policies"))
            policies_arg = (char *)(uintptr_t)optval(argc, argv, &i);
        else if (!strcmp(a, "--jobs"))
            jobs = (int)parse_double(a, optval(argc, argv, &i), 1, 64);
        else if (!strcmp(a, "--seeds")) {
            const char *s = optval(argc, argv, &i);
            char buf[64];
            snprintf(buf, sizeof buf, "%s", s);
            char *dash = strchr(buf, '-');
            if (dash)
                *dash = '\0';
            seed_lo = parse_u64(a, buf);
            seed_hi = dash ? parse_u64(a, dash + 1) : seed_lo;
            if (seed_hi < seed_lo || seed_hi - seed_lo >= SIM_GRID_MAX_SEEDS) {
                fprintf(stderr, "gpupool-sim: --seeds: bad range '%s'\n", s);
                return 2;
            }
        } else {
            fprintf(stderr, "gpupool-sim fgd: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    char err[1024] = "";
    if (grid) {
        static const char *const paper[] = {"cpu050",      "cpu100",     "cpu200",     "default",
                                            "gpushare100", "gpushare40", "gpushare60", "gpuspec10",
                                            "gpuspec20",   "multigpu20", "multigpu30"};
        const char *wl[64];
        sim_grid_opts g;
        memset(&g, 0, sizeof g);
        char nodes_buf[1100], pods_buf[1024], exp_buf[1024];
        snprintf(pods_buf, sizeof pods_buf, "%s/alibaba-gpu-2023", traces);
        snprintf(nodes_buf, sizeof nodes_buf, "%s/openb_node_list_gpu_node.csv", pods_buf);
        g.nodes_path = nodes_path ? nodes_path : nodes_buf;
        g.pods_dir = pods_buf;
        if (workloads_arg) {
            g.nworkloads = split_list(workloads_arg, wl, 64);
        } else {
            g.nworkloads = sizeof paper / sizeof *paper;
            memcpy(wl, paper, sizeof paper);
        }
        g.workloads = wl;
        if (policies_arg) {
            const char *pl[SIM_GRID_MAX_POLICIES];
            g.npolicies = split_list(policies_arg, pl, SIM_GRID_MAX_POLICIES);
            for (size_t k = 0; k < g.npolicies; k++)
                g.policies[k] = parse_policy(pl[k]);
        } else {
            static const gp_placement all[] = {
                GP_PLACE_RANDOM,  GP_PLACE_DOTPROD, GP_PLACE_GPUCLUSTERING, GP_PLACE_GPUPACKING,
                GP_PLACE_BESTFIT, GP_PLACE_FGD,     GP_PLACE_GPUPOOL};
            g.npolicies = sizeof all / sizeof *all;
            memcpy(g.policies, all, sizeof all);
        }
        g.nseeds = (size_t)(seed_hi - seed_lo + 1);
        for (size_t k = 0; k < g.nseeds; k++)
            g.seeds[k] = seed_lo + k;
        g.tune = o.tune;
        g.jobs = jobs;
        if (expected) {
            snprintf(exp_buf, sizeof exp_buf, "%s", expected);
            g.expected_dir = exp_buf;
        }
        g.progress = 1;
        if (sim_grid_run(&g, json, stdout, err, sizeof err) < 0) {
            fprintf(stderr, "gpupool-sim: %s\n", err);
            return 1;
        }
        return 0;
    }
    if (!nodes_path || !pods_path) {
        fprintf(stderr, "gpupool-sim fgd: --nodes and --pods are required (or --grid)\n");
        return 2;
    }
    sim_node *nodes = NULL;
    sim_pod *pods = NULL;
    size_t nn = 0, np = 0;
    int rc = sim_read_nodes(nodes_path, &nodes, &nn, err, sizeof err);
    if (!rc)
        rc = sim_read_pods(pods_path, &pods, &np, err, sizeof err);
    sim_fgd_result *res = rc ? NULL : malloc(sizeof *res);
    if (!rc && !res) {
        snprintf(err, sizeof err, "out of memory");
        rc = GP_ENOMEM;
    }
    if (!rc)
        rc = sim_fgd_run(nodes, nn, pods, np, &o, res, err, sizeof err);
    if (!rc) {
        char wname[256];
        workload_name(pods_path, wname, sizeof wname);
        print_fgd(res, wname, &o, json);
    } else {
        fprintf(stderr, "gpupool-sim: %s\n", err);
    }
    free(res);
    free(nodes);
    free(pods);
    return rc ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    /* "gpupool-sim plan --help" and the like: the one usage text. */
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    }
    if (!strcmp(argv[1], "fgd"))
        return cmd_fgd(argc - 1, argv + 1);
    if (!strcmp(argv[1], "replay"))
        return sim_cmd_replay(argc - 1, argv + 1);
    if (!strcmp(argv[1], "plan"))
        return sim_cmd_plan(argc - 1, argv + 1);
    fprintf(stderr, "gpupool-sim: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
