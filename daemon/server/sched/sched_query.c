/*
 * sched_query.c - what the scheduler tells without changing anything
 * (reads never write): a job's live view for status, its open partitions
 * for map, the requests in memory, warehouse reachability, and staleness
 * (downstream partitions older than their inputs); the commands' reads
 * of the state store (sched_read_*: a command calls the scheduler, never
 * the store).
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fresh.h"
#include "lineage.h"
#include "schedule.h"
#include "xalloc.h"

bool
sched_partition_running(struct sched *s, const char *job, const char *key,
			int *attempt, int64_t *request, int64_t *run_id)
{
	for (struct item *it = *manifest_bucket(&s->m, job, key); it != NULL;
	     it = it->hnext)
		if (manifest_same(it, job, key) && it->state == MS_RUNNING) {
			struct active *a = it->run != NULL ? it->run->data :
					   NULL;

			*attempt = it->attempts;
			*request = it->rq->id;
			if (run_id != NULL)
				*run_id = a != NULL ? a->run.run_id : 0;
			return true;
		}
	return false;
}

bool
sched_partition_queued(struct sched *s, const char *job, const char *key)
{
	for (struct item *it = *manifest_bucket(&s->m, job, key); it != NULL;
	     it = it->hnext)
		if (manifest_same(it, job, key) && it->state == MS_QUEUED)
			return true;
	return false;
}

uv_loop_t *
sched_loop(struct sched *s)
{
	return s->loop;
}

const char *
sched_log_dir(struct sched *s)
{
	return s->log_dir;
}

void
sched_job_view(struct sched *s, int job, struct sched_job_view *v)
{
	const struct job_def *j = &s->cfg->jobs[job];
	struct jobstate *js = sched_jobstate_of(s, job);
	struct schedule_view sv;
	struct err err;

	memset(v, 0, sizeof *v);
	schedule_view(j, &js->st, clock_now(), &sv);
	v->paused = js->st.paused;
	v->has_watermark = sv.has_watermark;
	v->watermark = sv.watermark;
	v->catchup = sv.catchup;
	v->has_gap = sv.has_gap;
	v->gap_from = sv.gap_from;
	v->gap_to = sv.gap_to;
	v->has_next_due = sv.has_next_due;
	v->next_due = sv.next_due;
	v->budget_stops = js->budget_stops;
	v->has_reconciled = js->st.has_reconciled &&
	    cal_parse_key(job_cal(j), js->st.reconciled, &v->reconciled,
			   &err) == 0;
	if (j->late_data != NULL) {
		v->has_sensor = true;
		v->has_last_check = js->st.has_late_checked;
		v->last_check_ms = js->st.late_checked_at;
		v->next_check = sched_sensor_next(s, j, js);
		v->found = js->st.late_found;
		v->sensor_error =
		    js->st.late_error[0] ? js->st.late_error : NULL;
	}
	/* a partition skipped by early cut-off keeps its build: succeeded */
	v->succeeded = js->last[MS_SUCCEEDED] + js->last[MS_SKIPPED];
	v->failed = js->last[MS_FAILED];
	/* partitions, each once however many requests queued it */
	v->queued = s->m.job_parts[job][MS_QUEUED];
	v->running = s->m.job_parts[job][MS_RUNNING];
	v->blocked = s->m.job_parts[job][MS_BLOCKED];
	v->late = fresh_late(s->fresh, j->name, &v->late_oldest, NULL);
}

struct open_ctx {
	sched_open_cb cb;
	void *data;
};

/* A late item, for sched_job_open. */
static void
sched_open_late_cb(const struct fresh_item *it, void *data)
{
	struct open_ctx *c = data;

	c->cb(it->part, MS_LATE, c->data);
}

void
sched_job_open(struct sched *s, int job, sched_open_cb cb, void *data)
{
	const char *name = s->cfg->jobs[job].name;
	struct open_ctx c = {cb, data};

	for (struct request *rq = s->m.requests.next; rq != &s->m.requests;
	     rq = rq->next)
		for (size_t i = 0; i < rq->n; i++) {
			struct item *it = rq->items[i];

			if ((it->state == MS_QUEUED ||
			     it->state == MS_RUNNING ||
			     it->state == MS_BLOCKED) &&
			    strcmp(it->job_name, name) == 0)
				cb(it->part, it->state, data);
		}
	fresh_each_late(s->fresh, name, sched_open_late_cb, &c);
}

