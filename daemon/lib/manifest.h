/*
 * manifest.h - the open manifest as a state machine (pure: no libuv, no
 * store, no clock, no logging).
 *
 * A request is what an operator, the clock schedule or a sensor asked
 * for; its items are the (job, partition) pairs it runs, in run order,
 * each with the items of the same request it waits for (its inputs).  An
 * item is queued, running, succeeded, failed, blocked, cancelled or
 * skipped (early cut-off, cutoff.h; enum mstate).  A run is one execution in flight: one item, one batch of
 * items of one request, or one item of each of several requests (SCHED-5).
 *
 * The scheduler's shell (scheduler.c and the sched_*.c files) owns a
 * struct manifest and applies what it decides: every function here only
 * changes memory and time comes in as an argument.  Functions that move
 * items by a rule (settle, release, fail fast, cancel) also append one
 * struct manifest_change per item moved to m->changes, in order, which
 * the shell writes to the state store and logs (then
 * manifest_changes_clear).  SCHED-4 (downstream, fail fast, retry) is the
 * block comments in manifest.c, next to the code that applies each;
 * dispatch's choice (SCHED-2, SCHED-3 and SCHED-5) is pick.h.
 */
#ifndef BACKFILLD_MANIFEST_H
#define BACKFILLD_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calendar.h"
#include "config.h"
#include "cutoff.h"
#include "mstate.h"

struct request;
struct run;

struct item {
	int64_t id; /* its manifest row in the store */
	struct request *rq;
	size_t idx; /* position in rq->items */
	char *job_name;
	int job; /* index in m->cfg, -1 when no longer configured */
	part_t part;
	char key[CAL_KEY_MAX];
	enum mstate state;
	int attempts;
	int64_t not_before; /* ms: a retry waits until then */
	int seq;
	bool downstream;
	char *blocked_on;  /* "job key" of the input that blocks it */
	struct item **ins; /* input items of the same request */
	size_t nins;
	struct item **outs; /* items waiting for this one */
	size_t nouts, outcap;
	struct run *run;    /* while running */
	struct item *hnext; /* hash chain by (job, key) */
	/* what its last successful run did to its partition (early
	 * cut-off, cutoff.h): CUTOFF_IN_SAME, _CHANGED, _UNKNOWN, or
	 * _SKIPPED once skipped itself */
	enum cutoff_input cut;
};

struct request {
	int64_t id;
	char *job;
	char *kind;	    /* schedule, catchup, backfill, ... */
	bool priority;	    /* schedule or catchup (SCHED-3) */
	int64_t created_at; /* ms */
	struct item **items;
	size_t n;
	size_t nroot;  /* its own partitions: items[0..nroot) */
	size_t cursor; /* no queued item before it */
	int64_t counts[MS_COUNT];
	int cap;	/* runs of it at once, 0: no cap of its own */
	/* slots (manifest_run_slots) of the runs in flight carrying an item
	 * of it */
	int nruns;
	bool fail_fast; /* cancel the rest after a failure */
	bool no_cutoff; /* rebuild the downstream regardless (cutoff.h) */
	int64_t budget_ms; /* budget of warehouse time (budget.h), 0: none */
	int64_t spent_ms;  /* its measured warehouse time */
	bool over_budget;  /* stopped over budget (BUDGET-4 of budget.h) */
	void *data;	/* the shell's (its watchers) */
	struct request *next, *prev;
};

/* A run in flight (or being started): items[0] is the primary. */
struct run {
	struct item **items;
	size_t nitems, cap;
	bool batch; /* one execution for several partitions */
	int width;  /* the slots it holds against the caps (SCHED-2): a
		     * ClickHouse batch filling its stage by this many
		     * statements at once (pick_width); 0 or 1: one */
	int job;    /* index in m->cfg, -1 when gone */
	char job_name[128];
	bool requeue; /* interrupted by a throttle (no attempt, as any
		       * interruption) */
	bool deck;    /* handed ahead (pick_next_deck): waits for another
		       * run of its job to end, counted in flight but not
		       * against the caps */
	void *data;   /* the shell's */
	struct run *next, *prev;
};

