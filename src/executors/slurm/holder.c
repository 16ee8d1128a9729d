/*
 * holder.c — a holder job per shared GPU, and each slice as a step of it;
 * with gpu_hold, one-GPU tasks too, in holders kept between tasks.
 *
 * Slurm allocates GPUs whole (gres/gpu), so a GPU that gpupool shares
 * between slices must be held whole in Slurm's name, or Slurm would hand it
 * to another job. As KAI-Scheduler's reservation pods do, the executor
 * submits one holder job per shared GPU (the engine's GPU g of node N): named
 * "gp-<tag>.hold.<N>.g<g>", it asks for --gres=gpu:1 on N and runs a small
 * loop. Each slice is started inside it as a job step (`srun --overlap
 * --jobid=<holder>`), so that it gets the holder's GPU (and its device
 * cgroup, where Slurm constrains devices), is named after its workload in
 * `squeue --steps` and `sacct`, and is signalled and cancelled as a step.
 * The holder lives while at least one slice refers to it; reap() of the last
 * one cancels it, which gives the GPU back to Slurm. A holder that has had
 * no task for gpu_hold plus holder_expiry ends by itself: its gpupoold would
 * have cancelled it long before, so it has lost it for good.
 *
 * With gpu_hold, a batch task of one whole GPU also runs as a step of that
 * GPU's holder, and reap() of the last task only marks the holder idle: the
 * inventory's sweep cancels it once it has had no task for gpu_hold. A task
 * on a GPU whose holder is kept then starts as soon as the holder sees it
 * (within a tenth of a second) and srun starts its step, where a job of its
 * own waits for Slurm's next scheduling pass (sched_interval,
 * batch_sched_delay: seconds). The price:
 * Slurm's books name gpupoold's user for such tasks (the step names the
 * workload), and a GPU stays held for gpu_hold after its last task.
 *
 * The daemon's state lives in the shared state directory:
 *   holders/<N>.g<g>/jobid        the holder's job id
 *   holders/<N>.g<g>/queue/<key>  a slice to start: its task directory, job
 *                                 name and log, one a line; the holder
 *                                 claims it by renaming it
 *   holders/<N>.g<g>/slices/<key> a slice that refers to the holder
 *   holders/<N>.g<g>/idle         with gpu_hold: since when (wall-clock ms)
 *                                 no slice has referred to it
 *   <key>/slice                   marks the task as a slice; names the holder
 *   <key>/claimed                 the holder's claim, moved here once read
 *   <key>/step                    "<job>.<step>", written by the step
 *   <key>/stopped                 stop() came first: the step must not start
 *
 * A slice's request moves forward by one rename, queue/<key> to
 * <key>/claimed (holders written by earlier versions went through
 * claimed.<key> in between), so that at every moment one of them says
 * that the slice was handed to its holder: gpx__slurm_slice_queued() can
 * tell a slice that may run from one gpupoold marked but died before
 * queueing, which would otherwise wait for ever.
 *
 * Steps share the holder's CPU and memory (--overlap); the engine accounts
 * the slices' CPU and memory itself. The slice's own limits come from the
 * interposer (GPU memory, compute share).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_array.h"
#include "common/gp_clock.h"
#include "common/gp_error.h"
#include "executors/registry.h"
#include "executors/slurm/slurm.h"

/* The holder's directory for GPU g of node. */
static int holder_dir(const gpx__slurm *sx, const char *node, int g, char *dir, size_t len) {
    return gpx__exec_fmt(dir, len, "%s/holders/%s.g%d", sx->state_dir, node, g);
}

/* The state of job id in Slurm ("" if Slurm no longer knows it), or a
 * negative code if Slurm cannot be asked. */
static int job_state(const gpx__slurm *sx, long id, char *state, size_t len, char *err,
                     size_t errlen) {
    char filter[48];
    snprintf(filter, sizeof filter, "--jobs=%ld", id);
    gpx__slurm_job job;
    int rc = gpx__slurm_squeue_one(sx, filter, id, NULL, &job, err, errlen);
    if (rc < 0)
        return rc;
    snprintf(state, len, "%s", rc == 1 ? job.state : "");
    return 0;
}

/* Writes the holder's loop into <hdir>/holder.sh: it ends by itself once it
 * has had no task (none queued, no step running) for expiry_s seconds. */
