/*
 * job.c — a gpupool task as a Slurm batch job: the script it runs and the
 * sbatch call that submits it.
 *
 * The job is what Slurm accounts for: it is named "gp-<tag>.w<id>.t<task>
 * .a<attempt>" and its comment says "gpupool workload=<id> task=<t>
 * attempt=<a> user=<user> project=<project>", so that squeue, scontrol and
 * sacct show whose it is. It asks Slurm for the node the engine chose
 * (--nodelist) and as many whole GPUs as the engine bound (--gres=gpu:N), so
 * that Slurm's books hold every GPU gpupool uses and Slurm never gives it to
 * another job; the CPUs and memory of the request become -c and --mem. It
 * runs as the workload's Unix user (--uid/--gid, user.c). A gang's jobs are
 * submitted held and released together once every task has one
 * (gpx__slurm_gang_release), so that none starts while another might still
 * be refused.
 *
 * The script delivers the workload contract (docs/workload-contract.md): it
 * starts from a clean environment (Slurm's variables only, never
 * gpupoold's), exports the task's environment as contract.c builds it for
 * every executor, writes the log's header, runs the command in the working directory, and records
 * the exit status in <dir>/exit (<dir>/user/exit for a job of another user) before the footer. The
 * checkpoint signal reaches the command from Slurm (`scancel --full
 * --signal`, which signals every process of the job); the script itself
 * only notes the signal and keeps waiting, so that it can still record how
 * the command ended.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gp_env.h"
#include "common/gp_error.h"
#include "common/units.h"
#include "executors/contract.h"
#include "executors/registry.h"
#include "executors/slurm/slurm.h"

void gpx__slurm_key(const gp_task_launch *t, char *buf, size_t len) {
    snprintf(buf, len, "w%llu.t%d.a%d", (unsigned long long)t->workload, t->task, t->attempt);
}

/* The whole GPUs t was bound to, which its job asks Slurm for. */
static int whole_gpus(const gp_task_launch *t) {
    int whole = 0;
    for (int i = 0; t->binding != NULL && i < t->binding->nslices; i++)
        whole += t->binding->slices[i].milli >= GP_MILLI;
    return whole;
}

/* Writes s as one single-quoted shell word. */
static void put_quoted(FILE *f, const char *s) {
    fputc('\'', f);
    for (; *s != '\0'; s++)
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    fputc('\'', f);
}

/* Writes `export NAME='VALUE'` for one variable of the list. */
static void put_var(FILE *f, const gpx__env_var *v) {
    fprintf(f, "export %.*s=", (int)v->name_len, v->kv);
    put_quoted(f, v->kv + v->name_len + 1);
    fputc('\n', f);
}

/*
 * Writes the task's environment, as contract.c builds it for every
 * executor, as exports of the script: the instance is this executor's tag
 * (two daemons sharing a cluster never share a slice's ledger), the GPUs are
 * those Slurm gives the job (its CUDA_VISIBLE_DEVICES), a gang's rendezvous
 * is task 0's node address as Slurm reports it, and whether the interposer
 * exists is decided on the node (which sets $slice for the log header).
 * *frac is the task's fractional slice, or NULL.
 */
static int put_env(FILE *f, const gpx__slurm *sx, const gp_task_launch *t, const char *ckpt_dir,
                   const gpx__exec_user *u, const gp_slice **frac, char *err, size_t errlen) {
    const char *addr = t->gang_first != NULL ? t->gang_first->name : "";
    for (int i = 0; t->gang_first != NULL && i < t->gang_first->nlabels; i++)
        if (strcmp(t->gang_first->labels[i].key, "slurm.address") == 0)
            addr = t->gang_first->labels[i].value;
    gpx__contract_in in = {
        .t = t,
        .user = u,
        .instance = sx->tag,
        .ckpt_dir = ckpt_dir,
        .interposer = sx->interposer,
        .interposer_found = -1,
        .engine_devices = 1,
        .master_addr = addr,
    };
    gpx__contract c;
    int rc = gpx__contract_build(&in, &c, err, errlen);
    if (rc < 0)
        return rc;
    *frac = c.frac;
    if (c.frac != NULL)
        fputs("slice='NOT ENFORCED'\n", f);
    for (size_t i = 0; i < c.n; i++) {
        const gpx__env_var *v = &c.v[i];
        if (!v->if_interposer) {
            put_var(f, v);
            continue;
        }
        fputs("if [ -e ", f);
        put_quoted(f, sx->interposer);
        fputs(" ]; then slice=enforced; ", f);
        put_var(f, v);
        fputs("else ", f);
        if (v->otherwise != NULL) {
            fprintf(f, "export %.*s=", (int)v->name_len, v->kv);
            put_quoted(f, v->otherwise);
            fputc('\n', f);
        } else {
            fprintf(f, "unset %.*s\n", (int)v->name_len, v->kv);
        }
        fputs("fi\n", f);
    }
    gpx__contract_free(&c);
    return 0;
}

