/*
 * inventory.c — what the local executor reports about its node: the GPUs,
 * from NVML loaded at run time or from an emulated inventory file, and the
 * host's CPU and memory.
 *
 * NVML is loaded at run time (executors/nvml.c), so that one binary runs on
 * machines with and without NVIDIA's driver, and no NVML or CUDA header is
 * needed to build. The emulated inventory file lets
 * a new user try everything on a laptop; its format (docs/executors.md):
 *
 *     # comments run from '#' to the end of the line
 *     node   = laptop           # default: the host name (or config key node)
 *     domain = desk             # default: "local" (or config key domain)
 *     cpu    = 16               # cores, or milli-cores as "15500m"; default: the host's
 *     memory = 64G              # bytes, K/M/G/T suffixes; default: the host's
 *     label  = zone=lab         # repeatable
 *     gpu    = H100 80G 8       # MODEL MEMORY [COUNT] [sm=N] [mig=P1,P2,...]
 *                               #   [dev=FILE,FILE,...]; repeatable
 *
 * dev= names the device file of each GPU the line adds (one per GPU, in
 * order): a character device, whose major:minor the executor denies the
 * tasks not given that GPU. Emulated GPUs without one are never filtered.
 * Emulated GPUs get stable UUIDs "GPU-emulated-<node>-<i>", numbered in file
 * order, so that handles and bindings stay valid across restarts.
 */
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "common/gp_names.h"
#include "common/units.h"
#include "executors/local/local.h"
#include "executors/registry.h"

/* ======================================================================== */
/* Sizes and names                                                           */
/* ======================================================================== */

void gpx__host_resources(int64_t *cpu_milli, int64_t *mem_bytes) {
    cpu_set_t set;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        cpus = CPU_COUNT(&set);
    *cpu_milli = (cpus > 0 ? cpus : 1) * 1000;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    *mem_bytes = pages > 0 && page > 0 ? (int64_t)pages * page : 0;
    int64_t cg_cpu, cg_mem;
    gpx__cg_own_limits(&cg_cpu, &cg_mem);
    if (cg_cpu > 0 && cg_cpu < *cpu_milli)
        *cpu_milli = cg_cpu;
    if (cg_mem > 0 && (cg_mem < *mem_bytes || *mem_bytes == 0))
        *mem_bytes = cg_mem;
}

/* ======================================================================== */
/* The emulated inventory file                                               */
/* ======================================================================== */

static char *trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Reads the comma-separated device files of a gpu line into devs[0..count),
 * each a character device. */
static int parse_devs(char *list, long count, gpx__gpu_dev *devs, char *msg, size_t len) {
    char *save = NULL;
    long i = 0;
    for (char *p = strtok_r(list, ",", &save); p != NULL; p = strtok_r(NULL, ",", &save), i++) {
        struct stat st;
        if (i >= count)
            continue; /* too many: counted, and said below */
        if (stat(p, &st) < 0) {
            gpx__exec_fmt(msg, len, "dev: cannot find '%s': %s", p, strerror(errno));
            return GP_EPARSE;
        }
        if (!S_ISCHR(st.st_mode)) {
            gpx__exec_fmt(msg, len, "dev: '%s' is not a character device", p);
            return GP_EPARSE;
        }
        devs[i].major = (int32_t)major(st.st_rdev);
        devs[i].minor = (int32_t)minor(st.st_rdev);
    }
    if (i != count) {
        gpx__exec_fmt(msg, len, "dev: expected one device file for each of the %ld GPU(s)", count);
        return GP_EPARSE;
    }
    return 0;
}

/* Parses the value of a gpu line into node->gpus (count copies) and their
 * device files into devs (indexed as node->gpus). */
