/*
 * httpd.c - the read-only HTTP endpoint (http_listen, docs/http.md).
 *
 * A uv_tcp_t listens on the address of http_listen; each connection
 * carries one request: its head is read (lib/util/http.c parses it), the
 * answer is rendered whole by the renderer the rest of the daemon uses
 * (metrics_render for /metrics, report_render_query for /report, the
 * status command's JSON for /status), written, and the connection is
 * closed (Connection: close).  Nothing served changes state, and nothing
 * is read but the head: a body is refused by the parser.
 *
 * An answer is a page (head and body in one buffer, counted references):
 * a /report page is kept HTTPD_REPORT_KEEP_MS and handed to every client
 * that asks the same query meanwhile, and report pages are rendered one
 * per turn of the loop (an idle handle), the clients waiting for one queued
 * in order of arrival: so clients that ask at once cost one rendering,
 * and the loop answers its other events between renderings.  A report
 * page is bounded (report.h), so a client that never reads holds at most
 * one page, shared, and what libuv was handed of it.
 *
 * Bounds, so that no client holds much memory or the loop for long:
 *  - at most HTTPD_MAX_CLIENTS connections are served; up to
 *    HTTPD_MAX_REFUSING more are answered 503 without being read, and any
 *    beyond those closed at once; refusals are logged at most once per
 *    HTTPD_RATELOG_MS with their count: the first at once, those of the
 *    next HTTPD_RATELOG_MS by a one-shot timer at its end (so the count of
 *    a flood is logged when it ends, not at the next refusal);
 *  - a head of at most HTTP_HEAD_MAX bytes, read into a fixed buffer of
 *    the connection (431 or 414 above it);
 *  - a connection whose head is not complete HTTPD_TIMEOUT_MS after it
 *    was accepted (a slow or silent client) is answered 408 and closed:
 *    the deadline runs from the accept, not from the last byte, so a
 *    client that trickles a byte at a time is cut off all the same;
 *  - the answer is written HTTPD_CHUNK bytes at a time with at most
 *    HTTPD_QUEUE_MAX bytes handed to libuv, the next chunk only once a
 *    write completed; a client that reads nothing for HTTPD_TIMEOUT_MS
 *    is closed.
 * Once the answer is written, our side is shut down and what the client
 * still sends is read and dropped until it closes or the deadline passes
 * (a lingering close: closing on unread bytes would reset the connection
 * and lose the answer).  Each connection waits on its own events only: a
 * slow client never holds another's answer.
 */
#include "httpd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "cmd.h"
#include "http.h"
#include "log.h"
#include "report.h"
#include "xalloc.h"

#define HTTPD_MAX_CLIENTS 16
#define HTTPD_MAX_REFUSING 16 /* answered 503 at once beyond them */
#define HTTPD_TIMEOUT_MS 10000 /* BACKFILLD_TEST_HTTP_TIMEOUT_MS overrides */
#define HTTPD_CHUNK (64 * 1024)
#define HTTPD_QUEUE_MAX (128 * 1024)
#define HTTPD_RATELOG_MS 10000 /* BACKFILLD_TEST_HTTP_RATELOG_MS overrides */
#define HTTPD_REPORT_KEEP_MS 1000
#define HTTPD_TEXT "text/plain; charset=utf-8"

/* An answer, head and body, shared by the clients it is written to. */
struct httpd_page {
	int refs;
	size_t head_len;     /* bytes of data that are the head */
	struct buf data;
	char query[HTTP_QUERY_MAX]; /* a report page: its query */
	uint64_t at;         /* ... and when it was rendered (uv_now) */
};

struct httpd_listener {
	uv_tcp_t tcp;
	struct httpd *h;
};

struct httpd_client {
	uv_tcp_t tcp;
	uv_timer_t timer;
	int handles;         /* open; freed after the last closes */
	struct httpd *h;
	char head[HTTP_HEAD_MAX];
	size_t len;          /* bytes of head read */
	struct httpd_page *page; /* the answer */
	size_t end;          /* bytes of it to write (the head alone: HEAD) */
	size_t off;          /* bytes of page handed to uv_write */
	size_t queued;       /* ... not yet written */
	bool responding;
	bool waiting;        /* for a report page: req_query says which */
	bool head_only;
	char req_query[HTTP_QUERY_MAX];
	bool refusing;       /* answered 503: not one of those served */
	bool closing;
	struct httpd_client *next, *prev;
};

