/*
 * control_answer.c - a request answered on this node (control_int.h):
 * the command run by cmd_run, or `wait`, a watch on the scheduler that
 * sends PROGRESS frames at most every PROGRESS_EVERY_MS, then the final
 * RESPONSE; a streamed answer produced page by page by an idle handle
 * while the client's unsent output is below CONTROL_QUEUE_MAX.
 */
#include "control_int.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xalloc.h"

#include "cmdspec.h"

/* Add the progress fields to a frame. */
void
progress_fields(struct buf *f, const struct sched_progress *p)
{
	proto_add_int(f, "total", p->total);
	proto_add_int(f, "done", p->succeeded + p->failed + p->blocked +
		      p->cancelled + p->skipped);
	proto_add_int(f, "succeeded", p->succeeded);
	proto_add_int(f, "skipped", p->skipped);
	proto_add_int(f, "failed", p->failed);
	proto_add_int(f, "blocked", p->blocked);
	proto_add_int(f, "cancelled", p->cancelled);
	proto_add_int(f, "running", p->running);
	proto_add_int(f, "queued", p->queued);
	proto_add_int(f, "elapsed_ms", p->elapsed_ms);
}

/* The final RESPONSE of a wait, into f. */
void
control_wait_done(struct sched *s, int64_t id, const struct sched_progress *p,
		  struct buf *f)
{
	struct buf out;

	buf_init(&out);
	cmd_wait_summary(s, id, p, &out);
	proto_begin(f, PROTO_RESPONSE);
	proto_add_int(f, "status", p->failed + p->blocked + p->cancelled > 0 ?
		      EXIT_WORK_FAILED : EXIT_DONE);
	proto_add_int(f, "request", id);
	progress_fields(f, p);
	proto_add(f, "finished", "1");
	buf_add(&out, "", 1);
	proto_add(f, "out", out.data);
	proto_end(f);
	buf_free(&out);
}

/* Send the final RESPONSE of a wait. */
static void
client_wait_done(struct client *cl, const struct sched_progress *p)
{
	struct buf f;

	buf_init(&f);
	control_wait_done(cl->c->sched, cl->wait_id, p, &f);
	client_send(cl, &f);
	cl->wait_id = 0;
}

/* Send a PROGRESS frame with the latest counts. */
static void
client_progress_send(struct client *cl)
{
	struct buf f;

	buf_init(&f);
	proto_begin(&f, PROTO_PROGRESS);
	proto_add_int(&f, "request", cl->wait_id);
	progress_fields(&f, &cl->last);
	proto_end(&f);
	client_send(cl, &f);
	cl->pending = false;
	cl->last_sent = uv_now(cl->c->loop);
}

/* Throttle timer: send the progress held back. */
static void
client_throttle_cb(uv_timer_t *t)
{
	struct client *cl = t->data;

	if (cl->pending && !cl->closing)
		client_progress_send(cl);
}

/* The scheduler reports a change of the waited request. */
static void
client_watch_cb(void *data, const struct sched_progress *p)
{
	struct client *cl = data;
	uint64_t now = uv_now(cl->c->loop);

	cl->last = *p;
	if (p->finished) {
		cl->watch = NULL;
		uv_timer_stop(&cl->throttle);
		client_wait_done(cl, p);
		return;
	}
	if ((int64_t)now - cl->last_sent >= PROGRESS_EVERY_MS) {
		client_progress_send(cl);
	} else if (!cl->pending) {
		cl->pending = true;
		uv_timer_start(&cl->throttle, client_throttle_cb,
			       (uint64_t)(PROGRESS_EVERY_MS - ((int64_t)now - cl->last_sent)),
			       0);
	}
}

/* A request field, for cmdspec_parse (cmdspec_get_fn). */
const char *
control_req_get(const void *src, const char *field)
{
	return proto_get(src, field);
}

/* The request a wait names: backfillctl wait REQUEST and --wait, parsed
 * by the one specification (cmdspec.c): a positive id. */
int
control_wait_id(const struct proto_msg *req, int64_t *id, struct err *err)
{
	struct cmdspec_req rq;
	int rc;

	rc = cmdspec_parse(&cmdspec_wait, control_req_get, req, false, &rq,
			   err);
	*id = rq.request.request;
	cmdspec_req_free(&rq);
	return rc;
}

/* cmd=wait: stream progress until the request is done. */
static void
client_wait(struct client *cl, const struct proto_msg *req)
{
	int64_t id;
	struct sched_progress p;
	struct err err;

	if (control_wait_id(req, &id, &err) < 0) {
		client_error(cl, err.code, err.msg);
		return;
	}
	if (cl->watch) {
		client_error(cl, EXIT_BAD_INPUT,
			     "this connection already waits for a request");
		return;
	}
	cl->wait_id = id;
	cl->watch = sched_watch(cl->c->sched, id, client_watch_cb, cl);
	if (cl->watch) {
		if (sched_progress(cl->c->sched, id, &cl->last, &err) == 0)
			client_progress_send(cl);
		return;
	}
	if (sched_progress(cl->c->sched, id, &p, &err) < 0) {
		cl->wait_id = 0;
		client_error(cl, err.code, err.msg);
		return;
	}
	client_wait_done(cl, &p);
}

