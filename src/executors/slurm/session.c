/*
 * session.c — sessions with the interactive tasks of the slurm executor,
 * reached by Slurm's own means.
 *
 * An interactive task's job script runs `gpupool-slurm-session serve NAME
 * -- COMMAND` (job.c) as the task's user: the program owns the terminal and
 * the session server that every executor shares (../session-server.c) and
 * listens on a unix socket on the task's node. To open a session gpupoold
 * starts, on the calling thread,
 *
 *   srun --jobid=J --overlap --unbuffered --quiet -N1 -n1 [--uid=U --gid=G] \
 *        [setpriv --reuid=U --regid=G --init-groups --no-new-privs --] \
 *        gpupool-slurm-session connect NAME
 *
 * a step of the task's own job, as the task's user (gpupoold is root when a
 * job is another user's: Slurm lets only a job's user add steps to it, and
 * root act as that user with --uid/--gid); for a slice, a step of its GPU
 * holder, which is gpupoold's, whose relay becomes the task's user with
 * setpriv as the slice itself does; with one end of a socketpair as its
 * standard input and output. The relay connects to the server as the same
 * user (the server accepts no other), so the opening message and the
 * server's answer pass through srun unchanged and the caller gets the
 * socketpair's other end: the stream-framed session for ATTACH and EXEC,
 * the port's bytes for PORT (the relay carries the connection the server
 * passes it). Never ssh: Slurm authenticates the step and puts it in the
 * job's cgroup on its node.
 *
 * A NOTICE (which gpupoold's scheduling loop sends before it suspends a
 * session) is written to its srun's standard input and not waited for, so
 * the loop never waits on srun; the notice reaches the terminal while the
 * task's grace period runs.
 *
 * The sruns are children of gpupoold: each is kept in sx->sess (under
 * sx->sess_mu, since session() runs on any thread) with its standard
 * error, and reaped by gpx__slurm_sess_reap, which poll() calls.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_array.h"
#include "common/gp_channel.h"
#include "common/files.h"
#include "common/gp_error.h"
#include "executors/registry.h"
#include "executors/session-server.h"
#include "executors/slurm/gpuuse.h"
#include "executors/slurm/slurm.h"

/* How long srun may take to start the relay and the server to answer: a
 * step launch on a loaded node takes a second or more; the session
 * method's contract (executor.h) allows about 15 s. */
#define OPEN_TIMEOUT_S 15

void gpx__slurm_sess_name(const gpx__slurm *sx, const char *key, char *buf, size_t len) {
    snprintf(buf, len, "gp-%s.%s", sx->tag, key);
}

int gpx__slurm_samples(const gpx__slurm *sx, const gp_task_launch *t) {
    return sx->nvml[0] != '\0' && t->binding != NULL && t->binding->nslices > 0;
}

int gpx__slurm_sess_mark(const char *dir, const gpx__exec_user *u) {
    char text[64];
    snprintf(text, sizeof text, "%u %u\n", (unsigned)(u->switch_to ? u->uid : getuid()),
             (unsigned)(u->switch_to ? u->gid : getgid()));
    return gpx__slurm_write(dir, "tty", text) < 0 ? GP_ESYS : 0;
}

int gpx__slurm_bound_mark(const char *dir, const gp_task_launch *t) {
    char bound[GP_NAME_MAX + 8 * GP_MAX_GPUS_PER_NODE + 8];
    size_t k = (size_t)snprintf(bound, sizeof bound, "%s ", t->node->name);
    for (int i = 0; t->binding != NULL && i < t->binding->nslices && k < sizeof bound; i++)
        k += (size_t)snprintf(bound + k, sizeof bound - k, "%s%d", i ? "," : "",
                              (int)t->binding->slices[i].gpu);
    if (k < sizeof bound)
        snprintf(bound + k, sizeof bound - k, "\n");
    return gpx__slurm_write(dir, "bound", bound) < 0 ? GP_ESYS : 0;
}

