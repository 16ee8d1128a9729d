/*
 * cmd.c — running Slurm's commands for the `slurm` executor.
 *
 * Every conversation with Slurm goes through one of its commands (sinfo,
 * squeue, sbatch, scancel, scontrol), started with fork and exec, with the
 * executor's SLURM_CONF in its environment; its standard output is
 * collected whole (JSON or sbatch's job id) and the first line of its
 * standard error becomes the error sentence. The environment is prepared
 * before fork, so that the child only makes async-signal-safe calls.
 *
 * It also holds the small-file helpers through which the executor keeps its
 * state on the shared state directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "common/gp_array.h"
#include "common/gp_error.h"
#include "executors/registry.h"
#include "executors/slurm/slurm.h"

typedef struct outbuf {
    char *p;
    size_t n, cap;
    int oom;
} outbuf;

/* Appends len bytes to b, keeping it NUL-terminated. */
static void buf_add(outbuf *b, const char *s, size_t len) {
    if (b->oom)
        return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + len + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (np == NULL) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = '\0';
}

/* Reads the child's two pipes until both are closed. */
static void drain(int ofd, int efd, outbuf *out, outbuf *errb) {
    struct pollfd pf[2] = {{.fd = ofd, .events = POLLIN}, {.fd = efd, .events = POLLIN}};
    int open_fds = 2;
    char chunk[8192];
    while (open_fds > 0) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || pf[i].revents == 0)
                continue;
            ssize_t r = read(pf[i].fd, chunk, sizeof chunk);
            if (r > 0) {
                buf_add(i == 0 ? out : errb, chunk, (size_t)r);
            } else if (r == 0 || errno != EINTR) {
                pf[i].fd = -1;
                open_fds--;
            }
        }
    }
}

/* True if what a failed command printed says it may succeed later: Slurm's
 * words for a controller that is busy, restarting or out of reach, and for
 * munged out of reach (slurm_errno.c). Anything else (a partition that does
 * not exist, a request Slurm refuses) fails the same way every time. */
static int transient(const char *msg) {
    static const char *const words[] = {
        "Socket timed out",
        "Unable to contact slurm controller",
        "Zero Bytes were transmitted or received",
        "Communication connection failure",
        "Message send failure",
        "Message receive failure",
        "Resource temporarily unavailable",
        "temporarily unable to accept job",
        "standby mode",
        "Connection refused",
        "Munge encode failed",
        NULL,
    };
    for (size_t i = 0; msg != NULL && words[i] != NULL; i++)
        if (strstr(msg, words[i]) != NULL)
            return 1;
    return 0;
}

void gpx__slurm_exec(const gpx__slurm *sx, const char *path, const char *const *argv) {
    /* exec takes char *const[]: the strings are not written to. */
    char *const *av;
    memcpy(&av, &argv, sizeof av);
    if (strchr(path, '/') != NULL)
        execve(path, av, sx->envp);
    else
        execvpe(path, av, sx->envp);
    _exit(127);
}

int gpx__slurm_run(const gpx__slurm *sx, const char *const *argv, char **out, char *err,
                   size_t errlen) {
    char path[PATH_MAX];
    if (sx->bin[0] != '\0') {
        if (gpx__exec_fmt(path, sizeof path, "%s/%s", sx->bin, argv[0]) < 0) {
            gp_errf(err, errlen, "%s: path too long", argv[0]);
            return GP_EINVAL;
        }
    } else {
        gpx__exec_fmt(path, sizeof path, "%s", argv[0]);
    }
    int op[2], ep[2];
    if (pipe2(op, O_CLOEXEC) < 0) {
        gp_errf(err, errlen, "%s: pipe: %s", argv[0], strerror(errno));
        return GP_ESYS;
    }
    if (pipe2(ep, O_CLOEXEC) < 0) {
        gp_errf(err, errlen, "%s: pipe: %s", argv[0], strerror(errno));
        close(op[0]);
        close(op[1]);
        return GP_ESYS;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int fe = errno;
        gp_errf(err, errlen, "%s: fork: %s", argv[0], strerror(fe));
        close(op[0]);
        close(op[1]);
        close(ep[0]);
        close(ep[1]);
        return fe == EAGAIN || fe == ENOMEM ? GP_EAGAIN : GP_ESYS;
    }
    if (pid == 0) {
        dup2(op[1], 1);
        dup2(ep[1], 2);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        gpx__slurm_exec(sx, path, argv);
    }
    close(op[1]);
    close(ep[1]);
    outbuf o = {0}, e = {0};
    drain(op[0], ep[0], &o, &e);
    close(op[0]);
    close(ep[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int rc = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const char *msg = e.p != NULL ? e.p : "";
        /* "sbatch: error: ..." after "sbatch failed: " says sbatch twice. */
        size_t cl = strlen(argv[0]);
        if (strncmp(msg, argv[0], cl) == 0 && strncmp(msg + cl, ": error: ", 9) == 0)
            msg += cl + 9;
        size_t len = strcspn(msg, "\n");
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && len == 0)
            gp_errf(err, errlen, "%s: cannot be executed (is Slurm installed?)", path);
        else
            gp_errf(err, errlen, "%s failed: %.*s", argv[0], (int)(len > 200 ? 200 : len), msg);
        rc = transient(e.p) ? GP_EAGAIN : GP_EIO;
    } else if (o.oom || e.oom) {
        gp_errf(err, errlen, "%s: out of memory reading its output", argv[0]);
        rc = GP_ENOMEM;
    }
    free(e.p);
    if (rc == 0 && out != NULL) {
        *out = o.p != NULL ? o.p : strdup("");
        if (*out == NULL)
            rc = GP_ENOMEM;
    } else {
        free(o.p);
    }
    return rc;
}

