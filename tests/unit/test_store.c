/*
 * test_store.c - the state store: schema migration, requests and the
 * manifest, runs, crash recovery, builds and job state.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sql_embedded.h"
#include "store.h"

static char dir[64];
static char path[128];
static struct store *st;

static void
setup(void)
{
	struct err err;

	snprintf(dir, sizeof dir, "/tmp/test_store.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/state.db", dir);
	if (store_open(path, &st, &err) < 0)
		ck_abort_msg("store_open: %s", err.msg);
}

static void
teardown(void)
{
	char cmd[160];

	store_close(st);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A single integer from SQL run on a second connection. */
static long long
peek(const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	long long v = -1;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

/* The schema is at the newest version, in WAL mode; reopening is a no-op. */
START_TEST(migrates_once)
{
	struct err err;
	struct store *again;

	ck_assert_int_eq(peek("PRAGMA user_version"), sql_migrations_count);
	ck_assert_int_eq(store_open(path, &again, &err), 0);
	store_close(again);
	ck_assert_int_eq(peek("PRAGMA user_version"), sql_migrations_count);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM pragma_journal_mode"
			      " WHERE journal_mode = 'wal'"), 1);
}
END_TEST

/* A newer schema than this binary knows is refused with a clear line. */
START_TEST(refuses_newer_schema)
{
	struct err err;
	struct store *again;
	sqlite3 *db;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "PRAGMA user_version = 999", NULL,
				      NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	ck_assert_int_eq(store_open(path, &again, &err), -1);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "schema version 999 is newer"));
}
END_TEST

/* Requests and manifest rows round-trip; a crash's running rows are
 * queued again and their runs marked failed. */
START_TEST(manifest_and_recovery)
{
	struct store_request rq = { .job = "fct", .kind = "backfill",
		.reason = "refund bug", .created_at = 1000 };
	struct store_item it = { .job = "fct", .key = "2026-02-08",
		.state = MS_QUEUED, .at = 1000 };
	int64_t rid, m1, m2, run;
	int recovered = -1;
	struct err err;

	ck_assert_int_eq(store_request_add(st, &rq, &rid, &err), 0);
	it.request_id = rid;
	ck_assert_int_eq(store_item_add(st, &it, &m1, &err), 0);
	it.key = "2026-02-09";
	it.seq = 1;
	ck_assert_int_eq(store_item_add(st, &it, &m2, &err), 0);
	/* the same partition twice in one request is refused */
	ck_assert_int_eq(store_item_add(st, &it, &m2, &err), -1);

	ck_assert_int_eq(store_item_set(st, m1, MS_RUNNING, 1, 0, NULL, NULL,
					2000, &err), 0);
	ck_assert_int_eq(store_run_start(st, m1, rid, "fct", "2026-02-08", 1,
					 2000, "abc", "cfg", &run, &err), 0);
	ck_assert_int_eq(store_recover(st, 3000, &recovered, &err), 0);
	ck_assert_int_eq(recovered, 1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM manifest WHERE state ="
			      " 'queued'"), 2);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs WHERE state = 'failed'"
			      " AND finished_at = 3000"), 1);
}
END_TEST

struct seen {
	int n;
	char keys[8][32];
	enum mstate states[8];
};

/* Collect last states. */
static void
seen_cb(const char *key, enum mstate s, void *data)
{
	struct seen *sn = data;

	snprintf(sn->keys[sn->n], 32, "%s", key);
	sn->states[sn->n++] = s;
}

