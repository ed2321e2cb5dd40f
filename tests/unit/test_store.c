/*
 * test_store.c - the state store: schema migration, requests and the
 * manifest, runs, crash recovery, builds and job state, and the one
 * failure policy of store.c.
 *
 * The behaviour cases run against every implementation of the table
 * below that is available (SQLite always; a row per further
 * implementation: PostgreSQL when BACKFILLD_TEST_STATE_PG names a
 * server, store_pg_fixture.h): each row opens a fresh empty store and
 * peeks into it on a connection of its own.  Cases about one implementation's own machinery
 * (SQLite's migrations and WAL) run once, in the "sqlite" case.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "config.h"
#include "lease.h"
#include "sql_embedded.h"
#include "store.h"
#ifdef HAVE_LIBPQ
#include "store_pg_fixture.h"
#endif

/* An implementation under test. */
struct impl {
	const char *name;
	bool (*available)(void);   /* NULL: always */
	void (*setup)(void);       /* cur = this row; st = a fresh empty store */
	void (*teardown)(void);    /* close st, remove what setup made */
	/* one integer from SQL on a connection of the test's own */
	long long (*peek)(const char *sql);
	const char *unique_failed; /* how a duplicate key reads */
	const char *check_failed;  /* how a CHECK constraint failure reads */
};

static const struct impl *cur;
static char dir[64];
static char path[128];
static struct store *st;

/* A single integer from SQL run on a second connection. */
static long long
peek(const char *sql)
{
	return cur->peek(sql);
}

/* ---- SQLite ---------------------------------------------------------- */

static void sqlite_setup(void);

/* A single integer from SQL on a second SQLite connection. */
static long long
sqlite_peek(const char *sql)
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

