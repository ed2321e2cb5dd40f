/*
 * store_pg_tx.c - the PostgreSQL state store's connection, its pipeline,
 * its batched writes and its transactions (store_pg_int.h; the rules are
 * at the top of store_pg.c): connecting and preparing, statements sent
 * with or without waiting, the rows kept per kind until the next read or
 * COMMIT, begin/commit/rollback and defer/flush with the fence's check.
 */
#include "store_pg_int.h"

/* The first line of the connection's last message, without "ERROR:  ". */
static void
pgst_pqmsg(PGconn *pg, char *buf, size_t len)
{
	snprintf(buf, len, "%s", pg_conn_error(pg));
	buf[strcspn(buf, "\r\n")] = '\0';
}

/* Fill err from the connection's last error, with context; a failure
 * inside a transaction aborts it (see the top of store_pg.c). */
int
pgst_fail(struct pgst *p, struct err *err, const char *what)
{
	char msg[512];

	pgst_pqmsg(p->pg, msg, sizeof msg);
	if (p->tx && !p->aborted) {
		p->aborted = true;
		snprintf(p->abort_msg, sizeof p->abort_msg, "%s: %s", what, msg);
	}
	return err_set(err, EXIT_INTERNAL, "state store: %s: %s", what, msg);
}

/* Notices (a migration's "already exists, skipping") are not ours to
 * print. */
static void
pgst_notice(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* Connect (or connect again) to the server. */
int
pgst_connect(struct pgst *p, struct err *err)
{
	char msg[512], where[256];
	char *password = NULL;
	PGresult *r;

	if (p->pg != NULL) {
		PQfinish(p->pg);
		p->pg = NULL;
	}
	p->prepared = false;
	p->piped = false;
	p->npiped = 0;
	p->connected = false;
	if (p->password_file != NULL &&
	    pg_conn_password("state store", p->password_file, EXIT_BAD_INPUT,
			     false, &password, err) < 0)
		return -1;
	p->pg = pg_conn_connect(p->conninfo, password);
	if (p->pg == NULL)
		return err_set(err, EXIT_INTERNAL, "out of memory");
	if (PQstatus(p->pg) != CONNECTION_OK) {
		pg_conn_where(p->pg, where, sizeof where);
		pgst_pqmsg(p->pg, msg, sizeof msg);
		return err_set(err, EXIT_WORK_FAILED, "state store: cannot"
			       " connect to %s: %s", where, msg);
	}
	p->connected = true;
	PQsetNoticeProcessor(p->pg, pgst_notice, NULL);
	/* A transaction lasts one loop callback.  One left open (the
	 * process stopped by SIGSTOP or a frozen VM mid-turn) would hold
	 * the fence's lock on the lease row and every row it wrote, and so
	 * stall the other nodes' lease and heartbeats: the server ends such
	 * a session after 2 s idle in a transaction (the node finds its
	 * transaction failed when it wakes, and the store-failure rule
	 * applies). */
	r = PQexec(p->pg, "SET idle_in_transaction_session_timeout = '2s'");
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		PQclear(r);
		return pgst_fail(p, err, "setting idle_in_transaction_session_timeout");
	}
	PQclear(r);
	return 0;
}

/* Prepare every statement on the connection. */
int
pgst_prepare(struct pgst *p, struct err *err)
{
	char name[16];
	PGresult *r;

	for (int i = 0; i < P_COUNT; i++) {
		snprintf(name, sizeof name, "s%d", i);
		r = PQprepare(p->pg, name, pgst_sql[i], 0, NULL);
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			PQclear(r);
			return pgst_fail(p, err, "preparing statements");
		}
		PQclear(r);
	}
	p->prepared = true;
	return 0;
}

/* Make the connection usable: outside a transaction, a broken one is
 * connected again (and its statements prepared again); a store opened
 * while the server could not be reached is migrated and counted at its
 * first connection (pgst_open_db). */
int
pgst_ready(struct pgst *p, struct err *err)
{
	if (p->pg != NULL && PQstatus(p->pg) == CONNECTION_OK && p->prepared)
		return 0;
	if (p->tx) {
		if (!p->aborted) {
			p->aborted = true;
			snprintf(p->abort_msg, sizeof p->abort_msg,
				 "the connection was lost");
		}
		return err_set(err, EXIT_INTERNAL, "state store: the connection"
			       " was lost during a transaction");
	}
	return pgst_open_db(p, err);
}