void
sched_each_request(struct sched *s, sched_request_cb cb, void *data)
{
	for (struct request *rq = s->m.requests.next; rq != &s->m.requests;
	     rq = rq->next)
		cb(rq->id, rq->job, rq->kind, rq->created_at, data);
}

int64_t
sched_pending_of(struct sched *s, const char *job)
{
	int64_t n = 0;

	for (struct request *rq = s->m.requests.next; rq != &s->m.requests;
	     rq = rq->next)
		for (size_t i = 0; i < rq->n; i++) {
			const struct item *it = rq->items[i];

			if ((it->state == MS_QUEUED ||
			     it->state == MS_BLOCKED) &&
			    strcmp(it->job_name, job) == 0)
				n++;
		}
	return n;
}

int
sched_warehouse_state(struct sched *s, const char *name, char *error,
		      size_t errsz, int64_t *at_ms)
{
	return exec_warehouse_state(s->exec, name, error, errsz, at_ms);
}

/* ---- staleness -------------------------------------------------------- */

struct stale_row {
	part_t part; /* downstream partition */
	int in_job;
	part_t in_part;
	int64_t in_built;
};

struct stale_collect {
	struct sched *s;
	int dj; /* the downstream job */
	int u;	/* the upstream job whose builds are read */
	part_t last; /* the newest partition of dj that may be rebuilt */
	struct stale_row *rows;
	size_t n, cap;
};

/* One built upstream partition: the downstream partitions it feeds. */
static int
stale_collect_cb(const char *key, int64_t built_at, bool has_inputs_at,
		 int64_t inputs_at, void *data, struct err *err)
{
	struct stale_collect *sc = data;
	const struct job_def *uj = &sc->s->cfg->jobs[sc->u];
	struct part_range r;
	part_t p;

	(void)has_inputs_at;
	(void)inputs_at;
	(void)err;
	if (cal_parse_key(job_cal(uj), key, &p, NULL) < 0)
		return 0;
	r = lineage_range(sc->s->cfg, sc->u, p, sc->dj);
	if (r.last > sc->last)
		r.last = sc->last;
	for (part_t q = r.first; q <= r.last; q++) {
		if (sc->n == sc->cap) {
			sc->cap = sc->cap ? sc->cap * 2 : 64;
			sc->rows =
			    xreallocarray(sc->rows, sc->cap, sizeof *sc->rows);
		}
		sc->rows[sc->n++] =
		    (struct stale_row){q, sc->u, p, built_at};
	}
	return 0;
}

/* Order by downstream partition, then input job and partition. */
static int
stale_cmp(const void *a, const void *b)
{
	const struct stale_row *x = a, *y = b;

	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	if (x->in_job != y->in_job)
		return x->in_job < y->in_job ? -1 : 1;
	return x->in_part < y->in_part ? -1 : x->in_part > y->in_part;
}

/*
 * Did input row r land after what downstream job d's partition was built
 * from (inputs_at: the newest input its build read, its own earlier
 * partitions included for a running total, sched_inputs_at; any, when it
 * was never built)?  A day of a running total never built is not stale
 * by its own day before alone.
 */
static bool
stale_newer(const struct stale_row *r, int d, bool has_built, int64_t inputs)
{
	if (r->in_job == d && !has_built)
		return false;
	return r->in_built > (has_built ? inputs : -1);
}

/* Report the stale partitions of downstream job d from its sorted rows. */
static int
stale_report(struct sched *s, int d, const struct stale_collect *sc,
	     sched_stale_cb cb, void *data, struct err *err)
{
	const struct job_def *dj = &s->cfg->jobs[d];
	struct stale_input *in = xcalloc(sc->n, sizeof *in);
	int rc = 0;

	for (size_t a = 0; a < sc->n && rc == 0;) {
		size_t b = a, nin = 0;
		char key[CAL_KEY_MAX];
		int64_t built = -1, inputs = -1;
		bool has_built, awaited;

		while (b < sc->n && sc->rows[b].part == sc->rows[a].part)
			b++;
		cal_key(job_cal(dj), sc->rows[a].part, key);
		has_built = store_partition_get(s->store, dj->name, key, &built,
						&inputs, NULL, 0, NULL) == 0;
		/* never built, and the landing that plans it still to come
		 * (a week before its Sunday lands): not stale yet */
		awaited = !has_built && !s->cfg->build_future &&
			  clock_now() < schedule_inputs_due(s->cfg, d,
							    sc->rows[a].part);
		for (size_t k = a; k < b && !awaited; k++)
			if (stale_newer(&sc->rows[k], d, has_built, inputs))
				in[nin++] = (struct stale_input){
				    sc->rows[k].in_job, sc->rows[k].in_part,
				    sc->rows[k].in_built};
		if (nin > 0)
			rc = cb(d, sc->rows[a].part, has_built, built, in, nin,
				data, err);
		a = b;
	}
	free(in);
	return rc;
}