struct httpd_write {
	uv_write_t req;
	struct httpd_client *cl;
	size_t len;
};

struct httpd {
	uv_loop_t *loop;
	struct sched *s;
	struct metrics *m;
	const struct cluster_driver *drv;
	struct cluster *cluster;
	struct httpd_listener *lst;  /* NULL: not listening */
	char *addr;                  /* the http_listen it listens on */
	int port;                    /* ... its port as configured */
	struct httpd_client clients; /* list head */
	int nclients;                /* served */
	int nrefusing;               /* ... and being answered 503 */
	uint64_t timeout_ms;
	bool closing;
	int refused;                 /* since the last line about them */
	uint64_t refused_logged;
	uint64_t ratelog_ms;
	bool refused_ever;
	uv_timer_t refused_timer;    /* logs those refused since the line */
	uv_idle_t render_idle;       /* renders the next report page */
	struct httpd_page *report;   /* the newest report page, or NULL */
	int handles;                 /* the timers not closed yet */
	bool freed;                  /* httpd_free was called */
};

static void httpd_client_close(struct httpd_client *cl);
static void httpd_pump(struct httpd_client *cl);
static void httpd_timer_cb(uv_timer_t *t);
static void httpd_timer_closed_cb(uv_handle_t *hd);
static void httpd_report(struct httpd_client *cl,
			 const struct http_req *req);

static struct httpd_page *
httpd_page_new(void)
{
	struct httpd_page *p = xcalloc(1, sizeof *p);

	p->refs = 1;
	buf_init(&p->data);
	return p;
}

static void
httpd_page_unref(struct httpd_page *p)
{
	if (p == NULL || --p->refs > 0)
		return;
	buf_free(&p->data);
	free(p);
}

struct httpd *
httpd_new(uv_loop_t *loop, struct sched *s, struct metrics *m,
	  const struct cluster_driver *drv, struct cluster *cluster)
{
	struct httpd *h = xcalloc(1, sizeof *h);
	const char *t = getenv("BACKFILLD_TEST_HTTP_TIMEOUT_MS");

	h->loop = loop;
	h->s = s;
	h->m = m;
	h->drv = drv;
	h->cluster = cluster;
	h->clients.next = h->clients.prev = &h->clients;
	h->timeout_ms = t != NULL && atoi(t) > 0 ? (uint64_t)atoi(t) :
	    HTTPD_TIMEOUT_MS;
	t = getenv("BACKFILLD_TEST_HTTP_RATELOG_MS");
	h->ratelog_ms = t != NULL && atoi(t) > 0 ? (uint64_t)atoi(t) :
	    HTTPD_RATELOG_MS;
	uv_timer_init(loop, &h->refused_timer);
	uv_idle_init(loop, &h->render_idle);
	h->refused_timer.data = h;
	h->render_idle.data = h;
	h->handles = 2;
	return h;
}

static void
httpd_client_closed_cb(uv_handle_t *hd)
{
	struct httpd_client *cl = hd->data;

	if (--cl->handles > 0)
		return;
	httpd_page_unref(cl->page);
	free(cl);
}

static void
httpd_client_close(struct httpd_client *cl)
{
	if (cl->closing)
		return;
	cl->closing = true;
	cl->prev->next = cl->next;
	cl->next->prev = cl->prev;
	if (cl->refusing)
		cl->h->nrefusing--;
	else
		cl->h->nclients--;
	uv_close((uv_handle_t *)&cl->timer, httpd_client_closed_cb);
	uv_close((uv_handle_t *)&cl->tcp, httpd_client_closed_cb);
}

/* Lingering: the answer is out and our side shut down; what the client
 * still sends is read and dropped until it closes (or the deadline), so
 * that closing with unread bytes does not reset the connection and throw
 * the answer away before the client read it. */