/* Why an item moved (for the shell's log line). */
enum manifest_why {
	MANIFEST_INPUT_CANCELLED, /* cancelled: an input will never run */
	MANIFEST_BLOCKED,	  /* an input failed or is blocked */
	MANIFEST_RELEASED,	  /* its inputs landed: queued again */
	MANIFEST_LANDED,	  /* failed here, landed by another request */
	MANIFEST_FAIL_FAST,	  /* cancelled by --fail-fast */
	MANIFEST_UNCONFIGURED,	  /* cancelled: its job is gone */
	MANIFEST_OVER_BUDGET,	  /* cancelled: its request is over budget */
	MANIFEST_MARKED,	  /* out of its queue: the partition was marked */
};

/* One item moved by a rule: write it (state, attempts, not_before,
 * blocked_on, with note as its error text when not empty). */
struct manifest_change {
	struct item *item;
	enum manifest_why why;
	enum mstate cause_state; /* MANIFEST_BLOCKED: the input's state */
	char note[256];
};

#define MANIFEST_HASH_SIZE 4096

struct manifest {
	const struct config *cfg;
	struct request requests; /* circular list head, oldest first */
	struct request *rr;	 /* round-robin position (SCHED-3) */
	struct item *hash[MANIFEST_HASH_SIZE];
	struct run runs; /* runs in flight: list head */
	/* slots held by the runs in flight (manifest_run_slots: a wide ClickHouse
	 * batch holds several), what the caps count; the runs themselves:
	 * manifest_in_flight */
	int nrunning;
	int *job_running;		 /* slots in flight per job index */
	int ndeck;			 /* ... of them handed ahead */
	int *job_deck;			 /* ... per job index */
	int64_t (*job_counts)[MS_COUNT]; /* items by job index and state */
	/* partitions by job index and state, each once however many
	 * requests hold it (manifest_distinct: queued, running, blocked) */
	int64_t (*job_parts)[MS_COUNT];
	size_t njobs;
	int64_t nqueued;      /* queued or running items */
	int64_t failed_total; /* items that ever failed */
	struct manifest_change *changes;
	size_t nchanges, changecap;
};

void manifest_init(struct manifest *m, const struct config *cfg);
void manifest_clear(struct manifest *m);
/* A new configuration: resolve every item's job again and recount. */
void manifest_reindex(struct manifest *m, const struct config *cfg);
void manifest_changes_clear(struct manifest *m);

/* Add a request at the tail (the newest). */
struct request *manifest_request_add(struct manifest *m, int64_t id,
				     const char *job, const char *kind,
				     int64_t created_at);
struct request *manifest_request_find(struct manifest *m, int64_t id);
/* Unlink and free a request and its items (its data is the caller's). */
void manifest_request_free(struct manifest *m, struct request *rq);
/* Add an item at the end of a request. */
struct item *manifest_item_add(struct manifest *m, struct request *rq,
			       int64_t id, const char *job, const char *key,
			       int seq, bool downstream, enum mstate state);
/* Out waits for in (both of one request). */
void manifest_link(struct item *in, struct item *out);
/* Link a request's downstream items to their inputs by the downstream
 * mapping (lineage.h): items rebuilt from the store. */
void manifest_relink(struct manifest *m, struct request *rq);
/* Set an item's state, counting it. */
void manifest_set(struct manifest *m, struct item *it, enum mstate to);
/* True for states an item does not leave by itself. */
bool manifest_final(enum mstate st);
/* True for the states an item's downstream counts as landed: succeeded,
 * or skipped by early cut-off (its build stands). */
bool manifest_landed_state(enum mstate st);
/* Early cut-off skipped an item that was about to run: skipped, its
 * partition as it was (the shell records it, then settles its outs). */
void manifest_skip(struct manifest *m, struct item *it);

