/*
 * test-env.c — the environment a task receives, built once for every
 * executor (contract.c) and delivered by the local one: its GPUs by UUID,
 * gpupool's variables, the limits and the interposer of a fractional slice,
 * what a workload may and may not set, a gang's rendezvous (the local
 * executor gave none), the interposer decided on the node for the Slurm
 * executor, and 60,000 variables built in linear time (a quadratic build
 * once held the scheduler for 25 s); and, with real processes, the scenario
 * of issue 5: one node with 8 emulated GPUs, where four 0.25-GPU workloads
 * share one GPU and each finds a quarter of its memory as its cap in its
 * environment.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/gp_error.h"
#include "executors/contract.h"
#include "executors/executor.h"
#include "executors/local/local.h"
#include "gptest.h"
#include "helpers.h"
#include "interpose/ledger-int.h"

#define GIB (INT64_C(1) << 30)

/* A node "n1" with 8 GPUs of 80 GiB named GPU-emulated-n1-<i>. */
static void make_node(gp_node_spec *n) {
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "n1");
    n->ngpus = 8;
    for (int i = 0; i < 8; i++) {
        snprintf(n->gpus[i].uuid, sizeof n->gpus[i].uuid, "GPU-emulated-n1-%d", i);
        snprintf(n->gpus[i].model, sizeof n->gpus[i].model, "H100");
        n->gpus[i].mem_bytes = 80 * GIB;
        n->gpus[i].index = i;
    }
}

static gpx__local *make_local(const char *interposer) {
    gpx__local *lx = calloc(1, sizeof *lx);
    ck_assert_ptr_nonnull(lx);
    snprintf(lx->interposer, sizeof lx->interposer, "%s", interposer);
    snprintf(lx->node_name, sizeof lx->node_name, "n1");
    snprintf(lx->instance, sizeof lx->instance, "i1");
    lx->emulated = 1;
    return lx;
}

/* The instance id the executor keeps in its state directory under dir. */
static void instance_of(const char *dir, char *out, size_t len) {
    char *id = gpt_slurp(gpt_path(dir, "state/instance"));
    ck_assert_ptr_nonnull(id);
    id[strcspn(id, "\n")] = '\0';
    snprintf(out, len, "%s", id);
    free(id);
}

/* The task's user in these tests. */
static const gpx__exec_user alice = {0, 1234, 1234, {1234}, 1, "alice", "/home/alice", "/bin/bash"};

/* Builds the environment of t; fails the test on error. */
static char **build(const gpx__local *lx, const gp_task_launch *t, char *note, size_t len) {
    char **env = NULL;
    char err[GP_ERR_MAX] = "";
    int rc = gpx__env_build(lx, t, &alice, "/ckpt/w7", &env, note, len, err, sizeof err);
    ck_assert_msg(rc == 0, "gpx__env_build: %s (%s)", gp_err_name(rc), err);
    return env;
}

