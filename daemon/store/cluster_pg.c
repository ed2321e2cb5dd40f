/*
 * cluster_pg.c - several hosts on one PostgreSQL database: node
 * registration, heartbeat and lease, the work table, reaping and the
 * mailbox (struct cluster_driver, cluster.h), through libpq, inside the
 * PostgreSQL module; the daemon finds it as `cluster_pg_driver`.
 *
 * One connection of its own, used on the loop thread.  Statements are
 * sent with PQsendQueryParams on a non-blocking connection and waited for
 * with poll() up to the call bound (cpg_call_ms): the loop stalls at most
 * that long, and only when the database does not answer, which is then
 * treated as lost (the connection is dropped; the next heartbeat
 * reconnects).  The alternative, every statement as a callback chain on
 * the loop, would make each claim and each result a state machine for a
 * wait that is a few hundred microseconds when the database is there.
 * Between statements the connection's socket is watched with uv_poll for
 * NOTIFY: bf_work (offers), bf_done (results), bf_mail (requests for the
 * planner), bf_reply (answers, payload the mailbox id).
 *
 * Every statement that decides something is one statement, its condition
 * inside it: a claim cannot take a row another node took (FOR UPDATE SKIP
 * LOCKED, then state re-checked), a result cannot land for a claim that
 * was reaped (claimed_by, incarnation and state in its WHERE), a planner
 * write cannot land once the lease has moved on (holder, generation and
 * expiry checked in the same statement), a dead node's runs are failed in
 * the statement that bumps its incarnation.
 *
 * Times come from the database's clock (now()), as milliseconds since the
 * epoch; the local monotonic clock only bounds waits and the planner's own
 * deadline (lease.h, LEASE-2).
 */
#include "cluster_pg_int.h"

/* ------------------------------------------------------------------ */
/* Registration, heartbeat, lease, reaping                             */
/* ------------------------------------------------------------------ */

/* Register this node: a new incarnation; runs still claimed by its
 * earlier processes fail as interrupted (they are gone). */
static int
cpg_register(struct cluster *c, struct err *err)
{
	static const char sql[] =
		"WITH reg AS (INSERT INTO nodes (name, incarnation, last_seen,"
		"  running, config_hash, role, started_at)"
		"  VALUES ($1, 1, now(), 0, $2, 'worker', now())"
		"  ON CONFLICT (name) DO UPDATE SET"
		"  incarnation = nodes.incarnation + 1, last_seen = now(),"
		"  running = 0, config_hash = $2, role = 'worker',"
		"  started_at = now() RETURNING incarnation),"
		" old AS (UPDATE work SET state = 'done', failed = true,"
		"  interrupted = true, finished_at = now(),"
		"  error = 'interrupted: node ' || $1 || ' stopped'"
		"  WHERE claimed_by = $1 AND state = 'claimed' RETURNING id),"
		" n AS (SELECT pg_notify('bf_done', '')"
		"  WHERE EXISTS (SELECT 1 FROM old))"
		" SELECT (SELECT incarnation FROM reg), (SELECT count(*) FROM"
		" old), (SELECT count(*) FROM n)";
	const char *v[2] = { c->node, c->config_hash };
	PGresult *res = cpg_q(c, sql, 2, v, err);
	int64_t old;

	if (res == NULL)
		return -1;
	c->incarnation = cpg_i64(res, 0, 0);
	old = cpg_i64(res, 0, 1);
	PQclear(res);
	cpg_log(c, 5, "cluster: node=%s registered, incarnation %" PRId64,
		c->node, c->incarnation);
	if (old > 0)
		cpg_log(c, 4, "cluster: node=%s: %" PRId64 " runs its previous"
			" process had claimed are interrupted", c->node, old);
	return 0;
}

/* Queue the ids in "1,2,3" for cancel_cb (runs the planner wants
 * stopped: their request was cancelled). */
static void
cpg_cancels(struct cluster *c, const char *list)
{
	const char *p = list;
	char *end;

	while (*p != '\0') {
		int64_t id = strtoll(p, &end, 10);

		if (end == p)
			break;
		c->cancel = xreallocarray(c->cancel, c->ncancel + 1,
					  sizeof *c->cancel);
		c->cancel[c->ncancel++] = id;
		p = *end == ',' ? end + 1 : end;
	}
	if (c->ncancel > 0)
		cpg_kick(c);
}

