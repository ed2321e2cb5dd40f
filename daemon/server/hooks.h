/*
 * hooks.h - the operator's hooks: on_failure, on_late, on_refused
 * (DESIGN.md, "Freshness and hooks").
 *
 * A hook is argv, run without a shell through uv_spawn in its own process
 * group, with {job}, {partition}, {request} and {error} substituted and
 * the same values in BACKFILLD_JOB, BACKFILLD_PARTITION, BACKFILLD_REQUEST
 * and BACKFILLD_ERROR.  Its stdout and stderr go to the daemon's log, one
 * line per line.  After hook_timeout its process group is killed.  The
 * loop never waits for a hook: firing one returns at once, and a hook that
 * hangs costs a process and three handles until its timeout.  A failed
 * hook is logged and counted, never retried.
 *
 * Lives on the loop thread.
 */
#ifndef BACKFILLD_HOOKS_H
#define BACKFILLD_HOOKS_H

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
/* Hooks finished with result r since start. */
int64_t hooks_count(const struct hooks *h, enum hook_kind kind,
		    enum hook_result r);
/* Hooks running now. */
int hooks_running(const struct hooks *h);
/* Kill the hooks still running and free everything once their handles are
 * closed (the loop must run on). */
void hooks_close(struct hooks *h);

/* The text of one argv element with the placeholders replaced (malloc'd). */
char *hooks_subst(const char *arg, const char *job, const char *partition,
		  const char *request, const char *error);

#endif
