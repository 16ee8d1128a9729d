/*
 * cgroup.c — CPU and memory limits for the local executor's tasks, through
 * cgroup v2 where the machine has it, cgroup v1 where it has that instead,
 * and nothing (said loudly) where neither can be written.
 *
 * Layout: every task gets a cgroup named after its key under a parent
 * (config key cgroup_parent, default "gpupool"):
 *   v2: <unified mount>/<parent>/<key>, with cpu.max, memory.max and
 *       pids.max; the parent and its ancestors get "+cpu +memory" (and
 *       "+pids" where the hierarchy offers it) in cgroup.subtree_control;
 *   v1: <cpu mount>/<parent>/<key> with cpu.cfs_period_us/cpu.cfs_quota_us,
 *       <memory mount>/<parent>/<key> with memory.limit_in_bytes, and, where
 *       a pids hierarchy is mounted, <pids mount>/<parent>/<key> with
 *       pids.max.
 * Every task has a process limit (config key pids_max, default
 * GPX__PIDS_MAX_DEFAULT): without one a task's fork loop reaches the host's
 * pid_max and no process of anyone can start.
 * The task joins its cgroups itself, between fork and exec, so that every
 * process it starts is inside; the supervisor stays outside, so that an
 * out-of-memory kill in the task's cgroup never takes the supervisor along.
 *
 * Mounts are found in /proc/self/mounts: a cgroup2 mount counts only if its
 * cgroup.controllers offers both cpu and memory (a hybrid system's
 * /sys/fs/cgroup/unified usually offers neither), otherwise the cgroup v1
 * mounts whose options name cpu and memory are used.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "common/units.h"
#include "executors/local/local.h"
#include "executors/registry.h"

#define CPU_PERIOD_US 100000

int gpx__cg_write(const char *dir, const char *file, const char *value) {
    char path[PATH_MAX];
    gpx__exec_fmt(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return gp_syserr(errno);
    ssize_t n = write(fd, value, strlen(value));
    int e = n < 0 ? errno : 0;
    close(fd);
    return n < 0 ? gp_syserr(e) : 0;
}

/* True if the space-separated list has the word w. */
int gpx__cg_has_word(const char *list, const char *w, char sep) {
    size_t wl = strlen(w);
    for (const char *p = list; *p != '\0';) {
        const char *e = strchr(p, sep);
        size_t l = e != NULL ? (size_t)(e - p) : strlen(p);
        while (l > 0 && (p[l - 1] == '\n' || p[l - 1] == ' '))
            l--;
        if (l == wl && strncmp(p, w, wl) == 0)
            return 1;
        if (e == NULL)
            break;
        p = e + 1;
    }
    return 0;
}

/* True if every space-separated word of words is in the list. */
static int has_words(const char *list, const char *words) {
    char copy[256];
    gpx__exec_fmt(copy, sizeof copy, "%s", words);
    char *save = NULL;
    for (char *w = strtok_r(copy, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save))
        if (!gpx__cg_has_word(list, w, ' '))
            return 0;
    return 1;
}

/* Says whether a line of a file is the one looked for (want says which); if
 * it is, puts the answer in out. */
typedef int (*line_match)(char *line, const void *want, char *out, size_t len);

/* Reads file a line at a time until match finds the one: 0 (the answer in
 * out), or -1 if no line is it or the file cannot be read. */
static int find_line(const char *file, line_match match, const void *want, char *out, size_t len) {
    FILE *f = fopen(file, "re");
    if (f == NULL)
        return -1;
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f) != NULL)
        found = match(line, want, out, len);
    fclose(f);
    return found ? 0 : -1;
}

/* The hierarchy gpx__cg_find_mount looks for. */
typedef struct {
    int v2;
    const char *controller;
} mount_want;

/* A line of /proc/self/mounts: its mount point, if it mounts the hierarchy. */
static int is_mount(char *line, const void *want, char *out, size_t len) {
    const mount_want *w = want;
    char dev[256], dir[512], type[64], opts[512];
    if (sscanf(line, "%255s %511s %63s %511s", dev, dir, type, opts) != 4)
        return 0;
    int found = 0;
    if (w->v2 && strcmp(type, "cgroup2") == 0) {
        char path[PATH_MAX], ctl[512];
        gpx__exec_fmt(path, sizeof path, "%s/cgroup.controllers", dir);
        found = w->controller == NULL ||
                (gpx__read_small(path, ctl, sizeof ctl) >= 0 && has_words(ctl, w->controller));
    } else if (!w->v2 && strcmp(type, "cgroup") == 0) {
        found = gpx__cg_has_word(opts, w->controller, ',');
    }
    if (found)
        gpx__exec_fmt(out, len, "%s", dir);
    return found;
}

