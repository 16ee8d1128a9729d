/*
 * slurm.h — internal to the `slurm` executor: the instance state and the
 * functions its files share.
 *
 * The executor drives an existing Slurm cluster through Slurm's own
 * commands and their JSON output (`sinfo --json`, `squeue --json`; `sbatch
 * --parsable`, `scancel`, `scontrol suspend|resume`), so that one gpupoold
 * binary works with any Slurm of the 22.05 line without linking libslurm.
 * The files split by concern: slurm.c holds the methods table, the
 * configuration and the task methods; cmd.c runs Slurm's commands and reads
 * their JSON; inventory.c turns nodes into gpupool's node specs; job.c
 * writes the job scripts and submits them.
 *
 * Layout under state_dir (a directory every node sees, e.g. on NFS): one
 * directory per task attempt, <state_dir>/<key>, key =
 * "w<workload>.t<task>.a<attempt>", holding
 *   job.sh   the batch script;
 *   jobid    the Slurm job id, written once sbatch answered;
 *   exit     written by the job script when the workload ended:
 *            "status=<wait status as the shell reports it>\n".
 * A handle is "slurm:<jobid>:<key>".
 */
#ifndef GP_EXECUTORS_SLURM_H
#define GP_EXECUTORS_SLURM_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "executors/executor.h"

#define GPX__SLURM_KEY_MAX   64
#define GPX__SLURM_PARTS     8
#define GPX__SLURM_MODEL_MEM 16

/* One GPU model's memory (Slurm's GRES do not say how much a GPU has). */
typedef struct gpx__model_mem {
    char model[GP_NAME_MAX + 1];
    int64_t bytes;
} gpx__model_mem;

typedef struct gpx__slurm {
    char conf[PATH_MAX];      /* SLURM_CONF for the commands ("" : Slurm's default) */
    char bin[PATH_MAX];       /* directory of the commands ("" : PATH) */
    char state_dir[PATH_MAX]; /* shared with the nodes */
    char ckpt_root[PATH_MAX]; /* "" : the daemon's checkpoint_dir */
    char interposer[PATH_MAX];
    char tag[32]; /* job names start "gp-<tag>." */
    int npart;
    char parts[GPX__SLURM_PARTS][GP_NAME_MAX + 1];
    int64_t gpu_mem_default;
    int nmodel;
    gpx__model_mem model_mem[GPX__SLURM_MODEL_MEM];
    char **envp; /* the commands' environment: ours with SLURM_CONF set */
} gpx__slurm;

/* ------------------------------------------------------------------------ */
/* cmd.c                                                                     */
/* ------------------------------------------------------------------------ */

/*
 * Runs the Slurm command argv[0] (looked up in sx->bin, or PATH) with argv,
 * in sx->envp, and waits for it. Its standard output is returned in *out
 * (malloc'd, NUL-terminated; the caller frees it) when out is not NULL.
 * Returns 0 if it exited with status 0; GP_EIO otherwise, with err holding
 * the command's name and the first line of its standard error; GP_ESYS if it
 * could not be started.
 */
int gpx__slurm_run(const gpx__slurm *sx, const char *const *argv, char **out, char *err,
                   size_t errlen);

/* ------------------------------------------------------------------------ */
/* inventory.c                                                               */
/* ------------------------------------------------------------------------ */

/*
 * Fills nodes (at most max) from `sinfo --json`: the nodes of the
 * configured partitions (all partitions if none is configured). A node that
 * is down, drained, draining, failing or not responding is reported with
 * schedulable 0. Returns 0 with
 * *n set, or GP_EIO / GP_EPARSE with err set.
 */
int gpx__slurm_inventory(const gpx__slurm *sx, gp_node_spec *nodes, size_t max, size_t *n,
                         char *err, size_t errlen);

/* ------------------------------------------------------------------------ */
/* job.c                                                                     */
/* ------------------------------------------------------------------------ */

/* The attempt's key, "w<workload>.t<task>.a<attempt>". */
void gpx__slurm_key(const gp_task_launch *t, char *buf, size_t len);

/*
 * Writes the batch script of task t into <dir>/job.sh: the workload
 * contract's environment, the log header and footer, the exit file. Returns
 * 0 or GP_ESYS / GP_EINVAL with err naming the field.
 */
int gpx__slurm_write_script(const gpx__slurm *sx, const gp_task_launch *t, const char *dir,
                            const char *ckpt_dir, char *err, size_t errlen);

/*
 * Submits <dir>/job.sh for task t with sbatch, on the node and with the GPU
 * count the engine chose. Fills *jobid. GP_EIO with err set on failure.
 */
int gpx__slurm_submit(const gpx__slurm *sx, const gp_task_launch *t, const char *dir,
                      const char *key, long *jobid, char *err, size_t errlen);

#endif /* GP_EXECUTORS_SLURM_H */
