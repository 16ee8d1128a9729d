/*
 * main.c — gpupoold's entry point: flags (read by config.c, as the config
 * file is), the data directory, and the order in which the parts start (store, tokens,
 * scheduling loop with its executor, HTTP) and stop (the reverse).
 *
 * With no arguments it runs on embedded defaults: API on 127.0.0.1:8642,
 * SQLite at ./gpupool-data/gpupool.db, and the local executor on its own
 * defaults (docs/executors.md: task state in ./gpupool-data/tasks, 8 emulated
 * GPUs when NVML finds none). On the first start it writes an admin token to
 * ./gpupool-data/admin.token (mode 0600).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/files.h"
#include "daemon/api.h"
#include "daemon/config.h"
#include "daemon/sched.h"
#include "daemon/store.h"

/* gpupoold --events: docs/api.md's table of event kinds. */
static void print_events(void) {
    printf("| event | what happened |\n|---|---|\n");
    for (int k = 0; k < GPD__NEVENTS; k++)
        printf("| `%s` | %s |\n", gpd__event_name((gpd__event_kind)k),
               gpd__event_doc((gpd__event_kind)k));
}

static void print_settings(void) {
    gpd__config_print_table(stdout);
}

/* The reference tables gpupoold prints, as Markdown, when a flag asks and
 * then exits: the docs' copies are held to them (test-doc-tables.sh). */
static const struct {
    const char *flag, *what;
    void (*print)(void);
} tables[] = {
    {"--routes", "the API's routes", gpd__http_print_routes},
    {"--errors", "the API's error codes and their HTTP status", gpd__http_print_errors},
    {"--events", "the kinds of a workload's events", print_events},
    {"--settings", "this list of settings", print_settings},
};

/* gpupoold --help: the settings' lines come from config.c's list. */
static void usage(void) {
    fputs("usage: gpupoold [options]\n\n", stdout);
    gpd__config_help(stdout);
    gpd__config_help_line(stdout, "--config FILE",
                          "read settings from FILE: these keys, as key = value lines ('#' starts "
                          "a comment), where a switch takes yes or no (on the command line, a "
                          "switch alone is yes; yes or no may follow it)");
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        char text[160];
        snprintf(text, sizeof text, "print %s as a table and exit", tables[i].what);
        gpd__config_help_line(stdout, tables[i].flag, text);
    }
    gpd__config_help_line(stdout, "--help", "this text");
    fputs("\n"
          "The address actually bound is written to DATA/gpupoold.addr. The admin token\n"
          "of the first start is in DATA/admin.token (readable by its owner only). One\n"
          "gpupoold at a time may use a data directory: DATA/gpupoold.pid is locked.\n"
          "Run as root, gpupoold starts each workload as its token's Unix user; run as\n"
          "anyone else, it runs every workload as itself (single-user mode).\n",
          stdout);
}

static int parse_args(gpd__config *c, int argc, char **argv, char *err, size_t errlen) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage();
            exit(0);
        }
        for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
            if (strcmp(a, tables[t].flag) == 0) {
                tables[t].print();
                exit(0);
            }
        int rc;
        if (strncmp(a, "--", 2) == 0 && gpd__config_switch(a + 2)) {
            /* A switch alone says yes; a yes or no after it says which, so
             * that the command line may turn off what a --config file set. */
            const char *v = "yes";
            if (i + 1 < argc && (strcmp(argv[i + 1], "yes") == 0 || strcmp(argv[i + 1], "no") == 0))
                v = argv[++i];
            if ((rc = gpd__config_set(c, a + 2, v, err, errlen)) < 0)
                return rc;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || i + 1 >= argc) {
            snprintf(err, errlen, "%s: unknown or missing value (see gpupoold --help)", a);
            return GP_EINVAL;
        }
        rc = strcmp(a, "--config") == 0 ? gpd__config_read(c, argv[i + 1], err, errlen)
                                        : gpd__config_set(c, a + 2, argv[i + 1], err, errlen);
        if (rc < 0)
            return rc;
        i++;
    }
    return 0;
}

/* Where gpupool's own libraries are: the directory of this executable in a
 * build tree (libgpuslice.so beside gpupoold), else <prefix>/lib/gpupool of an
 * installed tree (gpupoold in <prefix>/sbin, as `make install` puts it), else
 * the executable's directory all the same; "" if it cannot be known. */