START_TEST(test_whole_gpus_by_uuid) {
    setenv("CUDA_VISIBLE_DEVICES", "0,1", 1); /* the daemon's own: not handed on */
    setenv("GPUPOOL_SLICE", "leak", 1);
    setenv("DAEMON_SECRET", "s3cret", 1); /* nothing of the daemon's is */
    gp_node_spec node;
    make_node(&node);
    gp_task_binding b = {"n1", 2, {{1, 1000, 80 * GIB, -1}, {5, 1000, 80 * GIB, -1}}};
    const char *argv[] = {"true", NULL};
    const char *user_env[] = {"MY_VAR=42", "CUDA_VISIBLE_DEVICES=7", NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 7, argv, "/tmp");
    t.attempt = 3;
    t.env = user_env;
    t.node = &node;
    t.binding = &b;
    gpx__local *lx = make_local("/dev/null");
    char note[512];
    char **env = build(lx, &t, note, sizeof note);

    ck_assert_str_eq(gpx__env_get(env, "CUDA_VISIBLE_DEVICES"),
                     "GPU-emulated-n1-1,GPU-emulated-n1-5");
    ck_assert_str_eq(gpx__env_get(env, "MY_VAR"), "42");
    ck_assert_str_eq(gpx__env_get(env, "GPUPOOL_WORKLOAD_ID"), "7");
    ck_assert_str_eq(gpx__env_get(env, "GPUPOOL_TASK_INDEX"), "0");
    ck_assert_str_eq(gpx__env_get(env, "GPUPOOL_ATTEMPT"), "3");
    ck_assert_str_eq(gpx__env_get(env, "GPUPOOL_CHECKPOINT_DIR"), "/ckpt/w7");
    ck_assert_str_eq(gpx__env_get(env, "GPUPOOL_CHECKPOINT_SIGNAL"), "TERM");
    ck_assert_str_eq(gpx__env_get(env, "GPUPOOL_EMULATED"), "1");
    ck_assert_str_eq(gpx__env_get(env, "GPUPOOL_PROJECT"), "test");
    /* Whole GPUs: no slice limits, no interposer, nothing of the daemon's. */
    ck_assert_ptr_null(gpx__env_get(env, "GPUPOOL_MEMORY_LIMIT"));
    ck_assert_ptr_null(gpx__env_get(env, "GPUPOOL_SLICE"));
    ck_assert_ptr_null(gpx__env_get(env, "LD_PRELOAD"));
    ck_assert_ptr_null(gpx__env_get(env, "DAEMON_SECRET"));
    /* The clean base, for the task's user. */
    ck_assert_str_eq(gpx__env_get(env, "PATH"), "/usr/local/bin:/usr/bin:/bin");
    ck_assert_str_eq(gpx__env_get(env, "HOME"), "/home/alice");
    ck_assert_str_eq(gpx__env_get(env, "USER"), "alice");
    ck_assert_str_eq(gpx__env_get(env, "LOGNAME"), "alice");
    ck_assert_str_eq(gpx__env_get(env, "SHELL"), "/bin/bash");
    ck_assert_str_eq(gpx__env_get(env, "LANG"), "C.UTF-8");
    ck_assert_msg(strstr(note, "EMULATED"), "note: %s", note);
    gpx__env_free(env);
    free(lx);
}
END_TEST

START_TEST(test_fractional_slice) {
    gp_node_spec node;
    make_node(&node);
    gp_task_binding b = {"n1", 1, {{2, 250, 20 * GIB, -1}}};
    const char *argv[] = {"true", NULL};
    const char *user_env[] = {"LD_PRELOAD=/usr/lib/libmine.so", "GPUPOOL_MEMORY_LIMIT=1T", NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 7, argv, "/tmp");
    t.attempt = 2;
    t.env = user_env;
    t.node = &node;
    t.binding = &b;
    t.compute_share = 25;
    t.checkpoint_signal = SIGUSR1;
    gpx__local *lx = make_local("/dev/null"); /* exists: stands in for the interposer */
    char note[512];
    char **env = build(lx, &t, note, sizeof note);
    ck_assert_str_eq(gpx__env_get(env, "CUDA_VISIBLE_DEVICES"), "GPU-emulated-n1-2");
    ck_assert_str_eq(gpx__env_get(env, "GPUPOOL_MEMORY_LIMIT"), "21474836480");
    ck_assert_str_eq(gpx__env_get(env, "GPUPOOL_COMPUTE_SHARE"), "25");
    ck_assert_str_eq(gpx__env_get(env, "GPUPOOL_SLICE"), "i1-w7-t0-a2");
    ck_assert_str_eq(gpx__env_get(env, "GPUPOOL_CHECKPOINT_SIGNAL"), "USR1");
    /* The interposer goes first; the workload's own preload stays. */
    ck_assert_str_eq(gpx__env_get(env, "LD_PRELOAD"), "/dev/null:/usr/lib/libmine.so");
    ck_assert_msg(strstr(note, "enforced by /dev/null"), "note: %s", note);
    /* The cap as a size is written in a request (20G), not in bytes. */
    ck_assert_msg(strstr(note, "memory cap 20G,"), "note: %s", note);
    gpx__env_free(env);

    /* Without the interposer the cap is announced but not enforced, and said so. */
    snprintf(lx->interposer, sizeof lx->interposer, "/no/such/libgpuslice.so");
    t.env = NULL;
    env = build(lx, &t, note, sizeof note);
    ck_assert_ptr_null(gpx__env_get(env, "LD_PRELOAD"));
    ck_assert_str_eq(gpx__env_get(env, "GPUPOOL_MEMORY_LIMIT"), "21474836480");
    ck_assert_msg(strstr(note, "NOT ENFORCED"), "note: %s", note);
    gpx__env_free(env);
    free(lx);
}
END_TEST