/* Close the store and remove its folder. */
static void
sqlite_teardown(void)
{
	char cmd[160];

	store_close(st);
	st = NULL;
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

#ifdef HAVE_LIBPQ
static void pg_setup(void);
static void pg_teardown(void);
#endif

/* The implementations, the default first.  A row for another one is
 * added here, with its own available(), setup, teardown and peek. */
static const struct impl impls[] = {
	{ "sqlite", NULL, sqlite_setup, sqlite_teardown, sqlite_peek,
	  "UNIQUE constraint failed", "CHECK constraint failed" },
#ifdef HAVE_LIBPQ
	{ "postgres", pgfix_available, pg_setup, pg_teardown, pgfix_peek,
	  "duplicate key value violates unique constraint",
	  "violates check constraint" },
#endif
};

#ifdef HAVE_LIBPQ
/* A fresh PostgreSQL store in a schema of its own (store_pg_fixture.h). */
static void
pg_setup(void)
{
	cur = &impls[1];
	pgfix_open(&st);
}

/* Close it and drop its schema. */
static void
pg_teardown(void)
{
	pgfix_close(st);
	st = NULL;
}
#endif

/* A fresh SQLite store in a temporary folder. */
static void
sqlite_setup(void)
{
	struct err err;

	cur = &impls[0];
	snprintf(dir, sizeof dir, "/tmp/test_store.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/state.db", dir);
	if (store_open(path, &st, &err) < 0)
		ck_abort_msg("store_open: %s", err.msg);
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
	/* the same partition twice in one request is refused, and that
	 * failed write fails the turn: flush says so once */
	ck_assert_int_eq(store_item_add(st, &it, &m2, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, cur->unique_failed));
	ck_assert_int_eq(store_flush(st, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, cur->unique_failed));
	ck_assert_int_eq(store_flush(st, &err), 0);

	ck_assert_int_eq(store_item_set(st, m1, MS_RUNNING, 1, 0, NULL, NULL,
					-1, 2000, &err), 0);
	ck_assert_int_eq(store_run_start(st, m1, rid, "fct", "2026-02-08", 1,
					 2000, "abc", "cfg", 0, &run, &err), 0);
	ck_assert_int_eq(store_recover(st, 3000, NULL, 0, &recovered, &err), 0);
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

/* partition_finished's callback: the state replaced, once. */
static void
prev_cb(const char *job, enum mstate prev, enum mstate state, void *data)
{
	int *out = data;

	ck_assert_str_eq(job, "fct");
	ck_assert_int_eq(*out, -1); /* called once */
	ck_assert_int_lt(state, MS_COUNT);
	*out = (int)prev;
}

/* Finish a run and make it its partition's newest; returns the state it
 * replaced. */
static enum mstate
finish(int64_t run, const char *key, enum mstate state)
{
	int prev = -1;
	struct err err;

	ck_assert_int_eq(store_run_finish(st, run, state, 2, NULL, -1, &err), 0);
	ck_assert_int_eq(store_partition_finished(st, "fct", key, run, state,
						  prev_cb, &prev, &err), 0);
	ck_assert_int_ne(prev, -1);
	return (enum mstate)prev;
}

struct counted {
	int64_t succeeded, failed;
};

/* Collect the per-job counts of job fct. */
static void
counted_cb(const char *job, enum mstate state, int64_t count, void *data)
{
	struct counted *c = data;

	if (strcmp(job, "fct") != 0)
		return;
	if (state == MS_SUCCEEDED)
		c->succeeded = count;
	else if (state == MS_FAILED)
		c->failed = count;
}

/* The last finished run decides a partition's state for --reprocess and
 * status; each finish says what it replaced. */
START_TEST(last_states)
{
	struct store_request rq = { .job = "fct", .kind = "backfill",
		.created_at = 1 };
	struct store_item it = { .job = "fct", .key = "2026-02-08",
		.state = MS_QUEUED, .at = 1 };
	struct seen sn = { 0 };
	struct counted c = { 0 };
	int64_t rid, m, r1, r2, r3;
	struct err err;

	ck_assert_int_eq(store_request_add(st, &rq, &rid, &err), 0);
	it.request_id = rid;
	ck_assert_int_eq(store_item_add(st, &it, &m, &err), 0);
	ck_assert_int_eq(store_run_start(st, m, rid, "fct", "2026-02-08", 1, 1,
					 "v1", NULL, 0, &r1, &err), 0);
	ck_assert_int_eq(finish(r1, "2026-02-08", MS_FAILED), MS_NONE);
	ck_assert_int_eq(store_run_start(st, m, rid, "fct", "2026-02-08", 2, 3,
					 "v1", NULL, 0, &r2, &err), 0);
	ck_assert_int_eq(finish(r2, "2026-02-08", MS_SUCCEEDED), MS_FAILED);
	ck_assert_int_eq(store_run_start(st, m, rid, "fct", "2026-02-09", 1, 5,
					 "v1", NULL, 0, &r3, &err), 0);
	ck_assert_int_eq(finish(r3, "2026-02-09", MS_FAILED), MS_NONE);
	ck_assert_int_eq(store_last_states(st, "fct", "2026-02-01", "2026-02-28",
					   seen_cb, &sn, &err), 0);
	ck_assert_int_eq(sn.n, 2);
	for (int i = 0; i < sn.n; i++) {
		if (strcmp(sn.keys[i], "2026-02-08") == 0)
			ck_assert_int_eq(sn.states[i], MS_SUCCEEDED);
		else
			ck_assert_int_eq(sn.states[i], MS_FAILED);
	}
	ck_assert_int_eq(store_latest_counts(st, counted_cb, &c, &err), 0);
	ck_assert_int_eq(c.succeeded, 1);
	ck_assert_int_eq(c.failed, 1);
}
END_TEST

/* The newest successful runs' durations, newest first, at most max; failed
 * and running ones are left out, other jobs' too. */
START_TEST(durations_newest_first)
{
	struct store_request rq = { .job = "fct", .kind = "backfill",
		.created_at = 1 };
	struct store_item it = { .job = "fct", .key = "2026-02-08",
		.state = MS_QUEUED, .at = 1 };
	int64_t rid, m, r, ms[4];
	struct err err;
	size_t n;

	ck_assert_int_eq(store_request_add(st, &rq, &rid, &err), 0);
	it.request_id = rid;
	ck_assert_int_eq(store_item_add(st, &it, &m, &err), 0);
	for (int i = 0; i < 6; i++) {
		const char *job = i == 4 ? "other" : "fct";

		ck_assert_int_eq(store_run_start(st, m, rid, job, "2026-02-08",
						 i + 1, 1000 * i, "v1", NULL, 0, &r,
						 &err), 0);
		if (i == 5)
			break; /* still running */
		ck_assert_int_eq(store_run_finish(st, r, i == 2 ? MS_FAILED :
						  MS_SUCCEEDED, 1000 * i + 10 * (i + 1),
						  NULL, -1, &err), 0);
	}
	ck_assert_int_eq(store_durations(st, "fct", ms, 4, &n, &err), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(ms[0], 40);
	ck_assert_int_eq(ms[1], 20);
	ck_assert_int_eq(ms[2], 10);
	ck_assert_int_eq(store_durations(st, "fct", ms, 2, &n, &err), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(store_durations(st, "none", ms, 4, &n, &err), 0);
	ck_assert_uint_eq(n, 0);
}
END_TEST

/* A store written by the previous schema (version 2) gets each
 * partition's newest finished run when it is opened. */
START_TEST(migrates_history_from_v2)
{
	struct store *again;
	struct store_stats ss;
	struct err err;
	sqlite3 *db;

	store_close(st);
	st = NULL;
	unlink(path);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(sqlite3_exec(db, sql_migrations[i].sql, NULL,
					      NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db,
		"PRAGMA user_version = 2;"
		"INSERT INTO requests (id, job, kind, created_at) VALUES"
		" (1, 'fct', 'backfill', 1);"
		"INSERT INTO manifest (id, request_id, job, partition_key, seq,"
		" state, created_at, updated_at) VALUES"
		" (1, 1, 'fct', '2026-02-08', 0, 'succeeded', 1, 1),"
		" (2, 1, 'fct', '2026-02-09', 1, 'failed', 1, 1);"
		"INSERT INTO runs (id, manifest_id, request_id, job,"
		" partition_key, attempt, state, started_at, finished_at) VALUES"
		" (1, 1, 1, 'fct', '2026-02-08', 1, 'failed', 1, 2),"
		" (2, 1, 1, 'fct', '2026-02-08', 2, 'succeeded', 3, 4),"
		" (3, 2, 1, 'fct', '2026-02-09', 1, 'failed', 5, 6),"
		" (4, 2, 1, 'fct', '2026-02-09', 2, 'cancelled', 7, 8);",
		NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	ck_assert_int_eq(store_open(path, &again, &err), 0);
	st = again;
	ck_assert_int_eq(peek("PRAGMA user_version"), sql_migrations_count);
	ck_assert_int_eq(peek("SELECT run_id FROM partition_latest WHERE"
			      " partition_key = '2026-02-08' AND state ="
			      " 'succeeded'"), 2);
	ck_assert_int_eq(peek("SELECT run_id FROM partition_latest WHERE"
			      " partition_key = '2026-02-09' AND state ="
			      " 'failed'"), 3);
	store_stats(st, &ss);
	ck_assert_int_eq(ss.runs_kept, 4);
	ck_assert_int_gt(ss.db_bytes, 0);
}
END_TEST

/* A store of schema 6 (before early cut-off) keeps every row through
 * 007_cutoff.sql, which rebuilds manifest, runs and partition_latest for
 * the state 'skipped': ids, the rows that reference them (run_audit, a
 * run's manifest row) and the foreign keys hold. */
START_TEST(migrates_cutoff_from_v6)
{
	struct store *again;
	struct err err;
	sqlite3 *db;
	char *msg = NULL;

	store_close(st);
	st = NULL;
	unlink(path);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(sqlite3_exec(db, sql_migrations[i].sql, NULL,
					      NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db,
		"PRAGMA user_version = 6;"
		"INSERT INTO requests (id, job, kind, created_at) VALUES"
		" (1, 'fct', 'backfill', 1);"
		"INSERT INTO manifest (id, request_id, job, partition_key, seq,"
		" state, created_at, updated_at) VALUES"
		" (7, 1, 'fct', '2026-02-08', 0, 'succeeded', 1, 1);"
		"INSERT INTO runs (id, manifest_id, request_id, job,"
		" partition_key, attempt, state, started_at, finished_at,"
		" shared_run) VALUES (9, 7, 1, 'fct', '2026-02-08', 1,"
		" 'succeeded', 1, 2, NULL);"
		"INSERT INTO run_audit (run_id, partition_key, rows_before,"
		" rows_after, passed) VALUES (9, '2026-02-08', 1, 2, 1);"
		"INSERT INTO partition_latest VALUES ('fct', '2026-02-08', 9,"
		" 'succeeded');",
		NULL, NULL, &msg), SQLITE_OK);
	sqlite3_close(db);
	ck_assert_int_eq(store_open(path, &again, &err), 0);
	st = again;
	ck_assert_int_eq(peek("PRAGMA user_version"), sql_migrations_count);
	ck_assert_int_eq(peek("SELECT manifest_id FROM runs WHERE id = 9"), 7);
	ck_assert_int_eq(peek("SELECT rows_after FROM run_audit WHERE"
			      " run_id = 9"), 2);
	ck_assert_int_eq(peek("SELECT run_id FROM partition_latest"), 9);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM pragma_foreign_key_check"),
			 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM sqlite_master WHERE name"
			      " LIKE '%_new'"), 0);
	/* the new state, and what goes with it */
	ck_assert_int_eq(store_run_finish(st, 9, MS_SKIPPED, 3,
					  "inputs unchanged", -1, &err), 0);
	ck_assert_int_eq(store_item_set(st, 7, MS_SKIPPED, 1, 0,
					"inputs unchanged", NULL, 0, 3, &err), 0);
	ck_assert_int_eq(store_flush(st, &err), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs WHERE state ="
			      " 'skipped'"), 1);
	ck_assert_int_eq(peek("SELECT changed FROM manifest WHERE id = 7"), 0);
}
END_TEST

/* A request with one manifest row and `n` finished runs of it, ending at
 * `at`; returns the request id (finished at `at` unless open). */
static int64_t
history(const char *key, int n, int64_t at, bool open, int64_t *last_run)
{
	struct store_request rq = { .job = "fct", .kind = "backfill",
		.created_at = at - 10 };
	struct store_item it = { .job = "fct", .key = key, .state = MS_QUEUED,
		.at = at - 10 };
	int64_t rid, m, run = 0;
	struct err err;

	ck_assert_int_eq(store_request_add(st, &rq, &rid, &err), 0);
	it.request_id = rid;
	ck_assert_int_eq(store_item_add(st, &it, &m, &err), 0);
	for (int i = 0; i < n; i++) {
		enum mstate state = i == n - 1 ? MS_SUCCEEDED : MS_FAILED;

		ck_assert_int_eq(store_run_start(st, m, rid, "fct", key, i + 1,
						 at - 9 + i, "v", NULL, 0, &run,
						 &err), 0);
		ck_assert_int_eq(store_run_finish(st, run, state, at - 8 + i,
						  NULL, -1, &err), 0);
		ck_assert_int_eq(store_audit_add(st, run, key, true, 1, true, 1,
						 NULL, NULL, NULL, NULL, true,
						 NULL, NULL, -1, &err), 0);
		ck_assert_int_eq(store_partition_finished(st, "fct", key, run,
							  state, NULL, NULL,
							  &err), 0);
		if (state == MS_SUCCEEDED)
			ck_assert_int_eq(store_partition_built(st, "fct", key,
							       at, -1, run, "v",
							       &err), 0);
	}
	if (!open)
		ck_assert_int_eq(store_request_finish(st, rid, at, false, &err), 0);
	*last_run = run;
	return rid;
}

static int64_t
cutoff_1000(const char *job, void *data)
{
	(void)job;
	(void)data;
	return 1000;
}

/* Pruning deletes old finished runs with their audit rows and the
 * requests they leave empty; it keeps each partition's newest run and
 * newest success, runs of open requests, and everything younger. */
START_TEST(prune_keeps_what_it_must)
{
	struct store_prune pr = { .cutoff = cutoff_1000, .newest_cutoff = 1000 };
	int64_t old_rq, last_old, newer_rq, last_newer, open_rq, last_open,
		young_rq, last_young, steps = 0;
	struct store_stats ss;
	struct err err;
	int rc;

	/* 2026-02-08: an old request (3 runs) superseded by a newer old one */
	old_rq = history("2026-02-08", 3, 100, false, &last_old);
	newer_rq = history("2026-02-08", 2, 200, false, &last_newer);
	/* 2026-02-09: old, but its request is still open */
	open_rq = history("2026-02-09", 2, 300, true, &last_open);
	/* 2026-02-10: old runs then young runs */
	(void)history("2026-02-10", 2, 400, false, &last_young);
	young_rq = history("2026-02-10", 2, 5000, false, &last_young);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs"), 11);
	/* shards' publishes (shard_publishes) go with their request */
	for (int64_t r = old_rq; r <= open_rq; r += open_rq - old_rq) {
		struct store_shard_row sh = { .request = r, .job = "fct",
			.key = "2026-02-08", .shard = 1, .nshards = 2,
			.run_id = 1, .published_at = 100 };

		ck_assert_int_eq(store_shard_put(st, &sh, &err), 0);
	}
	while ((rc = store_prune_step(st, &pr, 2, &err)) > 0)
		steps++;
	ck_assert_int_eq(rc, 0);
	ck_assert_int_gt(steps, 3); /* slices of 2 rows */
	/* the first old request is gone whole, runs, audit and manifest */
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests WHERE id = 1"), 0);
	(void)old_rq;
	/* of the newer one only its success stays (newest run and success) */
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs WHERE request_id = 2"), 1);
	ck_assert_int_eq(peek("SELECT id FROM runs WHERE request_id = 2"), last_newer);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM run_audit WHERE run_id ="
			      " (SELECT id FROM runs WHERE request_id = 2)"), 1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 3);
	(void)newer_rq;
	/* the open request keeps all its runs */
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs WHERE request_id = 3"), 2);
	(void)open_rq;
	(void)last_open;
	/* 2026-02-10: the old runs went, the young ones stayed */
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs WHERE request_id = 4"), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs WHERE request_id = 5"), 2);
	(void)young_rq;
	ck_assert_int_eq(pr.runs, 6);
	ck_assert_int_eq(pr.requests, 2);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM shard_publishes WHERE"
			      " request = 1"), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM shard_publishes WHERE"
			      " request = 3"), 1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM run_audit WHERE run_id NOT IN"
			      " (SELECT id FROM runs)"), 0);
	store_stats(st, &ss);
	ck_assert_int_eq(ss.runs_kept, 5);
}
END_TEST

