/*
 * mailbox.c — the daemon's one mailbox type (mailbox.h): a list of letters
 * in the order posted, under one mutex, with a condition variable on the
 * monotonic clock for the owner's take and one for the callers waiting on
 * their answers.
 */
#include <time.h>

#include "common/gp_clock.h"
#include "daemon/mailbox.h"

enum { WAITING = 0, ANSWERED, REFUSED };

int64_t gpd__mono_ms(void) {
    return gp_clock_ms(CLOCK_MONOTONIC);
}

int gpd__mailbox_init(gpd__mailbox *mb) {
    *mb = (gpd__mailbox){0};
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return GP_ESYS;
    int rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (rc == 0 && (rc = pthread_mutex_init(&mb->mu, NULL)) == 0) {
        if ((rc = pthread_cond_init(&mb->posted, &ca)) != 0) {
            pthread_mutex_destroy(&mb->mu);
        } else if ((rc = pthread_cond_init(&mb->answered, NULL)) != 0) {
            pthread_cond_destroy(&mb->posted);
            pthread_mutex_destroy(&mb->mu);
        }
    }
    pthread_condattr_destroy(&ca);
    return rc == 0 ? 0 : GP_ESYS;
}

gpd__letter *gpd__mailbox_destroy(gpd__mailbox *mb) {
    pthread_mutex_lock(&mb->mu);
    while (mb->callers > 0)
        pthread_cond_wait(&mb->answered, &mb->mu);
    gpd__letter *left = mb->head;
    mb->head = mb->tail = NULL;
    pthread_mutex_unlock(&mb->mu);
    pthread_cond_destroy(&mb->posted);
    pthread_cond_destroy(&mb->answered);
    pthread_mutex_destroy(&mb->mu);
    return left;
}

/* Appends l; under mb->mu, mb open. */
static void append(gpd__mailbox *mb, gpd__letter *l) {
    l->next = NULL;
    if (mb->tail)
        mb->tail->next = l;
    else
        mb->head = l;
    mb->tail = l;
    pthread_cond_signal(&mb->posted);
}

int gpd__mailbox_post(gpd__mailbox *mb, gpd__letter *l) {
    l->call = 0;
    pthread_mutex_lock(&mb->mu);
    int closed = mb->closed;
    if (!closed)
        append(mb, l);
    pthread_mutex_unlock(&mb->mu);
    return closed ? GP_ESTATE : 0;
}

int gpd__mailbox_call(gpd__mailbox *mb, gpd__letter *l, gpd__err *e) {
    l->call = 1;
    pthread_mutex_lock(&mb->mu);
    l->state = mb->closed ? REFUSED : WAITING;
    if (l->state == WAITING) {
        mb->callers++;
        append(mb, l);
        while (l->state == WAITING)
            pthread_cond_wait(&mb->answered, &mb->mu);
        /* The last caller to leave lets gpd__mailbox_destroy go on. */
        if (--mb->callers == 0)
            pthread_cond_broadcast(&mb->answered);
    }
    int refused = l->state == REFUSED, rc = l->rc;
    pthread_mutex_unlock(&mb->mu);
    return refused ? gpd__fail(e, GP_ESTATE, "", "gpupoold is stopping") : rc;
}

void gpd__mailbox_answer(gpd__mailbox *mb, gpd__letter *l, int rc) {
    if (!l->call)
        return;
    pthread_mutex_lock(&mb->mu);
    l->rc = rc;
    l->state = ANSWERED;
    pthread_cond_broadcast(&mb->answered);
    pthread_mutex_unlock(&mb->mu);
}

void gpd__mailbox_answer_all(gpd__mailbox *mb, gpd__letter *l) {
    pthread_mutex_lock(&mb->mu);
    while (l) {
        gpd__letter *next = l->next; /* l is its caller's once answered */
        if (l->call)
            l->state = ANSWERED;
        l = next;
    }
    pthread_cond_broadcast(&mb->answered);
    pthread_mutex_unlock(&mb->mu);
}

void gpd__mailbox_nudge(gpd__mailbox *mb) {
    pthread_mutex_lock(&mb->mu);
    mb->nudged = 1;
    pthread_cond_signal(&mb->posted);
    pthread_mutex_unlock(&mb->mu);
}

int gpd__mailbox_take(gpd__mailbox *mb, int64_t deadline_ms, size_t max, gpd__letter **out) {
    *out = NULL;
    pthread_mutex_lock(&mb->mu);
    int got = GPD__MAIL_TIMEOUT;
    for (;;) {
        if (mb->closed) {
            pthread_mutex_unlock(&mb->mu);
            return GPD__MAIL_CLOSED;
        }
        if (mb->head || mb->nudged) {
            got = GPD__MAIL_WOKEN;
            break;
        }
        if (deadline_ms < 0) {
            pthread_cond_wait(&mb->posted, &mb->mu);
            continue;
        }
        if (gpd__mono_ms() >= deadline_ms)
            break;
        struct timespec ts = {deadline_ms / 1000, (deadline_ms % 1000) * 1000000};
        pthread_cond_timedwait(&mb->posted, &mb->mu, &ts);
    }
    mb->nudged = 0;
    gpd__letter **tail = out;
    for (size_t n = 0; n < max && mb->head; n++) {
        *tail = mb->head;
        mb->head = mb->head->next;
        tail = &(*tail)->next;
    }
    *tail = NULL;
    if (!mb->head)
        mb->tail = NULL;
    pthread_mutex_unlock(&mb->mu);
    return got;
}

void gpd__mailbox_close(gpd__mailbox *mb) {
    pthread_mutex_lock(&mb->mu);
    mb->closed = 1;
    /* The calls left in the box are refused now; the posts stay for
     * gpd__mailbox_destroy to hand back. */
    gpd__letter **p = &mb->head;
    mb->tail = NULL;
    while (*p) {
        gpd__letter *l = *p;
        if (l->call) {
            *p = l->next;
            l->state = REFUSED;
        } else {
            mb->tail = l;
            p = &l->next;
        }
    }
    pthread_cond_broadcast(&mb->posted);
    pthread_cond_broadcast(&mb->answered);
    pthread_mutex_unlock(&mb->mu);
}

int gpd__mailbox_start(gpd__mailbox *mb, pthread_t *th, void *(*fn)(void *), void *arg) {
    if (gpd__mailbox_init(mb) < 0)
        return GP_ESYS;
    if (pthread_create(th, NULL, fn, arg) != 0) {
        gpd__mailbox_destroy(mb);
        return GP_ESYS;
    }
    return 0;
}

gpd__letter *gpd__mailbox_stop(gpd__mailbox *mb, pthread_t th) {
    gpd__mailbox_close(mb);
    pthread_join(th, NULL);
    return gpd__mailbox_destroy(mb);
}