/*
 * Pipelining.  Inside a transaction, a write whose answer nobody reads
 * (pgst_write_done) is sent without waiting (libpq pipeline mode); the
 * answers are read by pgst_sync before the next statement that needs one,
 * and before COMMIT or ROLLBACK, so that a loop turn's writes cost one
 * round trip per read, not one per write.  A write that failed is found
 * there: the transaction is marked aborted, and its commit (the turn's
 * flush) fails with it, as store.c's STORE-1 wants of a failed write.  At
 * most PGST_PIPE_MAX statements wait at once: their answers stay well
 * within the socket's buffers (a blocking connection that sends while the
 * server waits for its answers to be read would deadlock).  A statement
 * sent with an answer function has its rows handed to it there.
 */

static void pgst_batch_send(struct pgst *p);
static void pgst_fence_answer(struct pgst *p, PGresult *r, size_t arg);

/* Read the answers of the statements sent without waiting, the batched
 * writes sent first. */
void
pgst_sync(struct pgst *p)
{
	int nulls = 0, results = 0;
	PGresult *r;
	char msg[512];

	pgst_batch_send(p);
	if (!p->piped)
		return;
	p->piped = false;
	if (PQpipelineSync(p->pg) != 1)
		goto lost;
	for (;;) {
		r = PQgetResult(p->pg);
		if (r == NULL) {
			/* the end of one statement's answers */
			if (PQstatus(p->pg) == CONNECTION_BAD ||
			    ++nulls > p->npiped)
				goto lost;
			continue;
		}
		if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
			PQclear(r);
			break;
		}
		if (++results > 2 * p->npiped + 2) { /* never: a broken one */
			PQclear(r);
			goto lost;
		}
		if ((PQresultStatus(r) == PGRES_TUPLES_OK ||
		     PQresultStatus(r) == PGRES_COMMAND_OK) &&
		    nulls < p->npiped && p->answer[nulls].fn != NULL)
			p->answer[nulls].fn(p, r, p->answer[nulls].arg);
		if (PQresultStatus(r) == PGRES_FATAL_ERROR && !p->aborted &&
		    nulls < p->npiped &&
		    p->answer[nulls].fn == pgst_fence_answer) {
			snprintf(msg, sizeof msg, "deposed: another node holds"
				 " the planner lease");
			p->aborted = true;
			snprintf(p->abort_msg, sizeof p->abort_msg, "%s", msg);
		}
		if (PQresultStatus(r) == PGRES_FATAL_ERROR && !p->aborted) {
			snprintf(msg, sizeof msg, "%s",
				 PQresultErrorMessage(r));
			msg[strcspn(msg, "\r\n")] = '\0';
			p->aborted = true;
			snprintf(p->abort_msg, sizeof p->abort_msg, "%s",
				 msg[0] ? msg : "a write failed");
		}
		PQclear(r);
	}
	p->npiped = 0;
	PQexitPipelineMode(p->pg);
	return;
lost:
	p->npiped = 0;
	if (p->pg != NULL && PQstatus(p->pg) == CONNECTION_OK)
		PQexitPipelineMode(p->pg);
	if (p->tx && !p->aborted) {
		p->aborted = true;
		snprintf(p->abort_msg, sizeof p->abort_msg, "the connection"
			 " was lost");
	}
}

/* Send SQL (sql, or prepared statement id) inside the open transaction
 * without waiting for its answer (pgst_sync reads it, and hands its rows
 * to fn if not NULL). */
static int
pgst_pipe_send(struct pgst *p, const char *sql, enum pgst_stmt id,
	       const struct pgst_args *a, const char *what, pgst_answer_fn fn,
	       size_t arg, struct err *err)
{
	char name[16];
	int ok;

	if (p->npiped >= PGST_PIPE_MAX)
		pgst_sync(p);
	/* SQL text (BEGIN, COMMIT) needs the connection, not the prepared
	 * statements (a migration commits before they are) */
	if ((sql == NULL || p->pg == NULL ||
	     PQstatus(p->pg) != CONNECTION_OK) && pgst_ready(p, err) < 0)
		return -1;
	if (p->aborted)
		return err_set(err, EXIT_INTERNAL, "state store: %s: the"
			       " transaction failed earlier (%s)", what,
			       p->abort_msg);
	if (!p->piped) {
		if (PQenterPipelineMode(p->pg) != 1)
			return pgst_fail(p, err, what);
		p->piped = true;
	}
	snprintf(name, sizeof name, "s%d", (int)id);
	ok = sql != NULL ?
	     PQsendQueryParams(p->pg, sql, a ? a->n : 0, NULL, a ? a->v : NULL,
			       NULL, NULL, 0) :
	     PQsendQueryPrepared(p->pg, name, a ? a->n : 0, a ? a->v : NULL,
				 NULL, NULL, 0);
	if (!ok) {
		pgst_fail(p, err, what);
		pgst_sync(p);
		return -1;
	}
	p->answer[p->npiped].fn = fn;
	p->answer[p->npiped].arg = arg;
	p->npiped++;
	return 0;
}