/* The WAL stays bounded under a steady stream of commits, with
 * checkpoints on the loop's thread pool. */
START_TEST(wal_stays_bounded)
{
	struct store_request rq = { .job = "fct", .kind = "backfill",
		.created_at = 1, .reason = NULL };
	char reason[2048], wal[160];
	struct stat sb;
	off_t max_wal = 0;
	uv_loop_t loop;
	struct err err;
	int64_t id;

	memset(reason, 'x', sizeof reason - 1);
	reason[sizeof reason - 1] = '\0';
	rq.reason = reason;
	snprintf(wal, sizeof wal, "%s-wal", path);
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	store_checkpoint_on(st, &loop);
	/* 40,000 commits of 2 KB each: 80 MB through the WAL */
	for (int i = 0; i < 40000; i++) {
		ck_assert_int_eq(store_request_add(st, &rq, &id, &err), 0);
		uv_run(&loop, UV_RUN_NOWAIT);
		if (i % 100 == 0 && stat(wal, &sb) == 0 && sb.st_size > max_wal)
			max_wal = sb.st_size;
	}
	while (uv_run(&loop, UV_RUN_DEFAULT) != 0)
		;
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	ck_assert_int_lt(max_wal, 24 * 1024 * 1024);
	/* the checkpoints copied the data into the database file */
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_gt(sb.st_size, 40 * 1024 * 1024);
}
END_TEST

