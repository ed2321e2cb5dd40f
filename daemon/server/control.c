/*
 * control.c - the control socket server.
 *
 * One uv_pipe_t listens; each connection reads frames into a buffer that
 * never grows past one maximal request, answers each REQUEST in order, and
 * is closed after a protocol error (with a RESPONSE saying what was wrong
 * first).  `wait` registers a watch on the scheduler and streams PROGRESS
 * frames, at most ten a second, then the final RESPONSE.  Peers' creden-
 * tials (SO_PEERCRED) decide whether they may run mutating commands: root,
 * the daemon's own user, or members of the socket's group.
 *
 * Bounds, so that no client can make the daemon hold much memory or the
 * loop for long (docs/protocol.md):
 *  - an answer that is a stream (cmd.h: `runs`, or any `out` too large for
 *    one frame) is produced one page per loop turn, by an idle handle, and
 *    only while the client's unsent output (`queued`: bytes handed to
 *    uv_write and not yet written) is below CONTROL_QUEUE_MAX; the write
 *    callback resumes it.  A client that goes away frees the stream at once.
 *  - while a stream is in progress, or the unsent output is at or above
 *    CONTROL_QUEUE_MAX, the connection is not read (uv_read_stop) and the
 *    requests already read wait: pipelined requests are answered one at a
 *    time, never buffered without bound.
 *  - a REQUEST body above PROTO_MAX_REQUEST is refused and the connection
 *    closed; at most CONTROL_MAX_CLIENTS connections are served: a new
 *    one beyond them takes the place of the connection idle the longest,
 *    or, when every one is busy (a stream, a wait, unsent output), gets
 *    an error RESPONSE (status 3) and is closed; both are logged at most
 *    once per CONTROL_RATELOG_MS, with their count, so a client that
 *    connects in a loop does not flood the log; a connection with
 *    nothing in progress (no stream, no wait, no unsent output) on which
 *    no byte arrives for the idle timeout is closed.
 *  - descriptors in reserve: connections never take the descriptors the
 *    daemon needs for its own work (command runs, warehouse and state
 *    store connections), CONTROL_FD_RESERVE plus two per run of
 *    max_concurrency.  A connection accepted with fewer free takes the
 *    place of the connection idle the longest, or, when every one is
 *    busy, gets an error RESPONSE (status 3) and is closed; one line is
 *    logged when such a spell begins and one, with the counts, at the
 *    first connection after it that finds the reserve free again.
 *
 * Several hosts (docs/several-hosts.md): a node that is not the planner
 * forwards each request through the state store.  A forwarded `wait` is a
 * long poll: the planner holds it until its request finishes (and its end
 * is committed) or MAIL_HOLD_MS pass, then answers the final RESPONSE or
 * one PROGRESS frame, which the node passes on and asks again at once.
 * At most MAIL_HOLD_MAX waits are held; beyond them one is answered at
 * once, empty, and its node asks again after FWD_AGAIN_MS.  A forwarded
 * wait that fails (the planner changed meanwhile) is asked again up to
 * FWD_WAIT_TRIES times before the client is told.
 */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "cluster.h"
#include "cmdspec.h"
#include "log.h"
#include "proc.h"
#include "xalloc.h"

#define READ_CHUNK 65536
#define PROGRESS_EVERY_MS 100
/* A client's unsent output above which nothing more is produced for it
 * and it is not read. */
#define CONTROL_QUEUE_MAX (256 * 1024)
/* The largest `out` chunk of one DATA frame. */
#define CONTROL_DATA_MAX (1024 * 1024)
/* Connections served at once; more are refused. */
#define CONTROL_MAX_CLIENTS 64
/* Descriptors kept for the daemon's own work, besides two per run. */
#define CONTROL_FD_RESERVE 16
/* An idle connection is closed after this (BACKFILLD_TEST_IDLE_TIMEOUT_MS
 * overrides it, for tests). */
#define CONTROL_IDLE_TIMEOUT_MS 60000
/* At most one log line per this long about refused connections, and one
 * about idle connections closed to make room, each with a count. */
#define CONTROL_RATELOG_MS 10000
/* Forwarded waits: how long the planner holds one, how many at most,
 * how soon a node asks again after an empty answer, and how many
 * failed forwards in a row a wait outlives. */
#define MAIL_HOLD_MS 5000
#define MAIL_HOLD_MAX 256
#define FWD_AGAIN_MS 300
#define FWD_WAIT_TRIES 3
/* A forwarded request that may run a proof of idempotency (verify,
 * --verify, a job with verify: true) is given this long besides the
 * lease, or twice its job's timeout when it has one: the proof runs the
 * partition twice before the planner answers. */
#define FWD_PROOF_MS (3600 * 1000)
/* The planner could not write an answer: it reads the mailbox again
 * after this, doubling up to MAIL_AGAIN_MAX_MS. */
#define MAIL_AGAIN_MS 1000
#define MAIL_AGAIN_MAX_MS 30000
/* Give memory back to the system after a stream of this many bytes. */
#define CONTROL_TRIM_BYTES (4 * 1024 * 1024)

struct client {
	uv_pipe_t pipe;
	struct control *c;
	char *rbuf;
	size_t rlen;
	size_t rcap;
	bool closing;
	bool finishing; /* shutting down after a last answer */
	bool reading;   /* uv_read_start is in effect */
	bool refused;
	uint64_t last_active;      /* uv_now at accept and at each read */   /* over the connection cap: answered and closed */
	int handles;    /* open handles; freed when it drops to 0 */
	void *watch;
	int64_t wait_id;
	uv_timer_t throttle;
	bool pending;
	int64_t last_sent;
	struct sched_progress last;
	bool may_change;
	size_t queued;             /* bytes in uv_write, not yet written */
	struct cmd_stream *stream; /* the answer being streamed, if any */
	struct buf resp;           /* its RESPONSE, sent when it ends */
	size_t streamed;           /* bytes of the stream so far */
	uv_idle_t pump;            /* produces the stream's next page */
	uv_timer_t idle;           /* closes the connection when idle */
	bool forwarding;           /* a request is with the planner */
	bool fwd_wait;             /* ... or is asked again soon */
	char *fwd;                 /* a forwarded wait, asked again */
	size_t fwd_len;
	char *fwd_status;          /* a forwarded status, answered here
				    * if the planner does not */
	size_t fwd_status_len;
	int fwd_fails;             /* ... failed in a row */
	int64_t fwd_ms;            /* how long the planner may take */
	struct client *next, *prev;
};

/* Events of one kind logged at most once per CONTROL_RATELOG_MS. */
struct control_ratelog {
	int count;       /* since the last line */
	uint64_t logged; /* when the last line was written */
	bool ever;       /* a line was written */
};