static int write_holder_script(const char *hdir, long long expiry_s, char *err, size_t errlen) {
    char path[PATH_MAX];
    if (gpx__exec_fmt(path, sizeof path, "%s/holder.sh", hdir) < 0) {
        gp_errf(err, errlen, "state_dir: path too long");
        return GP_EINVAL;
    }
    FILE *f = gpx__slurm_create(path, err, errlen);
    if (f == NULL)
        return GP_ESYS;
    fprintf(f,
            "#!/bin/bash\n"
            "# gpupool GPU holder: holds one GPU in Slurm's books and starts the\n"
            "# slices that share it as steps. Written by gpupoold's slurm executor.\n"
            "d='%s'\n"
            "echo \"holder: job $SLURM_JOB_ID holds GPU '$CUDA_VISIBLE_DEVICES' on "
            "$SLURMD_NODENAME\"\n"
            "printf 'job=%%s node=%%s gpus=%%s\\n' \"$SLURM_JOB_ID\" \"$SLURMD_NODENAME\" "
            "\"${SLURM_JOB_GPUS-}\" >\"$d/gpus.tmp\" && mv -f \"$d/gpus.tmp\" \"$d/gpus\"\n"
            /* Waits between looks at the queue without a process each
             * time: a read that times out on a FIFO of its own that nothing
             * writes (sleep where none can be made). Sixteen holders that
             * fork a sleep five times a second took a third of a 2-core
             * test host. */
            "nap() { sleep 0.1; }\n"
            "p=$(mktemp -u \"${TMPDIR:-/tmp}/gpupool-holder.XXXXXX\") && mkfifo -m 600 \"$p\" "
            "&& exec 7<>\"$p\" && nap() { read -r -t 0.1 -u 7 _; }\n"
            "rm -f \"$p\"\n"
            /* Its steps' sruns, and when it last had one (bash's SECONDS):
             * kill -0 and SECONDS are the shell's own, no process. */
            "expiry=%lld steps=() busy=$SECONDS\n"
            "while :; do\n"
            "  for f in \"$d\"/queue/*; do\n"
            "    { read -r tdir; read -r name; read -r log; } <\"$f\" 2>/dev/null || continue\n"
            /* The claim is one rename into the task's directory: stop()
             * taking the request back first makes it fail; a task directory
             * gone meanwhile (reaped) leaves nothing to start. */
            "    mv \"$f\" \"$tdir/claimed\" 2>/dev/null || { [ -d \"$tdir\" ] || rm -f \"$f\"; "
            "continue; }\n"
            "    srun --overlap --jobid=\"$SLURM_JOB_ID\" --nodes=1 --ntasks=1 "
            "--job-name=\"$name\" --output=\"$log\" --open-mode=append bash \"$tdir/job.sh\" "
            "</dev/null 7<&- &\n"
            "    steps+=($!)\n"
            "  done\n"
            "  live=()\n"
            "  for s in \"${steps[@]}\"; do kill -0 \"$s\" 2>/dev/null && live+=(\"$s\"); done\n"
            "  steps=(\"${live[@]}\")\n"
            "  if [ ${#steps[@]} -gt 0 ]; then busy=$SECONDS\n"
            /* gpupoold cancels a holder with no task after gpu_hold (at
             * once without it); one that is still here long after has
             * lost its gpupoold, and gives the GPU back to Slurm. A task
             * queued in the last moment is found LOST by the next
             * gpupoold, before it ran, and started again. */
            "  elif [ $((SECONDS - busy)) -ge \"$expiry\" ]; then\n"
            "    set -- \"$d\"/queue/*\n"
            "    [ -e \"$1\" ] || { echo \"holder: no task for ${expiry}s and gpupoold has not "
            "cancelled it: it ends, and the GPU goes back to Slurm\"; exit 0; }\n"
            "  fi\n"
            "  nap\n"
            "done\n",
            hdir, expiry_s);
    return gpx__slurm_finish(f, path, err, errlen);
}

/* How long a poll's word that a holder runs spares a launch asking Slurm.
 * A holder that ended within it (its node lost, cancelled behind gpupool's
 * back) gets the task all the same; its poll then finds the task LOST
 * before it ran, and the daemon starts it again. */
#define SEEN_FRESH_MS 3000

void gpx__slurm_holder_seen(gpx__slurm *sx, long id) {
    int64_t now = gp_clock_ms(CLOCK_MONOTONIC);
    size_t k = 0;
    int found = 0;
    for (size_t i = 0; i < sx->nseen; i++) {
        if (sx->seen[i].id == id)
            sx->seen[i].ms = now, found = 1;
        if (now - sx->seen[i].ms < SEEN_FRESH_MS)
            sx->seen[k++] = sx->seen[i];
    }
    sx->nseen = k;
    if (!found && GP_ARRAY_ROOM(sx->seen, sx->nseen, sx->capseen, 16) == 0)
        sx->seen[sx->nseen++] = (gpx__slurm_seen){id, now};
}

