/*
 * devices.c — which GPU device files a task of the local executor may open,
 * and its GPU memory limits where the kernel enforces them (the dmem cgroup
 * controller), as Slurm's ConstrainDevices and runc do.
 *
 * Every task is denied the device files of the node's GPUs it was not given
 * (/dev/nvidiaN is the character device 195:N); everything else stays as it
 * was: /dev/nvidiactl (195:255), /dev/nvidia-uvm and the nvidia-caps files,
 * which CUDA needs, and every other device. Two mechanisms, one rule:
 *
 *   v1: a cgroup of the devices controller per task,
 *       <devices mount>/<parent>/<key>, with one "c M:m rwm" line written to
 *       devices.deny per GPU not given;
 *   v2: a BPF_PROG_TYPE_CGROUP_DEVICE program, hand-written below (as runc's
 *       devicefilter, no libbpf), attached with BPF_F_ALLOW_MULTI to the
 *       task's directory in the cgroup2 tree: the task's own cgroup on a
 *       pure v2 host, a cgroup made for it in the unified tree of a hybrid
 *       host (the kernel checks both trees on every open).
 *
 * The rules are in place before the task joins its cgroups (it joins them
 * between fork and exec, as root), so nothing of the task ever runs without
 * them, and they are root's: the task's user cannot write them.
 *
 * dmem: where cgroup2's cgroup.controllers lists dmem (Linux 6.14+) and a
 * driver registers regions in dmem.capacity ("drm/<PCI address>/vram0
 * <bytes>"), each task's cgroup2 directory gets dmem.max of its slice's
 * memory for the region of each of its GPUs, and the kernel refuses device
 * memory beyond it. The detection and the parsing are tested on a fake
 * cgroup root; the write to a real dmem.max has not been tried on hardware.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/local/local.h"
#include "executors/registry.h"

/* ======================================================================== */
/* Detection                                                                 */
/* ======================================================================== */

static int load_program(const gpx__dev_plan *plan, char *why, size_t len);

/* Makes the instance's parent cgroup for mode under mnt into out (one of
 * dv's parents) and says in dv's note that tasks are filtered by what (the
 * mechanism), or why not: 0, or -1 with out emptied. */
static int use_parent(gpx__devices *dv, gpx__dev_mode mode, const char *mnt, const char *parent,
                      char *out, size_t outlen, const char *what) {
    int rc = gpx__cg_make_parent(mnt, parent, NULL, out, outlen);
    if (rc < 0) {
        gpx__exec_fmt(dv->note, sizeof dv->note, "%s: cannot create %.150s: %s", what, out,
                      gp_strerror(rc));
        out[0] = '\0';
        return -1;
    }
    dv->mode = mode;
    gpx__exec_fmt(dv->note, sizeof dv->note,
                  "GPU devices: each task is denied the GPUs it was not given (%s under %.120s)",
                  what, out);
    return 0;
}

static int try_v1(gpx__devices *dv, const char *parent) {
    char mnt[PATH_MAX];
    if (gpx__cg_find_mount(0, "devices", mnt, sizeof mnt) < 0) {
        gpx__exec_fmt(dv->note, sizeof dv->note, "no cgroup v1 devices hierarchy is mounted");
        return -1;
    }
    return use_parent(dv, GPX__DEV_V1, mnt, parent, dv->v1_parent, sizeof dv->v1_parent,
                      "devices cgroup v1");
}

static int try_v2(gpx__devices *dv, const char *root, const char *parent) {
    if (root[0] == '\0') {
        gpx__exec_fmt(dv->note, sizeof dv->note, "no cgroup2 hierarchy is mounted");
        return -1;
    }
    /* A kernel without cgroup BPF, or a process without CAP_BPF, refuses
     * every program: find out now rather than at each task. */
    gpx__dev_plan none;
    memset(&none, 0, sizeof none);
    char why[200];
    int pfd = load_program(&none, why, sizeof why);
    if (pfd < 0) {
        gpx__exec_fmt(dv->note, sizeof dv->note, "cgroup2 device program: %s", why);
        return -1;
    }
    close(pfd);
    return use_parent(dv, GPX__DEV_V2, root, parent, dv->v2_parent, sizeof dv->v2_parent,
                      "cgroup2 BPF device program");
}

/* Turns dmem on where the controller and regions exist and the instance's
 * cgroup2 parent can delegate it. malformed: dmem.capacity could not be
 * parsed (no region is then used). */
