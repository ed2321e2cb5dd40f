/*
 * hooks.h - the operator's hooks: a job's on_failure, on_late, on_refused
 * (docs/configuration.md, "Freshness and hooks") and a warehouse's
 * on_throttle (docs/configuration.md, "Throttling"); backfilld.yaml(5)
 * lists their placeholders.
 *
 * A hook is argv, run without a shell through uv_spawn in its own process
 * group, with its placeholders substituted ({job}, {partition}, {request}
 * and {error} for a job's hooks; {warehouse}, {value} and {state} for
 * on_throttle) and the same values in BACKFILLD_JOB, BACKFILLD_PARTITION,
 * ... (BACKFILLD_ and the placeholder's name in capitals).  Its stdout and
 * stderr go to the daemon's log, one line per line, up to HOOKQ_OUTPUT_MAX
 * bytes of log per hook (the rest counted and its size logged).  After
 * hook_timeout its process group is killed.  The loop never waits for a
 * hook: firing one returns at once, and a hook that hangs costs a process
 * and three handles until its timeout.  At most hook_concurrency hooks run
 * at once, at most hook_queue wait (daemon/lib/hookq.h); one fired beyond
 * is dropped and counted (backfilld_hooks_dropped_total).  A failed hook
 * (exit status, signal, timeout, cannot start) is logged as "hook=...
 * failed: REASON", never retried; a job's hooks are counted by kind and
 * result (backfilld_hooks_total).
 *
 * Lives on the loop thread.
 */
#ifndef BACKFILLD_HOOKS_H
#define BACKFILLD_HOOKS_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"

struct hooks;

enum hook_result { HOOK_OK, HOOK_FAILED, HOOK_TIMEOUT, HOOK_RESULT_COUNT };
const char *hook_result_name(enum hook_result r);

struct hooks *hooks_new(uv_loop_t *loop);
/* Run job j's hook of `kind` (nothing when the job has none); partition,
 * error may be NULL (empty), request 0 (empty). */
void hooks_fire(struct hooks *h, const struct job_def *j, enum hook_kind kind,
		int64_t timeout_s, const char *partition, int64_t request,
		const char *error);
/* Run job j's on_failure for a request stopped over budget (budget.h):
 * {partition} empty, {error} the reason, and {budget} and
 * {warehouse_seconds} (BACKFILLD_BUDGET, BACKFILLD_WAREHOUSE_SECONDS):
 * the budget and the measured time, in whole seconds. */
void hooks_fire_budget(struct hooks *h, const struct job_def *j,
		       int64_t timeout_s, int64_t request, const char *error,
		       int64_t budget_ms, int64_t spent_ms);
/* Run warehouse w's on_throttle (nothing when it has none) for state
 * "throttled", "critical" or "released"; value "" when the query failed. */
void hooks_fire_throttle(struct hooks *h, const struct warehouse_def *w,
			 int64_t timeout_s, const char *value,
			 const char *state);
/* A job's hooks of `kind` finished with result r since start. */
int64_t hooks_count(const struct hooks *h, enum hook_kind kind,
		    enum hook_result r);
/* New bounds: at most concurrency running, queue waiting (at start and on
 * reload; queued hooks start at once when there is room). */
void hooks_bound(struct hooks *h, int concurrency, int queue);
/* Hooks dropped since start, the queue being full. */
int64_t hooks_dropped(const struct hooks *h);
/* Kill the hooks still running, drop those queued and free everything
 * once their handles are closed (the loop must run on). */
void hooks_close(struct hooks *h);

/* One placeholder: {name} in argv, BACKFILLD_NAME=value in the
 * environment. */
struct hook_var {
	const char *name;   /* lower case: "job" */
	const char *value;
};

/* The text of one argv element with the placeholders of vars replaced,
 * left to right (a value put in is not scanned again; other braces are
 * kept); free() it. */
char *hooks_subst(const char *arg, const struct hook_var *vars, size_t nvars);
/* A hook's argv: each of argv[0..argc) through hooks_subst, NULL-ended;
 * free it with hooks_strv_free. */
char **hooks_argv(char *const *argv, size_t argc, const struct hook_var *vars,
		  size_t nvars);
/* A hook's environment: env without its BACKFILLD_* entries, then one
 * BACKFILLD_NAME=value per var, NULL-ended; free it with hooks_strv_free. */
char **hooks_env(char *const *env, const struct hook_var *vars, size_t nvars);
/* Free a NULL-ended array of strings and the strings. */
void hooks_strv_free(char **v);

#endif
