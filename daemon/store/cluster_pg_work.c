/*
 * cluster_pg_work.c - several hosts on PostgreSQL: the work table
 * (offers, results, claims, finishes, hand-overs), the nodes listing and
 * the mailbox of forwarded requests (cluster_pg_int.h; the rules are at
 * the top of cluster_pg.c).
 */
#include "cluster_pg_int.h"

/* The arrays of runs described by o (ids, requests, jobs, keys,
 * attempts), as the offer statements take them (pgsql_array_end); the
 * caller frees them. */
static void
cpg_offer_arrays(const struct cluster_offer *o, size_t n,
		 struct pgsql_array a[5])
{
	size_t i;

	memset(a, 0, 5 * sizeof *a);
	for (i = 0; i < n; i++) {
		struct pgsql_buf keys = { 0 };

		pgsql_array_int(&a[0], o[i].id);
		pgsql_array_int(&a[1], o[i].request);
		pgsql_array_text(&a[2], o[i].job);
		pgsql_buf_join(&keys, o[i].keys, o[i].nkeys, CPG_KEY_SEP[0]);
		pgsql_array_text(&a[3], keys.p);
		free(keys.p);
		pgsql_array_int(&a[4], o[i].attempt);
	}
}

/* Planner: offer runs, fenced by the lease. */
int
cpg_offer(struct cluster *c, const struct cluster_offer *o, size_t n,
	  struct err *err)
{
	static const char sql[] =
		"WITH ok AS (SELECT 1 FROM lease WHERE id = 1 AND holder = $1"
		"  AND generation = $2 AND expires_at > now()),"
		" ins AS (INSERT INTO work (id, request, job, keys, attempt,"
		"  generation)"
		"  SELECT t.id, nullif(t.request, 0), t.job,"
		"  string_to_array(t.keys, E'\\x1f'), t.attempt, $2"
		"  FROM unnest($3::bigint[], $4::bigint[], $5::text[],"
		"  $6::text[], $7::int[]) AS t(id, request, job, keys, attempt)"
		"  WHERE EXISTS (SELECT 1 FROM ok)"
		"  ON CONFLICT (id) DO NOTHING RETURNING 1),"
		" n AS (SELECT pg_notify('bf_work', '')"
		"  WHERE EXISTS (SELECT 1 FROM ins))"
		" SELECT (SELECT count(*) FROM ok), (SELECT count(*) FROM ins),"
		" (SELECT count(*) FROM n)";
	struct pgsql_array a[5];
	char gen[32];
	const char *v[7];
	PGresult *res;
	size_t k;
	bool ok;

	if (cpg_need_planner(c, err) < 0)
		return -1;
	if (n == 0)
		return 0;
	cpg_offer_arrays(o, n, a);
	snprintf(gen, sizeof gen, "%" PRId64, c->generation);
	v[0] = c->node;
	v[1] = gen;
	for (k = 0; k < 5; k++)
		v[2 + k] = pgsql_array_end(&a[k]);
	res = cpg_qp(c, CPG_P_OFFER, sql, 7, v, err);
	for (k = 0; k < 5; k++)
		pgsql_array_free(&a[k]);
	if (res == NULL)
		return -1;
	ok = cpg_i64(res, 0, 0) == 1;
	PQclear(res);
	if (!ok)
		return cpg_deposed(c, "offer refused", err);
	return 0;
}

/* Fill w from row i of a work query (columns in CPG_WORK_COLS order). */
#define CPG_WORK_COLS "id, coalesce(request, 0), job," \
	" array_to_string(keys, E'\\x1f'), attempt, generation, " \
	CPG_MS("claimed_at") ", coalesce(claimed_by, ''), failed," \
	" interrupted, error, result"

