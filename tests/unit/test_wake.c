/*
 * test_wake.c - waking the loop from other threads (daemon/server/exec/wake.h):
 * several threads queue items under a lock and wake the loop, which
 * drains them; every item is drained (no wake is lost), however the
 * sends and the drains interleave, and the loop closes clean.
 */
#include <check.h>
#include <stdlib.h>

#include <uv.h>

#include "wake.h"

#define THREADS 4
#define ITEMS 20000 /* per thread */

struct queue {
	uv_mutex_t lock;
	long queued;     /* items not drained yet */
	long drained;
	long wakes;      /* callbacks */
	struct wake wake;
};

/* A sender: queue an item, then wake the loop; ITEMS times. */
static void
sender_main(void *arg)
{
	struct queue *q = arg;

	for (int i = 0; i < ITEMS; i++) {
		uv_mutex_lock(&q->lock);
		q->queued++;
		uv_mutex_unlock(&q->lock);
		wake_send(&q->wake);
		if (i % 64 == 0)
			uv_sleep(0); /* let the loop drain mid-way too */
	}
}

/* The loop's drain: take everything queued; stop once all came. */
static void
drain_cb(struct wake *w)
{
	struct queue *q = w->data;

	uv_mutex_lock(&q->lock);
	q->drained += q->queued;
	q->queued = 0;
	uv_mutex_unlock(&q->lock);
	q->wakes++;
	if (q->drained == (long)THREADS * ITEMS)
		wake_close(w, NULL);
}

START_TEST(no_wake_lost)
{
	static struct queue q;
	uv_thread_t t[THREADS];
	uv_loop_t loop;

	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ck_assert_int_eq(uv_mutex_init(&q.lock), 0);
	ck_assert_int_eq(wake_init(&loop, &q.wake, drain_cb), 0);
	q.wake.data = &q;
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(uv_thread_create(&t[i], sender_main, &q), 0);
	/* returns only once drain_cb closed the wake: all items drained */
	ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
	for (int i = 0; i < THREADS; i++)
		uv_thread_join(&t[i]);
	ck_assert_int_eq(q.drained, (long)THREADS * ITEMS);
	ck_assert_int_eq(q.queued, 0);
	/* the flag saves writes: far fewer wakes than sends */
	ck_assert_int_lt(q.wakes, (long)THREADS * ITEMS);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	uv_mutex_destroy(&q.lock);
}
END_TEST

START_TEST(unref_lets_the_loop_end)
{
	struct wake w;
	uv_loop_t loop;

	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ck_assert_int_eq(wake_init(&loop, &w, NULL), 0);
	wake_ref(&w, 0);
	ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0); /* not held */
	wake_close(&w, NULL);
	ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("wake");
	TCase *tc = tcase_create("wake");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, no_wake_lost);
	tcase_add_test(tc, unref_lets_the_loop_end);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
