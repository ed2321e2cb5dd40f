/*
 * store_pg.c - the state store on PostgreSQL (struct store_ops, store.h;
 * store_pg.h), for several nodes sharing one database
 * (docs/several-hosts.md), in the backfilld-pg module.
 *
 * The same operations with the same meaning as the SQLite store
 * (store_sqlite.c), statement for statement, on one libpq connection used
 * synchronously from the loop thread, as the SQLite store is.  Statements
 * are prepared once per connection (PQprepare, names "s0", "s1"...),
 * parameters are bound as text, and every error carries the first line of
 * PQerrorMessage.  The schema is sql/pg/, versioned in schema_version and
 * migrated at open in one transaction under pg_advisory_xact_lock, so
 * that nodes starting together migrate once.
 *
 * Transactions.  begin/commit/rollback and defer/flush mean what they
 * mean on SQLite, with one difference: in PostgreSQL a statement that
 * fails inside a transaction aborts the whole transaction, where SQLite
 * fails only that statement.  So a begin() inside an open transaction
 * sets no savepoint here: it only counts a depth, and a rollback() of
 * such a group marks the whole transaction failed.  Every later
 * statement, a read too, fails ("the transaction failed earlier") and the
 * commit (or flush) fails with the first error, and rolls back: never a
 * silent "ROLLBACK" for a COMMIT.  store.c's policy asks no more than
 * that: a group is only ever rolled back after one of its writes failed,
 * and a failed write fails the loop turn, whose flush discards it all.
 * A savepoint per group would cost two statements and a subtransaction
 * per run start and end, and past 64 subtransactions in one transaction
 * every other session's snapshots overflow to pg_subtrans.

 * Fencing.  store_pg_fence(st, generation) with generation > 0 makes
 * every transaction this store commits (store_begin's, store_defer's,
 * and the one wrapped around a write made outside any) send, in the same
 * round trip as its COMMIT, just before it,
 *     SELECT 1 / count(*) FROM (SELECT 1 FROM lease WHERE id = 1
 *         AND generation = $fence FOR KEY SHARE) l
 * which fails (a division by zero) unless the lease row still holds the
 * store's generation: the transaction is then rolled back, the commit
 * fails with "deposed: another node holds the planner lease", and none
 * of its writes is ever applied.  A node taking the lease over locks the
 * row FOR UPDATE first (cluster_pg.c): a check that comes while it does
 * waits for it and then sees the new generation; a takeover that comes
 * after the check waits for the commit.  Either way a deposed planner's
 * late writes are refused, and a turn costs no round trip of its own for
 * the check.  The planner's own renewals (an UPDATE of no key column) do
 * not conflict with FOR KEY SHARE, so a renewal on the cluster's
 * connection never waits for the same daemon's commit.  The multi-node
 * code sets the generation on the planner's store when it
 * takes the lease and clears it when it gives it up.  The nodes and lease
 * tables are sql/pg/001_init.sql's; recover() and orphans() mean what
 * they mean on one host (every run left running is this daemon's): with
 * several nodes, only the planner may call them.
 *
 * Connections.  PQconnectdbParams with expand_dbname: the conninfo, plus
 * connect_timeout=10 and application_name backfilld unless it says
 * otherwise, plus the contents of password_file (trailing newline
 * stripped, read at each connect and never kept); PGPASSWORD, PGPASSFILE,
 * ~/.pgpass and the other environment variables work as in libpq.  A
 * connection found broken outside a transaction is made again (and its
 * statements prepared again) before the next operation; a read that
 * found it broken is sent once more, a write is not (it may have been
 * applied).  BEGIN is sent without waiting: a transaction first reads
 * what an idle connection has (the goodbye of a server process that
 * ended, pgst_idle_check) and connects again if it was dropped; one that
 * breaks after that fails, as any transaction whose connection breaks.
 *
 * SQLite's own matters: checkpoint_on does nothing (the server
 * checkpoints); probe_write commits a transaction that extends a table
 * of the database by min_free bytes (pgst_probe_write), reconnecting
 * first if need be; stats reports runs_kept (counted at open and again
 * when the node becomes planner, store_pg_fence, and after a
 * transaction that did not commit, then kept by its changes: only the
 * planner writes runs; a node of several hosts that is not the planner
 * has them counted), pg_database_size() as db_bytes and 0 as wal_bytes
 * and loop_checkpoints.  The count of a node that is not the planner and
 * the size are read on a thread and a connection of their own, never
 * waited for on the loop past a bound (store_pg_stats.c states its
 * rules).
 */
#include "store_pg_int.h"

/* ---- open, migrate, close ---------------------------------------------- */