/* Heartbeat and read the lease and how many nodes live (LEASE-3; this one
 * counted, however late its last heartbeat): *fenced when this
 * incarnation is no longer the node's (declared dead meanwhile). */
static int
cpg_heartbeat(struct cluster *c, struct lease_row *row, int64_t *now_ms,
	      bool *fenced, struct err *err)
{
	static const char sql[] =
		"WITH hb AS (UPDATE nodes SET last_seen = now(), running = $3,"
		"  config_hash = $4, role = $5"
		"  WHERE name = $1 AND incarnation = $2 RETURNING 1)"
		" SELECT (SELECT count(*) FROM hb), l.id IS NOT NULL,"
		" coalesce(l.holder, ''), coalesce(l.generation, 0),"
		" coalesce(" CPG_MS("l.expires_at") ", 0), " CPG_MS("now()") ","
		" (SELECT string_agg(id::text, ',') FROM work WHERE claimed_by = $1"
		"  AND incarnation = $2 AND state = 'claimed' AND cancel),"
		" 1 + (SELECT count(*) FROM nodes WHERE name <> $1"
		"  AND role <> 'stopped'"
		"  AND NOT " LEASE_SQL_DEAD("last_seen", "$6") ")"
		" FROM (SELECT 1) x LEFT JOIN lease l ON l.id = 1";
	char inc[32], running[32], ms[32];
	const char *v[6] = { c->node, inc, running, c->config_hash,
			     c->role == CLUSTER_PLANNER ? "planner" : "worker",
			     ms };
	PGresult *res;

	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	snprintf(running, sizeof running, "%d", c->running);
	snprintf(ms, sizeof ms, "%" PRId64, lease_dead_ms(c->lease_s));
	if ((res = cpg_qp(c, CPG_P_HEARTBEAT, sql, 6, v, err)) == NULL)
		return -1;
	*fenced = cpg_i64(res, 0, 0) == 0;
	memset(row, 0, sizeof *row);
	row->exists = cpg_bool(res, 0, 1);
	cpg_str(res, 0, 2, row->holder, sizeof row->holder);
	row->generation = cpg_i64(res, 0, 3);
	row->expires_ms = cpg_i64(res, 0, 4);
	*now_ms = cpg_i64(res, 0, 5);
	if (!*fenced && !PQgetisnull(res, 0, 6))
		cpg_cancels(c, PQgetvalue(res, 0, 6));
	c->live_nodes = (int)cpg_i64(res, 0, 7);
	PQclear(res);
	return 0;
}

/* Take the lease (free or expired), noting who held it before (an
 * expired holder: a planner that died); 1 taken, 0 someone was faster.  A
 * free or expired row is locked FOR UPDATE first: that waits for the
 * transaction in flight of a deposed planner's store, whose fence holds
 * the row FOR KEY SHARE (store_pg.c, "Fencing"); the holder's own
 * renewals (UPDATE of no key column) do not wait for it. */
static int
cpg_acquire(struct cluster *c, struct err *err)
{
	static const char sql[] =
		"WITH k AS (SELECT coalesce(holder, '') AS holder FROM lease"
		"  WHERE id = 1 AND (coalesce(holder, '') = ''"
		"   OR expires_at IS NULL OR expires_at <= now()) FOR UPDATE),"
		" l AS (INSERT INTO lease AS l (id, holder, generation,"
		"  expires_at)"
		"  SELECT 1, $1, 1, now() + $3 * interval '1 millisecond'"
		"  WHERE EXISTS (SELECT 1 FROM nodes WHERE name = $1"
		"   AND incarnation = $2) AND (SELECT count(*) FROM k) >= 0"
		"  ON CONFLICT (id) DO UPDATE SET holder = $1,"
		"  generation = l.generation + 1, expires_at = EXCLUDED.expires_at"
		"  WHERE coalesce(l.holder, '') = '' OR l.expires_at IS NULL"
		"   OR l.expires_at <= now()"
		"  RETURNING generation),"
		" r AS (UPDATE nodes SET role = 'planner' WHERE name = $1"
		"  AND incarnation = $2 AND EXISTS (SELECT 1 FROM l) RETURNING 1)"
		" SELECT generation, (SELECT count(*) FROM r),"
		" coalesce((SELECT holder FROM k), '') FROM l";
	char inc[32], ms[32];
	const char *v[3] = { c->node, inc, ms };
	int64_t sent = cpg_mono_ms();
	PGresult *res;

	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	snprintf(ms, sizeof ms, "%" PRId64, c->lease_s * 1000);
	if ((res = cpg_q(c, sql, 3, v, err)) == NULL)
		return -1;
	if (PQntuples(res) == 1) {
		c->renew_sent = sent;
		snprintf(c->planner, sizeof c->planner, "%s", c->node);
		cpg_str(res, 0, 2, c->prev_planner, sizeof c->prev_planner);
		cpg_set_role(c, CLUSTER_PLANNER, cpg_i64(res, 0, 0));
		PQclear(res);
		return 1;
	}
	PQclear(res);
	return 0;
}