START_TEST(test_no_gpus_and_bad_bindings) {
    gp_node_spec node;
    make_node(&node);
    const char *argv[] = {"true", NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 7, argv, "/tmp");
    gpx__local *lx = make_local("/dev/null");
    lx->emulated = 0;
    char note[512], err[GP_ERR_MAX];
    char **env = build(lx, &t, note, sizeof note);
    ck_assert_str_eq(gpx__env_get(env, "CUDA_VISIBLE_DEVICES"), ""); /* CPU only: no GPU */
    ck_assert_ptr_null(gpx__env_get(env, "GPUPOOL_EMULATED"));
    gpx__env_free(env);

    gp_task_binding b = {"n1", 1, {{8, 1000, 80 * GIB, -1}}};
    t.node = &node;
    t.binding = &b;
    ck_assert_int_eq(gpx__env_build(lx, &t, &alice, "/c", &env, note, sizeof note, err, sizeof err),
                     GP_EINVAL);
    ck_assert_msg(strstr(err, "binding.slices[0].gpu"), "err: %s", err);
    ck_assert_ptr_null(env);

    gp_task_binding two = {"n1", 2, {{0, 500, 40 * GIB, -1}, {1, 500, 40 * GIB, -1}}};
    t.binding = &two;
    ck_assert_int_eq(gpx__env_build(lx, &t, &alice, "/c", &env, note, sizeof note, err, sizeof err),
                     GP_EINVAL);
    ck_assert_msg(strstr(err, "binding.slices[1]"), "err: %s", err);

    const char *bad_env[] = {"NOEQUALS", NULL};
    t.binding = NULL;
    t.env = bad_env;
    ck_assert_int_eq(gpx__env_build(lx, &t, &alice, "/c", &env, note, sizeof note, err, sizeof err),
                     GP_EINVAL);
    ck_assert_msg(strstr(err, "env[0]"), "err: %s", err);
    free(lx);
}
END_TEST

