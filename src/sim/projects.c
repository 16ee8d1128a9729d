/*
 * projects.c — the projects file, the default tree, the pod-to-project rule,
 * quota scaling and the static node split (see projects.h).
 */
#include "common/gp_array.h"
#include "sim/projects.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"
#include "sim/csv.h"

/* A deserved quota or limit beyond a million GPUs is a typo, not a plan. */
#define MAX_GPUS 1e6

static int find(const sim_project *pr, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(pr[i].name, name))
            return (int)i;
    return -1;
}

/* Field col as decimal GPUs in milli-GPU; blank gives blank_value. */
static int gpus_field(const sim_csv *c, int col, int64_t blank_value, int64_t *out, char *err,
                      size_t errlen) {
    if (col < 0 || !*sim_csv_get(c, col)) {
        *out = blank_value;
        return 0;
    }
    double v;
    int rc = sim_csv_double(c, col, 0, MAX_GPUS, &v, err, errlen);
    if (rc == 0)
        *out = llround(v * GP_MILLI);
    return rc;
}

static int name_field(const sim_csv *c, int col, char *dst, int required, char *err,
                      size_t errlen) {
    const char *s = col >= 0 ? sim_csv_get(c, col) : "";
    if (required && !*s)
        return sim_errf(err, errlen, GP_EPARSE, "%s:%ld: field %s: empty", c->path, c->line,
                        c->header[col]);
    if (strlen(s) > GP_NAME_MAX)
        return sim_errf(err, errlen, GP_ERANGE, "%s:%ld: field %s: longer than %d characters",
                        c->path, c->line, c->header[col], GP_NAME_MAX);
    strcpy(dst, s);
    return 0;
}

static int read_projects(sim_csv *c, sim_project **out, size_t *n, char *err, size_t errlen) {
    static const char *const known[] = {
        "name", "parent", "deserved_gpus", "weight", "limit_gpus", "priority", NULL};
    static const char *const required[] = {"name", NULL};
    sim_project *arr = NULL;
    size_t cnt = 0, cap = 0;
    int rc = sim_csv_check_header(c, known, required, err, errlen);
    int cname = sim_csv_col(c, "name"), cparent = sim_csv_col(c, "parent"),
        cdes = sim_csv_col(c, "deserved_gpus"), cw = sim_csv_col(c, "weight"),
        clim = sim_csv_col(c, "limit_gpus"), cprio = sim_csv_col(c, "priority");
    while (!rc && (rc = sim_csv_next(c, err, errlen)) == 1) {
        sim_project p;
        memset(&p, 0, sizeof p);
        int64_t v;
        rc = name_field(c, cname, p.name, 1, err, errlen);
        if (!rc)
            rc = name_field(c, cparent, p.parent, 0, err, errlen);
        if (!rc && find(arr, cnt, p.name) >= 0)
            rc = sim_errf(err, errlen, GP_EEXIST, "%s:%ld: field name: '%s' listed twice", c->path,
                          c->line, p.name);
        if (!rc && p.parent[0] && find(arr, cnt, p.parent) < 0)
            rc = sim_errf(err, errlen, GP_ENOENT,
                          "%s:%ld: field parent: '%s' is not listed above this row", c->path,
                          c->line, p.parent);
        if (!rc)
            rc = gpus_field(c, cdes, -1, &p.deserved_milli, err, errlen);
        if (!rc)
            rc = gpus_field(c, clim, GP_UNLIMITED, &p.limit_milli, err, errlen);
        if (!rc && cw >= 0 && !(rc = sim_csv_int(c, cw, 1, 1000000, 1, &v, err, errlen)))
            p.weight = (int32_t)v;
        else if (!rc)
            p.weight = 1;
        if (!rc && cprio >= 0 &&
            !(rc = sim_csv_int(c, cprio, -1000000, 1000000, 0, &v, err, errlen)))
            p.priority = (int32_t)v;
        if (!rc && GP_ARRAY_ROOM(arr, cnt, cap, 16) == 0)
            arr[cnt++] = p;
        else if (!rc)
            rc = sim_errf(err, errlen, GP_ENOMEM, "%s: out of memory", c->path);
    }
    if (!rc && cnt == 0)
        rc = sim_errf(err, errlen, GP_EINVAL, "%s: no projects listed", c->path);
    if (rc < 0) {
        free(arr);
        *out = NULL;
        *n = 0;
        return rc;
    }
    for (size_t i = 0; i < cnt; i++) {
        arr[i].leaf = 1;
        for (size_t j = 0; j < cnt; j++)
            if (!strcmp(arr[j].parent, arr[i].name))
                arr[i].leaf = 0;
        if (arr[i].leaf && arr[i].deserved_milli < 0)
            arr[i].deserved_milli = 0;
    }
    *out = arr;
    *n = cnt;
    return 0;
}

