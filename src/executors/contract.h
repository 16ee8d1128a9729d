/*
 * contract.h — internal to the executors: the environment a task receives,
 * built once for every executor (docs/workload-contract.md, "The
 * environment").
 *
 * gpx__contract_build() decides every variable and its value from the launch
 * and a few facts only the executor knows (who the task runs as, its
 * instance id, its checkpoint directory, where the interposer is); an
 * executor only delivers the list: the local one as execve's envp, the Slurm
 * one as quoted `export` lines of its batch script. The list is built in
 * time linear in its length (a workload may bring tens of thousands of
 * variables), and a name appears in it once.
 */
#ifndef GP_EXECUTORS_CONTRACT_H
#define GP_EXECUTORS_CONTRACT_H

#include <stddef.h>

#include "executors/executor.h"
#include "executors/util.h"

/* The PATH a task starts with. */
#define GPX__TASK_PATH "/usr/local/bin:/usr/bin:/bin"

/* What the builder needs beyond the launch. */
typedef struct gpx__contract_in {
    const gp_task_launch *t;
    const gpx__exec_user *user; /* the task's Unix user: USER, LOGNAME, HOME, SHELL */
    const char *instance;       /* the executor instance: prefix of GPUPOOL_SLICE */
    const char *node_name;      /* GPUPOOL_NODE when t->node is NULL */
    const char *ckpt_dir;       /* GPUPOOL_CHECKPOINT_DIR */
    const char *interposer;     /* the interposer's path; "" or NULL: none */
    int interposer_found;       /* 1: it exists; 0: it does not; -1: decided where
                                   the task runs (the variables it brings are
                                   marked if_interposer) */
    int engine_devices;         /* 1: the cluster engine sets CUDA_VISIBLE_DEVICES
                                   to the GPUs it gave; only a task without GPUs
                                   gets it (empty) from the list */
    int emulated;               /* GPUPOOL_EMULATED=1 */
    const char *master_addr;    /* a gang's MASTER_ADDR (task 0's address) */
} gpx__contract_in;

/* One variable. */
typedef struct gpx__env_var {
    char *kv;        /* "NAME=VALUE", owned by the list */
    size_t name_len; /* the value starts at kv + name_len + 1 */
    /* 1: set only where the interposer exists on the task's node; there,
     * `otherwise` (a value, NULL: unset) holds instead. */
    int if_interposer;
    char *otherwise;
} gpx__env_var;

typedef struct gpx__contract {
    gpx__env_var *v;
    size_t n, cap;
    size_t *slots; /* open addressing: index + 1 into v, 0 empty */
    size_t nslots;
    const gp_slice *frac; /* the task's fractional slice, or NULL */
    int oom;
} gpx__contract;

/*
 * Builds the environment of in->t into *c (freed with gpx__contract_free):
 * the clean base (PATH, HOME, USER, LOGNAME, SHELL, LANG), the workload's
 * own variables (where those gpupool manages are skipped), then gpupool's,
 * which win. Returns 0; GP_EINVAL with err naming the field for a binding
 * that does not fit t->node or an env entry that is not NAME=VALUE with a
 * shell variable name; GP_ENOMEM. On error *c holds nothing.
 */
int gpx__contract_build(const gpx__contract_in *in, gpx__contract *c, char *err, size_t errlen);

void gpx__contract_free(gpx__contract *c);

/* The value of name in c, or NULL (the builder's tests). */
const char *gpx__contract_get(const gpx__contract *c, const char *name);

/* The name of a task's slice ledger (GPUPOOL_SLICE):
 * "<instance>-w<id>-t<task>-a<n>". */
void gpx__slice_name(const char *instance, uint64_t workload, int32_t task, int32_t attempt,
                     char *buf, size_t len);

#endif /* GP_EXECUTORS_CONTRACT_H */