static void try_dmem(gpx__devices *dv, const char *root, const char *parent, int malformed) {
    if (root[0] == '\0' || !dv->dmem.present) {
        gpx__exec_fmt(dv->dmem_note, sizeof dv->dmem_note,
                      "GPU memory limits: interposer and watchdog only (%s)",
                      root[0] == '\0' ? "no cgroup2 hierarchy"
                                      : "cgroup2 offers no dmem controller");
        return;
    }
    if (malformed) {
        gpx__exec_fmt(dv->dmem_note, sizeof dv->dmem_note,
                      "GPU memory limits: interposer and watchdog only (%.100s/dmem.capacity is "
                      "not 'region bytes' lines)",
                      root);
        return;
    }
    if (dv->dmem.nregions == 0) {
        gpx__exec_fmt(dv->dmem_note, sizeof dv->dmem_note,
                      "GPU memory limits: interposer and watchdog only (the dmem controller has "
                      "no regions: the GPU driver registers none)");
        return;
    }
    char made[PATH_MAX];
    int rc = gpx__cg_make_parent(root, parent, "+dmem", made, sizeof made);
    if (rc < 0) {
        gpx__exec_fmt(dv->dmem_note, sizeof dv->dmem_note,
                      "GPU memory limits: interposer and watchdog only (cannot delegate dmem to "
                      "%.120s: %s)",
                      made, gp_strerror(rc));
        return;
    }
    gpx__exec_fmt(dv->v2_parent, sizeof dv->v2_parent, "%s", made);
    dv->dmem_on = 1;
    gpx__exec_fmt(dv->dmem_note, sizeof dv->dmem_note,
                  "GPU memory limits: dmem cgroup (%d region(s), e.g. %.100s), with the "
                  "interposer and the watchdog",
                  dv->dmem.nregions, dv->dmem.regions[0].name);
}

int gpx__dev_detect(gpx__devices *dv, const gpx__cgroups *cg, const char *want, const char *parent,
                    char *err, size_t errlen) {
    memset(dv, 0, sizeof *dv);
    char root[PATH_MAX] = "";
    if (gpx__cg_find_mount(1, NULL, root, sizeof root) < 0)
        root[0] = '\0';
    int malformed = root[0] != '\0' && gpx__dmem_read(root, &dv->dmem) < 0;
    if (strcmp(want, "off") == 0) {
        gpx__exec_fmt(dv->note, sizeof dv->note,
                      "GPU devices: not filtered (devices=off): a task may open any GPU");
    } else if (strcmp(want, "v1") == 0 || strcmp(want, "v2") == 0) {
        if ((want[1] == '1' ? try_v1(dv, parent) : try_v2(dv, root, parent)) < 0) {
            gp_errf(err, errlen, "devices: %s", dv->note);
            return GP_ENOTSUP;
        }
    } else if (strcmp(want, "auto") != 0) {
        gp_errf(err, errlen, "devices: '%s' is not one of auto, v2, v1, off", want);
        return GP_EINVAL;
    } else if (!(cg->mode == GPX__CG_V2 && try_v2(dv, root, parent) == 0) &&
               try_v1(dv, parent) < 0 && try_v2(dv, root, parent) < 0) {
        char why[256];
        gpx__exec_fmt(why, sizeof why, "%s", dv->note);
        gpx__exec_fmt(dv->note, sizeof dv->note,
                      "GPU devices: NOT filtered (%.200s): a task may open any GPU", why);
    }
    try_dmem(dv, root, parent, malformed);
    return 0;
}

/* ======================================================================== */
/* dmem                                                                      */
/* ======================================================================== */

int gpx__dmem_read(const char *root, gpx__dmem *dm) {
    memset(dm, 0, sizeof *dm);
    char path[PATH_MAX], ctl[512];
    gpx__exec_fmt(path, sizeof path, "%s/cgroup.controllers", root);
    dm->present = gpx__read_small(path, ctl, sizeof ctl) >= 0 && gpx__cg_has_word(ctl, "dmem", ' ');
    if (!dm->present)
        return 0;
    gpx__exec_fmt(path, sizeof path, "%s/dmem.capacity", root);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return 0;
    char line[512];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
        char name[sizeof dm->regions[0].name], tail;
        long long cap;
        int n = sscanf(line, "%127s %lld %c", name, &cap, &tail);
        if (n == -1 || (n == 1 && name[0] == '\0'))
            continue; /* an empty line */
        if (n != 2 || cap < 0 || strlen(name) >= sizeof name - 1) {
            rc = GP_EPARSE;
        } else if (dm->nregions < GPX__DMEM_MAX) {
            gpx__exec_fmt(dm->regions[dm->nregions].name, sizeof dm->regions[0].name, "%s", name);
            dm->regions[dm->nregions++].capacity = cap;
        }
    }
    fclose(f);
    if (rc < 0)
        dm->nregions = 0;
    return rc;
}