/* One row of a CPG_WORK_COLS query. */
static void
cpg_work_row(const PGresult *res, int i, struct cluster_work *w)
{
	memset(w, 0, sizeof *w);
	w->id = cpg_i64(res, i, 0);
	w->request = cpg_i64(res, i, 1);
	cpg_str(res, i, 2, w->job, sizeof w->job);
	cpg_split_keys(PQgetvalue(res, i, 3), &w->keys, &w->nkeys);
	w->attempt = (int)cpg_i64(res, i, 4);
	w->generation = cpg_i64(res, i, 5);
	w->claimed_ms = cpg_i64(res, i, 6);
	cpg_str(res, i, 7, w->claimed_by, sizeof w->claimed_by);
	w->failed = cpg_bool(res, i, 8);
	w->interrupted = cpg_bool(res, i, 9);
	w->error = cpg_dup(res, i, 10);
	w->result = cpg_dup(res, i, 11);
}

/* The rows of a CPG_WORK_COLS result, allocated. */
static void
cpg_work_rows(const PGresult *res, struct cluster_work **out, size_t *n)
{
	int i, nt = PQntuples(res);

	*n = (size_t)nt;
	*out = nt > 0 ? xcalloc((size_t)nt, sizeof **out) : NULL;
	for (i = 0; i < nt; i++)
		cpg_work_row(res, i, &(*out)[i]);
}

/*
 * Planner: vacuum the work table every CPG_VACUUM_ROWS results it
 * collected (their rows are deleted as they are recorded).
 * Each run leaves four dead row versions there (offer, claim, done,
 * deletion), and the claims and collections read the table whole (it
 * holds a few live rows per run in flight, docs/design-notes.md).
 * Pruning frees a page's dead versions but not the table's free space
 * map, so, until a vacuum, new offers go to new pages at its end and
 * every claim reads a table that only grows: at 30,000 partitions the
 * server spent more CPU per partition than the nodes, most of it on
 * tuples' visibility.  Autovacuum comes too late for a backfill (a
 * minute between its rounds).  A vacuum of the few pages is about a
 * millisecond; one that fails (no privilege, a lock held: SKIP_LOCKED)
 * is tried again after as many rows more, and changes nothing else.
 */
#define CPG_VACUUM_ROWS 500

static void
cpg_vacuum_work(struct cluster *c)
{
	struct err err;
	PGresult *res;

	c->forgotten = 0;
	res = cpg_q(c, "VACUUM (SKIP_LOCKED) work", 0, NULL, &err);
	if (res != NULL)
		PQclear(res);
}

/* Planner: the done rows (each deleted once recorded). */
int
cpg_results(struct cluster *c, size_t max, struct cluster_work **out,
	    size_t *n, struct err *err)
{
	static const char sql[] = "SELECT " CPG_WORK_COLS " FROM work"
				  " WHERE state = 'done' ORDER BY id LIMIT $1";
	char lim[32];
	const char *v[1] = { lim };
	PGresult *res;

	*out = NULL;
	*n = 0;
	if (cpg_need_planner(c, err) < 0)
		return -1;
	snprintf(lim, sizeof lim, "%zu", max);
	if ((res = cpg_qp(c, CPG_P_RESULTS, sql, 1, v, err)) == NULL)
		return -1;
	cpg_work_rows(res, out, n);
	PQclear(res);
	c->forgotten += (int64_t)*n;
	if (c->forgotten >= CPG_VACUUM_ROWS)
		cpg_vacuum_work(c);
	return 0;
}

/* Planner: delete rows (results recorded, offers withdrawn), fenced. */
int
cpg_forget(struct cluster *c, const int64_t *ids, size_t n, struct err *err)
{
	static const char sql[] =
		"WITH ok AS (SELECT 1 FROM lease WHERE id = 1 AND holder = $1"
		"  AND generation = $2 AND expires_at > now()),"
		" d AS (DELETE FROM work WHERE id = ANY($3::bigint[])"
		"  AND state <> 'claimed' AND EXISTS (SELECT 1 FROM ok)"
		"  RETURNING 1),"
		" x AS (UPDATE work SET cancel = true WHERE id = ANY($3::bigint[])"
		"  AND state = 'claimed' AND EXISTS (SELECT 1 FROM ok)"
		"  RETURNING 1)"
		" SELECT (SELECT count(*) FROM ok), (SELECT count(*) FROM d),"
		" (SELECT count(*) FROM x)";
	struct pgsql_array a = { 0 };
	char gen[32];
	const char *v[3] = { c->node, gen, NULL };
	PGresult *res;
	size_t i;
	bool ok;

	if (cpg_need_planner(c, err) < 0)
		return -1;
	for (i = 0; i < n; i++)
		pgsql_array_int(&a, ids[i]);
	snprintf(gen, sizeof gen, "%" PRId64, c->generation);
	v[2] = pgsql_array_end(&a);
	res = cpg_qp(c, CPG_P_FORGET, sql, 3, v, err);
	pgsql_array_free(&a);
	if (res == NULL)
		return -1;
	ok = cpg_i64(res, 0, 0) == 1;
	PQclear(res);
	if (!ok)
		return cpg_deposed(c, NULL, err);
	return 0;
}

