/*
 * cmd_reload.c - reload: re-read the configuration (SIGHUP's work) and
 * report what changed.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "xalloc.h"

/* "sql, timeout": the keys of a change, into a buf. */
static void
cmd_keys_text(struct buf *b, const char *const *k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf_printf(b, "%s%s", i ? ", " : "", k[i]);
	buf_add(b, "", 1);
}

/* "added": [...], "removed": [...], "changed": [...] of one set; a
 * changed job (versions) names its old and new code_version too. */
static void
cmd_reload_json_set(const struct config_diff_set *set, bool versions,
		    struct buf *out)
{
	buf_addstr(out, "\"added\": ");
	json_strv(out, set->added, set->nadded);
	buf_addstr(out, ", \"removed\": ");
	json_strv(out, set->removed, set->nremoved);
	buf_addstr(out, ", \"changed\": [");
	for (size_t i = 0; i < set->nchanged; i++) {
		const struct config_diff_changed *c = &set->changed[i];

		buf_addstr(out, i ? ", {\"name\": " : "{\"name\": ");
		json_str(out, c->name);
		if (versions)
			buf_printf(out, ", \"old_code_version\": \"%s\","
				   " \"new_code_version\": \"%s\"",
				   c->old_code_version, c->new_code_version);
		buf_addstr(out, ", \"keys\": ");
		json_keys(out, c->keys, c->nkeys);
		buf_addstr(out, "}");
	}
	buf_addstr(out, "]");
}

/* The reload report as JSON: {added, removed, changed} of jobs
 * (docs/commands.md), then warehouses, settings, what was cancelled and
 * what to rebuild (a JSON array, cmd_changed_report). */
static void
cmd_reload_json(const struct config_diff *d, int64_t cancelled, bool dry_run,
		const char *rebuild, struct buf *out)
{
	buf_printf(out, "{\"dry_run\": %s, \"no_change\": %s, ",
		   dry_run ? "true" : "false",
		   config_diff_empty(d) ? "true" : "false");
	cmd_reload_json_set(&d->jobs, true, out);
	buf_addstr(out, ", \"warehouses\": {");
	cmd_reload_json_set(&d->warehouses, false, out);
	buf_addstr(out, "}, \"settings\": ");
	json_keys(out, d->settings, d->nsettings);
	buf_printf(out, ", \"cancelled\": %" PRId64 ", \"rebuild\": %s}\n",
		   cancelled, rebuild);
}

/* The reload table's rows of warehouses and settings (det: scratch). */
static void
cmd_reload_rows_rest(const struct config_diff *d, struct cmd_table *t,
		     struct buf *det)
{
	for (size_t i = 0; i < d->warehouses.nadded; i++) {
		const char *row[4] = { "added", "warehouse",
			d->warehouses.added[i], "" };
		cmd_table_row(t, row);
	}
	for (size_t i = 0; i < d->warehouses.nremoved; i++) {
		const char *row[4] = { "removed", "warehouse",
			d->warehouses.removed[i], "" };
		cmd_table_row(t, row);
	}
	for (size_t i = 0; i < d->warehouses.nchanged; i++) {
		const struct config_diff_changed *c = &d->warehouses.changed[i];

		buf_reset(det);
		buf_addstr(det, "keys: ");
		cmd_keys_text(det, c->keys, c->nkeys);
		const char *row[4] = { "changed", "warehouse", c->name,
			det->data };
		cmd_table_row(t, row);
	}
	for (size_t i = 0; i < d->nsettings; i++) {
		const char *row[4] = { "changed", "setting", d->settings[i],
			config_diff_needs_restart(d->settings[i]) ?
			"takes effect at the next restart" : "" };
		cmd_table_row(t, row);
	}
}

/* The reload report as a table (one row per difference) and a summary
 * line; "no change" when nothing differs. */
static void
cmd_reload_text(const struct config_diff *d, int64_t cancelled, bool dry_run,
		struct buf *out)
{
	struct cmd_table t = { .ncols = 4 };
	const char *head[4] = { "CHANGE", "WHAT", "NAME", "DETAIL" };
	struct buf det;
	char cnt[96];