/* 1 if a poll found holder id RUNNING within SEEN_FRESH_MS. */
static int seen_running(const gpx__slurm *sx, long id) {
    int64_t now = gp_clock_ms(CLOCK_MONOTONIC);
    for (size_t i = 0; i < sx->nseen; i++)
        if (sx->seen[i].id == id)
            return now - sx->seen[i].ms < SEEN_FRESH_MS;
    return 0;
}

/* The job id of a live holder for GPU g of t's node, submitting one if there
 * is none (or the last one ended). */
static int ensure_holder(gpx__slurm *sx, const gp_task_launch *t, int g, const char *hdir,
                         long *jobid, char *err, size_t errlen) {
    char buf[64], state[32];
    long id;
    if (gpx__slurm_read(hdir, "jobid", buf, sizeof buf) > 0 && (id = strtol(buf, NULL, 10)) > 0) {
        if (seen_running(sx, id)) {
            *jobid = id;
            return 0;
        }
        int rc = job_state(sx, id, state, sizeof state, err, errlen);
        if (rc < 0)
            return rc;
        if (strcmp(state, "PENDING") == 0 || strcmp(state, "RUNNING") == 0 ||
            strcmp(state, "CONFIGURING") == 0) {
            *jobid = id;
            return 0;
        }
    }
    char sub[PATH_MAX];
    int rc = gpx__exec_fmt(sub, sizeof sub, "%s/queue", hdir) < 0 ? GP_EINVAL : 0;
    if (rc == 0 &&
        (gpx__exec_mkdirs(sub) < 0 || gpx__exec_fmt(sub, sizeof sub, "%s/slices", hdir) < 0 ||
         gpx__exec_mkdirs(sub) < 0))
        rc = GP_ESYS;
    if (rc < 0) {
        gp_errf(err, errlen, "state_dir: cannot create %s", hdir);
        return rc;
    }
    if ((rc = write_holder_script(hdir, (sx->hold_ms + sx->expiry_ms + 999) / 1000, err, errlen)) <
        0)
        return rc;
    char name[160], node[GP_NAME_MAX + 32], out[PATH_MAX + 16], script[PATH_MAX],
        comment[GP_NAME_MAX + 64];
    snprintf(name, sizeof name, "--job-name=gp-%s.hold.%.63s.g%d", sx->tag, t->node->name, g);
    snprintf(node, sizeof node, "--nodelist=%.63s", t->node->name);
    snprintf(comment, sizeof comment, "--comment=gpupool GPU holder node=%.63s gpu=%d",
             t->node->name, g);
    if (gpx__exec_fmt(out, sizeof out, "--output=%s/log", hdir) < 0 ||
        gpx__exec_fmt(script, sizeof script, "%s/holder.sh", hdir) < 0) {
        gp_errf(err, errlen, "state_dir: path too long");
        return GP_EINVAL;
    }
    /* Room for it in Slurm: kept holders of the node's other GPUs give
     * theirs back (the engine counts them free). */
    gpx__slurm_holders_release(sx, t->node->name, hdir);
    const char *opts[] = {name, comment, node, "--gres=gpu:1", "--mem=64", out, NULL};
    if ((rc = gpx__slurm_sbatch(sx, t->node, opts, script, &id, err, errlen)) < 0)
        return rc;
    snprintf(buf, sizeof buf, "%ld\n", id);
    if (gpx__slurm_write(hdir, "jobid", buf) < 0) {
        gp_errf(err, errlen, "state_dir: cannot record the holder's job id in %s", hdir);
        return GP_ESYS;
    }
    *jobid = id;
    return 0;
}

