/*
 * proc.c — the local executor's processes: the supervisor that runs each
 * task, and what the executor reads back about it from /proc and from the
 * task's state directory.
 *
 * The process tree of one task:
 *
 *     daemon ── fork ─► intermediate ── fork ─► supervisor ── fork ─► task
 *                       (exits at once)         (setsid,               (own process
 *                                                subreaper)             group, cgroup)
 *
 * The intermediate exits at once and the daemon reaps it, so the supervisor
 * is never the daemon's child: the daemon may die, be killed with SIGKILL or
 * restart, and neither supervisor nor task notices. The supervisor leads a
 * session of its own and puts the task in a process group of its own, so
 * that stop() can kill the task's whole group while the supervisor survives
 * to record how the task ended: it waits for the task, kills what the task
 * left behind (its group, its cgroup, orphans reparented to the supervisor,
 * which is a child subreaper), and writes the exit file atomically. It keeps
 * the task's start file open, and so locked, while it lives: a daemon
 * restarted before the supervisor wrote its handle waits for it rather than
 * start the task again (local.c, launched_before).
 *
 * The daemon may have threads (its HTTP server), and after fork() in a
 * threaded process only async-signal-safe functions are safe. So the daemon
 * prepares everything before it forks (paths, argv, environment, the log
 * file, the cgroups), and the forked processes use system calls and the small
 * gpx__sa_* string helpers below, never malloc or stdio.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/files.h"
#include "common/gp_error.h"
#include "executors/local/local.h"
#include "executors/registry.h"
#include "interpose/ledger.h"

/* What the supervisor tells the daemon through the report pipe. */
typedef struct report {
    int32_t stage;
    int32_t start_errno;
    int32_t spid, tpid;
    uint64_t sstart, tstart;
} report;

/* What the task tells the supervisor through its close-on-exec pipe if it
 * fails before exec; nothing (EOF) means the exec succeeded. */
typedef struct start_failure {
    int32_t stage;
    int32_t start_errno;
} start_failure;

static const char *const stage_names[GPX__STAGE_COUNT] = {
    [GPX__STAGE_NONE] = "started",    [GPX__STAGE_SUPERVISOR] = "supervisor",
    [GPX__STAGE_STDIO] = "stdio",     [GPX__STAGE_CHDIR] = "chdir",
    [GPX__STAGE_EXEC] = "exec",       [GPX__STAGE_USER] = "user",
    [GPX__STAGE_SESSION] = "session", [GPX__STAGE_TASK] = "task",
};

const char *gpx__stage_name(int stage) {
    return stage >= 0 && stage < GPX__STAGE_COUNT ? stage_names[stage] : "unknown";
}

/* ======================================================================== */
/* Async-signal-safe helpers                                                 */
/* ======================================================================== */

/* Async-signal-safe string building: appends s (or the decimal v) at *pos,
 * never past end-1, and keeps the result NUL-terminated. */
void gpx__sa_str(char **pos, char *end, const char *s) {
    char *p = *pos;
    while (*s != '\0' && p < end - 1)
        *p++ = *s++;
    *p = '\0';
    *pos = p;
}

void gpx__sa_u64(char **pos, char *end, uint64_t v) {
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    char digits[24];
    for (size_t i = 0; i < n; i++)
        digits[i] = tmp[n - 1 - i];
    digits[n] = '\0';
    gpx__sa_str(pos, end, digits);
}

/* Appends a possibly negative decimal. */
static void sa_i64(char **pos, char *end, int64_t v) {
    if (v < 0) {
        gpx__sa_str(pos, end, "-");
        gpx__sa_u64(pos, end, (uint64_t)0 - (uint64_t)v);
    } else {
        gpx__sa_u64(pos, end, (uint64_t)v);
    }
}

/* Parses an unsigned decimal at *s, advancing it; -1 if there is none. */
static int64_t parse_u64(const char **s) {
    const char *p = *s;
    if (*p < '0' || *p > '9')
        return -1;
    uint64_t v = 0;
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (uint64_t)(*p++ - '0');
    *s = p;
    return (int64_t)(v & INT64_MAX);
}

static void sa_path(char *buf, size_t cap, const char *dir, const char *name) {
    char *p = buf;
    gpx__sa_str(&p, buf + cap, dir);
    gpx__sa_str(&p, buf + cap, "/");
    gpx__sa_str(&p, buf + cap, name);
}