static void self_dir(char *out, size_t len) {
    char p[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", p, sizeof p - 1);
    out[0] = '\0';
    if (n <= 0)
        return;
    p[n] = '\0';
    char *slash = strrchr(p, '/');
    if (slash)
        *slash = '\0';
    char lib[PATH_MAX + 64];
    snprintf(lib, sizeof lib, "%s/libgpuslice.so", p);
    if (access(lib, R_OK) != 0) {
        char dir[PATH_MAX];
        snprintf(lib, sizeof lib, "%s/../lib/gpupool", p);
        if (realpath(lib, dir) != NULL && strlen(dir) + sizeof "/libgpuslice.so" <= sizeof lib) {
            snprintf(lib, sizeof lib, "%s/libgpuslice.so", dir);
            if (access(lib, R_OK) == 0 && strlen(dir) < len) {
                snprintf(out, len, "%s", dir);
                return;
            }
        }
    }
    snprintf(out, len, "%s", p);
}

/* Every API connection is a descriptor: the soft limit is raised towards the
 * hard one so that max_connections can be reached (with room for the store,
 * the logs and the tasks), and max_connections is lowered, with a warning,
 * where the hard limit does not allow it. */
static void raise_fd_limit(gpd__config *c) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rlim_t want = (rlim_t)c->max_connections + 1024;
    if (rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < want) {
        int fit = rl.rlim_cur > 1088 ? (int)(rl.rlim_cur - 1024) : 64;
        gpd__log("warning: the descriptor limit (%llu) allows %d API connections, not %d; raise "
                 "it with ulimit -n",
                 (unsigned long long)rl.rlim_cur, fit, c->max_connections);
        c->max_connections = fit;
    }
}

/* The API speaks plain HTTP unless TLS is configured: bearer tokens and
 * workloads' environments cross the network readable by anyone on the path.
 * That is fine on loopback and said loudly anywhere else. */
static void warn_if_exposed(const gpd__config *c) {
    if (c->tls_cert[0])
        return;
    struct in_addr a;
    if (inet_pton(AF_INET, c->listen_host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127)
        return;
    gpd__log("WARNING: listening on %s with plain HTTP: tokens and workload", c->listen);
    gpd__log("WARNING: environments cross the network unencrypted. Use");
    gpd__log("WARNING: --tls-cert/--tls-key, or listen on 127.0.0.1 behind a proxy.");
}

/* The data directory holds the store (workloads' environments, with their
 * secrets), the logs and the admin token: only its owner may enter it. One
 * that already exists with wider modes (created by hand, or by an older
 * gpupoold) is tightened, as are its logs and tasks directories, and the
 * directories of the tasks' logs and checkpoints named apart. what names the
 * directory in errors ("data dir", "--log-dir", ...). */
static int tighten(const char *what, const char *path, int must_exist, char *err, size_t errlen) {
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (!must_exist && errno == ENOENT)
            return 0;
        snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
        return GP_ESYS;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s %s: not a directory", what, path);
        return GP_EINVAL;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen, "%s %s: owned by uid %u, not by this user (%u)", what, path,
                 (unsigned)st.st_uid, (unsigned)geteuid());
        return GP_EPERM;
    }
    /* On a read-only file system nothing can be tightened, and nothing will
     * be written either: the store's open reports that (exit status 3). */
    if ((st.st_mode & 077) && chmod(path, st.st_mode & 07700) < 0 && errno != EROFS) {
        snprintf(err, errlen, "%s %s: cannot make it private: %s", what, path, strerror(errno));
        return GP_ESYS;
    }
    return 0;
}

/* A directory of the tasks' files, dir (the setting what): DATA/sub where
 * the setting is empty (made when first needed, as before), or the one it
 * names, made if missing, private to this user (a root daemon lets others
 * pass through it below) and made absolute. */
static int tasks_dir(const gpd__config *c, char *dir, size_t size, const char *sub,
                     const char *what, char *err, size_t errlen) {
    if (dir[0] == '\0') {
        int w = snprintf(dir, size, "%s/%s", c->data_dir, sub);
        if (w < 0 || (size_t)w >= size) {
            snprintf(err, errlen, "data dir %.200s: path too long", c->data_dir);
            return GP_EINVAL;
        }
        return 0;
    }
    int rc = gp_mkdirs(dir, 0700);
    if (rc < 0) {
        snprintf(err, errlen, "%s %s: %s", what, dir, gp_strerror(rc));
        return GP_ESYS;
    }
    if ((rc = tighten(what, dir, 1, err, errlen)) < 0)
        return rc;
    char abs[PATH_MAX];
    errno = 0;
    if (!realpath(dir, abs) || strlen(abs) >= size - 64) {
        snprintf(err, errlen, "%s %.200s: %s", what, dir,
                 errno ? strerror(errno) : "path too long");
        return GP_EINVAL;
    }
    memcpy(dir, abs, strlen(abs) + 1);
    return 0;
}