static void
httpd_drain_alloc_cb(uv_handle_t *hd, size_t hint, uv_buf_t *b)
{
	static char sink[4096];

	(void)hd;
	(void)hint;
	b->base = sink;
	b->len = sizeof sink;
}

static void
httpd_drain_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	(void)b;
	if (n < 0)
		httpd_client_close(st->data);
}

static void
httpd_shutdown_cb(uv_shutdown_t *req, int status)
{
	struct httpd_client *cl = req->data;

	free(req);
	if (cl->closing)
		return;
	if (status < 0 || uv_read_start((uv_stream_t *)&cl->tcp,
					httpd_drain_alloc_cb,
					httpd_drain_cb) < 0)
		httpd_client_close(cl);
}

/* A chunk is written: the next one, or the end. */
static void
httpd_write_cb(uv_write_t *req, int status)
{
	struct httpd_write *w = (struct httpd_write *)req;
	struct httpd_client *cl = w->cl;

	cl->queued -= w->len;
	free(w);
	if (cl->closing)
		return;
	if (status < 0) {
		httpd_client_close(cl);
		return;
	}
	/* the deadline counts from the last progress of a reader */
	uv_timer_again(&cl->timer);
	httpd_pump(cl);
}

/* Hand out's next chunks to libuv while below the bound; once all is
 * written, shut the connection down and close it. */
static void
httpd_pump(struct httpd_client *cl)
{
	while (!cl->closing && cl->off < cl->end &&
	       cl->queued < HTTPD_QUEUE_MAX) {
		struct httpd_write *w = xcalloc(1, sizeof *w);
		size_t n = cl->end - cl->off;
		uv_buf_t b;

		if (n > HTTPD_CHUNK)
			n = HTTPD_CHUNK;
		w->cl = cl;
		w->len = n;
		b = uv_buf_init(cl->page->data.data + cl->off, (unsigned)n);
		if (uv_write(&w->req, (uv_stream_t *)&cl->tcp, &b, 1,
			     httpd_write_cb) < 0) {
			free(w);
			httpd_client_close(cl);
			return;
		}
		cl->off += n;
		cl->queued += n;
	}
	if (!cl->closing && cl->off == cl->end && cl->queued == 0) {
		uv_shutdown_t *req = xcalloc(1, sizeof *req);

		req->data = cl;
		if (uv_shutdown(req, (uv_stream_t *)&cl->tcp,
				httpd_shutdown_cb) < 0) {
			free(req);
			httpd_client_close(cl);
		}
	}
}

/* Write page (a reference taken) to cl: its head alone for HEAD. */
static void
httpd_send(struct httpd_client *cl, struct httpd_page *page, bool head_only)
{
	cl->responding = true;
	cl->waiting = false;
	uv_read_stop((uv_stream_t *)&cl->tcp);
	page->refs++;
	cl->page = page;
	cl->end = head_only ? page->head_len : page->data.len;
	/* from now on the deadline is the reader's (httpd_write_cb) */
	uv_timer_start(&cl->timer, httpd_timer_cb, cl->h->timeout_ms,
		       cl->h->timeout_ms);
	httpd_pump(cl);
}

/* A page of status with body (taken). */
static struct httpd_page *
httpd_page_of(int status, const char *ctype, struct buf *body)
{
	struct httpd_page *p = httpd_page_new();

	http_head(&p->data, status, ctype, body->len);
	p->head_len = p->data.len;
	if (body->len > 0)
		buf_add(&p->data, body->data, body->len);
	buf_free(body);
	return p;
}

/* Answer status with body (taken; only its length for HEAD). */
static void
httpd_respond(struct httpd_client *cl, int status, const char *ctype,
	      struct buf *body, bool head_only)
{
	struct httpd_page *p = httpd_page_of(status, ctype, body);

	httpd_send(cl, p, head_only);
	httpd_page_unref(p);
}

/* A one-line text answer. */
static void
httpd_respond_text(struct httpd_client *cl, int status, const char *line,
		   bool head_only)
{
	struct buf body;

	buf_init(&body);
	buf_printf(&body, "%s\n", line);
	httpd_respond(cl, status, HTTPD_TEXT, &body, head_only);
}