static int parse_gpu(char *value, gp_node_spec *node, gpx__gpu_dev *devs, char *msg, size_t len) {
    char *save = NULL;
    char *model = strtok_r(value, " \t", &save);
    char *mem = strtok_r(NULL, " \t", &save);
    if (model == NULL || mem == NULL) {
        gpx__exec_fmt(msg, len, "expected 'MODEL MEMORY [COUNT] [sm=N] [mig=P1,P2,...]'");
        return GP_EPARSE;
    }
    if (!gp_name_ok(model)) {
        gpx__exec_fmt(msg, len, "model '%s' is not a name (%s)", model, GP_NAME_RULE);
        return GP_EPARSE;
    }
    gp_gpu_spec g;
    memset(&g, 0, sizeof g);
    gpx__exec_fmt(g.model, sizeof g.model, "%s", model);
    if (gp_parse_size(mem, &g.mem_bytes) < 0 || g.mem_bytes <= 0) {
        gpx__exec_fmt(msg, len, "memory '%s' is not a size (like 80G or 85899345920)", mem);
        return GP_EPARSE;
    }
    long count = 1;
    char *dev = NULL;
    for (char *tok = strtok_r(NULL, " \t", &save); tok != NULL;
         tok = strtok_r(NULL, " \t", &save)) {
        char *end;
        if (strncmp(tok, "dev=", 4) == 0) {
            dev = tok + 4;
        } else if (strncmp(tok, "sm=", 3) == 0) {
            long sm = strtol(tok + 3, &end, 10);
            if (*end != '\0' || tok[3] == '\0' || sm <= 0 || sm > 100000) {
                gpx__exec_fmt(msg, len, "sm '%s' is not a positive count of multiprocessors",
                              tok + 3);
                return GP_EPARSE;
            }
            g.sm_count = (int32_t)sm;
        } else if (strncmp(tok, "mig=", 4) == 0) {
            char *s2 = NULL;
            g.mig = 1;
            for (char *p = strtok_r(tok + 4, ",", &s2); p != NULL; p = strtok_r(NULL, ",", &s2)) {
                if (g.nmig == GP_MAX_MIG_SLOTS || strlen(p) >= sizeof g.mig_layout[0]) {
                    gpx__exec_fmt(msg, len, "mig: at most %d profiles of at most %zu characters",
                                  GP_MAX_MIG_SLOTS, sizeof g.mig_layout[0] - 1);
                    return GP_EPARSE;
                }
                gpx__exec_fmt(g.mig_layout[g.nmig++], sizeof g.mig_layout[0], "%s", p);
            }
            if (g.nmig == 0) {
                gpx__exec_fmt(msg, len, "mig: expected a list of profiles like 3g.40gb,3g.40gb");
                return GP_EPARSE;
            }
        } else {
            count = strtol(tok, &end, 10);
            if (*end != '\0' || count <= 0) {
                gpx__exec_fmt(msg, len, "count '%s' is not a positive number of GPUs", tok);
                return GP_EPARSE;
            }
        }
    }
    /* Compared by subtraction: count may be as large as LONG_MAX, and the
     * sum would overflow past the bound. */
    if (count > GP_MAX_GPUS_PER_NODE - node->ngpus) {
        gpx__exec_fmt(msg, len, "count: a node holds at most %d GPUs", GP_MAX_GPUS_PER_NODE);
        return GP_EPARSE;
    }
    for (long i = 0; i < count; i++)
        devs[node->ngpus + i] = (gpx__gpu_dev){.major = -1, .minor = -1};
    if (dev != NULL && parse_devs(dev, count, devs + node->ngpus, msg, len) < 0)
        return GP_EPARSE;
    for (long i = 0; i < count; i++) {
        g.index = node->ngpus;
        node->gpus[node->ngpus++] = g;
    }
    return 0;
}