int gpx__dmem_region(const gpx__dmem *dm, const char *bus) {
    unsigned dom, b, dev, fn;
    char tail;
    if (sscanf(bus, "%x:%x:%x.%x%c", &dom, &b, &dev, &fn, &tail) != 4 || dom > 0xffff || b > 0xff ||
        dev > 0x1f || fn > 7)
        return -1;
    char prefix[64];
    gpx__exec_fmt(prefix, sizeof prefix, "drm/%04x:%02x:%02x.%x/vram", dom, b, dev, fn);
    for (int i = 0; i < dm->nregions; i++)
        if (strncmp(dm->regions[i].name, prefix, strlen(prefix)) == 0)
            return i;
    return -1;
}

int gpx__dmem_limit(const char *dir, const char *region, int64_t bytes) {
    char line[192];
    gpx__exec_fmt(line, sizeof line, "%s %" PRId64, region, bytes);
    return gpx__cg_write(dir, "dmem.max", line);
}

/* ======================================================================== */
/* The task's rules                                                          */
/* ======================================================================== */

void gpx__dev_plan_make(const gpx__devices *dv, const gpx__gpu_dev *devs, int ngpus,
                        const gp_task_binding *binding, gpx__dev_plan *plan) {
    memset(plan, 0, sizeof *plan);
    for (int i = 0; i < ngpus && i < GP_MAX_GPUS_PER_NODE; i++) {
        const gp_slice *given = NULL;
        for (int s = 0; binding != NULL && s < binding->nslices; s++)
            if (binding->slices[s].gpu == i)
                given = &binding->slices[s];
        if (given == NULL && devs[i].major >= 0 && dv->mode != GPX__DEV_NONE)
            plan->deny[plan->ndeny++] = devs[i];
        int r = given != NULL && dv->dmem_on ? gpx__dmem_region(&dv->dmem, devs[i].bus) : -1;
        if (r >= 0 && given->mem > 0 && given->mem < dv->dmem.regions[r].capacity) {
            plan->limits[plan->nlimits].region = r;
            plan->limits[plan->nlimits++].bytes = given->mem;
        }
    }
}

/* bpf(2): not every C library wraps it. */
static int sys_bpf(int cmd, union bpf_attr *attr) {
    return (int)syscall(SYS_bpf, cmd, attr, sizeof *attr);
}

#define INSN(c, d, s, o, i)                                                                        \
    (struct bpf_insn) {                                                                            \
        .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)                        \
    }

/*
 * Loads the device program of a plan. The program reads the access (struct
 * bpf_cgroup_dev_ctx: access_type, whose low 16 bits are the device type,
 * then major, minor) and answers 0 (refused: the open fails with EPERM) for
 * a character device of the deny list, 1 for everything else:
 *
 *       r2 = ctx->access_type & 0xffff; r3 = ctx->major; r4 = ctx->minor
 *       if r2 != CHAR goto allow
 *   per entry:  if r3 != major goto next; if r4 == minor goto deny
 *   allow: r0 = 1; exit
 *   deny:  r0 = 0; exit
 *
 * Returns the program's descriptor, or a system code (gp_syserr) with why set.
 */