/* Planner: ids of the rows offered or claimed. */
int
cpg_in_flight(struct cluster *c, int64_t **ids, size_t *n, struct err *err)
{
	PGresult *res;
	int i;

	*ids = NULL;
	*n = 0;
	res = cpg_q(c, "SELECT id FROM work WHERE state <> 'done' ORDER BY id",
		    0, NULL, err);
	if (res == NULL)
		return -1;
	*n = (size_t)PQntuples(res);
	*ids = *n > 0 ? xcalloc(*n, sizeof **ids) : NULL;
	for (i = 0; i < PQntuples(res); i++)
		(*ids)[i] = cpg_i64(res, i, 0);
	PQclear(res);
	return 0;
}

/* Planner: every row of the work table, with its state. */
int
cpg_work_all(struct cluster *c, struct cluster_work **out, size_t *n,
	     struct err *err)
{
	static const char sql[] = "SELECT " CPG_WORK_COLS ", state FROM work"
				  " ORDER BY id";
	PGresult *res;

	*out = NULL;
	*n = 0;
	if (cpg_need_planner(c, err) < 0)
		return -1;
	if ((res = cpg_q(c, sql, 0, NULL, err)) == NULL)
		return -1;
	cpg_work_rows(res, out, n);
	for (size_t i = 0; i < *n; i++)
		cpg_str(res, (int)i, 12, (*out)[i].state,
			sizeof (*out)[i].state);
	PQclear(res);
	return 0;
}

/* Planner stopping: its own runs in flight become its claims (claim_own
 * in cluster.h), fenced by the lease. */
int
cpg_claim_own(struct cluster *c, const struct cluster_offer *o, size_t n,
	      struct err *err)
{
	static const char sql[] =
		"WITH ok AS (SELECT 1 FROM lease WHERE id = 1 AND holder = $1"
		"  AND generation = $2 AND expires_at > now()),"
		" ins AS (INSERT INTO work (id, request, job, keys, attempt,"
		"  generation, state, claimed_by, incarnation, claimed_at)"
		"  SELECT t.id, nullif(t.request, 0), t.job,"
		"  string_to_array(t.keys, E'\\x1f'), t.attempt, $2, 'claimed',"
		"  $1, $3, now()"
		"  FROM unnest($4::bigint[], $5::bigint[], $6::text[],"
		"  $7::text[], $8::int[]) AS t(id, request, job, keys, attempt)"
		"  WHERE EXISTS (SELECT 1 FROM ok) RETURNING 1)"
		" SELECT (SELECT count(*) FROM ok), (SELECT count(*) FROM ins)";
	struct pgsql_array a[5];
	char gen[32], inc[32];
	const char *v[8];
	PGresult *res;
	size_t k;
	int64_t ok, ins;

	if (cpg_need_planner(c, err) < 0)
		return -1;
	if (n == 0)
		return 0;
	cpg_offer_arrays(o, n, a);
	snprintf(gen, sizeof gen, "%" PRId64, c->generation);
	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	v[0] = c->node;
	v[1] = gen;
	v[2] = inc;
	for (k = 0; k < 5; k++)
		v[3 + k] = pgsql_array_end(&a[k]);
	res = cpg_q(c, sql, 8, v, err);
	for (k = 0; k < 5; k++)
		pgsql_array_free(&a[k]);
	if (res == NULL)
		return -1;
	ok = cpg_i64(res, 0, 0);
	ins = cpg_i64(res, 0, 1);
	PQclear(res);
	if (ok != 1)
		return cpg_deposed(c, NULL, err);
	if (ins != (int64_t)n)
		return err_set(err, EXIT_WORK_FAILED, "%" PRId64 " of %zu rows"
			       " inserted", ins, n);
	return 0;
}