struct control {
	uv_loop_t *loop;
	uv_pipe_t listener;
	struct sched *sched;
	char *path;
	bool has_group;
	gid_t group;
	cmd_reload_fn *reload;
	void *reload_data;
	struct client clients; /* list head */
	bool closing;
	int nclients;          /* served (not refused) connections */
	uint64_t idle_ms;
	struct control_ratelog refusals; /* connections refused at the cap */
	struct control_ratelog evictions; /* idle ones closed at the cap */
	bool fd_short;         /* in a spell of too few free descriptors */
	int fd_closed;         /* ... idle connections closed in it */
	int fd_refused;        /* ... connections refused in it */
	const struct cluster_driver *drv; /* several hosts, or NULL */
	struct cluster *cluster;
	struct mail_wait *held;  /* planner: forwarded waits held */
	int nheld;
	uv_timer_t hold;         /* answers the held waits due */
	bool hold_init;
	struct mail_stream *streams; /* planner: forwarded streams paused */
	uv_idle_t stream_pump;   /* ... resumes those woken */
	bool stream_init;
	uv_timer_t mail_again;   /* an answer the store refused: later */
	bool mail_again_init;
	uint64_t mail_again_ms;  /* ... backing off */
	struct control_ratelog answer_fails; /* answers the store refused */
};

/* A forwarded request whose answer is a stream that waits for an event
 * (the proof of a verify, verify.c): its pages are kept until it ends,
 * then it is answered whole. */
struct mail_stream {
	struct control *c;
	int64_t mail_id;
	char *from;
	struct cmd_stream *cs;
	struct buf f;    /* its frames so far */
	bool woken;
	struct mail_stream *next;
};

/* A forwarded wait the planner holds (the long poll above). */
struct mail_wait {
	struct control *c;
	int64_t mail_id;
	int64_t request;
	char *from;
	void *watch;     /* NULL once the request finished */
	uint64_t until;  /* uv_now after which it is answered anyway */
	struct mail_wait *next;
};

struct write_req {
	uv_write_t req;
	struct client *cl;
	size_t len;
	char *data;
};

static void client_close(struct client *cl);
static void control_mail_stream_free(struct mail_stream *ms);
static void control_hold_release(struct control *c, bool all);
static void client_finish(struct client *cl);
static void client_kick(struct client *cl);
static void client_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b);
static void client_read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *b);

/* A write is done: release its bytes and produce or read more. */
static void
control_write_cb(uv_write_t *req, int status)
{
	struct write_req *wr = (struct write_req *)req;
	struct client *cl = wr->cl;

	cl->queued -= wr->len;
	free(wr->data);
	free(wr);
	if (cl->closing)
		return;
	if (status < 0) {
		client_close(cl);
		return;
	}
	client_kick(cl);
}

static void client_queue(struct client *cl, struct buf *frame);

/* Queue a built frame to a client (takes the buffer's data). */
static void
client_send(struct client *cl, struct buf *frame)
{
	if (cl->closing) {
		buf_free(frame);
		return;
	}
	/* nothing is acknowledged uncommitted: when the commit fails, the
	 * answer becomes that error (scheduler.c, rule 7) */
	if (sched_flush(cl->c->sched) < 0) {
		const char *why = "";

		sched_store_failed(cl->c->sched, &why, NULL);
		buf_reset(frame);
		proto_begin(frame, PROTO_RESPONSE);
		proto_add_int(frame, "status", EXIT_WORK_FAILED);
		proto_addf(frame, "err", "the state store cannot be written (%s):"
			   " what was asked was not recorded; %stry again", why,
			   config_is_cluster(sched_config(cl->c->sched)) ? "" :
			   "free space on its filesystem and ");
		proto_end(frame);
	}
	client_queue(cl, frame);
}

/* Queue a frame as it is: client_send's, or the planner's answer to a
 * request this node forwarded, which the planner committed and this
 * node's own store (failed or not) has no say in. */
static void
client_queue(struct client *cl, struct buf *frame)
{
	struct write_req *wr;
	uv_buf_t b;
	size_t len = frame->len;

	if (cl->closing) {
		buf_free(frame);
		return;
	}
	wr = calloc(1, sizeof *wr);
	if (wr == NULL) {
		buf_free(frame);
		client_close(cl);
		return;
	}
	wr->cl = cl;
	wr->len = len;
	wr->data = buf_steal(frame);
	b = uv_buf_init(wr->data, (unsigned)len);
	if (uv_write(&wr->req, (uv_stream_t *)&cl->pipe, &b, 1,
		     control_write_cb) < 0) {
		free(wr->data);
		free(wr);
		client_close(cl);
		return;
	}
	cl->queued += len;
}

/* Send text for stdout as DATA frames of at most CONTROL_DATA_MAX bytes,
 * cut between UTF-8 sequences. */
static void
client_send_data(struct client *cl, const char *data, size_t len)
{
	struct buf f;
	size_t off = 0, n;

	buf_init(&f);
	while (off < len && !cl->closing) {
		n = len - off;
		if (n > CONTROL_DATA_MAX) {
			n = CONTROL_DATA_MAX;
			while (n > 1 && ((unsigned char)data[off + n] & 0xc0) ==
			       0x80)
				n--;
		}
		proto_begin(&f, PROTO_DATA);
		proto_add_n(&f, "out", data + off, n);
		proto_end(&f);
		client_send(cl, &f);
		off += n;
	}
	buf_free(&f);
}

/* The queued answers are written: close. */
static void
client_shutdown_cb(uv_shutdown_t *req, int status)
{
	struct client *cl = req->data;

	(void)status;
	free(req);
	client_close(cl);
}

/* Start or stop reading: a client is read only while nothing holds its
 * next request back (a stream, unsent output at the bound). */
static void
client_reading(struct client *cl)
{
	bool want = !cl->closing && !cl->finishing && !cl->refused &&
	    cl->stream == NULL && cl->queued < CONTROL_QUEUE_MAX;

	if (want == cl->reading)
		return;
	cl->reading = want;
	if (want)
		uv_read_start((uv_stream_t *)&cl->pipe, client_alloc_cb,
			      client_read_cb);
	else
		uv_read_stop((uv_stream_t *)&cl->pipe);
}

/* Stop reading, let queued answers go out, then close. */
static void
client_finish(struct client *cl)
{
	uv_shutdown_t *req;

	if (cl->closing || cl->finishing)
		return;
	cl->finishing = true;
	client_reading(cl);
	req = calloc(1, sizeof *req);
	if (req == NULL) {
		client_close(cl);
		return;
	}
	req->data = cl;
	if (uv_shutdown(req, (uv_stream_t *)&cl->pipe, client_shutdown_cb) < 0) {
		free(req);
		client_close(cl);
	}
}

/* Send a RESPONSE with a status and an error line. */
static void
client_error(struct client *cl, int status, const char *msg)
{
	struct buf f;

	buf_init(&f);
	proto_begin(&f, PROTO_RESPONSE);
	proto_add_int(&f, "status", status);
	proto_add(&f, "err", msg);
	proto_end(&f);
	client_send(cl, &f);
}