int gpx__slurm_slice_launch(gpx__slurm *sx, const gp_task_launch *t, const char *key,
                            const char *dir, int g, long *jobid, char *err, size_t errlen) {
    char hdir[PATH_MAX], buf[PATH_MAX * 2 + 256], file[PATH_MAX];
    if (holder_dir(sx, t->node->name, g, hdir, sizeof hdir) < 0) {
        gp_errf(err, errlen, "state_dir: path too long");
        return GP_EINVAL;
    }
    int rc = ensure_holder(sx, t, g, hdir, jobid, err, errlen);
    if (rc < 0)
        return rc;
    snprintf(buf, sizeof buf, "%s\n", hdir);
    if (gpx__slurm_write(dir, "slice", buf) < 0 ||
        gpx__exec_fmt(file, sizeof file, "%s/slices", hdir) < 0 ||
        gpx__slurm_write(file, key, buf) < 0) {
        gp_errf(err, errlen, "state_dir: cannot record the slice %s", key);
        return GP_ESYS;
    }
    const char *log = t->log_path != NULL && t->log_path[0] ? t->log_path : "/dev/null";
    if (gpx__exec_fmt(buf, sizeof buf, "%s\ngp-%s.%s\n%s\n", dir, sx->tag, key, log) < 0 ||
        gpx__exec_fmt(file, sizeof file, "%s/queue", hdir) < 0 ||
        gpx__slurm_write(file, key, buf) < 0) {
        gp_errf(err, errlen, "state_dir: cannot queue the slice %s", key);
        return GP_ESYS;
    }
    /* Busy again: a holder kept idle is no longer swept. */
    if (gpx__exec_fmt(file, sizeof file, "%s/idle", hdir) == 0)
        unlink(file);
    return 0;
}

int gpx__slurm_slice_queued(const char *dir, const char *hdir, const char *key) {
    /* Checked in the order the request moves (queue, claim, task directory),
     * so that a holder claiming it meanwhile cannot slip between two checks;
     * step and exit cover holders whose loop removed its claim instead. */
    char file[PATH_MAX];
    if (gpx__exec_fmt(file, sizeof file, "%s/queue/%s", hdir, key) < 0 || access(file, F_OK) == 0 ||
        gpx__exec_fmt(file, sizeof file, "%s/claimed.%s", hdir, key) < 0 || access(file, F_OK) == 0)
        return 1;
    const char *const trace[] = {"claimed", "step", "exit"};
    for (size_t i = 0; i < sizeof trace / sizeof trace[0]; i++)
        if (gpx__exec_fmt(file, sizeof file, "%s/%s", dir, trace[i]) < 0 || access(file, F_OK) == 0)
            return 1;
    return 0;
}

int gpx__slurm_is_slice(const char *dir, char *hdir, size_t len) {
    char buf[PATH_MAX];
    if (gpx__slurm_read(dir, "slice", buf, sizeof buf) <= 0)
        return 0;
    buf[strcspn(buf, "\n")] = '\0';
    snprintf(hdir, len, "%s", buf);
    return 1;
}

void gpx__slurm_slice_judge(const char *dir, const char *holder_state, long holder,
                            gp_task_status *st) {
    char buf[64];
    if (holder_state != NULL &&
        (strcmp(holder_state, "PENDING") == 0 || strcmp(holder_state, "CONFIGURING") == 0)) {
        st->state = GP_TASK_STARTING;
        return;
    }
    if (holder_state != NULL && strcmp(holder_state, "RUNNING") == 0) {
        st->state =
            gpx__slurm_read(dir, "step", buf, sizeof buf) > 0 ? GP_TASK_RUNNING : GP_TASK_STARTING;
        return;
    }
    st->state = GP_TASK_LOST;
    snprintf(st->detail, sizeof st->detail, "the GPU holder job %ld of this slice ended (%s)",
             holder, holder_state != NULL ? holder_state : "Slurm no longer knows it");
}

int gpx__slurm_slice_signal(const gpx__slurm *sx, const char *dir, int sig) {
    char step[64], sigarg[32];
    if (gpx__slurm_read(dir, "step", step, sizeof step) <= 0)
        return 0; /* not started: nothing to signal */
    step[strcspn(step, "\n")] = '\0';
    snprintf(sigarg, sizeof sigarg, "--signal=%d", sig);
    const char *argv[] = {"scancel", sigarg, step, NULL};
    char err[256];
    int rc = gpx__slurm_run(sx, argv, NULL, err, sizeof err);
    return rc == GP_ESYS ? rc : 0;
}

int gpx__slurm_slice_stop(const gpx__slurm *sx, const char *dir, const char *key) {
    char hdir[PATH_MAX], file[PATH_MAX];
    /* A step that recorded its end has nothing left to stop (the daemon
     * stops every task of a workload it concludes). */
    if (gpx__exec_fmt(file, sizeof file, "%s/exit", dir) == 0 && access(file, F_OK) == 0)
        return 0;
    gpx__slurm_write(dir, "stopped", "1\n");
    if (gpx__slurm_is_slice(dir, hdir, sizeof hdir) &&
        gpx__exec_fmt(file, sizeof file, "%s/queue/%s", hdir, key) == 0 && unlink(file) == 0) {
        /* Taken back before the holder claimed it: it never runs. */
        gpx__slurm_write(dir, "exit", "status=137\n");
        return 0;
    }
    return gpx__slurm_slice_signal(sx, dir, SIGKILL);
}

