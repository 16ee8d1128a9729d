/*
 * plan.c — the inputs shared by `replay` and `plan`, the scaling of a node
 * list, the search for the smallest pool per mode (see plan.h), and the two
 * commands: option parsing, the text and JSON outputs, and the report files
 * (written to temporary names and renamed at the end, so a failed run
 * leaves nothing half-written).
 */
#include "sim/plan.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sim/csv.h"
#include "sim/fgd.h"

/* ------------------------------------------------------------------------ */
/* Inputs                                                                    */
/* ------------------------------------------------------------------------ */

int sim_inputs_load(sim_inputs *in, char *err, size_t errlen) {
    int rc = sim_read_nodes(in->nodes_path, &in->nodes, &in->nnodes, err, errlen);
    if (!rc)
        rc = sim_read_pods(in->pods_path, &in->pods, &in->npods, err, errlen);
    if (!rc)
        rc = in->projects_path
                 ? sim_read_projects(in->projects_path, &in->pr, &in->npr, err, errlen)
                 : sim_default_projects(in->pods, in->npods, &in->pr, &in->npr);
    if (!rc && !(in->leaf_of = malloc((in->npods ? in->npods : 1) * sizeof *in->leaf_of)))
        rc = GP_ENOMEM;
    if (rc == GP_ENOMEM && err && !*err)
        sim_errf(err, errlen, rc, "out of memory");
    if (!rc)
        rc = sim_assign_projects(in->pr, in->npr, in->pods, in->npods, in->pods_path, in->leaf_of,
                                 err, errlen);
    if (!rc)
        rc = sim_replay_jobs(in->pods, in->npods, in->leaf_of, in->pods_path, &in->jobs, &in->njobs,
                             err, errlen);
    if (!rc && sim_nodes_gpus(in->nodes, in->nnodes) == 0)
        rc = sim_errf(err, errlen, GP_EINVAL, "%s: the node list has no GPU", in->nodes_path);
    if (rc < 0)
        sim_inputs_free(in);
    return rc;
}

void sim_inputs_free(sim_inputs *in) {
    free(in->nodes);
    free(in->pods);
    free(in->pr);
    free(in->leaf_of);
    free(in->jobs);
    /* Empty again: only the paths, which it does not own, stay. */
    *in = (sim_inputs){.nodes_path = in->nodes_path,
                       .pods_path = in->pods_path,
                       .projects_path = in->projects_path};
}

void sim_scale_nodes(const sim_node *nodes, size_t n, size_t k, sim_node *out) {
    size_t m = 0;
    /* Whole copies first (renamed "NAME~c" so that names stay unique), then
     * an even spread of the remainder. */
    for (size_t c = 0; c < k / n; c++)
        for (size_t i = 0; i < n; i++) {
            out[m] = nodes[i];
            if (c > 0)
                snprintf(out[m].name, sizeof out[m].name, "%.50s~%u", nodes[i].name,
                         (unsigned)(c % 1000));
            m++;
        }
    size_t r = k % n, c = k / n;
    for (size_t i = 0; i < n && r; i++)
        if ((i + 1) * r / n > i * r / n) {
            out[m] = nodes[i];
            if (c > 0)
                snprintf(out[m].name, sizeof out[m].name, "%.50s~%u", nodes[i].name,
                         (unsigned)(c % 1000));
            m++;
        }
}

int64_t sim_nodes_gpus(const sim_node *nodes, size_t n) {
    int64_t g = 0;
    for (size_t i = 0; i < n; i++)
        g += nodes[i].ngpus;
    return g;
}

/* ------------------------------------------------------------------------ */
/* The search                                                                */
/* ------------------------------------------------------------------------ */

static int meets(const sim_replay_result *r, double target) {
    return r->rejected == 0 && r->unserved == 0 && r->delay_p95 <= target;
}

/* "1 node", "2 nodes". */
static const char *nodes_word(size_t n) {
    return n == 1 ? "node" : "nodes";
}

/* What a static result on a pool smaller than its projects stands for. */
static const char by_gpu_note[] =
    "static: fewer GPU nodes than projects, so each project owns GPUs of shared nodes "
    "(in proportion to its deserved quota) instead of whole nodes";

