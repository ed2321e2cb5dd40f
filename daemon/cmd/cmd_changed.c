/*
 * cmd_changed.c - what a deploy changed (docs/cutoff.md): for reload, per
 * job whose code version changed, how many of its partitions older
 * versions built, the command that rebuilds them (backfill JOB
 * --changed) and that request's estimate, as backfill --dry-run gives it.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate.h"
#include "json.h"
#include "plan.h"
#include "xalloc.h"

/* The estimate of backfill JOB --changed over ck: 0, or -1 (none). */
static int
changed_estimate(struct sched *s, int j, const struct cmd_keys *ck,
		 struct estimate *est)
{
	struct sched_req rq = { .job = j, .kind = "backfill",
				.parts = ck->parts, .nparts = ck->n };
	struct err err;

	return sched_plan_estimate(s, &rq, est, &err);
}

/*
 * One changed job's line (text) or object (JSON), judged by cfg: the
 * file's configuration on a dry run (its max_backfill decides whether the
 * command must be split), the running one otherwise.  The estimate is the
 * running scheduler's plan: on a dry run it is given only when the running
 * job would take the same request.
 */
static void
changed_job(struct sched *s, const struct config *cfg,
	    const struct config_diff_changed *c, bool json, bool first,
	    struct buf *out)
{
	const struct config *run = sched_config(s);
	int j = config_job_index(cfg, c->name);
	int jr = config_job_index(run, c->name);
	struct cmd_keys ck = { .j = j >= 0 ? &cfg->jobs[j] : NULL };
	struct estimate est = { 0 };
	bool over, has_est = false;
	struct err err;

	if (ck.j == NULL ||
	    sched_read_keys_changed(s, c->name, c->new_code_version, "", "~",
				    cmd_keys_cb, &ck, &err) < 0)
		return;
	over = ck.n > (size_t)ck.j->max_backfill;
	if (ck.n > 0 && !over && jr >= 0 &&
	    ck.n <= (size_t)run->jobs[jr].max_backfill)
		has_est = changed_estimate(s, jr, &ck, &est) == 0;
	if (json) {
		buf_addstr(out, first ? "{\"job\": " : ", {\"job\": ");
		json_str(out, c->name);
		buf_printf(out, ", \"partitions\": %zu, \"command\": ", ck.n);
		buf_printf(out, "\"backfillctl backfill %s --changed\"", c->name);
		buf_printf(out, ", \"above_max_backfill\": %s, \"estimate\": ",
			   over ? "true" : "false");
		if (has_est)
			estimate_json(cfg, &est, out);
		else
			buf_addstr(out, "null");
		buf_addstr(out, "}");
	} else if (ck.n == 0) {
		buf_printf(out, "%s: no partition was built by an older code"
			   " version\n", c->name);
	} else {
		buf_printf(out, "%s: %zu partitions built by older code versions;"
			   " rebuild them: backfillctl backfill %s --changed%s\n",
			   c->name, ck.n, c->name, over ? " --from D --to D (they"
			   " are above its max_backfill: split them)" : "");
		if (has_est) {
			buf_addstr(out, "  ");
			estimate_text(cfg, &est, out);
		}
	}
	estimate_free(&est);
	free(ck.parts);
}

void
cmd_changed_report(struct sched *s, const struct config_diff *d, bool json,
		   struct buf *out)
{
	const struct config *cfg = d->next != NULL ? d->next : sched_config(s);
	bool first = true;

	if (json)
		buf_addstr(out, "[");
	for (size_t i = 0; i < d->jobs.nchanged; i++) {
		const struct config_diff_changed *c = &d->jobs.changed[i];

		if (strcmp(c->old_code_version, c->new_code_version) == 0)
			continue;
		changed_job(s, cfg, c, json, first, out);
		first = false;
	}
	if (json)
		buf_addstr(out, "]");
}
