/*
 * projects.h — the department / project tree that `replay` and `plan` run
 * under: the projects file (a small CSV), the tree used when there is none,
 * the deterministic rule that assigns pods without a project column to
 * projects, the scaling of deserved quotas to the pool being simulated, and
 * the static split of the nodes among projects (the `static` mode).
 *
 * Projects file columns: name (required), parent, deserved_gpus, weight,
 * limit_gpus, priority. A parent must be listed before its children; rows
 * that are nobody's parent are the projects (leaves), which take the pods.
 * GPU amounts are decimal GPUs ("0.5") kept in milli-GPU.
 */
#ifndef GP_SIM_PROJECTS_H
#define GP_SIM_PROJECTS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/gp_engine.h"
#include "sim/trace.h"

typedef struct sim_project {
    char name[GP_NAME_MAX + 1];
    char parent[GP_NAME_MAX + 1]; /* "" for a top-level row */
    int64_t deserved_milli;       /* -1 if blank (a department: sum of children) */
    int64_t limit_milli;          /* GP_UNLIMITED if blank */
    int32_t weight;               /* over-quota weight, >= 1 (default 1) */
    int32_t priority;
    int32_t leaf;     /* 1: a project (takes pods) */
    int32_t relative; /* 1: deserved is a share, scaled to fill the pool */
} sim_project;

/* Reads a projects file; *out is malloc'ed. Returns 0, or a negative code
 * with "FILE:LINE: field NAME: reason" in err and *out NULL. */
int sim_read_projects(const char *path, sim_project **out, size_t *n, char *err, size_t errlen);
int sim_read_projects_mem(const char *name, const char *data, size_t len, sim_project **out,
                          size_t *n, char *err, size_t errlen);

/*
 * The tree used without a projects file: if the pods name projects, one
 * department "org" with those projects (in order of first appearance), equal
 * deserved quotas; otherwise "org" with four projects team-a .. team-d.
 * Deserved quotas are relative (equal shares that fill whatever pool is
 * simulated, see sim_scale_quotas). Returns 0 or GP_ENOMEM.
 */
int sim_default_projects(const sim_pod *pods, size_t npods, sim_project **out, size_t *n);

/*
 * Assigns every pod to a leaf: leaf_of[i] is an index into pr[]. A pod that
 * names a project goes to that leaf (an error naming the pod's line if it is
 * unknown or not a leaf). A pod without one is assigned by the documented
 * rule: h = FNV-1a 64 of the pod's name; leaves in file order with weights
 * equal to their deserved milli-GPU (1 each if all are 0); the pod goes to
 * the first leaf whose cumulative weight exceeds h mod (total weight). So
 * each project's share of the pods follows its deserved quota.
 */
int sim_assign_projects(const sim_project *pr, size_t npr, const sim_pod *pods, size_t npods,
                        const char *pods_path, int32_t *leaf_of, char *err, size_t errlen);

/*
 * Deserved quotas for a pool of capacity_milli: if the leaves' deserved
 * quotas add up to more than the pool, or the rows are relative shares (the
 * default tree), every deserved quota (leaves and departments) is scaled by
 * capacity / sum, rounded down; otherwise kept.
 * Departments with a blank deserved get the sum of their children. Writes
 * out[i] for each row of pr.
 */
void sim_scale_quotas(const sim_project *pr, size_t npr, int64_t capacity_milli, int64_t *out);

/*
 * The static split: owner[j] (an index into pr[], always a leaf) for every
 * node j. Nodes are taken grouped by GPU model (then most GPUs first, then
 * file order) and each goes to the leaf furthest below its target, where
 * targets divide the pool's GPUs in proportion to the leaves' deserved
 * quotas (equally if all are 0); CPU-only nodes are split by the same rule
 * on CPU. Every project thus gets a slice of every model.
 */
int sim_static_split(const sim_project *pr, size_t npr, const int64_t *deserved,
                     const sim_node *nodes, size_t nnodes, int32_t *owner);

/* 1 if the split (owner[]) leaves a leaf with a share without any GPU, as on a
 * pool of fewer GPU nodes than projects. */
int sim_static_starves(const sim_project *pr, size_t npr, const int64_t *deserved,
                       const sim_node *nodes, size_t nnodes, const int32_t *owner);

/*
 * The static split by GPU instead of by node, for a pool too small to give
 * every project nodes of its own: GPUs are handed out one at a time by the
 * same rule, in the same order of nodes, and each node becomes one part per
 * project holding GPUs on it ("NODE~PROJECT", with that share of the node's
 * CPU and memory), as projects that own some GPUs of a shared server. CPU-only
 * nodes are split whole, as sim_static_split does. *out and *owner (malloc'ed,
 * *nout entries, the caller frees them) hold the parts and their owners; on
 * error (GP_ENOMEM) nothing is allocated.
 */
int sim_static_carve(const sim_project *pr, size_t npr, const int64_t *deserved,
                     const sim_node *nodes, size_t nnodes, sim_node **out, int32_t **owner,
                     size_t *nout);

#endif /* GP_SIM_PROJECTS_H */