/* The version of the schema (0: none yet); within the migration's
 * transaction. */
static int
pgst_schema_version(struct pgst *p, int *version, struct err *err)
{
	PGresult *r;

	*version = 0;
	r = PQexec(p->pg, "SELECT to_regclass('schema_version') IS NOT NULL");
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		PQclear(r);
		return pgst_fail(p, err, "reading the schema version");
	}
	if (!col_bool(r, 0, 0)) {
		PQclear(r);
		return pgst_simple(p, "CREATE TABLE schema_version (version"
				   " integer PRIMARY KEY, name text NOT NULL,"
				   " applied_at timestamptz NOT NULL DEFAULT"
				   " now())", err);
	}
	PQclear(r);
	r = PQexec(p->pg, "SELECT COALESCE(MAX(version), 0) FROM"
		   " schema_version");
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		PQclear(r);
		return pgst_fail(p, err, "reading the schema version");
	}
	*version = (int)col_int(r, 0, 0);
	PQclear(r);
	return 0;
}

/* Apply the migrations above schema_version, once across nodes. */
static int
pgst_migrate(struct pgst *p, struct err *err)
{
	const char *vals[2];
	char num[16];
	int version, rc;
	int64_t fence;
	PGresult *r;

	if (pgst_simple(p, "BEGIN", err) < 0)
		return -1;
	p->tx = true;
	if (pgst_simple(p, "SELECT pg_advisory_xact_lock(" PGST_MIGRATE_LOCK
			")", err) < 0 ||
	    pgst_schema_version(p, &version, err) < 0)
		goto fail;
	if (version > sql_pg_migrations_count) {
		err_set(err, EXIT_BAD_INPUT, "state store: schema version %d"
			" is newer than"
			" this backfilld knows (%d): run the backfilld that"
			" wrote it", version, sql_pg_migrations_count);
		goto fail;
	}
	for (int i = version; i < sql_pg_migrations_count; i++) {
		if (pgst_simple(p, sql_pg_migrations[i].sql, err) < 0) {
			err_prefix(err, "applying pg/%s",
				   sql_pg_migrations[i].name);
			goto fail;
		}
		snprintf(num, sizeof num, "%d", sql_pg_migrations[i].version);
		vals[0] = num;
		vals[1] = sql_pg_migrations[i].name;
		r = PQexecParams(p->pg, "INSERT INTO schema_version (version,"
				 " name) VALUES ($1, $2)", 2, NULL, vals, NULL,
				 NULL, 0);
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			PQclear(r);
			pgst_fail(p, err, "recording the schema version");
			goto fail;
		}
		PQclear(r);
	}
	/* committed without the planner's fence: the schema is no
	 * planner's write, and its check is a prepared statement, which a
	 * first connection prepares only after this (pgst_open_db); sent
	 * unprepared it would fail as a lost connection, on this and on
	 * every later first connection, and the node would refuse every
	 * request while the lease is its own */
	fence = p->fence;
	p->fence = 0;
	p->aborted = false;
	rc = pgst_tx_commit(p, err);
	p->fence = fence;
	return rc;
fail:
	pgst_tx_rollback(p);
	return -1;
}

/* Close the connection and free the store. */
static void
pgst_close(struct store *st)
{
	struct pgst *p = pgst_of(st);

	if (p == NULL)
		return;
	pgst_stats_close(p);
	pgst_batch_free(p);
	pgst_after_end(p, false);
	free(p->after);
	if (p->pg != NULL)
		pgst_sync(p);
	if (p->pg != NULL)
		PQfinish(p->pg);
	free(p->conninfo);
	free(p->password_file);
	free(p);
}

/* Connect, and the first time migrate and count the runs kept; then
 * prepare the statements. */
int
pgst_open_db(struct pgst *p, struct err *err)
{
	PGresult *r;

	if (pgst_connect(p, err) < 0 ||
	    (!p->opened && pgst_migrate(p, err) < 0) ||
	    pgst_prepare(p, err) < 0)
		return -1;
	if (!p->opened) {
		r = pgst_exec(p, P_RUNS_COUNT, NULL, "counting runs", err);
		if (r == NULL)
			return -1;
		p->runs_kept = col_int(r, 0, 0);
		PQclear(r);
		p->opened = true;
	}
	return 0;
}

/*
 * Open.  A server that cannot be reached (no answer, or not taking
 * connections yet: PQping) is not an error: the store opens unconnected, every operation fails as on a
 * connection lost (the failure policy, store.h), and the first one that
 * connects migrates and counts (pgst_ready): a node started, or
 * restarted in place, while the database is down stays up and waits for
 * it (docs/several-hosts.md).  Anything else (a password file that
 * cannot be read, a schema this build does not know, a migration that
 * fails) is a start-up error as ever.
 */
