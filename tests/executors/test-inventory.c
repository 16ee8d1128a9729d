/*
 * test-inventory.c — what the local executor reports about its node: the
 * emulated inventory file (every key, the defaults, malformed files with
 * errors that name the file, the line and the field), NVML through a fake
 * libnvidia-ml.so.1, no GPUs at all, and the size parser.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/executor.h"
#include "executors/local/local.h"
#include "gptest.h"
#include "helpers.h"

#define GIB (INT64_C(1) << 30)

/* Parses text as an inventory file into *node (host defaults: "host",
 * 4 cores, 8 GiB); returns the result and the error in err. */
static int parse_text(const char *text, gp_node_spec *node, char *err, size_t errlen) {
    const char *dir = gpt_tmpdir();
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/gpus.conf", dir);
    gpt_spit(path, text);
    memset(node, 0, sizeof *node);
    snprintf(node->name, sizeof node->name, "host");
    node->cpu_milli = 4000;
    node->mem_bytes = 8 * GIB;
    err[0] = '\0';
    int rc = gpx__inv_parse_file(path, node, NULL, err, errlen);
    gpt_rmrf(dir);
    return rc;
}

START_TEST(test_full_file) {
    gp_node_spec n;
    char err[GP_ERR_MAX];
    int rc = parse_text("# the lab's workstation\n"
                        "node   = lab-ws1\n"
                        "domain = rack7        # NVLink island\n"
                        "cpu    = 15500m\n"
                        "memory = 64GiB\n"
                        "label  = zone = lab\n"
                        "gpu    = H100 80G 2 sm=132\n"
                        "gpu    = A100-40G 40G mig=3g.20gb,3g.20gb\n",
                        &n, err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_str_eq(n.name, "lab-ws1");
    ck_assert_str_eq(n.domain, "rack7");
    ck_assert_int_eq(n.cpu_milli, 15500);
    ck_assert_int_eq(n.mem_bytes, 64 * GIB);
    ck_assert_int_eq(n.nlabels, 1);
    ck_assert_str_eq(n.labels[0].key, "zone");
    ck_assert_str_eq(n.labels[0].value, "lab");
    ck_assert_int_eq(n.ngpus, 3);
    ck_assert_str_eq(n.gpus[0].model, "H100");
    ck_assert_int_eq(n.gpus[0].mem_bytes, 80 * GIB);
    ck_assert_int_eq(n.gpus[0].sm_count, 132);
    ck_assert_str_eq(n.gpus[1].uuid, "GPU-emulated-lab-ws1-1");
    ck_assert_int_eq(n.gpus[1].index, 1);
    ck_assert_str_eq(n.gpus[2].model, "A100-40G");
    ck_assert_int_eq(n.gpus[2].mig, 1);
    ck_assert_int_eq(n.gpus[2].nmig, 2);
    ck_assert_str_eq(n.gpus[2].mig_layout[1], "3g.20gb");
    ck_assert_int_eq(n.gpus[0].mig, 0);
}
END_TEST

START_TEST(test_defaults_from_host) {
    gp_node_spec n;
    char err[GP_ERR_MAX];
    ck_assert_int_eq(parse_text("gpu = T4 16G\n", &n, err, sizeof err), 0);
    ck_assert_str_eq(n.name, "host");
    ck_assert_int_eq(n.cpu_milli, 4000);
    ck_assert_int_eq(n.mem_bytes, 8 * GIB);
    ck_assert_int_eq(n.ngpus, 1);
    ck_assert_str_eq(n.gpus[0].uuid, "GPU-emulated-host-0");
}
END_TEST

/* Each malformed file and a part of the error it must give. */
static const struct {
    const char *text;
    const char *want;
} malformed[] = {
    {"gpu = H100\n", ":1: gpu: expected 'MODEL MEMORY"},
    {"# ok\ngpu = H100 80X\n", ":2: gpu: memory '80X' is not a size"},
    {"gpu = H100 9999999999T\n", ":1: gpu: memory '9999999999T' is not a size"},
    {"gpu = H100 0.0001K\n", ":1: gpu: memory '0.0001K' is not a size"},
    {"gpu = H100 80G many\n", ":1: gpu: count 'many' is not a positive number"},
    {"gpu = H100 80G 0\n", ":1: gpu: count '0'"},
    {"gpu = H100 80G 17\n", ":1: gpu: count: a node holds at most 16 GPUs"},
    /* The sum 1 + LONG_MAX wrapped and passed the bound (then a crash). */
    {"gpu = H100 80G 1\ngpu = H100 80G 9223372036854775807\n",
     ":2: gpu: count: a node holds at most 16 GPUs"},
    {"gpu = H100 80G sm=lots\n", ":1: gpu: sm 'lots'"},
    {"gpu = H100 80G mig=\n", ":1: gpu: mig: expected a list of profiles"},
    {"gpu = H1/00 80G\n", ":1: gpu: model 'H1/00' is not a name"},
    {"gpu = T4 16G\ncpu = lots\n", ":2: cpu: 'lots' is not a number of cores"},
    {"gpu = T4 16G\nmemory = -5\n", ":2: memory: '-5' is not a size"},
    {"gpu = T4 16G\ncolour = red\n", ":2: colour: unknown key"},
    {"node = a\nnode = b\ngpu = T4 16G\n", ":2: node: given twice (first on line 1)"},
    {"gpu = T4 16G\njust some words\n", ":2: expected 'key = value'"},
    {"gpu =\n", ":1: gpu: missing value"},
    {"label = novalue\ngpu = T4 16G\n", ":1: label: expected 'KEY=VALUE'"},
    {"node = has space\ngpu = T4 16G\n", ":1: node: 'has space' is not a name"},
    /* Names the daemon refuses in a submission (a selector, a model) were
     * taken here: a node, model or label no request could name. */
    {"node = .hidden\ngpu = T4 16G\n", ":1: node: '.hidden' is not a name (1 to 63 letters"},
    {"gpu = -T4 16G\n", ":1: gpu: model '-T4' is not a name"},
    {"label = zone=-a\ngpu = T4 16G\n", ":1: label: key and value must be names"},
    {"# nothing but comments\n", "no 'gpu' line"},
};

START_TEST(test_malformed_files) {
    gp_node_spec n;
    char err[GP_ERR_MAX];
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        int rc = parse_text(malformed[i].text, &n, err, sizeof err);
        ck_assert_msg(rc == GP_EPARSE, "file %zu: %s instead of GP_EPARSE", i, gp_err_name(rc));
        ck_assert_msg(strstr(err, malformed[i].want) != NULL, "file %zu: '%s' lacks '%s'", i, err,
                      malformed[i].want);
        ck_assert_msg(strstr(err, "gpus.conf") != NULL, "file %zu: '%s' lacks the file name", i,
                      err);
    }
}
END_TEST