/* Renew the lease held; 1 renewed, 0 lost (deposed). */
static int
cpg_renew(struct cluster *c, struct err *err)
{
	static const char sql[] =
		"UPDATE lease SET expires_at = now() + $3 * interval"
		" '1 millisecond' WHERE id = 1 AND holder = $1"
		" AND generation = $2 AND expires_at > now() RETURNING 1";
	char gen[32], ms[32];
	const char *v[3] = { c->node, gen, ms };
	int64_t sent = cpg_mono_ms();
	PGresult *res;
	int ok;

	snprintf(gen, sizeof gen, "%" PRId64, c->generation);
	snprintf(ms, sizeof ms, "%" PRId64, c->lease_s * 1000);
	if ((res = cpg_q(c, sql, 3, v, err)) == NULL)
		return -1;
	ok = PQntuples(res) == 1;
	PQclear(res);
	if (ok)
		c->renew_sent = sent;
	return ok;
}

static void cpg_deadline_cb(uv_timer_t *t);

/* Arm the planner's local deadline from the last renewal sent. */
static void
cpg_arm_deadline(struct cluster *c)
{
	int64_t left = lease_local_deadline(c->renew_sent, c->lease_s) -
		       cpg_mono_ms();

	uv_timer_start(&c->deadline, cpg_deadline_cb, left > 0 ? left : 0,
		       0);
}

/* The lease could have run out without a renewal: stop planning. */
static void
cpg_deposed_late(struct cluster *c)
{
	if (c->role != CLUSTER_PLANNER)
		return;
	cpg_log(c, 3, "cluster: node=%s could not renew its lease in time:"
		" deposed", c->node);
	cpg_set_role(c, c->db_ok ? CLUSTER_WORKER : CLUSTER_OFFLINE, 0);
}

/* The local deadline's timer. */
static void
cpg_deadline_cb(uv_timer_t *t)
{
	cpg_deposed_late(t->data);
}

/* Planner: declare dead the nodes silent for longer than the lease and
 * fail their claimed runs (and claims of stale incarnations), in one
 * statement fenced by the lease; drop old mail. */
static int
cpg_reap(struct cluster *c, struct err *err)
{
	static const char sql[] =
		"WITH ok AS (SELECT 1 FROM lease WHERE id = 1 AND holder = $1"
		"  AND generation = $2 AND expires_at > now()),"
		" dead AS (UPDATE nodes SET incarnation = incarnation + 1,"
		"  role = 'stopped', running = 0"
		"  WHERE name <> $1 AND role <> 'stopped'"
		"  AND " LEASE_SQL_DEAD("last_seen", "$3")
		"  AND EXISTS (SELECT 1 FROM ok) RETURNING name),"
		" r AS (UPDATE work w SET state = 'done', failed = true,"
		"  interrupted = true, finished_at = now(),"
		"  error = 'interrupted: node ' || w.claimed_by || ' stopped'"
		"  WHERE w.state = 'claimed' AND EXISTS (SELECT 1 FROM ok)"
		"  AND (w.claimed_by IN (SELECT name FROM dead)"
		"   OR NOT EXISTS (SELECT 1 FROM nodes n"
		"    WHERE n.name = w.claimed_by AND n.incarnation = w.incarnation"
		"    AND n.role <> 'stopped'))"
		"  RETURNING w.id),"
		" m AS (DELETE FROM mailbox WHERE created_at < now() - interval '"
		CPG_MAIL_KEEP "' AND EXISTS (SELECT 1 FROM ok) RETURNING 1),"
		" n AS (SELECT pg_notify('bf_done', '')"
		"  WHERE EXISTS (SELECT 1 FROM r))"
		" SELECT (SELECT count(*) FROM ok), (SELECT string_agg(name, ', ')"
		" FROM dead), (SELECT count(*) FROM r), (SELECT count(*) FROM m),"
		" (SELECT count(*) FROM n)";
	char gen[32], ms[32], names[512];
	const char *v[3] = { c->node, gen, ms };
	PGresult *res;
	int64_t runs;

	snprintf(gen, sizeof gen, "%" PRId64, c->generation);
	snprintf(ms, sizeof ms, "%" PRId64, lease_dead_ms(c->lease_s));
	if ((res = cpg_q(c, sql, 3, v, err)) == NULL)
		return -1;
	if (cpg_i64(res, 0, 0) == 0) {
		PQclear(res);
		return cpg_deposed(c, NULL, err);
	}
	cpg_str(res, 0, 1, names, sizeof names);
	runs = cpg_i64(res, 0, 2);
	PQclear(res);
	if (names[0] != '\0')
		cpg_log(c, 4, "cluster: nodes declared dead (silent for more"
			" than the lease of %" PRId64 "s): %s", c->lease_s,
			names);
	if (runs > 0) {
		cpg_log(c, 4, "cluster: %" PRId64 " runs of stopped nodes"
			" interrupted, to be queued again", runs);
		c->ev_done = true;
		cpg_kick(c);
	}
	return 0;
}