/*
 * Writes the command's start: one shell, as the task's user, that first
 * makes the attempt's own checkpoint directory, <root>/a<attempt>, seeded
 * with a copy of the newest earlier attempt's directory that was seeded
 * completely (its .gpupool-attempt written last), or, for the first attempt
 * of a workload checkpointed before attempts had directories, with what
 * <root> holds. Under a lock on <root>/.lock, so that the tasks of a gang
 * seed it once; directories of attempts older than the one copied are
 * removed. An attempt that Slurm still runs after gpupool recorded it lost
 * (its node unreachable) writes only its own directory, which no later
 * attempt reads once a newer one exists: it can never write the checkpoint
 * a new attempt resumes from. A directory that cannot be made ends the
 * attempt with 75 before the command runs. The shell then lets go of the
 * lock, enters the working directory (made if missing; 126 if it cannot)
 * and becomes the command, whose arguments the caller writes next. One
 * shell, not one for each part: a process less for each of thousands of
 * short tasks.
 */
static void put_start(FILE *f, const char *as_user, const char *root, int attempt,
                      const char *workdir) {
    fputs(as_user, f);
    fputs("/bin/sh -c 'r=$0 n=$1 w=$2 a=$0/a$1; shift 2; "
          "exec 9>>\"$r/.lock\" && flock 9 || exit 75; "
          "if [ ! -e \"$a/.gpupool-attempt\" ]; then src=; "
          "for d in \"$r\"/a[0-9]*; do k=${d##*/a}; case $k in *[!0-9]*) continue;; esac; "
          "[ \"$k\" -lt \"$n\" ] && [ -e \"$d/.gpupool-attempt\" ] && "
          "{ [ -z \"$src\" ] || [ \"$k\" -gt \"$src\" ]; } && src=$k; done; "
          "{ [ ! -e \"$a\" ] || rm -rf \"$a\"; } && mkdir -p \"$a\" || exit 75; "
          "if [ -n \"$src\" ]; then cp -a \"$r/a$src/.\" \"$a/\" || exit 75; "
          "for d in \"$r\"/a[0-9]*; do k=${d##*/a}; case $k in *[!0-9]*) continue;; esac; "
          "[ \"$k\" -lt \"$src\" ] && rm -rf \"$d\"; done; "
          "else for x in \"$r\"/* \"$r\"/.[!.]*; do [ -e \"$x\" ] || continue; "
          "case ${x##*/} in .lock|a[0-9]*) continue;; esac; cp -a \"$x\" \"$a/\" || exit 75; "
          "done; fi; echo \"$n\" >\"$a/.gpupool-attempt\" || exit 75; fi; exec 9>&-; "
          "{ [ -d \"$w\" ] || mkdir -p \"$w\"; } && cd \"$w\" || "
          "{ echo \"=== gpupool: cannot enter the working directory $w\"; exit 126; }; "
          "exec \"$@\"' ",
          f);
    put_quoted(f, root);
    fprintf(f, " %d ", attempt);
    put_quoted(f, workdir);
}