/* The last finished run decides a partition's state for --reprocess. */
START_TEST(last_states)
{
	struct store_request rq = { .job = "fct", .kind = "backfill",
		.created_at = 1 };
	struct store_item it = { .job = "fct", .key = "2026-02-08",
		.state = MS_QUEUED, .at = 1 };
	struct seen sn = { 0 };
	int64_t rid, m, r1, r2, r3;
	struct err err;

	ck_assert_int_eq(store_request_add(st, &rq, &rid, &err), 0);
	it.request_id = rid;
	ck_assert_int_eq(store_item_add(st, &it, &m, &err), 0);
	ck_assert_int_eq(store_run_start(st, m, rid, "fct", "2026-02-08", 1, 1,
					 "v1", NULL, &r1, &err), 0);
	ck_assert_int_eq(store_run_finish(st, r1, MS_FAILED, 2, "boom", -1, &err), 0);
	ck_assert_int_eq(store_run_start(st, m, rid, "fct", "2026-02-08", 2, 3,
					 "v1", NULL, &r2, &err), 0);
	ck_assert_int_eq(store_run_finish(st, r2, MS_SUCCEEDED, 4, NULL, 5, &err), 0);
	ck_assert_int_eq(store_run_start(st, m, rid, "fct", "2026-02-09", 1, 5,
					 "v1", NULL, &r3, &err), 0);
	ck_assert_int_eq(store_run_finish(st, r3, MS_FAILED, 6, "boom", -1, &err), 0);
	ck_assert_int_eq(store_last_states(st, "fct", "2026-02-01", "2026-02-28",
					   seen_cb, &sn, &err), 0);
	ck_assert_int_eq(sn.n, 2);
	for (int i = 0; i < sn.n; i++) {
		if (strcmp(sn.keys[i], "2026-02-08") == 0)
			ck_assert_int_eq(sn.states[i], MS_SUCCEEDED);
		else
			ck_assert_int_eq(sn.states[i], MS_FAILED);
	}
}
END_TEST

/* Builds and job state persist. */
START_TEST(builds_and_job_state)
{
	struct store_job_state js = { 0 }, back;
	int64_t built, inputs;
	struct err err;

	ck_assert_int_eq(store_partition_get(st, "wk", "2026-02-02", &built,
					     &inputs, &err), 1);
	ck_assert_int_eq(store_partition_built(st, "wk", "2026-02-02", 50, 40,
					       7, "v", &err), 0);
	ck_assert_int_eq(store_partition_built(st, "wk", "2026-02-02", 60, -1,
					       8, "v", &err), 0);
	ck_assert_int_eq(store_partition_get(st, "wk", "2026-02-02", &built,
					     &inputs, &err), 0);
	ck_assert_int_eq(built, 60);
	ck_assert_int_eq(inputs, -1);

	js.has_watermark = true;
	strcpy(js.watermark, "2026-02-22");
	strcpy(js.catchup, "refused");
	strcpy(js.gap_from, "2024-01-01");
	strcpy(js.gap_to, "2026-02-21");
	js.paused = true;
	js.paused_at = 99;
	ck_assert_int_eq(store_job_put(st, "fct", &js, 100, &err), 0);
	ck_assert_int_eq(store_job_get(st, "fct", &back, &err), 0);
	ck_assert(back.has_watermark);
	ck_assert_str_eq(back.watermark, "2026-02-22");
	ck_assert_str_eq(back.catchup, "refused");
	ck_assert_str_eq(back.gap_to, "2026-02-21");
	ck_assert(back.paused);
	ck_assert_int_eq(back.paused_at, 99);
	ck_assert_int_eq(store_job_get(st, "unknown", &back, &err), 0);
	ck_assert(!back.has_watermark);
	ck_assert_str_eq(back.catchup, "ok");
}
END_TEST

/* A transaction rolled back leaves nothing behind. */
START_TEST(rollback_changes_nothing)
{
	struct store_request rq = { .job = "fct", .kind = "backfill",
		.created_at = 1 };
	int64_t rid;
	struct err err;

	ck_assert_int_eq(store_begin(st, &err), 0);
	ck_assert_int_eq(store_request_add(st, &rq, &rid, &err), 0);
	store_rollback(st);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 0);
	/* a bad kind is refused by the schema */
	rq.kind = "bogus";
	ck_assert_int_eq(store_request_add(st, &rq, &rid, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "CHECK constraint failed"));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("store");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, migrates_once);
	tcase_add_test(tc, refuses_newer_schema);
	tcase_add_test(tc, manifest_and_recovery);
	tcase_add_test(tc, last_states);
	tcase_add_test(tc, builds_and_job_state);
	tcase_add_test(tc, rollback_changes_nothing);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
