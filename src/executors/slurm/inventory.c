/*
 * inventory.c — the `slurm` executor's view of the cluster: the nodes of its
 * partitions, as gpupool node specs, from one `sinfo --json` per call.
 *
 * Slurm's JSON (OpenAPI v0.0.38 in 22.05) gives per node its name, CPUs,
 * memory in MiB, its state and state flags, its features, its partitions
 * and its GRES as Slurm writes them in slurm.conf ("gpu:a100:4", possibly
 * several, comma-separated, each possibly followed by "(S:0-1)"). The GRES
 * type becomes the GPU model; Slurm does not know a GPU's memory, which comes
 * from the executor's configuration (gpu_mem, gpu_mem.<model>).
 *
 * A node that Slurm would not give new work to (down, drained or draining,
 * failing, not responding, powered down, in maintenance) is reported
 * unschedulable: it takes no new work from gpupool, and takes it again when
 * Slurm says it is back.
 *
 * GPUs that Slurm gave to jobs that are not gpupool's (submitted to Slurm
 * directly) are not offered: a node's GPUs are its GRES less those in use by
 * others (sinfo's gres_used less what gpupool's own running jobs hold, by
 * the records their scripts write, own_gpus). gpupool's GPU numbers on a
 * node count GPUs; Slurm picks the devices (docs/executors.md).
 *
 * Cost at 1,000 nodes: one sinfo call (one RPC to slurmctld) returning about
 * 1.5 KB of JSON per node, 1.5 MB in all, parsed in some tens of
 * milliseconds; one squeue of this instance's own job ids, in text (about
 * 40 bytes a job), and three small reads per task directory.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/gp_array.h"
#include "common/gp_error.h"
#include "common/gp_names.h"
#include "executors/registry.h"
#include "executors/slurm/slurm.h"

/* State flags after which a node takes no new work. */
static const char *const unusable_flags[] = {"DRAIN",
                                             "DRAINED",
                                             "DRAINING",
                                             "FAIL",
                                             "FAILING",
                                             "NOT_RESPONDING",
                                             "POWER_OFF",
                                             "POWERED_DOWN",
                                             "POWERING_DOWN",
                                             "MAINTENANCE",
                                             "REBOOT_REQUESTED",
                                             "REBOOT_ISSUED",
                                             "RESERVED",
                                             NULL};

static const char *const usable_states[] = {"idle", "mixed", "allocated", "completing", NULL};

static int in_list(const char *s, const char *const *list) {
    for (size_t i = 0; list[i] != NULL; i++)
        if (strcasecmp(s, list[i]) == 0)
            return 1;
    return 0;
}

/* 1 if Slurm would give the node new work. */
static int node_usable(json_t *node) {
    const char *state = json_string_value(json_object_get(node, "state"));
    if (state == NULL || !in_list(state, usable_states))
        return 0;
    json_t *flags = json_object_get(node, "state_flags");
    size_t i;
    json_t *f;
    json_array_foreach(flags, i, f) {
        const char *s = json_string_value(f);
        if (s != NULL && in_list(s, unusable_flags))
            return 0;
    }
    return 1;
}

/* The partition gpupool submits the node's jobs to: the first configured
 * partition the node is in, or, none being configured, its first; NULL if
 * it is in none of the configured partitions. */
static const char *node_partition(const gpx__slurm *sx, json_t *node) {
    json_t *parts = json_object_get(node, "partitions");
    if (sx->npart == 0) {
        const char *first = json_string_value(json_array_get(parts, 0));
        return first != NULL ? first : "";
    }
    for (int k = 0; k < sx->npart; k++) {
        size_t i;
        json_t *p;
        json_array_foreach(parts, i, p) {
            const char *s = json_string_value(p);
            if (s != NULL && strcmp(s, sx->parts[k]) == 0)
                return s;
        }
    }
    return NULL;
}

static int64_t model_mem(const gpx__slurm *sx, const char *model) {
    for (int i = 0; i < sx->nmodel; i++)
        if (strcasecmp(sx->model_mem[i].model, model) == 0)
            return sx->model_mem[i].bytes;
    return sx->gpu_mem_default;
}

/* Copies a name, keeping the characters gpupool allows in names. */
static void clean_name(char *dst, size_t len, const char *src, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n && src[i] != '\0' && k + 1 < len; i++) {
        char c = src[i];
        dst[k++] = (char)(gp_name_char((unsigned char)c) ? c : '-');
    }
    dst[k] = '\0';
}

