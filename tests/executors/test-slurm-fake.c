/*
 * test-slurm-fake.c — the slurm executor against fake Slurm commands (small
 * shell scripts in bin_dir that print canned JSON and record their
 * arguments), so that its reading of Slurm's answers is tested everywhere,
 * without a cluster: GRES and features into node specs, drained nodes,
 * GPUs held by jobs that are not gpupool's, the sbatch call of a launch and
 * its idempotence, a slice's launch repeated after gpupoold died before
 * queueing it, and every job state poll() maps. The real cluster is the
 * Slurm tier's (tests/slurm).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/executor.h"
#include "executors/slurm/gpuuse.h"
#include "executors/slurm/slurm.h"
#include "gptest.h"
#include "helpers.h"

static char dir[PATH_MAX / 2];

static void put(const char *name, const char *text, int exec) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    if (exec)
        chmod(path, 0755);
}

/* Reads a file the fake commands wrote ("" if none). */
static const char *get(const char *name) {
    static char buf[8192];
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    return buf;
}

static const char sinfo_json[] =
    "{\"nodes\": ["
    "{\"name\": \"n1\", \"cpus\": 32, \"real_memory\": 1024, \"state\": \"mixed\","
    " \"state_flags\": [], \"partitions\": [\"gpu\"], \"active_features\": \"rack7,fast\","
    " \"gres\": \"gpu:a100:4(S:0-1)\", \"gres_used\": \"gpu:a100:3(IDX:0-2)\","
    " \"address\": \"10.0.0.1\"},"
    "{\"name\": \"n2\", \"cpus\": 8, \"real_memory\": 2048, \"state\": \"idle\","
    " \"state_flags\": [\"DRAIN\"], \"partitions\": [\"gpu\"], \"active_features\": \"\","
    " \"gres\": \"gpu:h100:2,gpu:l4:1,nic:2\", \"gres_used\": \"gpu:h100:0(IDX:N/A)\"},"
    "{\"name\": \"c1\", \"cpus\": 8, \"real_memory\": 2048, \"state\": \"idle\","
    " \"state_flags\": [], \"partitions\": [\"cpu\"], \"gres\": \"\", \"gres_used\": \"\"}"
    "]}\n";

/* squeue (in text) answers with squeue.txt, or, where squeue.fail exists,
 * fails with it. */
static void squeue_text(const char *lines) {
    put("squeue.txt", lines, 0);
}

static gp_executor *reopen_fake(void);
static gp_executor *reopen_fake_with(const char *more);

static gp_executor *open_fake(void) {
    snprintf(dir, sizeof dir, "%s", gpt_tmpdir());
    char script[PATH_MAX * 2];
    put("scontrol", "#!/bin/sh\nexit 0\n", 1);
    snprintf(script, sizeof script, "#!/bin/sh\ncat '%s/sinfo.json'\n", dir);
    put("sinfo", script, 1);
    snprintf(script, sizeof script,
             "#!/bin/sh\necho \"$*\" >>'%s/squeue.args'\ncd '%s'\n"
             "[ -f squeue.fail ] && { cat squeue.fail >&2; exit 1; }; cat squeue.txt\n",
             dir, dir);
    put("squeue", script, 1);
    squeue_text("");
    snprintf(script, sizeof script, "#!/bin/sh\necho \"$*\" >>'%s/sbatch.args'\necho 101\n", dir);
    put("sbatch", script, 1);
    snprintf(script, sizeof script, "#!/bin/sh\necho \"$*\" >>'%s/scancel.args'\n", dir);
    put("scancel", script, 1);
    put("sinfo.json", sinfo_json, 0);
    return reopen_fake();
}

/* Opens the executor again on open_fake's directory (a restart). */
static gp_executor *reopen_fake(void) {
    return reopen_fake_with("");
}

/* reopen_fake, with more keys of configuration (",key=value..."). */
static gp_executor *reopen_fake_with(const char *more) {
    char config[PATH_MAX * 4 + 128];
    snprintf(config, sizeof config,
             "bin_dir=%s,state_dir=%s/state,partitions=gpu,tag=t,gpu_mem.a100=40G%s", dir, dir,
             more);
    gp_executor *ex = NULL;
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_executor_open("slurm", config, &ex, err, sizeof err) == 0, "open: %s", err);
    return ex;
}

/* A task directory of this instance's: job id, the GPUs it asked for and
 * the record its script wrote of which Slurm gave (rec NULL: none yet). */
static void own_job(const char *key, const char *jobid, const char *ngpus, const char *rec) {
    char path[PATH_MAX], name[160];
    snprintf(path, sizeof path, "%s/state/%s", dir, key);
    ck_assert(mkdir(path, 0700) == 0 || errno == EEXIST);
    snprintf(name, sizeof name, "state/%s/jobid", key);
    put(name, jobid, 0);
    snprintf(name, sizeof name, "state/%s/ngpus", key);
    put(name, ngpus, 0);
    if (rec != NULL) {
        snprintf(name, sizeof name, "state/%s/gpus", key);
        put(name, rec, 0);
    }
}

