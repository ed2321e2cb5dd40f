/*
 * cluster_worker.c - the daemon's side of several hosts (cluster_worker.h,
 * docs/several-hosts.md).
 *
 * Planner: the scheduler's remote (scheduler.h): each run sched_run_begin
 * recorded is kept here by its run id and offered, in one batch per loop
 * turn.  done_cb reads the results, records them (committed), then
 * deletes their rows, calling each run's done_cb, the chain a local run
 * takes; an interrupted row (its node was declared dead) ends as not
 * started: queued again, no attempt counted.  A new planner adopts the
 * runs an earlier one left in flight (cworker_takeover_cb); a planner
 * that stops hands them over (cworker_stop).
 *
 * The planner runs its share itself (lease_share): a run it may run while
 * it runs fewer than its share goes to its own executor, with no work row
 * (cworker_run_here), once its runs rows are committed (next loop turn,
 * as an offer), and its result reaches the scheduler as a worker's would
 * (encoded, then decoded).  Deposed, it cancels them and
 * drops their results (the next planner queues them again); stopping
 * while others live, it makes them its claims (cworker_hand_own).
 *
 * Worker (every node, the planner too): once per loop turn, one statement
 * finishes the runs ended since the last turn and claims what it may run
 * while it has room (max_concurrency); it runs them on the executor.  A
 * finish the database did not take is tried again when it is back.
 *
 * The result a worker records carries what a local run's result gives
 * the scheduler (runresult.h): checks and guardrail figures too, so that
 * audit and guardrails read the same wherever the run ran.
 */
#include "cluster_worker_int.h"

static void
cworker_pump_cb(uv_timer_t *t)
{
	struct cworker *w = t->data;

	if (w->closing && w->closed_cb != NULL && w->nlocal == 0) {
		cworker_exchange(w); /* the finishes still to send */
		cworker_shut(w);
		return;
	}
	cworker_end_cancels(w);
	if (w->nunsent > 0)
		cworker_offer(w); /* commits the turn: own runs' rows too */
	cworker_start_own(w);
	cworker_exchange(w);
}

/* store_pg_fence (store_pg.h) from the PostgreSQL module. */
static void
cworker_fence(struct cworker *w, int64_t gen)
{
	static void (*fence)(struct store *, int64_t);
	char why[256];

	if (fence == NULL)
		*(void **)&fence = module_symbol("store_pg_fence", "the"
						 " PostgreSQL state store", why,
						 sizeof why);
	if (fence != NULL)
		fence(w->store, gen);
}

/*
 * A new planner adopts the runs an earlier one left in flight
 * (docs/several-hosts.md, adopt.h): it reads the work table and starts
 * the scheduler with the runs rows those rows carry kept running, handed
 * back here by cworker_adopt, so that their results are recorded through
 * their done_cb as this planner's own; a claim of a dead node is reaped
 * into an interrupted result as ever.  The rows that carry no run the
 * store holds running are given up: offers withdrawn, done rows deleted,
 * claims asked to stop.  Until then nothing is collected, planned or
 * answered; a read that fails is tried again CWORKER_TAKEOVER_MS later.
 */
static void cworker_mail_cb(void *data);

#define CWORKER_TAKEOVER_MS 300

/* Withdraw, stop or delete the rows the scheduler did not adopt. */
static void
cworker_give_up(struct cworker *w, const struct cluster_work *rows,
		const enum adopt_action *act, size_t n)
{
	int64_t *ids = xcalloc(n + 1, sizeof *ids);
	size_t nids = 0;
	struct err err;

	for (size_t i = 0; i < n; i++) {
		if (act[i] == ADOPT_KEEP)
			continue;
		ids[nids++] = rows[i].id;
		if (act[i] != ADOPT_DROP)
			log_warn("run=%" PRId64 " job=%s: %s by the earlier"
				 " planner, but not running in the state store:"
				 " %s", rows[i].id, rows[i].job,
				 act[i] == ADOPT_WITHDRAW ? "offered" :
				 "claimed", act[i] == ADOPT_WITHDRAW ?
				 "withdrawn" : "its node is asked to stop it");
	}
	if (nids > 0 && w->drv->forget(w->c, ids, nids, &err) < 0)
		log_warn("cannot give up %zu rows of the work table: %s", nids,
			 err.msg);
	free(ids);
}

/* The state of a work row for adopt.h. */
static enum adopt_work
cworker_work_state(const struct cluster_work *x)
{
	if (strcmp(x->state, "offered") == 0)
		return ADOPT_OFFERED;
	if (strcmp(x->state, "claimed") == 0)
		return ADOPT_CLAIMED;
	return ADOPT_DONE;
}