/*
 * Adds the GPUs of one GRES string ("gpu:a100:4,gpu:h100:2(S:0)", or
 * "gpu:4") to node. Other GRES (nic, mps, shard) are not GPUs. GP_EPARSE for
 * a count that is not a number.
 */
static int add_gres(const gpx__slurm *sx, gp_node_spec *node, const char *gres, char *err,
                    size_t errlen) {
    const char *p = gres;
    while (p != NULL && *p != '\0') {
        size_t len = strcspn(p, ",");
        char item[256];
        snprintf(item, sizeof item, "%.*s", (int)(len < 255 ? len : 255), p);
        p = p[len] == ',' ? p + len + 1 : NULL;
        char *paren = strchr(item, '(');
        if (paren != NULL)
            *paren = '\0';
        char *fields[3] = {NULL, NULL, NULL};
        int nf = 0;
        for (char *save = NULL, *tok = strtok_r(item, ":", &save); tok != NULL && nf < 3;
             tok = strtok_r(NULL, ":", &save))
            fields[nf++] = tok;
        if (nf < 2 || strcmp(fields[0], "gpu") != 0)
            continue;
        const char *type = nf == 3 ? fields[1] : "gpu";
        const char *count_s = fields[nf - 1];
        char *end;
        long count = strtol(count_s, &end, 10);
        if (*end != '\0' || count < 0) {
            gp_errf(err, errlen, "node %s: GRES '%s': count '%s' is not a number", node->name, gres,
                    count_s);
            return GP_EPARSE;
        }
        for (long g = 0; g < count && node->ngpus < GP_MAX_GPUS_PER_NODE; g++) {
            gp_gpu_spec *gpu = &node->gpus[node->ngpus];
            memset(gpu, 0, sizeof *gpu);
            clean_name(gpu->model, sizeof gpu->model, type, strlen(type));
            gpu->mem_bytes = model_mem(sx, type);
            gpu->index = node->ngpus;
            char nm[GP_NAME_MAX + 1];
            memcpy(nm, node->name, sizeof nm);
            snprintf(gpu->uuid, sizeof gpu->uuid, "slurm-%.40s-%d", nm, node->ngpus);
            node->ngpus++;
        }
    }
    return 0;
}

/* GPUs of a GRES string as sinfo and squeue write them
 * ("gpu:a100:2(IDX:0-1),gpu:h100:0(IDX:N/A)", "gpu:3"); other GRES are not
 * GPUs. Slurm's indices of a node's GPUs. */
typedef struct gpu_set {
    int count;    /* GPUs in the string */
    uint32_t idx; /* the GPUs by Slurm's index, where the string says them */
    int have_idx; /* 1 if every GPU item said its indices */
} gpu_set;

/* Adds the indices of an IDX list ("0-1,3", "N/A") to *mask; 0 if it is
 * not such a list. */
static int idx_list(const char *p, size_t len, uint32_t *mask) {
    if (len == 3 && strncmp(p, "N/A", 3) == 0)
        return 1;
    size_t i = 0;
    while (i < len) {
        char *end;
        long a = strtol(p + i, &end, 10), b = a;
        if (end == p + i || a < 0)
            return 0;
        i = (size_t)(end - p);
        if (i < len && p[i] == '-') {
            const char *q = p + i + 1;
            b = strtol(q, &end, 10);
            if (end == q || b < a)
                return 0;
            i = (size_t)(end - p);
        }
        for (long k = a; k <= b && k < 32; k++)
            *mask |= UINT32_C(1) << k;
        if (i < len && p[i] != ',')
            return 0;
        i += i < len;
    }
    return 1;
}

static gpu_set gres_gpus(const char *gres) {
    gpu_set set = {0, 0, 1};
    const char *p = gres != NULL ? gres : "";
    while (*p != '\0') {
        /* One item: up to a comma outside parentheses. */
        size_t len = 0;
        for (int depth = 0; p[len] != '\0' && (depth > 0 || p[len] != ','); len++)
            depth += p[len] == '(' ? 1 : p[len] == ')' ? -1 : 0;
        if (strncmp(p, "gpu:", 4) == 0) {
            size_t head = strcspn(p, "(");
            if (head > len)
                head = len;
            /* The count is the last ':'-separated field before '('. */
            size_t k = head;
            while (k > 0 && p[k - 1] != ':')
                k--;
            int count = atoi(p + k);
            set.count += count;
            const char *idx =
                head < len && strncmp(p + head, "(IDX:", 5) == 0 ? p + head + 5 : NULL;
            size_t ilen = idx != NULL ? strcspn(idx, ")") : 0;
            if (count > 0 && (idx == NULL || !idx_list(idx, ilen, &set.idx)))
                set.have_idx = 0;
        }
        p += len;
        p += *p == ',';
    }
    return set;
}