static int load_program(const gpx__dev_plan *plan, char *why, size_t len) {
    struct bpf_insn prog[5 + 2 * GP_MAX_GPUS_PER_NODE + 4];
    int n = 0;
    prog[n++] = INSN(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_2, BPF_REG_1, 0, 0);
    prog[n++] = INSN(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
    prog[n++] = INSN(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_3, BPF_REG_1, 4, 0);
    prog[n++] = INSN(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_4, BPF_REG_1, 8, 0);
    int allow = 5 + 2 * plan->ndeny, deny = allow + 2;
    prog[n] =
        INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, (int16_t)(allow - n - 1), BPF_DEVCG_DEV_CHAR);
    n++;
    for (int i = 0; i < plan->ndeny; i++) {
        prog[n++] = INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0, 1, plan->deny[i].major);
        prog[n] = INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_4, 0, (int16_t)(deny - n - 1),
                       plan->deny[i].minor);
        n++;
    }
    prog[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
    prog[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    /* The verifier refuses code no path reaches: an empty list has no deny. */
    if (plan->ndeny > 0) {
        prog[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
        prog[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    }

    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    attr.insns = (uint64_t)(uintptr_t)prog;
    attr.insn_cnt = (uint32_t)n;
    attr.license = (uint64_t)(uintptr_t) "Apache";
    int pfd = sys_bpf(BPF_PROG_LOAD, &attr);
    if (pfd < 0) {
        int e = errno;
        gpx__exec_fmt(why, len, "bpf(BPF_PROG_LOAD): %s", strerror(e));
        return gp_syserr(e);
    }
    return pfd;
}

/* Attaches the program pfd to the cgroup2 directory cfd (dir, for why),
 * with BPF_F_ALLOW_MULTI, in place of the program replace (-1: none). 0 or
 * a system code (gp_syserr) with why set. */
static int attach_fd(int cfd, int pfd, int replace, const char *dir, char *why, size_t len) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.target_fd = (uint32_t)cfd;
    attr.attach_bpf_fd = (uint32_t)pfd;
    attr.attach_type = BPF_CGROUP_DEVICE;
    attr.attach_flags = BPF_F_ALLOW_MULTI;
    if (replace >= 0) {
        attr.attach_flags |= BPF_F_REPLACE;
        attr.replace_bpf_fd = (uint32_t)replace;
    }
    if (sys_bpf(BPF_PROG_ATTACH, &attr) < 0) {
        int rc = gp_syserr(errno);
        gpx__exec_fmt(why, len, "bpf(BPF_PROG_ATTACH) to %.150s: %s", dir, gp_strerror(rc));
        return rc;
    }
    return 0;
}

/* Loads the device program of a plan and attaches it to the cgroup2
 * directory dir. 0 or a system code (gp_syserr) with why set. */
static int attach_program(const char *dir, const gpx__dev_plan *plan, char *why, size_t len) {
    int pfd = load_program(plan, why, len);
    if (pfd < 0)
        return pfd;
    int cfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = 0;
    if (cfd < 0) {
        rc = gp_syserr(errno);
        gpx__exec_fmt(why, len, "cannot open %.150s: %s", dir, gp_strerror(rc));
    } else {
        rc = attach_fd(cfd, pfd, -1, dir, why, len);
        close(cfd);
    }
    /* The attachment holds the program for as long as the cgroup lives. */
    close(pfd);
    return rc;
}

/* The index in tc->dirs of parent/name, added (made) if it is not there;
 * -1 with why set if it cannot be made. */
static int task_dir(gpx__task_cg *tc, const char *parent, const char *name, char *why, size_t len) {
    char dir[PATH_MAX];
    gpx__exec_fmt(dir, sizeof dir, "%s/%s", parent, name);
    for (int i = 0; i < tc->ndirs; i++)
        if (strcmp(tc->dirs[i], dir) == 0)
            return i;
    int rc = tc->ndirs < GPX__CG_DIRS
                 ? gpx__cg_make_dir(tc->dirs[tc->ndirs], sizeof tc->dirs[0], parent, name)
                 : GP_ELIMIT;
    if (rc < 0) {
        gpx__exec_fmt(why, len, "cannot create %.150s: %s", dir, gp_strerror(rc));
        return -1;
    }
    return tc->ndirs++;
}

/* Appends "; " and text to tc->note. */
static void note_add(gpx__task_cg *tc, const char *text) {
    size_t l = strlen(tc->note);
    gpx__exec_fmt(tc->note + l, sizeof tc->note - l, "%s%s", l > 0 ? "; " : "", text);
}

/* Denies the plan's device files through a v1 devices cgroup. */
static int apply_v1(const char *dir, const gpx__dev_plan *plan, char *why, size_t len) {
    for (int i = 0; i < plan->ndeny; i++) {
        char rule[64];
        gpx__exec_fmt(rule, sizeof rule, "c %d:%d rwm", plan->deny[i].major, plan->deny[i].minor);
        int rc = gpx__cg_write(dir, "devices.deny", rule);
        if (rc < 0) {
            gpx__exec_fmt(why, len, "cannot write '%s' to %.150s/devices.deny: %s", rule, dir,
                          gp_strerror(rc));
            return rc;
        }
    }
    return 0;
}

int gpx__dev_apply(const gpx__devices *dv, const char *name, const gpx__dev_plan *plan,
                   gpx__task_cg *tc, char *why, size_t whylen) {
    char text[256];
    why[0] = '\0';
    int first_new = tc->ndirs, rc = 0;
    int want1 = dv->mode == GPX__DEV_V1 && plan->ndeny > 0;
    int want2 = (dv->mode == GPX__DEV_V2 && plan->ndeny > 0) || plan->nlimits > 0;
    if (want1) {
        int i = task_dir(tc, dv->v1_parent, name, why, whylen);
        rc = i < 0 ? -1 : apply_v1(tc->dirs[i], plan, why, whylen);
    }
    if (rc == 0 && want2) {
        int i = task_dir(tc, dv->v2_parent, name, why, whylen);
        rc = i < 0 ? -1 : 0;
        if (rc == 0 && dv->mode == GPX__DEV_V2 && plan->ndeny > 0)
            rc = attach_program(tc->dirs[i], plan, why, whylen);
        for (int l = 0; rc == 0 && l < plan->nlimits; l++) {
            const char *region = dv->dmem.regions[plan->limits[l].region].name;
            if ((rc = gpx__dmem_limit(tc->dirs[i], region, plan->limits[l].bytes)) < 0) {
                gpx__exec_fmt(why, whylen, "cannot set dmem.max of %.100s: %s", region,
                              gp_strerror(rc));
            }
        }
    }
    if (rc < 0) {
        /* The directories made here hold no process yet. */
        for (int i = first_new; i < tc->ndirs; i++)
            rmdir(tc->dirs[i]);
        tc->ndirs = first_new;
        return -1;
    }
    if (plan->ndeny > 0 && dv->mode != GPX__DEV_NONE) {
        gpx__exec_fmt(text, sizeof text, "the device files of %d GPU(s) not given denied (%s)",
                      plan->ndeny, dv->mode == GPX__DEV_V1 ? "devices cgroup v1" : "BPF, cgroup2");
        note_add(tc, text);
    }
    if (plan->nlimits > 0) {
        gpx__exec_fmt(text, sizeof text, "dmem.max set for %d GPU region(s)", plan->nlimits);
        note_add(tc, text);
    }
    return 0;
}

/* ======================================================================== */
/* A paused task moved to other GPUs                                         */
/* ======================================================================== */

/* The ids of the programs attached to the cgroup2 directory fd (at most
 * max). Their number, or a system code (gp_syserr). */
static int attached_programs(int cfd, uint32_t *ids, uint32_t max) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.query.target_fd = (uint32_t)cfd;
    attr.query.attach_type = BPF_CGROUP_DEVICE;
    attr.query.prog_ids = (uint64_t)(uintptr_t)ids;
    attr.query.prog_cnt = max;
    if (sys_bpf(BPF_PROG_QUERY, &attr) < 0)
        return gp_syserr(errno);
    return (int)(attr.query.prog_cnt < max ? attr.query.prog_cnt : max);
}

/* A descriptor of the program whose id is id, or -1 (gone meanwhile). */
static int program_fd(uint32_t id) {
    union bpf_attr get;
    memset(&get, 0, sizeof get);
    get.prog_id = id;
    return sys_bpf(BPF_PROG_GET_FD_BY_ID, &get);
}

/* Puts the program of plan in place of the device programs attached to the
 * cgroup2 directory dir: the first one is replaced atomically
 * (BPF_F_REPLACE: the directory is never without a program), any others
 * are detached; with no program there, it is attached. A plan that denies
 * nothing leaves no program. 0 or a system code with why set. */
static int replace_program(const char *dir, const gpx__dev_plan *plan, char *why, size_t len) {
    int cfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cfd < 0) {
        int rc = gp_syserr(errno);
        gpx__exec_fmt(why, len, "cannot open %.150s: %s", dir, gp_strerror(rc));
        return rc;
    }
    uint32_t ids[8];
    int n = attached_programs(cfd, ids, 8), rc = 0, first = 0;
    if (n < 0) {
        gpx__exec_fmt(why, len, "bpf(BPF_PROG_QUERY) of %.150s: %s", dir, gp_strerror(n));
        rc = n;
    } else if (plan->ndeny > 0) {
        int pfd = load_program(plan, why, len);
        int old = n > 0 ? program_fd(ids[0]) : -1;
        rc = pfd < 0 ? pfd : attach_fd(cfd, pfd, old, dir, why, len);
        first = old >= 0;
        if (old >= 0)
            close(old);
        if (pfd >= 0)
            close(pfd);
    }
    for (int i = first; rc == 0 && i < n; i++) {
        int pfd = program_fd(ids[i]);
        if (pfd < 0)
            continue;
        union bpf_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.target_fd = (uint32_t)cfd;
        attr.attach_bpf_fd = (uint32_t)pfd;
        attr.attach_type = BPF_CGROUP_DEVICE;
        if (sys_bpf(BPF_PROG_DETACH, &attr) < 0 && errno != ENOENT) {
            rc = gp_syserr(errno);
            gpx__exec_fmt(why, len, "bpf(BPF_PROG_DETACH) from %.150s: %s", dir, gp_strerror(rc));
        }
        close(pfd);
    }
    close(cfd);
    return rc;
}