int gpx__slurm_write_script(const gpx__slurm *sx, const gp_task_launch *t, const char *dir,
                            const char *ckpt_dir, int slice, const gpx__exec_user *u, char *err,
                            size_t errlen) {
    if (t->argv == NULL || t->argv[0] == NULL) {
        gp_errf(err, errlen, "argv: the command is empty");
        return GP_EINVAL;
    }
    char path[PATH_MAX], tmp[PATH_MAX], key[GPX__SLURM_KEY_MAX], ckpt[PATH_MAX];
    gpx__slurm_key(t, key, sizeof key);
    if (gpx__exec_fmt(path, sizeof path, "%s/job.sh", dir) < 0 ||
        gpx__exec_fmt(tmp, sizeof tmp, "%s/job.sh.tmp", dir) < 0) {
        gp_errf(err, errlen, "state_dir: path too long");
        return GP_EINVAL;
    }
    /* The attempt's own checkpoint directory (put_start). */
    if (gpx__exec_fmt(ckpt, sizeof ckpt, "%s/a%d", ckpt_dir, t->attempt) < 0) {
        gp_errf(err, errlen, "checkpoint_dir: path too long");
        return GP_EINVAL;
    }
    FILE *f = gpx__slurm_create(tmp, err, errlen);
    if (f == NULL)
        return GP_ESYS;
    fprintf(f, "#!/bin/bash\n# gpupool task %s: written by gpupoold's slurm executor.\n", key);
    if (slice) {
        /* A step of a GPU holder job: stopped before it started, it ends at
         * once; otherwise it says which step it is, for signal and stop. */
        fprintf(f,
                "d='%s'\n[ -e \"$d/stopped\" ] && { printf 'status=137\\n' >\"$d/exit.tmp\" "
                "&& mv -f \"$d/exit.tmp\" \"$d/exit\"; exit 137; }\n"
                "echo \"$SLURM_JOB_ID.$SLURM_STEP_ID\" >\"$d/step.tmp\" && mv -f \"$d/step.tmp\" "
                "\"$d/step\"\n",
                dir);
    }
    /* Which GPUs Slurm gave the job, for the inventory (inventory.c,
     * own_gpus), in the task's directory or, for a job of another user, in
     * its own; first thing, while PATH is still set (for mv). A slice's
     * GPU is its holder's, which records it. */
    if (!slice && whole_gpus(t) > 0) {
        const char *r = u->switch_to ? "/user" : "";
        fprintf(f,
                "printf 'job=%%s node=%%s gpus=%%s\\n' \"$SLURM_JOB_ID\" \"$SLURMD_NODENAME\" "
                "\"${SLURM_JOB_GPUS-}\" >'%s%s/gpus.tmp' 2>/dev/null && mv -f '%s%s/gpus.tmp' "
                "'%s%s/gpus'\n",
                dir, r, dir, r, dir, r);
    }
    /* A clean environment, never gpupoold's (which may hold its secrets):
     * what Slurm set for the job, the GPUs it gave, and the user's own
     * basics, as the local executor gives its tasks. */
    fputs("for v in $(compgen -e); do case $v in SLURM_*|SLURMD_*|CUDA_VISIBLE_DEVICES|"
          "GPU_DEVICE_ORDINAL|ROCR_VISIBLE_DEVICES|TMPDIR) ;; *) unset \"$v\" 2>/dev/null;; "
          "esac; done\n",
          f);
    const gp_slice *fr = NULL;
    int rc = put_env(f, sx, t, ckpt, u, &fr, err, errlen);
    if (rc < 0) {
        fclose(f);
        goto out;
    }
    fprintf(f,
            "TZ=UTC0 printf -v gp_t '%%(%%FT%%TZ)T' -1\n"
            "echo \"=== gpupool: workload %llu task %d attempt %d started $gp_t "
            "on node $SLURMD_NODENAME as Slurm job $SLURM_JOB_ID%s; GPUs "
            "'${CUDA_VISIBLE_DEVICES}'%s\"\n",
            (unsigned long long)t->workload, t->task, t->attempt,
            slice ? " step $SLURM_STEP_ID (in its GPU holder)" : "",
            fr != NULL ? " (slice: $slice)" : "");
    /* The script survives the checkpoint signal (Slurm sends it to every
     * process of the job) so that it can record how the command ended; a
     * trapped signal is reset to its default in the command it executes. */
    fputs("for s in TERM INT HUP USR1 USR2 QUIT CONT; do trap : $s; done\n", f);
    /* The command enters its working directory (made if missing) as its
     * user: a slice's script is root's (in gpupoold's holder job) and
     * becomes the user only here, so that nothing of the user's is made or
     * entered as root. */
    char as_user[128] = "";
    if (slice && u->switch_to)
        snprintf(as_user, sizeof as_user,
                 "setpriv --reuid=%u --regid=%u --init-groups --no-new-privs -- ", (unsigned)u->uid,
                 (unsigned)u->gid);
    /* A task with GPUs has them sampled into a record this script opens
     * (as root for a slice, whose directory stays gpupoold's; as the user
     * in its own directory otherwise), so that the user writes it only
     * through the descriptor (gpuuse.h): by an interactive task's session
     * server, or for a batch task by the sampler started here beside the
     * command, which does not get the descriptor. Without it the task runs
     * all the same. */
    int use = gpx__slurm_samples(sx, t);
    if (use)
        fprintf(f, "{ exec 8>'%s/%s'; } 2>/dev/null || exec 8>/dev/null\n", dir,
                gpx__slurm_gpu_use_file(u, slice));
    if (use && !t->tty) {
        /* With nvml=auto, only where NVIDIA's driver is: elsewhere the
         * library finds no GPU, and the sampler would be a process for
         * nothing. */
        fputs("gp_sampler=\n", f);
        if (sx->nvml_auto)
            fputs("[ -e /dev/nvidiactl ] && ", f);
        fputs("{ ", f);
        fputs(as_user, f);
        put_quoted(f, sx->session_prog);
        fputs(" sample 8 ", f);
        put_quoted(f, sx->nvml);
        fputs(" $$ & gp_sampler=$!; }\n", f);
    }
    put_start(f, as_user, ckpt_dir, t->attempt,
              t->workdir != NULL && t->workdir[0] != '\0' ? t->workdir : ckpt);
    if (t->tty) {
        /* An interactive task: the session server owns its terminal and
         * runs it (session.c). */
        char name[GPX__SLURM_KEY_MAX + 40];
        gpx__slurm_sess_name(sx, key, name, sizeof name);
        fputc(' ', f);
        put_quoted(f, sx->session_prog);
        fputs(" serve ", f);
        put_quoted(f, name);
        if (use) {
            fputs(" --gpu-use 8 --nvml ", f);
            put_quoted(f, sx->nvml);
        }
        fputs(" --", f);
    }
    for (size_t i = 0; t->argv[i] != NULL; i++) {
        fputc(' ', f);
        put_quoted(f, t->argv[i]);
    }
    if (use && !t->tty)
        fputs(" 8>&-", f);
    /* A job of another user records its end in its own directory; the
     * task directory stays gpupoold's. */
    const char *x = u->switch_to && !slice ? "/user" : "";
    fputs("\nstatus=$?\n", f);
    if (use && !t->tty)
        fputs("[ -z \"$gp_sampler\" ] || kill -KILL \"$gp_sampler\" 2>/dev/null\n", f);
    fputs("printf 'status=%d\\n' \"$status\" >", f);
    fprintf(f, "'%s%s/exit.tmp' && mv -f '%s%s/exit.tmp' '%s%s/exit'\n", dir, x, dir, x, dir, x);
    /* The times come from bash's own strftime, as date(1) would print
     * them: a process less per line, for each of thousands of short tasks. */
    fputs("TZ=UTC0 printf -v gp_t '%(%FT%TZ)T' -1\n"
          "echo \"=== gpupool: attempt ended $gp_t with status $status\"\n"
          "exit $status\n",
          f);
    if ((rc = gpx__slurm_finish(f, tmp, err, errlen)) == 0 && rename(tmp, path) < 0) {
        gp_errf(err, errlen, "state_dir: cannot rename %s: %s", tmp, strerror(errno));
        rc = GP_ESYS;
    }
out:
    /* Whatever failed once the file was made, it goes: a later launch
     * writes it anew. */
    if (rc < 0)
        unlink(tmp);
    return rc;
}

