/*
 * gpupool-slurm-session.c — the session server of an interactive task on
 * the Slurm executor, and its relay; installed beside gpupoold and run only
 * inside Slurm jobs.
 *
 *   gpupool-slurm-session serve NAME [--gpu-use FD --nvml LIB] -- COMMAND [ARG...]
 *     The job script of an interactive task runs this in place of the
 *     command, as the task's user, in the task's environment and working
 *     directory. It makes the task's pseudo-terminal and a listening unix
 *     socket /tmp/gpupool-session.<uid>/NAME.sock (in a directory of the
 *     user's, mode 0700), forks COMMAND onto the terminal and serves the
 *     socket with the session server every executor shares
 *     (../../session-server.c: the ring of recent output, exec, port
 *     forwarding, notices) until COMMAND ends. The terminal's output also
 *     goes to standard output, which is the job's log. It first removes
 *     the sockets of the directory that no server answers any more (a job
 *     killed with SIGKILL leaves its socket behind). It ignores the
 *     checkpoint signals Slurm sends every process of the job (the command
 *     gets them with their default handling) and exits with the command's
 *     status, or 128 + the signal that ended it, as a shell would report.
 *
 *     With --gpu-use FD (a descriptor the job script opened on the task's
 *     GPU use record, executors/slurm/gpuuse.h) and --nvml LIB, a child of
 *     the server samples the job's GPUs (those its CUDA_VISIBLE_DEVICES
 *     names) with NVML every second and rewrites the record every five
 *     (GPU_USE_WRITE_S), so that gpupoold's idle GPU timeout sees an idle
 *     session on Slurm as it does on its own host. The descriptor never
 *     reaches COMMAND.
 *
 *   gpupool-slurm-session sample FD LIB [PID]
 *     The same sampler for a batch task: its job script (process PID, its
 *     $$) starts it in the background, on the record it opened as FD,
 *     before the command (which does not get FD), and kills it once the
 *     command has ended; it also ends with the script (PR_SET_PDEATHSIG),
 *     ends at once if its parent is not PID (the script ended before it
 *     could ask for that), and ignores the checkpoint signals, so that
 *     usage's "used" is known for batch work on Slurm as it is on
 *     gpupoold's own host.
 *
 *   gpupool-slurm-session connect NAME
 *     What gpupoold runs in the job with `srun --jobid J --overlap` to open
 *     a session: it connects to NAME's socket (as the same user) and relays
 *     bytes between its standard input and output and the server. When the
 *     server passes it a connection to a port (a READY message with the
 *     descriptor), it sends the READY on and relays the port's bytes from
 *     then on: the client's as they come, the port's as DATA messages and
 *     its half-close as an EOF message, since srun ends the relay's output
 *     only when its step ends (the slurm executor turns them back into
 *     bytes, session.c). Its standard input's end becomes a half-close of
 *     what it relays to; the end of what it relays from ends it (for a port,
 *     once both sides have ended theirs). It ignores the checkpoint
 *     signals, as the server does.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_channel.h"
#include "executors/nvml.h"
#include "executors/session-server.h"
#include "executors/slurm/gpuuse.h"

/* The signals Slurm's checkpoint delivery (scancel --full --signal) may send
 * every process of the job: the server outlives them, the command not. */
static const int ckpt_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT};

static void write_all(int fd, const char *buf, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        buf += w;
        n -= (size_t)w;
    }
}

static void put_str(int fd, const char *s) {
    write_all(fd, s, strlen(s));
}

/* The directory of the user's session sockets: made 0700 if missing, and
 * refused unless it is a directory of this user's (not a link another user
 * planted in /tmp). 0 or -1 with why. */
static int sock_dir(char *dir, size_t len, const char **why) {
    snprintf(dir, len, "/tmp/gpupool-session.%u", (unsigned)getuid());
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        *why = "cannot make the session directory in /tmp";
        return -1;
    }
    struct stat st;
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
        *why = "the session directory in /tmp is not this user's";
        return -1;
    }
    if ((st.st_mode & 077) != 0 && chmod(dir, 0700) < 0) {
        *why = "cannot make the session directory private";
        return -1;
    }
    return 0;
}

/* A socket name: gpupoold's "gp-<tag>.w<id>.t<task>.a<attempt>" (no '/'). */
static int name_ok(const char *name) {
    size_t n = strlen(name);
    return n > 0 && n < 80 && strchr(name, '/') == NULL && name[0] != '.';
}

/* ---- serve ------------------------------------------------------------- */