static int prepare_data_dir(gpd__config *c, char *err, size_t errlen) {
    if (mkdir(c->data_dir, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "data dir %s: %s", c->data_dir, strerror(errno));
        return GP_ESYS;
    }
    int trc = tighten("data dir", c->data_dir, 1, err, errlen);
    if (trc < 0)
        return trc;
    static const char *const subdirs[] = {"logs", "tasks"};
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
        char sub[PATH_MAX];
        snprintf(sub, sizeof sub, "%s/%s", c->data_dir, subdirs[i]);
        if ((trc = tighten("data dir", sub, 0, err, errlen)) < 0)
            return trc;
    }
    char abs[PATH_MAX];
    if (!realpath(c->data_dir, abs)) {
        snprintf(err, errlen, "data dir %s: %s", c->data_dir, strerror(errno));
        return GP_ESYS;
    }
    if (strlen(abs) >= sizeof c->data_dir - 64) {
        snprintf(err, errlen, "data dir %.200s: path too long", abs);
        return GP_EINVAL;
    }
    memcpy(c->data_dir, abs, strlen(abs) + 1);
    /* The logs and the checkpoints: DATA/logs and DATA/checkpoints, or
     * directories of their own (another disk, so that tasks filling them
     * never fill the store's). */
    if ((trc = tasks_dir(c, c->log_dir, sizeof c->log_dir, "logs", "--log-dir", err, errlen)) < 0 ||
        (trc = tasks_dir(c, c->checkpoint_dir, sizeof c->checkpoint_dir, "checkpoints",
                         "--checkpoint-dir", err, errlen)) < 0)
        return trc;
    self_dir(c->lib_dir, sizeof c->lib_dir);
    /* As root, workloads run as other users, who must pass through (never
     * list) the data directory and the checkpoint directory to reach their
     * own checkpoint directories; everything in the data directory is
     * created for its owner alone (umask 077), and what an older daemon left
     * wider is narrowed. */
    if (geteuid() == 0) {
        chmod(c->data_dir, 0711);
        chmod(c->checkpoint_dir, 0711);
        static const char *const files[] = {"gpupool.db", "gpupool.db-wal", "gpupool.db-shm",
                                            "admin.token", "emulated-gpus.conf"};
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            char f[PATH_MAX];
            struct stat fs;
            snprintf(f, sizeof f, "%s/%s", c->data_dir, files[i]);
            if (lstat(f, &fs) == 0 && S_ISREG(fs.st_mode) && (fs.st_mode & 077))
                chmod(f, fs.st_mode & 0600);
        }
    }
    return 0;
}

/*
 * Makes this daemon the only one on its data directory: a write lock on
 * DATA/gpupoold.pid, which holds the pid for people to read. Two schedulers
 * over one store would give a GPU twice and recover each other's workloads.
 * A POSIX record lock belongs to this process alone (the supervisors it forks
 * do not inherit it) and the kernel drops it when the process ends, however
 * it ends, so a crashed daemon never leaves a stale lock. The descriptor is
 * kept open for the life of the process. GP_EBUSY with err naming the holder;
 * GP_EROFS or GP_ENOSPC where the directory cannot be written (exit 3, as for
 * the store itself).
 */
static int lock_data_dir(const gpd__config *c, char *err, size_t errlen) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/gpupoold.pid", c->data_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "data dir %s: cannot open gpupoold.pid: %s", c->data_dir,
                 strerror(e));
        return e == EROFS ? GP_EROFS : e == ENOSPC ? GP_ENOSPC : GP_ESYS;
    }
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_SETLK, &fl) < 0) {
        int e = errno;
        struct flock who = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        if (fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK)
            snprintf(err, errlen,
                     "data dir %s is in use by another gpupoold (pid %d); stop it or give this "
                     "one another --data-dir",
                     c->data_dir, (int)who.l_pid);
        else
            snprintf(err, errlen, "data dir %s: cannot lock gpupoold.pid: %s", c->data_dir,
                     strerror(e));
        close(fd);
        return GP_EBUSY;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        int e = errno;
        snprintf(err, errlen, "data dir %s: cannot write gpupoold.pid: %s", c->data_dir,
                 strerror(e));
        close(fd);
        return e == ENOSPC ? GP_ENOSPC : GP_ESYS;
    }
    return 0;
}

/* Whether the data directory's file system has no room left. A full disk at
 * start shows up as whichever write comes first (the store's journal, the
 * admin token, the emulated inventory), each with its own error; the exit
 * status names the cause all the same, as the documentation promises. */