/* Count one stale partition (sched_stale_count). */
static int
sched_stale_count_cb(int job, part_t part, bool built, int64_t built_at,
		     const struct stale_input *in, size_t nin, void *data,
		     struct err *err)
{
	(void)job; (void)part; (void)built; (void)built_at; (void)in;
	(void)nin; (void)err;
	(*(int64_t *)data)++;
	return 0;
}

int64_t
sched_stale_count(struct sched *s, int job)
{
	int64_t n = 0;
	struct err err;

	if ((s->cfg->jobs[job].nupstream > 0 ||
	     s->cfg->jobs[job].self_lookback > 0) &&
	    sched_stale(s, job, sched_stale_count_cb, &n, &err) < 0)
		return 0;
	return n;
}

int
sched_stale(struct sched *s, int only_job, sched_stale_cb cb, void *data,
	    struct err *err)
{
	const struct config *cfg = s->cfg;
	int rc = 0;

	for (size_t t = 0; t < cfg->njobs && rc == 0; t++) {
		int d = cfg->topo[t];
		const struct job_def *dj = &cfg->jobs[d];
		struct stale_collect sc = {.s = s, .dj = d, .last = INT64_MAX};

		if ((dj->nupstream == 0 && dj->self_lookback == 0) ||
		    (only_job >= 0 && only_job != d))
			continue;
		/* a partition whose interval has not closed is not stale yet:
		 * `backfill --stale` could not rebuild it (schedule.h, nothing
		 * before its time), and the inputs still to land in its window
		 * rebuild it (a rolling window's next days, a week's) */
		if (!cfg->build_future)
			sc.last = schedule_last_closed(dj, false, clock_now());
		for (size_t u = 0; u < dj->nupstream && rc == 0; u++) {
			sc.u = dj->upstream_idx[u];
			rc = store_partitions_of(s->store, cfg->jobs[sc.u].name,
						 stale_collect_cb, &sc, err);
		}
		/* a running total reads its own earlier partitions */
		if (rc == 0 && dj->self_lookback > 0) {
			sc.u = d;
			rc = store_partitions_of(s->store, dj->name,
						 stale_collect_cb, &sc, err);
		}
		if (rc == 0 && sc.n > 0) {
			qsort(sc.rows, sc.n, sizeof *sc.rows, stale_cmp);
			rc = stale_report(s, d, &sc, cb, data, err);
		}
		free(sc.rows);
	}
	return rc;
}

bool
sched_budget_none(struct sched *s)
{
	return s->budget_none;
}

void
sched_set_budget_none(struct sched *s, bool none)
{
	s->budget_none = none;
}

/* The commands' reads of the state store (scheduler.h). */

int
sched_read_audit_of(struct sched *s, int64_t request_id, store_audit_cb cb,
	void *data, struct err *err)
{
	return store_audit_of(s->store, request_id, cb, data, err);
}

int
sched_read_request_get(struct sched *s, int64_t id, char *job, size_t jobsz,
	bool *finished, struct err *err)
{
	return store_request_get(s->store, id, job, jobsz, finished, err);
}

int
sched_read_keys_built_by(struct sched *s, const char *job,
	const char *code_version, store_key_cb cb, void *data, struct err *err)
{
	return store_keys_built_by(s->store, job, code_version, cb, data, err);
}

/* A range of keys first..last of a job as the store reads it: the hours
 * of a zone do not sort in time as text (02+02:00 after 02+01:00), so for
 * them the range is the calendar's hull (cal_key_hull) and the keys
 * outside first..last are dropped by index.  False: the keys as given
 * (they sort in time, or they are no keys of the job: "" .. "~"). */
struct key_filter {
	const struct cal *c;
	struct part_range r;
	store_key_cb key_cb;
	store_last_cb last_cb;
	void *data;
	char lo[CAL_KEY_MAX], hi[CAL_KEY_MAX];
};