/* Builds and job state persist. */
START_TEST(builds_and_job_state)
{
	struct store_job_state js = { 0 }, back;
	int64_t built, inputs;
	struct err err;

	ck_assert_int_eq(store_partition_get(st, "wk", "2026-02-02", &built,
					     &inputs, NULL, 0, &err), 1);
	ck_assert_int_eq(store_partition_built(st, "wk", "2026-02-02", 50, 40,
					       7, "v", &err), 0);
	ck_assert_int_eq(store_partition_built(st, "wk", "2026-02-02", 60, -1,
					       8, "v", &err), 0);
	ck_assert_int_eq(store_partition_get(st, "wk", "2026-02-02", &built,
					     &inputs, NULL, 0, &err), 0);
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
	ck_assert_ptr_nonnull(strstr(err.msg, cur->check_failed));
	ck_assert_int_eq(store_flush(st, &err), -1);
}
END_TEST

/* ---- the failure policy (store.c, rule 1) ----------------------------- */

static struct store_ops faulty_ops;

/* A write that fails, as a full disk makes it. */
static int
faulty_item_set(struct store *s, int64_t id, enum mstate state, int attempts,
		int64_t not_before, const char *error, const char *blocked_on,
		int changed, int64_t at, struct err *err)
{
	(void)s, (void)id, (void)state, (void)attempts, (void)not_before;
	(void)error, (void)blocked_on, (void)at;
	return err_set(err, EXIT_INTERNAL, "state store: injected: disk full");
}