static void say(const sim_replay_opts *o, size_t k, const sim_node *buf, const sim_replay_result *r,
                double target) {
    if (o->progress)
        fprintf(stderr,
                "plan %s: %zu %s (%lld GPUs): p95 delay %.0f s, %lld unserved, "
                "%lld rejected: %s (%.1f s)\n",
                sim_mode_name(o->mode), k, nodes_word(k), (long long)sim_nodes_gpus(buf, k),
                r->delay_p95, (long long)r->unserved, (long long)r->rejected,
                meets(r, target) ? "meets the target" : "misses", r->seconds);
}

/* Replays the pool scaled to k nodes (in buf). Returns 1 if it meets the
 * target (its result then replaces pm->needed), 0 if not, or a negative
 * code with err filled. */
static int probe(const sim_inputs *in, const sim_replay_opts *o, double target, size_t k,
                 sim_node *buf, sim_plan_mode *pm, char *err, size_t errlen) {
    sim_replay_result r;
    sim_scale_nodes(in->nodes, in->nnodes, k, buf);
    int rc =
        sim_replay_run(buf, k, in->pods, in->jobs, in->njobs, in->pr, in->npr, o, &r, err, errlen);
    if (rc < 0)
        return rc;
    pm->steps++;
    say(o, k, buf, &r, target);
    if (!meets(&r, target)) {
        sim_replay_result_free(&r);
        return 0;
    }
    sim_replay_result_free(&pm->needed);
    pm->needed = r;
    return 1;
}

/*
 * The smallest k with a run that meets the target, assuming more nodes never
 * hurt: sizes double from one node until a run meets it (or SIM_PLAN_MAX_GROWTH
 * times the list is reached), then a binary search between the last miss and
 * the first hit.
 */
static int search(const sim_inputs *in, const sim_replay_opts *o, double target, sim_plan_mode *pm,
                  char *err, size_t errlen) {
    size_t max = SIM_PLAN_MAX_GROWTH * in->nnodes;
    sim_node *buf = malloc(max * sizeof *buf);
    if (!buf)
        return sim_errf(err, errlen, GP_ENOMEM, "plan: out of memory");
    size_t lo = 0, hi = 0; /* lo misses (0: none tried), hi meets (0: none found) */
    int rc = 0;
    for (size_t k = 1; !hi && rc >= 0; k = 2 * k < max ? 2 * k : max) {
        rc = probe(in, o, target, k, buf, pm, err, errlen);
        if (rc == 1)
            hi = k;
        else
            lo = k;
        if (k == max)
            break;
    }
    while (rc >= 0 && hi && hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        rc = probe(in, o, target, mid, buf, pm, err, errlen);
        if (rc == 1)
            hi = mid;
        else
            lo = mid;
    }
    if (rc >= 0 && hi) {
        pm->found = 1;
        pm->nodes_needed = hi;
        sim_scale_nodes(in->nodes, in->nnodes, hi, buf);
        pm->gpus_needed = sim_nodes_gpus(buf, hi);
    }
    free(buf);
    return rc < 0 ? rc : 0;
}

int sim_plan_run(const sim_inputs *in, const sim_replay_opts *o, double target_p95_s, sim_plan *p,
                 char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    double t0 = sim_now();
    p->target_p95_s = target_p95_s;
    p->nnodes = in->nnodes;
    p->gpus = sim_nodes_gpus(in->nodes, in->nnodes);
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        sim_replay_opts mo = *o;
        mo.mode = (sim_mode)m;
        sim_plan_mode *pm = &p->modes[m];
        int rc = sim_replay_run(in->nodes, in->nnodes, in->pods, in->jobs, in->njobs, in->pr,
                                in->npr, &mo, &pm->full, err, errlen);
        if (!rc && o->progress)
            fprintf(stderr,
                    "plan %s: all %zu %s: p95 delay %.0f s, allocation %.2f%% "
                    "(%.1f s)\n",
                    sim_mode_name(mo.mode), in->nnodes, nodes_word(in->nnodes), pm->full.delay_p95,
                    pm->full.alloc_pct, pm->full.seconds);
        if (!rc)
            rc = search(in, &mo, target_p95_s, pm, err, errlen);
        if (rc < 0) {
            sim_plan_free(p);
            return rc;
        }
    }
    p->seconds = sim_now() - t0;
    return 0;
}

void sim_plan_free(sim_plan *p) {
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        sim_replay_result_free(&p->modes[m].full);
        sim_replay_result_free(&p->modes[m].needed);
    }
}

/* ------------------------------------------------------------------------ */
/* Text and JSON                                                             */
/* ------------------------------------------------------------------------ */