ssize_t gpx__slurm_read(const char *dir, const char *name, char *buf, size_t cap) {
    char path[PATH_MAX];
    if (gpx__exec_fmt(path, sizeof path, "%s/%s", dir, name) < 0)
        return GP_ERANGE;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return gp_syserr(errno);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return (ssize_t)n;
}

ssize_t gpx__slurm_read_untrusted(const char *dir, const char *name, char *buf, size_t cap) {
    char path[PATH_MAX];
    buf[0] = '\0';
    if (gpx__exec_fmt(path, sizeof path, "%s/%s", dir, name) < 0)
        return GP_ERANGE;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return gp_syserr(errno);
    struct stat st;
    ssize_t n = GP_EINVAL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (n = read(fd, buf, cap - 1)) < 0)
        n = gp_syserr(errno);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return n;
}

int gpx__slurm_write(const char *dir, const char *name, const char *text) {
    char path[PATH_MAX], tmp[PATH_MAX];
    if (gpx__exec_fmt(path, sizeof path, "%s/%s", dir, name) < 0 ||
        gpx__exec_fmt(tmp, sizeof tmp, "%s/.%s.tmp", dir, name) < 0)
        return GP_EINVAL;
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return GP_ESYS;
    int bad = fputs(text, f) < 0;
    bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) < 0) {
        unlink(tmp);
        return GP_ESYS;
    }
    return 0;
}

FILE *gpx__slurm_create(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "w");
    if (f == NULL)
        gp_errf(err, errlen, "state_dir: cannot write %s: %s", path, strerror(errno));
    return f;
}

int gpx__slurm_finish(FILE *f, const char *path, char *err, size_t errlen) {
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        gp_errf(err, errlen, "state_dir: cannot write %s", path);
        return GP_ESYS;
    }
    return 0;
}

int gpx__slurm_task_dir(const gpx__slurm *sx, const char *key, char *dir, size_t len) {
    return gpx__exec_fmt(dir, len, "%s/%s", sx->state_dir, key);
}

int gpx__slurm_json(const gpx__slurm *sx, const char *const *argv, json_t **root, char *err,
                    size_t errlen) {
    char *out = NULL;
    *root = NULL;
    int rc = gpx__slurm_run(sx, argv, &out, err, errlen);
    if (rc < 0)
        return rc;
    json_error_t jerr;
    *root = json_loads(out, 0, &jerr);
    free(out);
    if (*root == NULL) {
        gp_errf(err, errlen, "%s: not JSON: %s", argv[0], jerr.text);
        return GP_EPARSE;
    }
    return 0;
}

int gpx__slurm_sbatch(const gpx__slurm *sx, const gp_node_spec *node, const char *const *opts,
                      const char *script, long *jobid, char *err, size_t errlen) {
    const char *argv[32];
    char part[GP_NAME_MAX + 16];
    int k = 0;
    argv[k++] = "sbatch";
    argv[k++] = "--parsable";
    argv[k++] = "--nodes=1";
    argv[k++] = "--ntasks=1";
    argv[k++] = "--no-requeue";
    /* The node's partition (inventory.c): a node of the second configured
     * partition is not in the first. */
    const char *p = sx->npart > 0 ? sx->parts[0] : NULL;
    for (int i = 0; node != NULL && i < node->nlabels; i++)
        if (strcmp(node->labels[i].key, "slurm.partition") == 0)
            p = node->labels[i].value;
    if (p != NULL) {
        snprintf(part, sizeof part, "--partition=%s", p);
        argv[k++] = part;
    }
    for (size_t i = 0; opts[i] != NULL && k < 30; i++)
        argv[k++] = opts[i];
    argv[k++] = script;
    argv[k] = NULL;
    char *reply = NULL;
    int rc = gpx__slurm_run(sx, argv, &reply, err, errlen);
    if (rc < 0)
        return rc;
    char *end;
    long id = strtol(reply, &end, 10);
    if (end == reply || id <= 0 || (*end != '\0' && *end != '\n' && *end != ';')) {
        gp_errf(err, errlen, "sbatch answered '%.60s', not a job id", reply);
        free(reply);
        return GP_EIO;
    }
    free(reply);
    *jobid = id;
    return 0;
}