/* Planner stopping: release the lease, fenced, and keep off it. */
void
cpg_resign(struct cluster *c)
{
	static const char sql[] =
		"UPDATE lease SET holder = NULL, expires_at = now()"
		" WHERE id = 1 AND holder = $1 AND generation = $2";
	char gen[32];
	const char *v[2] = { c->node, gen };
	struct err err;

	c->resigned = true;
	if (c->role != CLUSTER_PLANNER)
		return;
	snprintf(gen, sizeof gen, "%" PRId64, c->generation);
	if (c->pg != NULL)
		PQclear(cpg_q(c, sql, 2, v, &err));
	cpg_log(c, 5, "cluster: node=%s hands the lease over (generation %"
		PRId64 ")", c->node, c->generation);
	cpg_set_role(c, c->db_ok ? CLUSTER_WORKER : CLUSTER_OFFLINE, 0);
}

/* Worker: claim offered runs of the given jobs. */
int
cpg_claim(struct cluster *c, const char *const *jobs, size_t njobs,
	  size_t max, struct cluster_work **out, size_t *n, struct err *err)
{
	static const char sql[] =
		"WITH me AS (SELECT 1 FROM nodes WHERE name = $1"
		"  AND incarnation = $2 AND role <> 'stopped'),"
		" pick AS (SELECT id FROM work WHERE state = 'offered'"
		"  AND job = ANY($3::text[]) AND EXISTS (SELECT 1 FROM me)"
		"  ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED)"
		" UPDATE work w SET state = 'claimed', claimed_by = $1,"
		" incarnation = $2, claimed_at = now()"
		" FROM pick WHERE w.id = pick.id AND w.state = 'offered'"
		" RETURNING w.id, coalesce(w.request, 0), w.job,"
		" array_to_string(w.keys, E'\\x1f'), w.attempt, w.generation,"
		" " CPG_MS("w.claimed_at") ", w.claimed_by, w.failed,"
		" w.interrupted, w.error, w.result";
	struct pgsql_array a = { 0 };
	char inc[32], lim[32];
	const char *v[4] = { c->node, inc, NULL, lim };
	PGresult *res;
	size_t i;

	*out = NULL;
	*n = 0;
	if (max == 0 || njobs == 0 || c->role == CLUSTER_OFFLINE ||
	    c->incarnation == 0)
		return c->pg == NULL ? err_set(err, EXIT_WORK_FAILED, "the"
					       " state store is not connected:"
					       " %s", c->db_error) : 0;
	for (i = 0; i < njobs; i++)
		pgsql_array_text(&a, jobs[i]);
	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	snprintf(lim, sizeof lim, "%zu", max);
	v[2] = pgsql_array_end(&a);
	res = cpg_q(c, sql, 4, v, err);
	pgsql_array_free(&a);
	if (res == NULL)
		return -1;
	cpg_work_rows(res, out, n);
	PQclear(res);
	return 0;
}

/* Worker: record a claimed run's end, if the claim still stands. */
int
cpg_finish(struct cluster *c, int64_t id, const struct cluster_result *r,
	   struct err *err)
{
	static const char sql[] =
		"WITH u AS (UPDATE work SET state = 'done', finished_at = now(),"
		"  failed = $4, error = $5, result = $6"
		"  WHERE id = $1 AND claimed_by = $2 AND incarnation = $3"
		"  AND state = 'claimed' RETURNING 1),"
		" n AS (SELECT pg_notify('bf_done', '')"
		"  WHERE EXISTS (SELECT 1 FROM u))"
		" SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM n)";
	char sid[32], inc[32];
	const char *v[6] = { sid, c->node, inc, r->failed ? "t" : "f",
			     r->error, r->result };
	PGresult *res;
	int ok;