static void print_header(FILE *f) {
    fprintf(f, "%-18s %6s %6s %9s %9s %9s %9s %9s %6s %8s %8s\n", "mode", "GPUs", "alloc%",
            "delay-p50", "delay-p95", "delay-p99", "jct-p50", "jct-p95", "evict", "unserved",
            "rejected");
}

static void print_row(FILE *f, const sim_replay_result *r) {
    fprintf(f, "%-18s %6lld %6.2f %9.0f %9.0f %9.0f %9.0f %9.0f %6lld %8lld %8lld\n",
            sim_mode_name(r->mode), (long long)(r->capacity_milli / GP_MILLI), r->alloc_pct,
            r->delay_p50, r->delay_p95, r->delay_p99, r->jct_p50, r->jct_p95,
            (long long)r->evictions, (long long)r->unserved, (long long)r->rejected);
}

static void print_projects(FILE *f, const sim_replay_result *r) {
    fprintf(f, "  %-24s %8s %10s %8s %6s %9s\n", "project", "deserved", "mean-GPUs", "share",
            "jobs", "delay-p95");
    for (size_t i = 0; i < r->nprojects; i++) {
        const sim_project_result *p = &r->projects[i];
        fprintf(f, "  %-24s %8.2f %10.2f %7.0f%% %6lld %9.0f\n", p->name, p->deserved_gpus,
                p->mean_gpus, 100 * p->share, (long long)p->jobs, p->delay_p95);
    }
}

static json_t *result_json(const sim_replay_result *r) {
    json_t *pr = json_array();
    for (size_t i = 0; i < r->nprojects; i++) {
        const sim_project_result *p = &r->projects[i];
        json_array_append_new(pr, json_pack("{s:s, s:f, s:f, s:f, s:I, s:f}", "project", p->name,
                                            "deserved_gpus", p->deserved_gpus, "mean_gpus",
                                            p->mean_gpus, "share", p->share, "jobs",
                                            (json_int_t)p->jobs, "delay_p95_s", p->delay_p95));
    }
    json_t *o = json_pack(
        "{s:s, s:i, s:I, s:f, s:{s:f, s:f, s:f, s:f}, s:{s:f, s:f, s:f}, s:I, s:I, s:I, s:I, "
        "s:I, s:{s:I, s:I, s:I}, s:I, s:f}",
        "mode", sim_mode_name(r->mode), "nodes", (int)r->nodes, "gpus",
        (json_int_t)(r->capacity_milli / GP_MILLI), "allocation_pct", r->alloc_pct,
        "queueing_delay_s", "mean", r->delay_mean, "p50", r->delay_p50, "p95", r->delay_p95, "p99",
        r->delay_p99, "jct_s", "mean", r->jct_mean, "p50", r->jct_p50, "p95", r->jct_p95, "jobs",
        (json_int_t)r->jobs, "started", (json_int_t)r->started, "finished", (json_int_t)r->finished,
        "unserved", (json_int_t)r->unserved, "rejected", (json_int_t)r->rejected, "preemptions",
        gp_evict_reason_name(GP_EVICT_RECLAIM), (json_int_t)r->evict_by[GP_EVICT_RECLAIM],
        gp_evict_reason_name(GP_EVICT_PREEMPT), (json_int_t)r->evict_by[GP_EVICT_PREEMPT],
        gp_evict_reason_name(GP_EVICT_CONSOLIDATE), (json_int_t)r->evict_by[GP_EVICT_CONSOLIDATE],
        "cycles", (json_int_t)r->cycles, "seconds", r->seconds);
    json_object_set_new(o, "projects", pr);
    return o;
}

