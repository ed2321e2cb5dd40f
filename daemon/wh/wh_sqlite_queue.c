/*
 * wh_sqlite_queue.c - this process's writers of one SQLite file take
 * turns in the process (wh_sqlite_queue.h).
 *
 * One mutex guards every queue and the list of them: a turn is taken or
 * given once per run, far less often than the run's own work.  A writer
 * that finds the file free takes it, even past sleeping waiters: waking
 * a sleeper costs a context switch during which nobody would write, and
 * on a busy machine a run already on a CPU writes sooner (the SQLite node
 * of tests/bench/cluster_bench.py: 0.15 of the time per partition less
 * than with every turn handed over in order).  Fairness is kept by age:
 * a waiter that waited WHQ_FAIR_MS asks for the next turn (q->fair), and
 * the next end of turn then hands the file straight to the longest
 * waiter, held throughout, so that no newcomer takes it first; so no run
 * waits much longer than the runs ahead of it take.  Otherwise an end of
 * turn frees the file and wakes the longest waiter, which takes it if
 * it is still free.  Each waiter sleeps on a condition variable of its
 * own (monotonic clock): an end of turn wakes one waiter, not all.  A
 * waiter that gives up leaves the line; one handed the turn as it gave
 * up takes it (granted is checked first), so that no turn is lost.
 */
#include "wh_sqlite_queue.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "clock_ms.h"
#include "xalloc.h"

#define WHQ_FAIR_MS 10

struct whq_waiter {
	pthread_cond_t cv;
	bool granted;
	struct whq_waiter *next;
};

struct whq {
	dev_t dev;
	ino_t ino;
	int refs;
	bool held;
	bool fair;              /* the next end of turn hands it to head */
	struct whq_waiter *head, *tail;
	struct whq *next;
};

static pthread_mutex_t whq_mu = PTHREAD_MUTEX_INITIALIZER;
static struct whq *whq_all;

struct whq *
whq_get(dev_t dev, ino_t ino)
{
	struct whq *q;

	pthread_mutex_lock(&whq_mu);
	for (q = whq_all; q != NULL; q = q->next)
		if (q->dev == dev && q->ino == ino)
			break;
	if (q == NULL) {
		q = xcalloc(1, sizeof *q);
		q->dev = dev;
		q->ino = ino;
		q->next = whq_all;
		whq_all = q;
	}
	q->refs++;
	pthread_mutex_unlock(&whq_mu);
	return q;
}

void
whq_put(struct whq *q)
{
	struct whq **p;

	if (q == NULL)
		return;
	pthread_mutex_lock(&whq_mu);
	if (--q->refs == 0) {
		for (p = &whq_all; *p != q; p = &(*p)->next)
			;
		*p = q->next;
		free(q);
	}
	pthread_mutex_unlock(&whq_mu);
}

/* Take w out of q's line. */
static void
whq_leave(struct whq *q, struct whq_waiter *w)
{
	struct whq_waiter **p, *prev = NULL;

	for (p = &q->head; *p != NULL && *p != w; p = &(*p)->next)
		prev = *p;
	if (*p == NULL)
		return;
	*p = w->next;
	if (q->tail == w)
		q->tail = prev;
}

/* Sleep on w's condition variable for at most ms. */
static void
whq_sleep(struct whq_waiter *w, int64_t ms)
{
	int64_t until = clock_ms(CLOCK_MONOTONIC) + ms;
	struct timespec ts = { .tv_sec = until / 1000,
			       .tv_nsec = (until % 1000) * 1000000L };

	pthread_cond_timedwait(&w->cv, &whq_mu, &ts);
}

int
whq_take(struct whq *q, int64_t (*left)(void *arg), void *arg)
{
	struct whq_waiter w = { .granted = false, .next = NULL };
	pthread_condattr_t ca;
	int64_t since, ms;
	int rc = 0;

	pthread_mutex_lock(&whq_mu);
	if (!q->held && !q->fair) {
		q->held = true;
		pthread_mutex_unlock(&whq_mu);
		return 0;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w.cv, &ca);
	pthread_condattr_destroy(&ca);
	if (q->tail != NULL)
		q->tail->next = &w;
	else
		q->head = &w;
	q->tail = &w;
	since = clock_ms(CLOCK_MONOTONIC);
	for (;;) {
		if (w.granted)
			break; /* handed over by whq_give */
		if (!q->held && q->head == &w) {
			whq_leave(q, &w); /* free, and the longest waiter's */
			q->held = true;
			q->fair = false;
			break;
		}
		if ((ms = left(arg)) <= 0) {
			bool head = q->head == &w;

			whq_leave(q, &w);
			if (q->head == NULL)
				q->fair = false;
			else if (head && !q->held)
				pthread_cond_signal(&q->head->cv);
			rc = -1;
			break;
		}
		if (clock_ms(CLOCK_MONOTONIC) - since >= WHQ_FAIR_MS)
			q->fair = true; /* the next end of turn is the head's */
		whq_sleep(&w, ms);
	}
	pthread_mutex_unlock(&whq_mu);
	pthread_cond_destroy(&w.cv);
	return rc;
}

void
whq_give(struct whq *q)
{
	struct whq_waiter *w;

	pthread_mutex_lock(&whq_mu);
	w = q->head;
	if (w != NULL && q->fair) {
		q->head = w->next;
		if (q->head == NULL)
			q->tail = NULL;
		q->fair = false;
		w->granted = true; /* held stays: the turn is w's now */
	} else {
		q->held = false;
	}
	if (w != NULL)
		pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&whq_mu);
}

int
whq_waiting(struct whq *q)
{
	int n = 0;

	pthread_mutex_lock(&whq_mu);
	for (struct whq_waiter *w = q->head; w != NULL; w = w->next)
		n++;
	pthread_mutex_unlock(&whq_mu);
	return n;
}