int gpx__cg_find_mount(int v2, const char *controller, char *out, size_t len) {
    const mount_want w = {v2, controller};
    return find_line("/proc/self/mounts", is_mount, &w, out, len);
}

int gpx__cg_make_parent(const char *root, const char *rel, const char *enable, char *out,
                        size_t len) {
    gpx__exec_fmt(out, len, "%s", root);
    char part[PATH_MAX];
    gpx__exec_fmt(part, sizeof part, "%s", rel);
    if (enable != NULL) {
        /* The root cgroup may hold processes and still delegate. */
        gpx__cg_write(out, "cgroup.subtree_control", enable);
    }
    char *save = NULL;
    for (char *c = strtok_r(part, "/", &save); c != NULL; c = strtok_r(NULL, "/", &save)) {
        size_t l = strlen(out);
        gpx__exec_fmt(out + l, len - l, "/%s", c);
        if (mkdir(out, 0755) < 0 && errno != EEXIST)
            return gp_syserr(errno);
        if (enable != NULL) {
            int rc = gpx__cg_write(out, "cgroup.subtree_control", enable);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

static int try_v2(gpx__cgroups *cg, const char *parent) {
    char mnt[PATH_MAX];
    if (gpx__cg_find_mount(1, "cpu memory", mnt, sizeof mnt) < 0) {
        gpx__exec_fmt(cg->note, sizeof cg->note,
                      "no cgroup v2 hierarchy offers the cpu and memory controllers");
        return -1;
    }
    char ctl[512];
    int pids =
        gpx__cg_find_mount(1, "cpu memory pids", ctl, sizeof ctl) == 0 && strcmp(ctl, mnt) == 0;
    int rc = gpx__cg_make_parent(mnt, parent, pids ? "+cpu +memory +pids" : "+cpu +memory",
                                 cg->cpu_parent, sizeof cg->cpu_parent);
    if (rc < 0 && pids) {
        pids = 0; /* the pids controller may be bound elsewhere: go on without it */
        rc =
            gpx__cg_make_parent(mnt, parent, "+cpu +memory", cg->cpu_parent, sizeof cg->cpu_parent);
    }
    if (pids)
        gpx__exec_fmt(cg->pids_parent, sizeof cg->pids_parent, "v2");
    if (rc < 0) {
        gpx__exec_fmt(cg->note, sizeof cg->note, "cgroup v2: cannot prepare %s: %s", cg->cpu_parent,
                      gp_strerror(rc));
        return -1;
    }
    cg->mode = GPX__CG_V2;
    gpx__exec_fmt(cg->note, sizeof cg->note, "cgroup v2 under %s: CPU, memory%s limits applied",
                  cg->cpu_parent, pids ? " and process" : " (no pids controller: no process)");
    return 0;
}

static int try_v1(gpx__cgroups *cg, const char *parent) {
    char cpu[PATH_MAX], mem[PATH_MAX];
    if (gpx__cg_find_mount(0, "cpu", cpu, sizeof cpu) < 0 ||
        gpx__cg_find_mount(0, "memory", mem, sizeof mem) < 0) {
        gpx__exec_fmt(cg->note, sizeof cg->note,
                      "no cgroup v1 cpu and memory hierarchies are mounted");
        return -1;
    }
    int rc = gpx__cg_make_parent(cpu, parent, NULL, cg->cpu_parent, sizeof cg->cpu_parent);
    if (rc == 0)
        rc = gpx__cg_make_parent(mem, parent, NULL, cg->mem_parent, sizeof cg->mem_parent);
    if (rc < 0) {
        gpx__exec_fmt(cg->note, sizeof cg->note, "cgroup v1: cannot create %s/%s: %s", cpu, parent,
                      gp_strerror(rc));
        return -1;
    }
    cg->mode = GPX__CG_V1;
    /* The freezer, for pause, where one is mounted: without it a task is not paused (its
     * workload falls back to checkpoint mode). */
    char frz[PATH_MAX];
    if (gpx__cg_find_mount(0, "freezer", frz, sizeof frz) < 0 ||
        gpx__cg_make_parent(frz, parent, NULL, cg->frz_parent, sizeof cg->frz_parent) < 0)
        cg->frz_parent[0] = '\0';
    char pids[PATH_MAX];
    if (gpx__cg_find_mount(0, "pids", pids, sizeof pids) < 0 ||
        gpx__cg_make_parent(pids, parent, NULL, cg->pids_parent, sizeof cg->pids_parent) < 0)
        cg->pids_parent[0] = '\0';
    const char *frz_txt = cg->frz_parent[0] ? "; freezer for pause" : "";
    if (cg->pids_parent[0])
        gpx__exec_fmt(cg->note, sizeof cg->note,
                      "cgroup v1 under %s and %s and %s: CPU, memory and process limits applied%s",
                      cg->cpu_parent, cg->mem_parent, cg->pids_parent, frz_txt);
    else
        gpx__exec_fmt(cg->note, sizeof cg->note,
                      "cgroup v1 under %s and %s: CPU and memory limits applied (no pids "
                      "hierarchy: no process limit)%s",
                      cg->cpu_parent, cg->mem_parent, frz_txt);
    return 0;
}

int gpx__cg_detect(gpx__cgroups *cg, const char *want, const char *parent, int64_t pids_max,
                   char *err, size_t errlen) {
    memset(cg, 0, sizeof *cg);
    cg->pids_max = pids_max;
    if (strcmp(want, "off") == 0) {
        gpx__exec_fmt(cg->note, sizeof cg->note,
                      "cgroups are off (cgroup=off): tasks run without CPU and memory limits");
        return 0;
    }
    if (parent[0] == '\0' || parent[0] == '/' || strstr(parent, "..") != NULL) {
        gp_errf(err, errlen, "cgroup_parent: '%s' must be a relative cgroup name", parent);
        return GP_EINVAL;
    }
    if (strcmp(want, "v2") == 0 || strcmp(want, "v1") == 0) {
        if ((want[1] == '2' ? try_v2 : try_v1)(cg, parent) == 0)
            return 0;
        gp_errf(err, errlen, "cgroup: %s", cg->note);
        return GP_ENOTSUP;
    }
    if (strcmp(want, "auto") != 0) {
        gp_errf(err, errlen, "cgroup: '%s' is not one of auto, v2, v1, off", want);
        return GP_EINVAL;
    }
    if (try_v2(cg, parent) == 0)
        return 0;
    char why2[256];
    gpx__exec_fmt(why2, sizeof why2, "%s", cg->note);
    if (try_v1(cg, parent) == 0)
        return 0;
    char why1[256];
    gpx__exec_fmt(why1, sizeof why1, "%s", cg->note);
    gpx__exec_fmt(cg->note, sizeof cg->note,
                  "no cgroups (%.100s; %.100s): tasks run without CPU and memory limits", why2,
                  why1);
    cg->mode = GPX__CG_NONE;
    return 0;
}

int gpx__cg_make_dir(char *out, size_t len, const char *parent, const char *name) {
    gpx__exec_fmt(out, len, "%s/%s", parent, name);
    /* The instance's parent may have been removed while it held no task
     * (an executor closed on the same state directory removes it): make it
     * again. */
    if (mkdir(out, 0755) < 0 && errno == ENOENT)
        mkdir(parent, 0755);
    return mkdir(out, 0755) < 0 && errno != EEXIST ? gp_syserr(errno) : 0;
}

void gpx__cg_create(const gpx__cgroups *cg, const char *name, int64_t cpu_milli, int64_t mem_bytes,
                    gpx__task_cg *out) {
    memset(out, 0, sizeof *out);
    if (cg->mode == GPX__CG_NONE) {
        gpx__exec_fmt(out->note, sizeof out->note, "no cgroup: %s", cg->note);
        return;
    }
    /* The kernel refuses quotas under 1 ms per period. */
    int64_t quota_us = cpu_milli * CPU_PERIOD_US / 1000;
    char quota[32], mem[32], pids[32];
    gpx__exec_fmt(quota, sizeof quota, "%lld", (long long)(quota_us < 1000 ? 1000 : quota_us));
    gpx__exec_fmt(mem, sizeof mem, "%lld", (long long)mem_bytes);
    gpx__exec_fmt(pids, sizeof pids, "%lld", (long long)cg->pids_max);
    const char *what = "";
    int rc;
    if (cg->mode == GPX__CG_V2) {
        char max[64];
        gpx__exec_fmt(max, sizeof max, "%s %d", quota, CPU_PERIOD_US);
        rc = gpx__cg_make_dir(out->dirs[0], sizeof out->dirs[0], cg->cpu_parent, name);
        out->ndirs = rc == 0;
        if (rc == 0 && cpu_milli > 0 && (rc = gpx__cg_write(out->dirs[0], "cpu.max", max)) < 0)
            what = "cpu.max";
        if (rc == 0 && mem_bytes > 0 && (rc = gpx__cg_write(out->dirs[0], "memory.max", mem)) < 0)
            what = "memory.max";
        if (rc == 0 && cg->pids_max > 0 && cg->pids_parent[0] &&
            (rc = gpx__cg_write(out->dirs[0], "pids.max", pids)) < 0)
            what = "pids.max";
    } else {
        char period[32];
        gpx__exec_fmt(period, sizeof period, "%d", CPU_PERIOD_US);
        rc = gpx__cg_make_dir(out->dirs[0], sizeof out->dirs[0], cg->cpu_parent, name);
        out->ndirs = rc == 0;
        if (rc == 0) {
            rc = gpx__cg_make_dir(out->dirs[1], sizeof out->dirs[1], cg->mem_parent, name);
            out->ndirs += rc == 0;
        }
        if (rc == 0 && cg->frz_parent[0] != '\0' &&
            gpx__cg_make_dir(out->dirs[out->ndirs], sizeof out->dirs[0], cg->frz_parent, name) == 0)
            out->ndirs++;
        if (rc == 0 && cpu_milli > 0 &&
            ((rc = gpx__cg_write(out->dirs[0], "cpu.cfs_period_us", period)) < 0 ||
             (rc = gpx__cg_write(out->dirs[0], "cpu.cfs_quota_us", quota)) < 0))
            what = "cpu.cfs_quota_us";
        if (rc == 0 && mem_bytes > 0 &&
            (rc = gpx__cg_write(out->dirs[1], "memory.limit_in_bytes", mem)) < 0)
            what = "memory.limit_in_bytes";
        if (rc == 0 && cg->pids_max > 0 && cg->pids_parent[0]) {
            char *pd = out->dirs[out->ndirs];
            rc = gpx__cg_make_dir(pd, sizeof out->dirs[0], cg->pids_parent, name);
            out->ndirs += rc == 0;
            if (rc == 0 && (rc = gpx__cg_write(pd, "pids.max", pids)) < 0)
                what = "pids.max";
        }
    }
    if (rc < 0) {
        gpx__cg_remove(out);
        memset(out, 0, sizeof *out);
        gpx__exec_fmt(
            out->note, sizeof out->note,
            "no cgroup: cannot set up %s/%s%s%s: %s; the task runs without CPU and memory "
            "limits",
            cg->cpu_parent, name, what[0] ? " " : "", what, gp_strerror(rc));
        return;
    }
    char cpu_txt[48] = "no CPU limit", mem_txt[48] = "no memory limit",
         pids_txt[48] = "no process limit";
    if (cpu_milli > 0)
        gpx__exec_fmt(cpu_txt, sizeof cpu_txt, "CPU %lldm", (long long)cpu_milli);
    if (mem_bytes > 0) {
        char size[32];
        gp_format_size(mem_bytes, size, sizeof size);
        gpx__exec_fmt(mem_txt, sizeof mem_txt, "memory %s", size);
    }
    if (cg->pids_max > 0 && cg->pids_parent[0])
        gpx__exec_fmt(pids_txt, sizeof pids_txt, "at most %lld processes", (long long)cg->pids_max);
    gpx__exec_fmt(out->note, sizeof out->note, "cgroup %s %s: %s, %s, %s",
                  cg->mode == GPX__CG_V2 ? "v2" : "v1", out->dirs[0], cpu_txt, mem_txt, pids_txt);
}

void gpx__cg_remove(const gpx__task_cg *tc) {
    /* A frozen (paused) task cannot die until it is thawed. */
    gpx__freeze(tc, 0, NULL, 0);
    for (int i = 0; i < tc->ndirs; i++) {
        /* v2 (5.14+) kills a whole cgroup in one write; elsewhere signal each
         * member until none is left, then wait for the kernel to let go. */
        gpx__cg_write(tc->dirs[i], "cgroup.kill", "1");
        for (int round = 0; round < 200; round++) {
            if (gpx__cg_signal(tc, SIGKILL, 0) == 0 && (rmdir(tc->dirs[i]) == 0 || errno == ENOENT))
                break;
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

int gpx__cg_save(const gpx__task_cg *tc, const char *file) {
    if (tc->ndirs == 0)
        return unlink(file) < 0 && errno != ENOENT ? GP_EIO : 0;
    FILE *f = fopen(file, "we");
    if (f == NULL)
        return GP_EIO;
    for (int i = 0; i < tc->ndirs; i++)
        fprintf(f, "%s\n", tc->dirs[i]);
    return fclose(f) == 0 ? 0 : GP_EIO;
}

int gpx__cg_load(gpx__task_cg *tc, const char *file) {
    memset(tc, 0, sizeof *tc);
    FILE *f = fopen(file, "re");
    if (f == NULL)
        return errno == ENOENT ? 0 : GP_EIO;
    char line[PATH_MAX];
    while (tc->ndirs < GPX__CG_DIRS && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '/')
            gpx__exec_fmt(tc->dirs[tc->ndirs++], sizeof tc->dirs[0], "%s", line);
    }
    fclose(f);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* What our own cgroup allows (for the inventory)                            */
/* ------------------------------------------------------------------------ */

/* A line of /proc/self/cgroup, "id:controllers:path": its path, if it is the
 * hierarchy of the controller wanted ("" for v2). */
static int is_own(char *line, const void *want, char *out, size_t len) {
    const char *controller = want;
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':');
    char *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
    if (c2 == NULL)
        return 0;
    *c2 = '\0';
    const char *ctls = c1 + 1;
    int found = controller[0] == '\0' ? ctls[0] == '\0' : gpx__cg_has_word(ctls, controller, ',');
    if (found)
        gpx__exec_fmt(out, len, "%s", c2 + 1);
    return found;
}

/* Finds our own cgroup path in the hierarchy of controller ("" for v2). */
static int own_path(const char *controller, char *out, size_t len) {
    return find_line("/proc/self/cgroup", is_own, controller, out, len);
}

/* Reads one integer (or "max": -1) from dir/file; -2 if unreadable. */
static long long read_num(const char *root, const char *rel, const char *file) {
    char path[PATH_MAX], buf[128];
    gpx__exec_fmt(path, sizeof path, "%s%s/%s", root, rel, file);
    if (gpx__read_small(path, buf, sizeof buf) <= 0)
        return -2;
    if (strncmp(buf, "max", 3) == 0)
        return -1;
    long long v = -2;
    sscanf(buf, "%lld", &v);
    return v;
}

void gpx__cg_own_limits(int64_t *cpu_milli, int64_t *mem_bytes) {
    char mnt[PATH_MAX], rel[PATH_MAX], buf[128];
    *cpu_milli = -1;
    *mem_bytes = -1;
    if (gpx__cg_find_mount(1, "cpu memory", mnt, sizeof mnt) == 0 &&
        own_path("", rel, sizeof rel) == 0) {
        char path[PATH_MAX];
        gpx__exec_fmt(path, sizeof path, "%s%s/cpu.max", mnt, rel);
        long long quota = -1, period = 0;
        if (gpx__read_small(path, buf, sizeof buf) > 0 && buf[0] != 'm' &&
            sscanf(buf, "%lld %lld", &quota, &period) == 2 && quota > 0 && period > 0)
            *cpu_milli = quota * 1000 / period;
        long long m = read_num(mnt, rel, "memory.max");
        *mem_bytes = m > 0 ? m : -1;
        return;
    }
    if (gpx__cg_find_mount(0, "cpu", mnt, sizeof mnt) == 0 &&
        own_path("cpu", rel, sizeof rel) == 0) {
        long long quota = read_num(mnt, rel, "cpu.cfs_quota_us");
        long long period = read_num(mnt, rel, "cpu.cfs_period_us");
        if (quota > 0 && period > 0)
            *cpu_milli = quota * 1000 / period;
    }
    if (gpx__cg_find_mount(0, "memory", mnt, sizeof mnt) == 0 &&
        own_path("memory", rel, sizeof rel) == 0) {
        long long m = read_num(mnt, rel, "memory.limit_in_bytes");
        /* v1 says "unlimited" with a number near 2^63. */
        *mem_bytes = m > 0 && m < (1LL << 60) ? m : -1;
    }
}