/* Send a statement without waiting, after the batched writes. */
static int
pgst_pipe(struct pgst *p, const char *sql, enum pgst_stmt id,
	  const struct pgst_args *a, const char *what, struct err *err)
{
	pgst_batch_send(p);
	return pgst_pipe_send(p, sql, id, a, what, NULL, 0, err);
}

/* Run simple SQL without parameters or rows (transaction control). */
int
pgst_simple(struct pgst *p, const char *sql, struct err *err)
{
	PGresult *r;
	int rc = 0;

	pgst_sync(p);
	r = PQexec(p->pg, sql);

	if (PQresultStatus(r) != PGRES_COMMAND_OK &&
	    PQresultStatus(r) != PGRES_TUPLES_OK)
		rc = pgst_fail(p, err, sql);
	PQclear(r);
	return rc;
}

/* Run prepared statement id: its result (PQclear it), or NULL with err. */
PGresult *
pgst_exec(struct pgst *p, enum pgst_stmt id, const struct pgst_args *a,
	  const char *what, struct err *err)
{
	char name[16];
	PGresult *r;

	pgst_sync(p);
	if (pgst_ready(p, err) < 0)
		return NULL;
	if (p->aborted) {
		err_set(err, EXIT_INTERNAL, "state store: %s: the transaction"
			" failed earlier (%s)", what, p->abort_msg);
		return NULL;
	}
	snprintf(name, sizeof name, "s%d", (int)id);
	r = PQexecPrepared(p->pg, name, a ? a->n : 0, a ? a->v : NULL, NULL,
			   NULL, 0);
	/* a read outside a transaction on a connection the server dropped
	 * (a restart while idle) is tried once more, connected again; a
	 * write is not: it may have been committed before the drop */
	if (PQresultStatus(r) == PGRES_FATAL_ERROR && !p->tx &&
	    PQstatus(p->pg) == CONNECTION_BAD &&
	    strncmp(pgst_sql[id], "SELECT", 6) == 0) {
		PQclear(r);
		if (pgst_ready(p, err) < 0)
			return NULL;
		r = PQexecPrepared(p->pg, name, a ? a->n : 0, a ? a->v : NULL,
				   NULL, NULL, 0);
	}
	if (PQresultStatus(r) != PGRES_COMMAND_OK &&
	    PQresultStatus(r) != PGRES_TUPLES_OK) {
		pgst_fail(p, err, what);
		PQclear(r);
		return NULL;
	}
	return r;
}

/* ---- batched writes (store_pg_int.h) ---------------------------- */

/* Empty one kind's batch. */
static void
pgst_batch_clear(struct pgst_batch *b)
{
	for (int c = 0; c < PGST_BATCH_COLS; c++)
		pgsql_array_free(&b->col[c]);
	for (int i = 0; i < b->n; i++) {
		free(b->key[i]);
		for (int c = 0; b->val != NULL && c < PGST_BATCH_COLS; c++) {
			free(b->val[i * PGST_BATCH_COLS + c]);
			b->val[i * PGST_BATCH_COLS + c] = NULL;
		}
	}
	b->n = 0;
}

/* Drop every batch's rows (the transaction is rolled back). */
static void
pgst_batch_drop(struct pgst *p)
{
	for (int k = 0; k < B_COUNT; k++)
		pgst_batch_clear(&p->batch[k]);
	for (size_t i = 0; i < p->nnodes; i++)
		free(p->nodes[i].node);
	p->nnodes = 0;
	p->batched = false;
}

/* Keep run id's node for its finish in this transaction (pgst_run_node):
 * a finish takes it (pgst_node_take), and one not taken by the next send
 * goes as its own row (pgst_node_spill). */