int
store_pg_open(const char *conninfo, const char *password_file,
	      struct store **out, struct err *err)
{
	struct pgst *p = xcalloc(1, sizeof *p);

	p->base.ops = &store_pg_ops;
	p->conninfo = xstrdup(conninfo);
	p->password_file = password_file ? xstrdup(password_file) : NULL;
	if (pgst_open_db(p, err) < 0) {
		/* not reached: no server answers (PQPING_NO_RESPONSE), or
		 * one that does not take connections yet (starting, shutting
		 * down); a server that answers and refuses this node (its
		 * password, its database) is a start-up error */
		PGPing ping = PQping(p->conninfo);
		/* or reached, and the connection lost before the schema was
		 * checked (the server shutting down, a session terminated) */
		bool lost = p->connected && p->pg != NULL &&
			    PQstatus(p->pg) == CONNECTION_BAD;

		if (p->opened || p->pg == NULL ||
		    PQstatus(p->pg) == CONNECTION_OK ||
		    (!lost && ping != PQPING_NO_RESPONSE &&
		     ping != PQPING_REJECT)) {
			pgst_close(&p->base);
			return -1;
		}
		PQfinish(p->pg); /* not reached: connect again later */
		p->pg = NULL;
	}
	*out = &p->base;
	return 0;
}

void
store_pg_fence(struct store *st, int64_t generation)
{
	struct pgst *p = pgst_of(st);
	struct store_stats ss;

	/* a new planner: the runs kept are the store's, every earlier
	 * planner's too, not the ones this node counted at its start plus
	 * its own (counted again outside a transaction, pgst_stats) */
	p->shared = true;
	if (generation > 0 && generation != p->fence)
		p->recount = true;
	p->fence = generation > 0 ? generation : 0;
	/* not the planner: its runs kept are counted off the loop; a
	 * reading asked now (not waited for) makes the thread's connection,
	 * so that the first status finds it made (store_pg_stats.c) */
	if (p->fence == 0)
		pgst_stats_figures(p, true, 0, &ss);
}

/* The planner's open, fenced transaction, or -1 with err. */
static int
pgst_planner_tx(struct pgst *p, const char *what, struct err *err)
{
	if (p->tx && p->fence > 0)
		return 0;
	return err_set(err, EXIT_INTERNAL, "state store: %s: %s", what,
		       p->fence > 0 ? "no transaction is open" :
		       "this node is not the planner");
}

int
store_pg_offer(struct store *st, const struct cluster_offer *o, size_t n,
	       struct err *err)
{
	struct pgst *p = pgst_of(st);

	if (pgst_planner_tx(p, "offering runs", err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct pgsql_buf keys = { 0 };
		struct pgst_args a = { 0 };
		int rc;

		/* the keys as one text, split again by the statement */
		pgsql_buf_join(&keys, o[i].keys, o[i].nkeys, '\x1f');
		arg_int(&a, o[i].id);
		arg_int(&a, o[i].request);
		arg_text(&a, o[i].job);
		arg_text(&a, keys.p);
		arg_int(&a, o[i].attempt);
		arg_int(&a, p->fence);
		rc = pgst_batch_add(p, B_OFFER, 0, NULL, NULL, &a, err);
		free(keys.p);
		if (rc < 0)
			return -1;
	}
	return 0;
}

int
store_pg_forget(struct store *st, const int64_t *ids, size_t n,
		struct err *err)
{
	struct pgst *p = pgst_of(st);

	if (pgst_planner_tx(p, "deleting recorded results", err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct pgst_args a = { 0 };

		arg_int(&a, ids[i]);
		if (pgst_batch_add(p, B_FORGET, ids[i], NULL, NULL, &a,
				   err) < 0)
			return -1;
	}
	return 0;
}

/* The server checkpoints: nothing to do on the loop. */
static void
pgst_checkpoint_on(struct store *st, struct uv_loop_s *loop)
{
	(void)st;
	(void)loop;
}

/* ---- requests, the manifest, runs ------------------------------------- */

/* The next id reserved for a table (stmt: P_ITEM_IDS, P_RUN_IDS). */
static int
pgst_next_id(struct pgst *p, struct pgst_ids *r, enum pgst_stmt stmt,
	     int64_t *id, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *res;

	if (r->pos >= r->n) {
		r->block = r->block > 0 ? r->block : 1;
		arg_int(&a, r->block);
		res = pgst_exec(p, stmt, &a, "reserving ids", err);
		if (res == NULL)
			return -1;
		r->n = PQntuples(res) < PGST_IDS_MAX ? PQntuples(res) :
		       PGST_IDS_MAX;
		for (int i = 0; i < r->n; i++)
			r->id[i] = col_int(res, i, 0);
		PQclear(res);
		r->pos = 0;
		if (r->block < PGST_IDS_MAX)
			r->block *= 2;
		if (r->n == 0)
			return err_set(err, EXIT_INTERNAL, "state store:"
				       " reserving ids: none given");
	}
	*id = r->id[r->pos++];
	return 0;
}

/* Read the id a RETURNING id statement gave. */
static int
pgst_returned_id(PGresult *r, int64_t *id)
{
	if (r == NULL)
		return -1;
	*id = PQntuples(r) > 0 ? col_int(r, 0, 0) : 0;
	PQclear(r);
	return 0;
}

/* Add a request. */
static int
pgst_request_add(struct store *st, const struct store_request *rq,
		 int64_t *id, struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };

