/*
 * store_sqlite_ckpt.c - the SQLite state store's WAL checkpoints, mostly
 * off the loop (the rules below).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_sqlite_int.h"

#define STORE_CKPT_PAGES 1000
#define STORE_CKPT_LOOP_PAGES 4096
#define STORE_CKPT_HARD_PAGES 5120 /* the loop waits for a checkpoint */

/*
 * Checkpoints, mostly off the loop.  With synchronous=NORMAL a commit
 * writes the WAL without fsync; the checkpoint that copies the WAL back
 * into the database fsyncs both, which takes milliseconds on a busy disk.
 * SQLite would run it inside whichever commit crossed 1000 WAL pages, on
 * the loop thread; instead, once a commit leaves STORE_CKPT_PAGES pages in
 * the WAL, a PASSIVE checkpoint runs on libuv's thread pool, on a
 * connection of its own (one at a time).
 *
 * The bound.  A checkpoint copies frames back but does not shrink the WAL:
 * the next write transaction starts the WAL over from its beginning only
 * if, when it starts, every frame has been copied.  A PASSIVE checkpoint
 * on another connection never waits for the loop's writer, so under a
 * steady stream of commits with no quiet moment it keeps finishing just
 * behind the newest frame, and the WAL grows without end (measured: 600
 * MB for 40,000 small commits in a tight loop).  So once a commit leaves
 * STORE_CKPT_LOOP_PAGES pages, the loop's own connection runs a PASSIVE
 * checkpoint right after that commit: no transaction is open then and the
 * loop is the only writer, so it copies every frame that is left (the
 * pool's checkpoints copied the rest: this is the tail plus the fsyncs)
 * and the next write starts the WAL over; journal_size_limit cuts the
 * file back.  The WAL file therefore never holds much more than
 * STORE_CKPT_LOOP_PAGES pages (16 MiB), and the loop pays for a checkpoint
 * only when the pool could not keep up.  When the pool's checkpoint still
 * holds the lock (a slow fsync on a loaded host), the loop's PASSIVE one
 * gives up, and commits go on growing the WAL; past STORE_CKPT_HARD_PAGES
 * (20 MiB) the loop waits for the pool's to end (SQLite never waits for
 * the checkpoint lock: it retries each millisecond, 2 s at most) and then
 * runs its own: the writer is held back for the length of one checkpoint,
 * and the WAL stays bounded.
 *
 * The pool's connection must read the database once before it can
 * checkpoint: a connection that has not read the schema does not know the
 * database is in WAL mode, and its checkpoint does nothing (that was the
 * WAL that grew to gigabytes).  A checkpoint that fails is logged, once
 * per streak, with SQLite's reason.
 */

/* Thread pool: checkpoint on the pool's own connection. */
static void
store_sqlite_ckpt_work(uv_work_t *w)
{
	struct store_sqlite *st = w->data;
	int rc;

	st->ckpt_err[0] = '\0';
	if (st->ckpt_db == NULL) {
		if (sqlite3_open_v2(st->path, &st->ckpt_db, SQLITE_OPEN_READWRITE |
				    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
		    sqlite3_exec(st->ckpt_db, "SELECT COUNT(*) FROM"
				 " sqlite_master", NULL, NULL, NULL) != SQLITE_OK) {
			snprintf(st->ckpt_err, sizeof st->ckpt_err, "opening a"
				 " connection for checkpoints: %s", st->ckpt_db ?
				 sqlite3_errmsg(st->ckpt_db) : "out of memory");
			sqlite3_close(st->ckpt_db);
			st->ckpt_db = NULL;
			return;
		}
	}
	st->ckpt_log = -1;
	rc = sqlite3_wal_checkpoint_v2(st->ckpt_db, NULL,
				       SQLITE_CHECKPOINT_PASSIVE, &st->ckpt_log,
				       NULL);
	/* busy: the loop's own checkpoint holds the lock; that is no failure */
	if (rc == SQLITE_BUSY)
		st->ckpt_log = 0;
	else if (rc != SQLITE_OK)
		snprintf(st->ckpt_err, sizeof st->ckpt_err, "%s",
			 sqlite3_errmsg(st->ckpt_db));
	else if (st->ckpt_log < 0)
		snprintf(st->ckpt_err, sizeof st->ckpt_err, "the checkpoint"
			 " connection does not see the WAL");
}

/* Say once that checkpoints fail, and once that they work again. */
static void
store_sqlite_ckpt_report(struct store_sqlite *st, bool failed, const char *why)
{
	if (failed && !st->ckpt_failing)
		log_warn("state store %s: WAL checkpoint failed: %s; the WAL"
			 " keeps growing until one succeeds", st->path, why);
	else if (!failed && st->ckpt_failing)
		log_notice("state store %s: WAL checkpoints work again",
			   st->path);
	st->ckpt_failing = failed;
}

/* Loop: the pool's checkpoint is over. */
static void
store_sqlite_ckpt_done(uv_work_t *w, int status)
{
	struct store_sqlite *st = w->data;

	st->ckpt_busy = false;
	store_sqlite_ckpt_report(st, status != 0 || st->ckpt_err[0] != '\0',
			  status != 0 ? "cancelled" : st->ckpt_err);
}

/* After each commit: checkpoint on the pool when the WAL has grown, on
 * the loop when the pool could not keep up. */
int
store_sqlite_wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct store_sqlite *st = arg;
	int rc;

	(void)name;
	if (pages >= STORE_CKPT_LOOP_PAGES) {
		rc = sqlite3_wal_checkpoint_v2(db, NULL,
					       SQLITE_CHECKPOINT_PASSIVE, NULL,
					       NULL);
		/* past the hard bound, wait out the pool's checkpoint (its
		 * lock is never waited for by SQLite itself): 1 ms at a time,
		 * 2 s at most */
		for (int i = 0; rc == SQLITE_BUSY &&
		     pages >= STORE_CKPT_HARD_PAGES && i < 2000; i++) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
			rc = sqlite3_wal_checkpoint_v2(db, NULL,
						       SQLITE_CHECKPOINT_PASSIVE,
						       NULL, NULL);
		}
		/* busy: the pool's checkpoint holds the lock; next commit */
		if (rc != SQLITE_BUSY)
			store_sqlite_ckpt_report(st, rc != SQLITE_OK, sqlite3_errmsg(db));
		st->ckpt_loop++;
		return SQLITE_OK;
	}
	if (pages >= STORE_CKPT_PAGES && !st->ckpt_busy && st->loop != NULL) {
		st->ckpt_busy = true;
		st->ckpt_work.data = st;
		if (uv_queue_work(st->loop, &st->ckpt_work, store_sqlite_ckpt_work,
				  store_sqlite_ckpt_done) != 0)
			st->ckpt_busy = false;
	}
	return SQLITE_OK;
}

void
store_sqlite_checkpoint_on(struct store *base, uv_loop_t *loop)
{
	struct store_sqlite *st = store_sqlite_of(base);

	st->loop = loop;
}