/* A read that fails. */
static int
faulty_job_get(struct store *s, const char *job, struct store_job_state *js,
	       struct err *err)
{
	(void)s, (void)job, (void)js;
	return err_set(err, EXIT_INTERNAL, "state store: injected: read");
}

/* A probe that fails. */
static int
faulty_probe_write(struct store *s, int64_t min_free, struct err *err)
{
	(void)s, (void)min_free;
	return err_set(err, EXIT_INTERNAL, "state store: injected: probe");
}

/* The store's own implementation with item_set, job_get and probe_write
 * failing (the seam lets a test wrap any implementation). */
static void
make_faulty(void)
{
	faulty_ops = *st->ops;
	faulty_ops.item_set = faulty_item_set;
	faulty_ops.job_get = faulty_job_get;
	faulty_ops.probe_write = faulty_probe_write;
	st->ops = &faulty_ops;
}

/* A request with one manifest row, in the caller's turn. */
static int64_t
one_item(int64_t *item)
{
	struct store_request rq = { .job = "fct", .kind = "backfill",
		.created_at = 1 };
	struct store_item it = { .job = "fct", .key = "2026-02-08",
		.state = MS_QUEUED, .at = 1 };
	struct err err;
	int64_t rid;

	ck_assert_int_eq(store_request_add(st, &rq, &rid, &err), 0);
	it.request_id = rid;
	ck_assert_int_eq(store_item_add(st, &it, item, &err), 0);
	return rid;
}