	arg_text(&a, rq->job);
	arg_text(&a, rq->kind);
	arg_text(&a, rq->reason);
	arg_text(&a, rq->from_key);
	arg_text(&a, rq->to_key);
	arg_text(&a, rq->reprocess ? rq->reprocess : "all");
	arg_bool(&a, rq->reverse);
	arg_bool(&a, rq->no_downstream);
	arg_int(&a, rq->created_at);
	if (rq->concurrency > 0)
		arg_int(&a, rq->concurrency);
	else
		arg_text(&a, NULL);
	arg_bool(&a, rq->fail_fast);
	arg_text(&a, rq->downstream);
	if (rq->budget_ms > 0)
		arg_int(&a, rq->budget_ms);
	else
		arg_text(&a, NULL);
	arg_bool(&a, rq->no_cutoff);
	return pgst_returned_id(pgst_write(p, P_REQUEST_ADD, &a,
					   "adding a request", err), id);
}

/* Mark a request finished. */
static int
pgst_request_finish(struct store *st, int64_t id, int64_t at, bool cancelled,
		    struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, id);
	arg_int(&a, at);
	arg_bool(&a, cancelled);
	return pgst_write_done(pgst_of(st), P_REQUEST_FINISH, &a,
			       "finishing a request", err);
}

/* Add a manifest row. */
static int
pgst_item_add(struct store *st, const struct store_item *it, int64_t *id,
	      struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };

	arg_int(&a, it->request_id);
	arg_text(&a, it->job);
	arg_text(&a, it->key);
	arg_int(&a, it->seq);
	arg_bool(&a, it->downstream);
	arg_text(&a, mstate_name(it->state));
	arg_int(&a, it->at);
	if (p->tx) {
		if (pgst_next_id(p, &p->item_ids, P_ITEM_IDS, id, err) < 0)
			return -1;
		arg_int(&a, *id);
		return pgst_batch_add(p, B_ITEM_ADD, 0, NULL, NULL, &a, err);
	}
	return pgst_returned_id(pgst_write(p, P_ITEM_ADD, &a,
					   "adding to the manifest", err), id);
}

/* Set a manifest row's state and what goes with it. */
static int
pgst_item_set(struct store *st, int64_t id, enum mstate state, int attempts,
	      int64_t not_before, const char *error, const char *blocked_on,
	      int changed, int64_t at, struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };

	arg_int(&a, id);
	arg_text(&a, mstate_name(state));
	arg_int(&a, attempts);
	arg_int(&a, not_before);
	arg_text(&a, error);
	arg_text(&a, blocked_on);
	arg_int(&a, at);
	if (changed >= 0)
		arg_bool(&a, changed > 0);
	else
		arg_text(&a, NULL);
	if (p->tx)
		return pgst_batch_add(p, B_ITEM_SET, id, NULL, NULL, &a, err);
	return pgst_write_done(p, P_ITEM_SET, &a, "updating the manifest",
			       err);
}

/* Record a run that starts. */
static int
pgst_run_start(struct store *st, int64_t manifest_id, int64_t request_id,
	       const char *job, const char *key, int attempt,
	       int64_t started_at, const char *code_version,
	       const char *config_hash, int64_t shared_run, int64_t *run_id,
	       struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };

	arg_int(&a, manifest_id);
	arg_int(&a, request_id);
	arg_text(&a, job);
	arg_text(&a, key);
	arg_int(&a, attempt);
	arg_int(&a, started_at);
	arg_text(&a, code_version);
	arg_text(&a, config_hash);
	if (shared_run > 0)
		arg_int(&a, shared_run);
	else
		arg_text(&a, NULL);
	if (p->tx) {
		if (pgst_next_id(p, &p->run_ids, P_RUN_IDS, run_id, err) < 0)
			return -1;
		arg_int(&a, *run_id);
		if (pgst_batch_add(p, B_RUN_START, 0, NULL, NULL, &a, err) < 0)
			return -1;
	} else if (pgst_returned_id(pgst_write(p, P_RUN_START, &a,
					       "recording a run", err),
				    run_id) < 0) {
		return -1;
	}
	p->runs_kept++;
	return 0;
}