/* The JSON of `status --json`, through the status command itself. */
static int
httpd_status(struct httpd *h, struct buf *body)
{
	struct cmd_ctx ctx = { .sched = h->s, .cluster_drv = h->drv,
		.cluster = h->cluster };
	struct cluster_state st;
	struct cmd_stream *stream = NULL;
	struct proto_msg req, resp;
	struct buf f, r;
	struct err err;
	size_t used;
	long long status = EXIT_INTERNAL;
	int rc = -1;

	if (h->drv != NULL) {
		h->drv->state(h->cluster, &st);
		if (st.role != CLUSTER_PLANNER)
			ctx.from_memory = "a node's http_listen answers from"
			    " its own memory: ask the planner's";
	}
	buf_init(&f);
	buf_init(&r);
	proto_begin(&f, PROTO_REQUEST);
	proto_add(&f, "cmd", "status");
	proto_add(&f, "json", "1");
	proto_end(&f);
	if (proto_parse(f.data, f.len, &used, &req, &err) != 1)
		goto out;
	proto_begin(&r, PROTO_RESPONSE);
	cmd_run(&ctx, &req, &r, &stream);
	proto_msg_free(&req);
	if (stream != NULL) {
		/* an `out` above one frame: its pages are in memory already */
		while (stream->next(stream, body) == 0)
			;
		cmd_stream_end(stream, &r);
	}
	proto_end(&r);
	if (proto_parse(r.data, r.len, &used, &resp, &err) != 1)
		goto out;
	if (proto_get(&resp, "out") != NULL)
		buf_addstr(body, proto_get(&resp, "out"));
	if (proto_get_int(&resp, "status", &status) == 0 && status == 0)
		rc = 0;
	else if (proto_get(&resp, "err") != NULL)
		buf_printf(body, "%s\n", proto_get(&resp, "err"));
	proto_msg_free(&resp);
out:
	buf_free(&f);
	buf_free(&r);
	return rc;
}

/* /healthz: 200 while the state store can be written, 503 with why. */
static void
httpd_health(struct httpd *h, struct buf *body, int *status)
{
	const char *why = NULL;
	struct cluster_state st;

	*status = 503;
	if (sched_store_failed(h->s, &why, NULL)) {
		buf_printf(body, "the state store cannot be written: %s\n",
			   why != NULL ? why : "a commit failed");
		return;
	}
	if (h->drv != NULL) {
		h->drv->state(h->cluster, &st);
		if (!st.db_ok) {
			buf_printf(body, "the state store cannot be reached:"
				   " %s\n", st.db_error);
			return;
		}
	}
	*status = 200;
	buf_addstr(body, "ok\n");
}

/* The next report page asked for, one per turn of the loop: rendered
 * (or the one kept, when young enough) and written to every client
 * waiting for the same query. */
static void
httpd_render_cb(uv_idle_t *t)
{
	struct httpd *h = t->data;
	struct httpd_client *cl, *first = NULL, *prev;
	struct report_query q;
	struct err err;
	struct buf body;
	bool more = false;

	/* the oldest waiting client: the list is newest first */
	for (cl = h->clients.prev; cl != &h->clients; cl = cl->prev)
		if (cl->waiting) {
			first = cl;
			break;
		}
	if (first == NULL) {
		uv_idle_stop(&h->render_idle);
		return;
	}
	if (h->report == NULL || strcmp(h->report->query, first->req_query)
	    != 0 || uv_now(h->loop) - h->report->at >= HTTPD_REPORT_KEEP_MS) {
		buf_init(&body);
		if (report_query_parse(sched_config(h->s), first->req_query, &q,
				       &err) < 0 ||
		    report_render_query(h->s, &q, &body, &err) < 0) {
			buf_free(&body);
			buf_printf(&body, "%s\n", err.msg);
			httpd_respond(first, 400, HTTPD_TEXT, &body,
				      first->head_only);
			return;
		}
		httpd_page_unref(h->report);
		h->report = httpd_page_of(200, "text/html; charset=utf-8",
					  &body);
		snprintf(h->report->query, sizeof h->report->query, "%s",
			 first->req_query);
		/* kept from when it is ready: the rendering took time */
		uv_update_time(h->loop);
		h->report->at = uv_now(h->loop);
	}
	for (cl = h->clients.prev; cl != &h->clients; cl = prev) {
		prev = cl->prev;
		if (!cl->waiting)
			continue;
		if (strcmp(cl->req_query, h->report->query) == 0)
			httpd_send(cl, h->report, cl->head_only);
		else
			more = true;
	}
	if (!more)
		uv_idle_stop(&h->render_idle);
}

