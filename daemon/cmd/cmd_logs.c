/*
 * cmd_logs.c - logs JOB PARTITION [--attempt N] [--follow] [--raw]
 * (docs/logs.md): a run's output, streamed over the control socket so
 * that the client needs no access to the daemon's log folder.
 *
 * Which run: the one running now (--follow follows it), else the newest
 * finished run of the partition, or attempt N of the request that ran it
 * last.  A command run's log (LOG_DIR/JOB/PARTITION.run-ID.log, named by
 * its run: exec_log_path; a log written before logs were named by run,
 * PARTITION.ATTEMPT.log, is read when the run's own is not there) is
 * sent as the bytes the command wrote (DATA frames of `bytes`, which
 * carry any byte: backfillctl renders them by text.h's rule unless asked
 * for --raw).  It is read CMD_PAGE_BYTES at a time, one page per turn of the
 * control socket's pump and only while the client's unsent output is
 * small (control.c's bound): any size of log, in bounded memory.  With
 * --follow, at the end of the file while the run is running the stream
 * pauses until the file changes (inotify, through uv_fs_event) or the
 * run's request does (sched_watch), and ends once the run has ended and
 * the file is read to its end.  A SQL run has no log: its error, the
 * statement it names and that statement's line are the answer.
 */
#include "cmd_entry.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sqlscan.h"
#include "text.h"
#include "xalloc.h"

struct logs_stream {
	struct cmd_stream cs;
	struct sched *s;
	int fd;
	char job[256];
	char key[CAL_KEY_MAX];
	int attempt;
	int64_t request;
	int64_t run_id;
	bool follow;    /* the run was running: follow it */
	bool ended;     /* ... and it has ended since */
	uv_fs_event_t ev;
	bool ev_on;
	void *watch;
};

/* Something changed: the file or the run's request. */
static void
logs_wake(struct logs_stream *ls)
{
	if (ls->cs.wake != NULL)
		ls->cs.wake(ls->cs.wake_data);
}

static void
logs_fs_cb(uv_fs_event_t *h, const char *name, int events, int status)
{
	(void)name;
	(void)events;
	(void)status;
	logs_wake(h->data);
}

static void
logs_watch_cb(void *data, const struct sched_progress *p)
{
	struct logs_stream *ls = data;

	if (p->finished)
		ls->watch = NULL; /* the scheduler freed it */
	logs_wake(ls);
}

/* Is the followed run still the partition's running one? */
static bool
logs_running(struct logs_stream *ls)
{
	int attempt;
	int64_t request, run_id;

	return sched_partition_running(ls->s, ls->job, ls->key, &attempt,
				       &request, &run_id) &&
	    attempt == ls->attempt && request == ls->request &&
	    run_id == ls->run_id;
}

static int
logs_next(struct cmd_stream *cs, struct buf *out)
{
	struct logs_stream *ls = (struct logs_stream *)cs;
	char chunk[65536];
	size_t got = 0;
	ssize_t n;

	while (got < CMD_PAGE_BYTES) {
		n = read(ls->fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			cs->status = EXIT_WORK_FAILED;
			err_set(&cs->err, EXIT_WORK_FAILED, "cannot read the"
				" log of %s %s: %s", ls->job, ls->key,
				strerror(errno));
			return -1;
		}
		if (n == 0)
			break;
		buf_add(out, chunk, (size_t)n);
		got += (size_t)n;
	}
	if (got > 0)
		return 0;
	if (!ls->follow || ls->ended)
		return 1;
	if (!logs_running(ls)) {
		/* it ended: what it wrote last is read, then the end */
		ls->ended = true;
		return 0;
	}
	return CMD_STREAM_PAUSE;
}

static void
logs_closed_cb(uv_handle_t *h)
{
	free(h->data);
}

static void
logs_free(struct cmd_stream *cs)
{
	struct logs_stream *ls = (struct logs_stream *)cs;

	if (ls->watch != NULL)
		sched_unwatch(ls->s, ls->watch);
	if (ls->fd >= 0)
		close(ls->fd);
	if (ls->ev_on) {
		uv_fs_event_stop(&ls->ev);
		uv_close((uv_handle_t *)&ls->ev, logs_closed_cb);
		return;
	}
	free(ls);
}

/* The answer for a SQL run: its state, error, and the statement named. */
static void
logs_sql(const struct config *cfg, const struct job_def *j, const char *key,
	 const struct store_run_info *ri, struct buf *out)
{
	enum sqlscan_dialect d = config_job_dialect(cfg, j);
	char esc[4096 * 4 + 16];
	size_t off, len;
	int n, line;

	buf_printf(out, "%s %s run %" PRId64 " (request %" PRId64
		   ", attempt %d): %s\n", j->name, key, ri->id, ri->request_id,
		   ri->attempt, mstate_name(ri->state));
	if (ri->error[0] == '\0')
		return;
	buf_printf(out, "error: %s\n", text_escape(ri->error, esc,
						    sizeof esc));
	if (j->sql == NULL || sscanf(ri->error, "statement %d failed", &n) != 1 ||
	    !sqlscan_statement(j->sql, d, n, &off, &len, &line))
		return;
	buf_printf(out, "statement %d, line %d of %s's SQL%s%s:\n", n, line,
		   j->name, j->sql_file ? " in " : "",
		   j->sql_file ? j->sql_file : "");
	/* the configuration's text, rendered as every output's (text.h) */
	text_escape_lines(out, j->sql + off, len);
	buf_addstr(out, "\n");
}

/* Which run: the running one (unless --attempt names another), else
 * from the store.  0, 1 when none, -1 with err. */