ssize_t gpx__read_small(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return gp_syserr(errno);
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = gp_read_some(fd, buf + n, cap - 1 - n);
        if (r < 0) {
            int e = errno;
            close(fd);
            return gp_syserr(e);
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    close(fd);
    return (ssize_t)n;
}

/* Writes <dir>/<name> atomically: a temporary file, fsync, rename. Readers
 * see either no file or the whole of it. */
static int write_file_atomic(const char *dir, const char *name, const char *data) {
    char tmp[PATH_MAX], path[PATH_MAX], tname[64];
    char *p = tname;
    gpx__sa_str(&p, tname + sizeof tname, name);
    gpx__sa_str(&p, tname + sizeof tname, ".tmp");
    sa_path(tmp, sizeof tmp, dir, tname);
    sa_path(path, sizeof path, dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    int rc = gp_write_all(fd, data, strlen(data));
    if (rc == 0)
        rc = fsync(fd);
    close(fd);
    if (rc == 0)
        rc = rename(tmp, path);
    return rc;
}

/*
 * Reads /proc/<pid>/stat: start time (clock ticks since boot), state letter,
 * process group and parent. Returns 0, a system code (gp_syserr(ENOENT): no
 * such process) or GP_ECORRUPT.
 * Async-signal-safe; any out pointer may be NULL.
 */
static int proc_stat(pid_t pid, uint64_t *start, char *state, pid_t *pgrp, pid_t *ppid) {
    char path[64], buf[1024];
    char *p = path;
    gpx__sa_str(&p, path + sizeof path, "/proc/");
    gpx__sa_u64(&p, path + sizeof path, (uint64_t)pid);
    gpx__sa_str(&p, path + sizeof path, "/stat");
    ssize_t n = gpx__read_small(path, buf, sizeof buf);
    if (n < 0)
        return (int)n;
    /* The command name may hold spaces and parentheses: fields start after
     * the last ')'. Then: state(3) ppid(4) pgrp(5) ... starttime(22). */
    const char *s = NULL;
    for (ssize_t i = n - 1; i >= 0; i--) {
        if (buf[i] == ')') {
            s = buf + i + 1;
            break;
        }
    }
    if (s == NULL || s[0] != ' ' || s[1] == '\0')
        return GP_ECORRUPT;
    if (state != NULL)
        *state = s[1];
    s += 2;
    for (int field = 4; field <= 22; field++) {
        while (*s == ' ')
            s++;
        const char *q = s;
        if (*q == '-')
            q++;
        int64_t v = parse_u64(&q);
        if (v < 0)
            return GP_ECORRUPT;
        if (field == 4 && ppid != NULL)
            *ppid = (pid_t)v;
        if (field == 5 && pgrp != NULL)
            *pgrp = (pid_t)v;
        if (field == 22 && start != NULL)
            *start = (uint64_t)v;
        s = q;
    }
    return 0;
}

int gpx__proc_present(pid_t pid, uint64_t start) {
    uint64_t st;
    return pid > 0 && proc_stat(pid, &st, NULL, NULL, NULL) == 0 && st == start;
}

int gpx__proc_alive(pid_t pid, uint64_t start) {
    uint64_t st;
    char state = '?';
    if (pid <= 0 || proc_stat(pid, &st, &state, NULL, NULL) != 0)
        return 0;
    return st == start && state != 'Z' && state != 'X';
}

/* ======================================================================== */
/* The supervisor and the task (forked processes: system calls only)         */
/* ======================================================================== */

/* Closes descriptors lo..hi, with close_range(2) where the kernel has it. */
static void close_span(unsigned lo, unsigned hi) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, lo, hi, 0) == 0)
        return;
#endif
    unsigned max = 65536;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < max)
        max = (unsigned)rl.rlim_cur;
    for (unsigned fd = lo; fd <= hi && fd < max; fd++)
        close((int)fd);
}

/* Closes every descriptor from 3 up except the (at most 4) in keep: the
 * daemon's sockets and files must not live on in its tasks, or a listening
 * socket would outlive a restarted daemon. */
static void close_others(const int *keep, int nkeep) {
    int k[4];
    int n = 0;
    for (int i = 0; i < nkeep && n < 4; i++) {
        int j = n++;
        while (j > 0 && k[j - 1] > keep[i]) {
            k[j] = k[j - 1];
            j--;
        }
        k[j] = keep[i];
    }
    unsigned lo = 3;
    for (int i = 0; i < n; i++) {
        if (k[i] < 0 || (unsigned)k[i] < lo)
            continue;
        if ((unsigned)k[i] > lo)
            close_span(lo, (unsigned)k[i] - 1);
        lo = (unsigned)k[i] + 1;
    }
    close_span(lo, ~0U);
}

/* Every signal back to its default action and unblocked: the daemon's
 * handlers and ignored signals (SIGPIPE, SIGCHLD) must not be inherited. */
static void reset_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Writes a decimal pid into each of the task's cgroup.procs files. A failure
 * is not fatal: the task runs without limits and says so in its log. */
static void join_cgroups(const gpx__task_cg *cg) {
    for (int i = 0; cg != NULL && i < cg->ndirs; i++) {
        char path[PATH_MAX], pid[24];
        sa_path(path, sizeof path, cg->dirs[i], "cgroup.procs");
        char *p = pid;
        gpx__sa_u64(&p, pid + sizeof pid, (uint64_t)getpid());
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || gp_write_all(fd, pid, strlen(pid)) < 0) {
            static const char msg[] = "gpupool: warning: could not join the task's cgroup; "
                                      "it runs without CPU and memory limits\n";
            (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
        }
        if (fd >= 0)
            close(fd);
    }
}

/* Becomes the task's Unix user for good: supplementary groups, group, user
 * (in that order: the first two need the privileges the last gives up).
 * 0, or -1 with errno set. */