START_TEST(test_open_with_inventory) {
    const char *dir = gpt_tmpdir();
    char extra[PATH_MAX + 32], err[GP_ERR_MAX] = "";
    snprintf(extra, sizeof extra, "inventory=%s/missing.conf", dir);
    char config[2 * PATH_MAX];
    snprintf(config, sizeof config, "state_dir=%s/state,%s", dir, extra);
    gp_executor *ex = NULL;
    ck_assert_int_eq(gp_executor_open("local", config, &ex, err, sizeof err), GP_ENOENT);
    ck_assert_msg(strstr(err, "missing.conf"), "err: %s", err);

    gpt_spit(gpt_path(dir, "bad.conf"), "gpu = H100 eighty\n");
    snprintf(config, sizeof config, "state_dir=%s/state,inventory=%s/bad.conf", dir, dir);
    ck_assert_int_eq(gp_executor_open("local", config, &ex, err, sizeof err), GP_EPARSE);
    ck_assert_msg(strstr(err, "bad.conf:1: gpu: memory 'eighty'"), "err: %s", err);

    gpt_spit(gpt_path(dir, "gpus.conf"), "gpu = H100 80G 8\n");
    snprintf(extra, sizeof extra, "inventory=%s/gpus.conf,node=box", dir);
    for (int round = 0; round < 2; round++) {
        ex = gpt_open(dir, extra);
        gp_node_spec nodes[2];
        size_t n = 0;
        int emulated = 0;
        ck_assert_int_eq(gp_exec_inventory(ex, nodes, 2, &n, &emulated, err, sizeof err), 0);
        ck_assert_int_eq(n, 1);
        ck_assert_int_eq(emulated, 1);
        ck_assert_str_eq(nodes[0].name, "box");
        ck_assert_str_eq(nodes[0].domain, "local");
        ck_assert_int_eq(nodes[0].schedulable, 1);
        ck_assert_int_gt(nodes[0].cpu_milli, 0);
        ck_assert_int_gt(nodes[0].mem_bytes, 0);
        ck_assert_int_eq(nodes[0].ngpus, 8);
        /* The same UUIDs every time, so that bindings survive restarts. */
        ck_assert_str_eq(nodes[0].gpus[7].uuid, "GPU-emulated-box-7");
        ck_assert_int_eq(nodes[0].nlabels, 1);
        ck_assert_str_eq(nodes[0].labels[0].key, "gpupool.emulated");
        gp_executor_info d;
        ck_assert_int_eq(gp_exec_describe(ex, &d), 0);
        ck_assert_int_eq(d.emulated, 1);
        ck_assert_msg(strncmp(d.gpus, "EMULATED: 8 GPUs", 16) == 0, "gpus: %s", d.gpus);
        ck_assert_msg(strstr(d.slices, "NOT enforced"), "interposer: %s", d.slices);
        ck_assert_msg(strstr(d.limits, "cgroup=off"), "cgroups: %s", d.limits);
        /* Emulated GPUs run no kernels: a sample of each, with nothing known. */
        gp_gpu_usage g[16];
        gp_exec_gpu_usage u = {.gpus = g, .max = 16};
        ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_GPU_USAGE, &u), 0);
        ck_assert_int_eq(u.n, 8);
        ck_assert_str_eq(g[7].node, "box");
        ck_assert_int_eq(g[7].index, 7);
        ck_assert_int_eq(g[7].busy_permille, -1);
        ck_assert_int_eq(g[7].mem_used, -1);
        ck_assert_msg(strstr(u.note, "EMULATED"), "note: %s", u.note);
        gp_executor_close(ex);
    }
    gpt_rmrf(dir);
}
END_TEST