/* /report?QUERY: the page kept when it is young enough, else wait for
 * its turn to be rendered. */
static void
httpd_report(struct httpd_client *cl, const struct http_req *req)
{
	struct httpd *h = cl->h;
	struct report_query q;
	struct err err;
	struct buf body;

	if (req->query_long || report_query_parse(sched_config(h->s),
						  req->query, &q, &err) < 0) {
		buf_init(&body);
		if (req->query_long)
			buf_addstr(&body, "the query is too long: the report"
				   " takes job=NAME, from=KEY, to=KEY and"
				   " page=N\n");
		else
			buf_printf(&body, "%s\n", err.msg);
		httpd_respond(cl, 400, HTTPD_TEXT, &body,
			      req->method == HTTP_HEAD);
		return;
	}
	if (h->report != NULL && strcmp(h->report->query, req->query) == 0 &&
	    uv_now(h->loop) - h->report->at < HTTPD_REPORT_KEEP_MS) {
		httpd_send(cl, h->report, req->method == HTTP_HEAD);
		return;
	}
	cl->responding = true;  /* no 408: the head is in */
	cl->waiting = true;
	cl->head_only = req->method == HTTP_HEAD;
	snprintf(cl->req_query, sizeof cl->req_query, "%s", req->query);
	uv_read_stop((uv_stream_t *)&cl->tcp);
	uv_idle_start(&h->render_idle, httpd_render_cb);
}

/* Answer a parsed request. */
static void
httpd_route(struct httpd_client *cl, const struct http_req *req)
{
	struct httpd *h = cl->h;
	bool head = req->method == HTTP_HEAD;
	struct buf body;
	int status = 200;

	buf_init(&body);
	if (req->path_long) {
		status = 404;
	} else if (strcmp(req->path, "/metrics") == 0) {
		metrics_render(h->m, &body);
		httpd_respond(cl, 200, "text/plain; version=0.0.4;"
			      " charset=utf-8", &body, head);
		return;
	} else if (strcmp(req->path, "/report") == 0) {
		httpd_report(cl, req);
		return;
	} else if (strcmp(req->path, "/status") == 0) {
		if (httpd_status(h, &body) < 0)
			httpd_respond(cl, 500, HTTPD_TEXT, &body, head);
		else
			httpd_respond(cl, 200, "application/json", &body, head);
		return;
	} else if (strcmp(req->path, "/healthz") == 0) {
		httpd_health(h, &body, &status);
		httpd_respond(cl, status, HTTPD_TEXT, &body, head);
		return;
	} else {
		status = 404;
	}
	buf_free(&body);
	httpd_respond_text(cl, status, "not found: the paths served are"
			   " /metrics, /report, /status and /healthz", head);
}

static void
httpd_alloc_cb(uv_handle_t *hd, size_t hint, uv_buf_t *b)
{
	struct httpd_client *cl = hd->data;

	(void)hint;
	b->base = cl->head + cl->len;
	b->len = sizeof cl->head - cl->len;
}

static void
httpd_read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct httpd_client *cl = st->data;
	struct http_req req;
	const char *why;
	int status;

	(void)b;
	if (n < 0) {
		httpd_client_close(cl);
		return;
	}
	if (n == 0 || cl->responding)
		return;
	cl->len += (size_t)n;
	switch (http_parse_head(cl->head, cl->len, sizeof cl->head, &req,
				&status, &why)) {
	case HTTP_PARSE_MORE:
		return;
	case HTTP_PARSE_ERROR:
		httpd_respond_text(cl, status, why, false);
		return;
	case HTTP_PARSE_DONE:
		httpd_route(cl, &req);
		return;
	}
}