int gpx__slurm_submit(const gpx__slurm *sx, const gp_task_launch *t, const char *dir,
                      const char *key, const gpx__exec_user *u, int hold, long *jobid, char *err,
                      size_t errlen) {
    char name[160], comment[400], node[GP_NAME_MAX + 32], cpus[48], mem[48], gres[48],
        out[PATH_MAX + 16], script[PATH_MAX], chdir[PATH_MAX + 16], uid[32], gid[32];
    snprintf(name, sizeof name, "--job-name=gp-%s.%s", sx->tag, key);
    snprintf(comment, sizeof comment,
             "--comment=gpupool workload=%llu task=%d attempt=%d user=%.60s project=%.60s",
             (unsigned long long)t->workload, t->task, t->attempt, t->user ? t->user : "",
             t->project ? t->project : "");
    snprintf(node, sizeof node, "--nodelist=%.63s", t->node->name);
    int64_t c = (t->cpu_milli + 999) / 1000;
    snprintf(cpus, sizeof cpus, "--cpus-per-task=%lld", (long long)(c > 0 ? c : 1));
    int64_t mb = (t->mem_bytes + (1 << 20) - 1) >> 20;
    snprintf(mem, sizeof mem, "--mem=%lld", (long long)(mb > 0 ? mb : 64));
    int whole = whole_gpus(t);
    snprintf(gres, sizeof gres, "--gres=gpu:%d", whole);
    const char *log = t->log_path != NULL && t->log_path[0] ? t->log_path : "/dev/null";
    if (gpx__exec_fmt(out, sizeof out, "--output=%s", log) < 0 ||
        gpx__exec_fmt(script, sizeof script, "%s/job.sh", dir) < 0 ||
        gpx__exec_fmt(chdir, sizeof chdir, "--chdir=%s", dir) < 0) {
        gp_errf(err, errlen, "log_path: path too long");
        return GP_EINVAL;
    }
    const char *opts[16];
    int k = 0;
    opts[k++] = name;
    opts[k++] = comment;
    opts[k++] = node;
    opts[k++] = cpus;
    opts[k++] = mem;
    if (whole > 0)
        opts[k++] = gres;
    opts[k++] = out;
    opts[k++] = "--open-mode=append";
    opts[k++] = "--export=ALL";
    opts[k++] = chdir;
    if (u->switch_to) {
        /* gpupoold is root: the job is the user's in Slurm's books. */
        snprintf(uid, sizeof uid, "--uid=%u", (unsigned)u->uid);
        snprintf(gid, sizeof gid, "--gid=%u", (unsigned)u->gid);
        opts[k++] = uid;
        opts[k++] = gid;
    }
    if (hold)
        opts[k++] = "--hold";
    opts[k] = NULL;
    return gpx__slurm_sbatch(sx, t->node, opts, script, jobid, err, errlen);
}

