/*
 * test_commits.c - backfilld_commits (daemon/wh/wh_commits.h) on the SQLite
 * driver: created once, a run's rows found by the next attempt with the
 * note, a leftover older than its request replaced, a batch's rows one per
 * partition, pruning by the job's retention, nothing left by a rollback,
 * and the fence: a second insert of one identity fails (rule 4).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wh.h"
#include "wh_commits.h"

static char tmpdir[64];
static char dbpath[128];
static struct warehouse_def wh;
static struct wh_conn *conn;

/* A fresh warehouse file and a connection to it. */
static void
setup(void)
{
	struct err err;
	FILE *f;

	snprintf(tmpdir, sizeof tmpdir, "/tmp/bfd-commits-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(dbpath, sizeof dbpath, "%s/wh.db", tmpdir);
	f = fopen(dbpath, "w"); /* open() never creates a warehouse */
	ck_assert_ptr_nonnull(f);
	fclose(f);
	wh.name = "wh";
	wh.kind = WH_SQLITE;
	wh.path = dbpath;
	ck_assert_int_eq(wh_sqlite_driver.open(&wh, &conn, &err), 0);
}

/* Close and remove the warehouse. */
static void
teardown(void)
{
	wh_sqlite_driver.close(conn);
	unlink(dbpath);
	rmdir(tmpdir);
}

/* The number of rows of backfilld_commits matching `where`. */
static int
rows(const char *where)
{
	char sql[256], *v;
	struct err err;
	bool has;
	int n;

	snprintf(sql, sizeof sql, "SELECT count(*) FROM backfilld_commits"
		 " WHERE %s", where);
	ck_assert_int_eq(conn->drv->query_value(conn, sql, NULL, 0, &has, &v,
						&err), 0);
	n = atoi(v);
	free(v);
	return n;
}

/* One transaction: seen, then (when 0) record and commit, or roll back. */
static int
attempt(const char *const *keys, const struct wh_commit *c, size_t n,
	int64_t now, int64_t before, bool commit, char *note)
{
	bool present[8];
	struct err err;
	int r;

	ck_assert_uint_le(n, 8);
	ck_assert_int_eq(conn->drv->begin(conn, &err), 0);
	r = wh_commits_seen(conn, "j", keys, c, n, present, note, 128, &err);
	ck_assert_int_ge(r, 0);
	if (r == 0 && commit) {
		ck_assert_int_eq(wh_commits_record(conn, "j", keys, c, n,
						   present, now, before, &err),
				 0);
		ck_assert_int_eq(conn->drv->commit(conn, &err), 0);
	} else {
		conn->drv->rollback(conn);
	}
	return r;
}

START_TEST(test_once_per_request)
{
	const char *keys[] = { "2026-02-10" };
	struct wh_commit c = { 7, 1000, 3, 0 };
	char note[128] = "", *v;
	struct err err;
	bool has;

	ck_assert_int_eq(wh_commits_ensure(conn, &err), 0);
	ck_assert_int_eq(wh_commits_ensure(conn, &err), 0); /* it is there */
	/* one b-tree (WITHOUT ROWID, no other index), keyed job first */
	ck_assert_int_eq(rows("1"), 0);
	ck_assert_int_eq(conn->drv->query_value(conn, "SELECT count(*) FROM"
	    " sqlite_master WHERE tbl_name = 'backfilld_commits'", NULL, 0,
	    &has, &v, &err), 0);
	ck_assert_str_eq(v, "1");
	free(v);
	ck_assert_int_eq(conn->drv->query_value(conn, "SELECT group_concat("
	    "name, ',') FROM (SELECT name FROM pragma_index_xinfo("
	    "'sqlite_autoindex_backfilld_commits_1') WHERE key ORDER BY seqno)",
	    NULL, 0, &has, &v, &err), 0);
	ck_assert_str_eq(v, "job,request_id,partition_key");
	free(v);
	/* a rolled-back attempt leaves nothing */
	ck_assert_int_eq(attempt(keys, &c, 1, 2000, 0, false, note), 0);
	ck_assert_int_eq(rows("1"), 0);
	ck_assert_int_eq(attempt(keys, &c, 1, 1767225600000LL, 0, true, note),
			 0);
	ck_assert_int_eq(rows("request_id = 7 AND run_id = 3"), 1);
	/* the next attempt of the same request finds it */
	c.run_id = 4;
	ck_assert_int_eq(attempt(keys, &c, 1, 1767225700000LL, 0, true, note),
			 1);
	ck_assert_str_eq(note, "already committed by run 3 at"
			 " 2026-01-01T00:00:00Z");
	/* another request of the same partition is another execution */
	c.request = 8;
	ck_assert_int_eq(attempt(keys, &c, 1, 1767225700000LL, 0, true, note),
			 0);
	ck_assert_int_eq(rows("1"), 2);
}
END_TEST

START_TEST(test_leftover_replaced)
{
	const char *keys[] = { "2026-02-10" };
	struct wh_commit c = { 7, 5000, 9, 0 };
	char note[128];
	struct err err;

	ck_assert_int_eq(wh_commits_ensure(conn, &err), 0);
	ck_assert_int_eq(conn->drv->exec_script(conn, "INSERT INTO"
	    " backfilld_commits VALUES (7, 'j', '2026-02-10', 1, 4999)", NULL,
	    0, &err), 0);
	/* committed before request 7 was created: another store's */
	ck_assert_int_eq(attempt(keys, &c, 1, 6000, 0, true, note), 0);
	ck_assert_int_eq(rows("request_id = 7 AND run_id = 9"), 1);
	ck_assert_int_eq(rows("1"), 1);
	/* request_at unknown (0): the row is trusted */
	c.request_at = 0;
	c.run_id = 10;
	ck_assert_int_eq(attempt(keys, &c, 1, 7000, 0, true, note), 1);
}
END_TEST

START_TEST(test_batch_and_prune)
{
	const char *keys[] = { "2026-02-01", "2026-02-02", "2026-02-03" };
	struct wh_commit c[3] = {
		{ 1, 0, 11, 0 }, { 1, 0, 12, 1 }, { 1, 0, 13, 2 } };
	char note[128];
	struct err err;

	ck_assert_int_eq(wh_commits_ensure(conn, &err), 0);
	ck_assert_int_eq(attempt(keys, c, 3, 100, 0, true, note), 0);
	ck_assert_int_eq(rows("request_id = 1"), 3);
	/* all three there: the batch is committed */
	ck_assert_int_eq(attempt(keys, c, 3, 200, 0, true, note), 1);
	ck_assert_str_eq(note, "already committed by run 11 at"
			 " 1970-01-01T00:00:00Z");
	/* a batch with a partition missing runs, and records only that one */
	c[2].request = 2;
	ck_assert_int_eq(attempt(keys, c, 3, 300, 0, true, note), 0);
	ck_assert_int_eq(rows("1"), 4);
	/* pruning: the job's rows of older requests committed before 300
	 * go (request 1's), not the others' */
	ck_assert_int_eq(conn->drv->exec_script(conn, "INSERT INTO"
	    " backfilld_commits VALUES (5, 'other', 'k', 1, 1)", NULL, 0,
	    &err), 0);
	c[0].request = 3;
	ck_assert_int_eq(attempt(keys, c, 1, 400, 300, true, note), 0);
	ck_assert_int_eq(rows("job = 'j'"), 2);
	ck_assert_int_eq(rows("job = 'other'"), 1);
	/* prune_before 0: nothing deleted (a request's later runs) */
	c[0].request = 4;
	ck_assert_int_eq(attempt(keys, c, 1, 500, 0, true, note), 0);
	ck_assert_int_eq(rows("job = 'j'"), 3);
	/* never the rows of the run's own request, however old */
	c[0].request = 2;
	c[0].part = 1;
	ck_assert_int_eq(attempt(keys, c, 1, 600, 550, true, note), 0);
	ck_assert_int_eq(rows("job = 'j' AND request_id = 2"), 2);
	ck_assert_int_eq(rows("job = 'j'"), 4);
}
END_TEST

/* Rule 4: the insert of an identity that has a row fails (no ON
 * CONFLICT DO NOTHING): a transaction that did not see the row at its
 * start cannot commit once another one wrote it; after its rollback the
 * lookup says the identity was committed by the other. */
START_TEST(test_fence)
{
	const char *keys[] = { "2026-02-10" };
	struct wh_commit late = { 7, 0, 3, 0 }, rerun = { 7, 0, 4, 0 };
	char note[128] = "", *v;
	struct err err;
	bool has;

	ck_assert_int_eq(wh_commits_ensure(conn, &err), 0);
	ck_assert_int_eq(attempt(keys, &rerun, 1, 1767225600000LL, 0, true,
				 note), 0);
	ck_assert_int_eq(conn->drv->begin(conn, &err), 0);
	ck_assert_int_eq(conn->drv->exec_script(conn, "CREATE TABLE effect"
	    " (n)", NULL, 0, &err), 0);
	ck_assert_int_eq(wh_commits_record(conn, "j", keys, &late, 1, NULL,
					   1767225700000LL, 0, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "writing backfilld_commits"));
	conn->drv->rollback(conn);
	ck_assert_int_eq(rows("1"), 1);
	ck_assert_int_eq(rows("run_id = 4"), 1);
	ck_assert_int_eq(conn->drv->query_value(conn, "SELECT count(*) FROM"
	    " sqlite_master WHERE name = 'effect'", NULL, 0, &has, &v, &err),
	    0);
	ck_assert_str_eq(v, "0"); /* the late transaction's work went too */
	free(v);
	ck_assert_int_eq(wh_commits_seen(conn, "j", keys, &late, 1, NULL, note,
					 sizeof note, &err), 1);
	ck_assert_str_eq(note, "already committed by run 4 at"
			 " 2026-01-01T00:00:00Z");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("commits");
	TCase *tc = tcase_create("sqlite");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_once_per_request);
	tcase_add_test(tc, test_leftover_replaced);
	tcase_add_test(tc, test_batch_and_prune);
	tcase_add_test(tc, test_fence);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