int sim_read_projects(const char *path, sim_project **out, size_t *n, char *err, size_t errlen) {
    sim_csv c;
    *out = NULL;
    *n = 0;
    int rc = sim_csv_open(&c, path, err, errlen);
    if (rc < 0)
        return rc;
    rc = read_projects(&c, out, n, err, errlen);
    sim_csv_close(&c);
    return rc;
}

int sim_read_projects_mem(const char *name, const char *data, size_t len, sim_project **out,
                          size_t *n, char *err, size_t errlen) {
    sim_csv c;
    *out = NULL;
    *n = 0;
    int rc = sim_csv_open_mem(&c, name, data ? data : "", len, err, errlen);
    if (rc < 0)
        return rc;
    rc = read_projects(&c, out, n, err, errlen);
    sim_csv_close(&c);
    return rc;
}

int sim_default_projects(const sim_pod *pods, size_t npods, sim_project **out, size_t *n) {
    static const char *const teams[] = {"team-a", "team-b", "team-c", "team-d"};
    size_t cap = 5, cnt = 0;
    sim_project *arr = calloc(cap, sizeof *arr);
    if (!arr)
        return GP_ENOMEM;
    snprintf(arr[0].name, sizeof arr[0].name, "org");
    arr[0].deserved_milli = -1;
    arr[0].limit_milli = GP_UNLIMITED;
    arr[0].weight = 1;
    cnt = 1;
    int named = 0;
    for (size_t i = 0; i < npods + 4; i++) {
        const char *name;
        if (i < npods) {
            name = pods[i].project;
            if (!*name || find(arr, cnt, name) >= 0)
                continue;
            named = 1;
        } else if (!named) {
            name = teams[i - npods];
        } else {
            break;
        }
        if (GP_ARRAY_ROOM(arr, cnt, cap, 16) < 0) {
            free(arr);
            return GP_ENOMEM;
        }
        sim_project *p = &arr[cnt++];
        memset(p, 0, sizeof *p);
        snprintf(p->name, sizeof p->name, "%s", name);
        snprintf(p->parent, sizeof p->parent, "org");
        p->deserved_milli = GP_MILLI;
        p->limit_milli = GP_UNLIMITED;
        p->weight = 1;
        p->leaf = 1;
        p->relative = 1;
    }
    *out = arr;
    *n = cnt;
    return 0;
}

int sim_assign_projects(const sim_project *pr, size_t npr, const sim_pod *pods, size_t npods,
                        const char *pods_path, int32_t *leaf_of, char *err, size_t errlen) {
    uint64_t total = 0;
    int any = 0;
    for (size_t i = 0; i < npr; i++)
        if (pr[i].leaf && pr[i].deserved_milli > 0)
            any = 1;
    for (size_t i = 0; i < npr; i++)
        if (pr[i].leaf)
            total += any ? (uint64_t)pr[i].deserved_milli : 1;
    if (total == 0)
        return sim_errf(err, errlen, GP_EINVAL, "projects: no project (leaf) to run pods in");
    for (size_t k = 0; k < npods; k++) {
        const sim_pod *p = &pods[k];
        if (p->project[0]) {
            int i = find(pr, npr, p->project);
            if (i < 0 || !pr[i].leaf)
                return sim_errf(err, errlen, GP_ENOENT,
                                "%s:%ld: field project: '%s' is not a project of the projects "
                                "file",
                                pods_path, p->line, p->project);
            leaf_of[k] = i;
            continue;
        }
        uint64_t r = gp_fnv1a(p->name) % total, cum = 0;
        for (size_t i = 0; i < npr; i++) {
            if (!pr[i].leaf)
                continue;
            cum += any ? (uint64_t)pr[i].deserved_milli : 1;
            if (r < cum) {
                leaf_of[k] = (int32_t)i;
                break;
            }
        }
    }
    return 0;
}