/* End the stream: send its RESPONSE, give its memory back, and go on
 * with the requests that waited. */
static void
client_stream_end(struct client *cl)
{
	cmd_stream_end(cl->stream, &cl->resp);
	cl->stream = NULL;
	uv_idle_stop(&cl->pump);
	proto_end(&cl->resp);
	client_send(cl, &cl->resp);
	buf_free(&cl->resp);
#ifdef __GLIBC__
	if (cl->streamed >= CONTROL_TRIM_BYTES)
		malloc_trim(0);
#endif
	cl->streamed = 0;
	client_kick(cl);
}

/* Loop turn with a stream in progress: produce and send its next page. */
void
client_pump_cb(uv_idle_t *h)
{
	struct client *cl = h->data;
	struct buf out;
	int rc;

	if (cl->closing || cl->stream == NULL) {
		uv_idle_stop(h);
		return;
	}
	buf_init(&out);
	rc = cl->stream->next(cl->stream, &out);
	cl->streamed += out.len;
	if (cl->stream->bytes)
		client_send_bytes(cl, out.data, out.len);
	else
		client_send_data(cl, out.data, out.len);
	buf_free(&out);
	if (cl->closing)
		return;
	if (rc == CMD_STREAM_PAUSE)
		uv_idle_stop(h); /* the stream's wake() resumes it */
	else if (rc != 0)
		client_stream_end(cl);
	else if (cl->queued >= CONTROL_QUEUE_MAX)
		uv_idle_stop(h); /* control_write_cb resumes it */
}

/* A paused stream has more: produce it on the next loop turns. */
static void
client_stream_wake(void *data)
{
	struct client *cl = data;

	if (!cl->closing && cl->stream != NULL && cl->queued < CONTROL_QUEUE_MAX)
		uv_idle_start(&cl->pump, client_pump_cb);
}

/* Answer one request (from_memory: cmd_ctx's, or NULL). */
void
client_handle_here(struct client *cl, const struct proto_msg *req,
		   const char *from_memory)
{
	const char *cmd = proto_get(req, "cmd");
	struct cmd_ctx ctx = {
		.sched = cl->c->sched, .reload = cl->c->reload,
		.reload_data = cl->c->reload_data, .may_change = cl->may_change,
		.cluster_drv = cl->c->drv, .cluster = cl->c->cluster,
		.from_memory = from_memory,
	};
	struct cmd_stream *stream;
	uv_os_fd_t fd;
	char peer[128];

	/* rights are the peer's now, per request: a group membership taken
	 * away while a connection stays open takes its rights with it */
	if (uv_fileno((uv_handle_t *)&cl->pipe, &fd) == 0) {
		ctx.may_change = cl->may_change =
			control_peer_may_change(cl->c, fd);
		control_peer_name(fd, peer, sizeof peer);
		ctx.peer = peer;
	}
	if (req->type != PROTO_REQUEST) {
		/* a protocol violation, like a bad frame: answer and close */
		client_error(cl, EXIT_BAD_INPUT, "a client sends REQUEST frames"
			     " only: use backfillctl and backfilld from the same"
			     " release");
		client_finish(cl);
		return;
	}
	if (cmd == NULL) {
		client_error(cl, EXIT_BAD_INPUT, "the request names no command"
			     " (cmd=...): see backfillctl --help");
		return;
	}
	if (cmdspec_is(cmd, CMDSPEC_CONTROL)) { /* wait */
		client_wait(cl, req);
		return;
	}
	proto_begin(&cl->resp, PROTO_RESPONSE);
	cmd_run(&ctx, req, &cl->resp, &stream);
	if (stream != NULL) {
		cl->stream = stream;
		cl->streamed = 0;
		stream->wake = client_stream_wake;
		stream->wake_data = cl;
		uv_idle_start(&cl->pump, client_pump_cb);
		return;
	}
	proto_end(&cl->resp);
	client_send(cl, &cl->resp);
	buf_free(&cl->resp);
}

/* Answer one request here: on a node that is not the planner and
 * cannot reach the state store, from its own memory (status says so). */
void
client_handle(struct client *cl, const struct proto_msg *req)
{
	struct cluster_state st;
	char why[ERR_MSG_MAX + 64];

	if (cl->c->drv != NULL) {
		cl->c->drv->state(cl->c->cluster, &st);
		if (st.role != CLUSTER_PLANNER && !st.db_ok) {
			snprintf(why, sizeof why, "the state store cannot be"
				 " reached (%s)", st.db_error);
			client_handle_here(cl, req, why);
			return;
		}
	}
	client_handle_here(cl, req, NULL);
}
