/*
 * trace.h — the trace files the simulator reads: node lists and pod lists in
 * the format of the Alibaba GPU cluster trace 2023 ("openb"), which is also
 * the generic format for an organisation's own history (docs/simulator.md
 * describes both).
 *
 * Node list columns: sn (or name), cpu_milli, memory_mib, gpu, model.
 * Pod list columns: name, cpu_milli, memory_mib, num_gpu, gpu_milli, and
 * optionally gpu_spec, qos, pod_phase, creation_time, deletion_time,
 * scheduled_time (openb), and project, user, kind, priority, tasks (the
 * generic format). Every value is checked; the first bad one is reported as
 * "FILE:LINE: field NAME: reason" and nothing is returned.
 */
#ifndef GP_SIM_TRACE_H
#define GP_SIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/gp_engine.h"

#define SIM_SPEC_MAX 255

typedef struct sim_node {
    char name[GP_NAME_MAX + 1];
    int64_t cpu_milli;
    int64_t mem_bytes;
    int32_t ngpus;
    char model[GP_NAME_MAX + 1]; /* "" for a node without GPUs */
} sim_node;

typedef struct sim_pod {
    char name[GP_NAME_MAX + 1];
    int64_t cpu_milli;
    int64_t mem_bytes;
    int32_t ngpus;                 /* GPUs per task, 0..GP_MAX_GPUS_PER_NODE */
    int32_t gpu_milli;             /* per GPU: 1..999 share, 1000 whole, 0 none */
    char spec[SIM_SPEC_MAX + 1];   /* allowed models, '|'-separated; "" = any */
    int64_t creation, deletion;    /* seconds; -1 if absent */
    int64_t scheduled;             /* seconds; -1 if absent */
    long line;                     /* line in its file, for messages */
    char project[GP_NAME_MAX + 1]; /* "" if the trace has none */
    char user[GP_NAME_MAX + 1];
    gp_kind kind;
    int32_t kind_given;        /* 1: the trace had a kind column */
    int32_t latency_sensitive; /* qos LS or Guaranteed (openb) */
    int32_t priority;
    int32_t tasks; /* gang size, >= 1 */
} sim_pod;

/* Reads a node list; *out is malloc'ed (free it). Returns 0 or a negative
 * GP_E* code with the reason in err; on error *out is NULL. */
int sim_read_nodes(const char *path, sim_node **out, size_t *n, char *err, size_t errlen);

/* Reads a pod list, as above. */
int sim_read_pods(const char *path, sim_pod **out, size_t *n, char *err, size_t errlen);

/* The same two readers over a memory buffer named name (tests, fuzzing). */
int sim_read_nodes_mem(const char *name, const char *data, size_t len, sim_node **out, size_t *n,
                       char *err, size_t errlen);
int sim_read_pods_mem(const char *name, const char *data, size_t len, sim_pod **out, size_t *n,
                      char *err, size_t errlen);

/* Splits a pod's gpu_spec into the models of a task request. */
void sim_spec_models(const char *spec, gp_task_req *req);

/* Total GPU demand of one pod (all tasks), in milli-GPU. */
static inline int64_t sim_pod_milli(const sim_pod *p) {
    return (int64_t)p->ngpus * p->gpu_milli * p->tasks;
}

#endif /* GP_SIM_TRACE_H */
