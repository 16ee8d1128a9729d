/*
 * gp_local.h — what the daemon may know about the `local` executor beyond the
 * generic interface of executor.h: the operations it answers through
 * gp_exec_control(), and the names of its configuration keys.
 *
 * The local executor runs each task as a process group on this host, under a
 * small supervising process that outlives the daemon and records the task's
 * exit status on disk. Its configuration string is "key=value,..." with the
 * keys below (docs/executors.md describes each in full):
 *
 *   state_dir=DIR        per-task state (handles, exit files); default
 *                        /var/lib/gpupool/tasks
 *   inventory=FILE       emulated GPUs (docs/executors.md gives the format);
 *                        when set, NVML is not consulted and every GPU is
 *                        labelled emulated
 *   nvml=auto|off|LIB    where to find NVML; auto = dlopen("libnvidia-ml.so.1")
 *   interposer=FILE      the slice enforcement library injected with
 *                        LD_PRELOAD; default /usr/lib/gpupool/libgpuslice.so
 *   cgroup=auto|v2|v1|off  how to apply CPU and memory limits
 *   cgroup_parent=NAME   the cgroup under which task cgroups are made;
 *                        default "gpupool"
 *   node=NAME            the node's name; default the host name
 *   domain=NAME          the node's topology domain; default "local"
 */
#ifndef GP_LOCAL_H
#define GP_LOCAL_H

#include <stddef.h>

#include "executors/executor.h"

/* gp_exec_control() operations of the local executor. */
enum {
    /* arg: gp_local_describe *. Fills a description of how this executor
     * runs tasks, for the daemon's log, its /nodes answer and its dashboard. */
    GP_LOCAL_CTL_DESCRIBE = 1,
    /* arg: gp_local_list *. Lists the handles of every task that has state
     * under state_dir (running or finished but not yet reaped), so that after
     * a restart the daemon can find tasks it has no record of. */
    GP_LOCAL_CTL_LIST = 2
};

typedef struct gp_local_describe {
    int emulated;         /* 1: the GPUs come from an inventory file */
    char gpus[256];       /* where the GPUs come from, in a sentence */
    char cgroups[256];    /* how CPU and memory limits are applied, or why not */
    char interposer[256]; /* whether fractional slices are enforced */
    char state_dir[256];
} gp_local_describe;

typedef struct gp_local_list {
    char (*handles)[GP_HANDLE_MAX]; /* in: room for max handles */
    size_t max;                     /* in */
    size_t n;                       /* out: tasks found; may exceed max */
} gp_local_list;

#endif /* GP_LOCAL_H */