static bool
key_filter_init(struct sched *s, const char *job, const char *first_key,
	const char *last_key, struct key_filter *f)
{
	const struct job_def *j = config_job(s->cfg, job);

	if (j == NULL || cal_keys_sort_in_time(job_cal(j)) ||
	    cal_parse_key(job_cal(j), first_key, &f->r.first, NULL) < 0 ||
	    cal_parse_key(job_cal(j), last_key, &f->r.last, NULL) < 0)
		return false;
	f->c = job_cal(j);
	cal_key_hull(f->c, f->r, f->lo, f->hi);
	return true;
}

static bool
key_filter_in(const struct key_filter *f, const char *key)
{
	part_t p;

	return cal_parse_key(f->c, key, &p, NULL) == 0 && p >= f->r.first &&
	    p <= f->r.last;
}

static int
key_filter_key_cb(const char *key, void *data, struct err *err)
{
	struct key_filter *f = data;

	return key_filter_in(f, key) ? f->key_cb(key, f->data, err) : 0;
}

static void
key_filter_last_cb(const char *key, enum mstate st, void *data)
{
	struct key_filter *f = data;

	if (key_filter_in(f, key))
		f->last_cb(key, st, f->data);
}

int
sched_read_keys_changed(struct sched *s, const char *job,
	const char *code_version, const char *first_key, const char *last_key,
	store_key_cb cb, void *data, struct err *err)
{
	struct key_filter f = { .key_cb = cb, .data = data };

	if (key_filter_init(s, job, first_key, last_key, &f))
		return store_keys_changed(s->store, job, code_version, f.lo,
		    f.hi, key_filter_key_cb, &f, err);
	return store_keys_changed(s->store, job, code_version, first_key,
	    last_key, cb, data, err);
}

int
sched_read_run_lookup(struct sched *s, const char *job, const char *key,
	int attempt, struct store_run_info *out, struct err *err)
{
	return store_run_lookup(s->store, job, key, attempt, out, err);
}

int
sched_read_last_states(struct sched *s, const char *job, const char *first_key,
	const char *last_key, store_last_cb cb, void *data, struct err *err)
{
	struct key_filter f = { .last_cb = cb, .data = data };

	if (key_filter_init(s, job, first_key, last_key, &f))
		return store_last_states(s->store, job, f.lo, f.hi,
		    key_filter_last_cb, &f, err);
	return store_last_states(s->store, job, first_key, last_key, cb, data,
	    err);
}

int
sched_read_request_controls(struct sched *s, int64_t id, int *concurrency,
	bool *fail_fast, char *downstream, size_t dsz, struct err *err)
{
	return store_request_controls(s->store, id, concurrency, fail_fast,
	    downstream, dsz, err);
}

int
sched_read_runs_open(struct sched *s, const char *job, int64_t request_id,
	const char *state, struct store_runs_cursor **out, struct err *err)
{
	return store_runs_open(s->store, job, request_id, state, out, err);
}

int
sched_read_runs_page(struct store_runs_cursor *c, int max_rows,
	store_run_cb cb, void *data, struct err *err)
{
	return store_runs_page(c, max_rows, cb, data, err);
}

void
sched_read_runs_close(struct store_runs_cursor *c)
{
	store_runs_close(c);
}

int64_t
sched_read_runs_max_id(const struct store_runs_cursor *c)
{
	return store_runs_max_id(c);
}

int
sched_read_shards_of(struct sched *s, int64_t request, const char *job,
	const char *key, store_shard_cb cb, void *data, struct err *err)
{
	return store_shards_of(s->store, request, job, key, cb, data, err);
}

int
sched_read_shards_partial(struct sched *s, store_shard_cb cb, void *data,
	struct err *err)
{
	return store_shards_partial(s->store, cb, data, err);
}

int
sched_read_over_budget(struct sched *s, int limit, store_budget_cb cb,
	void *data, struct err *err)
{
	return store_over_budget(s->store, limit, cb, data, err);
}

void
sched_read_stats(struct sched *s, struct store_stats *out)
{
	store_stats(s->store, out);
}

int
sched_read_request_problems(struct sched *s, int64_t request_id,
	store_problem_cb cb, void *data, struct err *err)
{
	return store_request_problems(s->store, request_id, cb, data, err);
}