	snprintf(sid, sizeof sid, "%" PRId64, id);
	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	if ((res = cpg_q(c, sql, 6, v, err)) == NULL)
		return -1;
	ok = cpg_i64(res, 0, 0) == 1;
	PQclear(res);
	if (!ok)
		cpg_log(c, 4, "cluster: node=%s run=%" PRId64 ": result"
			" refused: the run was given up on meanwhile (this"
			" node was declared dead); it was queued again",
			c->node, id);
	return ok;
}

/* Read a finish_claim's rows: the finishes recorded into f, the claims
 * into *out. */
static void
cpg_exchanged(struct cluster *c, const PGresult *res, struct cluster_finish *f,
	      size_t nf, struct cluster_work **out, size_t *n)
{
	int nt = PQntuples(res);
	size_t i, nc = 0;

	for (int r = 0; r < nt; r++)
		nc += cpg_i64(res, r, 12) == 2;
	*out = nc > 0 ? xcalloc(nc, sizeof **out) : NULL;
	for (int r = 0; r < nt; r++) {
		int64_t kind = cpg_i64(res, r, 12), id = cpg_i64(res, r, 0);

		if (kind == 2) {
			cpg_work_row(res, r, &(*out)[(*n)++]);
			continue;
		}
		for (i = 0; kind == 1 && i < nf; i++)
			if (f[i].id == id)
				f[i].ok = 1;
	}
	for (i = 0; i < nf; i++)
		if (!f[i].ok)
			cpg_log(c, 4, "cluster: node=%s run=%" PRId64 ": result"
				" refused: the run was given up on meanwhile"
				" (this node was declared dead); it was queued"
				" again", c->node, f[i].id);
}

/*
 * Worker: one statement finishes the runs of f (each only if its claim
 * still stands: claimed_by, incarnation, state) and claims up to max
 * offered runs (as cpg_claim).  Rows come back tagged by the last column:
 * 0 the notification (one row), 1 a finish recorded (its id), 2 a claim
 * (CPG_WORK_COLS).  The claim sees the rows as they were before the
 * statement: the runs it finishes are claimed, not offered, so the two
 * parts cannot meet.  "id = ANY" beside the join lets the finish use the
 * primary key (the planner does not know how short the arrays are).
 */
int
cpg_finish_claim(struct cluster *c, struct cluster_finish *f, size_t nf,
		 const char *const *jobs, size_t njobs, size_t max,
		 struct cluster_work **out, size_t *n, struct err *err)
{
	static const char sql[] =
		"WITH me AS (SELECT 1 FROM nodes WHERE name = $1"
		"  AND incarnation = $2 AND role <> 'stopped'),"
		" f AS (UPDATE work w SET state = 'done', finished_at = now(),"
		"  failed = t.failed, error = t.error, result = t.result"
		"  FROM unnest($3::bigint[], $4::boolean[], $5::text[],"
		"  $6::text[]) AS t(id, failed, error, result)"
		"  WHERE w.id = ANY($3::bigint[]) AND w.id = t.id"
		"  AND w.claimed_by = $1 AND w.incarnation = $2"
		"  AND w.state = 'claimed' RETURNING w.id),"
		" n AS (SELECT pg_notify('bf_done', '')"
		"  WHERE EXISTS (SELECT 1 FROM f)),"
		" pick AS (SELECT id FROM work WHERE state = 'offered'"
		"  AND job = ANY($7::text[]) AND $8 > 0"
		"  AND EXISTS (SELECT 1 FROM me)"
		"  ORDER BY id LIMIT $8 FOR UPDATE SKIP LOCKED),"
		" c AS (UPDATE work w SET state = 'claimed', claimed_by = $1,"
		"  incarnation = $2, claimed_at = now()"
		"  FROM pick WHERE w.id = pick.id AND w.state = 'offered'"
		"  RETURNING w.*)"
		" SELECT (SELECT count(*) FROM n), 0, '', '', 0, 0, 0, '', false,"
		"  false, NULL, NULL, 0"
		" UNION ALL SELECT id, 0, '', '', 0, 0, 0, '', false, false, NULL,"
		"  NULL, 1 FROM f"
		" UNION ALL SELECT " CPG_WORK_COLS ", 2 FROM c";
	struct pgsql_array a[5];
	char inc[32], lim[32];
	const char *v[8];
	PGresult *res;
	size_t i, k;