START_TEST(test_four_quarter_slices_share_one_gpu) {
    const char *dir = gpt_tmpdir();
    char inv[512], extra[600];
    snprintf(inv, sizeof inv, "%s/gpus.conf", dir);
    gpt_spit(inv, "# a laptop pretending\nnode = laptop\ngpu = H100 80G 8\n");
    snprintf(extra, sizeof extra, "inventory=%s", inv);
    gp_executor *ex = gpt_open(dir, extra);

    gp_node_spec node;
    size_t n = 0;
    int emulated = 0;
    char err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gp_exec_inventory(ex, &node, 1, &n, &emulated, err, sizeof err), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(emulated, 1);
    ck_assert_int_eq(node.ngpus, 8);

    char handles[4][GP_HANDLE_MAX];
    for (int i = 0; i < 4; i++) {
        gp_task_binding b = {"laptop", 1, {{3, 250, node.gpus[3].mem_bytes / 4, -1}}};
        const char *argv[] = {"/bin/sh", "-c", "env > \"$OUT\"", NULL};
        char out[600];
        snprintf(out, sizeof out, "OUT=%s/env-%d", dir, i);
        const char *env[] = {out, NULL};
        gp_task_launch t;
        gpt_launch_init(&t, (uint64_t)(100 + i), argv, dir);
        t.env = env;
        t.node = &node;
        t.binding = &b;
        ck_assert_int_eq(gp_exec_launch(ex, &t, handles[i], err, sizeof err), 0);
    }
    char inst[32];
    instance_of(dir, inst, sizeof inst);
    for (int i = 0; i < 4; i++) {
        gp_task_status st = gpt_exited(ex, handles[i]);
        ck_assert_int_eq(st.exit_code, 0);
        char path[600], want[96];
        snprintf(path, sizeof path, "%s/env-%d", dir, i);
        char *text = gpt_slurp(path);
        ck_assert_ptr_nonnull(text);
        ck_assert_ptr_nonnull(strstr(text, "\nCUDA_VISIBLE_DEVICES=GPU-emulated-laptop-3\n"));
        ck_assert_ptr_nonnull(strstr(text, "\nGPUPOOL_MEMORY_LIMIT=21474836480\n"));
        ck_assert_ptr_nonnull(strstr(text, "\nGPUPOOL_EMULATED=1\n"));
        snprintf(want, sizeof want, "\nGPUPOOL_SLICE=%s-w%d-t0-a1\n", inst, 100 + i);
        ck_assert_msg(strstr(text, want), "no %s in the task's environment", want + 1);
        free(text);
    }
    char *log = gpt_slurp(gpt_path(dir, "logs/w100.log"));
    ck_assert_ptr_nonnull(log);
    ck_assert_ptr_nonnull(strstr(log, "(EMULATED GPUs)"));
    ck_assert_ptr_nonnull(strstr(log, "NOT ENFORCED"));
    free(log);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_slice_memory_from_ledger) {
    /* This program links the ledger reader, so poll() reports what the
     * slice's ledger says is in use, and reap() removes the ledger. */
    const char *dir = gpt_tmpdir();
    char inv[512], extra[600], err[GP_ERR_MAX] = "";
    snprintf(inv, sizeof inv, "%s/gpus.conf", dir);
    gpt_spit(inv, "node = laptop\ngpu = H100 80G 1\n");
    snprintf(extra, sizeof extra, "inventory=%s", inv);
    gp_executor *ex = gpt_open(dir, extra);
    gp_node_spec node;
    size_t n = 0;
    int emulated = 0;
    ck_assert_int_eq(gp_exec_inventory(ex, &node, 1, &n, &emulated, err, sizeof err), 0);
    gp_task_binding b = {"laptop", 1, {{0, 500, 40 * GIB, -1}}};
    const char *argv[] = {"/bin/sh", "-c", "while [ ! -e go ]; do sleep 0.05; done", NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 300, argv, dir);
    t.node = &node;
    t.binding = &b;
    char h[GP_HANDLE_MAX];
    ck_assert_int_eq(gp_exec_launch(ex, &t, h, err, sizeof err), 0);
    ck_assert_int_eq(gpt_wait(ex, h, GP_TASK_RUNNING).gpu_mem_used, -1); /* no ledger yet */

    /* Stand in for the interposer inside the task: charge 3 GiB. */
    gp_ledger *l = NULL;
    char lerr[256] = "";
    char inst[32], slice[64];
    instance_of(dir, inst, sizeof inst);
    snprintf(slice, sizeof slice, "%s-w300-t0-a1", inst);
    int rc = gp_ledger_open(slice, GP_LEDGER_WRITE | GP_LEDGER_CREATE, &l, lerr);
    ck_assert_msg(rc == 0, "gp_ledger_open: %s", lerr);
    uint8_t uuid[16] = {1, 2, 3};
    int dev = gps__ledger_device(l, uuid, (uint64_t)(40 * GIB), 0);
    ck_assert_int_ge(dev, 0);
    ck_assert_int_eq(gps__ledger_charge(l, dev, (uint64_t)(3 * GIB), UINT64_MAX), 0);
    ck_assert_int_eq(gpt_wait(ex, h, GP_TASK_RUNNING).gpu_mem_used, 3 * GIB);
    gps__ledger_release(l, dev, (uint64_t)(3 * GIB));
    gp_ledger_close(l);

    gpt_spit(gpt_path(dir, "go"), "");
    gpt_exited(ex, h);
    ck_assert_int_eq(gp_exec_reap(ex, h), 0);
    ck_assert_int_eq(gp_ledger_open(slice, GP_LEDGER_READ, &l, lerr), GP_ENOENT);
    gpt_done(ex, dir);
}
END_TEST

