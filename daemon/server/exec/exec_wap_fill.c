/*
 * exec_wap_fill.c - a statement of a ClickHouse run (exec_wap.c), and a
 * batch's fill of its stage (docs/clickhouse.md, "Batch"): by one
 * statement over the batch's interval, or by several at once, each over
 * a consecutive share of its partitions.  ClickHouse 18.16 writes the
 * parts of an INSERT (one a partition) one after another, most of a
 * fill's time (90 days: the SELECT 34 ms, its INSERT 95 to 640 ms): two
 * statements over the halves of 90 days filled the stage in half the
 * time of one on a 2-core machine.  The scheduler gives the run its
 * width, the slots it holds against the caps (exec_run.width).
 */
#include <stdlib.h>
#include <string.h>

#include "chsql.h"
#include "exec.h"
#include "exec_int.h"
#include "exec_wap.h"
#include "wh.h"
#include "xalloc.h"

int
exec_wap_steps(struct exec_flight *fl, struct wh_conn *conn,
	       const char *what, const char *sql,
	       const struct wh_param *const *sets, size_t nparams, size_t n,
	       struct err *err)
{
	int rc;

	if (exec_interrupted(fl, err))
		return -1;
	rc = n > 1 ? conn->drv->exec_many(conn, sql, sets, nparams, n, err) :
	    conn->drv->exec_script(conn, sql, sets[0], nparams, err);
	if (rc == -1) {
		if (!err_is(err, ERR_INTERRUPTED))
			err_prefix(err, "%s", what);
		return -1;
	}
	return 0;
}

/* How many statements fill a batch's stage at once: the run's width, at
 * most one a part; one without the driver's exec_many, and for a running
 * total, whose batch SQL seeds its days from the day before the batch (a
 * share would seed from a day of the share before it, not built yet). */
static size_t
exec_wap_width(const struct exec_run *run, const struct wh_conn *conn)
{
	if (run->width <= 1 || conn->drv->exec_many == NULL ||
	    run->job->self_lookback > 0 || run->nparts < 2)
		return 1;
	return (size_t)run->width < run->nparts ? (size_t)run->width :
	    run->nparts;
}

static int
exec_wap_part_cmp(const void *a, const void *b)
{
	const struct exec_part *x = a, *y = b;

	return (x->t0 > y->t0) - (x->t0 < y->t0);
}

int
exec_wap_batch_fill(struct exec_flight *fl, struct wh_conn *conn,
		    const struct wap_tables *t, struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	size_t w = exec_wap_width(run, conn), off = 0, cnt;
	struct exec_part *parts = xcalloc(run->nparts, sizeof *parts);
	struct wh_param (*spans)[5] = xcalloc(w, sizeof *spans);
	const struct wh_param **sets = xcalloc(w, sizeof *sets);
	char *sql = chsql_fill_sql(t->stage, run->job->sql);
	int rc;

	/* the shares in time order (a batch's parts are consecutive, in
	 * either order), so that their intervals tile the batch's */
	memcpy(parts, run->parts, run->nparts * sizeof *parts);
	qsort(parts, run->nparts, sizeof *parts, exec_wap_part_cmp);
	for (size_t g = 0; g < w; g++, off += cnt) {
		cnt = run->nparts / w + (g < run->nparts % w ? 1 : 0);
		exec_batch_span(parts + off, cnt, spans[g]);
		spans[g][4].name = "stage";
		spans[g][4].value = t->stage;
		sets[g] = spans[g];
	}
	rc = exec_wap_steps(fl, conn, "filling the stage", sql, sets, 5, w,
			    err);
	free(sql);
	free(sets);
	free(spans);
	free(parts);
	return rc;
}
