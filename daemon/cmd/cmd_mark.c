/*
 * cmd_mark.c - mark JOB PARTITION... --succeeded --reason TEXT
 * [--no-downstream] (docs/mark.md): partitions recorded as built without
 * running them, by the peer's user, with the reason; their downstream
 * rebuilt unless --no-downstream (sched_mark in sched_mark.c).
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "schedule.h"
#include "text.h"
#include "xalloc.h"

static int
mark_part_cmp(const void *a, const void *b)
{
	part_t x = *(const part_t *)a, y = *(const part_t *)b;

	return x < y ? -1 : x > y;
}

/* One key of the job's grain within its bounds and already due. */
static int
mark_key(const struct job_def *j, const char *key, part_t due, part_t *p,
	 struct err *err)
{
	char k[CAL_KEY_MAX], q[64];

	if (cal_parse_key(job_cal(j), key, p, err) < 0)
		return -1;
	if ((j->has_start && *p < j->start) || (j->has_end && *p > j->end)) {
		cal_key(job_cal(j), j->has_start && *p < j->start ? j->start :
			 j->end, k);
		return err_set(err, EXIT_BAD_INPUT, "%s has no partition %s:"
			       " it %s at %s; nothing was marked", j->name,
			       text_escape(key, q, sizeof q),
			       j->has_start && *p < j->start ? "starts" :
			       "ends", k);
	}
	if (*p > due)
		return schedule_refuse_open(j, *p, true, "nothing was marked",
					    err);
	return 0;
}

/* The partitions field: keys separated by commas, sorted, distinct,
 * at most max_backfill of them. */
static int
mark_parts(const struct job_def *j, const struct cmdspec_list *list,
	   part_t **out, size_t *n, struct err *err)
{
	part_t due = schedule_last_closed(j, true, clock_now());
	size_t cap = 0, k = 0;

	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < list->n; i++) {
		if (*n >= (size_t)j->max_backfill)
			return err_set(err, EXIT_BAD_INPUT, "refused: more than"
				       " %d partitions of %s (its max_backfill);"
				       " nothing was marked: mark them in"
				       " several commands", j->max_backfill,
				       j->name);
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			*out = xreallocarray(*out, cap, sizeof **out);
		}
		if (mark_key(j, list->v[i], due, &(*out)[*n], err) < 0)
			return -1;
		(*n)++;
	}
	qsort(*out, *n, sizeof **out, mark_part_cmp);
	for (size_t i = 0; i < *n; i++)
		if (k == 0 || (*out)[k - 1] != (*out)[i])
			(*out)[k++] = (*out)[i];
	*n = k;
	return 0;
}

static void
cmd_mark_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
	      struct cmd_res *res)
{
	const char *reason = req->mark.reason;
	struct sched_mark_req mk = { .no_downstream =
				     req->mark.no_downstream };
	const struct job_def *j;
	part_t *parts = NULL;
	int64_t id;
	struct err err;

	if ((mk.job = cmd_job(ctx, req->mark.job, res)) < 0)
		return;
	j = &sched_config(ctx->sched)->jobs[mk.job];
	if (reason[strspn(reason, " \t")] == '\0') {
		cmd_fail(res, EXIT_BAD_INPUT, "--reason is empty: say why the"
			 " partitions are marked (it is recorded with your"
			 " name)");
		return;
	}
	if (strlen(reason) > SCHED_MARK_REASON_MAX) {
		cmd_fail(res, EXIT_BAD_INPUT, "--reason is %zu bytes, above"
			 " the %d a mark keeps: say it in at most %d bytes",
			 strlen(reason), SCHED_MARK_REASON_MAX,
			 SCHED_MARK_REASON_MAX);
		return;
	}
	if (mark_parts(j, &req->mark.partitions, &parts, &mk.nparts,
		       &err) < 0) {
		cmd_fail_err(res, &err);
		free(parts);
		return;
	}
	mk.parts = parts;
	mk.by = ctx->peer != NULL ? ctx->peer : "unknown";
	mk.reason = reason;
	if (sched_mark(ctx->sched, &mk, &id, &err) < 0) {
		cmd_fail_err(res, &err);
		free(parts);
		return;
	}
	buf_printf(&res->out, "request %" PRId64 ": %zu partition%s of %s"
		   " marked succeeded by %s%s\n", id, mk.nparts,
		   mk.nparts == 1 ? "" : "s", j->name, mk.by,
		   mk.no_downstream ? " (downstream not rebuilt:"
		   " --no-downstream)" : "; their downstream is rebuilt");
	res->request = id;
	free(parts);
}

const struct cmd_entry cmd_mark_entry = {
	&cmdspec_mark, cmd_mark_exec
};
