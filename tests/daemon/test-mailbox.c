/*
 * test-mailbox.c — the daemon's mailbox (src/daemon/mailbox.h) on its own:
 * letters are taken in the order posted (the scheduling loop once served the
 * newest command first), a take wakes on a post and on a nudge, a deadline
 * on the monotonic clock ends a take, closing refuses new letters and the
 * calls still waiting ("gpupoold is stopping") while a call already taken is
 * still answered, and many threads posting and calling at once, answered
 * one by one or a batch at once, lose nothing and keep each one's order.
 * The ThreadSanitizer pass runs it too.
 *
 * No test sleeps for a fixed time: a thread that must be waiting inside the
 * mailbox is waited for by reading the mailbox's own count of callers.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/gp_error.h"
#include "daemon/mailbox.h"
#include "gptest.h"

typedef struct note {
    gpd__letter l;
    int poster, seq;
} note;

/* Waits until n callers are inside gpd__mailbox_call of mb. */
static void wait_callers(gpd__mailbox *mb, int n) {
    for (;;) {
        pthread_mutex_lock(&mb->mu);
        int in = mb->callers;
        pthread_mutex_unlock(&mb->mu);
        if (in >= n)
            return;
        sched_yield();
    }
}

START_TEST(test_order) {
    gpd__mailbox mb;
    ck_assert_int_eq(gpd__mailbox_init(&mb), 0);
    note n[10];
    for (int i = 0; i < 10; i++) {
        n[i] = (note){.seq = i};
        ck_assert_int_eq(gpd__mailbox_post(&mb, &n[i].l), 0);
    }
    /* The first three, then the rest, each in the order posted. */
    gpd__letter *l;
    ck_assert_int_eq(gpd__mailbox_take(&mb, -1, 3, &l), GPD__MAIL_WOKEN);
    int want = 0;
    for (; l; l = l->next)
        ck_assert_int_eq(((note *)l)->seq, want++);
    ck_assert_int_eq(want, 3);
    note late = {.seq = 10};
    ck_assert_int_eq(gpd__mailbox_post(&mb, &late.l), 0);
    ck_assert_int_eq(gpd__mailbox_take(&mb, -1, SIZE_MAX, &l), GPD__MAIL_WOKEN);
    for (; l; l = l->next)
        ck_assert_int_eq(((note *)l)->seq, want++);
    ck_assert_int_eq(want, 11);
    /* Empty now: a deadline already past answers at once, with nothing. */
    ck_assert_int_eq(gpd__mailbox_take(&mb, 0, SIZE_MAX, &l), GPD__MAIL_TIMEOUT);
    ck_assert_ptr_null(l);
    gpd__mailbox_close(&mb);
    ck_assert_ptr_null(gpd__mailbox_destroy(&mb));
}
END_TEST

typedef struct taker {
    gpd__mailbox *mb;
    int got;
    gpd__letter *l;
} taker;

static void *take_forever(void *arg) {
    taker *t = arg;
    t->got = gpd__mailbox_take(t->mb, -1, SIZE_MAX, &t->l);
    return NULL;
}

/* Starts a thread taking from mb with no deadline into t. */
static void start_taker(gpd__mailbox *mb, taker *t, pthread_t *th) {
    *t = (taker){.mb = mb};
    ck_assert_int_eq(pthread_create(th, NULL, take_forever, t), 0);
}