static void host_log(void *ctx, const char *buf, size_t n) {
    (void)ctx;
    write_all(STDOUT_FILENO, buf, n);
}

static void default_signals(void) {
    for (size_t i = 0; i < sizeof ckpt_signals / sizeof ckpt_signals[0]; i++)
        signal(ckpt_signals[i], SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The command's side of a fork: a session of its own, the streams given,
 * then argv. Never returns. */
static void run_in_job(int in, int out, int err, int tty, char *const *argv) {
    default_signals();
    setsid();
    int ok;
    if (tty)
        ok = ioctl(in, TIOCSCTTY, 0) == 0 && dup2(in, 0) >= 0 && dup2(in, 1) >= 0 &&
             dup2(in, 2) >= 0;
    else
        ok = dup2(in, 0) >= 0 && dup2(out, 1) >= 0 && dup2(err, 2) >= 0;
    const char *why = "cannot set up its standard streams";
    if (ok) {
        execvp(argv[0], argv);
        why = errno == ENOENT ? "no such program in the task's PATH" : "cannot execute it";
    }
    put_str(2, "gpupool: exec: ");
    put_str(2, argv[0]);
    put_str(2, ": ");
    put_str(2, why);
    put_str(2, "\n");
    _exit(127);
}

/* An exec'd command runs in the job as the server does: its user, cgroup,
 * namespaces and environment are the job's. */
static void host_exec(void *ctx, pid_t tpid, int in, int out, int err, int tty, char *const *argv) {
    (void)ctx;
    (void)tpid;
    run_in_job(in, out, err, tty, argv);
}

/* Removes the sockets of dir that no server listens on any more. A live
 * server takes the probe for a client that left before saying hello. */
static void sweep_stale(const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof sa);
        sa.sun_family = AF_UNIX;
        if (n < 6 || strcmp(de->d_name + n - 5, ".sock") != 0 ||
            (size_t)snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s", dir, de->d_name) >=
                sizeof sa.sun_path)
            continue;
        int x = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (x < 0)
            break;
        if (connect(x, (struct sockaddr *)&sa, sizeof sa) < 0 && errno == ECONNREFUSED)
            unlink(sa.sun_path);
        close(x);
    }
    closedir(d);
}

/* ---- GPU use ----------------------------------------------------------- */

#define GPU_USE_WRITE_S 5 /* seconds between records; a sample each second */

/* The NVML indices of the job's GPUs: CUDA_VISIBLE_DEVICES's entries, a
 * number each (Slurm's GRES index, NVML's order where gres.conf lists the
 * GPUs as NVML does, as AutoDetect=nvml writes it; with ConstrainDevices
 * the job sees only its own, numbered from 0) or a GPU's UUID. None where
 * it names none ("NoDevFiles", empty, unset). */
static int job_gpus(gpx__nvml *nv, unsigned *idx, int max) {
    const char *s = getenv("CUDA_VISIBLE_DEVICES");
    unsigned count = 0;
    int n = 0;
    if (s == NULL || nv->nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS)
        return 0;
    while (*s != '\0' && n < max) {
        size_t len = strcspn(s, ",");
        char one[96];
        snprintf(one, sizeof one, "%.*s", (int)(len < sizeof one ? len : sizeof one - 1), s);
        char *end;
        unsigned long i = strtoul(one, &end, 10);
        if (one[0] >= '0' && one[0] <= '9' && *end == '\0' && i < count) {
            idx[n++] = (unsigned)i;
        } else if (strncmp(one, "GPU-", 4) == 0) {
            for (unsigned k = 0; k < count; k++) {
                nvmlDevice_t dev;
                char uuid[96];
                if (nv->nvmlDeviceGetHandleByIndex_v2(k, &dev) == NVML_SUCCESS &&
                    nv->nvmlDeviceGetUUID(dev, uuid, sizeof uuid) == NVML_SUCCESS &&
                    strcmp(uuid, one) == 0) {
                    idx[n++] = k; /* one GPU a UUID, whatever the library says */
                    break;
                }
            }
        }
        s += len;
        s += *s == ',';
    }
    return n;
}

/* The sampler, a child of the server (or of a batch task's job script)
 * that ends with its parent: samples the job's GPUs each second and writes
 * a record into fd every GPU_USE_WRITE_S seconds, busy the mean of its
 * samples rounded up (so that any busy second shows) or -1 if any was
 * unknown. */