	*out = NULL;
	*n = 0;
	for (i = 0; i < nf; i++)
		f[i].ok = 0;
	if (c->role == CLUSTER_OFFLINE || c->incarnation == 0 || c->pg == NULL)
		return err_set(err, EXIT_WORK_FAILED, "the state store is not"
			       " connected: %s", c->db_error);
	if (njobs == 0)
		max = 0;
	if (nf == 0 && max == 0)
		return 0;
	memset(a, 0, sizeof a);
	for (i = 0; i < nf; i++) {
		pgsql_array_int(&a[0], f[i].id);
		pgsql_array_int(&a[1], f[i].r.failed);
		pgsql_array_text(&a[2], f[i].r.error);
		pgsql_array_text(&a[3], f[i].r.result);
	}
	for (i = 0; i < njobs; i++)
		pgsql_array_text(&a[4], jobs[i]);
	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	snprintf(lim, sizeof lim, "%zu", max);
	v[0] = c->node;
	v[1] = inc;
	for (k = 0; k < 5; k++)
		v[2 + k] = pgsql_array_end(&a[k]);
	v[7] = lim;
	res = cpg_qp(c, CPG_P_EXCHANGE, sql, 8, v, err);
	for (k = 0; k < 5; k++)
		pgsql_array_free(&a[k]);
	if (res == NULL)
		return -1;
	cpg_exchanged(c, res, f, nf, out, n);
	PQclear(res);
	return 0;
}

/* Any node: the nodes table. */
int
cpg_nodes(struct cluster *c, struct cluster_node **out, size_t *n,
	  int64_t *now_ms, struct err *err)
{
	static const char sql[] =
		"SELECT name, incarnation, " CPG_MS("last_seen") ", "
		CPG_MS("started_at") ", running, config_hash, role, "
		CPG_MS("now()") " FROM nodes ORDER BY name";
	PGresult *res;
	int i;

	*out = NULL;
	*n = 0;
	if ((res = cpg_q(c, sql, 0, NULL, err)) == NULL)
		return -1;
	*n = (size_t)PQntuples(res);
	*out = *n > 0 ? xcalloc(*n, sizeof **out) : NULL;
	*now_ms = 0;
	for (i = 0; i < PQntuples(res); i++) {
		struct cluster_node *nd = &(*out)[i];

		cpg_str(res, i, 0, nd->name, sizeof nd->name);
		nd->incarnation = cpg_i64(res, i, 1);
		nd->last_seen_ms = cpg_i64(res, i, 2);
		nd->started_ms = cpg_i64(res, i, 3);
		nd->running = (int)cpg_i64(res, i, 4);
		cpg_str(res, i, 5, nd->config_hash, sizeof nd->config_hash);
		cpg_str(res, i, 6, nd->role, sizeof nd->role);
		*now_ms = cpg_i64(res, i, 7);
	}
	PQclear(res);
	return 0;
}

/* Non-planner: post a request for the planner. */
int
cpg_forward(struct cluster *c, const void *req, size_t len,
	    int64_t timeout_ms, cluster_reply_cb *cb, void *arg,
	    struct err *err)
{
	static const char sql[] =
		"WITH m AS (INSERT INTO mailbox (from_node, request)"
		"  VALUES ($1, $2) RETURNING id),"
		" n AS (SELECT pg_notify('bf_mail', '') FROM m)"
		" SELECT (SELECT id FROM m), (SELECT count(*) FROM n)";
	const char *v[2] = { c->node, req };
	int lens[2] = { 0, (int)len }, fmts[2] = { 0, 1 };
	struct cpg_fwd *f;
	PGresult *res;