/* One of a client's handles closed; free it after the last. */
static void
client_handle_closed_cb(uv_handle_t *h)
{
	struct client *cl = h->data;

	if (--cl->handles > 0)
		return;
	free(cl->rbuf);
	free(cl->fwd);
	free(cl->fwd_status);
	free(cl);
}

/* Close a connection (idempotent); a stream in progress is freed now. */
static void
client_close(struct client *cl)
{
	if (cl->closing)
		return;
	cl->closing = true;
	if (cl->watch) {
		sched_unwatch(cl->c->sched, cl->watch);
		cl->watch = NULL;
	}
	if (cl->stream) {
		cl->stream->free(cl->stream);
		cl->stream = NULL;
	}
	buf_free(&cl->resp);
	if (!cl->refused)
		cl->c->nclients--;
	cl->prev->next = cl->next;
	cl->next->prev = cl->prev;
	cl->handles = cl->forwarding ? 5 : 4; /* the answer is one */
	uv_close((uv_handle_t *)&cl->throttle, client_handle_closed_cb);
	uv_close((uv_handle_t *)&cl->pump, client_handle_closed_cb);
	uv_close((uv_handle_t *)&cl->idle, client_handle_closed_cb);
	uv_close((uv_handle_t *)&cl->pipe, client_handle_closed_cb);
}

/* Add the progress fields to a frame. */
static void
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
static void
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

/* A request field, for cmdspec_check (cmdspec_get_fn). */
static const char *
control_req_get(const void *src, const char *field)
{
	return proto_get(src, field);
}

/* cmd=wait: stream progress until the request is done. */
static void
client_wait(struct client *cl, const struct proto_msg *req)
{
	long long id;
	struct sched_progress p;
	struct err err;

	/* backfillctl wait REQUEST and --wait: the one specification's
	 * check (cmdspec.c), then a positive id */
	if (cmdspec_check(&cmdspec_wait, control_req_get, req, false,
			  &err) < 0) {
		client_error(cl, err.code, err.msg);
		return;
	}
	if (proto_get_int(req, "request", &id) < 0 || id <= 0) {
		client_error(cl, EXIT_BAD_INPUT,
			     "wait needs request=N with a positive request id");
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
static void
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

static bool control_peer_may_change(struct control *c, int fd);

/* The peer's user, for what is recorded with its name (mark): its login
 * name, or "uid N" when it has none; "unknown" without credentials. */
static void
control_peer_name(int fd, char *out, size_t size)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	struct passwd *pw;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		snprintf(out, size, "unknown");
		return;
	}
	pw = getpwuid(cred.uid);
	if (pw != NULL && pw->pw_name != NULL && pw->pw_name[0] != '\0')
		snprintf(out, size, "%s", pw->pw_name);
	else
		snprintf(out, size, "uid %u", (unsigned)cred.uid);
}