/* One node's GPUs held by gpupool's own jobs. */
typedef struct held {
    char node[GP_NAME_MAX + 1];
    gpu_set gpus;
} held;

int gpx__slurm_parse_gpus_record(const char *text, long *job, char *node, size_t nlen,
                                 uint32_t *idx, int *count) {
    char *end;
    *idx = 0;
    *count = 0;
    if (strncmp(text, "job=", 4) != 0 || text[4] < '1' || text[4] > '9')
        return GP_EINVAL;
    errno = 0;
    *job = strtol(text + 4, &end, 10);
    if (errno != 0 || strncmp(end, " node=", 6) != 0)
        return GP_EINVAL;
    const char *n = end + 6;
    size_t len = strcspn(n, " ");
    if (len == 0 || len >= nlen ||
        strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789._-") != len ||
        strncmp(n + len, " gpus=", 6) != 0)
        return GP_EINVAL;
    memcpy(node, n, len);
    node[len] = '\0';
    const char *g = n + len + 6;
    size_t glen = strcspn(g, "\n");
    if (g[glen] == '\n' && g[glen + 1] != '\0')
        return GP_EINVAL;
    /* Numbers and ranges of them, each below 32: a mask of them is what
     * sinfo's IDX is read into. */
    for (size_t i = 0; i < glen;) {
        if (g[i] < '0' || g[i] > '9')
            return GP_EINVAL;
        for (long v = 0; i < glen && g[i] >= '0' && g[i] <= '9'; i++)
            if ((v = v * 10 + (g[i] - '0')) > 31)
                return GP_EINVAL;
        if (i < glen && ((g[i] != ',' && g[i] != '-') || i + 1 == glen))
            return GP_EINVAL;
        i += i < glen;
    }
    if (glen > 0 && !idx_list(g, glen, idx))
        return GP_EINVAL;
    *count = __builtin_popcount(*idx);
    return 0;
}

/* One job of this instance's that may hold GPUs: its id, the directory
 * whose record says which (gpus, or user/gpus for a job of another user,
 * which that user writes), and how many GPUs it asked Slurm for. */
typedef struct own_job {
    long id;
    char dir[PATH_MAX];
    int ngpus;
} own_job;

typedef struct own_list {
    own_job *j;
    size_t n, cap;
} own_list;

/* Adds the jobs of the directories below root: task directories (not a
 * slice's: its GPU is its holder's) or holders. */
static int list_own(const char *root, int holders, own_list *l) {
    DIR *d = opendir(root);
    if (d == NULL)
        return 0;
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        own_job o = {0};
        char buf[64];
        if (de->d_name[0] == '.' || (!holders && de->d_name[0] != 'w') ||
            gpx__exec_fmt(o.dir, sizeof o.dir, "%s/%s", root, de->d_name) < 0 ||
            gpx__slurm_read(o.dir, "jobid", buf, sizeof buf) <= 0 ||
            (o.id = strtol(buf, NULL, 10)) <= 0 ||
            (!holders && gpx__slurm_read(o.dir, "slice", buf, sizeof buf) > 0))
            continue;
        o.ngpus = 1;
        if (!holders)
            o.ngpus = gpx__slurm_read(o.dir, "ngpus", buf, sizeof buf) > 0 ? atoi(buf) : 0;
        if (o.ngpus <= 0)
            continue;
        if (GP_ARRAY_ROOM(l->j, l->n, l->cap, 64) < 0)
            rc = GP_ENOMEM;
        else
            l->j[l->n++] = o;
    }
    closedir(d);
    return rc;
}

