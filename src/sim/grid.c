/*
 * grid.c — the FGD experiment over workloads x policies x seeds, run on a
 * few threads (one engine per run; the engine has no globals), and compared
 * with the published results (see grid.h).
 */
#include "sim/grid.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sim/csv.h"

typedef struct grid_job {
    size_t w, p, s; /* indices into workloads, policies, seeds */
} grid_job;

typedef struct grid_state {
    const sim_grid_opts *o;
    sim_node *nodes;
    size_t nnodes;
    sim_pod **pods; /* per workload */
    size_t *npods;
    sim_grid_cell *cells; /* [w][p][s] */
    grid_job *jobs;
    size_t njobs, next, finished;
    int rc;
    char err[512];
    pthread_mutex_t lock;
    double t0;
} grid_state;

static sim_grid_cell *cell_at(grid_state *g, size_t w, size_t p, size_t s) {
    return &g->cells[(w * g->o->npolicies + p) * g->o->nseeds + s];
}

static void *worker(void *arg) {
    grid_state *g = arg;
    for (;;) {
        pthread_mutex_lock(&g->lock);
        if (g->next >= g->njobs || g->rc) {
            pthread_mutex_unlock(&g->lock);
            return NULL;
        }
        grid_job j = g->jobs[g->next++];
        pthread_mutex_unlock(&g->lock);

        sim_fgd_opts fo = {g->o->policies[j.p], g->o->seeds[j.s], g->o->tune};
        sim_fgd_result *res = malloc(sizeof *res);
        char err[512] = "";
        int rc = res ? sim_fgd_run(g->nodes, g->nnodes, g->pods[j.w], g->npods[j.w], &fo, res, err,
                                   sizeof err)
                     : GP_ENOMEM;
        pthread_mutex_lock(&g->lock);
        if (rc < 0 && !g->rc) {
            g->rc = rc;
            snprintf(g->err, sizeof g->err, "%s", err);
        } else if (rc == 0) {
            sim_grid_cell *c = cell_at(g, j.w, j.p, j.s);
            c->alloc100 = res->rows[100].y[0];
            c->alloc130 = res->rows[130].y[0];
            c->has100 = res->rows[100].present;
            c->has130 = res->rows[130].present;
            c->seconds = res->seconds;
            c->done = 1;
        }
        g->finished++;
        if (g->o->progress)
            fprintf(stderr, "\r[%zu/%zu] %.0f s", g->finished, g->njobs, sim_now() - g->t0);
        pthread_mutex_unlock(&g->lock);
        free(res);
    }
}

/* The paper's policies under the names its results give them (the
 * sc_policy column). */
static const struct {
    gp_placement policy;
    const char *name;
} published[] = {
    {GP_PLACE_RANDOM, "01-Random"},
    {GP_PLACE_DOTPROD, "02-DotProd"},
    {GP_PLACE_GPUCLUSTERING, "03-GpuClustering"},
    {GP_PLACE_GPUPACKING, "04-GpuPacking"},
    {GP_PLACE_BESTFIT, "05-BestFit"},
    {GP_PLACE_FGD, "06-FGD"},
};

/* The published name of p ("06-FGD"), or NULL for a policy the paper did
 * not run. */
static const char *published_name(gp_placement p) {
    for (size_t i = 0; i < sizeof published / sizeof *published; i++)
        if (published[i].policy == p)
            return published[i].name;
    return NULL;
}

/* The runs' allocations at one arrived demand: their sum, sum of squares
 * and number (runs with no pod arrived near that demand are left out). */
typedef struct sums {
    double s, ss;
    int n;
} sums;

static void sums_add(sums *x, double v) {
    x->s += v;
    x->ss += v * v;
    x->n++;
}

/* The mean, or -1 if there is no run. */
static double mean_of(const sums *x) {
    return x->n ? x->s / x->n : -1;
}

/* The sample variance of the mean: var / n; -1 if fewer than two runs. */
static double var_of_mean(const sums *x) {
    if (x->n < 2)
        return -1;
    double v = (x->ss - x->s * x->s / x->n) / (x->n - 1);
    return (v > 0 ? v : 0) / x->n;
}

/* Two standard errors of the difference of two independent means (ours and
 * the published one), or -1 if either has fewer than two runs: differences
 * within it are what the seeds alone give. The same seed number gives a
 * different shuffle here than in the paper's simulator (a different random
 * generator), so the two means are independent samples. */
static double two_se(const sums *ours, const sums *pub) {
    double v1 = var_of_mean(ours), v2 = var_of_mean(pub);
    return v1 < 0 || v2 < 0 ? -1 : 2 * sqrt(v1 + v2);
}