/* The number of slices that refer to the holder of hdir (0 if unreadable). */
static int slices_left(const char *hdir) {
    char file[PATH_MAX];
    if (gpx__exec_fmt(file, sizeof file, "%s/slices", hdir) < 0)
        return 0;
    DIR *d = opendir(file);
    int left = 0;
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL)
        left += de->d_name[0] != '.';
    if (d != NULL)
        closedir(d);
    return left;
}

/* Cancels the holder of hdir, which gives its GPU back to Slurm, and
 * forgets its job id (the next task on the GPU submits a new holder). */
static void cancel_holder(const gpx__slurm *sx, const char *hdir) {
    char file[PATH_MAX], buf[64];
    if (gpx__slurm_read(hdir, "jobid", buf, sizeof buf) <= 0)
        return;
    buf[strcspn(buf, "\n")] = '\0';
    const char *argv[] = {"scancel", buf, NULL};
    char err[256];
    if (gpx__slurm_run(sx, argv, NULL, err, sizeof err) == 0 || strtol(buf, NULL, 10) > 0) {
        gpx__exec_fmt(file, sizeof file, "%s/jobid", hdir);
        unlink(file);
        gpx__exec_fmt(file, sizeof file, "%s/idle", hdir);
        unlink(file);
    }
}

/* Wall-clock milliseconds: an idle mark must mean the same after a restart. */
static int64_t wall_ms(void) {
    return gp_clock_ms(CLOCK_REALTIME);
}

void gpx__slurm_slice_reap(const gpx__slurm *sx, const char *dir, const char *key) {
    char hdir[PATH_MAX], file[PATH_MAX], buf[64];
    if (!gpx__slurm_is_slice(dir, hdir, sizeof hdir) ||
        gpx__exec_fmt(file, sizeof file, "%s/slices/%s", hdir, key) < 0)
        return;
    unlink(file);
    if (slices_left(hdir) > 0)
        return;
    if (sx->hold_ms <= 0) {
        /* The last slice is gone: the GPU goes back to Slurm. */
        cancel_holder(sx, hdir);
        return;
    }
    /* Kept for the next task on this GPU, until the sweep finds it idle for
     * gpu_hold. */
    snprintf(buf, sizeof buf, "%lld\n", (long long)wall_ms());
    gpx__slurm_write(hdir, "idle", buf);
}

/* 1 if holder directory name (<node>.g<g>) is one of node's. */
static int holder_of_node(const char *name, const char *node) {
    const char *dot = strrchr(name, '.');
    size_t n = strlen(node);
    return dot != NULL && (size_t)(dot - name) == n && strncmp(name, node, n) == 0 &&
           dot[1] == 'g' && dot[2] != '\0' && strspn(dot + 2, "0123456789") == strlen(dot + 2);
}

/* Cancels the kept holders (idle, no task) that match: on node (NULL: any)
 * other than keep, or those idle for gpu_hold. */
static void cancel_idle(const gpx__slurm *sx, const char *node, const char *keep,
                        int expired_only) {
    char root[PATH_MAX], hdir[PATH_MAX], buf[64];
    if (sx->envp == NULL || gpx__exec_fmt(root, sizeof root, "%s/holders", sx->state_dir) < 0)
        return;
    DIR *d = opendir(root);
    if (d == NULL)
        return;
    int64_t now = wall_ms();
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        /* A holder without an idle mark has tasks, or was reaped by a
         * daemon without gpu_hold, which cancelled it then. */
        if (de->d_name[0] == '.' || (node != NULL && !holder_of_node(de->d_name, node)) ||
            gpx__exec_fmt(hdir, sizeof hdir, "%s/%s", root, de->d_name) < 0 ||
            (keep != NULL && strcmp(hdir, keep) == 0) ||
            gpx__slurm_read(hdir, "idle", buf, sizeof buf) <= 0 || slices_left(hdir) > 0)
            continue;
        if (!expired_only || now - strtoll(buf, NULL, 10) >= sx->hold_ms)
            cancel_holder(sx, hdir);
    }
    closedir(d);
}

void gpx__slurm_holders_release(const gpx__slurm *sx, const char *node, const char *keep) {
    cancel_idle(sx, node, keep, 0);
}

void gpx__slurm_holders_sweep(const gpx__slurm *sx, int now_all) {
    cancel_idle(sx, NULL, NULL, !now_all);
}
