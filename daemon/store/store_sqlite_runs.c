/*
 * store_sqlite_runs.c - the SQLite state store's runs, page by page: the
 * keyset cursor of store_runs.c over the runs table.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_sqlite_int.h"
#include "xalloc.h"

/* ---- runs, page by page (store_runs.c: the keyset cursor) ----------- */

/* Statements are prepared per window and finalized before returning: a
 * cursor holds no SQLite resource between pages (no read transaction,
 * nothing to finalize before the store closes). */
struct store_sqlite_cursor {
	struct store_runs_cursor base; /* first: store.c sees this */
	struct store_sqlite *st;
};

/* The bounds min(id) and max(id)+1 of table; empty: lo = hi = 0. */
static int
store_sqlite_runs_bounds(struct store_sqlite *st, const char *table,
			 int64_t *lo, int64_t *hi, struct err *err)
{
	sqlite3_stmt *s;
	char sql[128];
	int rc;

	/* two subqueries: SQLite reads min() or max() alone off the rowid
	 * in one step, but both in one query scan the whole table */
	snprintf(sql, sizeof sql, "SELECT (SELECT min(id) FROM %s),"
		 " (SELECT max(id) FROM %s)", table, table);
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return store_sqlite_fail(st, err, "listing runs");
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(s);
		return store_sqlite_fail(st, err, "listing runs");
	}
	*lo = *hi = 0;
	if (sqlite3_column_type(s, 0) != SQLITE_NULL) {
		*lo = sqlite3_column_int64(s, 0);
		*hi = sqlite3_column_int64(s, 1) + 1;
	}
	sqlite3_finalize(s);
	return 0;
}

int
store_sqlite_runs_open(struct store *base, const char *job, int64_t request_id,
		       const char *state, struct store_runs_cursor **out,
		       struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	struct store_sqlite_cursor *c = xcalloc(1, sizeof *c);

	store_runs_init(&c->base, base, job, request_id, state);
	c->st = st;
	if (store_sqlite_runs_bounds(st, "manifest", &c->base.lo[0],
				     &c->base.hi[0], err) < 0 ||
	    store_sqlite_runs_bounds(st, "runs", &c->base.lo[1],
				     &c->base.hi[1], err) < 0) {
		store_sqlite_runs_close(&c->base);
		return -1;
	}
	store_runs_clip(&c->base);
	*out = &c->base;
	return 0;
}

/* One row of a window query as a struct store_run_row. */
static void
store_sqlite_run_row(sqlite3_stmt *s, struct store_run_row *row)
{
	memset(row, 0, sizeof *row);
	row->has_id = sqlite3_column_type(s, 0) != SQLITE_NULL;
	row->id = sqlite3_column_int64(s, 0);
	row->request_id = sqlite3_column_int64(s, 1);
	row->job = store_sqlite_col_text(s, 2);
	row->key = store_sqlite_col_text(s, 3);
	row->attempt = sqlite3_column_int(s, 4);
	row->state = store_sqlite_col_text(s, 5);
	row->has_started_at = sqlite3_column_type(s, 6) != SQLITE_NULL;
	row->started_at = sqlite3_column_int64(s, 6);
	row->has_finished_at = sqlite3_column_type(s, 7) != SQLITE_NULL;
	row->finished_at = sqlite3_column_int64(s, 7);
	row->error = store_sqlite_col_text(s, 8);
	row->has_rows = sqlite3_column_type(s, 9) != SQLITE_NULL;
	row->rows_changed = sqlite3_column_int64(s, 9);
	row->code_version = store_sqlite_col_text(s, 10);
	row->marked_by = store_sqlite_col_text(s, 11);
}

/* One window query of the current phase (store_runs_window_fn). */
static int
store_sqlite_runs_window(struct store_runs_cursor *base, int64_t lo,
			 struct store_runs_page *pg, struct err *err)
{
	struct store_sqlite_cursor *c = (struct store_sqlite_cursor *)base;
	struct store_run_row row;
	sqlite3_stmt *s;
	char sql[768];
	int rc = SQLITE_DONE;

	store_runs_sql(base, '?', sql, sizeof sql);
	if (sqlite3_prepare_v2(c->st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return store_sqlite_fail(c->st, err, "listing runs");
	sqlite3_bind_int64(s, 1, base->hi[base->phase]);
	sqlite3_bind_int64(s, 2, lo);
	if (base->job)
		sqlite3_bind_text(s, 3, base->job, -1, SQLITE_STATIC);
	if (base->request_id)
		sqlite3_bind_int64(s, 4, base->request_id);
	if (base->state)
		sqlite3_bind_text(s, 5, base->state, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 6, pg->max_rows);
	while (!pg->stop && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		store_sqlite_run_row(s, &row);
		if (store_runs_row(base, &row, sqlite3_column_int64(s, 12), pg,
				   err) < 0) {
			sqlite3_finalize(s);
			return -1;
		}
	}
	if (!pg->stop && rc != SQLITE_DONE) {
		store_sqlite_fail(c->st, err, "listing runs");
		sqlite3_finalize(s);
		return -1;
	}
	sqlite3_finalize(s);
	return 0;
}

int
store_sqlite_runs_page(struct store_runs_cursor *base, int max_rows,
		       store_run_cb cb, void *data, struct err *err)
{
	return store_runs_walk(base, max_rows, store_sqlite_runs_window, cb,
			       data, err);
}

void
store_sqlite_runs_close(struct store_runs_cursor *base)
{
	if (base == NULL)
		return;
	store_runs_free(base);
	free(base);
}
