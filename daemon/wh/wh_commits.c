/*
 * wh_commits.c - the table backfilld_commits in a warehouse (wh_commits.h),
 * through the driver seam only: the same statements on every driver but
 * for the table's creation and the pruning, which are each driver's own.
 */
#include "wh_commits.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The statements of one driver. */
struct wh_commits_sql {
	const char *driver;
	const char *exists; /* one value, true when the table is there */
	const char *lock;   /* serialises creations (NULL: begin does) */
	const char *create;
	const char *prune;
};

static const struct wh_commits_sql wh_commits_sqls[] = {
	{ "sqlite",
	  "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND"
	  " name = 'backfilld_commits'",
	  NULL, /* BEGIN IMMEDIATE takes the write lock */
	  "CREATE TABLE IF NOT EXISTS backfilld_commits ("
	  " request_id INTEGER NOT NULL, job TEXT NOT NULL,"
	  " partition_key TEXT NOT NULL, run_id INTEGER NOT NULL,"
	  " committed_at INTEGER NOT NULL,"
	  " PRIMARY KEY (job, request_id, partition_key)) WITHOUT ROWID",
	  "DELETE FROM backfilld_commits WHERE job = :job AND"
	  " request_id < CAST(:request AS INTEGER) AND"
	  " committed_at < CAST(:before AS INTEGER)" },
	/* pruning skips the rows another run is deleting: no wait on it */
	{ "postgres",
	  "SELECT to_regclass('backfilld_commits') IS NOT NULL",
	  /* 'bfdc': held to the creating transaction's end */
	  "SELECT pg_advisory_xact_lock(1650877539)",
	  "CREATE TABLE IF NOT EXISTS backfilld_commits ("
	  " request_id bigint NOT NULL, job text NOT NULL,"
	  " partition_key text NOT NULL, run_id bigint NOT NULL,"
	  " committed_at bigint NOT NULL,"
	  " PRIMARY KEY (job, request_id, partition_key))",
	  "DELETE FROM backfilld_commits WHERE ctid IN (SELECT ctid FROM"
	  " backfilld_commits WHERE job = :job AND request_id < :request"
	  " AND committed_at < :before FOR UPDATE SKIP LOCKED)" },
};

#define WH_COMMITS_FIND "SELECT run_id || ' ' || committed_at FROM" \
	" backfilld_commits WHERE request_id = :request AND job = :job AND" \
	" partition_key = :partition"
#define WH_COMMITS_DROP "DELETE FROM backfilld_commits WHERE" \
	" request_id = :request AND job = :job AND partition_key = :partition"
#define WH_COMMITS_ADD "INSERT INTO backfilld_commits (request_id, job," \
	" partition_key, run_id, committed_at) VALUES (:request, :job," \
	" :partition, :run, :now)"

/* The statements for conn's driver, or NULL. */
static const struct wh_commits_sql *
wh_commits_sql(const struct wh_conn *conn)
{
	for (size_t i = 0; i < sizeof wh_commits_sqls /
	     sizeof wh_commits_sqls[0]; i++)
		if (strcmp(wh_commits_sqls[i].driver, conn->drv->name) == 0)
			return &wh_commits_sqls[i];
	return NULL;
}

/* Whether the table is there: 1 yes, 0 no, -1 err. */
static int
wh_commits_exists(struct wh_conn *conn, const struct wh_commits_sql *q,
		  struct err *err)
{
	bool has_row;
	char *v;
	int yes;

	if (conn->drv->query_value(conn, q->exists, NULL, 0, &has_row, &v,
				   err) == -1)
		return -1;
	yes = has_row && v != NULL && strcmp(v, "0") != 0 &&
	      strcmp(v, "f") != 0;
	free(v);
	return yes;
}

int
wh_commits_ensure(struct wh_conn *conn, struct err *err)
{
	const struct wh_commits_sql *q = wh_commits_sql(conn);
	struct err qerr;
	int r;

	if (q == NULL)
		return err_set(err, EXIT_WORK_FAILED, "the %s driver keeps no"
			       " backfilld_commits", conn->drv->name);
	/* a table created by hand serves a role that may not create one */
	if ((r = wh_commits_exists(conn, q, err)) != 0)
		return r < 0 ? -1 : 0;
	/* COMMITS-4: one transaction under a lock, so that the runs starting
	 * at once on a fresh warehouse wait for the first, never race it */
	if (conn->drv->begin(conn, err) == -1)
		goto fail;
	if ((q->lock != NULL && conn->drv->exec_script(conn, q->lock, NULL, 0,
	    err) == -1) || conn->drv->exec_script(conn, q->create, NULL, 0,
	    err) == -1) {
		conn->drv->rollback(conn);
		goto fail;
	}
	if (conn->drv->commit(conn, err) == 0)
		return 0;
fail:
	/* created meanwhile by a session that took no lock (by hand) */
	if (conn->drv->usable(conn) && wh_commits_exists(conn, q, &qerr) == 1)
		return 0;
	err_prefix(err, "cannot create backfilld_commits");
	return -1;
}

