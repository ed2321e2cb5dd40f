/*
 * test_wh_queue.c - the turns of one process's writers of a SQLite file
 * (daemon/wh/wh_sqlite_queue.h): one queue per file, a turn taken at once
 * when free, handed to a waiter at its end, a waiter that gives up
 * leaving the line without losing a turn, and a long wait served before
 * any newcomer.  Each waiter is a thread; the test learns that it waits
 * from its left() callback (called before each sleep), never from a
 * sleep of its own.
 */
#include <check.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "wh_sqlite_queue.h"

struct waiter {
	struct whq *q;
	sem_t waiting;          /* posted at its first left() */
	atomic_int calls;       /* left() calls */
	atomic_int give_up;     /* left() answers 0 once set */
	int64_t step_ms;        /* left()'s answer otherwise */
	int rc;                 /* whq_take's */
	pthread_t th;
};

static int64_t
waiter_left(void *arg)
{
	struct waiter *w = arg;

	if (atomic_fetch_add(&w->calls, 1) == 0)
		sem_post(&w->waiting);
	return atomic_load(&w->give_up) ? 0 : w->step_ms;
}

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->rc = whq_take(w->q, waiter_left, w);
	return NULL;
}

/* Start a waiter on q and return once it waits in the line. */
static void
waiter_start(struct waiter *w, struct whq *q, int64_t step_ms)
{
	w->q = q;
	sem_init(&w->waiting, 0, 0);
	atomic_init(&w->calls, 0);
	atomic_init(&w->give_up, 0);
	w->step_ms = step_ms;
	w->rc = 99;
	ck_assert_int_eq(pthread_create(&w->th, NULL, waiter_main, w), 0);
	sem_wait(&w->waiting);
}

static int
waiter_join(struct waiter *w)
{
	pthread_join(w->th, NULL);
	sem_destroy(&w->waiting);
	return w->rc;
}

/* A left() that never lets a caller wait: a try. */
static int64_t
no_wait(void *arg)
{
	(void)arg;
	return 0;
}

START_TEST(test_one_queue_per_file)
{
	struct whq *a = whq_get(1, 10), *b = whq_get(1, 10);
	struct whq *c = whq_get(1, 11), *d = whq_get(2, 10);

	ck_assert_ptr_eq(a, b);
	ck_assert_ptr_ne(a, c);
	ck_assert_ptr_ne(a, d);
	ck_assert_ptr_ne(c, d);
	/* a turn on one file is no turn on another */
	ck_assert_int_eq(whq_take(a, no_wait, NULL), 0);
	ck_assert_int_eq(whq_take(c, no_wait, NULL), 0);
	ck_assert_int_eq(whq_take(b, no_wait, NULL), -1);
	whq_give(a);
	whq_give(c);
	whq_put(a);
	whq_put(b);
	whq_put(c);
	whq_put(d);
	/* the last reference gone, the file's queue starts afresh */
	a = whq_get(1, 10);
	ck_assert_int_eq(whq_waiting(a), 0);
	ck_assert_int_eq(whq_take(a, no_wait, NULL), 0);
	whq_give(a);
	whq_put(a);
}
END_TEST

START_TEST(test_free_turn_taken_at_once)
{
	struct whq *q = whq_get(3, 1);

	ck_assert_int_eq(whq_take(q, no_wait, NULL), 0);
	ck_assert_int_eq(whq_take(q, no_wait, NULL), -1);
	ck_assert_int_eq(whq_waiting(q), 0);
	whq_give(q);
	ck_assert_int_eq(whq_take(q, no_wait, NULL), 0);
	whq_give(q);
	whq_put(q);
}
END_TEST

START_TEST(test_end_of_turn_wakes_the_waiter)
{
	struct whq *q = whq_get(3, 2);
	struct waiter w;

	ck_assert_int_eq(whq_take(q, no_wait, NULL), 0);
	/* a step of a minute: only the end of the turn can wake it in time */
	waiter_start(&w, q, 60000);
	ck_assert_int_eq(whq_waiting(q), 1);
	whq_give(q);
	ck_assert_int_eq(waiter_join(&w), 0);
	ck_assert_int_eq(whq_waiting(q), 0);
	/* the turn is the waiter's now */
	ck_assert_int_eq(whq_take(q, no_wait, NULL), -1);
	whq_give(q);
	ck_assert_int_eq(whq_take(q, no_wait, NULL), 0);
	whq_give(q);
	whq_put(q);
}
END_TEST