const char *gpx__slurm_gpu_use_file(const gpx__exec_user *u, int slice) {
    return u->switch_to && !slice ? "user/gpu-use" : "gpu-use";
}

/* The task directory dir's "bound" record: its node and up to max GPU
 * numbers. The count, or -1. */
static int read_bound(const char *dir, char *node, size_t nlen, int32_t *gpus, int max) {
    char buf[GP_NAME_MAX + 8 * GP_MAX_GPUS_PER_NODE + 8];
    if (gpx__slurm_read(dir, "bound", buf, sizeof buf) <= 0)
        return -1;
    size_t len = strcspn(buf, " \n");
    if (len == 0 || len >= nlen || buf[len] != ' ')
        return -1;
    snprintf(node, nlen, "%.*s", (int)len, buf);
    int n = 0;
    for (char *p = buf + len + 1, *end; *p >= '0' && *p <= '9' && n < max; p = end + 1) {
        gpus[n++] = (int32_t)strtol(p, &end, 10);
        if (*end != ',')
            break;
    }
    return n;
}

/* Adds one GPU's figures to u, or takes the busiest where u has that GPU
 * already (slices of one GPU). */
static void add_use(gp_exec_gpu_usage *u, const char *node, int32_t gpu, int32_t busy,
                    int64_t mem) {
    for (size_t i = 0; i < u->n; i++) {
        gp_gpu_usage *g = &u->gpus[i];
        if (g->index == gpu && strcmp(g->node, node) == 0) {
            if (g->busy_permille >= 0 && (busy < 0 || busy > g->busy_permille))
                g->busy_permille = busy;
            if (mem > g->mem_used)
                g->mem_used = mem;
            return;
        }
    }
    if (u->n < u->max) {
        gp_gpu_usage *g = &u->gpus[u->n++];
        memset(g, 0, sizeof *g);
        snprintf(g->node, sizeof g->node, "%s", node);
        g->index = gpu;
        g->busy_permille = busy;
        g->mem_used = mem;
    }
}

int gpx__slurm_gpu_usage(gpx__slurm *sx, gp_exec_gpu_usage *u) {
    u->n = 0;
    if (sx->nvml[0] == '\0') {
        snprintf(u->note, sizeof u->note, "nvml=off: GPU use is not sampled in Slurm jobs");
        return GP_ENOTSUP;
    }
    snprintf(u->note, sizeof u->note,
             "GPU use of every task with GPUs, sampled in its job with NVML");
    DIR *d = opendir(sx->state_dir);
    if (d == NULL)
        return 0;
    int64_t now = (int64_t)time(NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char dir[PATH_MAX], node[GP_NAME_MAX + 1], rec[GPX__GPU_USE_RECORD + 1];
        int32_t gpus[GP_MAX_GPUS_PER_NODE];
        gpx__gpu_use g;
        int n;
        if (de->d_name[0] != 'w' || strlen(de->d_name) >= GPX__SLURM_KEY_MAX ||
            gpx__slurm_task_dir(sx, de->d_name, dir, sizeof dir) < 0 ||
            (n = read_bound(dir, node, sizeof node, gpus, GP_MAX_GPUS_PER_NODE)) <= 0 ||
            gpx__slurm_read(dir, "exit", rec, sizeof rec) > 0)
            continue;
        ssize_t len = gpx__slurm_read_untrusted(dir, "gpu-use", rec, sizeof rec);
        if (len <= 0)
            len = gpx__slurm_read_untrusted(dir, "user/gpu-use", rec, sizeof rec);
        if (len <= 0 || gpx__gpu_use_parse(rec, (size_t)len, &g) < 0 ||
            g.at < now - GPX__GPU_USE_STALE_S || g.at > now + GPX__GPU_USE_STALE_S)
            continue;
        for (int i = 0; i < n && i < g.n; i++)
            add_use(u, node, gpus[i], g.busy[i], g.mem[i]);
    }
    closedir(d);
    return 0;
}

/* Keeps an srun for reaping; without memory for it, it is reaped now
 * (after it was told to end) so that no zombie is left behind. */