START_TEST(test_wake_on_post_nudge_and_close) {
    gpd__mailbox mb;
    ck_assert_int_eq(gpd__mailbox_init(&mb), 0);
    taker t;
    pthread_t th;
    start_taker(&mb, &t, &th);
    note n = {.seq = 7};
    ck_assert_int_eq(gpd__mailbox_post(&mb, &n.l), 0);
    pthread_join(th, NULL);
    ck_assert_int_eq(t.got, GPD__MAIL_WOKEN);
    ck_assert_ptr_eq(t.l, &n.l);
    ck_assert_ptr_null(t.l->next);

    /* A nudge wakes a take without a letter, once. */
    start_taker(&mb, &t, &th);
    gpd__mailbox_nudge(&mb);
    pthread_join(th, NULL);
    ck_assert_int_eq(t.got, GPD__MAIL_WOKEN);
    ck_assert_ptr_null(t.l);
    gpd__letter *l;
    ck_assert_int_eq(gpd__mailbox_take(&mb, 0, SIZE_MAX, &l), GPD__MAIL_TIMEOUT);

    /* The close wakes it too, saying so. */
    start_taker(&mb, &t, &th);
    gpd__mailbox_close(&mb);
    pthread_join(th, NULL);
    ck_assert_int_eq(t.got, GPD__MAIL_CLOSED);
    ck_assert_ptr_null(t.l);
    ck_assert_ptr_null(gpd__mailbox_destroy(&mb));
}
END_TEST

START_TEST(test_deadline) {
    gpd__mailbox mb;
    ck_assert_int_eq(gpd__mailbox_init(&mb), 0);
    gpd__letter *l;
    int64_t t0 = gpd__mono_ms();
    ck_assert_int_eq(gpd__mailbox_take(&mb, t0 + 200, SIZE_MAX, &l), GPD__MAIL_TIMEOUT);
    int64_t took = gpd__mono_ms() - t0;
    ck_assert_ptr_null(l);
    ck_assert_int_ge(took, 200);
    ck_assert_int_lt(took, 30000);
    /* A letter waiting is taken even with the deadline past. */
    note n = {.seq = 1};
    ck_assert_int_eq(gpd__mailbox_post(&mb, &n.l), 0);
    ck_assert_int_eq(gpd__mailbox_take(&mb, t0, SIZE_MAX, &l), GPD__MAIL_WOKEN);
    ck_assert_ptr_eq(l, &n.l);
    gpd__mailbox_close(&mb);
    gpd__mailbox_destroy(&mb);
}
END_TEST

typedef struct caller {
    gpd__mailbox *mb;
    note n;
    gpd__err e;
    int rc;
} caller;

static void *call_once(void *arg) {
    caller *c = arg;
    c->rc = gpd__mailbox_call(c->mb, &c->n.l, &c->e);
    return NULL;
}

START_TEST(test_close_with_waiters) {
    enum { N = 4 };
    gpd__mailbox mb;
    ck_assert_int_eq(gpd__mailbox_init(&mb), 0);
    caller c[N];
    pthread_t th[N];
    /* The first caller's letter is taken by the owner before the close;
     * the others wait in the box. */
    c[0] = (caller){.mb = &mb, .n.seq = 0};
    ck_assert_int_eq(pthread_create(&th[0], NULL, call_once, &c[0]), 0);
    wait_callers(&mb, 1);
    gpd__letter *taken;
    ck_assert_int_eq(gpd__mailbox_take(&mb, -1, SIZE_MAX, &taken), GPD__MAIL_WOKEN);
    ck_assert_ptr_eq(taken, &c[0].n.l);
    for (int i = 1; i < N; i++) {
        c[i] = (caller){.mb = &mb, .n.seq = i};
        ck_assert_int_eq(pthread_create(&th[i], NULL, call_once, &c[i]), 0);
    }
    wait_callers(&mb, N);
    note posted = {.seq = 99};
    ck_assert_int_eq(gpd__mailbox_post(&mb, &posted.l), 0);

    gpd__mailbox_close(&mb);
    /* Each waiting caller is refused, saying why; the owner is told. */
    for (int i = 1; i < N; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(c[i].rc, GP_ESTATE);
        ck_assert_int_eq(c[i].e.code, GP_ESTATE);
        ck_assert_str_eq(c[i].e.msg, "gpupoold is stopping");
    }
    /* The owner's take says closed, with letters left in the box. */
    gpd__letter *l;
    ck_assert_int_eq(gpd__mailbox_take(&mb, -1, SIZE_MAX, &l), GPD__MAIL_CLOSED);
    ck_assert_ptr_null(l);
    /* A letter posted or called after the close is refused at once. */
    note after = {.seq = 100};
    ck_assert_int_eq(gpd__mailbox_post(&mb, &after.l), GP_ESTATE);
    gpd__err e = {0};
    ck_assert_int_eq(gpd__mailbox_call(&mb, &after.l, &e), GP_ESTATE);
    ck_assert_str_eq(e.msg, "gpupoold is stopping");
    /* The call taken before the close still gets its answer. */
    gpd__mailbox_answer(&mb, taken, 42);
    pthread_join(th[0], NULL);
    ck_assert_int_eq(c[0].rc, 42);
    /* The post never taken comes back to be freed. */
    gpd__letter *left = gpd__mailbox_destroy(&mb);
    ck_assert_ptr_eq(left, &posted.l);
    ck_assert_ptr_null(left->next);
}
END_TEST