/* A node fenced out: it was declared dead while it ran. */
static int
cpg_fenced(struct cluster *c, struct err *err)
{
	int64_t old = c->incarnation, now = cpg_mono_ms();

	cpg_log(c, 3, "cluster: node=%s was declared dead (incarnation %"
		PRId64 " is gone): its runs in flight are abandoned; it"
		" registers again", c->node, old);
	if (c->fenced_at > 0 && now - c->fenced_at < 4 * c->lease_s * 1000)
		cpg_log(c, 3, "cluster: node=%s was declared dead twice within"
			" %" PRId64 " s: does another daemon run with node: %s"
			" on this state store? Each node needs a name of its"
			" own", c->node, 4 * c->lease_s, c->node);
	c->fenced_at = now;
	if (c->role == CLUSTER_PLANNER)
		cpg_set_role(c, CLUSTER_WORKER, 0);
	if (cpg_register(c, err) < 0)
		return -1;
	c->ev_fenced_old = old;
	cpg_kick(c);
	return 0;
}

/* Act on the lease as lease_decide() says. */
static int
cpg_lease(struct cluster *c, const struct lease_row *row, int64_t now_ms,
	  struct err *err)
{
	enum lease_action a = lease_decide(row, c->node, c->role ==
					   CLUSTER_PLANNER ? c->generation : 0,
					   now_ms);
	int r;

	switch (a) {
	case LEASE_RENEW:
		if ((r = cpg_renew(c, err)) < 0)
			return -1;
		if (r == 0) {
			cpg_set_role(c, CLUSTER_WORKER, 0);
			return 0;
		}
		cpg_arm_deadline(c);
		return cpg_reap(c, err);
	case LEASE_ACQUIRE:
		if (c->resigned)
			return 0;
		if ((r = cpg_acquire(c, err)) <= 0)
			return r;
		cpg_arm_deadline(c);
		return cpg_reap(c, err);
	case LEASE_WAIT:
		snprintf(c->planner, sizeof c->planner, "%s", row->holder);
		return 0;
	case LEASE_DEPOSED:
		cpg_log(c, 3, "cluster: node=%s lost its lease (now held by"
			" \"%s\", generation %" PRId64 "): deposed", c->node,
			row->holder, row->generation);
		snprintf(c->planner, sizeof c->planner, "%s", row->holder);
		cpg_set_role(c, CLUSTER_WORKER, 0);
		return 0;
	}
	return 0;
}

/* Bring the connection up (and register) if it is down. */
static int
cpg_ensure(struct cluster *c, struct err *err)
{
	bool was_lost = !c->db_ok;

	if (c->pg != NULL && c->incarnation != 0)
		return 0;
	if (c->pg == NULL && cpg_connect(c, err) < 0) {
		if (c->db_ok || c->db_lost_ms == 0) {
			cpg_drop(c, err->msg);
		} else {
			snprintf(c->db_error, sizeof c->db_error, "%s",
				 err->msg);
		}
		return -1;
	}
	if (c->incarnation == 0 && cpg_register(c, err) < 0)
		return -1;
	c->db_ok = true;
	c->db_error[0] = '\0';
	if (c->role == CLUSTER_OFFLINE)
		cpg_set_role(c, CLUSTER_WORKER, 0);
	if (was_lost) {
		cpg_log(c, 5, "cluster: node=%s reached the state store", c->node);
		/* notifications may have been missed meanwhile */
		c->ev_db = c->ev_work = c->ev_done = c->ev_mail = true;
		cpg_kick(c);
	}
	return 0;
}