static void keep(gpx__slurm *sx, pid_t pid, int errfd) {
    pthread_mutex_lock(&sx->sess_mu);
    if (GP_ARRAY_ROOM(sx->sess, sx->nsess, sx->capsess, 16) == 0) {
        sx->sess[sx->nsess++] = (gpx__slurm_sess_proc){pid, errfd};
        pthread_mutex_unlock(&sx->sess_mu);
        return;
    }
    pthread_mutex_unlock(&sx->sess_mu);
    kill(pid, SIGTERM);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    if (errfd >= 0)
        close(errfd);
}

void gpx__slurm_sess_reap(gpx__slurm *sx, int wait_all) {
    pthread_mutex_lock(&sx->sess_mu);
    for (size_t i = 0; wait_all && i < sx->nsess; i++)
        kill(sx->sess[i].pid, SIGTERM);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (size_t i = 0; i < sx->nsess;) {
        pid_t r = waitpid(sx->sess[i].pid, NULL, WNOHANG);
        if (r == 0 && wait_all) {
            struct timespec now, nap = {0, 20 * 1000 * 1000};
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - start.tv_sec >= 5)
                kill(sx->sess[i].pid, SIGKILL);
            nanosleep(&nap, NULL);
            continue;
        }
        if (r == 0) {
            i++;
            continue;
        }
        if (sx->sess[i].errfd >= 0)
            close(sx->sess[i].errfd);
        sx->sess[i] = sx->sess[--sx->nsess];
    }
    pthread_mutex_unlock(&sx->sess_mu);
}

/* What srun said on its standard error, waited for up to a second (it
 * writes why it failed as it exits). */