/* 1 if plan denies dev. */
static int denied(const gpx__dev_plan *plan, const gpx__gpu_dev *dev) {
    for (int i = 0; i < plan->ndeny; i++)
        if (plan->deny[i].major == dev->major && plan->deny[i].minor == dev->minor)
            return 1;
    return 0;
}

/* The index in tc->dirs of parent/name, or -1 if the task has no such
 * directory. */
static int has_dir(const gpx__task_cg *tc, const char *parent, const char *name) {
    char dir[PATH_MAX];
    gpx__exec_fmt(dir, sizeof dir, "%s/%s", parent, name);
    for (int i = 0; i < tc->ndirs; i++)
        if (parent[0] != '\0' && strcmp(tc->dirs[i], dir) == 0)
            return i;
    return -1;
}

int gpx__dev_rebind(const gpx__devices *dv, const char *name, const gpx__gpu_dev *devs, int ngpus,
                    const gpx__dev_plan *plan, const gpx__task_cg *tc, char *why, size_t whylen) {
    why[0] = '\0';
    int rc = 0;
    if (dv->mode == GPX__DEV_V1) {
        int i = has_dir(tc, dv->v1_parent, name);
        if (i < 0 && plan->ndeny > 0) {
            gpx__exec_fmt(why, whylen, "the task has no devices cgroup under %.150s",
                          dv->v1_parent);
            return -1;
        }
        /* The instance's cgroup allows every device, so an allow line
         * removes the task's exception and a deny line adds one. */
        for (int g = 0; i >= 0 && rc == 0 && g < ngpus && g < GP_MAX_GPUS_PER_NODE; g++) {
            if (devs[g].major < 0)
                continue;
            char rule[64];
            const char *file = denied(plan, &devs[g]) ? "devices.deny" : "devices.allow";
            gpx__exec_fmt(rule, sizeof rule, "c %d:%d rwm", devs[g].major, devs[g].minor);
            if ((rc = gpx__cg_write(tc->dirs[i], file, rule)) < 0)
                gpx__exec_fmt(why, whylen, "cannot write '%s' to %.150s/%s: %s", rule, tc->dirs[i],
                              file, gp_strerror(rc));
        }
    }
    int i2 = dv->v2_parent[0] != '\0' ? has_dir(tc, dv->v2_parent, name) : -1;
    if (rc == 0 && dv->mode == GPX__DEV_V2) {
        if (i2 < 0 && plan->ndeny > 0) {
            gpx__exec_fmt(why, whylen, "the task has no cgroup2 directory under %.150s",
                          dv->v2_parent);
            return -1;
        }
        if (i2 >= 0)
            rc = replace_program(tc->dirs[i2], plan, why, whylen);
    }
    /* dmem: every region of the node's GPUs gets the plan's limit, or none
     * ("max") where the plan sets none. */
    for (int g = 0; rc == 0 && dv->dmem_on && i2 >= 0 && g < ngpus && g < GP_MAX_GPUS_PER_NODE;
         g++) {
        int r = gpx__dmem_region(&dv->dmem, devs[g].bus);
        if (r < 0)
            continue;
        int64_t bytes = -1;
        for (int l = 0; l < plan->nlimits; l++)
            if (plan->limits[l].region == r)
                bytes = plan->limits[l].bytes;
        const char *region = dv->dmem.regions[r].name;
        char line[192];
        if (bytes >= 0)
            gpx__exec_fmt(line, sizeof line, "%s %" PRId64, region, bytes);
        else
            gpx__exec_fmt(line, sizeof line, "%s max", region);
        if ((rc = gpx__cg_write(tc->dirs[i2], "dmem.max", line)) < 0)
            gpx__exec_fmt(why, whylen, "cannot set dmem.max of %.100s: %s", region,
                          gp_strerror(rc));
    }
    return rc < 0 ? -1 : 0;
}