/* A write that fails inside a deferred turn fails the turn: later writes
 * are refused with its error, reads still answer, flush rolls the whole
 * turn back and reports the first error once; the next turn is clean. */
START_TEST(failed_write_fails_the_turn)
{
	struct store_job_state js;
	struct err err;
	int64_t rid, item;
	char job[32];
	bool finished;

	make_faulty();
	ck_assert_int_eq(store_defer(st, &err), 0);
	rid = one_item(&item);
	ck_assert_int_eq(store_item_set(st, item, MS_RUNNING, 1, 0, NULL, NULL,
					-1, 2, &err), -1);
	ck_assert_str_eq(err.msg, "state store: injected: disk full");
	/* refused without reaching the implementation */
	ck_assert_int_eq(store_request_finish(st, rid, 3, false, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "an earlier write of this turn"
				     " failed: state store: injected: disk full"));
	ck_assert_int_eq(store_begin(st, &err), -1);
	ck_assert_int_eq(store_commit(st, &err), -1);
	/* reads answer */
	ck_assert_int_eq(store_request_get(st, rid, job, sizeof job, &finished,
					   &err), 0);
	ck_assert_str_eq(job, "fct");
	ck_assert(!finished);
	/* the end of the turn: rolled back, the first error, once */
	ck_assert_int_eq(store_flush(st, &err), -1);
	ck_assert_str_eq(err.msg, "state store: injected: disk full");
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM manifest"), 0);
	ck_assert_int_eq(store_flush(st, &err), 0);
	/* the next turn writes */
	ck_assert_int_eq(store_defer(st, &err), 0);
	(void)one_item(&item);
	ck_assert_int_eq(store_flush(st, &err), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM manifest"), 1);
	/* a failed read marks nothing */
	ck_assert_int_eq(store_job_get(st, "fct", &js, &err), -1);
	ck_assert_str_eq(err.msg, "state store: injected: read");
	ck_assert_int_eq(store_defer(st, &err), 0);
	(void)one_item(&item);
	ck_assert_int_eq(store_flush(st, &err), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM manifest"), 2);
}
END_TEST

/* Refused for good (store_refuse_all: a commit failed, scheduler.c rule
 * 7): every later write and transaction verb is refused with the reason,
 * a turn that wrote nothing flushes as ever, reads and the probe answer. */
START_TEST(refuse_all_refuses_every_write)
{
	struct err err;
	int64_t rid, item;
	char job[32];
	bool finished;

	ck_assert_int_eq(store_defer(st, &err), 0);
	rid = one_item(&item);
	ck_assert_int_eq(store_flush(st, &err), 0);
	store_refuse_all(st, "state store: the commit failed");
	ck_assert_int_eq(store_defer(st, &err), -1);
	ck_assert_str_eq(err.msg, "not written, the state store failed earlier:"
			 " state store: the commit failed");
	ck_assert_int_eq(store_begin(st, &err), -1);
	ck_assert_int_eq(store_request_finish(st, rid, 3, false, &err), -1);
	ck_assert_int_eq(store_item_set(st, item, MS_RUNNING, 1, 0, NULL, NULL,
					-1, 2, &err), -1);
	ck_assert_int_eq(store_flush(st, &err), 0);
	ck_assert_int_eq(store_request_get(st, rid, job, sizeof job, &finished,
					   &err), 0);
	ck_assert(!finished);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM manifest WHERE state ="
			      " 'queued'"), 1);
	ck_assert_int_eq(store_probe_write(st, 0, &err), 0);
	/* a second reason does not replace the first */
	store_refuse_all(st, "another");
	ck_assert_int_eq(store_commit(st, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "the commit failed"));
}
END_TEST