START_TEST(test_give_up_leaves_the_line)
{
	struct whq *q = whq_get(3, 3);
	struct waiter first, second;

	ck_assert_int_eq(whq_take(q, no_wait, NULL), 0);
	waiter_start(&first, q, 2);
	waiter_start(&second, q, 60000);
	ck_assert_int_eq(whq_waiting(q), 2);
	/* the first in line gives up at its next look (2 ms) */
	atomic_store(&first.give_up, 1);
	ck_assert_int_eq(waiter_join(&first), -1);
	ck_assert_int_eq(whq_waiting(q), 1);
	/* the turn still goes to the one left */
	whq_give(q);
	ck_assert_int_eq(waiter_join(&second), 0);
	whq_give(q);
	ck_assert_int_eq(whq_waiting(q), 0);
	ck_assert_int_eq(whq_take(q, no_wait, NULL), 0);
	whq_give(q);
	whq_put(q);
}
END_TEST

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

START_TEST(test_long_wait_served_before_newcomers)
{
	struct whq *q = whq_get(3, 4);
	struct waiter old;
	struct timespec ts = { 0, 1000000L };
	int64_t t0;
	int seen;

	ck_assert_int_eq(whq_take(q, no_wait, NULL), 0);
	/* it looks every 2 ms; a look 15 ms after it joined the line comes
	 * after WHQ_FAIR_MS (10) of waiting: it asks for the next turn.  t0
	 * is read once it waits in the line (its first look), not before its
	 * thread started: a thread scheduled late joined the line later */
	waiter_start(&old, q, 2);
	t0 = now_ms();
	while (now_ms() - t0 < 15)
		nanosleep(&ts, NULL);
	seen = atomic_load(&old.calls);
	while (atomic_load(&old.calls) == seen && now_ms() - t0 < 60000)
		nanosleep(&ts, NULL);
	ck_assert_int_gt(atomic_load(&old.calls), seen);
	whq_give(q);
	/* handed over, not freed: a newcomer finds it taken */
	ck_assert_int_eq(whq_take(q, no_wait, NULL), -1);
	ck_assert_int_eq(waiter_join(&old), 0);
	whq_give(q);
	ck_assert_int_eq(whq_take(q, no_wait, NULL), 0);
	whq_give(q);
	whq_put(q);
}
END_TEST

enum { WRITERS = 8, ROUNDS = 300 };
static atomic_int inside, most, turns;

static int64_t
patient(void *arg)
{
	(void)arg;
	return 100;
}

static void *
writer_main(void *arg)
{
	struct whq *q = arg;

	for (int i = 0; i < ROUNDS; i++) {
		int n;

		ck_assert_int_eq(whq_take(q, patient, NULL), 0);
		n = atomic_fetch_add(&inside, 1) + 1;
		if (n > atomic_load(&most))
			atomic_store(&most, n);
		atomic_fetch_add(&turns, 1);
		atomic_fetch_sub(&inside, 1);
		whq_give(q);
	}
	return NULL;
}

START_TEST(test_many_writers_one_at_a_time)
{
	struct whq *q = whq_get(3, 5);
	pthread_t th[WRITERS];

	atomic_store(&inside, 0);
	atomic_store(&most, 0);
	atomic_store(&turns, 0);
	for (int i = 0; i < WRITERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, writer_main, q),
				 0);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(atomic_load(&most), 1);
	ck_assert_int_eq(atomic_load(&turns), WRITERS * ROUNDS);
	ck_assert_int_eq(whq_waiting(q), 0);
	ck_assert_int_eq(whq_take(q, no_wait, NULL), 0);
	whq_give(q);
	whq_put(q);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("wh_queue");
	TCase *tc = tcase_create("turns");

	tcase_add_test(tc, test_one_queue_per_file);
	tcase_add_test(tc, test_free_turn_taken_at_once);
	tcase_add_test(tc, test_end_of_turn_wakes_the_waiter);
	tcase_add_test(tc, test_give_up_leaves_the_line);
	tcase_add_test(tc, test_long_wait_served_before_newcomers);
	tcase_add_test(tc, test_many_writers_one_at_a_time);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