static void print_plan_text(FILE *f, const sim_plan *p, const sim_inputs *in) {
    fprintf(f, "gpupool-sim plan: %zu jobs from %s on %zu %s (%lld GPUs) from %s\n", in->njobs,
            in->pods_path, p->nnodes, nodes_word(p->nnodes), (long long)p->gpus, in->nodes_path);
    fprintf(f, "\nThe three modes on the given hardware:\n");
    print_header(f);
    for (int m = 0; m < SIM_MODE_COUNT; m++)
        print_row(f, &p->modes[m].full);
    if (p->modes[SIM_MODE_STATIC].full.static_by_gpu ||
        (p->modes[SIM_MODE_STATIC].found && p->modes[SIM_MODE_STATIC].needed.static_by_gpu))
        fprintf(f, "%s.\n", by_gpu_note);
    fprintf(f, "\nSmallest pool keeping p95 queueing delay <= %.0f s with every job served:\n",
            p->target_p95_s);
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        const sim_plan_mode *pm = &p->modes[m];
        if (pm->found)
            fprintf(f, "  %-18s needs %lld GPUs (%zu %s)\n", sim_mode_name((sim_mode)m),
                    (long long)pm->gpus_needed, pm->nodes_needed, nodes_word(pm->nodes_needed));
        else
            fprintf(f, "  %-18s not reached with %d times the given GPUs\n",
                    sim_mode_name((sim_mode)m), SIM_PLAN_MAX_GROWTH);
    }
    const sim_plan_mode *s = &p->modes[SIM_MODE_STATIC], *q = &p->modes[SIM_MODE_POOLED],
                        *fr = &p->modes[SIM_MODE_FRACTIONAL];
    if (s->found && q->found && fr->found)
        fprintf(f, "\nstatic needs %lld GPUs, pooled needs %lld, pooled-fractional needs %lld.\n",
                (long long)s->gpus_needed, (long long)q->gpus_needed, (long long)fr->gpus_needed);
    fprintf(f, "\nAt those sizes:\n");
    print_header(f);
    for (int m = 0; m < SIM_MODE_COUNT; m++)
        if (p->modes[m].found)
            print_row(f, &p->modes[m].needed);
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        fprintf(f, "\nPer project, %s on the given hardware:\n", sim_mode_name((sim_mode)m));
        print_projects(f, &p->modes[m].full);
    }
    fprintf(f, "\n(%.1f s)\n", p->seconds);
}

static json_t *plan_json(const sim_plan *p, const sim_inputs *in) {
    json_t *modes = json_array();
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        const sim_plan_mode *pm = &p->modes[m];
        json_t *o = json_pack("{s:s, s:o, s:b}", "mode", sim_mode_name((sim_mode)m), "full",
                              result_json(&pm->full), "found", pm->found);
        if (pm->found) {
            json_object_set_new(o, "gpus_needed", json_integer(pm->gpus_needed));
            json_object_set_new(o, "nodes_needed", json_integer((json_int_t)pm->nodes_needed));
            json_object_set_new(o, "needed", result_json(&pm->needed));
        }
        json_object_set_new(o, "search_steps", json_integer(pm->steps));
        json_array_append_new(modes, o);
    }
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:f, s:o, s:f}", "pods", in->pods_path, "nodes",
                     in->nodes_path, "jobs", (json_int_t)in->njobs, "node_count",
                     (json_int_t)p->nnodes, "gpus", (json_int_t)p->gpus, "target_p95_s",
                     p->target_p95_s, "modes", modes, "seconds", p->seconds);
}

/* ------------------------------------------------------------------------ */
/* Commands                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct cmd_opts {
    sim_inputs in;
    sim_replay_opts o;
    int all_modes, json;
    double target, scale, compress, price;
    const char *out, *currency;
} cmd_opts;

static int usage_error(const char *cmd, const char *msg, const char *arg) {
    fprintf(stderr, "gpupool-sim %s: %s%s%s\n", cmd, msg, arg ? " " : "", arg ? arg : "");
    return 2;
}

static int num(const char *cmd, const char *opt, const char *s, double min, double max,
               double *out) {
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= min && v <= max)) {
        fprintf(stderr, "gpupool-sim %s: %s: '%s' is not a number in [%g, %g]\n", cmd, opt, s, min,
                max);
        return 2;
    }
    *out = v;
    return 0;
}

/* Parses the options of replay (plan = 0) or plan (plan = 1). Returns 0 or
 * the exit status of a usage error. */