/* Outside a deferred turn too (an explicit transaction, a lone write):
 * the failure reaches the next flush, the one place the scheduler hears
 * of it; a group rolled back by its caller does not hide it. */
START_TEST(failed_write_outside_a_turn)
{
	struct err err;
	int64_t item;

	make_faulty();
	ck_assert_int_eq(store_defer(st, &err), 0);
	ck_assert_int_eq(store_begin(st, &err), 0); /* a group */
	(void)one_item(&item);
	ck_assert_int_eq(store_item_set(st, item, MS_RUNNING, 1, 0, NULL, NULL,
					-1, 2, &err), -1);
	store_rollback(st);
	ck_assert_int_eq(store_flush(st, &err), -1);
	ck_assert_str_eq(err.msg, "state store: injected: disk full");
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 0);
	/* a lone write, committed by itself before the failure */
	(void)one_item(&item);
	ck_assert_int_eq(store_item_set(st, item, MS_FAILED, 1, 0, NULL, NULL,
					-1, 2, &err), -1);
	ck_assert_int_eq(store_flush(st, &err), -1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 1);
	ck_assert_int_eq(store_flush(st, &err), 0);
}
END_TEST

/* The probe main.c runs while the store is failed marks nothing. */
START_TEST(probe_marks_nothing)
{
	struct err err;
	int64_t item;

	make_faulty();
	ck_assert_int_eq(store_probe_write(st, 0, &err), -1);
	ck_assert_str_eq(err.msg, "state store: injected: probe");
	(void)one_item(&item);
	ck_assert_int_eq(store_flush(st, &err), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM manifest"), 1);
}
END_TEST

/* The real probe: a commit on an idle store, refused in a transaction. */
START_TEST(probe_writes)
{
	struct err err;

	ck_assert_int_eq(store_probe_write(st, 0, &err), 0);
	ck_assert_int_eq(store_defer(st, &err), 0);
	ck_assert_int_eq(store_probe_write(st, 0, &err), -1);
	ck_assert_int_eq(store_flush(st, &err), 0);
	ck_assert_int_eq(store_probe_write(st, 0, &err), 0);
}
END_TEST

/* ---- opening ----------------------------------------------------------- */

/* The configuration's store: SQLite at state_db. */
START_TEST(opens_from_config)
{
	struct config cfg = { .state_db = path };
	struct store *again;
	struct err err;

	ck_assert_int_eq(store_open_config(&cfg, &again, &err), 0);
	ck_assert_str_eq(store_kind(again), "sqlite");
	store_close(again);
}
END_TEST

/* Without the PostgreSQL module, opening its store fails with one line
 * that names the module file and says the store cannot be opened. */
START_TEST(pg_module_absent)
{
	struct store *pg = NULL;
	struct err err;
	char want[160];

	ck_assert_int_eq(setenv("BACKFILLD_TEST_MODULE_DIR", dir, 1), 0);
	ck_assert_int_eq(store_open_pg("host=/nonexistent dbname=x", NULL, &pg,
				       &err), -1);
	unsetenv("BACKFILLD_TEST_MODULE_DIR");
	ck_assert_ptr_null(pg);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_ptr_null(strchr(err.msg, '\n'));
	snprintf(want, sizeof want, "cannot load the PostgreSQL state store"
		 " %s/backfilld-pg.so: ", dir);
	ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
	ck_assert_ptr_nonnull(strstr(err.msg, "; the state store cannot be"
				     " opened"));
}
END_TEST

/* The behaviour cases, for one implementation. */
static void
add_behaviour(TCase *tc)
{
	tcase_add_test(tc, manifest_and_recovery);
	tcase_add_test(tc, last_states);
	tcase_add_test(tc, durations_newest_first);
	tcase_add_test(tc, prune_keeps_what_it_must);
	tcase_add_test(tc, builds_and_job_state);
	tcase_add_test(tc, rollback_changes_nothing);
	tcase_add_test(tc, failed_write_fails_the_turn);
	tcase_add_test(tc, failed_write_outside_a_turn);
	tcase_add_test(tc, refuse_all_refuses_every_write);
	tcase_add_test(tc, probe_marks_nothing);
	tcase_add_test(tc, probe_writes);
}

#ifdef HAVE_LIBPQ
/* LEASE-3: node death in SQL (LEASE_SQL_DEAD: cluster_pg.c's reap and
 * the heartbeat's count of live nodes) says what lease_node_dead says,
 * below, at and above the bound, by the server's now(). */
START_TEST(lease_sql_agrees)
{
	const int64_t lease_s = 10, ms = lease_dead_ms(lease_s);
	const int64_t ago[] = { 0, ms - 1, ms, ms + 1, 3 * ms };
	char sql[256];

	for (size_t i = 0; i < sizeof ago / sizeof ago[0]; i++) {
		snprintf(sql, sizeof sql, "SELECT CASE WHEN "
			 LEASE_SQL_DEAD("ts", "%lld") " THEN 1 ELSE 0 END FROM"
			 " (SELECT now() - %lld * interval '1 millisecond' AS ts)"
			 " x", (long long)ms, (long long)ago[i]);
		ck_assert_int_eq(pgfix_peek(sql),
				 lease_node_dead(1000000 - ago[i], 1000000,
						 lease_s));
	}
	ck_assert(!lease_node_dead(1000000 - ms, 1000000, lease_s));
	ck_assert(lease_node_dead(1000000 - ms - 1, 1000000, lease_s));
}
END_TEST
#endif

int
main(void)
{
	Suite *s = suite_create("store");
	TCase *tc;
	SRunner *sr;
	int failed;

	for (size_t i = 0; i < sizeof impls / sizeof impls[0]; i++) {
		if (impls[i].available != NULL && !impls[i].available())
			continue;
		tc = tcase_create(impls[i].name);
		tcase_add_checked_fixture(tc, impls[i].setup, impls[i].teardown);
		add_behaviour(tc);
#ifdef HAVE_LIBPQ
		if (impls[i].peek == pgfix_peek) /* the server's own */
			tcase_add_test(tc, lease_sql_agrees);
#endif
		suite_add_tcase(s, tc);
	}
	/* SQLite's own machinery: migrations, the WAL, opening */
	tc = tcase_create("sqlite only");
	tcase_add_checked_fixture(tc, sqlite_setup, sqlite_teardown);
	tcase_add_test(tc, migrates_once);
	tcase_add_test(tc, refuses_newer_schema);
	tcase_add_test(tc, migrates_history_from_v2);
	tcase_add_test(tc, migrates_cutoff_from_v6);
	tcase_add_test(tc, wal_stays_bounded);
	tcase_add_test(tc, opens_from_config);
	tcase_add_test(tc, pg_module_absent);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