static int parse_label(char *value, gp_node_spec *node, char *msg, size_t len) {
    char *eq = strchr(value, '=');
    if (eq == NULL) {
        gpx__exec_fmt(msg, len, "expected 'KEY=VALUE', got '%s'", value);
        return GP_EPARSE;
    }
    *eq = '\0';
    char *k = trim(value), *v = trim(eq + 1);
    if (!gp_name_ok(k) || !gp_name_ok(v)) {
        gpx__exec_fmt(msg, len, "key and value must be names (%s)", GP_NAME_RULE);
        return GP_EPARSE;
    }
    if (node->nlabels == GP_MAX_LABELS) {
        gpx__exec_fmt(msg, len, "a node has at most %d labels", GP_MAX_LABELS);
        return GP_EPARSE;
    }
    gp_label *l = &node->labels[node->nlabels++];
    gpx__exec_fmt(l->key, sizeof l->key, "%s", k);
    gpx__exec_fmt(l->value, sizeof l->value, "%s", v);
    return 0;
}

/* Parses one "key = value" line. */
static int parse_line(const char *key, char *value, gp_node_spec *node, gpx__gpu_dev *devs,
                      char *msg, size_t len) {
    if (strcmp(key, "gpu") == 0)
        return parse_gpu(value, node, devs, msg, len);
    if (strcmp(key, "label") == 0)
        return parse_label(value, node, msg, len);
    if (strcmp(key, "node") == 0 || strcmp(key, "domain") == 0) {
        if (!gp_name_ok(value)) {
            gpx__exec_fmt(msg, len, "'%s' is not a name (%s)", value, GP_NAME_RULE);
            return GP_EPARSE;
        }
        gpx__exec_fmt(key[0] == 'n' ? node->name : node->domain, sizeof node->name, "%s", value);
        return 0;
    }
    if (strcmp(key, "cpu") == 0) {
        char *end;
        errno = 0;
        long long v = strtoll(value, &end, 10);
        int milli = *end == 'm' && end[1] == '\0';
        if (errno != 0 || end == value || (*end != '\0' && !milli) || v <= 0 ||
            v > INT64_MAX / 1000) {
            gpx__exec_fmt(msg, len,
                          "'%s' is not a number of cores (like 16) or milli-cores (16000m)", value);
            return GP_EPARSE;
        }
        node->cpu_milli = milli ? v : v * 1000;
        return 0;
    }
    if (strcmp(key, "memory") == 0) {
        if (gp_parse_size(value, &node->mem_bytes) < 0 || node->mem_bytes <= 0) {
            gpx__exec_fmt(msg, len, "'%s' is not a size (like 64G or 68719476736)", value);
            return GP_EPARSE;
        }
        return 0;
    }
    gpx__exec_fmt(msg, len, "unknown key (expected node, domain, cpu, memory, label or gpu)");
    return GP_EPARSE;
}

int gpx__inv_parse_file(const char *path, gp_node_spec *node, gpx__gpu_dev *devs, char *err,
                        size_t errlen) {
    gpx__gpu_dev scratch[GP_MAX_GPUS_PER_NODE];
    if (devs == NULL)
        devs = scratch;
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        gp_errf(err, errlen, "inventory: cannot read %s: %s", path, strerror(errno));
        return GP_ENOENT;
    }
    /* Scalar keys may be given once; remember where. */
    static const char *const once[] = {"node", "domain", "cpu", "memory"};
    int seen[4] = {0, 0, 0, 0};
    char line[1024];
    int lineno = 0, rc = 0;
    node->ngpus = 0;
    node->nlabels = 0;
    while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
        lineno++;
        char msg[200] = "";
        line[strcspn(line, "#")] = '\0';
        char *s = trim(line);
        if (*s == '\0')
            continue;
        char *eq = strchr(s, '=');
        if (eq == NULL) {
            gp_errf(err, errlen, "%s:%d: expected 'key = value', got '%.60s'", path, lineno, s);
            rc = GP_EPARSE;
            break;
        }
        *eq = '\0';
        char *key = trim(s), *value = trim(eq + 1);
        if (*value == '\0') {
            gp_errf(err, errlen, "%s:%d: %.30s: missing value", path, lineno, key);
            rc = GP_EPARSE;
            break;
        }
        for (size_t i = 0; i < 4; i++) {
            if (strcmp(key, once[i]) == 0 && seen[i] != 0) {
                gpx__exec_fmt(msg, sizeof msg, "given twice (first on line %d)", seen[i]);
                rc = GP_EPARSE;
            } else if (strcmp(key, once[i]) == 0) {
                seen[i] = lineno;
            }
        }
        if (rc == 0)
            rc = parse_line(key, value, node, devs, msg, sizeof msg);
        if (rc < 0)
            gp_errf(err, errlen, "%s:%d: %.30s: %s", path, lineno, key, msg);
    }
    fclose(f);
    if (rc == 0 && node->ngpus == 0) {
        gp_errf(err, errlen, "%s: no 'gpu' line: an emulated inventory declares its GPUs", path);
        rc = GP_EPARSE;
    }
    for (int i = 0; rc == 0 && i < node->ngpus; i++) {
        if (gpx__exec_fmt(node->gpus[i].uuid, sizeof node->gpus[i].uuid, "GPU-emulated-%s-%d",
                          node->name, i) < 0) {
            gp_errf(err, errlen, "%s: node: '%s' is too long to name emulated GPUs", path,
                    node->name);
            rc = GP_EPARSE;
        }
    }
    return rc;
}