static int become(const gpx__exec_user *u) {
    if (u == NULL || !u->switch_to)
        return 0;
    if (setgroups((size_t)u->ngroups, u->groups) < 0 || setgid(u->gid) < 0 || setuid(u->uid) < 0)
        return -1;
    if (getuid() != u->uid || geteuid() != u->uid || getegid() != u->gid) {
        errno = EPERM;
        return -1;
    }
    return 0;
}

/* Gives the task a mount namespace of its own in which preload is bound
 * (read-only) over /etc/ld.so.preload: the dynamic linker then loads the
 * interposer into every program the task runs, whether or not LD_PRELOAD
 * survives in its environment; and in which the ledger the executor made is
 * bound over GP_LEDGER_MOUNT, the only place the task can reach it. Needs
 * root (done before the task becomes its user); where the kernel or a
 * container refuses, the task runs without these layers (the executor asks
 * gpx__private_mounts() before it makes a ledger; should the bind still
 * fail, the interposer finds no ledger and refuses allocations). */
static void bind_files(const char *preload, const char *ledger) {
    if ((preload == NULL && ledger == NULL) || unshare(CLONE_NEWNS) < 0)
        return;
    /* Nothing mounted here may reach the host's namespace. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return;
    if (preload != NULL && mount(preload, "/etc/ld.so.preload", NULL, MS_BIND, NULL) == 0)
        mount(NULL, "/etc/ld.so.preload", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL);
    if (ledger != NULL)
        mount(ledger, GP_LEDGER_MOUNT, NULL, MS_BIND, NULL);
}

/* The filter of one architecture: its calls that make or join a user
 * namespace are refused (clone3, whose flags a filter cannot read, with
 * ENOSYS, so that libc falls back to clone); x32 calls are refused too. */
#define USERNS_FILTER(audit_arch, nr_clone, nr_unshare, nr_setns, nr_clone3)                       \
    {                                                                                              \
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),                   \
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (audit_arch), 0, 10),                              \
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),                 \
            BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x40000000u, 7, 0),                               \
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr_clone3), 6, 0),                                \
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr_setns), 4, 0),                                 \
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr_unshare), 1, 0),                               \
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr_clone), 0, 4),                                 \
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),            \
            BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 2),                             \
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),                                  \
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),                                 \
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),                                          \
    }

/* Keeps the task out of user namespaces of its own (and of others'): inside
 * one, an unprivileged process may mount over /etc/ld.so.preload, the slice
 * files or the ledger's mount point, files it made then looking like root's,
 * and so undo every layer its executor set up. Needs no_new_privs (set just
 * before). Only on x86-64 (with its i386 calls); elsewhere, and where the
 * kernel has no seccomp, the task runs without this layer. */
static void refuse_user_namespaces(void) {
#if defined(__x86_64__)
    static struct sock_filter native[] =
        USERNS_FILTER(AUDIT_ARCH_X86_64, __NR_clone, __NR_unshare, __NR_setns, 435);
    static struct sock_filter i386[] = USERNS_FILTER(AUDIT_ARCH_I386, 120, 310, 346, 435);
    struct sock_fprog a = {sizeof native / sizeof native[0], native};
    struct sock_fprog b = {sizeof i386 / sizeof i386[0], i386};
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &a, 0, 0);
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &b, 0, 0);
#endif
}

int gpx__private_mounts(void) {
    static int known = -1;
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (k >= 0)
        return k;
    pid_t pid = geteuid() == 0 ? fork() : -1;
    if (pid == 0) {
        _exit(unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0
                  ? 0
                  : 1);
    }
    int st = 0;
    k = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    return k;
}

/* mkdir -p of path with system calls only; 0 or -1 with errno set. */
static int sa_mkdirs(const char *path) {
    char buf[PATH_MAX];
    char *p = buf;
    gpx__sa_str(&p, buf + sizeof buf, path);
    for (char *c = buf + 1;; c++) {
        if (*c == '/' || *c == '\0') {
            char keep = *c;
            *c = '\0';
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -1;
            *c = keep;
            if (keep == '\0')
                return 0;
        }
    }
}

/* Makes tty the controlling terminal and the standard streams of this
 * process (which leads a new session); 0 or -1. */
static int take_terminal(int tty) {
    if (ioctl(tty, TIOCSCTTY, 0) < 0)
        return -1;
    for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
        if (tty != fd && dup2(tty, fd) < 0)
            return -1;
    if (tty > STDERR_FILENO)
        close(tty);
    return 0;
}

static void exec_path(const char *prog, char *const *argv, char *const *envp);

/* The task's side of the fork: never returns. tty is the terminal's side
 * of an interactive task (-1: none); out, otherwise, the pipe its standard
 * output and error go to. */