	if (config_diff_empty(d)) {
		buf_addstr(out, dry_run ? "dry run: no change (the running"
			   " configuration is the file's)\n" :
			   "configuration reloaded: no change\n");
		return;
	}
	buf_init(&det);
	cmd_table_row(&t, head);
	for (size_t i = 0; i < d->jobs.nadded; i++) {
		const char *row[4] = { "added", "job", d->jobs.added[i], "" };
		cmd_table_row(&t, row);
	}
	for (size_t i = 0; i < d->jobs.nremoved; i++) {
		int64_t q = d->removed_queued ? d->removed_queued[i] : 0;

		buf_reset(&det);
		buf_printf(&det, "its %" PRId64 " queued partition%s %s", q,
			   q == 1 ? "" : "s", dry_run ? "would be cancelled" :
			   "cancelled");
		const char *row[4] = { "removed", "job", d->jobs.removed[i],
			det.data };
		cmd_table_row(&t, row);
	}
	for (size_t i = 0; i < d->jobs.nchanged; i++) {
		const struct config_diff_changed *c = &d->jobs.changed[i];

		buf_reset(&det);
		if (strcmp(c->old_code_version, c->new_code_version) != 0)
			buf_printf(&det, "code_version %s -> %s; ",
				   c->old_code_version, c->new_code_version);
		else
			buf_printf(&det, "code_version %s (same); ",
				   c->new_code_version);
		buf_addstr(&det, "keys: ");
		cmd_keys_text(&det, c->keys, c->nkeys);
		const char *row[4] = { "changed", "job", c->name, det.data };
		cmd_table_row(&t, row);
	}
	cmd_reload_rows_rest(d, &t, &det);
	cmd_table_print(&t, out);
	buf_free(&det);
	snprintf(cnt, sizeof cnt, "%" PRId64 " queued partition%s of removed"
		 " jobs %s", cancelled, cancelled == 1 ? "" : "s",
		 dry_run ? "would be cancelled" : "cancelled");
	buf_printf(out, "%s: jobs %zu added, %zu removed, %zu changed;"
		   " warehouses %zu added, %zu removed, %zu changed; settings"
		   " %zu changed; %s\n", dry_run ? "dry run, nothing applied" :
		   "configuration reloaded", d->jobs.nadded, d->jobs.nremoved,
		   d->jobs.nchanged, d->warehouses.nadded,
		   d->warehouses.nremoved, d->warehouses.nchanged,
		   d->nsettings, cnt);
}

void
cmd_reload_log(struct sched *s, const struct config_diff *d,
	       int64_t cancelled)
{
	struct buf k;
	char *line, *nl;

	if (config_diff_empty(d)) {
		log_notice("reload: no change");
		return;
	}
	buf_init(&k);
	for (size_t i = 0; i < d->jobs.nadded; i++)
		log_notice("reload: job=%s added", d->jobs.added[i]);
	for (size_t i = 0; i < d->jobs.nremoved; i++) {
		int64_t q = d->removed_queued ? d->removed_queued[i] : 0;

		if (q > 0)
			log_warn("reload: job=%s removed: its %" PRId64 " queued"
				 " partition%s cancelled", d->jobs.removed[i],
				 q, q == 1 ? " is" : "s are");
		else
			log_notice("reload: job=%s removed", d->jobs.removed[i]);
	}
	for (size_t i = 0; i < d->jobs.nchanged; i++) {
		const struct config_diff_changed *c = &d->jobs.changed[i];

		buf_reset(&k);
		for (size_t n = 0; n < c->nkeys; n++)
			buf_printf(&k, "%s%s", n ? "," : "", c->keys[n]);
		buf_add(&k, "", 1);
		log_notice("reload: job=%s changed old_code_version=%s"
			   " new_code_version=%s keys=%s", c->name,
			   c->old_code_version, c->new_code_version, k.data);
	}
	for (size_t i = 0; i < d->warehouses.nadded; i++)
		log_notice("reload: warehouse=%s added", d->warehouses.added[i]);
	for (size_t i = 0; i < d->warehouses.nremoved; i++)
		log_notice("reload: warehouse=%s removed",
			   d->warehouses.removed[i]);
	for (size_t i = 0; i < d->warehouses.nchanged; i++) {
		const struct config_diff_changed *c = &d->warehouses.changed[i];

		buf_reset(&k);
		for (size_t n = 0; n < c->nkeys; n++)
			buf_printf(&k, "%s%s", n ? "," : "", c->keys[n]);
		buf_add(&k, "", 1);
		log_notice("reload: warehouse=%s changed keys=%s", c->name,
			   k.data);
	}
	for (size_t i = 0; i < d->nsettings; i++)
		log_notice("reload: setting=%s changed", d->settings[i]);
	log_notice("reload: jobs added=%zu removed=%zu changed=%zu warehouses"
		   " added=%zu removed=%zu changed=%zu settings=%zu"
		   " cancelled=%" PRId64, d->jobs.nadded, d->jobs.nremoved,
		   d->jobs.nchanged, d->warehouses.nadded,
		   d->warehouses.nremoved, d->warehouses.nchanged, d->nsettings,
		   cancelled);
	/* what older code versions built: the same lines as the reply's */
	buf_reset(&k);
	cmd_changed_report(s, d, false, &k);
	buf_add(&k, "", 1);
	for (line = k.data; line != NULL && *line != '\0'; line = nl) {
		nl = strchr(line, '\n');
		if (nl != NULL)
			*nl++ = '\0';
		if (line[0] != '\0')
			log_notice("reload: %s", line);
	}
	buf_free(&k);
}