START_TEST(test_nvml) {
    const char *dir = gpt_tmpdir();
    char lib[PATH_MAX], config[2 * PATH_MAX], err[GP_ERR_MAX] = "";
    gpt_fake_nvml(lib, sizeof lib);
    setenv("GPUPOOL_FAKE_GPUS", "3", 1);
    setenv("GPUPOOL_FAKE_MIG", "1", 1);
    snprintf(config, sizeof config, "state_dir=%s/state,nvml=%s,cgroup=off,domain=isle1", dir, lib);
    gp_executor *ex = NULL;
    ck_assert_int_eq(gp_executor_open("local", config, &ex, err, sizeof err), 0);
    gp_node_spec node;
    size_t n = 0;
    int emulated = 1;
    ck_assert_int_eq(gp_exec_inventory(ex, &node, 1, &n, &emulated, err, sizeof err), 0);
    ck_assert_int_eq(emulated, 0);
    ck_assert_str_eq(node.domain, "isle1");
    ck_assert_int_eq(node.ngpus, 3);
    ck_assert_str_eq(node.gpus[2].uuid, "GPU-67706661-6b65-2d67-7075-2d3030303002");
    ck_assert_str_eq(node.gpus[0].model, "H200");
    ck_assert_int_eq(node.gpus[0].mem_bytes, 141 * GIB);
    ck_assert_int_eq(node.gpus[0].mig, 0);
    ck_assert_int_eq(node.gpus[1].mig, 1);
    ck_assert_int_eq(node.nlabels, 0);
    gp_executor_info d;
    ck_assert_int_eq(gp_exec_describe(ex, &d), 0);
    ck_assert_int_eq(d.emulated, 0);
    ck_assert_msg(strncmp(d.gpus, "NVML from ", 10) == 0, "gpus: %s", d.gpus);
    /* Busy time and memory in use, as the driver says; the MIG GPU has no
     * busy time, and a table with room for two gets two. */
    setenv("GPUPOOL_FAKE_BUSY", "50,40,25", 1);
    setenv("GPUPOOL_FAKE_OTHER_MEMORY", "1073741824", 1);
    gp_gpu_usage g[3];
    gp_exec_gpu_usage u = {.gpus = g, .max = 3};
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_GPU_USAGE, &u), 0);
    ck_assert_int_eq(u.n, 3);
    ck_assert_str_eq(g[0].node, node.name);
    ck_assert_int_eq(g[0].busy_permille, 500);
    ck_assert_int_eq(g[1].busy_permille, -1);
    ck_assert_int_eq(g[2].busy_permille, 250);
    ck_assert_int_eq(g[2].index, 2);
    ck_assert_int_eq(g[0].mem_used, GIB);
    ck_assert_msg(strstr(u.note, "MIG"), "note: %s", u.note);
    u.max = 2;
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_GPU_USAGE, &u), 0);
    ck_assert_int_eq(u.n, 2);
    unsetenv("GPUPOOL_FAKE_BUSY");
    unsetenv("GPUPOOL_FAKE_OTHER_MEMORY");
    gp_executor_close(ex);

    /* A driver that does not initialise: an explicit library is an error. */
    setenv("GPUPOOL_FAKE_NVML_INIT_FAIL", "1", 1);
    ck_assert_int_eq(gp_executor_open("local", config, &ex, err, sizeof err), GP_EIO);
    ck_assert_msg(strstr(err, "nvmlInit_v2 failed"), "err: %s", err);
    gpt_rmrf(dir);
}
END_TEST