/*
 * Lists, per node, the GPUs that gpupool's own jobs hold: the jobs this
 * instance submitted (its task and holder directories with a job id),
 * those of them Slurm says RUNNING or SUSPENDED (one squeue of their ids,
 * in text), and the GPUs each job's script recorded as it started
 * (SLURM_JOB_GPUS, Slurm's indices on its node: "job=<id> node=<node>
 * gpus=<list>", job.c and holder.c). A record of another job id (a holder
 * replaced), of more or fewer GPUs than the job asked for or of a node
 * other than the one Slurm says the job runs on (one its user wrote), or
 * none yet (a job just started) leaves the job's GPUs counted as others',
 * never the other way round: a record cannot make another node's GPUs
 * look free. Fills *out (malloc'd, *nout entries). GP_EIO with err if
 * Slurm cannot be asked.
 *
 * Called after sinfo, so that a job's end between the two calls counts
 * its GPUs as others' (they were in use at sinfo's time), never the GPUs
 * of a job that took them meanwhile as gpupool's. Before, one `squeue
 * --json` of every job slurmctld remembered gave the GPU indices (about
 * 3.7 MB, 0.55 s for 1,000 remembered jobs on the test cluster, on the
 * scheduling loop's thread at each inventory).
 */
static int own_gpus(const gpx__slurm *sx, held **out, size_t *nout, char *err, size_t errlen) {
    *out = NULL;
    *nout = 0;
    own_list l = {0};
    char hroot[PATH_MAX];
    int rc = list_own(sx->state_dir, 0, &l);
    if (rc == 0 && gpx__exec_fmt(hroot, sizeof hroot, "%s/holders", sx->state_dir) == 0)
        rc = list_own(hroot, 1, &l);
    if (rc < 0 || l.n == 0) {
        free(l.j);
        return rc;
    }
    size_t cap = 16 + l.n * 21, len;
    char *filter = malloc(cap);
    if (filter == NULL) {
        free(l.j);
        return GP_ENOMEM;
    }
    len = (size_t)snprintf(filter, cap, "--jobs=");
    for (size_t i = 0; i < l.n; i++)
        len += (size_t)snprintf(filter + len, cap - len, "%s%ld", i ? "," : "", l.j[i].id);
    gpx__slurm_job *jobs = NULL;
    size_t nj = 0, hcap = 0;
    rc = gpx__slurm_squeue(sx, filter, &jobs, &nj, err, errlen);
    free(filter);
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        const gpx__slurm_job *running = NULL;
        for (size_t k = 0; k < nj && running == NULL; k++)
            if (jobs[k].id == l.j[i].id &&
                (strcmp(jobs[k].state, "RUNNING") == 0 || strcmp(jobs[k].state, "SUSPENDED") == 0))
                running = &jobs[k];
        char rec[GP_NAME_MAX + 200], node[GP_NAME_MAX + 1];
        long job;
        uint32_t idx;
        int count;
        if (running == NULL ||
            (gpx__slurm_read_untrusted(l.j[i].dir, "gpus", rec, sizeof rec) <= 0 &&
             gpx__slurm_read_untrusted(l.j[i].dir, "user/gpus", rec, sizeof rec) <= 0) ||
            gpx__slurm_parse_gpus_record(rec, &job, node, sizeof node, &idx, &count) < 0 ||
            job != l.j[i].id || count != l.j[i].ngpus || strcmp(node, running->nodes) != 0)
            continue;
        if (GP_ARRAY_ROOM(*out, *nout, hcap, 64) < 0) {
            rc = GP_ENOMEM;
            break;
        }
        held *h = &(*out)[(*nout)++];
        snprintf(h->node, sizeof h->node, "%s", node);
        h->gpus = (gpu_set){count, idx, 1};
    }
    free(jobs);
    free(l.j);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *nout = 0;
    }
    return rc;
}

/*
 * The GPUs of a node that Slurm gave to jobs that are not gpupool's: those
 * sinfo says in use (gres_used) and no job of gpupool's holds, by Slurm's
 * indices. A gpupool job that Slurm still lists (COMPLETING) after its GPUs
 * went back counts for nothing, and a GPU counts once however many of
 * gpupool's jobs name it. Where Slurm gives no indices, by count.
 */
static int foreign_gpus(const char *node, const char *gres_used, const held *own, size_t nown) {
    gpu_set used = gres_gpus(gres_used);
    uint32_t mine = 0;
    int mine_count = 0, have_idx = used.have_idx;
    for (size_t k = 0; k < nown; k++) {
        if (strcmp(own[k].node, node) != 0)
            continue;
        mine |= own[k].gpus.idx;
        mine_count += own[k].gpus.count;
        have_idx &= own[k].gpus.have_idx;
    }
    int foreign = have_idx ? __builtin_popcount(used.idx & ~mine) : used.count - mine_count;
    return foreign > 0 ? foreign : 0;
}