static void run_task(const gpx__spawn *s, int errfd, int tty, int out) {
    start_failure f = {GPX__STAGE_NONE, 0};
    signal(SIGPIPE, SIG_DFL); /* the supervisor ignores it; the task must not */
    /* A session of its own: its process group is its pid, and nothing it
     * does reaches the supervisor's session. */
    setsid();
    if (tty >= 0) {
        if (take_terminal(tty) < 0)
            f.stage = GPX__STAGE_STDIO;
    } else if (out != STDOUT_FILENO && dup2(out, STDOUT_FILENO) < 0)
        f.stage = GPX__STAGE_STDIO;
    else if (out != STDERR_FILENO && dup2(out, STDERR_FILENO) < 0)
        f.stage = GPX__STAGE_STDIO;
    if (f.stage == GPX__STAGE_NONE && tty < 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null < 0 || (null != STDIN_FILENO && dup2(null, STDIN_FILENO) < 0))
            f.stage = GPX__STAGE_STDIO;
    }
    if (f.stage == GPX__STAGE_NONE) {
        /* The cgroups are joined while we are still root: a task's user
         * can neither write them nor leave them. */
        join_cgroups(s->cg);
        int keep[1] = {errfd};
        close_others(keep, 1);
        bind_files(s->preload, s->ledger);
        if (become(s->user) < 0) {
            f.stage = GPX__STAGE_USER;
        } else if ((s->make_workdir && sa_mkdirs(s->workdir) < 0) || chdir(s->workdir) < 0) {
            /* Created and entered as the task's user: a workdir it may not
             * use is refused by the kernel, not by a check of ours. */
            f.stage = GPX__STAGE_CHDIR;
        } else {
            umask(022);
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
            refuse_user_namespaces();
            exec_path(s->path, s->argv, s->envp); /* PATH searched as the user */
            f.stage = GPX__STAGE_EXEC;
        }
    }
    f.start_errno = errno;
    (void)gp_write_all(errfd, &f, sizeof f);
    _exit(127);
}

/* Looks prog up in the PATH of envp (as execvpe does, without malloc) and
 * executes the first that runs; returns only if none did (errno set). */
static void exec_path(const char *prog, char *const *argv, char *const *envp) {
    int has_slash = 0;
    for (const char *c = prog; *c != '\0'; c++)
        has_slash |= *c == '/';
    if (has_slash) {
        execve(prog, argv, envp);
        return;
    }
    const char *path = GPX__TASK_PATH;
    for (int i = 0; envp != NULL && envp[i] != NULL; i++)
        if (strncmp(envp[i], "PATH=", 5) == 0)
            path = envp[i] + 5;
    int err = ENOENT;
    for (const char *p = path;; p++) {
        const char *e = p;
        while (*e != '\0' && *e != ':')
            e++;
        char full[PATH_MAX];
        char *w = full;
        char *end = full + sizeof full;
        for (const char *c = p; c < e && w < end - 1; c++)
            *w++ = *c;
        *w = '\0';
        if (e == p)
            gpx__sa_str(&w, end, ".");
        gpx__sa_str(&w, end, "/");
        gpx__sa_str(&w, end, prog);
        execve(full, argv, envp);
        if (errno != ENOENT && errno != ENOTDIR)
            err = errno;
        if (*e == '\0')
            break;
        p = e;
    }
    errno = err;
}

void gpx__exec_in_task(const gpx__spawn *s, pid_t tpid, int in, int out, int err, int tty,
                       char *const *argv) {
    reset_signals();
    setsid();
    int ok = 0;
    if (tty) {
        ok = take_terminal(in) == 0;
    } else {
        ok = dup2(in, STDIN_FILENO) >= 0 && dup2(out, STDOUT_FILENO) >= 0 &&
             dup2(err, STDERR_FILENO) >= 0;
    }
    const char *why = "cannot set up its standard streams";
    if (ok) {
        /* Root still: the task's cgroups, then its mount namespace (where
         * its interposer and ledger are bound). */
        join_cgroups(s->cg);
        char ns[64];
        char *p = ns;
        gpx__sa_str(&p, ns + sizeof ns, "/proc/");
        gpx__sa_u64(&p, ns + sizeof ns, (uint64_t)tpid);
        gpx__sa_str(&p, ns + sizeof ns, "/ns/mnt");
        int fd = open(ns, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || setns(fd, CLONE_NEWNS) < 0) {
            ok = 0;
            why = "cannot enter the task's mount namespace";
        }
        if (fd >= 0)
            close(fd);
    }
    if (ok) {
        close_others(NULL, 0);
        if (become(s->user) < 0) {
            ok = 0;
            why = "cannot become the task's user";
        } else if (chdir(s->workdir) < 0 && chdir("/") < 0) {
            ok = 0;
            why = "cannot enter a working directory";
        }
    }
    if (ok) {
        umask(022);
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        refuse_user_namespaces();
        exec_path(argv[0], argv, s->envp);
        why = errno == ENOENT ? "no such program in the task's PATH" : "cannot execute it";
    }
    char msg[512];
    char *m = msg;
    gpx__sa_str(&m, msg + sizeof msg, "gpupool: exec: ");
    gpx__sa_str(&m, msg + sizeof msg, argv[0]);
    gpx__sa_str(&m, msg + sizeof msg, ": ");
    gpx__sa_str(&m, msg + sizeof msg, why);
    gpx__sa_str(&m, msg + sizeof msg, "\n");
    (void)gp_write_all(STDERR_FILENO, msg, strlen(msg));
    _exit(127);
}