static int parse(int argc, char **argv, int plan, cmd_opts *c) {
    const char *cmd = plan ? "plan" : "replay";
    memset(c, 0, sizeof *c);
    sim_replay_opts_init(&c->o);
    c->all_modes = 1;
    c->target = 3600;
    c->scale = 1;
    c->compress = 1;
    c->o.progress = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d = 0;
        int rc = 0;
        if (!strcmp(a, "--json")) {
            c->json = 1;
            continue;
        }
        if (!strcmp(a, "--quiet")) {
            c->o.progress = 0;
            continue;
        }
        if (!v)
            return usage_error(cmd, "option needs a value:", a);
        i++;
        if (!strcmp(a, "--nodes"))
            c->in.nodes_path = v;
        else if (!strcmp(a, "--pods"))
            c->in.pods_path = v;
        else if (!strcmp(a, "--projects"))
            c->in.projects_path = v;
        else if (!strcmp(a, "--currency") && plan) {
            if (strlen(v) >= 16)
                return usage_error(cmd, "--currency: at most 15 characters:", v);
            c->currency = v;
        } else if (!strcmp(a, "--out") && plan)
            c->out = v;
        else if (!strcmp(a, "--mode") && !plan) {
            c->all_modes = !strcmp(v, "all");
            if (!c->all_modes && sim_mode_parse(v, &c->o.mode) < 0)
                return usage_error(cmd, "unknown mode", v);
        } else if (!strcmp(a, "--policy")) {
            if (gp_placement_parse(v, &c->o.policy) < 0)
                return usage_error(cmd, "unknown policy", v);
        } else {
            /* The numeric options: name, range, and where the value goes
             * (the one pointer set, of the option's type). */
            struct {
                const char *name;
                double min, max;
                int plan_only;
                uint64_t *u64;
                int64_t *i64;
                double *f64;
            } nums[] = {{"--seed", 0, 1e18, 0, .u64 = &c->o.seed},
                        {"--grace", 0, 1e9, 0, .i64 = &c->o.grace_s},
                        {"--min-runtime", 0, 1e9, 0, .i64 = &c->o.min_runtime_s},
                        {"--tick", 0, 1e9, 0, .i64 = &c->o.tick_s},
                        {"--scale", 1e-6, 1, 0, .f64 = &c->scale},
                        {"--compress", 1, 1e6, 0, .f64 = &c->compress},
                        {"--p95-target", 0, 1e12, 1, .f64 = &c->target},
                        {"--price-per-gpu", 0, 1e12, 1, .f64 = &c->price}};
            size_t k = 0, nn = sizeof nums / sizeof *nums;
            while (k < nn && (strcmp(a, nums[k].name) || (nums[k].plan_only && !plan)))
                k++;
            if (k == nn)
                return usage_error(cmd, "unknown option", a);
            if ((rc = num(cmd, a, v, nums[k].min, nums[k].max, &d)))
                return rc;
            if (nums[k].u64 != NULL)
                *nums[k].u64 = (uint64_t)d;
            else if (nums[k].i64 != NULL)
                *nums[k].i64 = (int64_t)d;
            else
                *nums[k].f64 = d;
        }
    }
    if (!c->in.nodes_path || !c->in.pods_path)
        return usage_error(cmd, "--nodes and --pods are required", NULL);
    return 0;
}

/* Loads the inputs, applies --compress to the arrivals (the gaps between
 * them divided by the factor; durations unchanged) and --scale to the node
 * list. */
static int load(cmd_opts *c) {
    char err[1024] = "";
    if (sim_inputs_load(&c->in, err, sizeof err) < 0) {
        fprintf(stderr, "gpupool-sim: %s\n", err);
        return 1;
    }
    for (size_t k = 0; k < c->in.njobs && c->compress > 1; k++)
        c->in.jobs[k].submit =
            c->in.jobs[0].submit +
            (int64_t)((double)(c->in.jobs[k].submit - c->in.jobs[0].submit) / c->compress);
    if (c->scale < 1) {
        size_t k = (size_t)((double)c->in.nnodes * c->scale + 0.5);
        k = k ? k : 1;
        sim_node *s = malloc(k * sizeof *s);
        if (!s) {
            fprintf(stderr, "gpupool-sim: out of memory\n");
            sim_inputs_free(&c->in);
            return 1;
        }
        sim_scale_nodes(c->in.nodes, c->in.nnodes, k, s);
        free(c->in.nodes);
        c->in.nodes = s;
        c->in.nnodes = k;
    }
    return 0;
}

