/*
 * test-devices.c — the local executor's device rules without a kernel that
 * enforces them: the dev= device files of the emulated inventory, the plan
 * of what a task is denied and limited to, and the dmem controller's
 * detection, region parsing and dmem.max line on a fake cgroup root (a
 * plain directory holding cgroup.controllers and dmem.capacity). That the
 * kernel enforces the rules is tests/daemon/test-devices.sh's, except for
 * the rewrite of a paused task's rules for other GPUs (gpx__dev_rebind): its
 * cgroup2 device program is replaced here on the real cgroup2 tree where
 * the kernel allows device programs (the v1 rewrite is test-pause.c's).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/executor.h"
#include "executors/local/local.h"
#include "gptest.h"
#include "helpers.h"

/* Writes one "gpu = ..." line (and a node name) to a file in dir and reads it
 * with the device files into devs. */
static int read_gpus(const char *dir, const char *gpu_line, gp_node_spec *node, gpx__gpu_dev *devs,
                     char *err, size_t errlen) {
    char text[1024];
    snprintf(text, sizeof text, "node = n1\ngpu = %s\n", gpu_line);
    gpt_spit(gpt_path(dir, "gpus.conf"), text);
    memset(node, 0, sizeof *node);
    err[0] = '\0';
    return gpx__inv_parse_file(gpt_path(dir, "gpus.conf"), node, devs, err, errlen);
}

