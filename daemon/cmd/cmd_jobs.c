/*
 * cmd_jobs.c - jobs: the loaded jobs, how each runs and where it is
 * defined.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "json.h"
#include "xalloc.h"

/* ---- jobs ------------------------------------------------------------- */

/* The file that defines a job, shortened to a path relative to the main
 * configuration's folder when it lies inside it (for the table). */
static const char *
cmd_short_file(const struct config *cfg, const char *file)
{
	size_t n = strlen(cfg->dir);

	if (strncmp(file, cfg->dir, n) == 0 && file[n] == '/')
		return file + n + 1;
	return file;
}

const char *
cmd_grain_text(const struct job_def *j, char *buf)
{
	bool sun = j->cal.week_start == WEEK_SUNDAY, tz = j->cal.tz != NULL;

	snprintf(buf, CMD_GRAIN_MAX, "%s%s%s%s%s%s", grain_name(j->grain),
		 sun || tz ? " (" : "", sun ? "sunday" : "",
		 sun && tz ? ", " : "", tz ? cal_zone_name(&j->cal) : "",
		 sun || tz ? ")" : "");
	return buf;
}

/* A job's upstream as written, its own name too for a running total
 * (config_graph.c keeps that entry out of upstream[]): a temporary array
 * of n names to free (not the names). */
static char **
jobs_upstream(const struct job_def *j, size_t *n)
{
	char **v = xcalloc(j->nupstream + 1, sizeof *v);
	size_t k = 0;

	for (size_t i = 0; i <= j->nupstream; i++) {
		if (j->self_lookback > 0 && i == j->self_entry)
			v[k++] = j->name;
		if (i < j->nupstream)
			v[k++] = j->upstream[i];
	}
	*n = k;
	return v;
}

/* A job's object in jobs --json (first: the first of the array). */
static void
jobs_json(const struct job_def *j, const struct sched_job_view *v,
	  const char *wm, bool first, struct buf *out)
{
	char **up;
	size_t nup;

	buf_addstr(out, first ? "\n  {\"name\": " : ",\n  {\"name\": ");
	json_str(out, j->name);
	buf_printf(out, ", \"grain\": \"%s\", \"timezone\": ",
		   grain_name(j->grain));
	json_str(out, cal_zone_name(&j->cal));
	buf_printf(out, ", \"week_start\": \"%s\", \"warehouse\": ",
		   j->cal.week_start == WEEK_SUNDAY ? "sunday" : "monday");
	json_str(out, j->warehouse_name);
	buf_addstr(out, ", \"command\": ");
	if (j->command != NULL)
		json_strv(out, j->command, j->command_len);
	else
		buf_addstr(out, "null");
	buf_addstr(out, ", \"upstream\": ");
	up = jobs_upstream(j, &nup);
	json_strv(out, up, nup);
	free(up);
	buf_addstr(out, ", \"reads\": ");
	json_strv(out, j->reads, j->nreads);
	buf_addstr(out, ", \"writes\": ");
	json_strv(out, j->writes, j->nwrites);
	buf_printf(out, ", \"paused\": %s, \"catchup\": \"%s\","
		   " \"watermark\": ", v->paused ? "true" : "false", v->catchup);
	json_str(out, v->has_watermark ? wm : NULL);
	buf_printf(out, ", \"code_version\": \"%s\", \"file\": ",
		   j->code_version);
	json_str(out, j->file);
	buf_printf(out, ", \"line\": %d, \"column\": %d}", j->pos.line,
		   j->pos.col);
}

/* names joined by ',' into b, "-" when none, NUL-terminated. */
static void
jobs_list(struct buf *b, char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf_printf(b, "%s%s", i ? "," : "", v[i]);
	if (n == 0)
		buf_addstr(b, "-");
	buf_add(b, "", 1);
}

/* A job's row in the jobs table. */
static void
jobs_row(const struct config *cfg, const struct job_def *j,
	 const struct sched_job_view *v, const char *wm, struct cmd_table *t)
{
	struct buf on, up, at, rd, wr;
	char grain[CMD_GRAIN_MAX];
	char **upv;
	size_t nup;

	buf_init(&on);
	buf_init(&up);
	buf_init(&at);
	buf_init(&rd);
	buf_init(&wr);
	if (j->warehouse_name != NULL)
		buf_printf(&on, "warehouse %s", j->warehouse_name);
	else
		for (size_t a = 0; a < j->command_len; a++)
			buf_printf(&on, "%s%s", a ? " " : "command: ",
				   j->command[a]);
	buf_add(&on, "", 1);
	upv = jobs_upstream(j, &nup);
	jobs_list(&up, upv, nup);
	free(upv);
	jobs_list(&rd, j->reads, j->nreads);
	jobs_list(&wr, j->writes, j->nwrites);
	buf_printf(&at, "%s:%d", cmd_short_file(cfg, j->file), j->pos.line);
	buf_add(&at, "", 1);
	const char *row[11] = { j->name, cmd_grain_text(j, grain), on.data,
		up.data, rd.data, wr.data, v->paused ? "yes" : "no", v->catchup,
		v->has_watermark ? wm : "-", j->code_version, at.data };
	cmd_table_row(t, row);
	buf_free(&on);
	buf_free(&up);
	buf_free(&at);
	buf_free(&rd);
	buf_free(&wr);
}

/* jobs [--json]: the loaded jobs, how each runs, its schedule state, code
 * version and where it is defined. */
static void
cmd_jobs_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
	      struct cmd_res *res)
{
	static const char *const head[11] = { "JOB", "GRAIN", "RUNS ON",
		"UPSTREAM", "READS", "WRITES", "PAUSED", "CATCHUP", "WATERMARK", "VERSION",
		"DEFINED AT" };
	struct sched *s = ctx->sched;
	const struct config *cfg = sched_config(s);
	bool json = req->show.json;
	struct cmd_table t = { .ncols = 11 };

	if (json)
		buf_addstr(&res->out, "{\"jobs\": [");
	else
		cmd_table_row(&t, head);
	for (size_t i = 0; i < cfg->njobs; i++) {
		const struct job_def *j = &cfg->jobs[i];
		struct sched_job_view v;
		char wm[CAL_KEY_MAX] = "";

		sched_job_view(s, (int)i, &v);
		if (v.has_watermark)
			cal_key(&j->cal, v.watermark, wm);
		if (json)
			jobs_json(j, &v, wm, i == 0, &res->out);
		else
			jobs_row(cfg, j, &v, wm, &t);
	}
	if (json) {
		buf_printf(&res->out, "%s]}\n", cfg->njobs ? "\n" : "");
		return;
	}
	cmd_table_print(&t, &res->out);
	buf_printf(&res->out, "%zu job%s from %zu file%s\n", cfg->njobs,
		   cfg->njobs == 1 ? "" : "s", cfg->nfiles,
		   cfg->nfiles == 1 ? "" : "s");
}

const struct cmd_entry cmd_jobs_entry = {
	&cmdspec_jobs, cmd_jobs_exec
};