static int disk_full(const char *dir) {
    struct statvfs fs;
    if (statvfs(dir, &fs) != 0)
        return 0;
    if ((unsigned long long)fs.f_bavail * fs.f_frsize >= 64 * 1024)
        return 0;
    gpd__log("the disk of %s is full", dir);
    return 1;
}

static int write_addr(const gpd__config *c, int port) {
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/gpupoold.addr", c->data_dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "%s://%s:%d\n", c->tls_cert[0] ? "https" : "http", c->listen_host, port);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}

int main(int argc, char **argv) {
    /* The store (which holds workloads' environments), the tokens and the
     * logs are the daemon's alone; tasks set their own umask. */
    umask(077);
    gpd__daemon d;
    memset(&d, 0, sizeof d);
    gpd__config *c = &d.cfg;
    char err[1400] = "";
    if (gpd__config_defaults(c, err, sizeof err) < 0 ||
        parse_args(c, argc, argv, err, sizeof err) < 0 ||
        prepare_data_dir(c, err, sizeof err) < 0) {
        gpd__log("%s", err);
        return 2;
    }
    if (c->poll_ms > c->period_ms)
        c->poll_ms = c->period_ms;
    raise_fd_limit(c);
    warn_if_exposed(c);
    /* As root, workloads run as other users: said now, once, rather than by
     * every workload failing at its checkpoint directory (in the data
     * directory's checkpoints, or --checkpoint-dir). */
    char why[PATH_MAX + 400];
    if (geteuid() == 0 && gpd__dirs_passable(c, why, sizeof why) < 0)
        gpd__log("warning: %s", why);
    int locked = lock_data_dir(c, err, sizeof err);
    if (locked < 0) {
        gpd__log("%s", err);
        return locked == GP_EROFS || locked == GP_ENOSPC || disk_full(c->data_dir) ? 3 : 1;
    }

    /* Signals are taken by sigwait() below, in this thread only. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    char path[PATH_MAX + 32];
    gpd__err e = {0};
    int created = 0, port = 0;
    struct MHD_Daemon *mhd = NULL;
    snprintf(path, sizeof path, "%s/gpupool.db", c->data_dir);
    int rc = gpd__store_open(path, &d.store, &e);
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/admin.token", c->data_dir);
        rc = gpd__auth_open(d.store, path, &d.auth, &created, &e);
    }
    if (rc == 0)
        gpd__auth_session_limits(d.auth, c->console_idle_ms, c->console_life_ms);
    if (rc == 0)
        rc = gpd__sched_open(&d, &e);
    if (rc == 0)
        rc = gpd__logs_start(&d, &e);
    if (rc == 0)
        rc = gpd__sessions_start(&d, &e);
    if (rc == 0)
        rc = gpd__http_start(&d, &mhd, &port, &e);
    if (rc < 0) {
        gpd__log("%s", e.msg[0] ? e.msg : gp_strerror(rc));
        gpd__sessions_free(d.sessions);
        gpd__logs_stop(d.logs);
        gpd__sched_close(d.sched);
        gpd__auth_close(d.auth);
        gpd__store_close(d.store);
        return rc == GP_EROFS || rc == GP_ENOSPC || disk_full(c->data_dir) ? 3 : 1;
    }
    write_addr(c, port);
    gpd__log("serving %s://%s (port %d); data in %s; executor %s%s",
             c->tls_cert[0] ? "https" : "http", c->listen, port, c->data_dir, c->executor,
             gpd__sched_emulated(d.sched) ? " with EMULATED GPUs" : "");
    if (geteuid() != 0)
        gpd__log("single-user mode: not root, so every workload runs as uid %d, whatever Unix "
                 "user its token names",
                 (int)geteuid());
    if (created) {
        gpd__log("first start: the admin token is in %s/admin.token", c->data_dir);
        gpd__log("try: GPUPOOL_TOKEN=$(cat %s/admin.token) gpupool queue list", c->data_dir);
    }

    int sig = 0;
    sigwait(&sigs, &sig);
    gpd__log("signal %d: stopping (running tasks keep running)", sig);
    /* Sessions first: libmicrohttpd stops only once every upgraded
     * connection has been handed back. */
    gpd__sessions_stop(d.sessions);
    gpd__http_stop(&d, mhd);
    gpd__sessions_free(d.sessions);
    gpd__logs_stop(d.logs);
    gpd__sched_close(d.sched);
    gpd__auth_close(d.auth);
    gpd__store_close(d.store);
    return 0;
}