int
pgst_node_keep(struct pgst *p, int64_t id, const char *node,
	       struct err *err)
{
	if (p->aborted)
		return err_set(err, EXIT_INTERNAL, "state store: recording a"
			       " run's node: the transaction failed earlier"
			       " (%s)", p->abort_msg);
	for (size_t i = 0; i < p->nnodes; i++)
		if (p->nodes[i].id == id) {
			free(p->nodes[i].node);
			p->nodes[i].node = xstrdup(node);
			return 0;
		}
	if (p->nnodes == p->cnodes) {
		p->cnodes = p->cnodes ? 2 * p->cnodes : 16;
		p->nodes = xreallocarray(p->nodes, p->cnodes, sizeof *p->nodes);
	}
	p->nodes[p->nnodes].id = id;
	p->nodes[p->nnodes].node = xstrdup(node);
	p->nnodes++;
	p->batched = true;
	return 0;
}

/* The node kept for run id, taken (free it), or NULL. */
char *
pgst_node_take(struct pgst *p, int64_t id)
{
	for (size_t i = 0; i < p->nnodes; i++)
		if (p->nodes[i].id == id) {
			char *node = p->nodes[i].node;

			p->nodes[i] = p->nodes[--p->nnodes];
			return node;
		}
	return NULL;
}

/* The nodes no finish took, as rows of their own. */
static void
pgst_node_spill(struct pgst *p)
{
	struct pgst_node *nodes = p->nodes;
	size_t n = p->nnodes;
	struct err err;

	if (n == 0)
		return;
	p->nodes = NULL; /* a send on the way sees none */
	p->nnodes = p->cnodes = 0;
	for (size_t i = 0; i < n; i++) {
		struct pgst_args a = { 0 };

		arg_int(&a, nodes[i].id);
		arg_text(&a, nodes[i].node);
		pgst_batch_add(p, B_RUN_NODE, nodes[i].id, NULL, NULL, &a,
			       &err);
		free(nodes[i].node);
	}
	free(nodes);
}

/* Drop the batches and free what they hold (close). */
void
pgst_batch_free(struct pgst *p)
{
	pgst_batch_drop(p);
	for (int k = 0; k < B_COUNT; k++) {
		free(p->batch[k].val);
		p->batch[k].val = NULL;
	}
	free(p->nodes);
	p->nodes = NULL;
	p->cnodes = 0;
}

/* P_B_LATEST's answer: the state each row replaced, by ordinal, into the
 * callbacks waiting for the commit from index first on. */
static void
pgst_latest_answer(struct pgst *p, PGresult *r, size_t first)
{
	for (int i = 0; i < PQntuples(r); i++) {
		int64_t ord = col_int(r, i, 0);
		size_t at = first + (size_t)ord - 1;
		enum mstate prev;

		if (ord >= 1 && at < p->nafter &&
		    mstate_parse(col_text(r, i, 1), &prev) == 0)
			p->after[at].prev = prev;
	}
}

/* P_LATEST_PUT's answer: the state one row replaced, into the callback
 * waiting for the commit at index at. */
static void
pgst_latest_one(struct pgst *p, PGresult *r, size_t at)
{
	enum mstate prev;

	if (PQntuples(r) > 0 && at < p->nafter &&
	    mstate_parse(col_text(r, 0, 0), &prev) == 0)
		p->after[at].prev = prev;
}

/* Send one kind's rows: one statement, or, below PGST_BATCH_JOIN rows of
 * a kind that joins, each row's single statement. */
static void
pgst_batch_send_kind(struct pgst *p, int k)
{
	struct pgst_batch *b = &p->batch[k];
	enum pgst_stmt single = pgst_batch_kinds[k].single;
	int ncols = pgst_batch_kinds[k].ncols;
	struct pgst_args a = { 0 };
	struct err err;

	if (single != P_COUNT && b->n < PGST_BATCH_JOIN) {
		for (int i = 0; i < b->n; i++) {
			a.n = ncols;
			for (int c = 0; c < ncols; c++)
				a.v[c] = b->val[i * PGST_BATCH_COLS + c];
			pgst_pipe_send(p, NULL, single, &a,
				       pgst_batch_kinds[k].what,
				       k == B_LATEST ? pgst_latest_one : NULL,
				       b->first_after + (size_t)i, &err);
		}
		return;
	}
	for (int c = 0; c < ncols; c++)
		a.v[a.n++] = pgsql_array_end(&b->col[c]);
	pgst_pipe_send(p, NULL, pgst_batch_kinds[k].stmt,
		       &a, pgst_batch_kinds[k].what,
		       k == B_LATEST ? pgst_latest_answer : NULL,
		       b->first_after, &err);
}