/* Answer one request (from_memory: cmd_ctx's, or NULL). */
static void
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
	if (strcmp(cmd, "wait") == 0) {
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
static void
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

/* Several hosts: is this request the planner's to answer?  `status` on
 * a node that cannot reach the state store is answered here, from this
 * node's memory (nobody can be asked); so is one the planner did not
 * answer (client_forward_cb). */
static bool
client_forwards(struct client *cl, const struct proto_msg *req)
{
	struct cluster_state st;
	const char *cmd = proto_get(req, "cmd");

	if (cl->c->drv == NULL || req->type != PROTO_REQUEST || cmd == NULL)
		return false;
	cl->c->drv->state(cl->c->cluster, &st);
	if (st.role == CLUSTER_PLANNER)
		return false;
	if (!st.db_ok && strcmp(cmd, "status") == 0)
		return false;
	/* served here: runs reads the shared store; reload reads this
	 * node's own configuration; logs this node's log folder */
	return strcmp(cmd, "runs") != 0 && strcmp(cmd, "reload") != 0 &&
	    strcmp(cmd, "logs") != 0;
}

static void client_forward_again_cb(uv_timer_t *t);

/* No planner answered a forwarded request: one line, exit 3; a status
 * is answered here instead, from this node's memory, saying why. */
static void
client_forward_fail(struct client *cl, const char *why)
{
	char msg[ERR_MSG_MAX + 256];
	struct cluster_state st;
	struct proto_msg req;
	struct err err;
	size_t used;

	if (cl->fwd_status != NULL) {
		char *raw = cl->fwd_status;

		cl->fwd_status = NULL;
		snprintf(msg, sizeof msg, "the planner could not be asked: %s",
			 why ? why : "no answer");
		if (proto_parse(raw, cl->fwd_status_len, &used, &req,
				&err) > 0) {
			client_handle_here(cl, &req, msg);
			proto_msg_free(&req);
			free(raw);
			return;
		}
		free(raw);
	}
	cl->c->drv->state(cl->c->cluster, &st);
	if (!st.db_ok)
		snprintf(msg, sizeof msg, "state store lost: %.900s; no planner"
			 " can be reached from this node", st.db_error[0] ?
			 st.db_error : why ? why : "unreachable");
	else if (why != NULL &&
		 strncmp(why, "the planner changed", 19) == 0)
		snprintf(msg, sizeof msg, "%.900s", why);
	else
		snprintf(msg, sizeof msg, "no planner answered: %.900s; none"
			 " holds the lease of the shared state store now (see"
			 " the logs of the nodes)", why ? why : "unreachable");
	client_error(cl, EXIT_UNREACHABLE, msg);
}

/* Is this answer one PROGRESS frame (a held wait, not finished)? */
static bool
control_is_progress(const void *resp, size_t len)
{
	struct proto_msg msg;
	struct err err;
	size_t used;
	bool yes;

	if (proto_parse(resp, len, &used, &msg, &err) <= 0)
		return false;
	yes = msg.type == PROTO_PROGRESS && used == len;
	proto_msg_free(&msg);
	return yes;
}

/* A forwarded wait not finished: ask the planner again in `ms`. */
static void
client_forward_again(struct client *cl, uint64_t ms)
{
	cl->fwd_wait = true;
	uv_timer_start(&cl->throttle, client_forward_again_cb, ms, 0);
}

/* The planner's answer to a forwarded request. */
static void
client_forward_cb(void *arg, int status, const void *resp, size_t len,
		  const char *why)
{
	struct client *cl = arg;
	struct buf f;

	cl->forwarding = false;
	if (cl->closing) {
		client_handle_closed_cb((uv_handle_t *)&cl->pipe);
		return;
	}
	if (status < 0 && cl->fwd != NULL && ++cl->fwd_fails < FWD_WAIT_TRIES) {
		log_info("control: a forwarded wait failed (%s); asking the"
			 " planner again", why ? why : "no answer");
		client_forward_again(cl, FWD_AGAIN_MS);
		return;
	}
	if (status < 0) {
		client_forward_fail(cl, why);
	} else if (len == 0 && cl->fwd != NULL) {
		cl->fwd_fails = 0;
		client_forward_again(cl, FWD_AGAIN_MS);
		return;
	} else if (cl->fwd != NULL && control_is_progress(resp, len)) {
		cl->fwd_fails = 0;
		buf_init(&f);
		buf_add(&f, resp, len);
		client_queue(cl, &f);
		client_forward_again(cl, 0);
		return;
	} else {
		buf_init(&f);
		buf_add(&f, resp, len);
		client_queue(cl, &f);
	}
	free(cl->fwd);
	cl->fwd = NULL;
	free(cl->fwd_status);
	cl->fwd_status = NULL;
	client_kick(cl);
}

/* How long the planner may take to answer req: the lease and 2 s, and
 * for a request that runs a proof first, FWD_PROOF_MS or twice its job's
 * timeout more (a planner that goes away meanwhile fails it sooner: the
 * cluster sees the lease move, cluster.h). */
static int64_t
client_forward_ms(struct client *cl, const struct proto_msg *req)
{
	const struct config *cfg = sched_config(cl->c->sched);
	const char *cmd = proto_get(req, "cmd"), *job = proto_get(req, "job");
	const char *v = proto_get(req, "verify"), *dry = proto_get(req,
								  "dry_run");
	const struct job_def *j = job != NULL ? config_job(cfg, job) : NULL;
	int64_t ms = (cfg->lease + 2) * 1000;
	bool proof;

	proof = strcmp(cmd, "verify") == 0 ||
		((strcmp(cmd, "backfill") == 0 || strcmp(cmd, "rerun") == 0) &&
		 ((v != NULL && strcmp(v, "1") == 0) ||
		  (j != NULL && j->verify &&
		   (dry == NULL || strcmp(dry, "1") != 0))));
	if (proof)
		ms += j != NULL && j->timeout > 0 ? 2 * j->timeout * 1000 :
		      FWD_PROOF_MS;
	return ms;
}

/* Send a request to the planner. */
static void
client_forward_send(struct client *cl, const void *req, size_t len)
{
	const struct config *cfg = sched_config(cl->c->sched);
	struct err err;
	int64_t ms = cl->fwd_ms > 0 ? cl->fwd_ms : (cfg->lease + 2) * 1000;

	cl->forwarding = true;
	if (cl->c->drv->forward(cl->c->cluster, req, len, ms,
				client_forward_cb, cl, &err) < 0) {
		cl->forwarding = false;
		client_forward_fail(cl, err.msg);
		free(cl->fwd);
		cl->fwd = NULL;
	}
}

/* A forwarded wait: ask the planner again. */
static void
client_forward_again_cb(uv_timer_t *t)
{
	struct client *cl = t->data;

	cl->fwd_wait = false;
	if (!cl->closing && cl->fwd != NULL)
		client_forward_send(cl, cl->fwd, cl->fwd_len);
	if (!cl->closing && !cl->forwarding)
		client_kick(cl);
}

/* Forward one request to the planner, its rights checked here. */
static void
client_forward(struct client *cl, const struct proto_msg *req,
	       const char *raw, size_t len)
{
	uv_os_fd_t fd = -1;

	if (uv_fileno((uv_handle_t *)&cl->pipe, &fd) == 0)
		cl->may_change = control_peer_may_change(cl->c, fd);
	if (cmd_request_mutates(req) && !cl->may_change) {
		client_error(cl, EXIT_BAD_INPUT, "permission denied: this"
			     " command changes state and needs root, the"
			     " daemon's user or the socket's group");
		return;
	}
	if (strcmp(proto_get(req, "cmd"), "wait") == 0) {
		free(cl->fwd);
		cl->fwd = xmalloc(len);
		memcpy(cl->fwd, raw, len);
		cl->fwd_len = len;
		cl->fwd_fails = 0;
	} else if (strcmp(proto_get(req, "cmd"), "status") == 0) {
		free(cl->fwd_status);
		cl->fwd_status = xmalloc(len);
		memcpy(cl->fwd_status, raw, len);
		cl->fwd_status_len = len;
	}
	cl->fwd_ms = client_forward_ms(cl, req);
	if (cmd_request_mutates(req)) {
		/* the planner records the peer's name (mark): this node
		 * says who it is, over any peer= the client sent */
		struct buf f;
		char peer[128];

		control_peer_name(fd, peer, sizeof peer);
		buf_init(&f);
		proto_begin(&f, PROTO_REQUEST);
		for (size_t i = 0; i < req->nfields; i++)
			if (strcmp(req->fields[i].key, "peer") != 0)
				proto_add_n(&f, req->fields[i].key,
					    req->fields[i].value,
					    req->fields[i].value_len);
		proto_addf(&f, "peer", "%s@%s", peer,
			   sched_config(cl->c->sched)->node);
		proto_end(&f);
		client_forward_send(cl, f.data, f.len);
		buf_free(&f);
		return;
	}
	client_forward_send(cl, raw, len);
}

/* Answer the complete requests read so far, one at a time, while nothing
 * holds them back; then read more if nothing does. */
static void
client_process(struct client *cl)
{
	struct proto_msg msg;
	struct err err;
	size_t used;
	int rc;
	char why[256];

	while (!cl->closing && !cl->finishing && cl->stream == NULL &&
	       !cl->forwarding && !cl->fwd_wait && cl->queued < CONTROL_QUEUE_MAX) {
		rc = proto_parse(cl->rbuf ? cl->rbuf : "", cl->rlen, &used,
				 &msg, &err);
		if (rc == 0 && cl->rlen >= PROTO_HEADER &&
		    proto_body_len(cl->rbuf) > PROTO_MAX_REQUEST) {
			snprintf(why, sizeof why, "a request of %zu bytes is "
				 "longer than the limit of %u bytes: send less "
				 "(e.g. split a long dates file)",
				 proto_body_len(cl->rbuf), PROTO_MAX_REQUEST);
			err_set(&err, EXIT_BAD_INPUT, "%s", why);
			rc = -1;
		}
		if (rc == 0)
			break;
		if (rc < 0) {
			log_warn("control: closing a connection: %s", err.msg);
			client_error(cl, EXIT_BAD_INPUT, err.msg);
			client_finish(cl);
			return;
		}
		if (client_forwards(cl, &msg))
			client_forward(cl, &msg, cl->rbuf, used);
		else
			client_handle(cl, &msg);
		memmove(cl->rbuf, cl->rbuf + used, cl->rlen - used);
		cl->rlen -= used;
		proto_msg_free(&msg);
	}
	/* drop a large buffer once it is empty again */
	if (cl->rlen == 0 && cl->rcap > 4 * READ_CHUNK) {
		free(cl->rbuf);
		cl->rbuf = NULL;
		cl->rcap = 0;
	}
	client_reading(cl);
}

/* Output drained or a stream ended: resume the stream, or the requests. */
static void
client_kick(struct client *cl)
{
	if (cl->closing)
		return;
	if (cl->stream != NULL) {
		if (cl->queued < CONTROL_QUEUE_MAX)
			uv_idle_start(&cl->pump, client_pump_cb);
		return;
	}
	client_process(cl);
}

/* Give libuv a buffer to read into (the tail of the client's buffer). */
static void
client_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct client *cl = h->data;

	(void)hint;
	if (cl->rcap - cl->rlen < READ_CHUNK) {
		size_t ncap = cl->rlen + READ_CHUNK;
		char *p = realloc(cl->rbuf, ncap);

		if (p == NULL) {
			*b = uv_buf_init(NULL, 0);
			return;
		}
		cl->rbuf = p;
		cl->rcap = ncap;
	}
	*b = uv_buf_init(cl->rbuf + cl->rlen, (unsigned)(cl->rcap - cl->rlen));
}