/* Appends "key=value\n" to a buffer being built. */
static void sa_kv(char **pos, char *end, const char *key, int64_t v) {
    gpx__sa_str(pos, end, key);
    gpx__sa_str(pos, end, "=");
    sa_i64(pos, end, v);
    gpx__sa_str(pos, end, "\n");
}

static void write_exit(const char *dir, int code, int sig, int stage, int err_no) {
    char buf[256];
    char *p = buf;
    sa_kv(&p, buf + sizeof buf, "exit_code", code);
    sa_kv(&p, buf + sizeof buf, "term_signal", sig);
    if (stage != GPX__STAGE_NONE) {
        sa_kv(&p, buf + sizeof buf, "start_stage", stage);
        sa_kv(&p, buf + sizeof buf, "start_errno", err_no);
    }
    (void)write_file_atomic(dir, "exit", buf);
}

/* Sends sig to every pid listed in a file of decimal pids (a cgroup's procs,
 * a process's children). Returns how many were signalled. */
static int signal_listed(const char *file, int sig, pid_t skip_pgid) {
    char buf[16384];
    if (gpx__read_small(file, buf, sizeof buf) <= 0)
        return 0;
    int n = 0;
    const char *p = buf;
    while (*p != '\0') {
        int64_t v = parse_u64(&p);
        if (v < 0) {
            p++;
            continue;
        }
        pid_t pgrp = 0;
        if (skip_pgid > 0 && proc_stat((pid_t)v, NULL, NULL, &pgrp, NULL) == 0 && pgrp == skip_pgid)
            continue;
        if (v > 0 && kill((pid_t)v, sig) == 0)
            n++;
    }
    return n;
}

int gpx__cg_signal(const gpx__task_cg *tc, int sig, pid_t skip_pgid) {
    int n = 0;
    for (int i = 0; tc != NULL && i < tc->ndirs; i++) {
        char path[PATH_MAX];
        sa_path(path, sizeof path, tc->dirs[i], "cgroup.procs");
        n += signal_listed(path, sig, skip_pgid);
    }
    return n;
}

/* Sends SIGKILL to every child of this process (orphans of the task that
 * were reparented to us), found by a walk over /proc with getdents64, which
 * unlike readdir needs no malloc. */
static void kill_children(void) {
    pid_t self = getpid();
    int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[8192];
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name */
            unsigned short reclen;
            memcpy(&reclen, buf + off + 16, sizeof reclen);
            const char *name = buf + off + 19;
            int64_t pid = parse_u64(&name);
            pid_t ppid = 0;
            if (pid > 0 && *name == '\0' && proc_stat((pid_t)pid, NULL, NULL, NULL, &ppid) == 0 &&
                ppid == self)
                kill((pid_t)pid, SIGKILL);
            off += reclen;
        }
    }
    close(fd);
}

/* Kills everything the task left behind: its process group (the task's pid
 * is still a zombie, so the group id cannot have been reused), its cgroups,
 * and the orphans that were reparented to the supervisor. */
static void kill_leftovers(const gpx__spawn *s, pid_t tpid) {
    kill(-tpid, SIGKILL);
    for (int round = 0; round < 5 && gpx__cg_signal(s->cg, SIGKILL, 0) > 0; round++) {
    }
    kill_children();
}

/* Appends the line that closes an attempt in the task's log. */
static void log_footer(gpx__tasklog *log, int code, int sig) {
    char buf[128];
    char *p = buf;
    gpx__sa_str(&p, buf + sizeof buf, "==== gpupool: the task ended: ");
    if (sig != 0) {
        gpx__sa_str(&p, buf + sizeof buf, "killed by signal ");
        gpx__sa_u64(&p, buf + sizeof buf, (uint64_t)sig);
    } else {
        gpx__sa_str(&p, buf + sizeof buf, "exit code ");
        gpx__sa_u64(&p, buf + sizeof buf, (uint64_t)code);
    }
    gpx__sa_str(&p, buf + sizeof buf, " ====\n");
    gpx__tasklog_write(log, buf, strlen(buf));
}

/* Waits for the task, reaping adopted orphans on the way, and returns its
 * wait status in *code / *sig. The task is left a zombie (WNOWAIT) so that
 * its pid, which is its process group id, stays reserved until the caller
 * has killed the group. */
static void wait_task(pid_t tpid, int *code, int *sig) {
    *code = 0;
    *sig = 0;
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) < 0) {
            if (errno == EINTR)
                continue;
            *code = 255; /* cannot happen: the task is our child */
            return;
        }
        if (si.si_pid == tpid) {
            if (si.si_code == CLD_EXITED)
                *code = si.si_status;
            else
                *sig = si.si_status;
            return;
        }
        waitpid(si.si_pid, NULL, 0);
    }
}

/* The supervisor's buffer for the task's output on its way to the log. */
static char pump_buf[65536];