START_TEST(test_no_gpus) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL); /* nvml=off, no inventory */
    gp_node_spec node;
    size_t n = 0;
    int emulated = 1;
    char err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gp_exec_inventory(ex, &node, 1, &n, &emulated, err, sizeof err), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(emulated, 0);
    ck_assert_int_eq(node.ngpus, 0);
    ck_assert_int_gt(node.cpu_milli, 0);
    /* max 0 only counts the nodes. */
    n = 0;
    ck_assert_int_eq(gp_exec_inventory(ex, NULL, 0, &n, &emulated, err, sizeof err), 0);
    ck_assert_int_eq(n, 1);
    gp_executor_info d;
    ck_assert_int_eq(gp_exec_describe(ex, &d), 0);
    ck_assert_msg(strncmp(d.gpus, "no GPUs", 7) == 0, "gpus: %s", d.gpus);
    gp_gpu_usage g[1];
    gp_exec_gpu_usage u = {.gpus = g, .max = 1};
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_GPU_USAGE, &u), GP_ENOTSUP);
    ck_assert_int_eq(u.n, 0);
    gpt_done(ex, dir);
}
END_TEST

/* What the daemon tells the executor decides the defaults: task state below
 * its data directory, the interposer installed beside it; an explicit
 * emulate= writes 8 emulated GPUs when none is found, and says so. */
START_TEST(test_defaults_from_the_daemon) {
    const char *dir = gpt_tmpdir();
    char err[GP_ERR_MAX] = "", lib[PATH_MAX], config[PATH_MAX + 64];
    snprintf(lib, sizeof lib, "%s/libgpuslice.so", dir);
    gpt_spit(lib, "");
    gp_executor_ctx ctx = {.data_dir = dir, .lib_dir = dir};
    gp_executor *ex = NULL;
    ck_assert_int_eq(
        gp_executor_open_ctx("local", &ctx, "nvml=off,cgroup=off", &ex, err, sizeof err), 0);
    gp_executor_info d;
    ck_assert_int_eq(gp_exec_describe(ex, &d), 0);
    ck_assert_msg(strstr(d.state, gpt_path(dir, "tasks")), "state: %s", d.state);
    ck_assert_msg(strstr(d.slices, "enforced by") && strstr(d.slices, lib), "slices: %s", d.slices);
    ck_assert_int_eq(d.emulated, 0); /* an explicit configuration never emulates unasked */
    gp_executor_close(ex);

    snprintf(config, sizeof config, "nvml=off,cgroup=off,emulate=%s/emu.conf", dir);
    ck_assert_int_eq(gp_executor_open_ctx("local", &ctx, config, &ex, err, sizeof err), 0);
    gp_node_spec node;
    size_t n = 0;
    int emulated = 0;
    ck_assert_int_eq(gp_exec_inventory(ex, &node, 1, &n, &emulated, err, sizeof err), 0);
    ck_assert_int_eq(emulated, 1);
    ck_assert_int_eq(node.ngpus, 8);
    ck_assert_str_eq(node.gpus[0].uuid, "GPU-emulated-local-0");
    ck_assert_int_eq(gp_exec_describe(ex, &d), 0);
    ck_assert_msg(strstr(d.gpus, "no GPU was found"), "gpus: %s", d.gpus);
    ck_assert_int_eq(access(gpt_path(dir, "emu.conf"), R_OK), 0);
    gp_executor_close(ex);

    /* A file that cannot be written is an error naming it. */
    snprintf(config, sizeof config, "nvml=off,cgroup=off,emulate=%s/no/such/dir/emu.conf", dir);
    ck_assert_int_eq(gp_executor_open_ctx("local", &ctx, config, &ex, err, sizeof err), GP_EIO);
    ck_assert_msg(strstr(err, "emulate:") && strstr(err, "no/such/dir"), "err: %s", err);
    gpt_rmrf(dir);
}
END_TEST

START_TEST(test_sizes_as_everywhere) {
    /* Sizes are read by libgpcommon's gp_parse_size, as the daemon and the
     * CLI read them: binary multiples, "i" and "B" optional, decimals exact. */
    gp_node_spec n;
    char err[GP_ERR_MAX];
    int rc = parse_text("memory = 1.5TiB\ngpu = T4 15.75G\ngpu = L4 24gb\ngpu = X 1024\n", &n, err,
                        sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(n.mem_bytes, 1536 * GIB);
    ck_assert_int_eq(n.gpus[0].mem_bytes, 63 * GIB / 4);
    ck_assert_int_eq(n.gpus[1].mem_bytes, 24 * GIB);
    ck_assert_int_eq(n.gpus[2].mem_bytes, 1024);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_full_file);
    tcase_add_test(tc, test_defaults_from_host);
    tcase_add_test(tc, test_malformed_files);
    tcase_add_test(tc, test_open_with_inventory);
    tcase_add_test(tc, test_nvml);
    tcase_add_test(tc, test_no_gpus);
    tcase_add_test(tc, test_defaults_from_the_daemon);
    tcase_add_test(tc, test_sizes_as_everywhere);
}

GP_TEST_MAIN("executors/inventory", add_tests)
