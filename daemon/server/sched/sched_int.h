/*
 * sched_int.h - private to the scheduler's shell (scheduler.c and the
 * sched_*.c files): struct sched and the functions its files share.
 *
 * The shell applies what the pure core decides (manifest.h: items,
 * settling and dispatch; schedule.h: the clock schedule) to the state
 * store, the executor, the log and the timers.  One file per concern,
 * layered (a file calls only files of layers below its own); which file
 * does what, and its layer, is written once: docs/architecture.md, "The
 * scheduler's layers".
 */
#ifndef BACKFILLD_SCHED_INT_H
#define BACKFILLD_SCHED_INT_H

#include "lease.h"
#include "manifest.h"
#include "scheduler.h"

struct fresh;
struct hooks;
struct sensor_run;

/* A run in flight as the shell sees it: the core's run (mr->data points
 * back) and the executor's. */
struct active {
	struct exec_run run;
	struct exec_part part;	 /* the one partition of an ordinary run */
	struct exec_part *parts; /* a batch run's partitions (items order) */
	int64_t *run_ids;	 /* a batch run, or one run for several
				  * items (SCHED-5): one runs row per item */
	struct wh_commit *commits; /* one per item (exactly-once commits) */
	struct exec_trend_hist *trend; /* trend checks' history (trend_hist.h) */
	size_t ntrend;                 /* ... its entries (the job's metrics) */
	struct run *mr;
	struct sched *s;
	int64_t started_at; /* ms */
	/* a run handed ahead (sched_deck): the one after this run, and the
	 * one this run follows while it waits */
	struct active *deck, *deck_of;
};

/* A watcher of a request (sched_watch): the list is the request's data. */
struct watch {
	struct watch *next;
	sched_watch_cb cb;
	void *data;
	struct request *rq;
};

/* The cached state of a job by name (loaded from the store on first use);
 * a jobstate lives as long as the scheduler, whatever reloads do. */
struct jobstate {
	char *name;
	struct store_job_state st;
	int64_t last[MS_COUNT];	   /* partitions by their newest finished run */
	struct sensor_run *sensor; /* a late_data check in flight */
	bool unread;               /* st could not be read: read it again */
	int64_t budget_stops; /* its requests stopped over budget, since start */
	int64_t last_ms;      /* how long its newest succeeded run took, -1 */
};

struct sched {
	uv_loop_t *loop;
	/* status read no request stopped over budget, and none was since */
	bool budget_none;
	struct store *store;
	struct exec *exec;
	struct config *cfg;
	char *log_dir;
	struct throttle *throttle; /* NULL: no warehouse is throttled */

	struct manifest m;	     /* requests, items, runs in flight */
	struct jobstate **jobstates; /* per job name, ever seen */
	size_t njobstates;
	struct jobstate **js_by_job; /* per job index, filled on use */

	bool draining;
	/* the state store refused a commit (SCHED-7): no new work until the
	 * daemon has restarted from what the store holds */
	bool store_failed;
	int64_t store_failed_at; /* ms */
	char store_error[512];
	void (*store_cb)(void *);
	void *store_data;
	void (*change_cb)(void *);
	void *change_data;
	void (*idle_cb)(void *);
	void *idle_data;
	void (*run_cb)(void *, const struct sched_run_event *);
	void *run_data;
	void (*fact_cb)(void *, const struct sched_run_fact *);
	void *fact_data;

	uv_timer_t retry_timer;
	int64_t retry_at; /* ms, INT64_MAX when not armed */
	uv_timer_t due_timer;
	uv_timer_t late_timer; /* the next deadline (fresh.h) */
	struct clockjump *clock_jump; /* steps of the system clock */
	struct fresh *fresh;   /* partitions owed by jobs with a deadline */
	struct hooks *hooks;   /* NULL: hooks are not run */
	uv_idle_t step;	       /* the loop's step (sched_want) */
	uv_idle_cb step_cb;    /* ... scheduler.c's: what it calls */
	unsigned want;	       /* SCHED_WANT_*: asked for this turn */
	bool step_armed;
	int64_t started_ms;    /* :since of a sensor's first check */
	int closing;
	/* several hosts (sched_set_remote): runs go to the cluster, not to
	 * the executor; dormant until this node is the planner */
	const struct sched_remote *remote;
	bool dormant;
	/* a new planner: the node that held the lease before ("" unknown) */
	char prev_planner[LEASE_NAME_MAX];
};

/*
 * Ask the loop's entry (scheduler.c) for a step at the end of this loop
 * turn: a file below it asks for what it may not call itself (the
 * schedule, a dispatch) and the step does it once, however many asked
 * (one dispatch per turn).  Nothing while closing.
 */
enum {
	SCHED_WANT_DISPATCH = 1 << 0, /* start what the caps allow */
	SCHED_WANT_SCHEDULE = 1 << 1, /* run the schedule and the sensors */
};
static inline void
sched_want(struct sched *s, unsigned what)
{
	if (s->closing)
		return;
	s->want |= what;
	if (!s->step_armed) {
		s->step_armed = true;
		uv_idle_start(&s->step, s->step_cb);
	}
}