/* The head did not come in time (408), or the reader stopped reading. */
static void
httpd_timer_cb(uv_timer_t *t)
{
	struct httpd_client *cl = t->data;
	struct buf o;
	uv_buf_t b;

	if (!cl->responding) {
		buf_init(&o);
		http_head(&o, 408, NULL, 0);
		b = uv_buf_init(o.data, (unsigned)o.len);
		uv_try_write((uv_stream_t *)&cl->tcp, &b, 1);
		buf_free(&o);
	}
	httpd_client_close(cl);
}

/* The refusals counted since the last line about them, logged. */
static void
httpd_refused_flush(struct httpd *h)
{
	if (h->refused == 0)
		return;
	log_warn("http: %d connections refused: %d are served at once",
		 h->refused, HTTPD_MAX_CLIENTS);
	h->refused = 0;
	h->refused_logged = uv_now(h->loop);
	h->refused_ever = true;
}

static void
httpd_refused_timer_cb(uv_timer_t *t)
{
	httpd_refused_flush(t->data);
}

/* Beyond HTTPD_MAX_CLIENTS: counted and logged, at most once per
 * ratelog_ms: at once when no line was logged for that long, else by
 * the timer at the end of that time, with the count so far. */
static void
httpd_refused_log(struct httpd *h)
{
	uint64_t now = uv_now(h->loop);

	h->refused++;
	if (!h->refused_ever || now - h->refused_logged >= h->ratelog_ms) {
		httpd_refused_flush(h);
		return;
	}
	if (!uv_is_active((uv_handle_t *)&h->refused_timer))
		uv_timer_start(&h->refused_timer, httpd_refused_timer_cb,
			       h->refused_logged + h->ratelog_ms - now, 0);
}

static void
httpd_free_cb(uv_handle_t *hd)
{
	free(hd);
}

static void
httpd_connection_cb(uv_stream_t *server, int status)
{
	struct httpd_listener *l = server->data;
	struct httpd *h = l->h;
	struct httpd_client *cl;

	if (status < 0 || h->closing)
		return;
	cl = xcalloc(1, sizeof *cl);
	uv_tcp_init(h->loop, &cl->tcp);
	if (uv_accept(server, (uv_stream_t *)&cl->tcp) < 0 ||
	    (h->nclients >= HTTPD_MAX_CLIENTS &&
	     h->nrefusing >= HTTPD_MAX_REFUSING)) {
		/* beyond even the refusals answered: closed at once */
		if (h->nclients >= HTTPD_MAX_CLIENTS)
			httpd_refused_log(h);
		uv_close((uv_handle_t *)&cl->tcp, httpd_free_cb);
		return;
	}
	cl->h = h;
	cl->handles = 2;
	cl->tcp.data = cl;
	uv_timer_init(h->loop, &cl->timer);
	cl->timer.data = cl;
	cl->next = h->clients.next;
	cl->prev = &h->clients;
	h->clients.next->prev = cl;
	h->clients.next = cl;
	cl->refusing = h->nclients >= HTTPD_MAX_CLIENTS;
	if (cl->refusing)
		h->nrefusing++;
	else
		h->nclients++;
	uv_timer_start(&cl->timer, httpd_timer_cb, h->timeout_ms,
		       h->timeout_ms);
	if (cl->refusing) {
		/* answered 503 at once, closed as any answer is */
		struct buf body;

		httpd_refused_log(h);
		buf_init(&body);
		buf_addstr(&body, "too many connections: try again\n");
		httpd_respond(cl, 503, HTTPD_TEXT, &body, false);
		return;
	}
	if (uv_read_start((uv_stream_t *)&cl->tcp, httpd_alloc_cb,
			  httpd_read_cb) < 0)
		httpd_client_close(cl);
}