static void srun_said(int errfd, char *buf, size_t len) {
    size_t n = 0;
    buf[0] = '\0';
    struct pollfd pf = {errfd, POLLIN, 0};
    while (n + 1 < len && poll(&pf, 1, 1000) == 1) {
        ssize_t r = read(errfd, buf + n, len - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

/* ---- A forwarded port through srun --------------------------------------
 *
 * srun ends the relay's output only when its step ends, so the relay frames
 * what the port sends (DATA messages, and an EOF message at the port's
 * half-close; gpupool-slurm-session.c) and two threads of this executor
 * turn it back into the bytes of a socket the caller gets: one unframes
 * srun's output into it, the other passes what the caller writes on to
 * srun as it is, its end becoming the end of srun's input. Each blocks on
 * its own direction only, so neither waits on the other. */

typedef struct port_link {
    int srun_fd, user_fd; /* srun's socketpair end; the caller's end's peer */
    pthread_mutex_t mu;
    int left; /* directions still running; the last closes and frees */
    uint8_t down[GP_CH_HEAD + GP_CH_PAYLOAD_MAX], up[GP_CH_PAYLOAD_MAX];
} port_link;

static void link_done(port_link *l) {
    pthread_mutex_lock(&l->mu);
    int last = --l->left == 0;
    pthread_mutex_unlock(&l->mu);
    if (!last)
        return;
    close(l->srun_fd);
    close(l->user_fd);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* srun to the caller: DATA as bytes, EOF as a half-close. A malformed
 * stream, or a caller gone, ends both directions. */
static void *port_down(void *arg) {
    port_link *l = arg;
    size_t have = 0;
    int broken = 0;
    for (;;) {
        ssize_t r = gp_read_some(l->srun_fd, l->down + have, sizeof l->down - have);
        if (r <= 0)
            break;
        have += (size_t)r;
        size_t off = 0;
        gp_ch_msg m;
        long n;
        while (!broken && (n = gp_ch_parse(l->down + off, have - off, &m)) > 0) {
            if (m.type == GP_CH_DATA)
                broken = gp_send_all(l->user_fd, m.payload, m.len) < 0;
            else if (m.type == GP_CH_EOF)
                shutdown(l->user_fd, SHUT_WR);
            else
                broken = 1;
            off += (size_t)n;
        }
        if (broken || n < 0)
            break;
        memmove(l->down, l->down + off, have - off);
        have -= off;
    }
    shutdown(l->user_fd, broken ? SHUT_RDWR : SHUT_WR);
    if (broken)
        shutdown(l->srun_fd, SHUT_RDWR);
    link_done(l);
    return NULL;
}

/* The caller to srun, as it is; the caller's end ends srun's input. */
static void *port_up(void *arg) {
    port_link *l = arg;
    for (;;) {
        ssize_t r = gp_read_some(l->user_fd, l->up, sizeof l->up);
        if (r <= 0 || gp_send_all(l->srun_fd, l->up, (size_t)r) < 0)
            break;
    }
    shutdown(l->srun_fd, SHUT_WR);
    link_done(l);
    return NULL;
}

/* Puts the two threads between srun's end srun_fd (taken) and a new
 * socket, whose other end is returned in *out. 0, or GP_ESYS with srun_fd
 * closed. */
static int link_port(int srun_fd, int *out, char *err, size_t errlen) {
    int sp[2];
    port_link *l = calloc(1, sizeof *l);
    if (l == NULL || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
        gp_errf(err, errlen, "the forward could not be set up: %s",
                l == NULL ? "out of memory" : strerror(errno));
        free(l);
        close(srun_fd);
        return GP_ESYS;
    }
    l->srun_fd = srun_fd;
    l->user_fd = sp[1];
    l->left = 2;
    pthread_mutex_init(&l->mu, NULL);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 256 * 1024);
    pthread_t t;
    if (pthread_create(&t, &a, port_down, l) != 0) {
        pthread_attr_destroy(&a);
        close(sp[0]);
        close(sp[1]);
        close(srun_fd);
        pthread_mutex_destroy(&l->mu);
        free(l);
        gp_errf(err, errlen, "the forward could not be set up: no thread");
        return GP_ESYS;
    }
    if (pthread_create(&t, &a, port_up, l) != 0) {
        /* port_down ends on the shut sockets; this is port_up's share. */
        pthread_attr_destroy(&a);
        shutdown(srun_fd, SHUT_RDWR);
        shutdown(sp[1], SHUT_RDWR);
        close(sp[0]);
        link_done(l);
        gp_errf(err, errlen, "the forward could not be set up: no thread");
        return GP_ESYS;
    }
    pthread_attr_destroy(&a);
    *out = sp[0];
    return 0;
}

int gpx__slurm_session(gpx__slurm *sx, long jobid, const char *key, const gp_session_req *req,
                       int *out, char *err, size_t errlen) {
    *out = -1;
    gpx__slurm_sess_reap(sx, 0);
    uint8_t msg[GP_CH_HEAD + GP_CH_PAYLOAD_MAX];
    size_t len = 0;
    int rc = gpx__sessd_request(req, msg, &len, err, errlen);
    if (rc < 0)
        return rc;
    char dir[PATH_MAX], buf[64], name[GPX__SLURM_KEY_MAX + 40];
    unsigned uid = 0, gid = 0;
    if (gpx__slurm_task_dir(sx, key, dir, sizeof dir) < 0 ||
        gpx__slurm_read(dir, "tty", buf, sizeof buf) <= 0 ||
        sscanf(buf, "%u %u", &uid, &gid) != 2) {
        gp_errf(err, errlen, "the task has no terminal (it was not started interactive)");
        return GP_ESTATE;
    }
    if (gpx__slurm_read(dir, "exit", buf, sizeof buf) > 0 ||
        gpx__slurm_read_untrusted(dir, "user/exit", buf, sizeof buf) > 0) {
        gp_errf(err, errlen, "the task has ended");
        return GP_ESTATE;
    }
    gpx__slurm_sess_name(sx, key, name, sizeof name);
    char path[PATH_MAX], job[48], reuid[32], regid[32];
    if (sx->bin[0] != '\0' && gpx__exec_fmt(path, sizeof path, "%s/srun", sx->bin) < 0) {
        gp_errf(err, errlen, "bin_dir: path too long");
        return GP_EINVAL;
    }
    if (sx->bin[0] == '\0')
        snprintf(path, sizeof path, "srun");
    snprintf(job, sizeof job, "--jobid=%ld", jobid);
    snprintf(reuid, sizeof reuid, "--reuid=%u", uid);
    snprintf(regid, sizeof regid, "--regid=%u", gid);
    const char *argv[24];
    int k = 0;
    argv[k++] = "srun";
    argv[k++] = job;
    argv[k++] = "--overlap";
    argv[k++] = "--unbuffered";
    argv[k++] = "--quiet";
    argv[k++] = "--nodes=1";
    argv[k++] = "--ntasks=1";
    argv[k++] = "--job-name=gp-session";
    char hdir[PATH_MAX], suid[32], sgid[32];
    int slice = gpx__slurm_is_slice(dir, hdir, sizeof hdir);
    snprintf(suid, sizeof suid, "--uid=%u", uid);
    snprintf(sgid, sizeof sgid, "--gid=%u", gid);
    if (uid != (unsigned)getuid() && !slice) {
        /* The user's own job: only its user may add a step to it, and
         * root may act as that user. */
        argv[k++] = suid;
        argv[k++] = sgid;
    }
    if (uid != (unsigned)getuid() && slice) {
        argv[k++] = "setpriv";
        argv[k++] = reuid;
        argv[k++] = regid;
        argv[k++] = "--init-groups";
        argv[k++] = "--no-new-privs";
        argv[k++] = "--";
    }
    argv[k++] = sx->session_prog;
    argv[k++] = "connect";
    argv[k++] = name;
    argv[k] = NULL;
    int sp[2] = {-1, -1}, ep[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
        gp_errf(err, errlen, "socketpair: %s", strerror(errno));
        for (int i = 0; i < 2; i++) {
            if (sp[i] >= 0)
                close(sp[i]);
            if (ep[i] >= 0)
                close(ep[i]);
        }
        return GP_ESYS;
    }
    /* The child only makes async-signal-safe calls: gpupoold is threaded. */
    pid_t pid = fork();
    if (pid == 0) {
        dup2(sp[1], 0);
        dup2(sp[1], 1);
        dup2(ep[1], 2);
        signal(SIGPIPE, SIG_DFL);
        gpx__slurm_exec(sx, path, argv);
    }
    int e = errno;
    close(sp[1]);
    close(ep[1]);
    if (pid < 0) {
        close(sp[0]);
        close(ep[0]);
        gp_errf(err, errlen, "srun: fork: %s", strerror(e));
        return GP_ESYS;
    }
    if (req->kind == GP_SESSION_NOTICE) {
        /* Handed over, not waited for (the caller may be the scheduling
         * loop): the message fits the socketpair's buffer, and the relay
         * ends once the server has read it. */
        rc = send(sp[0], msg, len, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)len ? 0 : GP_EIO;
        if (rc < 0)
            gp_errf(err, errlen, "the notice could not be handed to srun");
        close(sp[0]);
        keep(sx, pid, ep[0]);
        return rc;
    }
    struct timeval tv = {OPEN_TIMEOUT_S, 0};
    setsockopt(sp[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(sp[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int passed = -1;
    rc = gpx__sessd_handshake(sp[0], msg, len, &passed, err, errlen);
    if (passed >= 0)
        close(passed); /* the relay passes none through srun */
    if (rc < 0) {
        char said[200];
        kill(pid, SIGTERM);
        srun_said(ep[0], said, sizeof said);
        if (said[0] != '\0' && strstr(err, "did not answer") != NULL)
            gp_errf(err, errlen, "the task's session endpoint did not answer (%s)", said);
        close(sp[0]);
        keep(sx, pid, ep[0]);
        return rc;
    }
    struct timeval none = {0, 0};
    setsockopt(sp[0], SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    setsockopt(sp[0], SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
    keep(sx, pid, ep[0]);
    if (req->kind == GP_SESSION_PORT)
        return link_port(sp[0], out, err, errlen);
    *out = sp[0];
    return 0;
}