/* Bytes arrived: parse and answer the complete frames. */
static void
client_read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct client *cl = st->data;

	(void)b;
	if (n < 0) {
		client_close(cl);
		return;
	}
	cl->rlen += (size_t)n;
	cl->last_active = uv_now(cl->c->loop);
	uv_timer_again(&cl->idle);
	client_process(cl);
}

/* The idle timer: close a connection with nothing in progress. */
static void
client_idle_cb(uv_timer_t *t)
{
	struct client *cl = t->data;

	if (cl->closing || cl->finishing || cl->stream != NULL ||
	    cl->watch != NULL || cl->queued > 0 || cl->forwarding ||
	    cl->fwd != NULL)
		return; /* busy: the timer repeats */
	log_info("control: closing a connection idle for %" PRIu64 " ms",
		 cl->c->idle_ms);
	client_close(cl);
}

/* Count one event; the number to log now (those since the last line,
 * this one included), or 0 while the last line is recent. */
static int
control_ratelog(struct control_ratelog *rl, uint64_t now)
{
	int n;

	rl->count++;
	if (rl->ever && now - rl->logged < CONTROL_RATELOG_MS)
		return 0;
	n = rl->count;
	rl->count = 0;
	rl->logged = now;
	rl->ever = true;
	return n;
}

/* The connection idle the longest (nothing in progress: no stream, no
 * wait, no unsent output), so that idle clients can never lock operators
 * out; NULL when every connection is busy. */
static struct client *
control_idlest(struct control *c)
{
	struct client *best = NULL;

	for (struct client *cl = c->clients.next; cl != &c->clients;
	     cl = cl->next) {
		if (cl->closing || cl->finishing || cl->refused ||
		    cl->stream != NULL || cl->watch != NULL || cl->queued > 0 ||
		    cl->forwarding || cl->fwd != NULL ||
		    cl->last_active == 0)
			continue;
		/* the list is newest first: on a tie (same millisecond),
		 * the later one in it, the older connection, wins */
		if (best == NULL || cl->last_active <= best->last_active)
			best = cl;
	}
	return best;
}

/* At the cap: close the connection idle the longest; false when every
 * connection is busy. */
static bool
control_evict_idle(struct control *c)
{
	struct client *best = control_idlest(c);
	uint64_t now;
	int n;

	if (best == NULL)
		return false;
	now = uv_now(c->loop);
	if ((n = control_ratelog(&c->evictions, now)) > 0)
		log_info("control: %d connections: closed %d idle connection(s)"
			 " to serve new ones (the last idle for %" PRIu64 " ms);"
			 " at most one such line per %d s", CONTROL_MAX_CLIENTS,
			 n, now - best->last_active, CONTROL_RATELOG_MS / 1000);
	client_close(best);
	return true;
}

/* Refuse a connection over the cap: answer why (exit 3) and close; log
 * it at most once per CONTROL_RATELOG_MS with a count. */
static void
control_refuse(struct control *c, struct client *cl)
{
	char msg[256];
	int n;

	cl->refused = true;
	snprintf(msg, sizeof msg, "too many connections to backfilld (%d): it"
		 " serves at most %d at once; close idle clients (other"
		 " backfillctl calls, scripts holding the socket) and retry",
		 CONTROL_MAX_CLIENTS, CONTROL_MAX_CLIENTS);
	client_error(cl, EXIT_UNREACHABLE, msg);
	client_finish(cl);
	if ((n = control_ratelog(&c->refusals, uv_now(c->loop))) > 0)
		log_warn("control: refused %d connection(s): %d clients connected"
			 " already (the limit); close idle clients", n,
			 CONTROL_MAX_CLIENTS);
}

/* The descriptors kept in reserve (the file's head comment). */
static int
control_fd_reserve(const struct control *c)
{
	const struct config *cfg = sched_config(c->sched);

	return CONTROL_FD_RESERVE + 2 * (cfg != NULL ? cfg->max_concurrency :
					 4);
}

/* A connection accepted: with fewer descriptors free than the reserve,
 * close the connection idle the longest, or refuse this one (true). */
static bool
control_fd_guard(struct control *c, struct client *cl)
{
	int reserve = control_fd_reserve(c), nfree = proc_fd_free();
	struct client *idle;
	char msg[256];

	if (nfree < 0 || nfree >= reserve) {
		if (c->fd_short && nfree >= 0)
			log_notice("control: %d descriptors free again (the"
				   " reserve is %d): %d connection(s) refused"
				   " and %d idle one(s) closed meanwhile", nfree,
				   reserve, c->fd_refused, c->fd_closed);
		c->fd_short = false;
		return false;
	}
	if (!c->fd_short)
		log_warn("control: only %d descriptors free, below the %d kept"
			 " for runs and connections to the stores (the limit"
			 " of open files, ulimit -n, is too low for %d"
			 " clients): closing idle connections, refusing new"
			 " ones while every other one is busy", nfree, reserve,
			 c->nclients);
	if (!c->fd_short)
		c->fd_refused = c->fd_closed = 0;
	c->fd_short = true;
	if ((idle = control_idlest(c)) != NULL && idle != cl) {
		client_close(idle);
		c->fd_closed++;
		return false;
	}
	c->fd_refused++;
	cl->refused = true;
	snprintf(msg, sizeof msg, "backfilld has too few descriptors free (%d,"
		 " %d kept for its own work): it serves no more connections"
		 " now; close other clients, raise its limit of open files"
		 " (LimitNOFILE=), and retry", nfree, reserve);
	client_error(cl, EXIT_UNREACHABLE, msg);
	client_finish(cl);
	return true;
}

/* May this peer change state? */
static bool
control_peer_may_change(struct control *c, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	struct passwd *pw;
	gid_t groups[256];
	int ngroups = 256;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	gid_t group = c->has_group ? c->group : getegid();

	if (cred.uid == 0 || cred.uid == geteuid() || cred.gid == group)
		return true;
	pw = getpwuid(cred.uid);
	if (pw == NULL || getgrouplist(pw->pw_name, pw->pw_gid, groups,
				       &ngroups) < 0)
		return false;
	for (int i = 0; i < ngroups; i++)
		if (groups[i] == group)
			return true;
	return false;
}