int gpx__slurm_gang_release(const gpx__slurm *sx, const gp_task_launch *t, char *err,
                            size_t errlen) {
    if (t->gang_size <= 1)
        return 0;
    gp_task_launch each = *t;
    char key[GPX__SLURM_KEY_MAX], first[PATH_MAX], dir[PATH_MAX], hdir[PATH_MAX], buf[64];
    each.task = 0;
    gpx__slurm_key(&each, key, sizeof key);
    if (gpx__slurm_task_dir(sx, key, first, sizeof first) < 0) {
        gp_errf(err, errlen, "state_dir: path too long");
        return GP_EINVAL;
    }
    if (gpx__slurm_read(first, "released", buf, sizeof buf) > 0)
        return 0;
    size_t cap = 16 + (size_t)t->gang_size * 21, len = 0;
    char *ids = malloc(cap);
    if (ids == NULL) {
        gp_errf(err, errlen, "out of memory");
        return GP_ENOMEM;
    }
    ids[0] = '\0';
    for (int i = 0; i < t->gang_size; i++) {
        each.task = i;
        gpx__slurm_key(&each, key, sizeof key);
        long id = 0;
        if (gpx__slurm_task_dir(sx, key, dir, sizeof dir) < 0 ||
            gpx__slurm_read(dir, "jobid", buf, sizeof buf) <= 0 ||
            (id = strtol(buf, NULL, 10)) <= 0) {
            free(ids); /* not every task has its job yet */
            return 0;
        }
        /* A slice runs in a holder job that is never held: nothing to release. */
        if (gpx__slurm_is_slice(dir, hdir, sizeof hdir) == 0)
            len += (size_t)snprintf(ids + len, cap - len, "%s%ld", len ? "," : "", id);
    }
    int rc = 0;
    if (len > 0) {
        /* One RPC for the whole gang: Slurm sees every job eligible at once.
         * Releasing a job already released (a launch repeated before the
         * mark below was written) succeeds. */
        const char *argv[] = {"scontrol", "release", ids, NULL};
        rc = gpx__slurm_run(sx, argv, NULL, err, errlen);
    }
    free(ids);
    if (rc == 0 && gpx__slurm_write(first, "released", "1\n") < 0) {
        gp_errf(err, errlen, "state_dir: cannot record the gang's release in %s", first);
        rc = GP_ESYS;
    }
    return rc;
}