enum { POSTERS = 8, EACH = 2000 };

typedef struct poster {
    gpd__mailbox *mb;
    int id;
    int bad; /* calls answered with another letter's code */
} poster;

/* Half of each poster's letters are calls (answered with poster * EACH +
 * seq), half heap posts. */
static void *post_many(void *arg) {
    poster *p = arg;
    for (int i = 0; i < EACH; i++) {
        if (i % 2) {
            note n = {.poster = p->id, .seq = i};
            int rc = gpd__mailbox_call(p->mb, &n.l, NULL);
            if (rc != p->id * EACH + i)
                p->bad++;
        } else {
            note *n = malloc(sizeof *n);
            ck_assert_ptr_nonnull(n);
            *n = (note){.poster = p->id, .seq = i};
            ck_assert_int_eq(gpd__mailbox_post(p->mb, &n->l), 0);
        }
    }
    return NULL;
}

START_TEST(test_many_posters) {
    gpd__mailbox mb;
    ck_assert_int_eq(gpd__mailbox_init(&mb), 0);
    poster p[POSTERS];
    pthread_t th[POSTERS];
    for (int i = 0; i < POSTERS; i++) {
        p[i] = (poster){.mb = &mb, .id = i};
        ck_assert_int_eq(pthread_create(&th[i], NULL, post_many, &p[i]), 0);
    }
    int next[POSTERS] = {0};
    int total = 0;
    size_t max = 1;
    while (total < POSTERS * EACH) {
        gpd__letter *l;
        /* Batches of every size: one letter, a few, all there are. */
        int got = gpd__mailbox_take(&mb, gpd__mono_ms() + 30000, max, &l);
        max = max == 1 ? 5 : max == 5 ? SIZE_MAX : 1;
        ck_assert_int_ne(got, GPD__MAIL_CLOSED);
        ck_assert_msg(got == GPD__MAIL_WOKEN, "no letter for 30 s after %d of %d", total,
                      POSTERS * EACH);
        /* Calls are answered one by one, or (every other batch) chained
         * and answered together as the store's writer does. */
        int together = total % 2;
        gpd__letter *calls = NULL, **tail = &calls;
        while (l) {
            gpd__letter *n = l->next;
            note *x = (note *)l;
            ck_assert_int_eq(x->seq, next[x->poster]);
            next[x->poster]++;
            total++;
            if (!l->call) {
                free(x);
            } else if (together) {
                l->rc = x->poster * EACH + x->seq;
                *tail = l;
                tail = &l->next;
            } else {
                gpd__mailbox_answer(&mb, l, x->poster * EACH + x->seq);
            }
            l = n;
        }
        *tail = NULL;
        gpd__mailbox_answer_all(&mb, calls);
    }
    for (int i = 0; i < POSTERS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(p[i].bad, 0);
        ck_assert_int_eq(next[i], EACH);
    }
    gpd__mailbox_close(&mb);
    ck_assert_ptr_null(gpd__mailbox_destroy(&mb));
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_order);
    tcase_add_test(tc, test_wake_on_post_nudge_and_close);
    tcase_add_test(tc, test_deadline);
    tcase_add_test(tc, test_close_with_waiters);
    tcase_add_test(tc, test_many_posters);
}

GP_TEST_MAIN("daemon/mailbox", add_tests)