static void cpg_fwd_lease(struct cluster *c, const struct lease_row *row);

/* One heartbeat: connect if needed, heartbeat, lease, reap. */
static void
cpg_beat_cb(uv_timer_t *t)
{
	struct cluster *c = t->data;
	struct lease_row row;
	struct err err;
	int64_t now_ms, sent = cpg_mono_ms();
	bool fenced;

	if (c->closing || cpg_ensure(c, &err) < 0)
		return;
	if (cpg_heartbeat(c, &row, &now_ms, &fenced, &err) < 0)
		goto failed;
	/* alive in the database's view until sent + lease at least (LEASE-3:
	 * last_seen is the heartbeat's commit, after it was sent) */
	if (c->alive_until != NULL)
		atomic_store(c->alive_until, fenced ? 1 :
			     sent + c->lease_s * 1000 - c->lease_s * 1000 / 3);
	if (fenced) {
		if (cpg_fenced(c, &err) < 0)
			goto failed;
		return;
	}
	if (cpg_lease(c, &row, now_ms, &err) < 0)
		goto failed;
	cpg_listen(c);
	cpg_fwd_lease(c, &row);
	return;
failed:
	cpg_log(c, 4, "cluster: node=%s heartbeat: %s", c->node, err.msg);
}

/* ------------------------------------------------------------------ */
/* Forwarded requests                                                  */
/* ------------------------------------------------------------------ */

static void cpg_fwd_timer_cb(uv_timer_t *t);

/* Arm the forward timer at the earliest deadline. */
void
cpg_fwd_arm(struct cluster *c)
{
	int64_t first = INT64_MAX, now = cpg_mono_ms();
	struct cpg_fwd *f;

	for (f = c->fwd; f != NULL; f = f->next)
		if (f->deadline < first)
			first = f->deadline;
	if (first == INT64_MAX)
		uv_timer_stop(&c->fwd_timer);
	else
		uv_timer_start(&c->fwd_timer, cpg_fwd_timer_cb,
			       first > now ? (uint64_t)(first - now) : 0, 0);
}