/* Copies the task's output from the pipe rd into the log until the task
 * tpid ends (reaping the task's orphans on the way, as wait_task does), and
 * fills *code or *sig as wait_task does. The pipe is read whatever the log
 * does with it (a full disk drops it), so that the task never waits on the
 * disk. */
static void pump_task(gpx__tasklog *log, int rd, pid_t tpid, int *code, int *sig) {
    int open_ = 1;
    *code = 0;
    *sig = 0;
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno != EINTR) {
            *code = 255; /* cannot happen: the task is our child */
            return;
        }
        if (si.si_pid == tpid) {
            if (si.si_code == CLD_EXITED)
                *code = si.si_status;
            else
                *sig = si.si_status;
            return;
        }
        if (si.si_pid > 0) {
            waitpid(si.si_pid, NULL, 0);
            continue;
        }
        if (!open_) {
            /* Every writer has closed the pipe: only the task's end is left. */
            wait_task(tpid, code, sig);
            return;
        }
        struct pollfd pf = {rd, POLLIN, 0};
        if (poll(&pf, 1, 200) <= 0)
            continue;
        ssize_t n = read(rd, pump_buf, sizeof pump_buf);
        if (n > 0)
            gpx__tasklog_write(log, pump_buf, (size_t)n);
        else if (n == 0 || (errno != EINTR && errno != EAGAIN))
            open_ = 0;
    }
}

/* What the task's processes wrote before they were killed: read until the
 * pipe is empty and quiet for 50 ms, or at its end. */
static void drain_output(gpx__tasklog *log, int rd) {
    for (int i = 0; i < 1 << 16; i++) {
        struct pollfd pf = {rd, POLLIN, 0};
        if (poll(&pf, 1, 50) <= 0)
            return;
        ssize_t n = read(rd, pump_buf, sizeof pump_buf);
        if (n <= 0)
            return;
        gpx__tasklog_write(log, pump_buf, (size_t)n);
    }
}

/* Reads fields 48 to 51 of /proc/self/stat: where the kernel keeps this
 * process's arguments and environment. 0, or -1 if it cannot tell. */
static int args_area(uintptr_t *arg_start, uintptr_t *arg_end, uintptr_t *env_start,
                     uintptr_t *env_end) {
    char buf[1024];
    ssize_t n = gpx__read_small("/proc/self/stat", buf, sizeof buf);
    const char *s = NULL;
    for (ssize_t i = n - 1; i >= 0; i--) {
        if (buf[i] == ')') {
            s = buf + i + 2;
            break;
        }
    }
    /* s is at field 3 (the state letter); fields 48-51 follow field 47. */
    uintptr_t v[4];
    for (int field = 3; s != NULL && field <= 51; field++) {
        while (*s == ' ')
            s++;
        const char *q = s;
        if (field == 3 || *q == '-')
            q++;
        int64_t x = field == 3 ? 0 : parse_u64(&q);
        if (x < 0)
            return -1;
        if (field >= 48)
            v[field - 48] = (uintptr_t)x;
        s = q;
    }
    if (s == NULL || v[0] == 0 || v[1] <= v[0])
        return -1;
    *arg_start = v[0];
    *arg_end = v[1];
    *env_start = v[2];
    *env_end = v[3];
    return 0;
}

/*
 * Makes `ps` show this process as title rather than as a copy of the daemon,
 * so that `pkill gpupoold` or a look at `ps` never mistakes one for the other:
 * the name (comm) and the command line. The command line is rewritten in
 * place, over the arguments and, where they follow them, the environment
 * strings, which the supervisor no longer needs (it runs the task with an
 * environment of its own); the kernel reads such a line up to its first NUL
 * when the last byte of the original arguments is no longer a NUL, which is
 * why the rest of the arguments is filled with spaces (setproctitle's rule).
 */
static void set_title(const char *title) {
    prctl(PR_SET_NAME, (unsigned long)"gpupool-superv", 0, 0, 0);
    uintptr_t as, ae, es, ee;
    if (title == NULL || args_area(&as, &ae, &es, &ee) < 0)
        return;
    uintptr_t end = es == ae && ee > es ? ee : ae;
    char *area = (char *)as;
    size_t cap = (size_t)(end - as);
    size_t n = strlen(title);
    if (n > cap - 1)
        n = cap - 1;
    memcpy(area, title, n);
    area[n] = '\0';
    for (size_t i = n + 1; i < (size_t)(ae - as); i++)
        area[i] = ' ';
}