/* Reads analysis_allo_discrete.csv and adds up the rows of the grid's
 * workloads and policies into pub[w][p][0] (100% arrived) and [1] (130%). */
static int read_published(const sim_grid_opts *o, sums *pub, char *err, size_t errlen) {
    char path[1024];
    snprintf(path, sizeof path, "%s/analysis_allo_discrete.csv", o->expected_dir);
    sim_csv c;
    int rc = sim_csv_open(&c, path, err, errlen);
    if (rc < 0)
        return rc;
    int cw = sim_csv_col(&c, "workload"), cp = sim_csv_col(&c, "sc_policy"),
        c100 = sim_csv_col(&c, "100"), c130 = sim_csv_col(&c, "130");
    if (cw < 0 || cp < 0 || c100 < 0 || c130 < 0) {
        snprintf(err, errlen, "%s:1: missing one of workload, sc_policy, 100, 130", path);
        sim_csv_close(&c);
        return GP_EPARSE;
    }
    while ((rc = sim_csv_next(&c, err, errlen)) == 1) {
        const char *wname = sim_csv_get(&c, cw);
        if (!strncmp(wname, "openb_pod_list_", 15))
            wname += 15;
        for (size_t w = 0; w < o->nworkloads; w++) {
            if (strcmp(wname, o->workloads[w]))
                continue;
            for (size_t p = 0; p < o->npolicies; p++) {
                const char *pn = published_name(o->policies[p]);
                if (!pn || strcmp(pn, sim_csv_get(&c, cp)))
                    continue;
                double a, b;
                if ((rc = sim_csv_double(&c, c100, 0, 1000, &a, err, errlen)) < 0 ||
                    (rc = sim_csv_double(&c, c130, 0, 1000, &b, err, errlen)) < 0) {
                    sim_csv_close(&c);
                    return rc;
                }
                sums_add(&pub[2 * (w * o->npolicies + p)], a);
                sums_add(&pub[2 * (w * o->npolicies + p) + 1], b);
            }
        }
    }
    sim_csv_close(&c);
    return rc < 0 ? rc : 0;
}

/* Our runs of (w, p) at 100% (k = 0) or 130% (k = 1) arrived. */
static sums cell_sums(grid_state *g, size_t w, size_t p, int k) {
    sums x = {0};
    for (size_t s = 0; s < g->o->nseeds; s++) {
        sim_grid_cell *c = cell_at(g, w, p, s);
        if (c->done && (k ? c->has130 : c->has100))
            sums_add(&x, k ? c->alloc130 : c->alloc100);
    }
    return x;
}

/* A JSON number, or null for the -1 of "not available". */
static json_t *json_or_null(double v) {
    return v < 0 ? json_null() : json_real(v);
}

/* A table cell: the value, or "-" for the -1 of "not available". */
static void print_cell(FILE *out, int width, double v) {
    if (v < 0)
        fprintf(out, " %*s", width, "-");
    else
        fprintf(out, " %*.2f", width, v);
}

