/*
 * control.c - the control socket server: listening, accepting, the
 * bounds below, the peer's credentials, frames read and answers
 * written.  What a request becomes is control_answer.c's (here) or
 * control_forward.c's (the planner's, several hosts); the planner's
 * mailbox is control_mail.c's (control_int.h lists the four).
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
#include "control_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "proc.h"
#include "xalloc.h"

struct write_req {
	uv_write_t req;
	struct client *cl;
	size_t len;
	char *data;
};

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

/* Queue a built frame to a client (takes the buffer's data). */
void
client_send(struct client *cl, struct buf *frame)
{
	if (cl->closing) {
		buf_free(frame);
		return;
	}
	/* nothing is acknowledged uncommitted: when the commit fails, the
	 * answer becomes that error (scheduler.c, SCHED-7) */
	if (sched_flush(cl->c->sched) < 0) {
		char why[1024];

		/* SCHED-7: cmd.c's refusal of the commands after it */
		sched_store_refusal(cl->c->sched, why, sizeof why);
		buf_reset(frame);
		proto_begin(frame, PROTO_RESPONSE);
		proto_add_int(frame, "status", EXIT_WORK_FAILED);
		proto_addf(frame, "err", "%s", why);
		proto_end(frame);
	}
	client_queue(cl, frame);
}

/* Queue a frame as it is: client_send's, or the planner's answer to a
 * request this node forwarded, which the planner committed and this
 * node's own store (failed or not) has no say in. */
void
client_queue(struct client *cl, struct buf *frame)
{
	struct write_req *wr;
	uv_buf_t b;
	size_t len = frame->len;

	if (cl->closing) {
		buf_free(frame);
		return;
	}
	wr = xcalloc(1, sizeof *wr);
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

/* The length of the next DATA frame's `out` of text data[0..len): at
 * most CONTROL_DATA_MAX bytes, cut between UTF-8 sequences. */
size_t
control_data_chunk(const char *data, size_t len)
{
	size_t n = len;

	if (n > CONTROL_DATA_MAX) {
		n = CONTROL_DATA_MAX;
		while (n > 1 && ((unsigned char)data[n] & 0xc0) == 0x80)
			n--;
	}
	return n;
}

/* Send text for stdout as DATA frames of at most CONTROL_DATA_MAX bytes,
 * cut between UTF-8 sequences. */
void
client_send_data(struct client *cl, const char *data, size_t len)
{
	struct buf f;
	size_t off = 0, n;

	buf_init(&f);
	while (off < len && !cl->closing) {
		n = control_data_chunk(data + off, len - off);
		proto_begin(&f, PROTO_DATA);
		proto_add_n(&f, "out", data + off, n);
		proto_end(&f);
		client_send(cl, &f);
		off += n;
	}
	buf_free(&f);
}

/* Send outside bytes (a run's log) exactly, as DATA frames whose field
 * `bytes` carries at most PROTO_DATA_BYTES_MAX of them each, encoded. */
void
client_send_bytes(struct client *cl, const char *data, size_t len)
{
	struct buf f;
	size_t off = 0, n;

	buf_init(&f);
	while (off < len && !cl->closing) {
		n = len - off < PROTO_DATA_BYTES_MAX ? len - off :
		    PROTO_DATA_BYTES_MAX;
		proto_data_bytes(&f, data + off, n);
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
void
client_finish(struct client *cl)
{
	uv_shutdown_t *req;

	if (cl->closing || cl->finishing)
		return;
	cl->finishing = true;
	client_reading(cl);
	req = xcalloc(1, sizeof *req);
	req->data = cl;
	if (uv_shutdown(req, (uv_stream_t *)&cl->pipe, client_shutdown_cb) < 0) {
		free(req);
		client_close(cl);
	}
}

/* Send a RESPONSE with a status and an error line. */
void
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
void
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
void
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
void
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
		cl->rbuf = xreallocarray(cl->rbuf, ncap, 1);
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
int
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
bool
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

/* The peer's user, for what is recorded with its name (mark): its login
 * name, or "uid N" when it has none; "unknown" without credentials. */
void
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
	cl = xcalloc(1, sizeof *cl);
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
	c = xcalloc(1, sizeof *c);
	c->loop = loop;
	c->sched = s;
	c->reload = reload;
	c->reload_data = reload_data;
	c->clients.next = c->clients.prev = &c->clients;
	c->idle_ms = CONTROL_IDLE_TIMEOUT_MS;
	if ((env = getenv("BACKFILLD_TEST_IDLE_TIMEOUT_MS")) != NULL &&
	    atoll(env) > 0)
		c->idle_ms = (uint64_t)atoll(env);
	c->path = xstrdup(path);
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