static void
cworker_takeover_cb(uv_timer_t *t)
{
	struct cworker *w = t->data;
	struct cluster_work *rows = NULL;
	struct adopt_row *ar;
	enum adopt_action *act;
	struct cluster_state st;
	size_t n = 0, kept = 0;
	struct err err;
	int rc;

	if (!w->taking_over || w->closing)
		return;
	if (w->drv->work_rows(w->c, &rows, &n, &err) < 0) {
		log_warn("cannot read the work in flight: %s", err.msg);
		uv_timer_start(&w->takeover, cworker_takeover_cb,
			       CWORKER_TAKEOVER_MS, 0);
		return;
	}
	ar = xcalloc(n + 1, sizeof *ar);
	act = xcalloc(n + 1, sizeof *act); /* ADOPT_KEEP: nothing given up */
	for (size_t i = 0; i < n; i++)
		ar[i] = (struct adopt_row){rows[i].id,
			cworker_work_state(&rows[i]), rows[i].job,
			(const char *const *)rows[i].keys, rows[i].nkeys,
			rows[i].claimed_by};
	w->taking_over = false;
	w->planner_once = true;
	w->drv->state(w->c, &st);
	sched_set_previous_planner(w->sched, st.prev_planner);
	w->adopting = true;
	rc = sched_start_adopt(w->sched, ar, n, act, &err);
	w->adopting = false;
	if (rc < 0) {
		log_err("cannot start planning: %s", err.msg);
	} else if (n > 0) {
		cworker_give_up(w, rows, act, n);
		for (size_t i = 0; i < n; i++)
			kept += act[i] == ADOPT_KEEP;
		log_notice("%zu runs in flight adopted from the earlier planner"
			   " (%zu rows of the work table given up)", kept,
			   n - kept);
	}
	free(act);
	free(ar);
	w->drv->work_free(rows, n);
	cworker_kick(w);
	cworker_collect(w); /* results that came meanwhile */
	cworker_mail_cb(w); /* what waited meanwhile */
}

/* role_cb */
static void
cworker_role_cb(void *data, enum cluster_role role, int64_t gen)
{
	struct cworker *w = data;

	log_notice("this node is now %s%s", cluster_role_name(role),
		   role == CLUSTER_PLANNER ? " (it holds the lease)" : "");
	w->offers_maybe = true;
	if (role != CLUSTER_PLANNER) {
		/* a planner handing over keeps its fence: it writes nothing
		 * more to the state store */
		if (!w->closing)
			cworker_fence(w, 0);
		w->taking_over = false;
		uv_timer_stop(&w->takeover);
		if (w->planner_once)
			cworker_drop_own(w, "deposed");
		if (w->planner_once && w->o.deposed_cb != NULL)
			w->o.deposed_cb(w->o.data);
		/* still here (stopping): the runs whose results were dropped
		 * would never end; forget them all, as a hand-over does */
		if (w->planner_once && w->ndropped > 0)
			cworker_forget_all(w);
	} else {
		cworker_fence(w, gen);
		if (!w->planner_once && !w->taking_over) {
			w->taking_over = true;
			cworker_takeover_cb(&w->takeover);
		}
		cworker_kick(w);
	}
	if (w->o.changed_cb != NULL)
		w->o.changed_cb(w->o.data);
}

/* mail_cb */
static void
cworker_mail_cb(void *data)
{
	struct cworker *w = data;

	/* a new planner answers once it plans (cworker_takeover_cb) */
	if (w->o.mail_cb != NULL && w->planner_once)
		w->o.mail_cb(w->o.data);
}

/* work_cb */
static void
cworker_work_cb(void *data)
{
	struct cworker *w = data;

	w->offers_maybe = true;
	cworker_kick(w);
}

/* fenced_cb: every claimed run is forgotten. */
static void
cworker_fenced_cb(void *data, int64_t old_inc, int64_t new_inc)
{
	struct cworker *w = data;

	log_warn("this node was declared dead (incarnation %" PRId64 ", now %"
		 PRId64 "): its runs are cancelled and run again elsewhere",
		 old_inc, new_inc);
	w->offers_maybe = true;
	for (struct local *l = w->locals; l != NULL; l = l->next) {
		l->discard = true;
		if (!l->done)
			exec_cancel(w->exec, &l->run);
	}
}

