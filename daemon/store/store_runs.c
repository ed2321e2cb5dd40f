/*
 * store_runs.c - the runs listing's keyset cursor, the part every state
 * store implementation shares (store.h, struct store_runs_cursor): the
 * filters, the phases, the windows and their budget.  An implementation
 * supplies only the bounds of its tables and one window's query.
 *
 * Rules that must always hold:
 *  RUNS-1. The runs listing is, in this order: the manifest rows still queued
 *     or blocked (newest first), then the runs (newest first), then the
 *     manifest rows cancelled before they ran (newest first).
 *  RUNS-2. Each phase walks its id space downwards in windows "id < hi AND
 *     id >= lo" with the filters, so that a page costs at most
 *     STORE_RUNS_SCAN ids of a range scan however selective the filters
 *     are; a page may therefore hold fewer rows than asked, even none,
 *     and still not be the last.
 *  RUNS-3. A cursor holds no resource of the store between pages (no read
 *     transaction, no statement).  Rows added after the cursor opened
 *     (ids above the bounds taken then) are not listed; a row that leaves
 *     the manifest's pending states between pages may be missed or, once
 *     run, is not listed twice because its run's id is above the bound.
 *  RUNS-4. A state filter names phases: runs are never queued or blocked,
 *     cancelled rows are runs or manifest rows cancelled unrun.
 */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define STORE_RUNS_SCAN 5000 /* ids a page looks at, at most */

/* The SELECT of each phase; columns as store_run_row, then the id. */
static const char *const store_runs_select[3] = {
	"SELECT NULL, request_id, job, partition_key, attempts + 1,"
	" state, NULL, NULL, CASE WHEN state = 'blocked' THEN"
	" 'blocked: its input ' || blocked_on || ' failed' ELSE error"
	" END, NULL, NULL, NULL, id FROM manifest WHERE (state = 'queued' OR"
	" state = 'blocked')",
	"SELECT COALESCE(shared_run, id), request_id, job, partition_key,"
	" attempt, state, started_at, finished_at, error, rows_changed,"
	" code_version, marked_by, id FROM runs WHERE true",
	"SELECT NULL, request_id, job, partition_key, attempts + 1,"
	" state, NULL, updated_at, error, NULL, NULL, NULL, id FROM manifest m"
	" WHERE state = 'cancelled' AND NOT EXISTS (SELECT 1 FROM runs r"
	" WHERE r.manifest_id = m.id)",
};

/* Fill a new cursor's head with its store and filters. */
void
store_runs_init(struct store_runs_cursor *c, struct store *st,
		const char *job, int64_t request_id, const char *state)
{
	c->st = st;
	c->request_id = request_id;
	c->job = job ? xstrdup(job) : NULL;
	c->state = state ? xstrdup(state) : NULL;
}

/* With the bounds of phases 0 (manifest) and 1 (runs) set: bound phase 2
 * and empty the phases the state filter rules out (RUNS-4). */
void
store_runs_clip(struct store_runs_cursor *c)
{
	c->lo[2] = c->lo[0];
	c->hi[2] = c->hi[0];
	if (c->state && (strcmp(c->state, "queued") == 0 ||
			 strcmp(c->state, "blocked") == 0)) {
		c->hi[1] = c->lo[1];
		c->hi[2] = c->lo[2];
	} else if (c->state) {
		c->hi[0] = c->lo[0];
		if (strcmp(c->state, "cancelled") != 0)
			c->hi[2] = c->lo[2];
	}
}

/* Free what the head holds (not the cursor itself). */
void
store_runs_free(struct store_runs_cursor *c)
{
	free(c->job);
	free(c->state);
}

/* The newest run id the listing will show (0: none). */
int64_t
store_runs_newest(const struct store_runs_cursor *c)
{
	return c->hi[1] > 0 ? c->hi[1] - 1 : 0;
}

/* The current phase's window query into sql, its parameters numbered
 * after mark ('?' for SQLite, '$' for PostgreSQL): 1 hi, 2 lo, 3 job,
 * 4 request id, 5 state (each only with its filter), 6 the row limit. */
void
store_runs_sql(const struct store_runs_cursor *c, char mark, char *sql,
	       size_t size)
{
	char job[24] = "", request[32] = "", state[24] = "";

	if (c->job)
		snprintf(job, sizeof job, " AND job = %c3", mark);
	if (c->request_id)
		snprintf(request, sizeof request, " AND request_id = %c4", mark);
	if (c->state)
		snprintf(state, sizeof state, " AND state = %c5", mark);
	snprintf(sql, size, "%s AND id < %c1 AND id >= %c2%s%s%s"
		 " ORDER BY id DESC LIMIT %c6", store_runs_select[c->phase],
		 mark, mark, job, request, state, mark);
}

/* One row of a window to cb; id is its id, below which the cursor
 * resumes.  Sets *stop when cb ends the page; -1 when cb fails. */
int
store_runs_row(struct store_runs_cursor *c, const struct store_run_row *row,
	       int64_t id, struct store_runs_page *pg, struct err *err)
{
	int rc;

	c->hi[c->phase] = id;
	pg->n++;
	rc = pg->cb(row, pg->data, err);
	if (rc < 0)
		return -1;
	if (rc > 0)
		pg->stop = true;
	return 0;
}

/* One page of the listing, window after window (RUNS-2): 1 complete, 0
 * more may follow, -1 err. */
int
store_runs_walk(struct store_runs_cursor *c, int max_rows,
		store_runs_window_fn window, store_run_cb cb, void *data,
		struct err *err)
{
	struct store_runs_page pg = { .cb = cb, .data = data };
	int64_t budget = STORE_RUNS_SCAN, lo, start;
	int nrows = 0;

	while (c->phase < 3 && !pg.stop && nrows < max_rows && budget > 0) {
		int ph = c->phase;

		if (c->hi[ph] <= c->lo[ph]) {
			c->phase++;
			continue;
		}
		start = c->hi[ph];
		lo = c->hi[ph] - budget < c->lo[ph] ? c->lo[ph] :
			c->hi[ph] - budget;
		pg.n = 0;
		pg.max_rows = max_rows - nrows;
		if (window(c, lo, &pg, err) < 0)
			return -1;
		/* the window is read to its end: the next one starts below it */
		if (!pg.stop && pg.n < pg.max_rows)
			c->hi[ph] = lo;
		nrows += pg.n;
		budget -= start - c->hi[ph];
	}
	while (c->phase < 3 && c->hi[c->phase] <= c->lo[c->phase])
		c->phase++;
	return c->phase == 3 ? 1 : 0;
}