/* Send every kind's rows in the order of enum pgst_batch_kind.  A failure
 * aborts the transaction (pgst_pipe_send), whose commit then fails: the
 * rows are not kept.  The joins' settings are set by one statement and
 * set back after them, unless last: the transaction's COMMIT follows,
 * which ends them, with nothing between but the lease's fence (a lookup
 * of its one row by key, whatever the settings). */
static void
pgst_batch_send_as(struct pgst *p, bool last)
{
	bool joins = false;
	struct err err;

	if (!p->batched || p->sending)
		return;
	pgst_node_spill(p);
	p->sending = true; /* a sync on the way must not send them twice */
	for (int k = 0; k < B_COUNT; k++)
		joins |= pgst_batch_kinds[k].single != P_COUNT &&
			 p->batch[k].n >= PGST_BATCH_JOIN;
	if (joins)
		pgst_pipe_send(p, "SELECT set_config('enable_seqscan', 'off',"
			       " true), set_config('plan_cache_mode',"
			       " 'force_generic_plan', true)", P_COUNT, NULL,
			       "planning the batched writes", NULL, 0, &err);
	for (int k = 0; k < B_COUNT; k++) {
		if (p->batch[k].n == 0)
			continue;
		pgst_batch_send_kind(p, k);
		pgst_batch_clear(&p->batch[k]);
	}
	if (joins && !last) {
		pgst_pipe_send(p, "SET LOCAL enable_seqscan TO DEFAULT",
			       P_COUNT, NULL, "planning the batched writes",
			       NULL, 0, &err);
		pgst_pipe_send(p, "SET LOCAL plan_cache_mode TO DEFAULT",
			       P_COUNT, NULL, "planning the batched writes",
			       NULL, 0, &err);
	}
	p->batched = false;
	p->sending = false;
}

static void
pgst_batch_send(struct pgst *p)
{
	pgst_batch_send_as(p, false);
}

/*
 * Keep a row of kind k: the batch whose columns the caller appends it to,
 * in order, or NULL with err when the transaction failed earlier.  id
 * (> 0) or job and key name the row it changes: when a kept row of the
 * kind names it too, or the batch is full, every batch is sent first.
 */
static struct pgst_batch *
pgst_batch_row(struct pgst *p, enum pgst_batch_kind k, int64_t id,
	       const char *job, const char *key, struct err *err)
{
	struct pgst_batch *b = &p->batch[k];
	char *name = NULL;
	bool again = b->n >= PGST_BATCH_MAX;

	if (p->aborted) {
		err_set(err, EXIT_INTERNAL, "state store: %s: the transaction"
			" failed earlier (%s)", pgst_batch_kinds[k].what,
			p->abort_msg);
		return NULL;
	}
	if (job != NULL)
		name = xasprintf("%s\x1f%s", job, key);
	for (int i = 0; i < b->n && !again && (name != NULL || id > 0); i++)
		again = name != NULL ? strcmp(b->key[i], name) == 0 :
			b->id[i] == id;
	if (again)
		pgst_batch_send(p);
	if (b->n == 0)
		b->first_after = p->nafter;
	b->id[b->n] = id;
	b->key[b->n] = name;
	b->n++;
	p->batched = true;
	return b;
}

/* Keep one row of kind k: a, its single statement's parameters in order
 * (pgst_batch_row says what id, job and key are); 0, or -1 with err. */
int
pgst_batch_add(struct pgst *p, enum pgst_batch_kind k, int64_t id,
	       const char *job, const char *key, const struct pgst_args *a,
	       struct err *err)
{
	struct pgst_batch *b = pgst_batch_row(p, k, id, job, key, err);
	int row;

	if (b == NULL)
		return -1;
	row = b->n - 1;
	if (pgst_batch_kinds[k].single != P_COUNT && b->val == NULL)
		b->val = xcalloc(PGST_BATCH_MAX * PGST_BATCH_COLS,
				 sizeof *b->val);
	for (int c = 0; c < a->n; c++) {
		pgsql_array_text(&b->col[c], a->v[c]);
		if (b->val != NULL && a->v[c] != NULL)
			b->val[row * PGST_BATCH_COLS + c] = xstrdup(a->v[c]);
	}
	return 0;
}