/* The parameters of identity c (the buffers hold the numbers). */
static void
wh_commits_params(const char *job, const char *key, const struct wh_commit *c,
		  char request[24], char run[24], struct wh_param p[5])
{
	snprintf(request, 24, "%" PRId64, c->request);
	snprintf(run, 24, "%" PRId64, c->run_id);
	p[0] = (struct wh_param){ "request", request };
	p[1] = (struct wh_param){ "job", job };
	p[2] = (struct wh_param){ "partition", key };
	p[3] = (struct wh_param){ "run", run };
	p[4] = (struct wh_param){ "now", NULL };
}

/* "already committed by run N at T" from a row's "RUN AT_MS". */
static void
wh_commits_note(const char *row, char *note, size_t notesz)
{
	long long run = 0, at = 0;
	char when[32] = "?";
	struct tm tm;
	time_t t;

	if (sscanf(row, "%lld %lld", &run, &at) == 2) {
		t = (time_t)(at / 1000);
		if (gmtime_r(&t, &tm) != NULL)
			strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	snprintf(note, notesz, "already committed by run %lld at %s", run,
		 when);
}

int
wh_commits_seen(struct wh_conn *conn, const char *job,
		const char *const *keys, const struct wh_commit *c, size_t n,
		bool *present, char *note, size_t notesz, struct err *err)
{
	char request[24], run[24];
	struct wh_param p[5];
	long long rid, at;
	bool has_row, all = n > 0;
	char *v;

	for (size_t i = 0; i < n; i++) {
		wh_commits_params(job, keys[c[i].part], &c[i], request, run, p);
		if (conn->drv->query_value(conn, WH_COMMITS_FIND, p, 3,
					   &has_row, &v, err) == -1) {
			err_prefix(err, "reading backfilld_commits");
			return -1;
		}
		if (has_row && v != NULL && sscanf(v, "%lld %lld", &rid,
		    &at) == 2 && at < c[i].request_at) {
			/* COMMITS-2: a leftover of an earlier state store */
			has_row = false;
			if (conn->drv->exec_script(conn, WH_COMMITS_DROP, p, 3,
						   err) == -1) {
				free(v);
				err_prefix(err, "replacing a stale row of"
					   " backfilld_commits");
				return -1;
			}
		}
		if (has_row && v != NULL && i == 0)
			wh_commits_note(v, note, notesz);
		if (!has_row)
			all = false;
		if (present != NULL)
			present[i] = has_row;
		free(v);
	}
	return all ? 1 : 0;
}

int
wh_commits_record(struct wh_conn *conn, const char *job,
		  const char *const *keys, const struct wh_commit *c, size_t n,
		  const bool *present, int64_t now, int64_t prune_before,
		  struct err *err)
{
	const struct wh_commits_sql *q = wh_commits_sql(conn);
	char request[24], run[24], at[24], before[24];
	struct wh_param p[5];
	int64_t oldest;

	snprintf(at, sizeof at, "%" PRId64, now);
	for (size_t i = 0; i < n; i++) {
		if (present != NULL && present[i])
			continue;
		wh_commits_params(job, keys[c[i].part], &c[i], request, run, p);
		p[4].value = at;
		if (conn->drv->exec_script(conn, WH_COMMITS_ADD, p, 5,
					   err) == -1) {
			err_prefix(err, "writing backfilld_commits");
			return -1;
		}
	}
	if (q == NULL || prune_before <= 0 || n == 0)
		return 0;
	/* only requests older than every one this run commits for */
	oldest = c[0].request;
	for (size_t i = 1; i < n; i++)
		if (c[i].request < oldest)
			oldest = c[i].request;
	snprintf(request, sizeof request, "%" PRId64, oldest);
	snprintf(before, sizeof before, "%" PRId64, prune_before);
	p[0] = (struct wh_param){ "job", job };
	p[1] = (struct wh_param){ "request", request };
	p[2] = (struct wh_param){ "before", before };
	if (conn->drv->exec_script(conn, q->prune, p, 3, err) == -1) {
		err_prefix(err, "pruning backfilld_commits");
		return -1;
	}
	return 0;
}