/* SCHED-4, see manifest.c. */
bool manifest_settle(struct manifest *m, struct item *it);
void manifest_settle_outs(struct manifest *m, struct item *it);
int64_t manifest_landed(struct manifest *m, const char *job, const char *key,
			struct request *by);
int64_t manifest_fail_fast(struct manifest *m, struct request *rq,
			   const struct item *bad);
/* Cancel a request's queued and blocked items, its measured time past
 * 1.5 times its budget (budget.h, BUDGET-4), with note as their error:
 * how many.  It is marked over_budget. */
int64_t manifest_over_budget(struct manifest *m, struct request *rq,
			     const char *note);
/*
 * A mark (backfillctl mark, docs/mark.md) of (job, key) by request `by`:
 * manifest_mark_running() is an item of it running (the mark is refused
 * then), or NULL.  manifest_marked() takes the queued and blocked items
 * of it in other requests out of their queue: landed (succeeded, what
 * waits for them in their request goes on), or with no_downstream
 * cancelled (what waits for them only on them is cancelled with them:
 * no downstream work because of the mark); `note` is their error text.
 * Returns how many.
 */
struct item *manifest_mark_running(struct manifest *m, const char *job,
				   const char *key);
int64_t manifest_marked(struct manifest *m, const char *job, const char *key,
			const struct request *by, bool no_downstream,
			const char *note);
/* Cancel a request's queued and blocked items (the operator's cancel):
 * how many. */
int64_t manifest_cancel(struct manifest *m, struct request *rq);
/* Cancel the queued and blocked items of jobs no longer configured. */
int64_t manifest_cancel_unconfigured(struct manifest *m);
bool manifest_retriable(const struct item *it);
int64_t manifest_retry(struct manifest *m, struct request *rq);

/* The hash chain holding (job, key): other keys may share it, test each
 * item with manifest_same. */
struct item **manifest_bucket(struct manifest *m, const char *job,
			      const char *key);
bool manifest_same(const struct item *x, const char *job, const char *key);

/* A run picked by pick_next_run (pick.h) starts: its items are running, one
 * more attempt each, counted against the caps. */
void manifest_run_start(struct manifest *m, struct run *r);
/* A run an earlier planner started, rebuilt from the store (adopt.h):
 * its items running, counted against the caps, no attempt added. */
void manifest_run_adopt(struct manifest *m, struct run *r);
/* The store refused the start: undo manifest_run_start. */
void manifest_run_unstart(struct manifest *m, struct run *r);
/* The run ended with result (queued again, succeeded or failed); with
 * retry_job (the definition the run ran with; NULL: no retry) each item
 * waits its backoff from now (ms). */
void manifest_run_result(struct manifest *m, struct run *r, enum mstate result,
			 const struct job_def *retry_job, int64_t now);
/* The run could not start for want of resources: queued again without
 * an attempt, not before not_before (ms). */
void manifest_run_not_started(struct manifest *m, struct run *r,
			      int64_t not_before);
/* The run is over: no longer counted against the caps (then free it). */
void manifest_run_finish(struct manifest *m, struct run *r);
/* SCHED-2, the slots a run holds against every cap (max_concurrency,
 * its job's concurrency, its warehouse's, its requests' own): its width
 * (a ClickHouse batch filling its stage by that many statements at once,
 * set when picked: pick.c), else one. */
int manifest_run_slots(const struct run *r);
/* The runs in flight (handed ahead included) and the items they hold. */
void manifest_in_flight(const struct manifest *m, int *runs, int64_t *items);
/* A run handed ahead has started (the run it followed ended): counted
 * against the caps from now. */
void manifest_run_undeck(struct manifest *m, struct run *r);
void manifest_run_free(struct run *r);
/* Retries (SCHED-4): is a run that failed at attempt `attempts` tried
 * again, and after how long (ms)? */
bool manifest_retries(const struct job_def *j, int attempts, bool draining);
int64_t manifest_backoff_ms(const struct job_def *j, int attempts);

#endif