/* A client connected. */
static void
control_connection_cb(uv_stream_t *server, int status)
{
	struct control *c = server->data;
	struct client *cl;
	uv_os_fd_t fd;

	if (status < 0) {
		log_warn("control: accept failed: %s", uv_strerror(status));
		return;
	}
	cl = calloc(1, sizeof *cl);
	if (cl == NULL)
		return;
	cl->c = c;
	buf_init(&cl->resp);
	uv_pipe_init(c->loop, &cl->pipe, 0);
	cl->pipe.data = cl;
	uv_timer_init(c->loop, &cl->throttle);
	cl->throttle.data = cl;
	uv_idle_init(c->loop, &cl->pump);
	cl->pump.data = cl;
	uv_timer_init(c->loop, &cl->idle);
	cl->idle.data = cl;
	cl->next = c->clients.next;
	cl->prev = &c->clients;
	c->clients.next->prev = cl;
	c->clients.next = cl;
	c->nclients++;
	if (uv_accept(server, (uv_stream_t *)&cl->pipe) < 0) {
		client_close(cl);
		return;
	}
	if (c->nclients > CONTROL_MAX_CLIENTS && !control_evict_idle(c)) {
		c->nclients--;
		control_refuse(c, cl);
		return;
	}
	if (control_fd_guard(c, cl)) {
		c->nclients--;
		return;
	}
	cl->last_active = uv_now(c->loop);
	if (uv_fileno((uv_handle_t *)&cl->pipe, &fd) == 0)
		cl->may_change = control_peer_may_change(c, fd);
	uv_timer_start(&cl->idle, client_idle_cb, c->idle_ms, c->idle_ms);
	client_reading(cl);
}

/* Remove a socket file left by a dead daemon; refuse a live one. */
static int
control_clear_path(const char *path, struct err *err)
{
	struct sockaddr_un sa;
	struct stat sb;
	int fd;

	if (lstat(path, &sb) < 0)
		return 0;
	if (!S_ISSOCK(sb.st_mode))
		return err_set(err, EXIT_BAD_INPUT, "socket %s exists and is not"
			       " a socket: remove it or choose another path", path);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
		close(fd);
		return err_set(err, EXIT_BAD_INPUT, "another backfilld is listening"
			       " on %s: stop it first, or give this one another"
			       " socket", path);
	}
	if (fd >= 0)
		close(fd);
	unlink(path);
	return 0;
}

/* Listen on the socket a previous image of this process left open for
 * us (control_keep_for_exec): no connection is refused meanwhile. */
static int
control_adopt(struct control *c, const char *env, struct control **out,
	      struct err *err)
{
	int fd = atoi(env), rc;

	unsetenv("BACKFILLD_CONTROL_FD");
	uv_pipe_init(c->loop, &c->listener, 0);
	c->listener.data = c;
	*out = c;
	/* the image before cleared the flag to hand it over: set it again,
	 * or every command run would inherit the socket */
	if (fd > 2)
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (fd <= 2 || (rc = uv_pipe_open(&c->listener, fd)) < 0 ||
	    (rc = uv_listen((uv_stream_t *)&c->listener, 64,
			    control_connection_cb)) < 0) {
		c->closing = true;
		uv_close((uv_handle_t *)&c->listener, NULL);
		return err_set(err, EXIT_BAD_INPUT, "cannot listen on %s again"
			       " after restarting in place: %s", c->path,
			       fd <= 2 ? "no socket" : uv_strerror(rc));
	}
	return 0;
}

void
control_keep_for_exec(struct control *c)
{
	uv_os_fd_t fd;
	char buf[16];

	if (c == NULL || c->closing ||
	    uv_fileno((uv_handle_t *)&c->listener, &fd) != 0 ||
	    fcntl(fd, F_SETFD, 0) < 0)
		return;
	snprintf(buf, sizeof buf, "%d", fd);
	setenv("BACKFILLD_CONTROL_FD", buf, 1);
}

int
control_forwarding(const struct control *c)
{
	int n = 0;

	if (c == NULL)
		return 0;
	for (const struct client *cl = c->clients.next; cl != &c->clients;
	     cl = cl->next)
		if (!cl->closing && cl->forwarding)
			n++;
	return n;
}