/* The supervisor: never returns. rep is the report pipe to the daemon. */
static void supervise(const gpx__spawn *s, int rep) {
    report r = {GPX__STAGE_NONE, 0, (int32_t)getpid(), 0, 0, 0};
    reset_signals();
    set_title(s->title);
    /* The daemon may die while we report to it: a write to its closed pipe
     * must fail with EPIPE, not kill the supervisor and lose the task's exit
     * status (the daemon would then see the task as lost and run it again). */
    signal(SIGPIPE, SIG_IGN);
    int keep[3] = {rep, s->log_fd, s->start_fd};
    close_others(keep, 3);
    /* Let go of the daemon's standard streams too: a pipeline reading the
     * daemon's output must see its end when the daemon ends. */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0 && rep > STDERR_FILENO && s->log_fd > STDERR_FILENO) {
        for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
            if (fd != null)
                dup2(null, fd);
    }
    if (null > STDERR_FILENO)
        close(null);
    if (setsid() < 0) {
        r.stage = GPX__STAGE_TASK;
        r.start_errno = errno;
    }
    /* Orphans of the task become our children, so that we can reap and kill
     * them when it ends instead of leaving them to init. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    proc_stat(getpid(), &r.sstart, NULL, NULL, NULL);

    if (gpx__spawn_step_hook != NULL)
        gpx__spawn_step_hook(2);
    char handle[GP_HANDLE_MAX + 2];
    char *p = handle;
    char *end = handle + sizeof handle;
    gpx__sa_str(&p, end, "local:");
    gpx__sa_str(&p, end, s->key);
    gpx__sa_str(&p, end, ":");
    gpx__sa_u64(&p, end, (uint64_t)r.spid);
    gpx__sa_str(&p, end, ":");
    gpx__sa_u64(&p, end, r.sstart);
    gpx__sa_str(&p, end, "\n");
    if (r.stage == GPX__STAGE_NONE && write_file_atomic(s->dir, "handle", handle) < 0) {
        r.stage = GPX__STAGE_TASK;
        r.start_errno = errno;
    }
    /* Abandoned while held back before the handle (its daemon killed after
     * the fork, its workload deleted meanwhile): no task. Checked after the
     * handle is written, so that an abandon that wrote its mark too late for
     * this check finds the handle and ends the task itself (local.c). */
    char mark[PATH_MAX];
    p = mark;
    gpx__sa_str(&p, mark + sizeof mark, s->dir);
    gpx__sa_str(&p, mark + sizeof mark, "/" GPX__ABANDONED_FILE);
    if (r.stage == GPX__STAGE_NONE && access(mark, F_OK) == 0) {
        r.stage = GPX__STAGE_TASK;
        r.start_errno = ECANCELED;
    }

    int errp[2] = {-1, -1};
    int outp[2] = {-1, -1}; /* the task's output, without a terminal */
    pid_t tpid = -1;
    int master = -1, slave = -1, lfd = -1;
    if (r.stage == GPX__STAGE_NONE && s->tty && gpx__sess_prepare(s, &master, &slave, &lfd) < 0) {
        r.stage = GPX__STAGE_SESSION;
        r.start_errno = errno;
    }
    if (r.stage == GPX__STAGE_NONE && !s->tty && pipe2(outp, O_CLOEXEC) < 0) {
        r.stage = GPX__STAGE_TASK;
        r.start_errno = errno;
    }
    if (r.stage == GPX__STAGE_NONE && pipe2(errp, O_CLOEXEC) < 0) {
        r.stage = GPX__STAGE_TASK;
        r.start_errno = errno;
    }
    if (r.stage == GPX__STAGE_NONE) {
        tpid = fork();
        if (tpid == 0) {
            close(errp[0]);
            close(rep);
            if (master >= 0)
                close(master);
            if (lfd >= 0)
                close(lfd);
            if (outp[0] >= 0)
                close(outp[0]);
            run_task(s, errp[1], slave, outp[1]);
        }
        if (tpid < 0) {
            r.stage = GPX__STAGE_TASK;
            r.start_errno = errno;
        }
    }
    if (slave >= 0)
        close(slave);
    if (outp[1] >= 0)
        close(outp[1]);
    if (tpid > 0) {
        /* The task makes its own session and group (setsid); the group
         * exists before the task reports, by exec or by failing. */
        close(errp[1]);
        start_failure f;
        ssize_t n;
        do {
            n = read(errp[0], &f, sizeof f);
        } while (n < 0 && errno == EINTR);
        close(errp[0]);
        if (n == (ssize_t)sizeof f) {
            r.stage = f.stage;
            r.start_errno = f.start_errno;
            waitpid(tpid, NULL, 0);
        } else {
            r.tpid = tpid;
            proc_stat(tpid, &r.tstart, NULL, NULL, NULL);
            char task[96];
            p = task;
            sa_kv(&p, task + sizeof task, "pid", tpid);
            sa_kv(&p, task + sizeof task, "start", (int64_t)r.tstart);
            write_file_atomic(s->dir, "task", task);
        }
    }
    if (r.stage != GPX__STAGE_NONE)
        write_exit(s->dir, 127, 0, r.stage, r.start_errno);
    (void)gp_write_all(rep, &r, sizeof r);
    close(rep);
    if (r.stage != GPX__STAGE_NONE)
        _exit(0);

    int code, sig;
    gpx__tasklog log;
    gpx__tasklog_init(&log, s->log_fd, s->log_path != NULL ? s->log_path : "", s->log_max);
    /* An interactive task's supervisor serves its sessions meanwhile; any
     * other copies the task's output into its log. */
    if (master >= 0 && gpx__sess_serve(s, tpid, master, lfd, &log, &code, &sig) == 0)
        ;
    else if (outp[0] >= 0)
        pump_task(&log, outp[0], tpid, &code, &sig);
    else
        wait_task(tpid, &code, &sig);
    kill_leftovers(s, tpid);
    if (outp[0] >= 0) {
        drain_output(&log, outp[0]);
        close(outp[0]);
    }
    waitpid(tpid, NULL, 0);
    log_footer(&log, code, sig);
    write_exit(s->dir, code, sig, GPX__STAGE_NONE, 0);
    /* Reap what the kills above ended; give up after a second rather than
     * wait on a process stuck in the kernel. */
    for (int i = 0; i < 100; i++) {
        pid_t w = waitpid(-1, NULL, WNOHANG);
        if (w < 0 && errno == ECHILD)
            break;
        if (w <= 0) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    _exit(0);
}