static int
logs_find(struct cmd_ctx *ctx, const struct job_def *j, const char *key,
	  int attempt, bool *running, struct store_run_info *ri,
	  struct err *err)
{
	int a;
	int64_t rq, id;

	memset(ri, 0, sizeof *ri);
	*running = sched_partition_running(ctx->sched, j->name, key, &a, &rq,
					   &id) &&
	    (attempt == 0 || attempt == a);
	if (*running) {
		ri->id = id;
		ri->attempt = a;
		ri->request_id = rq;
		ri->state = MS_RUNNING;
		return 0;
	}
	return sched_read_run_lookup(ctx->sched, j->name, key, attempt,
				     ri, err);
}

/* Start streaming a command run's log file. */
static void
logs_command(struct cmd_ctx *ctx, const struct job_def *j, const char *key,
	     const struct store_run_info *ri, bool running, bool follow,
	     struct cmd_res *res)
{
	struct logs_stream *ls;
	const struct config *cfg = sched_config(ctx->sched);
	char path[PATH_MAX];
	int fd;

	if (ri->node[0] != '\0' && cfg->node != NULL &&
	    strcmp(ri->node, cfg->node) != 0) {
		cmd_fail(res, EXIT_BAD_INPUT, "the log of %s %s attempt %d is on"
			 " node %s, which ran it: run backfillctl logs there",
			 j->name, key, ri->attempt, ri->node);
		return;
	}
	if (exec_log_path(path, sizeof path, sched_log_dir(ctx->sched),
			  j->name, key, ri->id) < 0) {
		cmd_fail(res, EXIT_BAD_INPUT, "the log of %s %s has a path too"
			 " long for this system", j->name, key);
		return;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT && !running) {
		/* written before logs were named by run (docs/logs.md) */
		snprintf(path, sizeof path, "%s/%s/%s.%d.log",
			 sched_log_dir(ctx->sched), j->name, key, ri->attempt);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			exec_log_path(path, sizeof path,
				      sched_log_dir(ctx->sched), j->name, key,
				      ri->id);
	}
	if (fd < 0) {
		cmd_fail(res, EXIT_BAD_INPUT, "no log of %s %s attempt %d on"
			 " this node (%s: %s)%s", j->name, key, ri->attempt,
			 path, strerror(errno), config_is_cluster(cfg) ?
			 ": it ran on another node; run backfillctl logs on the"
			 " node that ran it" : "");
		return;
	}
	ls = xcalloc(1, sizeof *ls);
	ls->cs.next = logs_next;
	ls->cs.free = logs_free;
	ls->cs.bytes = true;
	ls->s = ctx->sched;
	ls->fd = fd;
	snprintf(ls->job, sizeof ls->job, "%s", j->name);
	snprintf(ls->key, sizeof ls->key, "%s", key);
	ls->attempt = ri->attempt;
	ls->request = ri->request_id;
	ls->run_id = ri->id;
	ls->follow = follow && running;
	if (ls->follow) {
		uv_fs_event_init(sched_loop(ctx->sched), &ls->ev);
		ls->ev.data = ls;
		ls->ev_on = true;
		uv_fs_event_start(&ls->ev, logs_fs_cb, path, 0);
		ls->watch = sched_watch(ctx->sched, ls->request, logs_watch_cb,
					ls);
	}
	res->stream = &ls->cs;
}

static void
cmd_logs_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
	      struct cmd_res *res)
{
	const struct config *cfg = sched_config(ctx->sched);
	const char *key = req->part.partition.text;
	struct store_run_info ri;
	const struct job_def *j;
	long long attempt = req->part.attempt;
	bool running;
	struct err err;
	part_t p;
	int job, rc;

	if ((job = cmd_job(ctx, req->part.job, res)) < 0)
		return;
	j = &cfg->jobs[job];
	if (cal_parse_key(job_cal(j), key, &p, &err) < 0) {
		cmd_fail_err(res, &err);
		return;
	}
	if (attempt > INT_MAX) {
		cmd_fail(res, EXIT_BAD_INPUT, "--attempt %lld is out of range:"
			 " attempts are numbered from 1 to at most %d (backfillctl"
			 " runs %s shows them)", attempt, INT_MAX, j->name);
		return;
	}
	rc = logs_find(ctx, j, key, (int)attempt, &running, &ri, &err);
	if (rc < 0) {
		cmd_fail_err(res, &err);
		return;
	}
	if (rc > 0 && attempt > 0 &&
	    logs_find(ctx, j, key, 0, &running, &ri, &err) == 0) {
		cmd_fail(res, EXIT_BAD_INPUT, "%s %s has no attempt %lld: its"
			 " newest is attempt %d (request %" PRId64 ")", j->name,
			 key, attempt, ri.attempt, ri.request_id);
		return;
	}
	if (rc > 0 && sched_partition_queued(ctx->sched, j->name, key)) {
		cmd_fail(res, EXIT_BAD_INPUT, "%s %s is queued and has not run"
			 " yet: there is no output to show until it starts",
			 j->name, key);
		return;
	}
	if (rc > 0) {
		cmd_fail(res, EXIT_BAD_INPUT, "%s %s has never run: there is no"
			 " output to show (backfillctl rerun %s %s runs it)",
			 j->name, key, j->name, key);
		return;
	}
	if (j->command == NULL) {
		logs_sql(cfg, j, key, &ri, &res->out);
		return;
	}
	logs_command(ctx, j, key, &ri, running, req->part.follow, res);
}

const struct cmd_entry cmd_logs_entry = {
	&cmdspec_logs, cmd_logs_exec
};
