/*
 * util.c — the small things every file of the daemon uses: the error record,
 * the clock, the names of workload states (generated from the one list in
 * daemon.h), the log every message of the daemon goes through, and whether
 * other users may pass through the data and checkpoint directories.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/gp_clock.h"
#include "common/gp_names.h"
#include "daemon/daemon.h"

int gpd__fail(gpd__err *e, int code, const char *field, const char *fmt, ...) {
    if (!e)
        return code;
    e->code = code;
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    gp_verrf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return code;
}

int64_t gpd__now_ms(void) {
    return gp_clock_ms(CLOCK_REALTIME);
}

/* A workload's history: the names of event kinds and outcomes. */
#define GPD__EVENT_NAME_(sym, name, doc) name,
#define GPD__EVENT_DOC_(sym, name, doc)  doc,
static const char *const event_names[] = {GPD__EVENTS(GPD__EVENT_NAME_)};
static const char *const event_docs[] = {GPD__EVENTS(GPD__EVENT_DOC_)};
static const char *const outcome_names[] = {GPD__OUTCOMES(GP_ENUM_NAME_OF)};
#undef GPD__EVENT_NAME_
#undef GPD__EVENT_DOC_
_Static_assert(sizeof event_names / sizeof event_names[0] == GPD__NEVENTS, "a name a kind");
_Static_assert(sizeof outcome_names / sizeof outcome_names[0] == GPD__NOUTCOMES, "a name each");

static const char *history_word(const char *const *words, unsigned n, int i) {
    return (unsigned)i < n ? words[i] : "?";
}

const char *gpd__event_name(gpd__event_kind k) {
    return history_word(event_names, GPD__NEVENTS, (int)k);
}

const char *gpd__event_doc(gpd__event_kind k) {
    return history_word(event_docs, GPD__NEVENTS, (int)k);
}

const char *gpd__outcome_name(gpd__outcome o) {
    return history_word(outcome_names, GPD__NOUTCOMES, (int)o);
}

void gpd__log(const char *fmt, ...) {
    char ts[32];
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s gpupoold: %s\n", ts, line);
}

/* Whether others may pass through every directory above dir, and dir itself
 * if self; what names it and setting the flag that moves it. */
static int dir_passable(const char *what, const char *setting, const char *dir, int self, char *why,
                        size_t len) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", dir);
    /* Every directory from the root down to dir itself, in that order. */
    for (char *slash = p + 1;; slash++) {
        char c = *slash;
        if (c != '/' && c != '\0')
            continue;
        *slash = '\0';
        struct stat st;
        if ((self || c != '\0') && stat(p, &st) == 0 && S_ISDIR(st.st_mode) &&
            !(st.st_mode & S_IXOTH)) {
            snprintf(why, len,
                     "%s %s: %s (mode %04o) does not let other users pass through, so "
                     "workloads of users other than the daemon's cannot enter their checkpoint "
                     "directories under it; run 'chmod o+x %s' or give gpupoold a %s "
                     "whose parents others may pass through",
                     what, dir, p, (unsigned)(st.st_mode & 07777), p, setting);
            return -1;
        }
        *slash = c;
        if (c == '\0')
            return 0;
    }
}

int gpd__dirs_passable(const gpd__config *c, char *why, size_t len) {
    /* The checkpoint directory itself is made passable by a root daemon at
     * start and by the executor at each launch: only those above it count. */
    if (dir_passable("data dir", "--data-dir", c->data_dir, 1, why, len) < 0)
        return -1;
    return dir_passable("checkpoint dir", "--checkpoint-dir", c->checkpoint_dir, 0, why, len);
}