/* Record how a run ended. */
static int
pgst_run_finish(struct store *st, int64_t run_id, enum mstate state,
		int64_t finished_at, const char *error, int64_t rows_changed,
		struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };
	char *node = pgst_node_take(p, run_id);
	int rc;

	arg_int(&a, run_id);
	arg_text(&a, mstate_name(state));
	arg_int(&a, finished_at);
	arg_text(&a, error);
	if (rows_changed >= 0)
		arg_int(&a, rows_changed);
	else
		arg_text(&a, NULL);
	arg_text(&a, node); /* NULL: the row's node stays */
	if (p->tx)
		rc = pgst_batch_add(p, B_RUN_FINISH, run_id, NULL, NULL, &a,
				    err);
	else
		rc = pgst_write_done(p, P_RUN_FINISH, &a, "finishing a run",
				     err);
	free(node);
	return rc;
}

/* Record a successful build of a partition. */
static int
pgst_partition_built(struct store *st, const char *job, const char *key,
		     int64_t built_at, int64_t inputs_at, int64_t run_id,
		     const char *code_version, struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };

	arg_text(&a, job);
	arg_text(&a, key);
	arg_int(&a, built_at);
	if (inputs_at >= 0)
		arg_int(&a, inputs_at);
	else
		arg_text(&a, NULL);
	arg_int(&a, run_id);
	arg_text(&a, code_version);
	if (p->tx)
		return pgst_batch_add(p, B_BUILT, 0, job, key, &a, err);
	return pgst_write_done(p, P_PART_BUILT, &a, "recording a build", err);
}

/* When (job, key) last landed: 0, or 1 when never. */
static int
pgst_partition_get(struct store *st, const char *job, const char *key,
		   int64_t *built_at, int64_t *inputs_at, char *code_version,
		   size_t cvsz, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;
	int rc = 1;

	arg_text(&a, job);
	arg_text(&a, key);
	r = pgst_exec(pgst_of(st), P_PART_GET, &a, "reading a build", err);
	if (r == NULL)
		return -1;
	if (PQntuples(r) > 0) {
		*built_at = col_int(r, 0, 0);
		*inputs_at = col_null(r, 0, 1) ? -1 : col_int(r, 0, 1);
		if (code_version != NULL)
			snprintf(code_version, cvsz, "%s",
				 col_null(r, 0, 2) ? "" : col_text(r, 0, 2));
		rc = 0;
	}
	PQclear(r);
	return rc;
}

/* recover's transaction. */
static int
pgst_recover_tx(struct store *st, struct pgst *p, const struct pgst_args *a,
		int *count, struct err *err)
{
	PGresult *r;

	if (pgst_begin(st, err) < 0)
		return -1;
	r = pgst_exec(p, P_RECOVER_RUNS, a, "recovering runs", err);
	if (r == NULL)
		goto fail;
	*count = (int)pgst_changes(r);
	PQclear(r);
	r = pgst_exec(p, P_RECOVER_MANIFEST, a, "recovering the manifest",
		      err);
	if (r == NULL)
		goto fail;
	PQclear(r);
	return pgst_commit(st, err);
fail:
	pgst_rollback(st);
	return -1;
}

/* Runs left running by a crash: failed, their manifest rows queued; but
 * those in keep, which a new planner adopts. */
static int
pgst_recover(struct store *st, int64_t at, const int64_t *keep, size_t nkeep,
	     int *count, struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };
	char *ids = xcalloc(nkeep + 1, 24), *w = ids;
	int rc;

	*w++ = '{';
	for (size_t i = 0; i < nkeep; i++)
		w += sprintf(w, "%s%" PRId64, i > 0 ? "," : "", keep[i]);
	*w++ = '}';
	arg_int(&a, at);
	arg_text(&a, ids);
	rc = pgst_recover_tx(st, p, &a, count, err);
	free(ids);
	return rc;
}