static void add_label(gp_node_spec *node, const char *key, const char *value) {
    if (node->nlabels >= GP_MAX_LABELS)
        return;
    gp_label *l = &node->labels[node->nlabels++];
    clean_name(l->key, sizeof l->key, key, strlen(key));
    clean_name(l->value, sizeof l->value, value, strlen(value));
}

/* Features become labels "feature.<name>=true"; the first feature that is
 * "rack<...>", "island<...>" or "domain-<...>" also names the topology
 * domain (otherwise the domain is the node's first partition). */
static void add_features(gp_node_spec *node, const char *features, const char *part) {
    snprintf(node->domain, sizeof node->domain, "%s", part != NULL ? part : "slurm");
    int have_domain = 0;
    const char *p = features != NULL ? features : "";
    while (*p != '\0') {
        size_t len = strcspn(p, ",");
        char f[GP_NAME_MAX + 1], key[GP_NAME_MAX + 1];
        clean_name(f, sizeof f, p, len);
        if (f[0] != '\0') {
            snprintf(key, sizeof key, "feature.%.50s", f);
            add_label(node, key, "true");
            if (!have_domain && (strncmp(f, "rack", 4) == 0 || strncmp(f, "island", 6) == 0 ||
                                 strncmp(f, "domain-", 7) == 0)) {
                snprintf(node->domain, sizeof node->domain, "%s", f);
                have_domain = 1;
            }
        }
        p += len;
        if (*p == ',')
            p++;
    }
}

int gpx__slurm_inventory(const gpx__slurm *sx, gp_node_spec *nodes, size_t max, size_t *n,
                         char *err, size_t errlen) {
    const char *argv[] = {"sinfo", "--json", NULL};
    json_t *root;
    int rc = gpx__slurm_json(sx, argv, &root, err, errlen);
    if (rc < 0)
        return rc;
    /* After sinfo (own_gpus says why). */
    held *own = NULL;
    size_t nown = 0;
    if ((rc = own_gpus(sx, &own, &nown, err, errlen)) < 0) {
        json_decref(root);
        return rc;
    }
    json_t *list = json_object_get(root, "nodes");
    if (!json_is_array(list)) {
        gp_errf(err, errlen, "sinfo --json: no 'nodes' array");
        json_decref(root);
        free(own);
        return GP_EPARSE;
    }
    *n = 0;
    size_t i;
    json_t *jn;
    json_array_foreach(list, i, jn) {
        const char *name = json_string_value(json_object_get(jn, "name"));
        const char *part = name != NULL ? node_partition(sx, jn) : NULL;
        if (part == NULL)
            continue;
        if (*n >= max)
            break;
        gp_node_spec *node = &nodes[*n];
        memset(node, 0, sizeof *node);
        node->schedulable = node_usable(jn);
        clean_name(node->name, sizeof node->name, name, strlen(name));
        node->cpu_milli = (int64_t)json_integer_value(json_object_get(jn, "cpus")) * 1000;
        node->mem_bytes = (int64_t)json_integer_value(json_object_get(jn, "real_memory")) << 20;
        const char *gres = json_string_value(json_object_get(jn, "gres"));
        if ((rc = add_gres(sx, node, gres != NULL ? gres : "", err, errlen)) < 0) {
            json_decref(root);
            free(own);
            return rc;
        }
        /* GPUs that Slurm gave to jobs that are not gpupool's are not the
         * pool's until they are free again: the engine withholds as many
         * (never a bound one), and every GPU keeps its number. */
        int foreign =
            foreign_gpus(name, json_string_value(json_object_get(jn, "gres_used")), own, nown);
        node->gpus_taken = foreign < node->ngpus ? foreign : node->ngpus;
        json_t *parts = json_object_get(jn, "partitions");
        add_features(node, json_string_value(json_object_get(jn, "active_features")),
                     json_string_value(json_array_get(parts, 0)));
        add_label(node, "gpupool.executor", "slurm");
        if (part[0] != '\0')
            add_label(node, "slurm.partition", part);
        /* Where the node is reached: a gang's rendezvous (MASTER_ADDR). */
        const char *addr = json_string_value(json_object_get(jn, "address"));
        add_label(node, "slurm.address", addr != NULL && addr[0] ? addr : name);
        (*n)++;
    }
    json_decref(root);
    free(own);
    return 0;
}