	if (len > CLUSTER_MAIL_MAX)
		return err_set(err, EXIT_BAD_INPUT, "request too large to"
			       " forward (%zu bytes)", len);
	if ((res = cpg_exec(c, sql, 2, v, lens, fmts, err)) == NULL)
		return -1;
	f = xcalloc(1, sizeof *f);
	f->id = cpg_i64(res, 0, 0);
	PQclear(res);
	f->timeout_ms = timeout_ms;
	f->deadline = cpg_mono_ms() + timeout_ms;
	f->cb = cb;
	f->arg = arg;
	f->next = c->fwd;
	c->fwd = f;
	cpg_fwd_arm(c);
	/* a quick planner answers while the INSERT's result is on its way */
	for (size_t i = 0; i < CPG_EARLY; i++)
		if (c->early[i] == f->id) {
			c->early[i] = 0;
			f->answered = true;
			cpg_kick(c);
		}
	return 0;
}

/* Planner: the oldest unanswered request not taken yet (one taken and
 * held, a forwarded wait, is not taken again). */
int
cpg_mail_take(struct cluster *c, struct cluster_mail **out, struct err *err)
{
	static const char sql[] =
		"SELECT id, from_node, request FROM mailbox"
		" WHERE response IS NULL AND id <> ALL ($1::bigint[])"
		" ORDER BY id LIMIT 1";
	struct cluster_mail *m;
	unsigned char *bytes;
	PGresult *res;
	size_t len = 0;
	struct pgsql_array ids = {0};
	const char *v[1];

	*out = NULL;
	if (cpg_need_planner(c, err) < 0)
		return -1;
	for (size_t i = 0; i < c->ntaken; i++)
		pgsql_array_int(&ids, c->taken[i]);
	v[0] = pgsql_array_end(&ids);
	res = cpg_q(c, sql, 1, v, err);
	pgsql_array_free(&ids);
	if (res == NULL)
		return -1;
	if (PQntuples(res) == 0) {
		PQclear(res);
		return 0;
	}
	m = xcalloc(1, sizeof *m);
	m->id = cpg_i64(res, 0, 0);
	c->taken = xreallocarray(c->taken, c->ntaken + 1, sizeof *c->taken);
	c->taken[c->ntaken++] = m->id;
	cpg_str(res, 0, 1, m->from, sizeof m->from);
	bytes = PQunescapeBytea((const unsigned char *)PQgetvalue(res, 0, 2),
				&len);
	PQclear(res);
	m->req = xmalloc(len + 1);
	if (bytes != NULL)
		memcpy(m->req, bytes, len);
	else
		len = 0;
	((char *)m->req)[len] = '\0';
	m->len = len;
	PQfreemem(bytes);
	*out = m;
	return 0;
}

/* Planner: answer request id. */
int
cpg_mail_answer(struct cluster *c, int64_t id, const void *resp, size_t len,
		struct err *err)
{
	static const char sql[] =
		"WITH u AS (UPDATE mailbox SET response = $2, answered_at = now()"
		"  WHERE id = $1 AND response IS NULL RETURNING id),"
		" n AS (SELECT pg_notify('bf_reply', id::text) FROM u)"
		" SELECT (SELECT count(*) FROM n)";
	char sid[32];
	const char *v[2] = { sid, resp != NULL ? resp : "" };
	int lens[2] = { 0, (int)len }, fmts[2] = { 0, 1 };
	PGresult *res;

	for (size_t i = 0; i < c->ntaken; i++)
		if (c->taken[i] == id) {
			c->taken[i] = c->taken[--c->ntaken];
			break;
		}
	if (len > CLUSTER_MAIL_MAX)
		return err_set(err, EXIT_WORK_FAILED, "answer too large to"
			       " forward (%zu bytes)", len);
	snprintf(sid, sizeof sid, "%" PRId64, id);
	if ((res = cpg_exec(c, sql, 2, v, lens, fmts, err)) == NULL)
		return -1;
	PQclear(res);
	return 0;
}

/* Free rows from claim or results. */
void
cpg_work_free(struct cluster_work *w, size_t n)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		for (k = 0; k < w[i].nkeys; k++)
			free(w[i].keys[k]);
		free(w[i].keys);
		free(w[i].error);
		free(w[i].result);
	}
	free(w);
}

/* Free a request taken from the mailbox. */
void
cpg_mail_free(struct cluster_mail *m)
{
	if (m != NULL)
		free(m->req);
	free(m);
}