/* sched_store.c */
int sched_tx_end(struct sched *s, int rc, struct err *err);
/* Tell the lineage a run of items[0..n) began or ended (sched_audit.c). */
void sched_run_fact(struct sched *s, const struct job_def *j,
		    struct item *const *items, size_t n, int64_t run_id,
		    enum mstate state, const char *error, int64_t now);
/* SCHED-7's one home: the store cannot be written from now on (why):
 * the failure, its time and its reason set, every later write refused
 * (store_refuse_all); true when it had not failed before. */
bool sched_store_fail(struct sched *s, const char *why);
int sched_item_store(struct sched *s, struct item *it, const char *error,
		     int64_t now, struct err *err);
/* Newest landing among the inputs of a downstream partition, or -1. */
int64_t sched_inputs_at(struct sched *s, const struct job_def *j, part_t part);

/* sched_request.c */
void sched_apply(struct sched *s, int64_t now);
void sched_request_changed(struct sched *s, struct request *rq);
void sched_request_free(struct sched *s, struct request *rq);
/* What a landing of (job, key) through request `by` releases elsewhere
 * (SCHED-4), and the job's refused gap it may fill. */
void sched_landed(struct sched *s, const char *job, const char *key,
		  struct request *by, int64_t now);
int sched_load_open(struct sched *s, struct err *err);
struct request *sched_load_request(struct sched *s, int64_t request_id,
				   struct err *err);

/* sched_dispatch.c */
void sched_dispatch(struct sched *s);
/* Take back every run handed ahead that has not started (sched_deck);
 * returns how many. */
int sched_deck_withdraw(struct sched *s);
void sched_run_cancel(struct sched *s, struct exec_run *run);
void sched_run_fill(struct sched *s, struct active *a);
void sched_active_free(struct active *a);

/* sched_shards.c: a run on a ClickHouse cluster: the shards recorded
 * published for its requests (not published again) and its shard_cb. */
void sched_shards_fill(struct sched *s, struct active *a);

/* sched_cutoff.c */
/* Early cut-off (cutoff.h) as dispatch is about to start run r: the
 * downstream items whose inputs all came out unchanged are recorded
 * skipped and dropped from r; true when none is left (free r). */
bool sched_cutoff(struct sched *s, struct run *r, int64_t now);

/* sched_audit.c */
/* The note of a run that succeeded with warnings for partition i (the
 * failed checks of severity: warn), "warning: ..." into out; false, out
 * empty, when it has none. */
bool sched_audit_warning(const struct exec_run *run, size_t i, char *out,
			 size_t size);
/* Whether partition i had reconcile checks and they all passed. */
bool sched_audit_reconciled(const struct exec_run *run, size_t i);
int sched_audit(struct sched *s, struct exec_run *run, const int64_t *run_ids,
		struct err *err);

/* sched_jobstate.c */
struct jobstate *sched_jobstate(struct sched *s, const char *name);
struct jobstate *sched_jobstate_of(struct sched *s, int job);
int sched_jobstate_save(struct sched *s, struct jobstate *js, struct err *err);
void sched_count_finished(struct sched *s, const char *job, enum mstate prev,
			  enum mstate state);
/* sched_count_finished as the store's partition_finished callback (data:
 * the scheduler). */
void sched_count_prev_cb(const char *job, enum mstate prev, enum mstate state,
			 void *data);
void sched_count_load_cb(const char *job, enum mstate state, int64_t count,
			 void *data);
bool sched_paused_cb(void *data, int job);
void sched_gap_filled(struct sched *s, const char *job, const char *key);

/* sched_clock.c */
void sched_schedule(struct sched *s, bool resumed, int only);
/* A step of the system clock (clockjump.h callback, data the scheduler). */
void sched_clock_jumped(void *data);

/* sched_sensor.c */
void sched_sensor_check(struct sched *s, int job, int64_t now, int64_t *next);
int64_t sched_sensor_next(struct sched *s, const struct job_def *j,
			  const struct jobstate *js);

/* sched_fresh.c */
void sched_fresh_outs(struct sched *s, const struct item *x, int64_t now);
void sched_fresh_arm(struct sched *s);
void sched_fresh_run_done(struct sched *s, struct active *a, enum mstate result,
			  int64_t now);
void sched_fresh_loaded(struct sched *s, struct request *rq);
void sched_fresh_failed(struct sched *s);
void sched_fresh_reload(struct sched *s);
bool sched_fresh_blocked(struct sched *s, const struct item *it, int64_t now);
void sched_fresh_materialised(struct sched *s, int job, part_t first,
			      part_t last, int64_t request_id);

/* sched_budget.c */
void sched_budget_run_done(struct sched *s, struct active *a, int64_t now);

/* sched_adopt.c */
struct sched_adopt;
int sched_adopt_read(struct sched *s, const struct adopt_row *rows,
		     size_t nrows, enum adopt_action *action,
		     struct sched_adopt **out, struct err *err);
void sched_adopt_keep(const struct sched_adopt *ad, const int64_t **keep,
		      size_t *nkeep);
void sched_adopt_apply(struct sched *s, struct sched_adopt *ad);
void sched_adopt_free(struct sched_adopt *ad);

/* sched_recover.c */
int sched_recover(struct sched *s, const struct adopt_row *rows, size_t nrows,
		  enum adopt_action *action, struct err *err);
void sched_probe_warehouses(struct sched *s);
int64_t sched_cancel_unconfigured(struct sched *s);

#endif