/* Take f off the list. */
static void
cpg_fwd_unlink(struct cluster *c, struct cpg_fwd *f)
{
	struct cpg_fwd **pp;

	for (pp = &c->fwd; *pp != NULL; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
}

/* Fetch the answer of f (answered), deliver it. */
static void
cpg_fwd_fetch(struct cluster *c, struct cpg_fwd *f)
{
	static const char sql[] = "DELETE FROM mailbox WHERE id = $1 AND"
				  " response IS NOT NULL RETURNING response";
	char id[32];
	const char *v[1] = { id };
	unsigned char *bytes;
	size_t len = 0;
	PGresult *res;
	struct err err;

	snprintf(id, sizeof id, "%" PRId64, f->id);
	f->answered = false;
	if ((res = cpg_q(c, sql, 1, v, &err)) == NULL || PQntuples(res) == 0) {
		if (res == NULL)
			cpg_log(c, 4, "cluster: node=%s: the answer to"
				" request %s: %s", c->node, id, err.msg);
		PQclear(res);
		return; /* not yet, or lost: the timeout answers */
	}
	bytes = PQunescapeBytea((const unsigned char *)PQgetvalue(res, 0, 0),
				&len);
	PQclear(res);
	cpg_fwd_unlink(c, f);
	cpg_fwd_arm(c);
	f->cb(f->arg, bytes != NULL ? 0 : -1, bytes, len,
	      bytes != NULL ? NULL : "out of memory");
	PQfreemem(bytes);
	free(f);
}

/* A forwarded request's time is up: no planner answered. */
static void
cpg_fwd_timer_cb(uv_timer_t *t)
{
	static const char sql[] = "DELETE FROM mailbox WHERE id = $1";
	struct cluster *c = t->data;
	int64_t now = cpg_mono_ms();
	struct cpg_fwd *f, *next;
	char why[512], id[32];
	const char *v[1] = { id };
	struct err err;

	for (f = c->fwd; f != NULL; f = next) {
		next = f->next;
		if (f->deadline > now)
			continue;
		cpg_fwd_unlink(c, f);
		snprintf(id, sizeof id, "%" PRId64, f->id);
		PQclear(c->pg != NULL ? cpg_q(c, sql, 1, v, &err) : NULL);
		if (!c->db_ok)
			snprintf(why, sizeof why, "the state store cannot be"
				 " reached (%s): this node cannot ask the"
				 " planner", c->db_error);
		else if (c->planner[0] == '\0')
			snprintf(why, sizeof why, "no planner: no node has"
				 " held the lease for %" PRId64 " ms; check"
				 " that the nodes are running", f->timeout_ms);
		else
			snprintf(why, sizeof why, "the planner (node \"%s\")"
				 " did not answer within %" PRId64 " ms",
				 c->planner, f->timeout_ms);
		f->cb(f->arg, -1, NULL, 0, why);
		free(f);
	}
	cpg_fwd_arm(c);
}

/*
 * The lease moved on while forwarded requests wait: the planner they
 * went to (the holder at the first heartbeat after each was sent) can no
 * longer answer (deposed, it restarts in place; dead, it never will), so
 * each fails now, saying so, instead of at its timeout, which may be
 * long (a request that runs a proof first, control.c).  One sent just as
 * the lease moved is known by the next heartbeat's generation.
 */
static void
cpg_fwd_lease(struct cluster *c, const struct lease_row *row)
{
	static const char sql[] = "DELETE FROM mailbox WHERE id = $1";
	struct cpg_fwd *f, *next;
	char why[512], id[32];
	const char *v[1] = { id };
	struct err err;

	for (f = c->fwd; f != NULL; f = next) {
		next = f->next;
		if (f->generation == 0 || f->generation == row->generation) {
			f->generation = row->generation;
			continue;
		}
		cpg_fwd_unlink(c, f);
		snprintf(id, sizeof id, "%" PRId64, f->id);
		PQclear(c->pg != NULL ? cpg_q(c, sql, 1, v, &err) : NULL);
		snprintf(why, sizeof why, "the planner changed while it"
			 " handled the request (lease generation %" PRId64
			 ", now %" PRId64 " held by \"%s\"): its answer cannot"
			 " come back; see status and runs for what it did",
			 f->generation, row->generation, row->holder);
		f->cb(f->arg, -1, NULL, 0, why);
		free(f);
	}
	cpg_fwd_arm(c);
}

/* Listen for results and requests while planner only (workers would
 * only be woken by them); after starting to, collect once what came
 * before. */
void
cpg_listen(struct cluster *c)
{
	bool want = c->role == CLUSTER_PLANNER;
	struct err err;
	PGresult *res;

	if (c->pg == NULL || c->listen_planner == want)
		return;
	res = cpg_q(c, want ? "LISTEN bf_done; LISTEN bf_mail" :
		    "UNLISTEN bf_done; UNLISTEN bf_mail", 0, NULL, &err);
	if (res == NULL)
		return;
	PQclear(res);
	c->listen_planner = want;
	if (want) {
		c->ev_done = c->ev_mail = true;
		cpg_kick(c);
	}
}

/* ------------------------------------------------------------------ */
/* The kick: events to the daemon                                      */
/* ------------------------------------------------------------------ */

/* Deliver what happened, in order: database, fencing, role, work. */
void
cpg_kick_cb(uv_idle_t *t)
{
	struct cluster *c = t->data;
	const struct cluster_cbs *cb = &c->cbs;
	struct cpg_fwd *f, *next;

	uv_idle_stop(&c->kick);
	cpg_listen(c);
	if (c->ev_db) {
		c->ev_db = false;
		if (cb->db_cb != NULL)
			cb->db_cb(cb->data, c->db_ok, c->db_ok ? NULL :
				  c->db_error);
	}
	if (c->ev_fenced_old > 0) {
		int64_t old = c->ev_fenced_old;

		c->ev_fenced_old = 0;
		if (cb->fenced_cb != NULL)
			cb->fenced_cb(cb->data, old, c->incarnation);
	}
	if (c->ncancel > 0) {
		int64_t *ids = c->cancel;
		size_t n = c->ncancel, i;

		c->cancel = NULL;
		c->ncancel = 0;
		for (i = 0; i < n && cb->cancel_cb != NULL; i++)
			cb->cancel_cb(cb->data, ids[i]);
		free(ids);
	}
	if (c->ev_role) {
		c->ev_role = false;
		if (cb->role_cb != NULL)
			cb->role_cb(cb->data, c->role, c->generation);
	}
	if (c->ev_work) {
		c->ev_work = false;
		if (cb->work_cb != NULL && c->role != CLUSTER_OFFLINE)
			cb->work_cb(cb->data);
	}
	if (c->ev_done) {
		c->ev_done = false;
		if (cb->done_cb != NULL && c->role == CLUSTER_PLANNER)
			cb->done_cb(cb->data);
	}
	if (c->ev_mail) {
		c->ev_mail = false;
		if (cb->mail_cb != NULL && c->role == CLUSTER_PLANNER)
			cb->mail_cb(cb->data);
	}
	for (f = c->fwd; f != NULL; f = next) {
		next = f->next;
		if (f->answered)
			cpg_fwd_fetch(c, f);
	}
}

/* ------------------------------------------------------------------ */
/* The driver                                                          */
/* ------------------------------------------------------------------ */

/* Open: handles, first connection and registration, heartbeat. */
static int
cpg_open(uv_loop_t *loop, const struct cluster_opts *o,
	 const struct cluster_cbs *cbs, struct cluster **out, struct err *err)
{
	struct cluster *c = xcalloc(1, sizeof *c);

	*out = NULL;
	if (o->lease_s < 1 || strlen(o->node) >= sizeof c->node) {
		free(c);
		return err_set(err, EXIT_BAD_INPUT, "cluster: bad node name or"
			       " lease");
	}
	c->loop = loop;
	c->cbs = *cbs;
	c->conninfo = xstrdup(o->conninfo);
	c->password_file = o->password_file ? xstrdup(o->password_file) : NULL;
	snprintf(c->node, sizeof c->node, "%s", o->node);
	snprintf(c->config_hash, sizeof c->config_hash, "%s",
		 o->config_hash ? o->config_hash : "");
	c->lease_s = o->lease_s;
	c->alive_until = o->alive_until;
	c->role = CLUSTER_OFFLINE;
	uv_timer_init(loop, &c->beat);
	uv_timer_init(loop, &c->deadline);
	uv_idle_init(loop, &c->kick);
	uv_timer_init(loop, &c->fwd_timer);
	c->beat.data = c->deadline.data = c->kick.data = c->fwd_timer.data = c;
	/* the first heartbeat now, so that open says how the database is */
	cpg_beat_cb(&c->beat);
	uv_timer_start(&c->beat, cpg_beat_cb,
		       (uint64_t)lease_heartbeat_ms(c->lease_s),
		       (uint64_t)lease_heartbeat_ms(c->lease_s));
	*out = c;
	return 0;
}

/* A handle of ours is closed. */
static void
cpg_handle_closed_cb(uv_handle_t *h)
{
	struct cluster *c = h->data;

	if (--c->nclosing == 0 && c->closed_cb != NULL)
		c->closed_cb(c->closed_arg);
}

/* Leave cleanly: claims handed back, lease released, node stopped. */
static void
cpg_leave(struct cluster *c)
{
	static const char sql[] =
		"WITH w AS (UPDATE work SET state = 'done', failed = true,"
		"  interrupted = true, finished_at = now(),"
		"  error = 'interrupted: node ' || $1 || ' stopped'"
		"  WHERE claimed_by = $1 AND incarnation = $2"
		"  AND state = 'claimed' RETURNING 1),"
		" l AS (UPDATE lease SET holder = NULL, expires_at = now()"
		"  WHERE id = 1 AND holder = $1 AND generation = $3 RETURNING 1),"
		" s AS (UPDATE nodes SET role = 'stopped', running = 0,"
		"  last_seen = now() WHERE name = $1 AND incarnation = $2"
		"  RETURNING 1),"
		" n AS (SELECT pg_notify('bf_done', '')"
		"  WHERE EXISTS (SELECT 1 FROM w))"
		" SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM l),"
		" (SELECT count(*) FROM s), (SELECT count(*) FROM n)";
	char inc[32], gen[32];
	const char *v[3] = { c->node, inc, gen };
	struct err err;

	if (c->pg == NULL || c->incarnation == 0)
		return;
	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	snprintf(gen, sizeof gen, "%" PRId64,
		 c->role == CLUSTER_PLANNER ? c->generation : -1);
	PQclear(cpg_q(c, sql, 3, v, &err));
}

/* Close: leave, then close every handle; closed_cb once all are. */
static void
cpg_close(struct cluster *c, void (*closed_cb)(void *), void *arg)
{
	struct cpg_fwd *f;

	cpg_leave(c);
	c->closing = true;
	while ((f = c->fwd) != NULL) {
		c->fwd = f->next;
		f->cb(f->arg, -1, NULL, 0, "the daemon is stopping");
		free(f);
	}
	if (c->poll != NULL) {
		uv_poll_stop(c->poll);
		uv_close((uv_handle_t *)c->poll, cpg_poll_closed_cb);
		c->poll = NULL;
	}
	if (c->pg != NULL)
		PQfinish(c->pg);
	c->pg = NULL;
	c->closed_cb = closed_cb;
	c->closed_arg = arg;
	c->nclosing = 4;
	uv_close((uv_handle_t *)&c->beat, cpg_handle_closed_cb);
	uv_close((uv_handle_t *)&c->deadline, cpg_handle_closed_cb);
	uv_close((uv_handle_t *)&c->kick, cpg_handle_closed_cb);
	uv_close((uv_handle_t *)&c->fwd_timer, cpg_handle_closed_cb);
}

/* Free a closed cluster. */
static void
cpg_free(struct cluster *c)
{
	if (c == NULL)
		return;
	free(c->conninfo);
	free(c->password_file);
	free(c->cancel);
	free(c->taken);
	free(c);
}

/* The running count the next heartbeat writes. */
static void
cpg_set_running(struct cluster *c, int running)
{
	c->running = running;
}

/* A new lease length (reload): the next heartbeat, a third of it away,
 * renews or takes the lease for that long. */
static void
cpg_set_lease(struct cluster *c, int64_t lease_s)
{
	uint64_t hb;

	if (lease_s < 1 || lease_s == c->lease_s)
		return;
	c->lease_s = lease_s;
	hb = (uint64_t)lease_heartbeat_ms(lease_s);
	uv_timer_start(&c->beat, cpg_beat_cb, hb, hb);
}

/* The configuration hash the next heartbeat writes. */
static void
cpg_set_config_hash(struct cluster *c, const char *hash)
{
	snprintf(c->config_hash, sizeof c->config_hash, "%s", hash);
}

/* This node's view. */
static void
cpg_state(const struct cluster *c, struct cluster_state *st)
{
	memset(st, 0, sizeof *st);
	st->role = c->role;
	st->generation = c->generation;
	st->incarnation = c->incarnation;
	st->db_ok = c->db_ok;
	st->db_lost_ms = c->db_lost_ms;
	snprintf(st->db_error, sizeof st->db_error, "%s", c->db_error);
	snprintf(st->planner, sizeof st->planner, "%s", c->planner);
	if (c->role == CLUSTER_PLANNER)
		snprintf(st->prev_planner, sizeof st->prev_planner, "%s",
			 c->prev_planner);
	st->live_nodes = c->live_nodes;
}

/* Planner now, by the role and the local deadline (LEASE-2): the deadline
 * timer may not have fired yet (a process stopped, then continued). */
static bool
cpg_planner_now(struct cluster *c)
{
	if (c->role != CLUSTER_PLANNER)
		return false;
	if (cpg_mono_ms() < lease_local_deadline(c->renew_sent, c->lease_s))
		return true;
	cpg_deposed_late(c);
	return false;
}

/* Refuse a planner call on a node that is not planner. */
int
cpg_need_planner(struct cluster *c, struct err *err)
{
	if (c->role == CLUSTER_PLANNER)
		return 0;
	return err_set(err, EXIT_WORK_FAILED, "node %s is not the planner",
		       c->node);
}

const struct cluster_driver cluster_pg_driver = {
	.open = cpg_open,
	.close = cpg_close,
	.free = cpg_free,
	.set_running = cpg_set_running,
	.set_config_hash = cpg_set_config_hash,
	.set_lease = cpg_set_lease,
	.state = cpg_state,
	.offer = cpg_offer,
	.results = cpg_results,
	.forget = cpg_forget,
	.in_flight = cpg_in_flight,
	.work_rows = cpg_work_all,
	.claim_own = cpg_claim_own,
	.planner_now = cpg_planner_now,
	.resign = cpg_resign,
	.claim = cpg_claim,
	.finish = cpg_finish,
	.finish_claim = cpg_finish_claim,
	.nodes = cpg_nodes,
	.forward = cpg_forward,
	.mail_take = cpg_mail_take,
	.mail_answer = cpg_mail_answer,
	.work_free = cpg_work_free,
	.mail_free = cpg_mail_free,
};