void sim_scale_quotas(const sim_project *pr, size_t npr, int64_t capacity_milli, int64_t *out) {
    int64_t sum = 0;
    int relative = 0;
    for (size_t i = 0; i < npr; i++)
        if (pr[i].leaf) {
            sum += pr[i].deserved_milli;
            relative |= pr[i].relative;
        }
    for (size_t i = 0; i < npr; i++) {
        int64_t d = pr[i].deserved_milli;
        if (d > 0 && (sum > capacity_milli || relative))
            d = (int64_t)((__int128)d * capacity_milli / sum);
        out[i] = d;
    }
    /* Blank departments: the sum of their children, deepest rows first
     * (children always come after their parent in the file). */
    for (size_t i = npr; i-- > 0;) {
        if (pr[i].deserved_milli >= 0)
            continue;
        int64_t s = 0;
        for (size_t j = i + 1; j < npr; j++)
            if (!strcmp(pr[j].parent, pr[i].name))
                s += out[j];
        out[i] = s;
    }
}

typedef struct node_ref {
    const sim_node *n;
    size_t idx;
} node_ref;

static int cmp_node_ref(const void *a, const void *b) {
    const node_ref *x = a, *y = b;
    int c = strcmp(x->n->model, y->n->model);
    if (c)
        return c;
    if (x->n->ngpus != y->n->ngpus)
        return x->n->ngpus > y->n->ngpus ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* The targets of the static split: each leaf's weight (its deserved quota, or
 * 1 each when no leaf has one) and their sum. */
typedef struct split_rule {
    const sim_project *pr;
    size_t npr;
    const int64_t *deserved;
    int any;
    double wsum;
} split_rule;

static split_rule rule_of(const sim_project *pr, size_t npr, const int64_t *deserved) {
    split_rule r = {pr, npr, deserved, 0, 0};
    for (size_t i = 0; i < npr; i++)
        if (pr[i].leaf && deserved[i] > 0)
            r.any = 1;
    for (size_t i = 0; i < npr; i++)
        if (pr[i].leaf)
            r.wsum += r.any ? (double)deserved[i] : 1.0;
    return r;
}

/* The leaf with the smallest holding per unit of share (got[i]); ties go to
 * the leaf listed first; -1 if no leaf has a share. */
static int furthest_below(const split_rule *r, const double *got) {
    int best = -1;
    double best_v = 0;
    for (size_t i = 0; i < r->npr; i++) {
        if (!r->pr[i].leaf)
            continue;
        double w = r->any ? (double)r->deserved[i] : 1.0;
        if (w <= 0)
            continue;
        double v = got[i] / (w / r->wsum);
        if (best < 0 || v < best_v) {
            best = (int)i;
            best_v = v;
        }
    }
    return best;
}

/* The nodes in the order of the split, NULL if out of memory. */
static node_ref *split_order(const sim_node *nodes, size_t nnodes) {
    node_ref *ref = malloc((nnodes ? nnodes : 1) * sizeof *ref);
    if (ref == NULL)
        return NULL;
    for (size_t j = 0; j < nnodes; j++)
        ref[j] = (node_ref){&nodes[j], j};
    qsort(ref, nnodes, sizeof *ref, cmp_node_ref);
    return ref;
}

int sim_static_split(const sim_project *pr, size_t npr, const int64_t *deserved,
                     const sim_node *nodes, size_t nnodes, int32_t *owner) {
    node_ref *ref = split_order(nodes, nnodes);
    double *got_gpu = calloc(npr ? npr : 1, sizeof *got_gpu);
    double *got_cpu = calloc(npr ? npr : 1, sizeof *got_cpu);
    if (!ref || !got_gpu || !got_cpu) {
        free(ref);
        free(got_gpu);
        free(got_cpu);
        return GP_ENOMEM;
    }
    split_rule rule = rule_of(pr, npr, deserved);
    for (size_t k = 0; k < nnodes; k++) {
        const sim_node *n = ref[k].n;
        int gpu = n->ngpus > 0;
        double *got = gpu ? got_gpu : got_cpu;
        int best = furthest_below(&rule, got);
        owner[ref[k].idx] = best;
        if (best >= 0)
            got[best] += gpu ? (double)n->ngpus : (double)n->cpu_milli;
    }
    free(ref);
    free(got_gpu);
    free(got_cpu);
    return 0;
}