int
control_new(uv_loop_t *loop, struct sched *s, const char *path,
	    const char *group, cmd_reload_fn *reload,
	    void *reload_data, struct control **out, struct err *err)
{
	struct control *c;
	struct group *gr;
	const char *env;
	int rc;

	if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return err_set(err, EXIT_BAD_INPUT, "socket path %s is too long"
			       " for a unix socket (%zu bytes at most): choose a"
			       " shorter socket path", path,
			       sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
	c = calloc(1, sizeof *c);
	if (c == NULL)
		return err_set(err, EXIT_INTERNAL, "out of memory");
	c->loop = loop;
	c->sched = s;
	c->reload = reload;
	c->reload_data = reload_data;
	c->clients.next = c->clients.prev = &c->clients;
	c->idle_ms = CONTROL_IDLE_TIMEOUT_MS;
	if ((env = getenv("BACKFILLD_TEST_IDLE_TIMEOUT_MS")) != NULL &&
	    atoll(env) > 0)
		c->idle_ms = (uint64_t)atoll(env);
	c->path = strdup(path);
	if (group != NULL) {
		gr = getgrnam(group);
		if (gr == NULL) {
			free(c->path);
			free(c);
			return err_set(err, EXIT_BAD_INPUT, "socket_group \"%s\" does"
				       " not exist: create it (groupadd) or change"
				       " socket_group", group);
		}
		c->has_group = true;
		c->group = gr->gr_gid;
	}
	if ((env = getenv("BACKFILLD_CONTROL_FD")) != NULL)
		return control_adopt(c, env, out, err);
	if (control_clear_path(path, err) < 0) {
		free(c->path);
		free(c);
		return -1;
	}
	uv_pipe_init(loop, &c->listener, 0);
	c->listener.data = c;
	if ((rc = uv_pipe_bind(&c->listener, path)) < 0) {
		err_set(err, EXIT_BAD_INPUT, "cannot listen on %s: %s; check that"
			" its folder exists and is writable", path, uv_strerror(rc));
		goto fail;
	}
	if (chmod(path, 0660) < 0 ||
	    (c->has_group && chown(path, (uid_t)-1, c->group) < 0)) {
		err_set(err, EXIT_BAD_INPUT, "cannot set the mode or group of %s:"
			" %s", path, strerror(errno));
		goto fail;
	}
	if ((rc = uv_listen((uv_stream_t *)&c->listener, 64,
			    control_connection_cb)) < 0) {
		err_set(err, EXIT_BAD_INPUT, "cannot listen on %s: %s", path,
			uv_strerror(rc));
		goto fail;
	}
	*out = c;
	return 0;
fail:
	c->closing = true;
	uv_close((uv_handle_t *)&c->listener, NULL);
	*out = c; /* the caller closes and frees it after the loop turn */
	return -1;
}

void
control_close(struct control *c)
{
	if (c == NULL)
		return;
	while (c->clients.next != &c->clients)
		client_close(c->clients.next);
	if (c->held != NULL)
		control_hold_release(c, true);
	if (c->hold_init && !uv_is_closing((uv_handle_t *)&c->hold))
		uv_close((uv_handle_t *)&c->hold, NULL);
	while (c->streams != NULL) {
		struct mail_stream *ms = c->streams;

		c->streams = ms->next;
		control_mail_stream_free(ms);
	}
	if (c->stream_init &&
	    !uv_is_closing((uv_handle_t *)&c->stream_pump))
		uv_close((uv_handle_t *)&c->stream_pump, NULL);
	if (c->mail_again_init &&
	    !uv_is_closing((uv_handle_t *)&c->mail_again))
		uv_close((uv_handle_t *)&c->mail_again, NULL);
	if (!c->closing) {
		c->closing = true;
		uv_close((uv_handle_t *)&c->listener, NULL);
		unlink(c->path);
	}
}

void
control_free(struct control *c)
{
	if (c == NULL)
		return;
	free(c->path);
	free(c);
}

void
control_set_cluster(struct control *c, const struct cluster_driver *drv,
		    struct cluster *cluster)
{
	c->drv = drv;
	c->cluster = cluster;
}

/* DATA frames of text, into f. */
static void
control_data_frames(struct buf *f, const char *data, size_t len)
{
	size_t off = 0, n;

	while (off < len) {
		n = len - off;
		if (n > CONTROL_DATA_MAX) {
			n = CONTROL_DATA_MAX;
			while (n > 1 && ((unsigned char)data[off + n] & 0xc0) ==
			       0x80)
				n--;
		}
		proto_begin(f, PROTO_DATA);
		proto_add_n(f, "out", data + off, n);
		proto_end(f);
		off += n;
	}
}

static int control_mail_answer(struct control *c, int64_t id,
			       const char *from, const struct buf *f);
static void control_mail_stream_pump_cb(uv_idle_t *h);

/* A held stream has more (its wake): go on with it next loop turn. */
static void
control_mail_stream_wake(void *data)
{
	struct mail_stream *ms = data;

	ms->woken = true;
	if (!ms->c->closing)
		uv_idle_start(&ms->c->stream_pump, control_mail_stream_pump_cb);
}

/* Pull a stream's pages into ms->f until it pauses (0) or ends (1: the
 * RESPONSE appended, the stream freed). */
static int
control_mail_stream_run(struct mail_stream *ms)
{
	struct buf out, resp;
	int rc;

	do {
		buf_init(&out);
		rc = ms->cs->next(ms->cs, &out);
		if (ms->f.len + out.len < CLUSTER_MAIL_MAX - 4096)
			control_data_frames(&ms->f, out.data, out.len);
		buf_free(&out);
	} while (rc == 0);
	if (rc == CMD_STREAM_PAUSE)
		return 0;
	buf_init(&resp);
	proto_begin(&resp, PROTO_RESPONSE);
	cmd_stream_end(ms->cs, &resp);
	ms->cs = NULL;
	proto_end(&resp);
	buf_add(&ms->f, resp.data, resp.len);
	buf_free(&resp);
	return 1;
}

/* Free a held stream (its stream too, if not ended: a proof in flight
 * is orphaned, verify.c). */
static void
control_mail_stream_free(struct mail_stream *ms)
{
	if (ms->cs != NULL)
		ms->cs->free(ms->cs);
	buf_free(&ms->f);
	free(ms->from);
	free(ms);
}

/* The held streams woken: go on; answer those that ended. */
static void
control_mail_stream_pump_cb(uv_idle_t *h)
{
	struct control *c = h->data;
	struct mail_stream **pp = &c->streams, *ms;

	uv_idle_stop(h);
	while ((ms = *pp) != NULL) {
		if (!ms->woken) {
			pp = &ms->next;
			continue;
		}
		ms->woken = false;
		if (control_mail_stream_run(ms) == 0) {
			pp = &ms->next;
			continue;
		}
		*pp = ms->next;
		sched_flush(c->sched); /* nothing acknowledged uncommitted */
		control_mail_answer(c, ms->mail_id, ms->from, &ms->f);
		control_mail_stream_free(ms);
	}
}

/* Hold a forwarded request's stream that paused until it ends. */
static void
control_mail_stream_hold(struct control *c, const struct cluster_mail *m,
			 struct cmd_stream *cs, struct buf *f)
{
	struct mail_stream *ms = xcalloc(1, sizeof *ms);

	if (!c->stream_init) {
		uv_idle_init(c->loop, &c->stream_pump);
		c->stream_pump.data = c;
		c->stream_init = true;
	}
	ms->c = c;
	ms->mail_id = m->id;
	ms->from = xstrdup(m->from);
	ms->cs = cs;
	ms->f = *f; /* its frames so far: the hold owns them */
	buf_init(f);
	cs->wake = control_mail_stream_wake;
	cs->wake_data = ms;
	ms->next = c->streams;
	c->streams = ms;
}

/* One forwarded request, answered into f.  Returns 1, f empty, for a
 * wait whose request is not finished (held, or asked again); 2 for a
 * stream that paused (held: control_mail_stream_hold). */
static int
control_mail_one(struct control *c, const struct cluster_mail *m,
		 const struct proto_msg *req, struct buf *f)
{
	struct cmd_ctx ctx = {.sched = c->sched, .reload = c->reload,
		.reload_data = c->reload_data, .may_change = true,
		.cluster_drv = c->drv, .cluster = c->cluster,
		.peer = proto_get(req, "peer")};
	struct cmd_stream *stream;
	struct sched_progress p;
	struct err err;
	long long id;
	const char *cmd = proto_get(req, "cmd");

	if (cmd != NULL && strcmp(cmd, "wait") == 0) {
		if (proto_get_int(req, "request", &id) < 0 || id <= 0 ||
		    sched_progress(c->sched, id, &p, &err) < 0) {
			proto_begin(f, PROTO_RESPONSE);
			proto_add_int(f, "status", EXIT_BAD_INPUT);
			proto_add(f, "err", id <= 0 ? "wait needs request=N"
				  " with a positive request id" : err.msg);
			proto_end(f);
		} else if (p.finished) {
			control_wait_done(c->sched, id, &p, f);
		} else {
			return 1;
		}
		return 0;
	}
	proto_begin(f, PROTO_RESPONSE);
	cmd_run(&ctx, req, f, &stream);
	if (stream != NULL) {
		struct mail_stream ms = { .c = c, .cs = stream };

		buf_reset(f);
		ms.f = *f;
		buf_init(f);
		if (control_mail_stream_run(&ms) == 0) {
			control_mail_stream_hold(c, m, stream, &ms.f);
			buf_free(&ms.f);
			return 2;
		}
		*f = ms.f;
		return 0;
	}
	proto_end(f);
	return 0;
}

/* Answer a forwarded request: 0, or -1 when the store does not take
 * it (logged at most once per CONTROL_RATELOG_MS, with the count). */
static int
control_mail_answer(struct control *c, int64_t id, const char *from,
		    const struct buf *f)
{
	struct err err;
	int n;

	if (c->drv->mail_answer(c->cluster, id, f->data ? f->data : "",
				f->len, &err) == 0) {
		c->mail_again_ms = 0;
		return 0;
	}
	if ((n = control_ratelog(&c->answer_fails, uv_now(c->loop))) > 0)
		log_warn("control: cannot answer %s's request: %s (%d answers"
			 " not written since the last such line); the mailbox"
			 " is read again later", from, err.msg, n);
	return -1;
}

static void control_hold_cb(uv_timer_t *t);

/* Arm the hold timer for the earliest held wait due. */
static void
control_hold_arm(struct control *c)
{
	uint64_t now = uv_now(c->loop), first = UINT64_MAX;

	for (struct mail_wait *w = c->held; w != NULL; w = w->next)
		if (w->until < first)
			first = w->until;
	if (first == UINT64_MAX)
		uv_timer_stop(&c->hold);
	else
		uv_timer_start(&c->hold, control_hold_cb,
			       first > now ? first - now : 0, 0);
}

/* The scheduler reports a change of a held wait's request. */
static void
control_hold_watch_cb(void *data, const struct sched_progress *p)
{
	struct mail_wait *w = data;

	if (!p->finished)
		return;
	w->watch = NULL; /* a finished request's watch is gone */
	w->until = 0;
	control_hold_arm(w->c);
}

/* Answer the held waits due (all of them when `all`): the final RESPONSE
 * once their request finished, one PROGRESS frame otherwise. */
static void
control_hold_release(struct control *c, bool all)
{
	uint64_t now = uv_now(c->loop);
	struct mail_wait **pp = &c->held, *w;
	struct sched_progress p;
	struct err err;
	struct buf f;

	sched_flush(c->sched); /* a finish is answered once committed */
	while ((w = *pp) != NULL) {
		if (!all && w->until > now) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		c->nheld--;
		if (w->watch != NULL)
			sched_unwatch(c->sched, w->watch);
		buf_init(&f);
		if (sched_progress(c->sched, w->request, &p, &err) < 0) {
			proto_begin(&f, PROTO_RESPONSE);
			proto_add_int(&f, "status", err.code);
			proto_add(&f, "err", err.msg);
			proto_end(&f);
		} else if (p.finished) {
			control_wait_done(c->sched, w->request, &p, &f);
		} else {
			proto_begin(&f, PROTO_PROGRESS);
			proto_add_int(&f, "request", w->request);
			progress_fields(&f, &p);
			proto_end(&f);
		}
		control_mail_answer(c, w->mail_id, w->from, &f);
		buf_free(&f);
		free(w->from);
		free(w);
	}
	control_hold_arm(c);
}

/* Hold timer. */
static void
control_hold_cb(uv_timer_t *t)
{
	control_hold_release(t->data, false);
}

/* Hold a forwarded wait until its request finishes or MAIL_HOLD_MS pass.
 * Returns -1 when no more may be held. */
static int
control_hold(struct control *c, const struct cluster_mail *m,
	     int64_t request)
{
	struct mail_wait *w;

	if (c->nheld >= MAIL_HOLD_MAX || c->closing)
		return -1;
	if (!c->hold_init) {
		uv_timer_init(c->loop, &c->hold);
		c->hold.data = c;
		c->hold_init = true;
	}
	w = xcalloc(1, sizeof *w);
	w->c = c;
	w->mail_id = m->id;
	w->request = request;
	w->from = xstrdup(m->from);
	w->until = uv_now(c->loop) + MAIL_HOLD_MS;
	w->watch = sched_watch(c->sched, request, control_hold_watch_cb, w);
	if (w->watch == NULL)
		w->until = 0; /* finished meanwhile: answered next turn */
	w->next = c->held;
	c->held = w;
	c->nheld++;
	control_hold_arm(c);
	return 0;
}

/* The mailbox again, after an answer the store refused. */
static void
control_mail_again_cb(uv_timer_t *t)
{
	control_mail(t->data);
}

/*
 * Answer the requests waiting in the mailbox, oldest first.  An answer
 * the store does not take (a full disk, the connection lost) ends the
 * pass: its request stays in the mailbox, unanswered, and the mailbox is
 * read again MAIL_AGAIN_MS later, doubling up to MAIL_AGAIN_MAX_MS (or
 * at the next request's wake-up), never at once: the same request taken
 * and refused again and again would hold the loop.
 */
void
control_mail(struct control *c)
{
	struct cluster_mail *m;
	struct proto_msg msg;
	struct err err;
	size_t used;
	struct buf f;
	long long id;
	int held, rc;
	bool refused = false;

	if (c->closing)
		return;
	while (!refused && c->drv != NULL &&
	       c->drv->mail_take(c->cluster, &m, &err) == 0 && m != NULL) {
		buf_init(&f);
		held = -1;
		if (proto_parse(m->req, m->len, &used, &msg, &err) > 0) {
			rc = control_mail_one(c, m, &msg, &f);
			if (rc == 2)
				held = 0;
			else if (rc == 1 &&
				 proto_get_int(&msg, "request", &id) == 0)
				held = control_hold(c, m, id);
			proto_msg_free(&msg);
		} else {
			proto_begin(&f, PROTO_RESPONSE);
			proto_add_int(&f, "status", EXIT_BAD_INPUT);
			proto_add(&f, "err", "a forwarded request that is not"
				  " one frame");
			proto_end(&f);
		}
		if (held < 0) {
			/* nothing is acknowledged uncommitted (scheduler.c,
			 * rule 7) */
			sched_flush(c->sched);
			refused = control_mail_answer(c, m->id, m->from,
						      &f) < 0;
		}
		buf_free(&f);
		c->drv->mail_free(m);
	}
	if (!refused)
		return;
	if (!c->mail_again_init) {
		uv_timer_init(c->loop, &c->mail_again);
		c->mail_again.data = c;
		c->mail_again_init = true;
	}
	c->mail_again_ms = c->mail_again_ms == 0 ? MAIL_AGAIN_MS :
		c->mail_again_ms * 2 > MAIL_AGAIN_MAX_MS ? MAIL_AGAIN_MAX_MS :
		c->mail_again_ms * 2;
	uv_timer_start(&c->mail_again, control_mail_again_cb,
		       c->mail_again_ms, 0);
}