/* Fills t for workload w running true, with env and, if node is set, the
 * binding b on it. */
static void init_task(gp_task_launch *t, uint64_t w, const char *const *env,
                      const gp_node_spec *node, const gp_task_binding *b) {
    static const char *argv[] = {"true", NULL};
    gpt_launch_init(t, w, argv, "/tmp");
    t->env = env;
    t->node = node;
    t->binding = node != NULL ? b : NULL;
}

static void init_in(gpx__contract_in *in, const gp_task_launch *t) {
    memset(in, 0, sizeof *in);
    in->t = t;
    in->user = &alice;
    in->instance = "i1";
    in->node_name = "n1";
    in->ckpt_dir = "/ckpt";
}

/* A local gang of 3 tasks: each gets the rendezvous, on this host. */
START_TEST(test_local_gang_gets_rendezvous) {
    gp_node_spec node;
    make_node(&node);
    gp_task_binding b = {"n1", 1, {{1, 1000, 80 * GIB, -1}}};
    const char *user_env[] = {"RANK=99", NULL}; /* gpupool's wins for a gang */
    gp_task_launch t;
    init_task(&t, 7, user_env, &node, &b);
    t.task = 1;
    t.gang_size = 3;
    t.gang_first = &node;
    gpx__local *lx = calloc(1, sizeof *lx);
    ck_assert_ptr_nonnull(lx);
    snprintf(lx->instance, sizeof lx->instance, "i1");
    snprintf(lx->node_name, sizeof lx->node_name, "n1");
    char note[256], err[GP_ERR_MAX] = "", **env = NULL;
    int rc = gpx__env_build(lx, &t, &alice, "/ckpt", &env, note, sizeof note, err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_str_eq(gpx__env_get(env, "WORLD_SIZE"), "3");
    ck_assert_str_eq(gpx__env_get(env, "RANK"), "1");
    ck_assert_str_eq(gpx__env_get(env, "LOCAL_RANK"), "0");
    ck_assert_str_eq(gpx__env_get(env, "MASTER_ADDR"), "127.0.0.1");
    ck_assert_str_eq(gpx__env_get(env, "MASTER_PORT"), "29507");
    ck_assert_str_eq(gpx__env_get(env, "CUDA_VISIBLE_DEVICES"), "GPU-emulated-n1-1");
    gpx__env_free(env);

    /* The port the daemon chose for the attempt, where it chose one. */
    t.master_port = 29508;
    rc = gpx__env_build(lx, &t, &alice, "/ckpt", &env, note, sizeof note, err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_str_eq(gpx__env_get(env, "MASTER_PORT"), "29508");
    gpx__env_free(env);

    /* A task alone gets none, and keeps a RANK of its own. */
    t.gang_size = 1;
    rc = gpx__env_build(lx, &t, &alice, "/ckpt", &env, note, sizeof note, err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_ptr_null(gpx__env_get(env, "WORLD_SIZE"));
    ck_assert_ptr_null(gpx__env_get(env, "MASTER_ADDR"));
    ck_assert_str_eq(gpx__env_get(env, "RANK"), "99");
    gpx__env_free(env);
    free(lx);
}
END_TEST

/* A name is kept once; the workload's replaces the base, gpupool's win. */
START_TEST(test_later_layers_win_once) {
    const char *user_env[] = {"A=1", "PATH=/opt/bin", "A=2", "GPUPOOL_NODE=evil", NULL};
    gp_task_launch t;
    init_task(&t, 7, user_env, NULL, NULL);
    gpx__contract_in in;
    init_in(&in, &t);
    gpx__contract c;
    char err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gpx__contract_build(&in, &c, err, sizeof err), 0);
    ck_assert_str_eq(gpx__contract_get(&c, "A"), "2");
    ck_assert_str_eq(gpx__contract_get(&c, "PATH"), "/opt/bin");
    ck_assert_str_eq(gpx__contract_get(&c, "GPUPOOL_NODE"), "n1");
    size_t seen_a = 0;
    for (size_t i = 0; i < c.n; i++)
        seen_a += strncmp(c.v[i].kv, "A=", 2) == 0;
    ck_assert_uint_eq(seen_a, 1);
    gpx__contract_free(&c);

    const char *bad[] = {"OK=1", "1BAD=x", NULL};
    t.env = bad;
    ck_assert_int_eq(gpx__contract_build(&in, &c, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strstr(err, "env[1]") != NULL, "%s", err);
    ck_assert_ptr_null(c.v);
}
END_TEST

/* Where the interposer is found on the node (Slurm), LD_PRELOAD is marked
 * so, with the workload's own preload as what holds without it. */
START_TEST(test_interposer_decided_on_the_node) {
    gp_node_spec node;
    make_node(&node);
    gp_task_binding b = {"n1", 1, {{0, 250, 20 * GIB, -1}}};
    const char *user_env[] = {"LD_PRELOAD=/mine.so", NULL};
    gp_task_launch t;
    init_task(&t, 9, user_env, &node, &b);
    gpx__contract_in in;
    init_in(&in, &t);
    in.instance = "tag";
    in.interposer = "/lib/libgpuslice.so";
    in.interposer_found = -1;
    in.engine_devices = 1;
    gpx__contract c;
    char err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gpx__contract_build(&in, &c, err, sizeof err), 0);
    ck_assert_str_eq(gpx__contract_get(&c, "GPUPOOL_SLICE"), "tag-w9-t0-a1");
    ck_assert_str_eq(gpx__contract_get(&c, "LD_PRELOAD"), "/lib/libgpuslice.so:/mine.so");
    ck_assert_ptr_null(gpx__contract_get(&c, "CUDA_VISIBLE_DEVICES")); /* the engine's own */
    for (size_t i = 0; i < c.n; i++) {
        int preload = strncmp(c.v[i].kv, "LD_PRELOAD=", 11) == 0;
        ck_assert_int_eq(c.v[i].if_interposer, preload);
        if (preload)
            ck_assert_str_eq(c.v[i].otherwise, "/mine.so");
    }
    gpx__contract_free(&c);
}
END_TEST

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 60,000 variables (as in the report of issue 18: 25 s through the old
 * quadratic build), each given twice: built well within a second. */
START_TEST(test_sixty_thousand_variables_linear) {
    enum { N = 60000 };
    char **kv = calloc(2 * N + 1, sizeof *kv);
    ck_assert_ptr_nonnull(kv);
    for (int i = 0; i < 2 * N; i++) {
        kv[i] = malloc(32);
        ck_assert_ptr_nonnull(kv[i]);
        snprintf(kv[i], 32, "VAR_%d=%d", i % N, i);
    }
    gp_task_launch t;
    init_task(&t, 7, (const char *const *)kv, NULL, NULL);
    gpx__contract_in in;
    init_in(&in, &t);
    gpx__contract c;
    char err[GP_ERR_MAX] = "";
    double t0 = now_s();
    ck_assert_int_eq(gpx__contract_build(&in, &c, err, sizeof err), 0);
    double took = now_s() - t0;
    printf("# 120,000 entries, 60,000 variables: built in %.3f s\n", took);
    ck_assert_msg(took < 1.0, "60,000 variables took %.3f s", took);
    ck_assert_uint_ge(c.n, N);
    ck_assert_str_eq(gpx__contract_get(&c, "VAR_59999"), "119999"); /* the later one */
    gpx__contract_free(&c);
    for (int i = 0; i < 2 * N; i++)
        free(kv[i]);
    free(kv);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_whole_gpus_by_uuid);
    tcase_add_test(tc, test_fractional_slice);
    tcase_add_test(tc, test_no_gpus_and_bad_bindings);
    tcase_add_test(tc, test_four_quarter_slices_share_one_gpu);
    tcase_add_test(tc, test_slice_memory_from_ledger);
    tcase_add_test(tc, test_local_gang_gets_rendezvous);
    tcase_add_test(tc, test_later_layers_win_once);
    tcase_add_test(tc, test_interposer_decided_on_the_node);
    tcase_add_test(tc, test_sixty_thousand_variables_linear);
}

GP_TEST_MAIN("executors/env", add_tests)