/* ======================================================================== */
/* The daemon's side                                                         */
/* ======================================================================== */

void (*gpx__spawn_step_hook)(int step);

int gpx__spawn_task(const gpx__spawn *s, gpx__spawned *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    int rep[2];
    if (pipe2(rep, O_CLOEXEC) < 0) {
        gp_errf(err, errlen, "launch: cannot create a pipe: %s", strerror(errno));
        return GP_ESYS;
    }
    pid_t mid = fork();
    if (mid < 0) {
        int e = errno;
        close(rep[0]);
        close(rep[1]);
        gp_errf(err, errlen, "launch: cannot fork: %s", strerror(e));
        return gpx__spawn_transient(e) ? GP_EAGAIN : GP_ESYS;
    }
    if (mid == 0) {
        close(rep[0]);
        pid_t sup = fork();
        if (sup == 0)
            supervise(s, rep[1]);
        if (sup < 0) {
            report r = {GPX__STAGE_SUPERVISOR, errno, 0, 0, 0, 0};
            (void)gp_write_all(rep[1], &r, sizeof r);
        }
        _exit(0);
    }
    close(rep[1]);
    if (gpx__spawn_step_hook != NULL)
        gpx__spawn_step_hook(1);
    /* The daemon may ignore SIGCHLD, in which case the kernel reaps the
     * intermediate itself and waitpid reports ECHILD: that is fine. */
    while (waitpid(mid, NULL, 0) < 0 && errno == EINTR) {
    }
    report r;
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t n = read(rep[0], (char *)&r + got, sizeof r - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(rep[0]);
    if (got != sizeof r) {
        gp_errf(err, errlen, "launch: the task's supervisor ended before it reported");
        return GP_EIO;
    }
    out->spid = r.spid;
    out->sstart = r.sstart;
    out->tpid = r.tpid;
    out->tstart = r.tstart;
    out->stage = r.stage;
    out->start_errno = r.start_errno;
    return 0;
}

/* ======================================================================== */
/* Reading a task's state directory                                          */
/* ======================================================================== */

/* Finds "key=" at the start of a line of text and parses its integer. */
static int kv_get(const char *text, const char *key, int64_t *out) {
    size_t kl = strlen(key);
    const char *p = text;
    while (*p != '\0') {
        if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
            const char *q = p + kl + 1;
            int neg = *q == '-';
            q += neg;
            int64_t v = parse_u64(&q);
            if (v < 0 || (*q != '\n' && *q != '\0'))
                return GP_ECORRUPT;
            *out = neg ? -v : v;
            return 0;
        }
        const char *nl = strchr(p, '\n');
        if (nl == NULL)
            break;
        p = nl + 1;
    }
    return GP_ENOENT;
}

int gpx__exit_read(const char *dir, gpx__exit *ex) {
    memset(ex, 0, sizeof *ex);
    char path[PATH_MAX], buf[512];
    sa_path(path, sizeof path, dir, "exit");
    ssize_t n = gpx__read_small(path, buf, sizeof buf);
    if (n == gp_syserr(ENOENT))
        return 0;
    int64_t code = 0, sig = 0, stage = 0, eno = 0;
    if (n < 0 || kv_get(buf, "exit_code", &code) < 0 || kv_get(buf, "term_signal", &sig) < 0)
        return GP_ECORRUPT;
    if (kv_get(buf, "start_stage", &stage) == GP_ECORRUPT ||
        kv_get(buf, "start_errno", &eno) == GP_ECORRUPT)
        return GP_ECORRUPT;
    ex->present = 1;
    ex->exit_code = (int)code;
    ex->term_signal = (int)sig;
    ex->start_stage = (int)stage;
    ex->start_errno = (int)eno;
    return 0;
}

int gpx__task_read(const char *dir, pid_t *pid, uint64_t *start) {
    char path[PATH_MAX], buf[256];
    sa_path(path, sizeof path, dir, "task");
    ssize_t n = gpx__read_small(path, buf, sizeof buf);
    if (n == gp_syserr(ENOENT))
        return GP_ENOENT;
    int64_t p = 0, st = 0;
    if (n < 0 || kv_get(buf, "pid", &p) < 0 || kv_get(buf, "start", &st) < 0 || p <= 0)
        return GP_ECORRUPT;
    *pid = (pid_t)p;
    *start = (uint64_t)st;
    return 0;
}