static void report(grid_state *g, const sums *pub, int json, FILE *out, double seconds) {
    const sim_grid_opts *o = g->o;
    static const char *const at[2] = {"100", "130"};
    json_t *root = json ? json_object() : NULL, *rows = json ? json_array() : NULL;
    if (!json) {
        fprintf(out, "%-12s %-14s %8s %8s", "workload", "policy", "ours100", "ours130");
        if (pub)
            fprintf(out, " %8s %8s %7s %7s %6s %6s", "pub100", "pub130", "d100", "d130", "2se100",
                    "2se130");
        fputc('\n', out);
    }
    for (size_t w = 0; w < o->nworkloads; w++) {
        for (size_t p = 0; p < o->npolicies; p++) {
            double ours[2], publ[2] = {-1, -1}, se[2] = {-1, -1};
            int seeds = 0, has = 0;
            for (int k = 0; k < 2; k++) {
                sums me = cell_sums(g, w, p, k);
                ours[k] = mean_of(&me);
                seeds = me.n > seeds ? me.n : seeds;
                const sums *x = pub ? &pub[2 * (w * o->npolicies + p) + k] : NULL;
                if (x && x->n > 0) {
                    has = 1;
                    publ[k] = mean_of(x);
                    se[k] = two_se(&me, x);
                }
            }
            if (json) {
                json_t *r = json_pack("{s:s, s:s, s:i}", "workload", o->workloads[w], "policy",
                                      gp_placement_name(o->policies[p]), "seeds", seeds);
                char key[32];
                for (int k = 0; k < 2; k++) {
                    snprintf(key, sizeof key, "ours%s", at[k]);
                    json_object_set_new(r, key, json_or_null(ours[k]));
                    if (!has)
                        continue;
                    snprintf(key, sizeof key, "published%s", at[k]);
                    json_object_set_new(r, key, json_real(publ[k]));
                    snprintf(key, sizeof key, "diff%s", at[k]);
                    json_object_set_new(r, key,
                                        ours[k] < 0 ? json_null() : json_real(ours[k] - publ[k]));
                    snprintf(key, sizeof key, "two_se%s", at[k]);
                    json_object_set_new(r, key, json_or_null(se[k]));
                }
                json_array_append_new(rows, r);
                continue;
            }
            fprintf(out, "%-12s %-14s", o->workloads[w], gp_placement_name(o->policies[p]));
            for (int k = 0; k < 2; k++)
                print_cell(out, 8, ours[k]);
            if (has) {
                for (int k = 0; k < 2; k++)
                    print_cell(out, 8, publ[k]);
                for (int k = 0; k < 2; k++)
                    if (ours[k] < 0)
                        fprintf(out, " %7s", "-");
                    else
                        fprintf(out, " %+7.2f", ours[k] - publ[k]);
                for (int k = 0; k < 2; k++)
                    print_cell(out, 6, se[k]);
            }
            fputc('\n', out);
        }
    }
    if (json) {
        json_object_set_new(root, "tune", json_real(o->tune));
        json_object_set_new(root, "seconds", json_real(seconds));
        json_object_set_new(root, "rows", rows);
        json_dumpf(root, out, JSON_INDENT(1));
        fputc('\n', out);
        json_decref(root);
    } else {
        fprintf(out, "grid: %zu runs in %.1f s\n", g->njobs, seconds);
    }
}

int sim_grid_run(const sim_grid_opts *o, int json, FILE *out, char *err, size_t errlen) {
    grid_state g;
    memset(&g, 0, sizeof g);
    g.o = o;
    g.t0 = sim_now();
    int rc = sim_read_nodes(o->nodes_path, &g.nodes, &g.nnodes, err, errlen);
    sums *pub = NULL;
    g.pods = calloc(o->nworkloads ? o->nworkloads : 1, sizeof *g.pods);
    g.npods = calloc(o->nworkloads ? o->nworkloads : 1, sizeof *g.npods);
    size_t ncells = o->nworkloads * o->npolicies * o->nseeds;
    g.cells = calloc(ncells ? ncells : 1, sizeof *g.cells);
    g.jobs = calloc(ncells ? ncells : 1, sizeof *g.jobs);
    if (!rc && (!g.pods || !g.npods || !g.cells || !g.jobs)) {
        snprintf(err, errlen, "out of memory");
        rc = GP_ENOMEM;
    }
    for (size_t w = 0; !rc && w < o->nworkloads; w++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/openb_pod_list_%s.csv", o->pods_dir, o->workloads[w]);
        rc = sim_read_pods(path, &g.pods[w], &g.npods[w], err, errlen);
    }
    if (!rc && o->expected_dir) {
        pub = calloc(2 * o->nworkloads * o->npolicies + 1, sizeof *pub);
        rc = pub ? read_published(o, pub, err, errlen) : GP_ENOMEM;
    }
    if (!rc) {
        /* Workload-major order keeps each thread's pod list warm in cache. */
        for (size_t w = 0; w < o->nworkloads; w++)
            for (size_t p = 0; p < o->npolicies; p++)
                for (size_t s = 0; s < o->nseeds; s++)
                    g.jobs[g.njobs++] = (grid_job){w, p, s};
        pthread_mutex_init(&g.lock, NULL);
        int jobs = o->jobs > 0 ? o->jobs : 1;
        pthread_t th[64];
        int started = 0;
        for (; started < jobs && started < 64; started++)
            if (pthread_create(&th[started], NULL, worker, &g) != 0)
                break;
        if (started == 0)
            worker(&g);
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        pthread_mutex_destroy(&g.lock);
        if (o->progress)
            fputc('\n', stderr);
        rc = g.rc;
        if (rc)
            snprintf(err, errlen, "%s", g.err);
        else
            report(&g, pub, json, out, sim_now() - g.t0);
    }
    for (size_t w = 0; w < o->nworkloads && g.pods; w++)
        free(g.pods[w]);
    free(g.pods);
    free(g.npods);
    free(g.cells);
    free(g.jobs);
    free(g.nodes);
    free(pub);
    return rc;
}