int sim_static_starves(const sim_project *pr, size_t npr, const int64_t *deserved,
                       const sim_node *nodes, size_t nnodes, const int32_t *owner) {
    split_rule rule = rule_of(pr, npr, deserved);
    int64_t gpus = 0;
    for (size_t j = 0; j < nnodes; j++)
        gpus += nodes[j].ngpus;
    if (gpus == 0)
        return 0;
    for (size_t i = 0; i < npr; i++) {
        if (!pr[i].leaf || (rule.any ? (double)deserved[i] : 1.0) <= 0)
            continue;
        int64_t held = 0;
        for (size_t j = 0; j < nnodes; j++)
            if (owner[j] == (int32_t)i)
                held += nodes[j].ngpus;
        if (held == 0)
            return 1;
    }
    return 0;
}

int sim_static_carve(const sim_project *pr, size_t npr, const int64_t *deserved,
                     const sim_node *nodes, size_t nnodes, sim_node **out, int32_t **owner,
                     size_t *nout) {
    size_t max = 0;
    for (size_t j = 0; j < nnodes; j++)
        max += nodes[j].ngpus > 0 ? (size_t)nodes[j].ngpus : 1;
    node_ref *ref = split_order(nodes, nnodes);
    double *got_gpu = calloc(npr ? npr : 1, sizeof *got_gpu);
    double *got_cpu = calloc(npr ? npr : 1, sizeof *got_cpu);
    int32_t *count = calloc(npr ? npr : 1, sizeof *count);
    sim_node *o = malloc((max ? max : 1) * sizeof *o);
    int32_t *ow = malloc((max ? max : 1) * sizeof *ow);
    if (!ref || !got_gpu || !got_cpu || !count || !o || !ow) {
        free(ref);
        free(got_gpu);
        free(got_cpu);
        free(count);
        free(o);
        free(ow);
        return GP_ENOMEM;
    }
    split_rule rule = rule_of(pr, npr, deserved);
    size_t m = 0;
    for (size_t k = 0; k < nnodes; k++) {
        const sim_node *n = ref[k].n;
        if (n->ngpus == 0) {
            int best = furthest_below(&rule, got_cpu);
            o[m] = *n;
            ow[m++] = best;
            if (best >= 0)
                got_cpu[best] += (double)n->cpu_milli;
            continue;
        }
        /* GPU by GPU, then one part per owner with its share of the CPU and
         * memory (the last part takes what rounding left). */
        memset(count, 0, (npr ? npr : 1) * sizeof *count);
        for (int32_t g = 0; g < n->ngpus; g++) {
            int best = furthest_below(&rule, got_gpu);
            if (best < 0)
                break;
            count[best]++;
            got_gpu[best] += 1.0;
        }
        int64_t cpu_left = n->cpu_milli, mem_left = n->mem_bytes;
        int32_t gpus_left = n->ngpus;
        for (size_t i = 0; i < npr; i++) {
            if (count[i] == 0)
                continue;
            gpus_left -= count[i];
            o[m] = *n;
            snprintf(o[m].name, sizeof o[m].name, "%.30s~%.30s", n->name, pr[i].name);
            o[m].ngpus = count[i];
            o[m].cpu_milli = gpus_left > 0 ? n->cpu_milli * count[i] / n->ngpus : cpu_left;
            o[m].mem_bytes =
                gpus_left > 0 ? (int64_t)((__int128)n->mem_bytes * count[i] / n->ngpus) : mem_left;
            cpu_left -= o[m].cpu_milli;
            mem_left -= o[m].mem_bytes;
            ow[m++] = (int32_t)i;
        }
    }
    free(ref);
    free(got_gpu);
    free(got_cpu);
    free(count);
    *out = o;
    *owner = ow;
    *nout = m;
    return 0;
}
