/*
 * cmd_stale.c - stale: the downstream partitions older than their inputs.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "json.h"

struct stale_ctx {
	struct sched *s;
	bool json;
	size_t n;
	struct buf *out;
	struct cmd_table *t;
};

/* One stale partition. */
static int
stale_render_cb(int job, part_t part, bool built, int64_t built_at,
		const struct stale_input *in, size_t nin, void *data,
		struct err *err)
{
	struct stale_ctx *sc = data;
	const struct config *cfg = sched_config(sc->s);
	const struct job_def *j = &cfg->jobs[job];
	char key[CAL_KEY_MAX], ik[CAL_KEY_MAX], t[CAL_KEY_MAX];
	struct buf ins;

	(void)err;
	cal_key(job_cal(j), part, key);
	if (sc->json) {
		buf_addstr(sc->out, sc->n++ ? ",\n  {\"job\": " : "\n  {\"job\": ");
		json_str(sc->out, j->name);
		buf_addstr(sc->out, ", \"partition\": ");
		json_str(sc->out, key);
		buf_addstr(sc->out, ", \"built_at\": ");
		cmd_json_time(sc->out, built_at, built);
		buf_addstr(sc->out, ", \"newer_inputs\": [");
		for (size_t i = 0; i < nin; i++) {
			const struct job_def *ij = &cfg->jobs[in[i].job];
			cal_key(job_cal(ij), in[i].part, ik);
			buf_addstr(sc->out, i ? ", {\"job\": " : "{\"job\": ");
			json_str(sc->out, ij->name);
			buf_addstr(sc->out, ", \"partition\": ");
			json_str(sc->out, ik);
			buf_addstr(sc->out, ", \"built_at\": ");
			cmd_json_time(sc->out, in[i].built_at, true);
			buf_addstr(sc->out, "}");
		}
		buf_addstr(sc->out, "]}");
		return 0;
	}
	buf_init(&ins);
	for (size_t i = 0; i < nin; i++) {
		const struct job_def *ij = &cfg->jobs[in[i].job];
		cal_key(job_cal(ij), in[i].part, ik);
		if (i == 0 || in[i].job != in[i - 1].job)
			buf_printf(&ins, "%s%s %s", i ? "; " : "", ij->name, ik);
		else
			buf_printf(&ins, ", %s", ik);
	}
	buf_add(&ins, "", 1);
	cmd_fmt_time(built_at, built, t);
	const char *row[4] = { j->name, key, built ? t : "never", ins.data };
	cmd_table_row(sc->t, row);
	buf_free(&ins);
	sc->n++;
	return 0;
}

static void
cmd_stale_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
	       struct cmd_res *res)
{
	struct cmd_table t = { .ncols = 4 };
	struct stale_ctx sc = { .s = ctx->sched, .json = req->show.json,
				.out = &res->out, .t = &t };
	const char *head[4] = { "JOB", "PARTITION", "BUILT", "NEWER INPUTS" };
	struct err err;
	int only = -1;

	if (req->show.job && (only = cmd_job(ctx, req->show.job, res)) < 0)
		return;
	if (sc.json)
		buf_addstr(&res->out, "{\"stale\": [");
	else
		cmd_table_row(&t, head);
	if (sched_stale(ctx->sched, only, stale_render_cb, &sc, &err) < 0) {
		cmd_fail_err(res, &err);
		if (!sc.json)
			cmd_table_print(&t, &res->out);
		buf_reset(&res->out);
		return;
	}
	if (sc.json) {
		buf_addstr(&res->out, sc.n ? "\n]}\n" : "]}\n");
	} else if (sc.n == 0) {
		cmd_table_print(&t, &res->out);
		buf_reset(&res->out);
		buf_addstr(&res->out, "nothing is stale: every downstream partition"
			   " was built after its inputs landed\n");
	} else {
		cmd_table_print(&t, &res->out);
		buf_printf(&res->out, "%zu stale; rebuild with: backfillctl backfill"
			   " JOB --stale\n", sc.n);
	}
}

const struct cmd_entry cmd_stale_entry = {
	&cmdspec_stale, cmd_stale_exec
};