/* Call cb for each row of a manifest query (P_LOAD_OPEN, P_LOAD_ONE). */
static int
pgst_load_rows(struct pgst *p, enum pgst_stmt id, const struct pgst_args *a,
	       store_open_cb cb, void *data, struct err *err)
{
	struct store_open_row row;
	PGresult *r;

	r = pgst_exec(p, id, a, "loading the manifest", err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++) {
		memset(&row, 0, sizeof row);
		row.id = col_int(r, i, 0);
		row.request_id = col_int(r, i, 1);
		row.job = col_text(r, i, 2);
		row.key = col_text(r, i, 3);
		row.seq = (int)col_int(r, i, 4);
		row.downstream = col_bool(r, i, 5);
		if (mstate_parse(col_text(r, i, 6), &row.state) < 0)
			row.state = MS_QUEUED;
		row.attempts = (int)col_int(r, i, 7);
		row.not_before = col_int(r, i, 8);
		row.blocked_on = col_text(r, i, 9);
		row.rq_job = col_text(r, i, 10);
		row.rq_kind = col_text(r, i, 11);
		row.rq_reverse = col_bool(r, i, 12);
		row.rq_created_at = col_int(r, i, 13);
		row.rq_concurrency = (int)col_int(r, i, 14);
		row.rq_fail_fast = col_bool(r, i, 15);
		row.rq_budget_ms = col_int(r, i, 16);
		row.rq_spent_ms = col_int(r, i, 17);
		row.rq_over_budget = col_bool(r, i, 18);
		row.rq_no_cutoff = col_bool(r, i, 19);
		row.changed = col_null(r, i, 20) ? -1 : col_bool(r, i, 20);
		if (cb(&row, data, err) < 0) {
			PQclear(r);
			return -1;
		}
	}
	PQclear(r);
	return 0;
}

/* Every manifest row of unfinished requests. */
static int
pgst_load_open(struct store *st, store_open_cb cb, void *data,
	       struct err *err)
{
	return pgst_load_rows(pgst_of(st), P_LOAD_OPEN, NULL, cb, data, err);
}

/* Every manifest row of one request. */
static int
pgst_load_request(struct store *st, int64_t request_id, store_open_cb cb,
		  void *data, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, request_id);
	return pgst_load_rows(pgst_of(st), P_LOAD_ONE, &a, cb, data, err);
}

/* Mark a finished request open again. */
static int
pgst_request_reopen(struct store *st, int64_t id, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, id);
	return pgst_write_done(pgst_of(st), P_REQUEST_REOPEN, &a,
			       "reopening a request", err);
}

/* Last finished run's state of each partition of job in a key range. */
static int
pgst_last_states(struct store *st, const char *job, const char *first_key,
		 const char *last_key, store_last_cb cb, void *data,
		 struct err *err)
{
	struct pgst_args a = { 0 };
	enum mstate state;
	PGresult *r;

	arg_text(&a, job);
	arg_text(&a, first_key);
	arg_text(&a, last_key);
	r = pgst_exec(pgst_of(st), P_LAST_STATES, &a, "reading the last runs",
		      err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		if (mstate_parse(col_text(r, i, 1), &state) == 0)
			cb(col_text(r, i, 0), state, data);
	PQclear(r);
	return 0;
}

/* Call a key callback for each row's first column. */
static int
pgst_key_rows(PGresult *r, store_key_cb cb, void *data, struct err *err)
{
	int rc = 0;

	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r) && rc == 0; i++)
		if (cb(col_text(r, i, 0), data, err) < 0)
			rc = -1;
	PQclear(r);
	return rc;
}

/* Keys of job whose latest successful build used code_version. */
static int
pgst_keys_built_by(struct store *st, const char *job, const char *code_version,
		   store_key_cb cb, void *data, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_text(&a, job);
	arg_text(&a, code_version);
	return pgst_key_rows(pgst_exec(pgst_of(st), P_BUILT_BY, &a,
				       "reading builds", err), cb, data, err);
}

/* Keys of job in [first_key, last_key] built by another code version. */
static int
pgst_keys_changed(struct store *st, const char *job, const char *code_version,
		  const char *first_key, const char *last_key, store_key_cb cb,
		  void *data, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_text(&a, job);
	arg_text(&a, code_version);
	arg_text(&a, first_key);
	arg_text(&a, last_key);
	return pgst_key_rows(pgst_exec(pgst_of(st), P_KEYS_CHANGED, &a,
				       "reading builds", err), cb, data, err);
}

/* Every built partition of job. */
static int
pgst_partitions_of(struct store *st, const char *job, store_built_cb cb,
		   void *data, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;
	int rc = 0;

	arg_text(&a, job);
	r = pgst_exec(pgst_of(st), P_PARTS_OF, &a, "reading builds", err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r) && rc == 0; i++) {
		bool has = !col_null(r, i, 2);

		if (cb(col_text(r, i, 0), col_int(r, i, 1), has,
		       has ? col_int(r, i, 2) : 0, data, err) < 0)
			rc = -1;
	}
	PQclear(r);
	return rc;
}