/* ---- transactions ----------------------------------------------------- */

/* A transaction was opened: no group, nothing failed yet. */
static void
pgst_tx_state(struct pgst *p)
{
	p->tx = true;
	p->aborted = false;
	p->depth = 0;
	p->deferred = false;
}

/* An idle connection has nothing to say: anything readable is the
 * server's goodbye (an error, then the end of the stream), which marks
 * the connection broken once read to its end. */
static void
pgst_idle_check(struct pgst *p)
{
	struct pollfd pfd;

	if (p->pg == NULL || p->piped || PQstatus(p->pg) != CONNECTION_OK)
		return;
	pfd.fd = PQsocket(p->pg);
	pfd.events = POLLIN;
	while (pfd.fd >= 0 && poll(&pfd, 1, 0) == 1 &&
	       PQconsumeInput(p->pg) == 1)
		;
}

/* Count the runs kept again when asked (outside a transaction; a failure
 * leaves it asked): by store_pg_fence (a new planner), and after a
 * transaction that did not commit (its changes to runs_kept did not
 * land, or its COMMIT's answer was lost).  A node of several hosts that
 * is not the planner has them counted off the loop instead
 * (store_pg_stats.c). */
void
pgst_recount(struct pgst *p)
{
	PGresult *r;

	if (!p->recount || p->tx)
		return;
	r = pgst_exec(p, P_RUNS_COUNT, NULL, "counting runs", NULL);
	if (r == NULL)
		return;
	p->runs_kept = col_int(r, 0, 0);
	p->recount = false;
	PQclear(r);
}

/* Open a transaction: BEGIN sent without waiting (its answer comes with
 * the next statement's).  A connection the server dropped while idle is
 * made again first (nothing was sent on it that could have been
 * applied). */
static int
pgst_tx_open(struct pgst *p, struct err *err)
{
	pgst_idle_check(p);
	if (pgst_ready(p, err) < 0)
		return -1;
	pgst_recount(p);
	pgst_tx_state(p);
	if (pgst_pipe(p, "BEGIN", P_COUNT, NULL, "BEGIN", err) < 0) {
		pgst_tx_rollback(p);
		return -1;
	}
	return 0;
}

/* The fence check's answer: it passed, nothing to keep (pgst_sync knows
 * a failed one by this function and aborts the transaction, deposed). */
static void
pgst_fence_answer(struct pgst *p, PGresult *r, size_t arg)
{
	(void)p;
	(void)r;
	(void)arg;
}

/* COMMIT's answer: committed, unless the server says ROLLBACK (its
 * answer to a COMMIT of a failed transaction). */
static void
pgst_commit_answer(struct pgst *p, PGresult *r, size_t arg)
{
	(void)arg;
	p->committed = strcmp(PQcmdStatus(r), "COMMIT") == 0;
}

/* Run the callbacks waiting for the commit, or drop them (rolled back). */
void
pgst_after_end(struct pgst *p, bool committed)
{
	for (size_t i = 0; i < p->nafter; i++) {
		struct pgst_after *x = &p->after[i];

		if (committed)
			x->cb(x->job, x->prev, x->state, x->data);
		free(x->job);
	}
	p->nafter = 0;
}

static void pgst_batch_drop(struct pgst *p);

/* Commit the open transaction (COMMIT sent after its writes, one round
 * trip); an aborted one is rolled back and fails. */
int
pgst_tx_commit(struct pgst *p, struct err *err)
{
	struct err ignored;

	pgst_batch_send_as(p, true);
	p->committed = false;
	if (p->fence > 0 && !p->aborted) {
		struct pgst_args a = { 0 };

		arg_int(&a, p->fence);
		pgst_pipe_send(p, NULL, P_FENCE, &a, "checking the planner"
			       " lease", pgst_fence_answer, 0, &ignored);
	}
	if (!p->aborted)
		pgst_pipe_send(p, "COMMIT", P_COUNT, NULL, "COMMIT",
			       pgst_commit_answer, 0, &ignored);
	pgst_sync(p);
	p->tx = false;
	p->deferred = false;
	p->depth = 0;
	if (p->aborted) {
		p->aborted = false;
		p->recount = true; /* its runs_kept changes did not land */
		pgst_after_end(p, false);
		if (p->pg != NULL && PQstatus(p->pg) == CONNECTION_OK)
			pgst_simple(p, "ROLLBACK", NULL);
		return err_set(err, EXIT_INTERNAL, "state store: the transaction"
			       " was rolled back: %s", p->abort_msg);
	}
	pgst_after_end(p, p->committed);
	if (!p->committed) {
		p->recount = true; /* or its answer was lost: ask the store */
		return err_set(err, EXIT_INTERNAL, "state store: the transaction"
			       " was rolled back by the server");
	}
	return 0;
}

