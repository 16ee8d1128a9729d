/*
 * mailbox.h — one mailbox type for the daemon's threads that work for
 * others: the scheduling loop (its commands, the pause worker's outcomes and
 * bare wake-ups), the store's writer (the writes it commits in groups), the
 * pause worker (the steps it runs) and the periodic threads (the log
 * janitor, the connection guard), which use only its deadline and its close.
 *
 * A letter is a gpd__letter at the start of the sender's own struct (its kind
 * says which struct, where one mailbox carries several). Letters are taken in
 * the order they were posted. A post hands the letter over (a heap letter is
 * the owner's to free once taken); a call posts a letter on the caller's
 * stack and waits until the owner answers it. Closing the mailbox is how its
 * owner is stopped: from then on a post or a call is refused at once ("gpupoold
 * is stopping"), the owner's next take says closed, the calls still in the
 * box are refused, and the posted letters still in it are handed back when
 * the mailbox is destroyed: no caller ever waits for an owner that has gone.
 *
 * Deadlines are on the monotonic clock (gpd__mono_ms), which a change of the
 * wall clock does not move. Every function may be called from any thread.
 */
#ifndef GP_DAEMON_MAILBOX_H
#define GP_DAEMON_MAILBOX_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"

typedef struct gpd__letter {
    struct gpd__letter *next; /* the mailbox's; then the taker's chain */
    int kind;                 /* the owner's: which struct opens with this letter */
    int rc;                   /* a call's answer */
    int call;                 /* mailbox.c's: posted by gpd__mailbox_call */
    int state;                /* mailbox.c's: a call waiting, answered or refused */
} gpd__letter;

typedef struct gpd__mailbox {
    pthread_mutex_t mu;
    pthread_cond_t posted;   /* a letter, a nudge or the close (monotonic clock) */
    pthread_cond_t answered; /* a call answered or refused */
    gpd__letter *head, *tail;
    int nudged, closed;
    int callers; /* threads inside gpd__mailbox_call */
} gpd__mailbox;

/* What gpd__mailbox_take found. */
enum { GPD__MAIL_TIMEOUT = 0, GPD__MAIL_WOKEN, GPD__MAIL_CLOSED };

/* Milliseconds on the monotonic clock, for the deadlines below. */
int64_t gpd__mono_ms(void);

/* Sets up an empty, open mailbox: 0, or GP_ESYS (nothing to destroy). */
int gpd__mailbox_init(gpd__mailbox *mb);

/* Ends mb once its owner thread has stopped (after gpd__mailbox_close): waits
 * until every caller has left gpd__mailbox_call and returns the posted
 * letters never taken (in order) for the caller to free. */
gpd__letter *gpd__mailbox_destroy(gpd__mailbox *mb);

/* Hands letter l to the owner: 0, or GP_ESTATE if mb is closed (l is then
 * still the caller's). */
int gpd__mailbox_post(gpd__mailbox *mb, gpd__letter *l);

/* Posts l (on the caller's stack) and waits until the owner answers it:
 * returns the answer's code, or GP_ESTATE with e saying "gpupoold is
 * stopping" if mb was closed before the owner took l. */
int gpd__mailbox_call(gpd__mailbox *mb, gpd__letter *l, gpd__err *e);

/* Answers call l with rc (the owner, after taking it); l belongs to its
 * caller again at once and must not be touched after. A letter that was
 * posted, not called, is left alone. */
void gpd__mailbox_answer(gpd__mailbox *mb, gpd__letter *l, int rc);

/* Answers every call of the chain l (as gpd__mailbox_take returned it),
 * each with the code its rc already holds, waking their callers once. */
void gpd__mailbox_answer_all(gpd__mailbox *mb, gpd__letter *l);

/* Wakes the owner's take without a letter (there is work elsewhere). */
void gpd__mailbox_nudge(gpd__mailbox *mb);

/* Waits until mb holds a letter or a nudge, mb is closed, or deadline_ms
 * (gpd__mono_ms; -1: none) has come. Returns GPD__MAIL_CLOSED once mb is
 * closed (*out NULL, even with letters left in it); otherwise takes the
 * first letters, at most max, in the order posted, into the chain *out
 * (NULL where none), clears the nudge and returns GPD__MAIL_WOKEN if there
 * were letters or a nudge, GPD__MAIL_TIMEOUT if the deadline came first. */
int gpd__mailbox_take(gpd__mailbox *mb, int64_t deadline_ms, size_t max, gpd__letter **out);

/* Sets up mb and starts its owner, the thread fn(arg), into *th: 0, or
 * GP_ESYS with nothing to undo. */
int gpd__mailbox_start(gpd__mailbox *mb, pthread_t *th, void *(*fn)(void *), void *arg);

/* Stops the owner started by gpd__mailbox_start: closes mb, waits for th to
 * end and destroys mb; returns what gpd__mailbox_destroy returns. */
gpd__letter *gpd__mailbox_stop(gpd__mailbox *mb, pthread_t th);

/* Closes mb: posts and calls are refused from now on, so are the calls still
 * in the box (their callers return at once), and the owner's take returns
 * GPD__MAIL_CLOSED. A call the owner already took is still answered by it.
 * Idempotent. */
void gpd__mailbox_close(gpd__mailbox *mb);

#endif /* GP_DAEMON_MAILBOX_H */