int sim_cmd_replay(int argc, char **argv) {
    cmd_opts c;
    int rc = parse(argc, argv, 0, &c);
    if (rc || (rc = load(&c)))
        return rc;
    sim_replay_result res[SIM_MODE_COUNT];
    int n = 0;
    char err[1024] = "";
    for (int m = 0; m < SIM_MODE_COUNT && !rc; m++) {
        if (!c.all_modes && m != (int)c.o.mode)
            continue;
        sim_replay_opts o = c.o;
        o.mode = (sim_mode)m;
        if (sim_replay_run(c.in.nodes, c.in.nnodes, c.in.pods, c.in.jobs, c.in.njobs, c.in.pr,
                           c.in.npr, &o, &res[n], err, sizeof err) < 0) {
            fprintf(stderr, "gpupool-sim: %s\n", err);
            rc = 1;
        } else {
            n++;
        }
    }
    if (!rc && c.json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(arr, result_json(&res[i]));
        json_t *root = json_pack("{s:s, s:s, s:I, s:o}", "pods", c.in.pods_path, "nodes",
                                 c.in.nodes_path, "jobs", (json_int_t)c.in.njobs, "modes", arr);
        json_dumpf(root, stdout, JSON_COMPACT);
        fputc('\n', stdout);
        json_decref(root);
    } else if (!rc) {
        printf("gpupool-sim replay: %zu jobs on %zu %s (%lld GPUs)\n", c.in.njobs, c.in.nnodes,
               nodes_word(c.in.nnodes), (long long)sim_nodes_gpus(c.in.nodes, c.in.nnodes));
        print_header(stdout);
        for (int i = 0; i < n; i++)
            print_row(stdout, &res[i]);
        for (int i = 0; i < n; i++)
            if (res[i].static_by_gpu)
                printf("%s.\n", by_gpu_note);
        for (int i = 0; i < n; i++) {
            printf("\nPer project, %s:\n", sim_mode_name(res[i].mode));
            print_projects(stdout, &res[i]);
            if (res[i].rejected)
                printf("  first rejected: %s\n", res[i].first_reject);
        }
    }
    for (int i = 0; i < n; i++)
        sim_replay_result_free(&res[i]);
    sim_inputs_free(&c.in);
    return rc;
}

/* Writes one report file through a temporary name; the caller renames. */
static int write_tmp(const char *path, const sim_plan *p, const sim_inputs *in, int kind) {
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = 0;
    if (kind == 0) {
        print_plan_text(f, p, in);
    } else if (kind == 1) {
        json_t *j = plan_json(p, in);
        rc = json_dumpf(j, f, JSON_INDENT(1));
        fputc('\n', f);
        json_decref(j);
    } else {
        rc = sim_plan_html(p, in, f);
    }
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

static int write_reports(const char *prefix, const sim_plan *p, const sim_inputs *in) {
    static const char *const ext[3] = {".txt", ".json", ".html"};
    char tmp[3][1100], fin[3][1100];
    int rc = 0;
    for (int k = 0; k < 3 && !rc; k++) {
        snprintf(fin[k], sizeof fin[k], "%s%s", prefix, ext[k]);
        snprintf(tmp[k], sizeof tmp[k], "%s%s.tmp", prefix, ext[k]);
        if (write_tmp(tmp[k], p, in, k) < 0) {
            fprintf(stderr, "gpupool-sim plan: cannot write %s\n", tmp[k]);
            rc = 1;
        }
    }
    for (int k = 0; k < 3; k++) {
        if (rc)
            remove(tmp[k]);
        else if (rename(tmp[k], fin[k]) != 0) {
            fprintf(stderr, "gpupool-sim plan: cannot rename %s to %s\n", tmp[k], fin[k]);
            rc = 1;
        }
    }
    return rc;
}

int sim_cmd_plan(int argc, char **argv) {
    cmd_opts c;
    int rc = parse(argc, argv, 1, &c);
    if (rc || (rc = load(&c)))
        return rc;
    sim_plan p;
    char err[1024] = "";
    if (sim_plan_run(&c.in, &c.o, c.target, &p, err, sizeof err) < 0) {
        fprintf(stderr, "gpupool-sim: %s\n", err);
        sim_inputs_free(&c.in);
        return 1;
    }
    p.price_per_gpu = c.price;
    snprintf(p.currency, sizeof p.currency, "%s", c.currency ? c.currency : "");
    if (c.out)
        rc = write_reports(c.out, &p, &c.in);
    if (!rc && c.json) {
        json_t *j = plan_json(&p, &c.in);
        json_dumpf(j, stdout, JSON_COMPACT);
        fputc('\n', stdout);
        json_decref(j);
    } else if (!rc) {
        print_plan_text(stdout, &p, &c.in);
    }
    sim_plan_free(&p);
    sim_inputs_free(&c.in);
    return rc;
}