/* A run finished: it becomes its partition's newest; cb learns the state
 * of the one it replaces (MS_NONE: none): at once outside a
 * transaction, at its commit inside one (store.h). */
static int
pgst_partition_finished(struct store *st, const char *job, const char *key,
			int64_t run_id, enum mstate state, store_prev_cb cb,
			void *data, struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };
	enum mstate prev = MS_NONE;
	PGresult *r;

	arg_text(&a, job);
	arg_text(&a, key);
	arg_int(&a, run_id);
	arg_text(&a, mstate_name(state));
	if (p->tx) {
		if (pgst_batch_add(p, B_LATEST, 0, job, key, &a, err) < 0)
			return -1;
		if (p->nafter == p->cafter) {
			p->cafter = p->cafter ? 2 * p->cafter : 64;
			p->after = xreallocarray(p->after, p->cafter,
						 sizeof *p->after);
		}
		p->after[p->nafter++] = (struct pgst_after){ cb, data,
			xstrdup(job), MS_NONE, state };
		return 0;
	}
	/* one statement reads the one it replaces and writes it */
	r = pgst_write(p, P_LATEST_PUT, &a, "recording a partition's last run",
		       err);
	if (r == NULL)
		return -1;
	if (PQntuples(r) > 0 && mstate_parse(col_text(r, 0, 0), &prev) < 0)
		prev = MS_NONE;
	PQclear(r);
	if (cb != NULL)
		cb(job, prev, state, data);
	return 0;
}

/* Partitions per job by the state of their newest finished run. */
static int
pgst_latest_counts(struct store *st, store_count_cb cb, void *data,
		   struct err *err)
{
	enum mstate state;
	PGresult *r;

	r = pgst_exec(pgst_of(st), P_LATEST_COUNTS, NULL,
		      "counting partitions", err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		if (mstate_parse(col_text(r, i, 1), &state) == 0)
			cb(col_text(r, i, 0), state, col_int(r, i, 2), data);
	PQclear(r);
	return 0;
}

/* Record a command run's process group. */
static int
pgst_run_proc(struct store *st, int64_t run_id, int64_t pgid,
	      int64_t proc_start, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, run_id);
	arg_int(&a, pgid);
	arg_int(&a, proc_start);
	return pgst_write_done(pgst_of(st), P_RUN_PROC, &a,
			       "recording a run's process", err);
}

/* A run of the request that last finished job's partition key. */
static int
pgst_run_lookup(struct store *st, const char *job, const char *key,
		int attempt, struct store_run_info *out, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;
	int rc = 1;

	arg_text(&a, job);
	arg_text(&a, key);
	arg_int(&a, attempt);
	r = pgst_exec(pgst_of(st), P_RUN_LOOKUP, &a, "reading a run", err);
	if (r == NULL)
		return -1;
	if (PQntuples(r) > 0) {
		out->id = strtoll(col_text(r, 0, 0), NULL, 10);
		out->request_id = strtoll(col_text(r, 0, 1), NULL, 10);
		out->attempt = atoi(col_text(r, 0, 2));
		if (mstate_parse(col_text(r, 0, 3), &out->state) < 0)
			out->state = MS_FAILED;
		snprintf(out->error, sizeof out->error, "%s",
			 col_text(r, 0, 4) ? col_text(r, 0, 4) : "");
		snprintf(out->node, sizeof out->node, "%s",
			 col_text(r, 0, 5) ? col_text(r, 0, 5) : "");
		rc = 0;
	}
	PQclear(r);
	return rc;
}

/* Run run_id runs on node `node` (the planner's own runs). */
static int
pgst_run_node(struct store *st, int64_t run_id, const char *node,
	      struct err *err)
{
	struct pgst_args a = { 0 };

	if (pgst_of(st)->tx)
		return pgst_node_keep(pgst_of(st), run_id, node, err);
	arg_int(&a, run_id);
	arg_text(&a, node);
	return pgst_write_done(pgst_of(st), P_RUN_NODE, &a,
			       "recording a run's node", err);
}

/* Run run_id is a mark by `by`. */
static int
pgst_run_mark(struct store *st, int64_t run_id, const char *by,
	      struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, run_id);
	arg_text(&a, by);
	return pgst_write_done(pgst_of(st), P_RUN_MARK, &a,
			       "recording a mark", err);
}