/* What the executor declares when it was told to emulate GPUs and found none:
 * one node of 8 H100s, enough to try every kind of request. */
static const char default_emulated[] =
    "# Written by gpupool's local executor because no GPU was found: EMULATED\n"
    "# GPUs, for trying gpupool out. Processes run for real; the GPUs are not.\n"
    "node   = local\n"
    "domain = local\n"
    "gpu    = H100 80G 8\n";

int gpx__inv_emulate(const char *path, gp_node_spec *node, gpx__gpu_dev *devs, char *err,
                     size_t errlen) {
    FILE *f = fopen(path, "we");
    int ok = f != NULL && fputs(default_emulated, f) >= 0;
    if (f != NULL && fclose(f) != 0)
        ok = 0;
    if (!ok) {
        gp_errf(err, errlen, "emulate: cannot write the emulated inventory %s: %s", path,
                strerror(errno));
        return GP_EIO;
    }
    return gpx__inv_parse_file(path, node, devs, err, errlen);
}

/* ======================================================================== */
/* NVML                                                                      */
/* ======================================================================== */

/* "NVIDIA H100 80GB HBM3" -> "H100-80GB-HBM3": a model name without spaces. */
static void model_from_name(const char *name, char *out, size_t len) {
    if (strncmp(name, "NVIDIA ", 7) == 0)
        name += 7;
    gpx__exec_fmt(out, len, "%s", name);
    for (char *p = out; *p != '\0'; p++)
        if (!gp_name_char((unsigned char)*p))
            *p = '-';
}