/* Roll back the open transaction. */
void
pgst_tx_rollback(struct pgst *p)
{
	pgst_batch_drop(p);
	pgst_after_end(p, false);
	pgst_sync(p);
	p->recount = true; /* its runs_kept changes did not land */
	p->tx = false;
	p->deferred = false;
	p->depth = 0;
	p->aborted = false;
	if (p->pg != NULL && PQstatus(p->pg) == CONNECTION_OK)
		pgst_simple(p, "ROLLBACK", NULL);
}

/* Begin: a transaction, or a group inside one (no savepoint: the top
 * of store_pg.c). */
int
pgst_begin(struct store *st, struct err *err)
{
	struct pgst *p = pgst_of(st);

	if (p->tx) {
		p->depth++;
		return 0;
	}
	return pgst_tx_open(p, err);
}

/* Commit: end the group, or commit what begin opened. */
int
pgst_commit(struct store *st, struct err *err)
{
	struct pgst *p = pgst_of(st);

	if (p->depth > 0) {
		p->depth--;
		return 0;
	}
	if (!p->tx || p->deferred)
		return 0;
	return pgst_tx_commit(p, err);
}

/* Roll back what begin opened; a group inside a transaction fails the
 * whole transaction (the top of store_pg.c). */
void
pgst_rollback(struct store *st)
{
	struct pgst *p = pgst_of(st);

	if (p->depth > 0) {
		p->depth--;
		if (!p->aborted) {
			p->aborted = true;
			snprintf(p->abort_msg, sizeof p->abort_msg,
				 "a group of its writes was rolled back");
		}
		return;
	}
	if (!p->tx || p->deferred)
		return;
	pgst_tx_rollback(p);
}

/* Open the loop turn's transaction, if none is. */
int
pgst_defer(struct store *st, struct err *err)
{
	struct pgst *p = pgst_of(st);

	if (p->tx)
		return 0;
	if (pgst_tx_open(p, err) < 0)
		return -1;
	p->deferred = true;
	return 0;
}

/* Commit the loop turn's transaction. */
int
pgst_flush(struct store *st, struct err *err)
{
	struct pgst *p = pgst_of(st);

	if (!p->tx || !p->deferred || p->depth > 0)
		return 0;
	return pgst_tx_commit(p, err);
}

/* Roll back whatever is open, the deferred transaction and its groups
 * included (a failed turn: store.h). */
void
pgst_discard(struct store *st)
{
	struct pgst *p = pgst_of(st);

	if (p->tx)
		pgst_tx_rollback(p);
}

/* Run a statement that writes: inside the open transaction, or, with a
 * fence and none open, in one of its own that checks the lease. */
PGresult *
pgst_write(struct pgst *p, enum pgst_stmt id, const struct pgst_args *a,
	   const char *what, struct err *err)
{
	PGresult *r;

	if (p->tx || p->fence <= 0)
		return pgst_exec(p, id, a, what, err);
	if (pgst_tx_open(p, err) < 0)
		return NULL;
	r = pgst_exec(p, id, a, what, err);
	if (r == NULL) {
		pgst_tx_rollback(p);
		return NULL;
	}
	if (pgst_tx_commit(p, err) < 0) {
		PQclear(r);
		return NULL;
	}
	return r;
}

/* Run a statement that writes and returns nothing of interest. */
int
pgst_write_done(struct pgst *p, enum pgst_stmt id, const struct pgst_args *a,
		const char *what, struct err *err)
{
	PGresult *r;

	if (p->tx)
		return pgst_pipe(p, NULL, id, a, what, err);
	if ((r = pgst_write(p, id, a, what, err)) == NULL)
		return -1;
	PQclear(r);
	return 0;
}
