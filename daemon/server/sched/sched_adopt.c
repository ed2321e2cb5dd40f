/*
 * sched_adopt.c - the start of a new planner of several hosts
 * (docs/several-hosts.md): the runs an earlier planner left in flight are
 * adopted, not run again.  Before recovery, the runs rows left running
 * are matched with the cluster's work rows (adopt.h); recovery leaves the
 * matched ones running; once the manifest is loaded each adopted run is
 * rebuilt in memory as sched_run_begin would have left it (its items
 * running and counted against the caps, its runs rows, its executor's
 * run with this scheduler's done_cb) and handed to the remote, which
 * feeds it its result when the work row is done.
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "xalloc.h"

struct sched_adopt {
	struct store_running_row *runs; /* job and key allocated */
	size_t nruns, cap;
	long *owner; /* per runs row: its work row, or -1 */
	const struct adopt_row *rows;
	enum adopt_action *action;
	size_t nrows;
	int64_t *keep; /* the runs rows that stay running */
	size_t nkeep;
};

/* Collect one runs row left running. */
static void
sched_adopt_row_cb(const struct store_running_row *row, void *data)
{
	struct sched_adopt *ad = data;
	struct store_running_row *x;

	if (ad->nruns == ad->cap) {
		ad->cap = ad->cap ? ad->cap * 2 : 16;
		ad->runs = xreallocarray(ad->runs, ad->cap, sizeof *ad->runs);
	}
	x = &ad->runs[ad->nruns++];
	*x = *row;
	x->job = xstrdup(row->job ? row->job : "");
	x->key = xstrdup(row->key ? row->key : "");
}

int
sched_adopt_read(struct sched *s, const struct adopt_row *rows, size_t nrows,
		 enum adopt_action *action, struct sched_adopt **out,
		 struct err *err)
{
	struct sched_adopt *ad = xcalloc(1, sizeof *ad);
	struct adopt_run *ar;

	*out = ad;
	ad->rows = rows;
	ad->action = action;
	ad->nrows = nrows;
	if (store_running_runs(s->store, sched_adopt_row_cb, ad, err) < 0)
		return -1;
	ar = xcalloc(ad->nruns + 1, sizeof *ar);
	for (size_t i = 0; i < ad->nruns; i++) {
		ar[i].id = ad->runs[i].id;
		ar[i].job = ad->runs[i].job;
		ar[i].key = ad->runs[i].key;
		ar[i].job_known = config_job(s->cfg, ad->runs[i].job) != NULL;
	}
	ad->owner = xcalloc(ad->nruns + 1, sizeof *ad->owner);
	adopt_match(ar, ad->nruns, rows, nrows, ad->owner, action);
	free(ar);
	ad->keep = xcalloc(ad->nruns + 1, sizeof *ad->keep);
	for (size_t i = 0; i < ad->nruns; i++)
		if (ad->owner[i] >= 0)
			ad->keep[ad->nkeep++] = ad->runs[i].id;
	return 0;
}

void
sched_adopt_keep(const struct sched_adopt *ad, const int64_t **keep,
		 size_t *nkeep)
{
	*keep = ad->keep;
	*nkeep = ad->nkeep;
}

void
sched_adopt_free(struct sched_adopt *ad)
{
	if (ad == NULL)
		return;
	for (size_t i = 0; i < ad->nruns; i++) {
		free((char *)ad->runs[i].job);
		free((char *)ad->runs[i].key);
	}
	free(ad->runs);
	free(ad->owner);
	free(ad->keep);
	free(ad);
}

/* The loaded item of a runs row, or NULL. */
static struct item *
sched_adopt_item(struct sched *s, const struct store_running_row *x)
{
	struct request *rq = manifest_request_find(&s->m, x->request_id);

	for (size_t i = 0; rq != NULL && i < rq->n; i++)
		if (rq->items[i]->id == x->manifest_id)
			return rq->items[i];
	return NULL;
}

/* A runs row's place in its run: a batch by its key, then the work row's
 * own first, then by id. */
static size_t
sched_adopt_rank(const struct adopt_row *w, const struct store_running_row *x)
{
	for (size_t k = 0; k < w->nkeys; k++)
		if (strcmp(w->keys[k], x->key) == 0)
			return k;
	return w->nkeys;
}