/* db_cb */
static void
cworker_db_cb(void *data, bool ok, const char *why)
{
	struct cworker *w = data;

	/* the first connection also reports ok: only a loss makes it "again" */
	if (ok && w->db_lost)
		log_notice("the state store is reachable again");
	else if (!ok)
		log_warn("the state store is lost: %s", why ? why : "?");
	w->db_lost = !ok;
	if (ok) {
		/* a new connection has missed the notifications sent while
		 * there was none: an offer may wait */
		w->offers_maybe = true;
		cworker_kick(w);
	}
	if (w->o.changed_cb != NULL)
		w->o.changed_cb(w->o.data);
}

/* cancel_cb */
static void
cworker_cancel_cb(void *data, int64_t id)
{
	struct cworker *w = data;

	for (struct local *l = w->locals; l != NULL; l = l->next)
		if (l->id == id && !l->done)
			exec_cancel(w->exec, &l->run);
}

/* log_cb: the layer's lines already say "cluster: node=..." */
static void
cworker_log_cb(void *data, int prio, const char *line)
{
	(void)data;
	if (prio <= 3)
		log_err("%s", line);
	else if (prio == 4)
		log_warn("%s", line);
	else if (prio == 5)
		log_notice("%s", line);
	else if (prio == 6)
		log_info("%s", line);
	else
		log_debug("%s", line);
}

const struct cluster_driver *
cworker_driver(void)
{
	static const struct cluster_driver *drv;
	char why[256];

	if (drv == NULL && (drv = cluster_driver_load(why, sizeof why)) ==
	    NULL)
		log_err("%s", why);
	return drv;
}

int
cworker_open(const struct cworker_opts *o, struct cworker **out,
	     struct err *err)
{
	struct cworker *w = xcalloc(1, sizeof *w);
	struct config *cfg = sched_config(o->sched);
	struct cluster_opts co = {cfg->state_conninfo, cfg->state_password_file,
		cfg->node, cfg->lease, cfg->cluster_hash,
		exec_fence_clock(o->exec)};
	struct cluster_cbs cbs = {cworker_role_cb, cworker_work_cb,
		cworker_collect, cworker_mail_cb, cworker_fenced_cb, cworker_db_cb,
		cworker_cancel_cb, cworker_log_cb, w};
	char why[256];

	w->o = *o;
	w->loop = o->loop;
	w->sched = o->sched;
	w->store = o->store;
	w->exec = o->exec;
	w->log_dir = xstrdup(o->log_dir);
	w->offers_maybe = true;
	if ((w->drv = cluster_driver_load(why, sizeof why)) == NULL) {
		free(w->log_dir);
		free(w);
		return err_set(err, EXIT_BAD_INPUT, "%s", why);
	}
	uv_timer_init(o->loop, &w->pump);
	w->pump.data = w;
	uv_timer_init(o->loop, &w->takeover);
	w->takeover.data = w;
	uv_timer_init(o->loop, &w->retry);
	w->retry.data = w;
	w->pump.timer_cb = cworker_pump_cb;
	w->remote = (struct sched_remote){cworker_submit, cworker_cancel,
		cworker_adopt, w};
	sched_set_remote(o->sched, &w->remote);
	if (w->drv->open(o->loop, &co, &cbs, &w->c, err) < 0) {
		uv_close((uv_handle_t *)&w->pump, NULL);
		uv_close((uv_handle_t *)&w->takeover, NULL);
		uv_close((uv_handle_t *)&w->retry, NULL);
		return -1;
	}
	*out = w;
	return 0;
}

void
cworker_reload(struct cworker *w)
{
	struct config *cfg = sched_config(w->sched);

	w->drv->set_config_hash(w->c, cfg->cluster_hash);
	w->drv->set_lease(w->c, cfg->lease);
	cworker_kick(w);
}

/* Forget every run of the scheduler without recording anything (their
 * runs rows stay running, for the next planner). */
void
cworker_forget_all(struct cworker *w)
{
	w->noffered = w->nunsent = w->ncancels = 0;
	w->ndropped = 0;
	sched_hand_over(w->sched);
}

/*
 * A planner stopping while others live: the runs it runs itself become
 * its claims (one fenced statement, their runs rows committed first), so
 * that they go on here, finish through the work table and the next
 * planner adopts them.  When that fails (deposed, the database lost),
 * they are cancelled and their results dropped: the next planner queues
 * them again.
 */