START_TEST(test_inventory) {
    gp_executor *ex = open_fake();
    /* sinfo: n1's Slurm GPUs 0-2 in use. Job 7 is gpupool's, running on
     * GPU 2 (its script's record); job 8 is gpupool's, COMPLETING, its GPU 3
     * already back in sinfo; job 9 is named like one of gpupool's but is
     * someone else's (no task directory of this instance records it); job
     * 10 is gpupool's and running, but its record, which its user may
     * write, claims two GPUs for a job that asked for one; job 11's record
     * is of another job (a holder's predecessor); job 12 has none yet; job
     * 13 runs on n2, and its record (its user's) claims n1's GPU 0. */
    squeue_text("7|RUNNING|0|None|n1|gp-t.w1.t0.a1\n"
                "8|COMPLETING|0|None|n1|gp-t.w3.t0.a1\n"
                "9|RUNNING|0|None|n1|gp-t.w2.t0.a1\n"
                "10|RUNNING|0|None|n1|gp-t.w4.t0.a1\n"
                "11|RUNNING|0|None|n1|gp-t.w5.t0.a1\n"
                "12|RUNNING|0|None|n1|gp-t.w6.t0.a1\n"
                "13|RUNNING|0|None|n2|gp-t.w7.t0.a1\n");
    own_job("w1.t0.a1", "7\n", "1\n", "job=7 node=n1 gpus=2\n");
    own_job("w3.t0.a1", "8\n", "1\n", "job=8 node=n1 gpus=3\n");
    own_job("w4.t0.a1", "10\n", "1\n", "job=10 node=n1 gpus=0-1\n");
    own_job("w5.t0.a1", "11\n", "1\n", "job=4 node=n1 gpus=1\n");
    own_job("w6.t0.a1", "12\n", "1\n", NULL);
    own_job("w7.t0.a1", "13\n", "1\n", "job=13 node=n1 gpus=0\n");
    gp_node_spec nodes[4];
    size_t n = 0;
    int emulated = 1;
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_exec_inventory(ex, nodes, 4, &n, &emulated, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(emulated, 0);
    ck_assert_uint_eq(n, 2); /* c1 is not in partition gpu */
    ck_assert_str_eq(nodes[0].name, "n1");
    ck_assert_int_eq(nodes[0].schedulable, 1);
    ck_assert_int_eq(nodes[0].cpu_milli, 32000);
    ck_assert_int_eq(nodes[0].mem_bytes, 1024LL << 20);
    /* 4 GPUs, keeping their numbers; Slurm's 0-2 in use, 2 by gpupool's own
     * job (not 1, by the one only named like it; 0 and 1 are not taken off
     * on the word of records that do not fit their jobs, 0 not on that of a
     * job on another node; and the completing job's 3 is free again, so it
     * takes nothing off): 2 held by others. */
    ck_assert_int_eq(nodes[0].ngpus, 4);
    ck_assert_int_eq(nodes[0].gpus_taken, 2);
    ck_assert_int_eq(nodes[0].gpus[3].index, 3);
    ck_assert_str_eq(nodes[0].gpus[0].model, "a100");
    ck_assert_int_eq(nodes[0].gpus[0].mem_bytes, 40LL << 30);
    ck_assert_str_eq(nodes[0].domain, "rack7");
    int fast = 0, addr = 0;
    for (int i = 0; i < nodes[0].nlabels; i++) {
        fast |= strcmp(nodes[0].labels[i].key, "feature.fast") == 0;
        addr |= strcmp(nodes[0].labels[i].key, "slurm.address") == 0 &&
                strcmp(nodes[0].labels[i].value, "10.0.0.1") == 0;
    }
    ck_assert(fast && addr);
    ck_assert_str_eq(nodes[1].name, "n2");
    ck_assert_int_eq(nodes[1].schedulable, 0); /* drained */
    ck_assert_int_eq(nodes[1].ngpus, 3);       /* 2 h100 and 1 l4; the NICs are no GPUs */
    ck_assert_int_eq(nodes[1].gpus_taken, 0);
    ck_assert_str_eq(nodes[1].gpus[2].model, "l4");
    ck_assert_int_eq(nodes[1].gpus[2].mem_bytes, 80LL << 30);
    ck_assert_str_eq(nodes[1].domain, "gpu");
    /* One squeue, in text, of this instance's jobs only. */
    ck_assert_msg(strstr(get("squeue.args"), "--json") == NULL &&
                      strstr(get("squeue.args"), "--jobs=") != NULL,
                  "%s", get("squeue.args"));
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/* The record a job's script writes of its GPUs, which its user may write:
 * what it says, or a refusal of anything out of form. */
START_TEST(test_gpus_record) {
    long job;
    char node[GP_NAME_MAX + 1];
    uint32_t idx;
    int count;
    ck_assert_int_eq(gpx__slurm_parse_gpus_record("job=42 node=n1 gpus=0,2-3\n", &job, node,
                                                  sizeof node, &idx, &count),
                     0);
    ck_assert(job == 42 && strcmp(node, "n1") == 0 && idx == 0xd && count == 3);
    ck_assert_int_eq(
        gpx__slurm_parse_gpus_record("job=5 node=n2 gpus=", &job, node, sizeof node, &idx, &count),
        0);
    ck_assert_int_eq(count, 0);
    static const char *const bad[] = {
        "job=0 node=n1 gpus=1",    "job=-3 node=n1 gpus=1",
        "job=7 node= gpus=1",      "job=7 node=n/1 gpus=1",
        "job=7 node=n1 gpus=32",   "job=7 node=n1 gpus=1,",
        "job=7 node=n1 gpus=3-1",  "job=7 node=n1 gpus=a",
        "job=7 node=n1 gpus=1\nx", "job=99999999999999999999 node=n1 gpus=1",
        "node=n1 gpus=1",          "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(gpx__slurm_parse_gpus_record(bad[i], &job, node, sizeof node, &idx, &count) ==
                          GP_EINVAL,
                      "%s", bad[i]);
}
END_TEST

static int launch_as(gp_executor *ex, uint64_t wl, int task, int gang, int nslices, int milli,
                     const char *run_as, int tty, char handle[GP_HANDLE_MAX], char *err,
                     size_t errlen);

/* Launches task `task` of workload wl (a gang of gang tasks; 0: alone) on
 * n1 with GPUs 0 to nslices-1, milli thousandths of each (less than 1000: a
 * slice, in a GPU holder job), as run_as. Returns launch's result. */
static int launch_task(gp_executor *ex, uint64_t wl, int task, int gang, int nslices, int milli,
                       const char *run_as, char handle[GP_HANDLE_MAX], char *err, size_t errlen) {
    return launch_as(ex, wl, task, gang, nslices, milli, run_as, 0, handle, err, errlen);
}

/* launch_task, with a terminal if tty. */
static int launch_as(gp_executor *ex, uint64_t wl, int task, int gang, int nslices, int milli,
                     const char *run_as, int tty, char handle[GP_HANDLE_MAX], char *err,
                     size_t errlen) {
    gp_node_spec node;
    memset(&node, 0, sizeof node);
    snprintf(node.name, sizeof node.name, "n1");
    node.ngpus = 4;
    gp_task_binding b;
    memset(&b, 0, sizeof b);
    b.node = "n1";
    b.nslices = nslices;
    for (int i = 0; i < nslices; i++)
        b.slices[i] = (gp_slice){.gpu = i, .milli = milli, .mig_slot = -1};
    const char *argv[] = {"true", NULL};
    gp_task_launch t;
    memset(&t, 0, sizeof t);
    t.workload = wl;
    t.task = task;
    t.attempt = 1;
    t.project = "nlp";
    t.user = "ana";
    t.argv = argv;
    t.node = &node;
    t.binding = &b;
    t.gang_size = gang;
    t.gang_first = &node;
    t.run_as = run_as;
    t.tty = tty;
    return gp_exec_launch(ex, &t, handle, err, errlen);
}

/* launch_task of a task alone, which must succeed. */
static void launch_on_n1(gp_executor *ex, uint64_t wl, int nslices, int milli,
                         char handle[GP_HANDLE_MAX]) {
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(launch_task(ex, wl, 0, 0, nslices, milli, NULL, handle, err, sizeof err) == 0,
                  "launch: %s", err);
}

/* Launches workload 5's task on n1 with two whole GPUs. */
static void launch5(gp_executor *ex, char handle[GP_HANDLE_MAX]) {
    launch_on_n1(ex, 5, 2, 1000, handle);
}

/* Launches workload 6's task on n1 as half of GPU 0. */
static void launch6_slice(gp_executor *ex, char handle[GP_HANDLE_MAX]) {
    launch_on_n1(ex, 6, 1, 500, handle);
}

START_TEST(test_launch_is_one_sbatch) {
    gp_executor *ex = open_fake();
    char h1[GP_HANDLE_MAX], h2[GP_HANDLE_MAX];
    launch5(ex, h1);
    ck_assert_str_eq(h1, "slurm:101:w5.t0.a1");
    const char *args = get("sbatch.args");
    ck_assert_msg(strstr(args, "--job-name=gp-t.w5.t0.a1") && strstr(args, "--nodelist=n1") &&
                      strstr(args, "--gres=gpu:2") && strstr(args, "--partition=gpu") &&
                      strstr(args, "user=ana project=nlp"),
                  "sbatch %s", args);
    launch5(ex, h2);
    ck_assert_str_eq(h2, h1);
    ck_assert_int_eq((int)strlen(get("sbatch.args")), (int)strlen(args)); /* once */
    ck_assert_int_eq(gp_exec_signal(ex, h1, SIGUSR1), 0);
    ck_assert_msg(strstr(get("scancel.args"), "--full --signal=10 101") != NULL, "scancel %s",
                  get("scancel.args"));
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/* sbatch failing with Slurm's words for a controller busy or out of reach
 * is a launch to try again (GP_EAGAIN); with words for a request Slurm
 * refuses, it is not. The try again finds the job by its name (the
 * controller may have taken it before its answer was lost): no second
 * sbatch. */
static int exists(const char *name);
static void remove_file(const char *name);

/* sbatch fails from now on, saying words as Slurm's sbatch does. */
static void sbatch_fails(const char *words) {
    char script[256];
    snprintf(script, sizeof script,
             "#!/bin/sh\necho 'sbatch: error: Batch job submission failed: %s' >&2\nexit 1\n",
             words);
    put("sbatch", script, 1);
}

START_TEST(test_launch_try_again) {
    gp_executor *ex = open_fake();
    char h[GP_HANDLE_MAX], err[GP_ERR_MAX] = "", script[PATH_MAX + 128];
    sbatch_fails("Socket timed out on send/recv operation");
    ck_assert_int_eq(launch_task(ex, 5, 0, 0, 2, 1000, NULL, h, err, sizeof err), GP_EAGAIN);
    ck_assert_msg(strstr(err, "sbatch failed"), "%s", err);
    squeue_text("101|PENDING|0|None||gp-t.w5.t0.a1\n");
    snprintf(script, sizeof script, "#!/bin/sh\necho \"$*\" >>'%s/sbatch.args'\necho 102\n", dir);
    put("sbatch", script, 1);
    ck_assert_int_eq(launch_task(ex, 5, 0, 0, 2, 1000, NULL, h, err, sizeof err), 0);
    ck_assert_str_eq(h, "slurm:101:w5.t0.a1");
    ck_assert_str_eq(get("sbatch.args"), "");
    sbatch_fails("Invalid partition name specified");
    ck_assert_int_eq(launch_task(ex, 7, 0, 0, 2, 1000, NULL, h, err, sizeof err), GP_EIO);
    ck_assert_msg(strstr(err, "Invalid partition"), "%s", err);
    /* A launch given up: its job, if Slurm took it, is cancelled by name,
     * and its key forgotten. */
    sbatch_fails("Socket timed out on send/recv operation");
    ck_assert_int_eq(launch_task(ex, 8, 0, 0, 2, 1000, NULL, h, err, sizeof err), GP_EAGAIN);
    ck_assert_int_eq(exists("state/w8.t0.a1"), 1);
    gp_exec_abandon ab = {.workload = 8, .task = 0, .attempt = 1};
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_ABANDON, &ab), 0);
    ck_assert_msg(strstr(get("scancel.args"), "--name=gp-t.w8.t0.a1") != NULL, "scancel %s",
                  get("scancel.args"));
    ck_assert_int_eq(exists("state/w8.t0.a1"), 0);
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/* A launch abandoned while scancel cannot reach the controller either: the
 * key is marked and cancelled again at each inventory, after a restart
 * too, until Slurm answers; then it is forgotten. */
START_TEST(test_abandon_retried_until_slurm_answers) {
    gp_executor *ex = open_fake();
    char h[GP_HANDLE_MAX], err[GP_ERR_MAX] = "", script[PATH_MAX * 2 + 256];
    sbatch_fails("Unable to contact slurm controller (connect failure)");
    ck_assert_int_eq(launch_task(ex, 8, 0, 0, 2, 1000, NULL, h, err, sizeof err), GP_EAGAIN);
    snprintf(script, sizeof script,
             "#!/bin/sh\necho \"$*\" >>'%s/scancel.args'\n"
             "[ -f '%s/scancel.fail' ] && { echo 'scancel: error: Unable to contact slurm "
             "controller (connect failure)' >&2; exit 1; }\nexit 0\n",
             dir, dir);
    put("scancel", script, 1);
    put("scancel.fail", "", 0);
    gp_exec_abandon ab = {.workload = 8, .task = 0, .attempt = 1};
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_ABANDON, &ab), GP_EAGAIN);
    ck_assert_int_eq(exists("state/w8.t0.a1/abandoned"), 1);
    gp_node_spec nodes[4];
    size_t n;
    int emulated;
    ck_assert_int_eq(gp_exec_inventory(ex, nodes, 4, &n, &emulated, err, sizeof err), 0);
    ck_assert_int_eq(exists("state/w8.t0.a1"), 1); /* still out of reach */
    /* A restart finds the key by its mark. */
    gp_executor_close(ex);
    ex = reopen_fake();
    remove_file("scancel.args");
    remove_file("scancel.fail");
    ck_assert_int_eq(gp_exec_inventory(ex, nodes, 4, &n, &emulated, err, sizeof err), 0);
    ck_assert_msg(strstr(get("scancel.args"), "--name=gp-t.w8.t0.a1") != NULL, "scancel %s",
                  get("scancel.args"));
    ck_assert_int_eq(exists("state/w8.t0.a1"), 0);
    remove_file("scancel.args");
    ck_assert_int_eq(gp_exec_inventory(ex, nodes, 4, &n, &emulated, err, sizeof err), 0);
    ck_assert_str_eq(get("scancel.args"), ""); /* forgotten */
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/* Polls workload 5's task with squeue saying state and reason (state NULL:
 * no such job). */
static gp_task_status poll_why(gp_executor *ex, const char *state, const char *reason) {
    char job[256] = "";
    if (state != NULL)
        snprintf(job, sizeof job, "101|%s|256|%s|n1|gp-t.w5.t0.a1\n", state, reason);
    squeue_text(job);
    gp_task_status st;
    memset(&st, 0, sizeof st);
    snprintf(st.handle, sizeof st.handle, "slurm:101:w5.t0.a1");
    ck_assert_int_eq(gp_exec_poll(ex, &st, 1), 0);
    return st;
}

static gp_task_status poll_with(gp_executor *ex, const char *state) {
    return poll_why(ex, state, "None");
}

START_TEST(test_poll_maps_every_state) {
    gp_executor *ex = open_fake();
    char h[GP_HANDLE_MAX];
    launch5(ex, h);
    ck_assert_int_eq(poll_with(ex, "PENDING").state, GP_TASK_STARTING);
    ck_assert_int_eq(poll_with(ex, "RUNNING").state, GP_TASK_RUNNING);
    ck_assert_int_eq(poll_with(ex, "SUSPENDED").state, GP_TASK_RUNNING);
    ck_assert_int_eq(poll_with(ex, "NODE_FAIL").state, GP_TASK_LOST);
    gp_task_status st = poll_with(ex, "CANCELLED");
    ck_assert_int_eq(st.state, GP_TASK_LOST);
    ck_assert_msg(strstr(st.detail, "cancelled outside gpupool"), "%s", st.detail);
    st = poll_with(ex, "FAILED"); /* no exit file: Slurm's wait status 256 */
    ck_assert_int_eq(st.state, GP_TASK_EXITED);
    ck_assert_int_eq(st.exit_code, 1);
    /* Its node could not start the script: the command never ran. */
    st = poll_why(ex, "FAILED", "JobLaunchFailure");
    ck_assert_int_eq(st.state, GP_TASK_LOST);
    ck_assert_msg(strstr(st.detail, "could not launch job 101"), "%s", st.detail);
    st = poll_with(ex, NULL);
    ck_assert_int_eq(st.state, GP_TASK_LOST);
    put("state/w5.t0.a1/exit", "status=137\n", 0);
    st = poll_with(ex, NULL); /* forgotten by Slurm, but its script recorded the end */
    ck_assert_int_eq(st.state, GP_TASK_EXITED);
    ck_assert_int_eq(st.term_signal, 9);
    put("state/w5.t0.a1/exit", "status=0\n", 0);
    st = poll_with(ex, "COMPLETED");
    ck_assert_int_eq(st.state, GP_TASK_EXITED);
    ck_assert_int_eq(st.exit_code, 0);
    ck_assert_int_eq(st.term_signal, 0);
    ck_assert_int_eq(gp_exec_reap(ex, h), 0);
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

static int exists(const char *name) {
    char path[PATH_MAX + 64];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

static void remove_file(const char *name) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_msg(unlink(path) == 0, "unlink %s", path);
}

/*
 * Poll reads squeue's text answer (Slurm 22.05's --json ignores --jobs and
 * lists every job it remembers), asks for the polled jobs only, and takes
 * squeue's refusal of a list it knows none of as "forgotten".
 */
START_TEST(test_poll_asks_for_its_jobs_only) {
    gp_executor *ex = open_fake();
    char h[GP_HANDLE_MAX];
    launch5(ex, h);
    ck_assert_int_eq(poll_with(ex, "RUNNING").state, GP_TASK_RUNNING);
    const char *args = get("squeue.args");
    ck_assert_msg(strstr(args, "--jobs=101") != NULL && strstr(args, "--json") == NULL, "%s", args);
    put("squeue.fail", "slurm_load_jobs error: Invalid job id specified\n", 0);
    gp_task_status st;
    memset(&st, 0, sizeof st);
    snprintf(st.handle, sizeof st.handle, "%s", h);
    ck_assert_int_eq(gp_exec_poll(ex, &st, 1), 0);
    ck_assert_int_eq(st.state, GP_TASK_LOST);
    ck_assert_msg(strstr(st.detail, "no longer knows job 101"), "%s", st.detail);
    /* Any other failure is the poll's, and judges nothing. */
    put("squeue.fail", "slurm_load_jobs error: Unable to contact slurm controller\n", 0);
    ck_assert_int_lt(gp_exec_poll(ex, &st, 1), 0);
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/* Stopping a task whose job Slurm has reported ended runs no scancel: the
 * daemon stops every task of a workload it concludes, and two scancel per
 * short job were most of what a launch cost. A job still running is
 * killed and cancelled as before. */
START_TEST(test_stop_after_end_runs_no_scancel) {
    gp_executor *ex = open_fake();
    char h[GP_HANDLE_MAX];
    launch5(ex, h);
    ck_assert_int_eq(poll_with(ex, "RUNNING").state, GP_TASK_RUNNING);
    ck_assert_int_eq(gp_exec_stop(ex, h), 0);
    ck_assert_msg(strstr(get("scancel.args"), "--signal=KILL 101") != NULL, "%s",
                  get("scancel.args"));
    remove_file("scancel.args");
    put("state/w5.t0.a1/exit", "status=0\n", 0);
    ck_assert_int_eq(poll_with(ex, "COMPLETED").state, GP_TASK_EXITED);
    ck_assert_int_eq(gp_exec_stop(ex, h), 0);
    ck_assert_str_eq(get("scancel.args"), "");
    ck_assert_int_eq(gp_exec_reap(ex, h), 0);
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/* squeue's text lines: the nodes, then the name last and whole (a user's
 * job name may hold '|'); lines that are not a plain job's, or of too few
 * fields, are skipped. */
START_TEST(test_squeue_lines) {
    gpx__slurm_job *jobs;
    size_t n;
    ck_assert_int_eq(gpx__slurm_parse_jobs("21|FAILED|768|NonZeroExitCode|n1|wrap\n"
                                           "23|COMPLETED|0|None|n[1-2]|gp-t.w1.t0.a1|x\n"
                                           "24_3|RUNNING|0|None|n1|array\n"
                                           "25||0|None|n1|no state\n"
                                           "26|RUNNING|-1|None|n1|negative\n"
                                           "27|RUNNING|0|None|gp-t.w2.t0.a1\n"
                                           "28|PENDING|0|||",
                                           &jobs, &n),
                     0);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(jobs[0].id, 21);
    ck_assert_str_eq(jobs[0].state, "FAILED");
    ck_assert_int_eq(jobs[0].wstatus, 768);
    ck_assert_str_eq(jobs[0].reason, "NonZeroExitCode");
    ck_assert_str_eq(jobs[0].nodes, "n1");
    ck_assert_str_eq(jobs[1].name, "gp-t.w1.t0.a1|x");
    ck_assert_str_eq(jobs[1].nodes, "n[1-2]");
    ck_assert_str_eq(jobs[2].reason, "");
    ck_assert_str_eq(jobs[2].nodes, "");
    ck_assert_int_eq(jobs[2].id, 28);
    ck_assert_str_eq(jobs[2].name, "");
    free(jobs);
    ck_assert_int_eq(gpx__slurm_parse_jobs("", &jobs, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(jobs);
}
END_TEST

/*
 * gpupoold dies after marking a slice's directory and before queueing the
 * slice in its holder (the state is made by hand: no queue entry, no job id
 * in the task directory). The launch the daemon repeats after its restart
 * must queue the slice, or it stays STARTING for ever; a slice the holder
 * already claimed must not be queued again, or it would run twice.
 */
START_TEST(test_slice_launch_after_crash_before_queue) {
    gp_executor *ex = open_fake();
    char h1[GP_HANDLE_MAX], h2[GP_HANDLE_MAX];
    launch6_slice(ex, h1);
    ck_assert_str_eq(h1, "slurm:101:w6.t0.a1"); /* the holder's job id */
    ck_assert(exists("state/w6.t0.a1/slice"));
    ck_assert(exists("state/holders/n1.g0/queue/w6.t0.a1"));
    size_t submitted = strlen(get("sbatch.args"));
    squeue_text("101|RUNNING|0|None|n1|gp-t.hold.n1.g0\n");

    /* The crash: marked, never queued, no job id recorded. The executor
     * keeps nothing in memory, so this instance stands for a new one. */
    remove_file("state/holders/n1.g0/queue/w6.t0.a1");
    remove_file("state/w6.t0.a1/jobid");
    launch6_slice(ex, h2);
    ck_assert_str_eq(h2, h1);
    ck_assert_msg(exists("state/holders/n1.g0/queue/w6.t0.a1"),
                  "the slice was never queued: it would stay STARTING for ever");
    ck_assert_uint_eq(strlen(get("sbatch.args")), submitted); /* the same holder */

    /* The holder claimed it (the request moved into the task directory)
     * before gpupoold died: launching again must not queue it a second time. */
    remove_file("state/holders/n1.g0/queue/w6.t0.a1");
    put("state/w6.t0.a1/claimed", "claimed\n", 0);
    remove_file("state/w6.t0.a1/jobid");
    launch6_slice(ex, h2);
    ck_assert_str_eq(h2, h1);
    ck_assert(!exists("state/holders/n1.g0/queue/w6.t0.a1"));
    gp_task_status st;
    memset(&st, 0, sizeof st);
    snprintf(st.handle, sizeof st.handle, "%s", h2);
    ck_assert_int_eq(gp_exec_poll(ex, &st, 1), 0);
    ck_assert_int_eq(st.state, GP_TASK_STARTING); /* claimed, its step not yet started */
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/* Launches task `task` of workload 8, a gang of two 1-GPU tasks on n1, as
 * run_as; returns launch's result (err filled). */
static int launch_gang_task(gp_executor *ex, int task, const char *run_as,
                            char handle[GP_HANDLE_MAX], char *err, size_t errlen) {
    return launch_task(ex, 8, task, 2, 1, 1000, run_as, handle, err, errlen);
}

/* sbatch answers 101, 102, ... and scontrol records its arguments. */
static void count_jobs(void) {
    char script[PATH_MAX * 3];
    snprintf(script, sizeof script,
             "#!/bin/sh\necho \"$*\" >>'%s/sbatch.args'\n"
             "echo $((100 + $(wc -l <'%s/sbatch.args')))\n",
             dir, dir);
    put("sbatch", script, 1);
    snprintf(script, sizeof script,
             "#!/bin/sh\n[ \"$1\" = ping ] || echo \"$*\" >>'%s/scontrol.args'\n", dir);
    put("scontrol", script, 1);
}

/*
 * A gang starts all together in Slurm's books: each task's job is submitted
 * held, and the last one's launch releases every job of the gang in one
 * scontrol call, once; a launch repeated after a restart releases nothing
 * again.
 */
START_TEST(test_gang_is_held_then_released_together) {
    gp_executor *ex = open_fake();
    count_jobs();
    char h0[GP_HANDLE_MAX], h1[GP_HANDLE_MAX], err[GP_ERR_MAX] = "";
    ck_assert_msg(launch_gang_task(ex, 0, NULL, h0, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(h0, "slurm:101:w8.t0.a1");
    ck_assert_msg(strstr(get("sbatch.args"), "--hold") != NULL, "%s", get("sbatch.args"));
    ck_assert_str_eq(get("scontrol.args"), ""); /* task 1 has no job yet */
    ck_assert_msg(launch_gang_task(ex, 1, NULL, h1, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(h1, "slurm:102:w8.t1.a1");
    ck_assert_str_eq(get("scontrol.args"), "release 101,102\n");
    ck_assert_msg(launch_gang_task(ex, 1, NULL, h1, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(get("scontrol.args"), "release 101,102\n"); /* once */
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/*
 * A gang whose second submission fails releases nothing: the first task's
 * job stays held (it never ran), and the stop the daemon then sends it
 * cancels it.
 */
START_TEST(test_gang_with_a_refused_task_never_runs) {
    gp_executor *ex = open_fake();
    count_jobs();
    char h0[GP_HANDLE_MAX], h1[GP_HANDLE_MAX], err[GP_ERR_MAX] = "";
    ck_assert_msg(launch_gang_task(ex, 0, NULL, h0, err, sizeof err) == 0, "%s", err);
    char script[PATH_MAX * 2];
    snprintf(script, sizeof script,
             "#!/bin/sh\necho 'sbatch: error: Batch job submission failed' >&2\nexit 1\n");
    put("sbatch", script, 1);
    ck_assert_int_eq(launch_gang_task(ex, 1, NULL, h1, err, sizeof err), GP_EIO);
    ck_assert_msg(strstr(err, "Batch job submission failed") != NULL, "%s", err);
    ck_assert_str_eq(get("scontrol.args"), ""); /* nothing released */
    ck_assert_int_eq(gp_exec_stop(ex, h0), 0);
    ck_assert_msg(strstr(get("scancel.args"), "101") != NULL, "scancel %s", get("scancel.args"));
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/*
 * As root, a job runs as its workload's Unix user (sbatch --uid/--gid);
 * root is refused without --allow-root-workloads, and so is a user the host
 * does not know, with an error naming run_as, before anything is submitted.
 */
START_TEST(test_job_runs_as_its_user) {
    if (geteuid() != 0)
        return; /* only root submits for others */
    gp_executor *ex = open_fake();
    count_jobs();
    char h[GP_HANDLE_MAX], err[GP_ERR_MAX] = "";
    ck_assert_int_eq(launch_gang_task(ex, 0, "root", h, err, sizeof err), GP_EPERM);
    ck_assert_msg(strstr(err, "run_as") && strstr(err, "root"), "%s", err);
    ck_assert_int_eq(launch_gang_task(ex, 0, "no-such-user-gp", h, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strstr(err, "run_as: there is no Unix user 'no-such-user-gp'"), "%s", err);
    ck_assert_str_eq(get("sbatch.args"), "");
    ck_assert_msg(launch_gang_task(ex, 0, "nobody", h, err, sizeof err) == 0, "%s", err);
    const char *args = get("sbatch.args");
    ck_assert_msg(strstr(args, "--uid=65534") != NULL && strstr(args, "--gid="), "%s", args);
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/*
 * The script delivers the environment contract.c builds: a slice's ledger
 * named with the executor's tag as its instance (two daemons sharing a
 * cluster never share one; the name lacked it), a gang's rendezvous, and
 * every value as one quoted word, which the shell gives back unchanged.
 */
START_TEST(test_script_delivers_the_contract) {
    gp_executor *ex = open_fake();
    char h[GP_HANDLE_MAX];
    launch6_slice(ex, h);
    const char *script = get("state/w6.t0.a1/job.sh");
    ck_assert_msg(strstr(script, "export GPUPOOL_SLICE='t-w6-t0-a1'\n") != NULL, "%s", script);
    ck_assert_msg(strstr(script, "export GPUPOOL_NODE='n1'\n") != NULL, "%s", script);
    char err[GP_ERR_MAX] = "";
    count_jobs();
    ck_assert_msg(launch_task(ex, 8, 1, 2, 1, 1000, NULL, h, err, sizeof err) == 0, "%s", err);
    script = get("state/w8.t1.a1/job.sh");
    ck_assert_msg(strstr(script, "export WORLD_SIZE='2'\nexport RANK='1'\n") != NULL &&
                      strstr(script, "export MASTER_ADDR='n1'\n") != NULL &&
                      strstr(script, "export MASTER_PORT='29508'\n") != NULL,
                  "%s", script);

    /* A value with quotes, a command substitution and a newline, run
     * through the script as the task's program would see it. */
    const char *value = "it's \"$(touch pwned)\" `id`\n$HOME";
    char kv[128], out[PATH_MAX + 16];
    snprintf(kv, sizeof kv, "TRICKY=%s", value);
    const char *env[] = {kv, NULL};
    const char *argv[] = {"printenv", "TRICKY", NULL};
    gp_node_spec node;
    memset(&node, 0, sizeof node);
    snprintf(node.name, sizeof node.name, "n1");
    gp_task_launch t;
    memset(&t, 0, sizeof t);
    t.workload = 9;
    t.attempt = 1;
    t.argv = argv;
    t.env = env;
    t.node = &node;
    ck_assert_msg(gp_exec_launch(ex, &t, h, err, sizeof err) == 0, "%s", err);
    snprintf(out, sizeof out, "%s/printed", dir);
    char cmd[PATH_MAX * 3];
    snprintf(cmd, sizeof cmd, "cd '%s' && bash state/w9.t0.a1/job.sh >'%s' 2>&1", dir, out);
    ck_assert_int_eq(system(cmd), 0);
    char want[160];
    snprintf(want, sizeof want, "\n%s\n", value);
    ck_assert_msg(strstr(get("printed"), want) != NULL, "%s", get("printed"));
    ck_assert(!exists("pwned"));
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/* A script that cannot be written whole, or not put in place, fails the
 * launch and leaves no job.sh.tmp behind, whichever step failed: here the
 * rename (job.sh is a directory) and the last write (job.sh.tmp is
 * /dev/full). Nothing is submitted. */
START_TEST(test_failed_script_leaves_no_temporary) {
    gp_executor *ex = open_fake();
    char h[GP_HANDLE_MAX], err[GP_ERR_MAX] = "", task[PATH_MAX], tmp[PATH_MAX + 16];
    struct stat st;
    snprintf(task, sizeof task, "%s/state/w9.t0.a1", dir);
    ck_assert_int_eq(mkdir(task, 0700), 0);
    snprintf(tmp, sizeof tmp, "%s/job.sh", task);
    ck_assert_int_eq(mkdir(tmp, 0700), 0);
    snprintf(tmp, sizeof tmp, "%s/job.sh.tmp", task);
    ck_assert_int_eq(launch_task(ex, 9, 0, 0, 0, 0, NULL, h, err, sizeof err), GP_ESYS);
    ck_assert_msg(strstr(err, "cannot rename") != NULL, "%s", err);
    ck_assert_msg(lstat(tmp, &st) < 0 && errno == ENOENT, "%s is left", tmp);
    ck_assert_int_eq(symlink("/dev/full", tmp), 0);
    err[0] = '\0';
    ck_assert_int_eq(launch_task(ex, 9, 0, 0, 0, 0, NULL, h, err, sizeof err), GP_ESYS);
    ck_assert_msg(strstr(err, "cannot write") != NULL, "%s", err);
    ck_assert_msg(lstat(tmp, &st) < 0 && errno == ENOENT, "%s is left", tmp);
    ck_assert_str_eq(get("sbatch.args"), "");
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/* A job of another user writes its own "user" directory: a FIFO where its
 * exit file would be must not hold a session call (which gpupoold makes on
 * an API thread) waiting for a writer that never comes. The call answers
 * at once: the task has not ended, so it goes on to srun (absent here). */
START_TEST(test_session_ignores_a_fifo_for_exit) {
    gp_executor *ex = open_fake();
    gp_node_spec node;
    memset(&node, 0, sizeof node);
    snprintf(node.name, sizeof node.name, "n1");
    const char *argv[] = {"sh", NULL};
    gp_task_launch t;
    memset(&t, 0, sizeof t);
    t.workload = 11;
    t.attempt = 1;
    t.argv = argv;
    t.node = &node;
    t.tty = 1;
    char h[GP_HANDLE_MAX], err[GP_ERR_MAX] = "", path[PATH_MAX + 64];
    ck_assert_msg(gp_exec_launch(ex, &t, h, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/state/w11.t0.a1/user", dir);
    ck_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
    snprintf(path, sizeof path, "%s/state/w11.t0.a1/user/exit", dir);
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    alarm(5); /* before the fix, the call never returned */
    gp_session_req req = {.kind = GP_SESSION_ATTACH, .rows = 24, .cols = 80};
    int fd = -1;
    int rc = gp_exec_session(ex, h, &req, &fd, err, sizeof err);
    alarm(0);
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(strstr(err, "ended") == NULL, "%s", err);
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/* Launches workload wl's task on n1, interactive, on GPUs 0..nslices-1
 * (milli thousandths of each). */
static void launch_tty(gp_executor *ex, uint64_t wl, int nslices, int milli,
                       char handle[GP_HANDLE_MAX]) {
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(launch_as(ex, wl, 0, 0, nslices, milli, NULL, 1, handle, err, sizeof err) == 0,
                  "%s", err);
}

/* Writes a GPU use record for workload wl's task, at now + age seconds. */
static void use_record(uint64_t wl, long age, const char *figures) {
    char name[64], text[256];
    snprintf(name, sizeof name, "state/w%llu.t0.a1/gpu-use", (unsigned long long)wl);
    snprintf(text, sizeof text, "gpupool-gpu-use at=%lld %s\n", (long long)time(NULL) + age,
             figures);
    put(name, text, 0);
}

/* The GPU use samples: n, with the busy figure of n1's GPU gpu in *busy
 * (-2 if it is not sampled). */
static size_t sampled(gp_executor *ex, int gpu, int32_t *busy) {
    gp_gpu_usage g[8];
    gp_exec_gpu_usage u = {.gpus = g, .max = 8};
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_GPU_USAGE, &u), 0);
    *busy = -2;
    for (size_t i = 0; i < u.n; i++)
        if (strcmp(g[i].node, "n1") == 0 && g[i].index == gpu)
            *busy = g[i].busy_permille;
    return u.n;
}

/* An interactive task's GPU use: its job script opens the record for the
 * session server's sampler, the executor reads it as the task's node and
 * GPU numbers, and ignores a record that is stale, malformed, not a
 * regular file (without waiting on a FIFO) or of a task that has ended;
 * slices of one GPU count its busiest figure. */
START_TEST(test_gpu_use_of_interactive_tasks) {
    gp_executor *ex = open_fake();
    char h[GP_HANDLE_MAX], path[PATH_MAX + 64];
    int32_t busy;
    launch_tty(ex, 12, 2, 1000, h);
    ck_assert_str_eq(get("state/w12.t0.a1/bound"), "n1 0,1\n");
    ck_assert_msg(strstr(get("state/w12.t0.a1/job.sh"), "exec 8>") != NULL &&
                      strstr(get("state/w12.t0.a1/job.sh"),
                             " --gpu-use 8 --nvml 'libnvidia-ml.so.1' --") != NULL,
                  "%s", get("state/w12.t0.a1/job.sh"));
    ck_assert_int_eq((int)sampled(ex, 0, &busy), 0); /* no record yet */
    use_record(12, 0, "n=2 busy=0,250 mem=0,1048576");
    ck_assert_int_eq((int)sampled(ex, 0, &busy), 2);
    ck_assert_int_eq(busy, 0);
    sampled(ex, 1, &busy);
    ck_assert_int_eq(busy, 250);
    use_record(12, -100, "n=2 busy=0,250 mem=0,0");
    ck_assert_int_eq((int)sampled(ex, 0, &busy), 0);
    use_record(12, 0, "n=2 busy=0,2500 mem=0,0");
    ck_assert_int_eq((int)sampled(ex, 0, &busy), 0);
    use_record(12, 0, "n=2 busy=0 mem=0,0");
    ck_assert_int_eq((int)sampled(ex, 0, &busy), 0);
    remove_file("state/w12.t0.a1/gpu-use");
    snprintf(path, sizeof path, "%s/state/w12.t0.a1/gpu-use", dir);
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    alarm(5); /* a FIFO is never waited on */
    ck_assert_int_eq((int)sampled(ex, 0, &busy), 0);
    alarm(0);
    remove_file("state/w12.t0.a1/gpu-use");
    use_record(12, 0, "n=2 busy=0,0 mem=0,0");
    put("state/w12.t0.a1/exit", "status=0\n", 0);
    ck_assert_int_eq((int)sampled(ex, 0, &busy), 0);
    /* Two slices of GPU 0: the busiest counts. */
    launch_tty(ex, 13, 1, 500, h);
    launch_tty(ex, 14, 1, 500, h);
    use_record(13, 0, "n=1 busy=0 mem=10");
    use_record(14, 0, "n=1 busy=300 mem=5");
    ck_assert_int_eq((int)sampled(ex, 0, &busy), 1);
    ck_assert_int_eq(busy, 300);
    gp_executor_close(ex);
    gpt_rmrf(dir);
}
END_TEST

/* The record's form: what the sampler writes reads back; anything out of
 * form or range is refused whole. */
START_TEST(test_gpu_use_record) {
    gpx__gpu_use u = {.at = 1796462614, .n = 2, .busy = {0, 1000}, .mem = {-1, 80LL << 30}}, v;
    char rec[GPX__GPU_USE_RECORD];
    ck_assert_int_eq(gpx__gpu_use_format(&u, rec), 0);
    ck_assert_int_eq(rec[GPX__GPU_USE_RECORD - 1], '\n');
    ck_assert_int_eq(gpx__gpu_use_parse(rec, sizeof rec, &v), 0);
    ck_assert_int_eq(memcmp(&u, &v, sizeof u), 0);
    static const char *const bad[] = {
        "gpupool-gpu-use at=1 n=1 busy=1001 mem=0",
        "gpupool-gpu-use at=1 n=1 busy=-2 mem=0",
        "gpupool-gpu-use at=1 n=2 busy=0 mem=0,0",
        "gpupool-gpu-use at=1 n=17 busy= mem=",
        "gpupool-gpu-use at=1 n=1 busy=0 mem=0 extra",
        "gpupool-gpu-use at=-5 n=0 busy= mem=",
        "gpupool-gpu-use at=99999999999999999999 n=0 busy= mem=",
        "gpupool-gpu-use at=1 n=1 busy=0 mem=99999999999999999999",
        "other at=1 n=0 busy= mem=",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(gpx__gpu_use_parse(bad[i], strlen(bad[i]), &v) == GP_EINVAL, "%s", bad[i]);
}
END_TEST

/* A batch task's GPU use sampler: with nvml=auto only on a node with
 * NVIDIA's driver (elsewhere NVML finds no GPU, and it would be a process
 * for nothing); with a library named, always. Either way the command runs
 * and its end is recorded. */
START_TEST(test_sampler_only_where_the_driver_is) {
    gp_executor *ex = open_fake();
    gp_executor_close(ex);
    char script[PATH_MAX + 128], more[PATH_MAX * 2 + 64], cmd[PATH_MAX * 2];
    snprintf(script, sizeof script, "#!/bin/sh\necho \"$*\" >>'%s/sampled'\n", dir);
    put("session", script, 1);
    int driver = access("/dev/nvidiactl", F_OK) == 0;
    for (int named = 0; named < 2; named++) {
        snprintf(more, sizeof more, ",session_program=%s/session%s%s", dir, named ? ",nvml=" : "",
                 named ? dir : "");
        if (named)
            snprintf(more + strlen(more), sizeof more - strlen(more), "/libnvidia-ml.so.1");
        ex = reopen_fake_with(more);
        char h[GP_HANDLE_MAX];
        launch_on_n1(ex, 20 + (uint64_t)named, 1, 1000, h);
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && rm -f sampled && bash state/w%d.t0.a1/job.sh >/dev/null 2>&1", dir,
                 20 + named);
        ck_assert_int_eq(system(cmd), 0);
        snprintf(cmd, sizeof cmd, "state/w%d.t0.a1/exit", 20 + named);
        ck_assert_str_eq(get(cmd), "status=0\n");
        if (named || driver)
            ck_assert_msg(strstr(get("sampled"), "sample 8 ") != NULL, "named %d", named);
        else
            ck_assert_msg(!exists("sampled"), "sampled without a driver: %s", get("sampled"));
        gp_executor_close(ex);
    }
    gpt_rmrf(dir);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_launch_try_again);
    tcase_add_test(tc, test_abandon_retried_until_slurm_answers);
    tcase_add_test(tc, test_gang_is_held_then_released_together);
    tcase_add_test(tc, test_gang_with_a_refused_task_never_runs);
    tcase_add_test(tc, test_job_runs_as_its_user);
    tcase_add_test(tc, test_inventory);
    tcase_add_test(tc, test_gpus_record);
    tcase_add_test(tc, test_launch_is_one_sbatch);
    tcase_add_test(tc, test_poll_maps_every_state);
    tcase_add_test(tc, test_poll_asks_for_its_jobs_only);
    tcase_add_test(tc, test_stop_after_end_runs_no_scancel);
    tcase_add_test(tc, test_squeue_lines);
    tcase_add_test(tc, test_script_delivers_the_contract);
    tcase_add_test(tc, test_failed_script_leaves_no_temporary);
    tcase_add_test(tc, test_slice_launch_after_crash_before_queue);
    tcase_add_test(tc, test_session_ignores_a_fifo_for_exit);
    tcase_add_test(tc, test_gpu_use_of_interactive_tasks);
    tcase_add_test(tc, test_gpu_use_record);
    tcase_add_test(tc, test_sampler_only_where_the_driver_is);
}

GP_TEST_MAIN("executors/slurm-fake", add_tests)