/* The runs rows of work row k, in their run's order; how many. */
static size_t
sched_adopt_members(const struct sched_adopt *ad, size_t k, size_t *idx)
{
	const struct adopt_row *w = &ad->rows[k];
	size_t n = 0;

	for (size_t i = 0; i < ad->nruns; i++) {
		const struct store_running_row *x = &ad->runs[i];
		size_t j = n;

		if (ad->owner[i] != (long)k)
			continue;
		/* insertion: (rank, not the work row's own, id) */
		while (j > 0) {
			const struct store_running_row *y = &ad->runs[idx[j - 1]];
			size_t rx = sched_adopt_rank(w, x), ry =
			    sched_adopt_rank(w, y);

			if (ry < rx || (ry == rx && (y->id == w->id ||
			    (x->id != w->id && y->id < x->id))))
				break;
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = i;
		n++;
	}
	return n;
}

/* Build the core's run of work row k from its runs rows; NULL when the
 * manifest does not hold them as an earlier planner left them. */
static struct run *
sched_adopt_run(struct sched *s, const struct sched_adopt *ad, size_t k,
		const size_t *idx, size_t n, char *why, size_t len)
{
	const struct adopt_row *w = &ad->rows[k];
	struct run *r = xcalloc(1, sizeof *r);

	r->items = xcalloc(n, sizeof *r->items);
	r->cap = n;
	r->batch = w->nkeys > 1;
	for (size_t i = 0; i < n; i++) {
		const struct store_running_row *x = &ad->runs[idx[i]];
		struct item *it = sched_adopt_item(s, x);

		if (it == NULL || it->state != MS_RUNNING || it->run != NULL ||
		    it->job < 0) {
			snprintf(why, len, "its partition %s is not running in"
				 " the open manifest", x->key);
			manifest_run_free(r);
			return NULL;
		}
		r->items[r->nitems++] = it;
	}
	if (r->batch ? n != w->nkeys : n > 1 && strcmp(r->items[0]->key,
						       r->items[n - 1]->key)) {
		snprintf(why, len, "its %zu runs rows do not match its %zu"
			 " partitions", n, w->nkeys);
		manifest_run_free(r);
		return NULL;
	}
	r->job = r->items[0]->job;
	snprintf(r->job_name, sizeof r->job_name, "%s", r->items[0]->job_name);
	return r;
}

/* Where an adopted run is, for the log. */
static const char *
sched_adopt_where(const struct adopt_row *w, char *buf, size_t len)
{
	switch (w->state) {
	case ADOPT_OFFERED:
		return "on offer";
	case ADOPT_CLAIMED:
		snprintf(buf, len, "running on node %s", w->node ? w->node :
			 "?");
		return buf;
	case ADOPT_DONE:
		break;
	}
	return "ended, its result to be read";
}

/* A run that cannot be adopted after all: its rows failed, its items
 * queued again (as recovery would have), its work row given up. */
static void
sched_adopt_drop(struct sched *s, struct sched_adopt *ad, size_t k,
		 const size_t *idx, size_t n, const char *why)
{
	int64_t now = clock_now_ms();
	struct err err;

	ad->action[k] = adopt_orphan(ad->rows[k].state);
	log_err("job=%s run=%" PRId64 " cannot be adopted: %s; queued again",
		ad->rows[k].job, ad->rows[k].id, why);
	if (store_defer(s->store, &err) < 0 || store_begin(s->store, &err) < 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		struct item *it = sched_adopt_item(s, &ad->runs[idx[i]]);

		if (store_run_finish(s->store, ad->runs[idx[i]].id, MS_FAILED,
				     now, "interrupted: the planner changed;"
				     " queued again", -1, &err) < 0)
			goto fail_tx;
		if (it != NULL && it->state == MS_RUNNING && it->run == NULL) {
			manifest_set(&s->m, it, MS_QUEUED);
			if (sched_item_store(s, it, NULL, now, &err) < 0)
				goto fail_tx;
		}
	}
	if (sched_tx_end(s, 0, &err) == 0)
		return;
	goto fail;
fail_tx:
	sched_tx_end(s, -1, &err);
fail:
	log_err("job=%s run=%" PRId64 " cannot be queued again: %s",
		ad->rows[k].job, ad->rows[k].id, err.msg);
}

/* Adopt work row k's run. */
static void
sched_adopt_one(struct sched *s, struct sched_adopt *ad, size_t k,
		size_t *idx)
{
	const struct adopt_row *w = &ad->rows[k];
	size_t n = sched_adopt_members(ad, k, idx);
	char why[256], where[128];
	struct active *a;
	struct run *r;

	if ((r = sched_adopt_run(s, ad, k, idx, n, why, sizeof why)) == NULL) {
		sched_adopt_drop(s, ad, k, idx, n, why);
		return;
	}
	a = xcalloc(1, sizeof *a);
	a->s = s;
	a->mr = r;
	a->started_at = ad->runs[idx[0]].started_at;
	r->data = a;
	a->run.run_id = w->id;
	if (r->batch || r->nitems > 1) {
		a->run_ids = xcalloc(r->nitems, sizeof *a->run_ids);
		for (size_t i = 0; i < r->nitems; i++)
			a->run_ids[i] = ad->runs[idx[i]].id;
	}
	manifest_run_adopt(&s->m, r);
	sched_run_fill(s, a);
	log_notice("job=%s partition=%s%s%s request=%" PRId64 " run=%" PRId64
		   " attempt=%d adopted from the earlier planner: %s",
		   r->job_name, r->items[0]->key, r->nitems > 1 ? ".." : "",
		   r->nitems > 1 ? r->items[r->nitems - 1]->key : "",
		   r->items[0]->rq->id, w->id, r->items[0]->attempts,
		   sched_adopt_where(w, where, sizeof where));
	s->remote->adopt(s->remote->data, &a->run);
}

void
sched_set_previous_planner(struct sched *s, const char *node)
{
	snprintf(s->prev_planner, sizeof s->prev_planner, "%s",
		 node != NULL ? node : "");
}

/*
 * A runs row left running that no work row carries was never offered:
 * the earlier planner ran it itself (its share, docs/several-hosts.md)
 * and died with it, or it died between its commit and its offer, or its
 * offer was refused, or it withdrew the offer and died before recording
 * that.  (Results are committed before their work rows are deleted, so
 * a run that ended is not among them.)  Recovery queued its item again;
 * as nobody runs it now, no attempt is counted, as for a run that could
 * not start, and its row says why: the earlier planner's node stopped,
 * when the lease says which node that was.
 */
static void
sched_adopt_unoffered(struct sched *s, struct sched_adopt *ad)
{
	int64_t now = clock_now_ms();
	char error[ERR_MSG_MAX];
	struct err err;
	int n = 0;

	if (s->prev_planner[0] != '\0')
		snprintf(error, sizeof error, "interrupted: node %s stopped"
			 " (the planner); queued again", s->prev_planner);
	else
		snprintf(error, sizeof error, "interrupted: the planner stopped"
			 " before offering it; queued again");

	if (store_defer(s->store, &err) < 0 || store_begin(s->store, &err) < 0)
		goto fail;
	for (size_t i = 0; i < ad->nruns; i++) {
		if (ad->owner[i] >= 0 ||
		    config_job(s->cfg, ad->runs[i].job) == NULL)
			continue;
		if (store_run_finish(s->store, ad->runs[i].id, MS_FAILED, now,
				     error, -1, &err) < 0)
			goto fail_tx;
		/* (recovery counted no attempt for it: store_recover) */
		n++;
	}
	if (sched_tx_end(s, 0, &err) < 0)
		goto fail;
	if (n > 0)
		log_warn("%d runs the earlier planner%s%s started but never"
			 " offered, or ran itself, are queued again, no attempt"
			 " counted", n, s->prev_planner[0] ? " " : "",
			 s->prev_planner);
	return;
fail_tx:
	sched_tx_end(s, -1, &err);
fail:
	log_err("cannot record the runs the earlier planner never offered:"
		" %s", err.msg);
}

void
sched_adopt_apply(struct sched *s, struct sched_adopt *ad)
{
	size_t *idx = xcalloc(ad->nruns + 1, sizeof *idx);

	sched_adopt_unoffered(s, ad);

	for (size_t k = 0; k < ad->nrows; k++)
		if (ad->action[k] == ADOPT_KEEP)
			sched_adopt_one(s, ad, k, idx);
	free(idx);
}

void
sched_hand_over(struct sched *s)
{
	struct run *r;
	int n = 0;

	while ((r = s->m.runs.next) != &s->m.runs) {
		struct active *a = r->data;

		manifest_run_finish(&s->m, r);
		for (size_t i = 0; i < r->nitems; i++)
			r->items[i]->run = NULL;
		exec_run_clear_results(&a->run);
		config_unref(a->run.cfg);
		sched_active_free(a);
		n++;
	}
	if (n > 0)
		log_notice("%d runs in flight are left to the next planner", n);
	if (s->draining && s->idle_cb != NULL)
		s->idle_cb(s->idle_data);
}