static void sample_gpus(int fd, const char *lib, pid_t parent) {
    char err[256];
    gpx__nvml nv;
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (visible == NULL || visible[0] == '\0')
        _exit(0); /* a job without GPUs */
    if (gpx__nvml_open(&nv, lib, 1, err, sizeof err) < 0) {
        fprintf(stderr,
                "gpupool: this task's GPU use is not sampled, so neither its project's idle "
                "GPU timeout nor usage's \"used\" can see it: %s\n",
                err);
        _exit(0);
    }
    unsigned idx[GPX__GPU_USE_MAX];
    int n = job_gpus(&nv, idx, GPX__GPU_USE_MAX);
    if (n == 0) {
        gpx__nvml_close(&nv);
        _exit(0); /* none that NVML knows ("NoDevFiles") */
    }
    int64_t sum[GPX__GPU_USE_MAX];
    int unknown[GPX__GPU_USE_MAX];
    gpx__gpu_use u = {.n = n};
    for (int taken = 0; getppid() == parent;) {
        if (taken == 0) {
            memset(sum, 0, sizeof sum);
            memset(unknown, 0, sizeof unknown);
        }
        for (int i = 0; i < n; i++) {
            int32_t busy;
            gpx__nvml_sample(&nv, idx[i], &busy, &u.mem[i]);
            sum[i] += busy;
            unknown[i] |= busy < 0;
        }
        if (++taken == GPU_USE_WRITE_S) {
            char rec[GPX__GPU_USE_RECORD];
            for (int i = 0; i < n; i++)
                u.busy[i] = unknown[i] ? -1 : (int32_t)((sum[i] + taken - 1) / taken);
            u.at = (int64_t)time(NULL);
            /* One write of the whole record in place; flushed, for a state
             * directory on NFS whose readers are on other hosts. */
            if (gpx__gpu_use_format(&u, rec) == 0 &&
                pwrite(fd, rec, sizeof rec, 0) == (ssize_t)sizeof rec)
                fdatasync(fd);
            taken = 0;
        }
        sleep(1);
    }
    _exit(0);
}

/* Starts the sampler on the descriptor use_fd (a regular file) if NVML is
 * given; the descriptor is closed here either way, so that COMMAND never
 * gets it. The sampler's pid, or -1. */
static pid_t start_sampler(int use_fd, const char *lib) {
    struct stat st;
    pid_t pid = -1, server = getpid();
    if (use_fd >= 0 && lib != NULL && fstat(use_fd, &st) == 0 && S_ISREG(st.st_mode) &&
        (pid = fork()) == 0) {
        /* It ends with the server even if the server is killed. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        sample_gpus(use_fd, lib, server);
    }
    if (use_fd >= 0)
        close(use_fd);
    return pid;
}

/* sample FD LIB [PID]: samples for the job script script (its parent;
 * without PID, whichever process is its parent at the start), until the
 * script ends or kills it. A script that ended before PDEATHSIG was set
 * has left the sampler to another parent: without PID it would be taken
 * for the script, and the sampler would run on with nothing to end it. */
static int sample_for_script(int use_fd, const char *lib, pid_t script) {
    if (script <= 0)
        script = getppid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != script)
        return 0; /* the script ended before PDEATHSIG was set */
    for (size_t i = 0; i < sizeof ckpt_signals / sizeof ckpt_signals[0]; i++)
        signal(ckpt_signals[i], SIG_IGN);
    struct stat st;
    if (fstat(use_fd, &st) < 0 || !S_ISREG(st.st_mode))
        return 0; /* the record could not be opened: /dev/null */
    sample_gpus(use_fd, lib, script);
    return 0;
}

static int serve(const char *name, int use_fd, const char *nvml, char **argv) {
    char dir[64], sock[160];
    const char *why = NULL;
    if (sock_dir(dir, sizeof dir, &why) < 0) {
        fprintf(stderr, "gpupool-slurm-session: %s (%s)\n", why, dir);
        return 126;
    }
    sweep_stale(dir);
    snprintf(sock, sizeof sock, "%s.sock", name);
    int master = -1, slave = -1, lfd = -1;
    if (gpx__sessd_listen(dir, sock, -1, &master, &slave, &lfd) < 0) {
        fprintf(stderr, "gpupool-slurm-session: cannot make the terminal or %s/%s: %s\n", dir, sock,
                strerror(errno));
        return 126;
    }
    for (size_t i = 0; i < sizeof ckpt_signals / sizeof ckpt_signals[0]; i++)
        signal(ckpt_signals[i], SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    fflush(NULL);
    pid_t sampler = start_sampler(use_fd, nvml);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gpupool-slurm-session: fork: %s\n", strerror(errno));
        return 126;
    }
    if (pid == 0) {
        close(master);
        close(lfd);
        run_in_job(slave, slave, slave, 1, argv);
    }
    close(slave);
    gpx__sessd_host h = {host_log, host_exec, NULL, -1, 0};
    int code = 0, sig = 0, st = 0;
    if (gpx__sessd_serve(&h, pid, master, lfd, &code, &sig) < 0) {
        close(master);
        close(lfd);
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
        sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    } else {
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
    }
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, sock);
    unlink(path);
    if (sampler > 0) {
        kill(sampler, SIGKILL);
        while (waitpid(sampler, &st, 0) < 0 && errno == EINTR) {
        }
    }
    return sig != 0 ? 128 + sig : code;
}