/* Bind and listen on cfg's address: the listener, or NULL with err. */
static struct httpd_listener *
httpd_listen(struct httpd *h, const struct config *cfg, struct err *err)
{
	struct httpd_listener *l = xcalloc(1, sizeof *l);
	struct sockaddr_storage sa;
	struct sockaddr_storage got;
	int len = sizeof got, rc, port = 0;
	char name[HTTP_HOST_MAX];

	l->h = h;
	uv_tcp_init(h->loop, &l->tcp);
	l->tcp.data = l;
	if (strchr(cfg->http_host, ':') != NULL)
		rc = uv_ip6_addr(cfg->http_host, cfg->http_port,
				 (struct sockaddr_in6 *)&sa);
	else
		rc = uv_ip4_addr(cfg->http_host, cfg->http_port,
				 (struct sockaddr_in *)&sa);
	if (rc == 0)
		rc = uv_tcp_bind(&l->tcp, (struct sockaddr *)&sa, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&l->tcp, 64, httpd_connection_cb);
	if (rc < 0) {
		err_set(err, EXIT_BAD_INPUT, "cannot listen on http_listen %s:"
			" %s: choose another address or port", cfg->http_listen,
			uv_strerror(rc));
		uv_close((uv_handle_t *)&l->tcp, httpd_free_cb);
		return NULL;
	}
	if (uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&got, &len) == 0) {
		if (got.ss_family == AF_INET6) {
			uv_ip6_name((struct sockaddr_in6 *)&got, name,
				    sizeof name);
			port = ntohs(((struct sockaddr_in6 *)&got)->sin6_port);
		} else {
			uv_ip4_name((struct sockaddr_in *)&got, name,
				    sizeof name);
			port = ntohs(((struct sockaddr_in *)&got)->sin_port);
		}
		log_notice("http: listening on %s%s%s:%d%s",
			   got.ss_family == AF_INET6 ? "[" : "", name,
			   got.ss_family == AF_INET6 ? "]" : "", port,
			   cfg->http_loopback ? "" : " (not a loopback address:"
			   " reachable from other hosts)");
	}
	return l;
}

int
httpd_configure(struct httpd *h, const struct config *cfg, struct err *err)
{
	struct httpd_listener *l = NULL;

	if (h->closing)
		return 0;
	if (h->addr != NULL && cfg->http_listen != NULL &&
	    strcmp(h->addr, cfg->http_listen) == 0)
		return 0;
	if (cfg->http_listen != NULL) {
		l = httpd_listen(h, cfg, err);
		if (l == NULL && h->lst != NULL && h->port == cfg->http_port) {
			/* the same port on another address: the old listener
			 * holds it (uv_close closes its descriptor at once) */
			log_notice("http: no longer listening on %s", h->addr);
			uv_close((uv_handle_t *)&h->lst->tcp, httpd_free_cb);
			h->lst = NULL;
			/* off until this succeeds: on failure, configuring
			 * the old address again listens there again */
			free(h->addr);
			h->addr = NULL;
			l = httpd_listen(h, cfg, err);
		}
		if (l == NULL)
			return -1;
	} else if (h->lst != NULL) {
		log_notice("http: no http_listen: the endpoint is off");
	}
	if (h->lst != NULL)
		uv_close((uv_handle_t *)&h->lst->tcp, httpd_free_cb);
	free(h->addr);
	h->lst = l;
	h->addr = l != NULL ? xstrdup(cfg->http_listen) : NULL;
	h->port = cfg->http_port;
	return 0;
}

/* The httpd is freed once httpd_free was called and its timers closed. */
static void
httpd_timer_closed_cb(uv_handle_t *hd)
{
	struct httpd *h = hd->data;

	if (--h->handles == 0 && h->freed) {
		free(h->addr);
		free(h);
	}
}

void
httpd_close(struct httpd *h)
{
	if (h == NULL || h->closing)
		return;
	h->closing = true;
	if (h->lst != NULL)
		uv_close((uv_handle_t *)&h->lst->tcp, httpd_free_cb);
	h->lst = NULL;
	while (h->clients.next != &h->clients)
		httpd_client_close(h->clients.next);
	httpd_refused_flush(h);
	uv_close((uv_handle_t *)&h->refused_timer, httpd_timer_closed_cb);
	uv_close((uv_handle_t *)&h->render_idle, httpd_timer_closed_cb);
	httpd_page_unref(h->report);
	h->report = NULL;
}

void
httpd_free(struct httpd *h)
{
	if (h == NULL)
		return;
	h->freed = true;
	if (h->handles > 0)
		return; /* its timers' close callbacks free it */
	free(h->addr);
	free(h);
}