START_TEST(test_inventory_device_files) {
    const char *dir = gpt_tmpdir();
    gp_node_spec n;
    gpx__gpu_dev devs[GP_MAX_GPUS_PER_NODE];
    char err[GP_ERR_MAX];
    /* /dev/null is the character device 1:3 on every Linux. */
    int rc = read_gpus(dir, "H100 80G 2 dev=/dev/null,/dev/zero", &n, devs, err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(n.ngpus, 2);
    ck_assert_int_eq(devs[0].major, 1);
    ck_assert_int_eq(devs[0].minor, 3);
    ck_assert_int_eq(devs[1].major, 1);
    ck_assert_int_eq(devs[1].minor, 5);
    /* A line without dev= declares GPUs without device files. */
    rc = read_gpus(dir, "H100 80G 1", &n, devs, err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(devs[0].major, -1);

    const struct {
        const char *line, *want;
    } bad[] = {
        {"H100 80G 2 dev=/dev/null", "one device file for each of the 2 GPU(s)"},
        {"H100 80G 1 dev=/dev/null,/dev/zero", "one device file for each of the 1 GPU(s)"},
        {"H100 80G dev=/no/such/nvidia0", "dev: cannot find '/no/such/nvidia0'"},
        {"H100 80G dev=/etc/hostname", "dev: '/etc/hostname' is not a character device"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = read_gpus(dir, bad[i].line, &n, devs, err, sizeof err);
        ck_assert_int_eq(rc, GP_EPARSE);
        ck_assert_msg(strstr(err, "gpus.conf:2: gpu: ") && strstr(err, bad[i].want), "%s: err: %s",
                      bad[i].line, err);
    }
    gpt_rmrf(dir);
}
END_TEST

/* Four GPUs: 195:0, none, 195:2, 195:3; GPU 0 at PCI 0000:0a:00.0. */
static void four_gpus(gpx__gpu_dev devs[4]) {
    memset(devs, 0, 4 * sizeof *devs);
    for (int i = 0; i < 4; i++) {
        devs[i].major = i == 1 ? -1 : GPX__NVIDIA_MAJOR;
        devs[i].minor = i == 1 ? -1 : i;
    }
    snprintf(devs[0].bus, sizeof devs[0].bus, "00000000:0A:00.0");
}

START_TEST(test_plan_denies_the_gpus_not_given) {
    gpx__devices dv;
    memset(&dv, 0, sizeof dv);
    dv.mode = GPX__DEV_V1;
    gpx__gpu_dev devs[4];
    four_gpus(devs);
    gp_task_binding b = {.node = "n1", .nslices = 1};
    b.slices[0] = (gp_slice){.gpu = 2, .milli = 1000, .mem = 1 << 30, .mig_slot = -1};
    gpx__dev_plan plan;
    gpx__dev_plan_make(&dv, devs, 4, &b, &plan);
    /* GPU 1 has no device file: it cannot be denied, and is not. */
    ck_assert_int_eq(plan.ndeny, 2);
    ck_assert_int_eq(plan.deny[0].minor, 0);
    ck_assert_int_eq(plan.deny[1].minor, 3);
    ck_assert_int_eq(plan.nlimits, 0);

    /* A task without GPUs is denied every device file. */
    gpx__dev_plan_make(&dv, devs, 4, NULL, &plan);
    ck_assert_int_eq(plan.ndeny, 3);

    /* Without a mechanism nothing is planned. */
    dv.mode = GPX__DEV_NONE;
    gpx__dev_plan_make(&dv, devs, 4, NULL, &plan);
    ck_assert_int_eq(plan.ndeny, 0);
}
END_TEST

/* Makes a fake cgroup2 root in dir. */
static void fake_root(const char *dir, const char *controllers, const char *capacity) {
    gpt_spit(gpt_path(dir, "cgroup.controllers"), controllers);
    if (capacity != NULL)
        gpt_spit(gpt_path(dir, "dmem.capacity"), capacity);
}

START_TEST(test_dmem_detection) {
    const char *dir = gpt_tmpdir();
    gpx__dmem dm;
    fake_root(dir, "cpuset cpu io memory pids\n", NULL);
    ck_assert_int_eq(gpx__dmem_read(dir, &dm), 0);
    ck_assert_int_eq(dm.present, 0);
    ck_assert_int_eq(dm.nregions, 0);

    /* The controller, but no driver that registers regions. */
    fake_root(dir, "cpuset cpu io memory dmem pids\n", "");
    ck_assert_int_eq(gpx__dmem_read(dir, &dm), 0);
    ck_assert_int_eq(dm.present, 1);
    ck_assert_int_eq(dm.nregions, 0);

    fake_root(dir, "cpu memory dmem\n",
              "drm/0000:0a:00.0/vram0 85899345920\n"
              "drm/0000:41:00.0/vram0 42949672960\n"
              "ttm/system 1234\n");
    ck_assert_int_eq(gpx__dmem_read(dir, &dm), 0);
    ck_assert_int_eq(dm.nregions, 3);
    ck_assert_str_eq(dm.regions[1].name, "drm/0000:41:00.0/vram0");
    ck_assert_int_eq(dm.regions[1].capacity, INT64_C(42949672960));
    /* NVML's address (8-digit domain, capital hex) and the kernel's. */
    ck_assert_int_eq(gpx__dmem_region(&dm, "00000000:0A:00.0"), 0);
    ck_assert_int_eq(gpx__dmem_region(&dm, "0000:41:00.0"), 1);
    ck_assert_int_eq(gpx__dmem_region(&dm, "0000:42:00.0"), -1);
    ck_assert_int_eq(gpx__dmem_region(&dm, ""), -1);
    ck_assert_int_eq(gpx__dmem_region(&dm, "ttm/system"), -1);

    /* A malformed line is an error, and no region is used. */
    fake_root(dir, "cpu memory dmem\n", "drm/0000:0a:00.0/vram0 lots\n");
    ck_assert_int_eq(gpx__dmem_read(dir, &dm), GP_EPARSE);
    ck_assert_int_eq(dm.nregions, 0);
    gpt_rmrf(dir);
}
END_TEST

/* Devices with dmem on over a fake cgroup root in dir whose dmem.capacity
 * holds capacity. */
static void dmem_on(const char *dir, const char *capacity, gpx__devices *dv) {
    memset(dv, 0, sizeof *dv);
    fake_root(dir, "cpu memory dmem\n", capacity);
    ck_assert_int_eq(gpx__dmem_read(dir, &dv->dmem), 0);
    dv->dmem_on = 1;
}

START_TEST(test_dmem_plan_and_limit) {
    const char *dir = gpt_tmpdir();
    gpx__devices dv;
    dmem_on(dir, "drm/0000:0a:00.0/vram0 85899345920\n", &dv);
    gpx__gpu_dev devs[4];
    four_gpus(devs);
    /* A quarter of GPU 0 (which has a region) is limited; a whole GPU is
     * not (its region holds no more than the GPU). */
    gp_task_binding b = {.node = "n1", .nslices = 1};
    b.slices[0] = (gp_slice){.gpu = 0, .milli = 250, .mem = INT64_C(21474836480), .mig_slot = -1};
    gpx__dev_plan plan;
    gpx__dev_plan_make(&dv, devs, 4, &b, &plan);
    ck_assert_int_eq(plan.nlimits, 1);
    ck_assert_int_eq(plan.limits[0].region, 0);
    ck_assert_int_eq(plan.limits[0].bytes, INT64_C(21474836480));
    b.slices[0].mem = INT64_C(85899345920);
    gpx__dev_plan_make(&dv, devs, 4, &b, &plan);
    ck_assert_int_eq(plan.nlimits, 0);
    /* A GPU without a PCI address has no region. */
    b.slices[0] = (gp_slice){.gpu = 2, .milli = 250, .mem = 1 << 30, .mig_slot = -1};
    gpx__dev_plan_make(&dv, devs, 4, &b, &plan);
    ck_assert_int_eq(plan.nlimits, 0);

    /* The line written into a task's dmem.max. */
    gpt_spit(gpt_path(dir, "dmem.max"), "");
    ck_assert_int_eq(gpx__dmem_limit(dir, dv.dmem.regions[0].name, INT64_C(21474836480)), 0);
    char *got = gpt_slurp(gpt_path(dir, "dmem.max"));
    ck_assert_str_eq(got, "drm/0000:0a:00.0/vram0 21474836480");
    free(got);
    gpt_rmrf(dir);
}
END_TEST

START_TEST(test_dmem_applied_to_a_task) {
    /* The write path of gpx__dev_apply on a fake cgroup2 parent (a plain
     * directory): the task's directory is made, its dmem.max gets the line,
     * and the directory joins the task's cgroups. A real dmem.max exists in
     * every cgroup2 directory; here it is made beforehand. */
    const char *dir = gpt_tmpdir();
    gpx__devices dv;
    dmem_on(dir, "drm/0000:0a:00.0/vram0 85899345920\n", &dv);
    snprintf(dv.v2_parent, sizeof dv.v2_parent, "%s", dir);
    gpx__dev_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.nlimits = 1;
    plan.limits[0].region = 0;
    plan.limits[0].bytes = INT64_C(21474836480);
    char task[PATH_MAX];
    snprintf(task, sizeof task, "%s/w1.t0.a1", dir);
    ck_assert_int_eq(mkdir(task, 0755), 0);
    gpt_spit(gpt_path(task, "dmem.max"), "");
    gpx__task_cg tc;
    memset(&tc, 0, sizeof tc);
    char why[256] = "";
    ck_assert_int_eq(gpx__dev_apply(&dv, "w1.t0.a1", &plan, &tc, why, sizeof why), 0);
    ck_assert_int_eq(tc.ndirs, 1);
    ck_assert_str_eq(tc.dirs[0], task);
    ck_assert_msg(strstr(tc.note, "dmem.max set for 1 GPU region(s)"), "note: %s", tc.note);
    char *got = gpt_slurp(gpt_path(task, "dmem.max"));
    ck_assert_str_eq(got, "drm/0000:0a:00.0/vram0 21474836480");
    free(got);

    /* Where the limit cannot be written, what was made is removed and the
     * caller is told why, so that the task is not started without it. */
    memset(&tc, 0, sizeof tc);
    ck_assert_int_eq(gpx__dev_apply(&dv, "w2.t0.a1", &plan, &tc, why, sizeof why), -1);
    ck_assert_int_eq(tc.ndirs, 0);
    ck_assert_int_ne(access(gpt_path(dir, "w2.t0.a1"), F_OK), 0);
    ck_assert_msg(strstr(why, "cannot set dmem.max of drm/0000:0a:00.0/vram0"), "why: %s", why);
    gpt_rmrf(dir);
}
END_TEST

START_TEST(test_dmem_rebind) {
    /* A paused task moved from GPU 0 to GPU 1: its dmem.max for GPU 0's
     * region goes back to "max" (GPU 1 has no region here), and the old
     * plan puts the limit back. */
    const char *dir = gpt_tmpdir();
    gpx__devices dv;
    dmem_on(dir, "drm/0000:0a:00.0/vram0 85899345920\n", &dv);
    snprintf(dv.v2_parent, sizeof dv.v2_parent, "%s", dir);
    gpx__gpu_dev devs[2] = {{-1, -1, "0000:0a:00.0"}, {-1, -1, "0000:0b:00.0"}};
    gpx__task_cg tc;
    memset(&tc, 0, sizeof tc);
    tc.ndirs = 1;
    snprintf(tc.dirs[0], sizeof tc.dirs[0], "%s/w1.t0.a1", dir);
    ck_assert_int_eq(mkdir(tc.dirs[0], 0755), 0);
    gpt_spit(gpt_path(tc.dirs[0], "dmem.max"), ""); /* as every cgroup2 directory has */
    gp_task_binding b = {.node = "n1", .nslices = 1};
    b.slices[0] = (gp_slice){.gpu = 1, .milli = 500, .mem = INT64_C(21474836480), .mig_slot = -1};
    gpx__dev_plan plan;
    gpx__dev_plan_make(&dv, devs, 2, &b, &plan);
    char why[256] = "";
    ck_assert_int_eq(gpx__dev_rebind(&dv, "w1.t0.a1", devs, 2, &plan, &tc, why, sizeof why), 0);
    char *got = gpt_slurp(gpt_path(tc.dirs[0], "dmem.max"));
    ck_assert_str_eq(got, "drm/0000:0a:00.0/vram0 max");
    free(got);
    b.slices[0].gpu = 0;
    gpx__dev_plan_make(&dv, devs, 2, &b, &plan);
    ck_assert_int_eq(gpx__dev_rebind(&dv, "w1.t0.a1", devs, 2, &plan, &tc, why, sizeof why), 0);
    got = gpt_slurp(gpt_path(tc.dirs[0], "dmem.max"));
    ck_assert_str_eq(got, "drm/0000:0a:00.0/vram0 21474836480");
    free(got);
    gpt_rmrf(dir);
}
END_TEST

START_TEST(test_v2_program_replaced) {
    /* A task's device program on the real cgroup2 tree denies GPU 1; moved
     * to GPU 1 it denies GPU 0 instead (one program, replaced); moved back,
     * GPU 1 again. The GPUs are device files 195:0 and 195:1 made here
     * (no driver behind them: an open they are allowed fails with ENXIO). */
    if (geteuid() != 0)
        GP_TEST_SKIP("device programs need root");
    gpx__cgroups cg;
    memset(&cg, 0, sizeof cg);
    gpx__devices dv;
    char err[GP_ERR_MAX] = "", parent[64];
    snprintf(parent, sizeof parent, "gpexec-devre-%d", (int)getpid());
    if (gpx__dev_detect(&dv, &cg, "v2", parent, err, sizeof err) != 0)
        GP_TEST_SKIP("no cgroup2 device programs here: %s", err);
    const char *dir = gpt_tmpdir();
    gpx__gpu_dev devs[2];
    for (int i = 0; i < 2; i++) {
        char node[PATH_MAX];
        snprintf(node, sizeof node, "%s/nvidia%d", dir, i);
        ck_assert_int_eq(mknod(node, S_IFCHR | 0666, makedev(195, (unsigned)i)), 0);
        devs[i] = (gpx__gpu_dev){195, i, ""};
    }
    gp_task_binding b = {.node = "n1", .nslices = 1};
    b.slices[0] = (gp_slice){.gpu = 0, .milli = 1000, .mem = 0, .mig_slot = -1};
    gpx__dev_plan plan;
    gpx__dev_plan_make(&dv, devs, 2, &b, &plan);
    gpx__task_cg tc;
    memset(&tc, 0, sizeof tc);
    char why[256] = "", n0[PATH_MAX], n1[PATH_MAX];
    ck_assert_msg(gpx__dev_apply(&dv, "w1.t0.a1", &plan, &tc, why, sizeof why) == 0, "%s", why);
    snprintf(n0, sizeof n0, "%s/nvidia0", dir);
    snprintf(n1, sizeof n1, "%s/nvidia1", dir);
    ck_assert_int_ne(gpt_open_in(tc.dirs[0], n0), EPERM);
    ck_assert_int_eq(gpt_open_in(tc.dirs[0], n1), EPERM);
    for (int round = 0; round < 2; round++) {
        b.slices[0].gpu = round == 0 ? 1 : 0;
        gpx__dev_plan_make(&dv, devs, 2, &b, &plan);
        ck_assert_msg(gpx__dev_rebind(&dv, "w1.t0.a1", devs, 2, &plan, &tc, why, sizeof why) == 0,
                      "%s", why);
        ck_assert_int_eq(gpt_open_in(tc.dirs[0], round == 0 ? n0 : n1), EPERM);
        ck_assert_int_ne(gpt_open_in(tc.dirs[0], round == 0 ? n1 : n0), EPERM);
    }
    gpx__cg_remove(&tc);
    rmdir(dv.v2_parent);
    gpt_rmrf(dir);
}
END_TEST

START_TEST(test_config) {
    const char *dir = gpt_tmpdir();
    char config[PATH_MAX + 100], err[GP_ERR_MAX] = "";
    gp_executor *ex = NULL;
    snprintf(config, sizeof config, "state_dir=%s/state,nvml=off,devices=always", dir);
    ck_assert_int_eq(gp_executor_open("local", config, &ex, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strstr(err, "devices: 'always' is not one of auto, v2, v1, off"), "err: %s", err);
    /* Off is said in the description. */
    ex = gpt_open(dir, "devices=off");
    gp_executor_info d;
    ck_assert_int_eq(gp_exec_describe(ex, &d), 0);
    ck_assert_msg(strstr(d.devices, "not filtered (devices=off)"), "devices: %s", d.devices);
    ck_assert_msg(strncmp(d.gpu_memory, "GPU memory limits: ", 19) == 0, "gpu_memory: %s",
                  d.gpu_memory);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_describe_says_what_is_not_filtered) {
    /* Emulated GPUs without dev= files cannot be filtered, and describe
     * says so wherever a mechanism is in use (as root with cgroups). */
    const char *dir = gpt_tmpdir();
    char extra[PATH_MAX + 64];
    gpt_spit(gpt_path(dir, "gpus.conf"), "gpu = H100 80G 1 dev=/dev/null\ngpu = H100 80G 2\n");
    snprintf(extra, sizeof extra, "inventory=%s/gpus.conf,devices=auto,cgroup_parent=gpexec-dev-%d",
             dir, (int)getpid());
    gp_executor *ex = gpt_open(dir, extra);
    gp_executor_info d;
    ck_assert_int_eq(gp_exec_describe(ex, &d), 0);
    if (strstr(d.devices, "NOT filtered") != NULL) {
        printf("# SKIP %s\n", d.devices);
    } else {
        ck_assert_msg(strstr(d.devices, "; 2 of 3 GPUs have no device file known (emulated, no "
                                        "dev= in the inventory) and are not filtered"),
                      "devices: %s", d.devices);
    }
    gpt_done(ex, dir);
    /* The executor removed its instance's cgroup; the test's parent goes. */
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "/sys/fs/cgroup/devices/gpexec-dev-%d", (int)getpid());
    rmdir(parent);
    snprintf(parent, sizeof parent, "/sys/fs/cgroup/unified/gpexec-dev-%d", (int)getpid());
    rmdir(parent);
    snprintf(parent, sizeof parent, "/sys/fs/cgroup/gpexec-dev-%d", (int)getpid());
    rmdir(parent);
}
END_TEST

START_TEST(test_task_without_its_rules_is_not_started) {
    /* A task whose device rules cannot be set up is refused, not started
     * without them: the instance's devices cgroups are taken away between
     * the executor's open and the launch, so the task's own cannot be made. */
    const char *dir = gpt_tmpdir();
    char extra[PATH_MAX + 96], parent[PATH_MAX];
    gpt_spit(gpt_path(dir, "gpus.conf"), "gpu = H100 80G 2 dev=/dev/null,/dev/zero\n");
    snprintf(extra, sizeof extra,
             "inventory=%s/gpus.conf,devices=v1,instance=devfail,cgroup_parent=gpexec-devfail-%d",
             dir, (int)getpid());
    char config[2 * PATH_MAX], err[GP_ERR_MAX] = "";
    snprintf(config, sizeof config, "state_dir=%s/state,nvml=off,cgroup=off,%s", dir, extra);
    gp_executor *ex = NULL;
    if (gp_executor_open("local", config, &ex, err, sizeof err) != 0) {
        printf("# SKIP the devices cgroup v1 is not available here: %s\n", err);
        gpt_rmrf(dir);
        return;
    }
    /* Both levels go: the executor makes its instance's directory again
     * where only that one is missing. */
    snprintf(parent, sizeof parent, "/sys/fs/cgroup/devices/gpexec-devfail-%d/devfail",
             (int)getpid());
    ck_assert_msg(rmdir(parent) == 0, "rmdir %s", parent);
    *strrchr(parent, '/') = '\0';
    ck_assert_msg(rmdir(parent) == 0, "rmdir %s", parent);

    const char *argv[] = {"true", NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 1, argv, dir);
    char handle[GP_HANDLE_MAX] = "";
    int rc = gp_exec_launch(ex, &t, handle, err, sizeof err);
    ck_assert_msg(rc == GP_ESYS, "launch: %s (%s)", gp_err_name(rc), err);
    ck_assert_msg(strstr(err, "GPU device rules could not be applied: cannot create"), "err: %s",
                  err);
    /* Nothing ran and nothing is left that a relaunch would take for a
     * start in flight. */
    ck_assert_int_ne(access(gpt_path(dir, "state/w1.t0.a1"), F_OK), 0);
    gpt_done(ex, dir);
    snprintf(parent, sizeof parent, "/sys/fs/cgroup/devices/gpexec-devfail-%d", (int)getpid());
    rmdir(parent);
}
END_TEST

START_TEST(test_nvml_minor_numbers_and_regions) {
    /* NVML's minor number is the GPU's device file (195:N) and its PCI
     * address names its dmem region; the fake NVML puts GPU i on bus
     * 0x10 + i with minor number i. */
    char lib[PATH_MAX], err[GP_ERR_MAX] = "";
    gpt_fake_nvml(lib, sizeof lib);
    setenv("GPUPOOL_FAKE_GPUS", "2", 1);
    gpx__nvml nv;
    ck_assert_int_eq(gpx__nvml_open(&nv, lib, 1, err, sizeof err), 0);
    gpx__gpu_dev devs[GP_MAX_GPUS_PER_NODE];
    ck_assert_int_eq(gpx__nvml_devs(&nv, devs, GP_MAX_GPUS_PER_NODE), 2);
    gpx__nvml_close(&nv);
    ck_assert_int_eq(devs[1].major, 195);
    ck_assert_int_eq(devs[1].minor, 1);
    ck_assert_str_eq(devs[1].bus, "00000000:11:00.0");

    const char *dir = gpt_tmpdir();
    gpx__devices dv;
    dmem_on(dir, "drm/0000:10:00.0/vram0 85899345920\ndrm/0000:11:00.0/vram0 85899345920\n", &dv);
    dv.mode = GPX__DEV_V2;
    gp_task_binding b = {.node = "n1", .nslices = 1};
    b.slices[0] = (gp_slice){.gpu = 1, .milli = 500, .mem = INT64_C(42949672960), .mig_slot = -1};
    gpx__dev_plan plan;
    gpx__dev_plan_make(&dv, devs, 2, &b, &plan);
    ck_assert_int_eq(plan.ndeny, 1);
    ck_assert_int_eq(plan.deny[0].minor, 0);
    ck_assert_int_eq(plan.nlimits, 1);
    ck_assert_str_eq(dv.dmem.regions[plan.limits[0].region].name, "drm/0000:11:00.0/vram0");
    gpt_rmrf(dir);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_inventory_device_files);
    tcase_add_test(tc, test_plan_denies_the_gpus_not_given);
    tcase_add_test(tc, test_dmem_rebind);
    tcase_add_test(tc, test_v2_program_replaced);
    tcase_add_test(tc, test_dmem_detection);
    tcase_add_test(tc, test_dmem_plan_and_limit);
    tcase_add_test(tc, test_dmem_applied_to_a_task);
    tcase_add_test(tc, test_config);
    tcase_add_test(tc, test_describe_says_what_is_not_filtered);
    tcase_add_test(tc, test_task_without_its_rules_is_not_started);
    tcase_add_test(tc, test_nvml_minor_numbers_and_regions);
}

GP_TEST_MAIN("executors/devices", add_tests)
