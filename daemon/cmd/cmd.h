/*
 * cmd.h - the daemon side of backfillctl's commands: one handler per
 * command (cmd_NAME.c, listed in cmd.c; cmd_entry.h), each turning a
 * REQUEST, parsed once by the specification shared with backfillctl
 * (cmdspec.h) into typed values, into a change of the scheduler or a
 * report, rendered as a human table or as JSON.
 */
#ifndef BACKFILLD_CMD_H
#define BACKFILLD_CMD_H

#include <stdbool.h>

#include "config_diff.h"
#include "proto.h"
#include "scheduler.h"

struct cluster;
struct cluster_driver;

/*
 * Reload the configuration (SIGHUP's work): load and validate the file,
 * fill a diff with what changes against the running configuration and
 * count the queued partitions of removed jobs that are (or, with dry_run,
 * would be) cancelled; apply it unless dry_run.  The checks that reach a
 * warehouse (a ClickHouse table's partition key) run off the loop, so
 * the answer comes later: done(arg, ...) is called once, on the loop
 * thread, possibly before cmd_reload_fn returns, with rc 0 and the diff
 * (the callee frees it with config_diff_free), or rc -1 and err (nothing
 * applied, diff empty).  A reload asked for while another one is being
 * checked is refused with rc -1.
 */
typedef void cmd_reload_done_fn(void *arg, int rc, struct config_diff *diff,
				int64_t cancelled, const struct err *err);
typedef void cmd_reload_fn(void *data, bool dry_run, cmd_reload_done_fn *done,
			   void *arg);

struct cmd_ctx {
	struct sched *sched;
	cmd_reload_fn *reload;
	void *reload_data;
	bool may_change; /* the peer may run mutating commands */
	/* several hosts (docs/several-hosts.md), or NULL */
	const struct cluster_driver *cluster_drv;
	struct cluster *cluster;
	/* several hosts: a node that is not the planner answers `status`
	 * itself, from its own memory, when the planner cannot be asked:
	 * why (the state store lost, no answer), or NULL */
	const char *from_memory;
	/* the peer's user ("NAME" or "uid N", with "@NODE" when a node
	 * forwarded the request), recorded by mark; NULL: not known */
	const char *peer;
};

/*
 * A streamed answer: the output of a command produced page by page while
 * the client reads it (control.c sends each page as DATA frames and asks
 * for the next one only while the client's unsent output is small).
 * next() appends the next page of stdout text to `out`, doing a bounded
 * amount of work (a few milliseconds; a page may be empty), and returns 0
 * when more pages follow, 1 after the last one, -1 when it failed (status
 * and err then say why; what was sent stays sent).  free() releases the
 * stream, finished or not (a client that goes away early).
 */
struct cmd_stream {
	int (*next)(struct cmd_stream *cs, struct buf *out);
	void (*free)(struct cmd_stream *cs);
	int status;     /* the RESPONSE's status once done */
	struct err err; /* the RESPONSE's err when err.msg[0] */
	/* The RESPONSE's request and total fields when request > 0. */
	int64_t request;
	int64_t total;
	/* A next() that returns CMD_STREAM_PAUSE has nothing to give until
	 * an event: control.c stops asking and sets wake, which the stream
	 * calls (on the loop thread) once it has more. */
	void (*wake)(void *data);
	void *wake_data;
	/* The pages are outside bytes carried exactly (a command run's log):
	 * DATA frames with `bytes` (proto_add_bytes), which backfillctl
	 * renders by text.h's rule, instead of `out` text. */
	bool bytes;
};
#define CMD_STREAM_PAUSE 2

/* Run a command other than `wait` (handled by control.c).  Either adds
 * status, out, err and the command's fields to the RESPONSE frame being
 * built in `resp` and leaves *stream NULL, or starts a stream: *stream is
 * set, resp is left alone, and the caller pulls pages from it, then ends
 * the answer with cmd_stream_end().  An `out` too large for one frame
 * becomes a stream too. */
void cmd_run(struct cmd_ctx *ctx, const struct proto_msg *req,
	     struct buf *resp, struct cmd_stream **stream);
/* Whether a request changes state (it needs the rights to). */
bool cmd_request_mutates(const struct proto_msg *req);
/* Add a finished stream's status and err to the RESPONSE in resp, and
 * free the stream. */
void cmd_stream_end(struct cmd_stream *cs, struct buf *resp);
/* Log what a reload changed: one line per job, warehouse and setting
 * changed (a removed job with queued partitions as a warning with their
 * count), or one line saying nothing did; then the partitions older code
 * versions built, as `backfillctl reload` prints them. */
void cmd_reload_log(struct sched *s, const struct config_diff *d,
		    int64_t cancelled);
/* The summary `wait` prints when a request is done. */
void cmd_wait_summary(struct sched *s, int64_t request_id,
		      const struct sched_progress *p, struct buf *out);

#endif