int gpx__slurm_parse_jobs(const char *text, gpx__slurm_job **jobs, size_t *n) {
    *jobs = NULL;
    *n = 0;
    size_t cap = 0;
    for (const char *line = text; line != NULL && *line != '\0';) {
        const char *nl = strchr(line, '\n');
        size_t len = nl != NULL ? (size_t)(nl - line) : strlen(line);
        const char *next = nl != NULL ? nl + 1 : NULL;
        gpx__slurm_job j;
        memset(&j, 0, sizeof j);
        const char *p = line, *end = line + len;
        char *q;
        /* Each field up to its '|', within this line only. */
        const char *bar1 = memchr(p, '|', len);
        const char *bar2 = bar1 != NULL ? memchr(bar1 + 1, '|', (size_t)(end - bar1 - 1)) : NULL;
        const char *bar3 = bar2 != NULL ? memchr(bar2 + 1, '|', (size_t)(end - bar2 - 1)) : NULL;
        const char *bar4 = bar3 != NULL ? memchr(bar3 + 1, '|', (size_t)(end - bar3 - 1)) : NULL;
        const char *bar5 = bar4 != NULL ? memchr(bar4 + 1, '|', (size_t)(end - bar4 - 1)) : NULL;
        line = next;
        if (bar5 == NULL || p[0] < '1' || p[0] > '9')
            continue;
        errno = 0;
        j.id = strtol(p, &q, 10);
        if (q != bar1 || errno != 0 || j.id <= 0)
            continue;
        size_t slen = (size_t)(bar2 - bar1 - 1);
        if (slen == 0 || slen >= sizeof j.state)
            continue;
        memcpy(j.state, bar1 + 1, slen);
        /* The exit code: a wait status, digits only. */
        long ws = 0;
        int bad = bar2 + 1 == bar3;
        for (const char *c = bar2 + 1; c < bar3 && !bad; c++) {
            bad = *c < '0' || *c > '9' || ws > 100000000;
            ws = ws * 10 + (*c - '0');
        }
        if (bad)
            continue;
        j.wstatus = (int)ws;
        size_t rlen = (size_t)(bar4 - bar3 - 1);
        if (rlen < sizeof j.reason)
            memcpy(j.reason, bar3 + 1, rlen);
        size_t llen = (size_t)(bar5 - bar4 - 1);
        if (llen < sizeof j.nodes)
            memcpy(j.nodes, bar4 + 1, llen);
        size_t nlen = (size_t)(end - bar5 - 1);
        if (nlen < sizeof j.name)
            memcpy(j.name, bar5 + 1, nlen);
        if (GP_ARRAY_ROOM(*jobs, *n, cap, 32) < 0) {
            free(*jobs);
            *jobs = NULL;
            *n = 0;
            return GP_ENOMEM;
        }
        (*jobs)[(*n)++] = j;
    }
    return 0;
}

int gpx__slurm_squeue(const gpx__slurm *sx, const char *filter, gpx__slurm_job **jobs, size_t *n,
                      char *err, size_t errlen) {
    const char *argv[] = {
        "squeue", "--noheader", "--states=all", filter, "--Format=" GPX__SLURM_SQUEUE_FORMAT, NULL};
    char *out = NULL;
    *jobs = NULL;
    *n = 0;
    int rc = gpx__slurm_run(sx, argv, &out, err, errlen);
    /* squeue refuses a --jobs list of which it knows none ("Invalid job id
     * specified"): every one of them has been forgotten. */
    if (rc == GP_EIO && err != NULL && strstr(err, "Invalid job id") != NULL)
        return 0;
    if (rc < 0)
        return rc;
    rc = gpx__slurm_parse_jobs(out, jobs, n);
    free(out);
    if (rc < 0)
        gp_errf(err, errlen, "squeue: out of memory reading its output");
    return rc;
}

int gpx__slurm_squeue_one(const gpx__slurm *sx, const char *filter, long id, const char *name,
                          gpx__slurm_job *job, char *err, size_t errlen) {
    gpx__slurm_job *jobs;
    size_t nj;
    int rc = gpx__slurm_squeue(sx, filter, &jobs, &nj, err, errlen);
    if (rc < 0)
        return rc;
    int found = 0;
    for (size_t i = 0; i < nj; i++)
        if ((id <= 0 || jobs[i].id == id) && (name == NULL || strcmp(jobs[i].name, name) == 0)) {
            found = 1;
            if (job != NULL)
                *job = jobs[i];
        }
    free(jobs);
    return found;
}
