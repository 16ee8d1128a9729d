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
 * writes the job scripts and submits them; holder.c holds fractions of a
 * GPU; user.c decides whose a job is and gives it its files.
 *
 * Layout under state_dir (a directory every node sees, e.g. on NFS): one
 * directory per task attempt, <state_dir>/<key>, key =
 * "w<workload>.t<task>.a<attempt>", holding
 *   job.sh   the batch script;
 *   jobid    the Slurm job id, written once sbatch answered;
 *   exit     written by the job script when the workload ended:
 *            "status=<wait status as the shell reports it>\n";
 *   user/    for a job that runs as another Unix user than gpupoold: that
 *            user's directory, where its script writes "exit" instead
 *            (the task directory stays gpupoold's);
 *   released for a gang, in the directory of its task 0: every task's job
 *            was released from its hold (see gpx__slurm_gang_release);
 *   tty      for an interactive task: "<uid> <gid>\n" of the user its
 *            session server runs as (session.c).
 * A handle is "slurm:<jobid>:<key>".
 */
#ifndef GP_EXECUTORS_SLURM_H
#define GP_EXECUTORS_SLURM_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "executors/executor.h"
#include "executors/util.h"

#define GPX__SLURM_KEY_MAX     64
#define GPX__SLURM_PARTS       8
#define GPX__SLURM_MODEL_MEM   16
#define GPX__SLURM_HOLD_MAX_MS (3600 * 1000) /* gpu_hold's largest value */
/* holder_expiry's default and largest values */
#define GPX__SLURM_EXPIRY_DEFAULT_MS (600 * 1000)
#define GPX__SLURM_EXPIRY_MAX_MS     (24 * 3600 * 1000)

/* One GPU model's memory (Slurm's GRES do not say how much a GPU has). */
typedef struct gpx__model_mem {
    char model[GP_NAME_MAX + 1];
    int64_t bytes;
} gpx__model_mem;

/* An srun that carries a session, reaped once it has ended (session.c). */
typedef struct gpx__slurm_sess_proc {
    pid_t pid;
    int errfd; /* the read end of its standard error */
} gpx__slurm_sess_proc;

/* A job id and when it was last seen running. */
typedef struct gpx__slurm_seen {
    long id;
    int64_t ms;
} gpx__slurm_seen;

typedef struct gpx__slurm {
    char conf[PATH_MAX];      /* SLURM_CONF for the commands ("" : Slurm's default) */
    char bin[PATH_MAX];       /* directory of the commands ("" : PATH) */
    char state_dir[PATH_MAX]; /* shared with the nodes */
    char ckpt_root[PATH_MAX]; /* "" : the daemon's checkpoint_dir */
    char interposer[PATH_MAX];
    char tag[32]; /* job names start "gp-<tag>." */
    /* gpu_hold: 0, each whole-GPU task is its own job and a holder ends
     * with its last slice; otherwise one-GPU tasks run in holders too, and
     * a holder without a task is kept this long for the next (holder.c). */
    int64_t hold_ms;
    /* holder_expiry: a holder that has had no task for hold_ms plus this
     * ends by itself, so that a gpupoold gone for good (which would have
     * cancelled it by then) leaves no GPU held in Slurm for ever. */
    int64_t expiry_ms;
    int npart;
    char parts[GPX__SLURM_PARTS][GP_NAME_MAX + 1];
    int64_t gpu_mem_default;
    int nmodel;
    gpx__model_mem model_mem[GPX__SLURM_MODEL_MEM];
    char **envp;    /* the commands' environment: ours with SLURM_CONF set */
    int allow_root; /* jobs may run as root (gp_executor_ctx.allow_root_workloads) */
    /* Jobs a poll found ended in Slurm and not yet reaped: stopping one has
     * nothing to end, so it costs no scancel (slurm.c, ended_*). */
    pthread_mutex_t ended_mu;
    long *ended;
    size_t nended, capended;
    /* gpupool-slurm-session on the nodes (session.c). */
    char session_prog[PATH_MAX];
    /* The NVML with which a task's GPUs are sampled on the nodes, by an
     * interactive task's session server or a batch task's sampler (""
     * : none, nvml=off). */
    char nvml[PATH_MAX];
    /* 1 while nvml is "auto" (the default): a batch task's sampler starts
     * only on a node with NVIDIA's driver (/dev/nvidiactl), where that
     * library can see a GPU; a path that was named is always tried. */
    int nvml_auto;
    /* The sruns of open sessions, under sess_mu (session() runs on any
     * thread). */
    pthread_mutex_t sess_mu;
    gpx__slurm_sess_proc *sess;
    size_t nsess, capsess;
    /* Abandoned launches whose cancel could not reach the controller: their
     * keys, cancelled again at each inventory until Slurm answers (loop
     * thread only); a restart finds them by their "abandoned" mark. */
    char (*abandoned)[GPX__SLURM_KEY_MAX];
    size_t nabandoned, capabandoned;
    /* Holder jobs a poll found RUNNING, and when (monotonic ms): a launch
     * onto one seen just now asks Slurm nothing (holder.c; loop thread
     * only). */
    gpx__slurm_seen *seen;
    size_t nseen, capseen;
} gpx__slurm;

/* ------------------------------------------------------------------------ */
/* cmd.c                                                                     */
/* ------------------------------------------------------------------------ */

/*
 * Runs the Slurm command argv[0] (looked up in sx->bin, or PATH) with argv,
 * in sx->envp, and waits for it. Its standard output is returned in *out
 * (malloc'd, NUL-terminated; the caller frees it) when out is not NULL.
 * Returns 0 if it exited with status 0; otherwise GP_EAGAIN where what it
 * printed says it may succeed later (the controller busy or out of reach),
 * else GP_EIO, with err holding the command's name and the first line of its
 * standard error; GP_ESYS if it could not be started (GP_EAGAIN if fork
 * lacked the resources).
 */
int gpx__slurm_run(const gpx__slurm *sx, const char *const *argv, char **out, char *err,
                   size_t errlen);

/* Runs a command whose output is JSON (sinfo/squeue --json) and parses it:
 * 0 with *root set (json_decref it), or the command's error, or GP_EPARSE. */
int gpx__slurm_json(const gpx__slurm *sx, const char *const *argv, json_t **root, char *err,
                    size_t errlen);

/* One job as `squeue` lists it (gpx__slurm_squeue). */
typedef struct gpx__slurm_job {
    long id;
    char state[24];              /* job_state: "PENDING", "RUNNING", "COMPLETED", ... */
    int wstatus;                 /* Slurm's exit_code: a wait status */
    char reason[32];             /* why it waits or ended: "JobLaunchFailure", ... ("" if longer) */
    char nodes[GP_NAME_MAX + 1]; /* where it runs: "n1", "n[1-2]" ("" if none yet, or longer) */
    char name[160];              /* "" if longer than this holds */
} gpx__slurm_job;

/*
 * Parses squeue's text answer to GPX__SLURM_SQUEUE_FORMAT: one job a line,
 * "<id>|<state>|<exit code>|<reason>|<nodes>|<name>" (the name last, since another
 * user's job name may hold '|'). A line that is not of this form (an array or het
 * job's "12_3" id, a state too long) is skipped. 0 with *jobs (malloc'd, or
 * NULL when *n is 0) and *n, or GP_ENOMEM with nothing allocated.
 */
int gpx__slurm_parse_jobs(const char *text, gpx__slurm_job **jobs, size_t *n);

/*
 * Parses a job's record of the GPUs Slurm gave it, which its script writes
 * as it starts: "job=<id> node=<node> gpus=<Slurm's indices>" (a list such
 * as "0,2" or "0-3", empty for none; one line). The job's user may write
 * it, so every field is checked: 0 with *job, node, the indices as a mask
 * *idx and their number *count; GP_EINVAL if it is out of form.
 */
int gpx__slurm_parse_gpus_record(const char *text, long *job, char *node, size_t nlen,
                                 uint32_t *idx, int *count);

#define GPX__SLURM_SQUEUE_FORMAT "JobID:|,State:|,exit_code:|,Reason:|,NodeList:|,Name:"

/*
 * Asks squeue about the jobs filter selects ("--jobs=1,2,3" or
 * "--name=..."), in every state Slurm still remembers. squeue's text
 * output is used, not --json: Slurm 22.05's `squeue --json` ignores
 * --jobs, --name and --states and dumps every job it remembers (thousands,
 * a few KiB each, for MinJobAge after a busy spell), which made every poll
 * cost more the more jobs had recently ended. Ids Slurm has forgotten are
 * simply absent. 0 with *jobs and *n (see gpx__slurm_parse_jobs), or the
 * command's error with err set.
 */
int gpx__slurm_squeue(const gpx__slurm *sx, const char *filter, gpx__slurm_job **jobs, size_t *n,
                      char *err, size_t errlen);

/* Asks squeue about the jobs filter selects, as gpx__slurm_squeue, for one
 * of them: the job numbered id (when id > 0) and named name (when not
 * NULL). 1 with *job (when not NULL; the last listed, if several) if Slurm
 * lists one, 0 if not, or the command's error with err set. */
int gpx__slurm_squeue_one(const gpx__slurm *sx, const char *filter, long id, const char *name,
                          gpx__slurm_job *job, char *err, size_t errlen);

/* Submits script with `sbatch --parsable --nodes=1 --ntasks=1 --no-requeue`,
 * node's partition (its label slurm.partition; else the first configured)
 * and opts (NULL-terminated, at most 24). Fills *jobid. GP_EIO with err set
 * if sbatch fails or gives no job id. */
int gpx__slurm_sbatch(const gpx__slurm *sx, const gp_node_spec *node, const char *const *opts,
                      const char *script, long *jobid, char *err, size_t errlen);

/* In a child of fork(): runs path (looked up in PATH if it has no '/')
 * with argv and the commands' environment (sx->envp); _exit(127) if it
 * cannot. */
void gpx__slurm_exec(const gpx__slurm *sx, const char *path, const char *const *argv)
    __attribute__((noreturn));

/* Reads "<dir>/<name>" (a small file, at most cap-1 bytes) into buf,
 * NUL-terminated; its length or a system code (gp_syserr). */
ssize_t gpx__slurm_read(const char *dir, const char *name, char *buf, size_t cap);

/* gpx__slurm_read for a file a job of another user writes (in its "user"
 * directory): never follows a link in its last component nor waits on a
 * FIFO, and reads only a regular file (GP_EINVAL otherwise). */
ssize_t gpx__slurm_read_untrusted(const char *dir, const char *name, char *buf, size_t cap);

/* Writes "<dir>/<name>" atomically (temporary file, fsync, rename); 0 or
 * GP_EINVAL (path too long) / GP_ESYS. */
int gpx__slurm_write(const char *dir, const char *name, const char *text);

/* Opens path, a file of the state directory, to be written from the start:
 * the stream, or NULL with err set ("state_dir: cannot write <path>: ..."). */
FILE *gpx__slurm_create(const char *path, char *err, size_t errlen);

/* Closes f, from gpx__slurm_create: 0, or GP_ESYS with err set if a write
 * or the close failed ("state_dir: cannot write <path>"). */
int gpx__slurm_finish(FILE *f, const char *path, char *err, size_t errlen);

/* The directory of a task attempt, <state_dir>/<key>; GP_ERANGE if too long. */
int gpx__slurm_task_dir(const gpx__slurm *sx, const char *key, char *dir, size_t len);

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
 * Writes the batch script of task t into <dir>/job.sh: a clean environment
 * (u's HOME, USER, LOGNAME, SHELL; PATH and LANG) with the workload
 * contract's variables, the log header and footer, the command in its
 * working directory (t's workdir, else the attempt's checkpoint directory),
 * the exit file. ckpt_dir is the workload's checkpoint root: each attempt
 * gets <ckpt_dir>/a<attempt>, seeded with the newest earlier attempt's
 * (job.c, put_start). With slice
 * set it is a step of a GPU holder job (holder.c): it records its step id in
 * <dir>/step, does not start if <dir>/stopped exists, and runs the command
 * as u with setpriv (the holder is gpupoold's). Returns 0 or GP_ESYS /
 * GP_EINVAL with err naming the field.
 */
int gpx__slurm_write_script(const gpx__slurm *sx, const gp_task_launch *t, const char *dir,
                            const char *ckpt_dir, int slice, const gpx__exec_user *u, char *err,
                            size_t errlen);

/*
 * Submits <dir>/job.sh for task t with sbatch, on the node and with the GPU
 * count the engine chose, as user u (--uid/--gid when u->switch_to), held
 * (--hold) if hold is set. Fills *jobid. GP_EIO with err set on failure.
 */
int gpx__slurm_submit(const gpx__slurm *sx, const gp_task_launch *t, const char *dir,
                      const char *key, const gpx__exec_user *u, int hold, long *jobid, char *err,
                      size_t errlen);

/*
 * A gang starts all together or not at all, in Slurm's books too: each of
 * its tasks' jobs is submitted held, and once every task of t's gang (same
 * workload and attempt) has a job, one `scontrol release id,id,...` lets
 * them all go; <state_dir>/<key of task 0>/released records it, so that a
 * launch repeated after a restart releases once. 0 if released or not yet
 * complete; GP_EIO with err if Slurm refused the release.
 */
int gpx__slurm_gang_release(const gpx__slurm *sx, const gp_task_launch *t, char *err,
                            size_t errlen);

/* ------------------------------------------------------------------------ */
/* user.c                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * Decides whose a job is: run_as (the token's Unix user) when gpupoold is
 * root, else gpupoold's own user (also for run_as NULL). GP_EINVAL for a
 * user the host does not know, GP_EPERM for root unless sx->allow_root; err
 * names the field.
 */
int gpx__slurm_user_resolve(const gpx__slurm *sx, const char *run_as, gpx__exec_user *u, char *err,
                            size_t errlen);

/*
 * Creates the checkpoint directory ckpt and, for a job of another user
 * (u->switch_to), gives it to u (0700, its parent passable), creates the log
 * as u's (0600; its directory and the one above passable) and, unless the
 * task is a slice, the directory <dir>/user for its exit file. GP_EIO /
 * GP_EINVAL with err naming the field.
 */
int gpx__slurm_user_files(const gpx__exec_user *u, const char *dir, const char *ckpt,
                          const char *log, int slice, char *err, size_t errlen);

/* A sentence for describe()'s identity: who the jobs run as. */
void gpx__slurm_user_mode(const gpx__slurm *sx, char *out, size_t len);

/* ------------------------------------------------------------------------ */
/* holder.c                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * Starts task t (key, task directory dir with its job.sh written as a slice)
 * as a step of the holder job of GPU g of its node, submitting the holder
 * if there is none. Fills *jobid with the holder's job id. GP_EIO / GP_ESYS
 * with err set on failure.
 */
int gpx__slurm_slice_launch(gpx__slurm *sx, const gp_task_launch *t, const char *key,
                            const char *dir, int g, long *jobid, char *err, size_t errlen);

/* 1 if the task directory dir is a slice's (hdir gets its holder's
 * directory), else 0. */
int gpx__slurm_is_slice(const char *dir, char *hdir, size_t len);

/* 1 if the slice key of task directory dir was handed to its holder (whose
 * directory is hdir): queued, claimed, started or ended; also 1 if a path is
 * too long to tell. 0 if gpupoold marked it a slice but died before queueing
 * it: it never ran, and launching it again runs it once. */
int gpx__slurm_slice_queued(const char *dir, const char *hdir, const char *key);

/* Notes that a poll found holder job id RUNNING (loop thread only). */
void gpx__slurm_holder_seen(gpx__slurm *sx, long id);

/* Judges a slice without an exit status from its holder's Slurm state
 * (NULL: Slurm does not know the holder) and its step file. */
void gpx__slurm_slice_judge(const char *dir, const char *holder_state, long holder,
                            gp_task_status *st);

/* Sends sig to the slice's step (0 if it has not started). */
int gpx__slurm_slice_signal(const gpx__slurm *sx, const char *dir, int sig);

/* Ends the slice for good: takes it back from the holder's queue, or kills
 * its step; a step not yet started will not start. */
int gpx__slurm_slice_stop(const gpx__slurm *sx, const char *dir, const char *key);

/* Forgets the slice in its holder. When it was the last, cancels the
 * holder, which gives the GPU back to Slurm, or, with gpu_hold, marks the
 * holder idle since now (gpx__slurm_holders_sweep cancels it later). */
void gpx__slurm_slice_reap(const gpx__slurm *sx, const char *dir, const char *key);

/* Cancels the holders that have had no task for gpu_hold (all idle ones
 * if now_all), giving their GPUs back to Slurm. Loop thread only, as
 * launch and reap, so that no task is queued to a holder being cancelled. */
void gpx__slurm_holders_sweep(const gpx__slurm *sx, int now_all);

/* Cancels the kept holders of node's GPUs but keep (a holder directory, or
 * NULL), so that a job about to be submitted there finds their GPUs free in
 * Slurm, as the engine counts them (loop thread only). */
void gpx__slurm_holders_release(const gpx__slurm *sx, const char *node, const char *keep);

/* ------------------------------------------------------------------------ */
/* session.c                                                                 */
/* ------------------------------------------------------------------------ */

/* The name of an interactive task's session socket on its node,
 * "gp-<tag>.<key>" (gpupool-slurm-session adds the directory). */
void gpx__slurm_sess_name(const gpx__slurm *sx, const char *key, char *buf, size_t len);

/* Records, in the task directory dir, that the task t of user u has a
 * terminal and whom its session server runs as ("tty"). 0 or GP_ESYS. */
int gpx__slurm_sess_mark(const char *dir, const gpx__exec_user *u);

/* 1 if the job of task t samples its GPUs (it has some, and nvml is not
 * off): its script opens the record and starts the sampler, and launch
 * records its node and GPUs with gpx__slurm_bound_mark. */
int gpx__slurm_samples(const gpx__slurm *sx, const gp_task_launch *t);

/* Records, in the task directory dir, the node and GPUs of task t
 * ("bound": "<node> <gpu>,<gpu>...", gpupool's numbers) for
 * gpx__slurm_gpu_usage. 0 or GP_ESYS. */
int gpx__slurm_bound_mark(const char *dir, const gp_task_launch *t);

/* The name of an interactive task's GPU use record in its task directory:
 * "user/gpu-use" for a job of another user on whole GPUs (its script runs
 * as that user), else "gpu-use" (gpuuse.h). */
const char *gpx__slurm_gpu_use_file(const gpx__exec_user *u, int slice);

/*
 * GP_EXEC_CTL_GPU_USAGE: how busy the GPUs of the running interactive
 * tasks are, from the records gpupool-slurm-session writes in their jobs
 * (gpuuse.h), each as the task's node and GPU numbers. A record older than
 * GPX__GPU_USE_STALE_S seconds (its sampler gone, or the node's clock far
 * from this host's) counts for nothing: those GPUs are not in the sample,
 * so unknown, as every GPU of a batch job is. Slices of one GPU report the
 * same GPU: the busiest figure counts. GP_ENOTSUP when nvml=off.
 */
int gpx__slurm_gpu_usage(gpx__slurm *sx, gp_exec_gpu_usage *u);

#define GPX__GPU_USE_STALE_S 30

/*
 * The session method for the task of job jobid (its holder's for a slice)
 * and key: an srun into the job runs gpupool-slurm-session connect as the
 * task's user, and its standard input and output become *fd. A NOTICE is
 * handed to its srun and not waited for. See executor.h for the rest.
 */
int gpx__slurm_session(gpx__slurm *sx, long jobid, const char *key, const gp_session_req *req,
                       int *fd, char *err, size_t errlen);

/* Reaps the sruns of sessions that have ended; with wait_all (at close),
 * ends the others first. */
void gpx__slurm_sess_reap(gpx__slurm *sx, int wait_all);

#endif /* GP_EXECUTORS_SLURM_H */