/* A reload in progress: a stream that pauses until the reload's done
 * callback (the checks that reach a warehouse run off the loop). */
struct cmd_reload_wait {
	struct cmd_stream cs; /* first: the stream control.c drives */
	struct sched *sched;  /* for what older code versions built */
	bool dry, json;
	bool running;         /* done has not been called yet */
	bool orphan;          /* the stream was freed meanwhile */
	int rc;
	struct config_diff diff;
	int64_t cancelled;
};

static void
cmd_reload_done(void *arg, int rc, struct config_diff *diff, int64_t cancelled,
		const struct err *err)
{
	struct cmd_reload_wait *w = arg;

	w->running = false;
	w->rc = rc;
	if (rc == 0) {
		w->diff = *diff;
		w->cancelled = cancelled;
	} else {
		w->cs.err = *err;
		w->cs.status = err->code == EXIT_INTERNAL || err->code == 0 ?
		    EXIT_WORK_FAILED : err->code;
	}
	if (w->orphan) {
		if (rc == 0)
			config_diff_free(&w->diff);
		free(w);
		return;
	}
	if (w->cs.wake)
		w->cs.wake(w->cs.wake_data);
}

static int
cmd_reload_next(struct cmd_stream *cs, struct buf *out)
{
	struct cmd_reload_wait *w = (struct cmd_reload_wait *)cs;

	if (w->running)
		return CMD_STREAM_PAUSE;
	if (w->rc < 0)
		return 1;
	if (w->json) {
		struct buf rebuild;

		buf_init(&rebuild);
		cmd_changed_report(w->sched, &w->diff, true, &rebuild);
		buf_add(&rebuild, "", 1);
		cmd_reload_json(&w->diff, w->cancelled, w->dry, rebuild.data,
				out);
		buf_free(&rebuild);
	} else {
		cmd_reload_text(&w->diff, w->cancelled, w->dry, out);
		cmd_changed_report(w->sched, &w->diff, false, out);
	}
	return 1;
}

static void
cmd_reload_free(struct cmd_stream *cs)
{
	struct cmd_reload_wait *w = (struct cmd_reload_wait *)cs;

	if (w->running) {
		w->orphan = true;
		return;
	}
	if (w->rc == 0)
		config_diff_free(&w->diff);
	free(w);
}

/* reload [--dry-run] [--json]: apply (or only compare) and report, once
 * the reload's checks are done. */
static void
cmd_reload_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
		struct cmd_res *res)
{
	struct cmd_reload_wait *w = xcalloc(1, sizeof *w);

	w->cs.next = cmd_reload_next;
	w->cs.free = cmd_reload_free;
	w->sched = ctx->sched;
	w->dry = req->reload.dry_run;
	w->json = req->reload.json;
	w->running = true;
	res->stream = &w->cs;
	ctx->reload(ctx->reload_data, w->dry, cmd_reload_done, w);
}

const struct cmd_entry cmd_reload_entry = {
	&cmdspec_reload, cmd_reload_exec
};
