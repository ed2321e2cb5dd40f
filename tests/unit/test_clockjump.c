/*
 * test_clockjump.c - the watcher of steps of the system clock
 * (clockjump.h): it starts on a loop without keeping it alive, holds one
 * descriptor, and closes with the loop leaving nothing open.  A step
 * itself needs CAP_SYS_TIME and would move the clock of every process on
 * the host: not done here (docs/architecture.md, "The clock").
 */
#include <check.h>
#include <dirent.h>
#include <stdlib.h>

#include <uv.h>

#include "clockjump.h"

static int calls;

static void
jump_cb(void *data)
{
	(void)data;
	calls++;
}

/* Open descriptors of this process. */
static int
open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

START_TEST(start_and_close)
{
	uv_loop_t loop;
	struct clockjump *cj;
	int before;

	ck_assert_int_eq(uv_loop_init(&loop), 0);
	uv_run(&loop, UV_RUN_NOWAIT);
	before = open_fds();
	cj = clockjump_start(&loop, jump_cb, NULL);
	ck_assert_ptr_nonnull(cj);
	ck_assert_int_eq(open_fds(), before + 1);
	/* unreferenced: the loop does not wait for a step that never comes */
	ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
	ck_assert_int_eq(calls, 0);
	clockjump_close(cj);
	clockjump_close(NULL);
	ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
	ck_assert_int_eq(open_fds(), before);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

static Suite *
clockjump_suite(void)
{
	Suite *s = suite_create("clockjump");
	TCase *tc = tcase_create("clockjump");

	tcase_add_test(tc, start_and_close);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(clockjump_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