/* The partitions of job in a key range whose newest run is a mark. */
static int
pgst_marked_keys(struct store *st, const char *job, const char *first_key,
		 const char *last_key, store_last_cb cb, void *data,
		 struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;

	arg_text(&a, job);
	arg_text(&a, first_key);
	arg_text(&a, last_key);
	r = pgst_exec(pgst_of(st), P_MARKED_KEYS, &a, "reading the marks",
		      err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		cb(col_text(r, i, 0), MS_SUCCEEDED, data);
	PQclear(r);
	return 0;
}

/* Runs left running with a process group. */
static int
pgst_orphans(struct store *st, store_orphan_cb cb, void *data,
	     struct err *err)
{
	PGresult *r;

	r = pgst_exec(pgst_of(st), P_ORPHANS, NULL,
		      "reading runs left running", err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		cb(col_int(r, i, 0), col_text(r, i, 1), col_text(r, i, 2),
		   col_int(r, i, 3), col_int(r, i, 4), data);
	PQclear(r);
	return 0;
}

/* Runs left running, for a new planner to adopt. */
static int
pgst_running_runs(struct store *st, store_running_cb cb, void *data,
		  struct err *err)
{
	struct store_running_row row;
	PGresult *r;

	r = pgst_exec(pgst_of(st), P_RUNNING, NULL, "reading runs left running",
		      err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++) {
		row.id = col_int(r, i, 0);
		row.manifest_id = col_int(r, i, 1);
		row.request_id = col_int(r, i, 2);
		row.job = col_text(r, i, 3);
		row.key = col_text(r, i, 4);
		row.attempt = (int)col_int(r, i, 5);
		row.started_at = col_int(r, i, 6);
		cb(&row, data);
	}
	PQclear(r);
	return 0;
}

/* Forget a run that never started. */
static int
pgst_run_unstart(struct store *st, int64_t run_id, struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };
	PGresult *r;

	arg_int(&a, run_id);
	r = pgst_write(p, P_RUN_UNSTART, &a, "forgetting a run that never"
		       " started", err);
	if (r == NULL)
		return -1;
	p->runs_kept -= pgst_changes(r);
	PQclear(r);
	return 0;
}

const struct store_ops store_pg_ops = {
	.name = "postgres",
	.open = NULL, /* store_pg_open, with its password_file */
	.close = pgst_close,
	.checkpoint_on = pgst_checkpoint_on,
	.begin = pgst_begin,
	.commit = pgst_commit,
	.rollback = pgst_rollback,
	.defer = pgst_defer,
	.flush = pgst_flush,
	.request_add = pgst_request_add,
	.request_finish = pgst_request_finish,
	.item_add = pgst_item_add,
	.item_set = pgst_item_set,
	.run_start = pgst_run_start,
	.run_finish = pgst_run_finish,
	.partition_built = pgst_partition_built,
	.partition_get = pgst_partition_get,
	.newest_build = pgst_newest_build,
	.recover = pgst_recover,
	.load_open = pgst_load_open,
	.load_request = pgst_load_request,
	.request_controls = pgst_request_controls,
	.request_reopen = pgst_request_reopen,
	.last_states = pgst_last_states,
	.keys_built_by = pgst_keys_built_by,
	.keys_changed = pgst_keys_changed,
	.partitions_of = pgst_partitions_of,
	.runs_open = pgst_runs_open,
	.runs_page = pgst_runs_page,
	.runs_max_id = store_runs_newest,
	.runs_close = pgst_runs_close,
	.partition_finished = pgst_partition_finished,
	.latest_counts = pgst_latest_counts,
	.run_proc = pgst_run_proc,
	.run_mark = pgst_run_mark,
	.run_node = pgst_run_node,
	.run_lookup = pgst_run_lookup,
	.marked_keys = pgst_marked_keys,
	.orphans = pgst_orphans,
	.running_runs = pgst_running_runs,
	.run_unstart = pgst_run_unstart,
	.probe_write = pgst_probe_write,
	.stats = pgst_stats,
	.prune_step = pgst_prune_step,
	.job_get = pgst_job_get,
	.job_put = pgst_job_put,
	.job_calendar = pgst_job_calendar,
	.job_calendar_put = pgst_job_calendar_put,
	.trend_values = pgst_trend_values,
	.trend_put = pgst_trend_put,
	.trend_trim = pgst_trend_trim,
	.trend_series = pgst_trend_series,
	.shard_put = pgst_shard_put,
	.shards_of = pgst_shards_of,
	.shards_partial = pgst_shards_partial,
	.request_problems = pgst_request_problems,
	.audit_add = pgst_audit_add,
	.audit_of = pgst_audit_of,
	.request_counts = pgst_request_counts,
	.durations = pgst_durations,
	.recent_requests = pgst_recent_requests,
	.request_get = pgst_request_get,
	.request_budget = pgst_request_budget,
	.over_budget = pgst_over_budget,
	.discard = pgst_discard,
};
