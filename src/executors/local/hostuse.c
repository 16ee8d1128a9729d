/*
 * hostuse.c — how much of this host's CPU and memory is really in use, for
 * the node list (GP_EXEC_CTL_NODE_USAGE): what tasks ask for is the
 * engine's book, this is what the machine says, so that work that asked
 * for nothing (or more than it asked) shows.
 *
 * CPU: the busy share of all jiffies in /proc/stat's "cpu" line since the
 * previous call, times the CPUs online, in milli-cores (unknown at the first
 * call). Memory: MemTotal less MemAvailable in /proc/meminfo.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "executors/local/local.h"
#include "executors/util.h"

/* The aggregate counters of /proc/stat: busy (user, nice, system, irq,
 * softirq, steal) and all (those with idle and iowait). 0 or -1. */
static int cpu_counters(uint64_t *busy, uint64_t *all) {
    char buf[512];
    ssize_t n = gpx__read_small("/proc/stat", buf, sizeof buf);
    unsigned long long v[8] = {0};
    if (n <= 0 || sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                         &v[3], &v[4], &v[5], &v[6], &v[7]) < 4)
        return -1;
    *busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    *all = *busy + v[3] + v[4];
    return 0;
}

/* MemTotal less MemAvailable, in bytes; -1 if /proc/meminfo does not say. */
static int64_t mem_in_use(void) {
    FILE *f = fopen("/proc/meminfo", "re");
    if (f == NULL)
        return -1;
    char line[256];
    long long total = -1, avail = -1, kb;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "MemTotal: %lld kB", &kb) == 1)
            total = kb;
        else if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
            avail = kb;
    fclose(f);
    return total >= 0 && avail >= 0 && avail <= total ? (int64_t)(total - avail) * 1024 : -1;
}

int gpx__host_usage(gpx__local *lx, gp_exec_node_usage *u) {
    u->n = 0;
    if (u->max == 0)
        return 0;
    gp_node_usage *o = &u->nodes[u->n++];
    memset(o, 0, sizeof *o);
    gpx__exec_fmt(o->node, sizeof o->node, "%s", lx->emulated ? lx->emu.name : lx->node_name);
    o->cpu_milli = -1;
    uint64_t busy, all;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpu_counters(&busy, &all) == 0) {
        if (lx->cpu_all != 0 && all > lx->cpu_all && busy >= lx->cpu_busy && ncpu > 0)
            o->cpu_milli =
                (int64_t)((busy - lx->cpu_busy) * 1000u * (uint64_t)ncpu / (all - lx->cpu_all));
        lx->cpu_busy = busy;
        lx->cpu_all = all;
    }
    o->mem_bytes = mem_in_use();
    return 0;
}