int gpx__nvml_gpus(gpx__nvml *nv, gp_node_spec *node, char *err, size_t errlen) {
    node->ngpus = 0;
    if (nv->lib == NULL)
        return 0;
    unsigned int count = 0;
    int rc = nv->nvmlDeviceGetCount_v2(&count);
    if (rc != NVML_SUCCESS) {
        gp_errf(err, errlen, "nvml: nvmlDeviceGetCount_v2 failed (%d)", rc);
        return GP_EIO;
    }
    for (unsigned int i = 0; i < count && node->ngpus < GP_MAX_GPUS_PER_NODE; i++) {
        nvmlDevice_t dev;
        char uuid[GP_NVML_UUID_LEN], name[GP_NVML_NAME_LEN];
        nvmlMemory_t mem;
        unsigned int cur = 0, pending = 0;
        const char *what = NULL;
        if ((rc = nv->nvmlDeviceGetHandleByIndex_v2(i, &dev)) != NVML_SUCCESS)
            what = "nvmlDeviceGetHandleByIndex_v2";
        else if ((rc = nv->nvmlDeviceGetUUID(dev, uuid, sizeof uuid)) != NVML_SUCCESS)
            what = "nvmlDeviceGetUUID";
        else if ((rc = nv->nvmlDeviceGetName(dev, name, sizeof name)) != NVML_SUCCESS)
            what = "nvmlDeviceGetName";
        else if ((rc = nv->nvmlDeviceGetMemoryInfo(dev, &mem)) != NVML_SUCCESS)
            what = "nvmlDeviceGetMemoryInfo";
        if (what != NULL) {
            gp_errf(err, errlen, "nvml: %s failed for GPU %u (%d)", what, i, rc);
            return GP_EIO;
        }
        /* GPUs without MIG answer NOT_SUPPORTED, and old drivers lack the
         * call: both mean MIG off. */
        if (nv->nvmlDeviceGetMigMode == NULL ||
            nv->nvmlDeviceGetMigMode(dev, &cur, &pending) != NVML_SUCCESS)
            cur = 0;
        gp_gpu_spec *g = &node->gpus[node->ngpus++];
        memset(g, 0, sizeof *g);
        gpx__exec_fmt(g->uuid, sizeof g->uuid, "%.*s", (int)sizeof g->uuid - 1, uuid);
        model_from_name(name, g->model, sizeof g->model);
        g->mem_bytes = mem.total > (unsigned long long)INT64_MAX ? INT64_MAX : (int64_t)mem.total;
        g->index = (int32_t)i;
        g->mig = cur == 1;
    }
    return 0;
}

int gpx__nvml_devs(gpx__nvml *nv, gpx__gpu_dev *devs, int max) {
    unsigned int count = 0;
    if (nv->lib == NULL || nv->nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS)
        return 0;
    int n = 0;
    for (unsigned int i = 0; i < count && n < max; i++, n++) {
        nvmlDevice_t dev;
        unsigned int minor = 0;
        nvmlPciInfo_t pci;
        gpx__gpu_dev *d = &devs[n];
        memset(d, 0, sizeof *d);
        d->major = -1;
        d->minor = -1;
        if (nv->nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS)
            continue;
        if (nv->nvmlDeviceGetMinorNumber != NULL &&
            nv->nvmlDeviceGetMinorNumber(dev, &minor) == NVML_SUCCESS && minor < 255) {
            d->major = GPX__NVIDIA_MAJOR;
            d->minor = (int32_t)minor;
        }
        memset(&pci, 0, sizeof pci);
        if (nv->nvmlDeviceGetPciInfo_v3 != NULL &&
            nv->nvmlDeviceGetPciInfo_v3(dev, &pci) == NVML_SUCCESS)
            gpx__exec_fmt(d->bus, sizeof d->bus, "%.*s", (int)sizeof pci.busId, pci.busId);
    }
    return n;
}

int gpx__nvml_usage(gpx__nvml *nv, const char *node, gp_exec_gpu_usage *u) {
    u->n = 0;
    if (nv->lib == NULL) {
        gpx__exec_fmt(u->note, sizeof u->note, "no GPU to sample: %.150s", nv->note);
        return GP_ENOTSUP;
    }
    unsigned int count = 0;
    if (nv->nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS) {
        gpx__exec_fmt(u->note, sizeof u->note, "nvml: nvmlDeviceGetCount_v2 failed");
        return GP_EIO;
    }
    int busy_unknown = 0;
    for (unsigned int i = 0; i < count && u->n < u->max; i++) {
        gp_gpu_usage *g = &u->gpus[u->n++];
        memset(g, 0, sizeof *g);
        gpx__exec_fmt(g->node, sizeof g->node, "%s", node);
        g->index = (int32_t)i;
        gpx__nvml_sample(nv, i, &g->busy_permille, &g->mem_used);
        busy_unknown |= g->busy_permille < 0;
    }
    gpx__exec_fmt(u->note, sizeof u->note, "%s%s", nv->note,
                  busy_unknown ? "; busy time unknown on some GPUs (MIG or an old driver)" : "");
    return 0;
}