static void
cworker_hand_own(struct cworker *w)
{
	struct cluster_offer *o;
	const char **keys;
	size_t n = 0, nk = 0;
	struct local *l;
	struct err err;

	for (l = w->locals; l != NULL; l = l->next)
		if (l->own && l->direct != NULL) {
			n++;
			nk += l->run.nparts;
		}
	if (n == 0)
		return;
	o = xcalloc(n, sizeof *o);
	keys = xcalloc(nk + 1, sizeof *keys);
	n = nk = 0;
	for (l = w->locals; l != NULL; l = l->next) {
		if (!l->own || l->direct == NULL)
			continue;
		o[n].id = l->id;
		o[n].request = l->run.ncommits > 0 ? l->run.commits[0].request :
			       0;
		o[n].job = l->run.job->name;
		o[n].keys = &keys[nk];
		o[n].nkeys = l->run.nparts;
		o[n].attempt = l->run.attempt;
		for (size_t k = 0; k < l->run.nparts; k++)
			keys[nk++] = l->run.parts[k].key;
		n++;
	}
	if (sched_flush(w->sched) < 0)
		snprintf(err.msg, sizeof err.msg, "the state store cannot be"
			 " written");
	else if (w->drv->claim_own(w->c, o, n, &err) == 0)
		err.msg[0] = '\0';
	free(keys);
	free(o);
	if (err.msg[0] != '\0') {
		log_warn("%zu runs this planner runs itself cannot be handed"
			 " over: %s", n, err.msg);
		cworker_drop_own(w, "not handed over");
		return;
	}
	for (l = w->locals; l != NULL; l = l->next)
		if (l->own && l->direct != NULL) {
			l->own = false;
			l->direct = NULL;
		}
	log_notice("%zu runs this planner runs itself are handed over: they"
		   " go on as this node's claims, for the next planner", n);
}

/*
 * A planner that stops hands over (docs/several-hosts.md): the runs it
 * recorded but has not offered yet are offered, the runs it runs itself
 * become its claims (cworker_hand_own), then it forgets every run in
 * flight without recording anything (their runs rows stay running),
 * releases the lease and never takes it again; the next planner adopts
 * them.  Its claimed runs go on until they end or the shutdown grace is
 * over, and their results wait in the work table for that planner.
 */
void
cworker_stop(struct cworker *w)
{
	w->closing = true;
	if (w->planner_once) {
		/* deposed meanwhile: the offer fails, the runs are the
		 * planner's now all the same */
		cworker_offer(w);
		if (w->nunsent > 0)
			log_warn("%zu runs recorded but not offered are queued"
				 " again by the next planner", w->nunsent);
		cworker_start_own(w);
		cworker_hand_own(w);
		cworker_forget_all(w);
	}
	w->drv->resign(w->c);
}

bool
cworker_others_alive(struct cworker *w)
{
	const struct config *cfg = sched_config(w->sched);
	struct cluster_node *nodes = NULL;
	size_t n = 0;
	int64_t now;
	struct err err;
	bool any = false;

	if (w->drv->nodes(w->c, &nodes, &n, &now, &err) < 0) {
		log_warn("cannot list the nodes: %s; stopping as a single"
			 " host", err.msg);
		return false;
	}
	for (size_t i = 0; i < n && !any; i++)
		any = strcmp(nodes[i].name, cfg->node) != 0 &&
		      strcmp(nodes[i].role, "stopped") != 0 &&
		      !lease_node_dead(nodes[i].last_seen_ms, now, cfg->lease);
	free(nodes);
	return any;
}

void
cworker_close(struct cworker *w, void (*cb)(void *), void *arg)
{
	w->closing = true;
	w->closed_cb = cb;
	w->closed_arg = arg;
	/* not at once: this may be called from a run's done_cb inside
	 * cworker_collect, whose statements still follow on the connection;
	 * the pump sends the finishes still to send and shuts */
	if (w->nlocal == 0)
		cworker_kick(w);
}

void
cworker_resign(struct cworker *w)
{
	w->drv->resign(w->c);
}

void
cworker_cancel_all(struct cworker *w)
{
	for (struct local *l = w->locals; l != NULL; l = l->next)
		if (!l->done)
			exec_cancel(w->exec, &l->run);
}

void
cworker_free(struct cworker *w)
{
	while (w->locals != NULL)
		cworker_local_free(w, w->locals);
	w->drv->free(w->c);
	free(w->offered);
	free(w->cancels);
	free(w->log_dir);
	free(w);
}

int
cworker_running(const struct cworker *w)
{
	return w->nlocal;
}

struct cluster *
cworker_cluster(struct cworker *w)
{
	return w->c;
}