/* ---- connect ----------------------------------------------------------- */

/* One direction of the relay. */
typedef struct pipe_buf {
    char data[65536];
    size_t len, off;
    int eof; /* its source has ended */
} pipe_buf;

/* Reads from fd, taking a passed descriptor into *passed. */
static ssize_t read_fd(int fd, char *buf, size_t n, int *passed) {
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct iovec iov = {buf, n};
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = u.buf;
    mh.msg_controllen = sizeof u.buf;
    ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    for (struct cmsghdr *cm = r >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm != NULL;
         cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
            int got;
            memcpy(&got, CMSG_DATA(cm), sizeof got);
            if (*passed < 0)
                *passed = got;
            else
                close(got);
        }
    }
    return r;
}

/* Writes an ERROR message, the only thing gpupoold reads when no server
 * answers. */
static int refuse(const char *a, const char *b) {
    char text[256];
    int n = snprintf(text, sizeof text, "%s%s", a, b);
    uint8_t head[GP_CH_HEAD];
    gp_ch_head(head, GP_CH_ERROR, (size_t)n);
    write_all(STDOUT_FILENO, (const char *)head, sizeof head);
    write_all(STDOUT_FILENO, text, (size_t)n);
    return 1;
}

static int relay(const char *name) {
    char dir[64];
    const char *why = NULL;
    if (sock_dir(dir, sizeof dir, &why) < 0)
        return refuse("the task's session endpoint cannot be reached: ", why);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s.sock", dir, name);
    int x = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (x < 0 || connect(x, (struct sockaddr *)&sa, sizeof sa) < 0)
        return refuse("the task's session endpoint does not answer (has the task ended?): ",
                      strerror(errno));
    /* The relay is a step of the job too: the checkpoint signal Slurm sends
     * the job's steps is the task's, and an attached terminal stays open
     * through its grace period (to show a notice and what the task prints
     * as it stops); the relay ends with its srun or the server. */
    for (size_t i = 0; i < sizeof ckpt_signals / sizeof ckpt_signals[0]; i++)
        signal(ckpt_signals[i], SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    /* in: standard input to x; out: x to standard output. */
    static pipe_buf in, out;
    int passed = -1, port = 0, x_wr_shut = 0;
    for (;;) {
        if (out.eof && out.len == 0 && (!port || (in.eof && in.len == 0)))
            return 0;
        if (in.eof && in.len == 0 && !x_wr_shut) {
            shutdown(x, SHUT_WR);
            x_wr_shut = 1;
        }
        struct pollfd pf[4];
        int np = 0, i_in = -1, i_x = -1, i_out = -1;
        if (!in.eof && in.len == 0)
            pf[i_in = np++] = (struct pollfd){STDIN_FILENO, POLLIN, 0};
        short xe = (short)((in.len > 0 ? POLLOUT : 0) | (!out.eof && out.len == 0 ? POLLIN : 0));
        if (xe != 0)
            pf[i_x = np++] = (struct pollfd){x, xe, 0};
        if (out.len > 0)
            pf[i_out = np++] = (struct pollfd){STDOUT_FILENO, POLLOUT, 0};
        if (poll(pf, (nfds_t)np, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (i_in >= 0 && pf[i_in].revents != 0) {
            ssize_t r = read(STDIN_FILENO, in.data, sizeof in.data);
            if (r > 0)
                in.len = (size_t)r, in.off = 0;
            else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                in.eof = 1; /* its end, or an error: not a wake-up with nothing to read */
        }
        if (i_x >= 0 && (pf[i_x].revents & POLLOUT) && in.len > 0) {
            ssize_t w = send(x, in.data + in.off, in.len - in.off, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0) {
                in.off += (size_t)w;
                if (in.off == in.len)
                    in.len = in.off = 0;
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                in.len = in.off = 0; /* the far side is gone: what it would get is dropped */
                in.eof = 1;
            }
        }
        if (i_x >= 0 && (pf[i_x].revents & (POLLIN | POLLHUP | POLLERR)) && out.len == 0 && port &&
            !out.eof) {
            /* The port's bytes as a DATA message; its end as an EOF one. */
            ssize_t r = read(x, out.data + GP_CH_HEAD, sizeof out.data - GP_CH_HEAD);
            if (!(r < 0 && (errno == EAGAIN || errno == EINTR))) {
                size_t n = r > 0 ? (size_t)r : 0;
                gp_ch_head((uint8_t *)out.data, n > 0 ? GP_CH_DATA : GP_CH_EOF, n);
                out.len = GP_CH_HEAD + n, out.off = 0;
                out.eof = n == 0;
            }
        } else if (i_x >= 0 && (pf[i_x].revents & (POLLIN | POLLHUP | POLLERR)) && out.len == 0 &&
                   !port) {
            ssize_t r = read_fd(x, out.data, sizeof out.data, &passed);
            if (r > 0)
                out.len = (size_t)r, out.off = 0;
            else if (r == 0 || (errno != EAGAIN && errno != EINTR))
                out.eof = 1;
            if (passed >= 0 && !port) {
                /* A port's connection: the READY goes on, its bytes follow.
                 * The port's write side is open whatever became of the
                 * server's: an input that ended already ends it at once. */
                close(x);
                x = passed;
                port = 1;
                out.eof = 0;
                x_wr_shut = 0;
            }
        }
        if (i_out >= 0 && (pf[i_out].revents != 0)) {
            ssize_t w = write(STDOUT_FILENO, out.data + out.off, out.len - out.off);
            if (w > 0) {
                out.off += (size_t)w;
                if (out.off == out.len)
                    out.len = out.off = 0;
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                return 1;
            }
        }
    }
}

/* A descriptor number given on the command line (3 to 1023), or -1. */
static int fd_arg(const char *s) {
    char *end;
    long fd = strtol(s, &end, 10);
    return *end == '\0' && fd > 2 && fd < 1024 ? (int)fd : -1;
}

/* A process id from the command line, or -1. */
static pid_t pid_arg(const char *s) {
    char *end;
    errno = 0;
    long pid = strtol(s, &end, 10);
    return end != s && *end == '\0' && errno == 0 && pid > 1 && pid <= 0x3fffffff ? (pid_t)pid : -1;
}

/* serve's options after NAME, up to "--": 0 with *use_fd and *nvml set
 * (-1 and NULL when absent), *cmd the index of COMMAND; -1 if malformed. */
static int serve_opts(int argc, char **argv, int *use_fd, const char **nvml, int *cmd) {
    int i = 3;
    *use_fd = -1;
    *nvml = NULL;
    for (; i + 1 < argc && strcmp(argv[i], "--") != 0; i += 2)
        if (strcmp(argv[i], "--gpu-use") == 0 && fd_arg(argv[i + 1]) >= 0)
            *use_fd = fd_arg(argv[i + 1]);
        else if (strcmp(argv[i], "--nvml") == 0 && argv[i + 1][0] != '\0')
            *nvml = argv[i + 1];
        else
            return -1;
    *cmd = i + 1;
    return i < argc && strcmp(argv[i], "--") == 0 && *cmd < argc ? 0 : -1;
}

int main(int argc, char **argv) {
    int use_fd, cmd;
    const char *nvml;
    if (argc >= 5 && strcmp(argv[1], "serve") == 0 && name_ok(argv[2]) &&
        serve_opts(argc, argv, &use_fd, &nvml, &cmd) == 0) {
        if (use_fd >= 0)
            fcntl(use_fd, F_SETFD, FD_CLOEXEC);
        return serve(argv[2], use_fd, nvml, argv + cmd);
    }
    if (argc == 3 && strcmp(argv[1], "connect") == 0 && name_ok(argv[2]))
        return relay(argv[2]);
    if ((argc == 4 || (argc == 5 && pid_arg(argv[4]) > 0)) && strcmp(argv[1], "sample") == 0 &&
        fd_arg(argv[2]) >= 0 && argv[3][0] != '\0')
        return sample_for_script(fd_arg(argv[2]), argv[3], argc == 5 ? pid_arg(argv[4]) : 0);
    fprintf(stderr, "usage: gpupool-slurm-session serve NAME [--gpu-use FD --nvml LIB] -- "
                    "COMMAND [ARG...]\n"
                    "       gpupool-slurm-session sample FD LIB [PID]\n"
                    "       gpupool-slurm-session connect NAME\n"
                    "(run inside Slurm jobs by gpupool's slurm executor)\n");
    return 2;
}
