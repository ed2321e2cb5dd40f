/*
 * wh_ch.c - the ClickHouse warehouse driver (wh.h; docs/clickhouse.md),
 * over the server's HTTP interface with libcurl.  Built as the module
 * backfilld-ch.so, loaded on first use (module.h).
 *
 * There is no transaction: begin, commit and rollback hold nothing, and
 * exec.c runs a ClickHouse job as write-audit-publish instead (a stage
 * table filled, audited, then swapped in by one REPLACE PARTITION).  Each
 * statement is one POST of its text; the values the daemon generated are
 * substituted as typed literals (chsql.h), never text from a request.
 *
 * Every query of a run carries query_id backfilld-INSTANCE-RUN-N
 * (INSTANCE: 16 hex digits drawn at random when the module loads, so
 * that two daemons on one server never share an id, whatever their state
 * stores) and, when the run has a timeout, max_execution_time: the
 * timeout plus WHCH_EXEC_SLACK_S, so that the server ends the statement
 * itself should the daemon be gone.  interrupt() only raises a flag; the
 * worker thread, running the transfer through a multi handle, looks at it
 * (and at the executor's stop flag given to watch()) every 50 ms and
 * aborts the transfer, then sends KILL QUERY WHERE query_id = ... ASYNC
 * on a handle of its own and reads system.processes until the query is
 * gone, up to WHCH_KILL_WAIT_MS: the run is not over before the server
 * has stopped its statement, or that bound has passed.  What the kill
 * took is kept for the executor's log line (stopped()).
 *
 * exec_many() sends one statement for several parameter sets at once (a
 * batch's stage filled by shares: 18.16 runs an INSERT ... SELECT in one
 * thread), each on a handle of its own in the same multi handle, each
 * with its own query_id.  The first failure, or a stop, aborts the
 * others and kills every query of them still running by one KILL QUERY
 * WHERE query_id IN (...), then waits for all to be gone, as above.
 *
 * A response is a failure when its status is not 200, or when its last
 * line is an exception the server appended after a 200 status (it has
 * sent part of the result already: "Code: N, e.displayText() = ...").
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "chsql.h"
#include "clock_ms.h"
#include "err.h"
#include "wh.h"
#include "xalloc.h"

extern const struct wh_driver wh_ch_driver;

/* To connect, and for open()'s SELECT 1 to be answered: a server that
 * accepts the connection but never answers (stopped, overloaded) counts
 * as unreachable after this. */
#define WHCH_CONNECT_MS 10000L
/* A KILL QUERY's own request, and each read of system.processes after
 * it, is bounded by this. */
#define WHCH_KILL_REQUEST_MS 2000L
/* How long a stopped run waits for the server to end its statement. */
#define WHCH_KILL_WAIT_MS 10000L
/* max_execution_time is the run's timeout plus this many seconds: the
 * daemon's own timeout comes first, the server's is the backstop. */
#define WHCH_EXEC_SLACK_S 2

struct whch_conn {
	struct wh_conn base;
	char *name;          /* the warehouse's */
	char *url;           /* as configured */
	char *user;
	char *password;
	CURL *curl;
	CURLM *multi;
	atomic_int interrupted;
	const atomic_int *stop; /* watch(): the executor's stop flag */
	int64_t run_id;
	int64_t nquery;         /* queries of this run so far */
	int64_t limit_ms;       /* each query's bound (0: none; watch()) */
	int64_t exec_limit_s;   /* max_execution_time (0: none; watch()) */
	bool broken;
	char stopped[256];      /* what the last KILL took ("": none) */
};

static struct whch_conn *
whch_conn(struct wh_conn *conn)
{
	return (struct whch_conn *)conn;
}

static pthread_once_t whch_once = PTHREAD_ONCE_INIT;
/* This process's part of every query_id: 16 hex digits. */
static char whch_instance[17];

static void
whch_global(void)
{
	uint64_t r = 0;
	struct timespec ts;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) {
		/* no entropy source: the clock and the pid, still unlike
		 * another daemon's */
		ts = clock_read(CLOCK_REALTIME);
		r = ((uint64_t)ts.tv_sec << 32 ^ (uint64_t)ts.tv_nsec) *
		    0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
	}
	snprintf(whch_instance, sizeof whch_instance, "%016" PRIx64, r);
}

/* The first line of a password file, malloc'd. */
static int
whch_password(const char *wh, const char *path, char **out, struct err *err)
{
	char line[1024];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return err_set(err, EXIT_WORK_FAILED, "warehouse \"%s\": cannot"
			       " read password_file %s: %s", wh, path,
			       strerror(errno));
	if (fgets(line, sizeof line, f) == NULL)
		line[0] = '\0';
	fclose(f);
	n = strcspn(line, "\r\n");
	line[n] = '\0';
	*out = xstrdup(line);
	return 0;
}

static size_t
whch_write_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	buf_add(arg, data, size * nmemb);
	return size * nmemb;
}

/* libcurl's progress callback: non-zero aborts the transfer. */
static int
whch_progress_cb(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
		 curl_off_t un)
{
	struct whch_conn *c = arg;

	(void)dt; (void)dn; (void)ut; (void)un;
	return atomic_load(&c->interrupted) ||
	    (c->stop != NULL && atomic_load(c->stop) != 0);
}

/* The URL of one query: the configured one with query_id (when given)
 * and max_execution_time (with it, when the run has a timeout). */
static char *
whch_url(const struct whch_conn *c, const char *query_id)
{
	struct buf b;

	buf_init(&b);
	buf_addstr(&b, c->url);
	if (query_id != NULL) {
		buf_addstr(&b, strchr(c->url, '?') ? "&" : "?");
		buf_printf(&b, "query_id=%s", query_id);
		if (c->exec_limit_s > 0)
			buf_printf(&b, "&max_execution_time=%" PRId64,
				   c->exec_limit_s);
	}
	buf_add(&b, "", 1);
	return buf_steal(&b);
}

/* Set up handle h for one POST of `sql`. */
static void
whch_setup(struct whch_conn *c, CURL *h, const char *url, const char *sql,
	   struct buf *body, bool abortable)
{
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, sql);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(sql));
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, whch_write_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, WHCH_CONNECT_MS);
	if (c->limit_ms > 0)
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->limit_ms);
	if (c->user != NULL) {
		curl_easy_setopt(h, CURLOPT_USERNAME, c->user);
		curl_easy_setopt(h, CURLOPT_PASSWORD,
				 c->password ? c->password : "");
	} else if (c->password != NULL) {
		curl_easy_setopt(h, CURLOPT_USERNAME, "default");
		curl_easy_setopt(h, CURLOPT_PASSWORD, c->password);
	}
	if (abortable) {
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, whch_progress_cb);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
	}
}

static int64_t
whch_now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC); /* UTIL-2 */
}

/* POST sql on handle h (not abortable: the run's stop flags are raised),
 * bounded by WHCH_KILL_REQUEST_MS; 0 with the body when the server
 * answered 200, else -1 with *why. */
static int
whch_post_plain(struct whch_conn *c, CURL *h, const char *url,
		const char *sql, struct buf *body, const char **why)
{
	CURLcode rc;
	long status = 0;

	body->len = 0;
	whch_setup(c, h, url, sql, body, false);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, WHCH_KILL_REQUEST_MS);
	rc = curl_easy_perform(h);
	if (rc != CURLE_OK) {
		*why = curl_easy_strerror(rc);
		return -1;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	buf_add(body, "", 1);
	if (status != 200) {
		*why = "the server refused it";
		return -1;
	}
	return 0;
}

/* "query ID", or for several "queries PREFIX{N,M,...}": a run's ids
 * differ only in their last field. */
static void
whch_kill_what(const char *const *ids, size_t n, struct buf *b)
{
	const char *dash = strrchr(ids[0], '-');

	if (n == 1 || dash == NULL) {
		buf_printf(b, "query %s", ids[0]);
		for (size_t i = 1; i < n; i++)
			buf_printf(b, ", %s", ids[i]);
		return;
	}
	buf_printf(b, "queries %.*s{", (int)(dash + 1 - ids[0]), ids[0]);
	for (size_t i = 0; i < n; i++)
		buf_printf(b, "%s%s", i > 0 ? "," : "", strrchr(ids[i], '-') + 1);
	buf_addstr(b, "}");
}

/* "query_id = 'ID'", or "query_id IN ('ID', ...)" for several. */
static void
whch_kill_where(const char *const *ids, size_t n, struct buf *b)
{
	buf_addstr(b, n == 1 ? "query_id = " : "query_id IN (");
	for (size_t i = 0; i < n; i++)
		buf_printf(b, "%s'%s'", i > 0 ? ", " : "", ids[i]);
	if (n > 1)
		buf_addstr(b, ")");
	buf_add(b, "", 1);
}

/*
 * Ask the server to stop queries ids[0..n) (a fresh handle: the run's
 * own were aborted) without waiting in the KILL itself (SYNC would wait
 * up to the server's own 30 s), then read system.processes, 20 ms after,
 * then twice as long after each read up to 500 ms apart, until all are
 * gone or WHCH_KILL_WAIT_MS has passed.  What it took goes into
 * c->stopped.
 */
static void
whch_kill(struct whch_conn *c, const char *const *ids, size_t n)
{
	char *url, *sql;
	const char *why = NULL;
	struct buf body, where, what;
	int64_t t0 = whch_now_ms(), wait = 20, left;
	CURL *h = curl_easy_init();
	bool gone = false, sent;

	if (h == NULL || n == 0) {
		if (h != NULL)
			curl_easy_cleanup(h);
		return;
	}
	buf_init(&body);
	buf_init(&where);
	buf_init(&what);
	whch_kill_where(ids, n, &where);
	whch_kill_what(ids, n, &what);
	buf_add(&what, "", 1);
	url = whch_url(c, NULL);
	sql = xasprintf("KILL QUERY WHERE %s ASYNC", where.data);
	sent = whch_post_plain(c, h, url, sql, &body, &why) == 0;
	free(sql);
	sql = xasprintf("SELECT count() FROM system.processes WHERE %s",
			where.data);
	while (sent) {
		if (whch_post_plain(c, h, url, sql, &body, &why) == 0 &&
		    strtol(body.data, NULL, 10) == 0) {
			gone = true;
			break;
		}
		left = WHCH_KILL_WAIT_MS - (whch_now_ms() - t0);
		if (left <= 0)
			break;
		if (wait > left)
			wait = left;
		nanosleep(&(struct timespec){ .tv_sec = wait / 1000,
		    .tv_nsec = wait % 1000 * 1000000 }, NULL);
		wait = wait * 2 > 500 ? 500 : wait * 2;
	}
	if (gone)
		snprintf(c->stopped, sizeof c->stopped, "%s stopped on the"
			 " server (KILL QUERY), gone after %.1f s", what.data,
			 (double)(whch_now_ms() - t0) / 1000.0);
	else if (!sent)
		snprintf(c->stopped, sizeof c->stopped, "%s: KILL QUERY failed"
			 " (%s); %s may still run on the server", what.data, why,
			 n == 1 ? "it" : "they");
	else
		snprintf(c->stopped, sizeof c->stopped, "%s still running on"
			 " the server %.1f s after KILL QUERY%s", what.data,
			 (double)(whch_now_ms() - t0) / 1000.0,
			 c->exec_limit_s > 0 ? "; its max_execution_time ends"
			 " it" : "");
	curl_easy_cleanup(h);
	buf_free(&body);
	buf_free(&where);
	buf_free(&what);
	free(sql);
	free(url);
}

/* One statement's transfer: set up by whch_start, run by whch_perform. */
struct whch_xfer {
	CURL *h;
	char id[80];      /* its query_id (sent only in a run) */
	struct buf body;  /* NUL-terminated once done */
	CURLcode rc;
	bool added;       /* to c->multi */
	bool done;
};

/* Set up x on handle h for one POST of `sql` (kept until it is done),
 * with the next query_id of the run. */
static void
whch_start(struct whch_conn *c, struct whch_xfer *x, CURL *h,
	   const char *sql)
{
	char *url;

	/* outside a run (opening, the start's checks): no query_id, so that
	 * connections opened at once do not share one */
	snprintf(x->id, sizeof x->id, "backfilld-%s-%lld-%lld", whch_instance,
		 (long long)c->run_id, (long long)++c->nquery);
	url = whch_url(c, c->run_id > 0 ? x->id : NULL);
	x->h = h;
	x->rc = CURLE_OK;
	x->added = false;
	x->done = false;
	buf_init(&x->body);
	whch_setup(c, h, url, sql, &x->body, true); /* libcurl copies url */
	free(url);
}

/* Whether a transfer that is done failed: a curl error, a status other
 * than 200, or an exception the server appended after 200. */
static bool
whch_failed(const struct whch_xfer *x)
{
	char msg[ERR_MSG_MAX];
	long status = 0;

	if (x->rc != CURLE_OK)
		return true;
	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
	return status != 200 ||
	    chsql_body_exception(x->body.data, x->body.len - 1, msg, sizeof msg);
}

/* Mark the transfer of handle e done with result rc. */
static struct whch_xfer *
whch_done(struct whch_xfer *x, size_t n, CURL *e, CURLcode rc)
{
	for (size_t i = 0; i < n; i++)
		if (x[i].h == e && !x[i].done) {
			x[i].done = true;
			x[i].rc = rc;
			buf_add(&x[i].body, "", 1);
			return &x[i];
		}
	return NULL;
}

/*
 * Run the transfers x[0..n) at once through c->multi, looking at the stop
 * flags every 50 ms (libcurl's own progress callback may not come while
 * the server is silent), until all are done or one has failed.  Returns
 * the first that failed (one the stop flags aborted: its rc
 * CURLE_ABORTED_BY_CALLBACK), or NULL.  When one failed or the flags
 * were raised, the others still running are aborted, and in a run their
 * queries (and the aborted one's) are killed on the server: none is
 * left running when this returns.
 */
static struct whch_xfer *
whch_perform(struct whch_conn *c, struct whch_xfer *x, size_t n)
{
	struct whch_xfer *bad = NULL, *d;
	const char **ids = xcalloc(n, sizeof *ids);
	CURLMsg *m;
	int running = 1, left;
	size_t i, nids = 0;

	for (i = 0; i < n; i++) {
		x[i].added = curl_multi_add_handle(c->multi, x[i].h) ==
		    CURLM_OK;
		if (!x[i].added && bad == NULL)
			bad = whch_done(x, n, x[i].h, CURLE_FAILED_INIT);
	}
	while (bad == NULL) {
		if (curl_multi_perform(c->multi, &running) != CURLM_OK)
			running = -1;
		while ((m = curl_multi_info_read(c->multi, &left)) != NULL)
			if (m->msg == CURLMSG_DONE &&
			    (d = whch_done(x, n, m->easy_handle,
					   m->data.result)) != NULL &&
			    bad == NULL && whch_failed(d))
				bad = d;
		if (bad != NULL || running == 0)
			break;
		if (running == -1) {
			/* the multi handle failed: the first not done fails */
			for (i = 0; i < n && bad == NULL; i++)
				if (!x[i].done)
					bad = whch_done(x, n, x[i].h,
							CURLE_FAILED_INIT);
			break;
		}
		if (whch_progress_cb(c, 0, 0, 0, 0))
			for (i = 0; i < n && bad == NULL; i++)
				if (!x[i].done)
					bad = whch_done(x, n, x[i].h,
					    CURLE_ABORTED_BY_CALLBACK);
		if (bad == NULL)
			curl_multi_wait(c->multi, NULL, 0, 50, NULL);
	}
	/* removing a handle aborts its transfer; the queries of those cut
	 * short may still run on the server */
	for (i = 0; i < n; i++) {
		if (x[i].added)
			curl_multi_remove_handle(c->multi, x[i].h);
		if (bad != NULL && (!x[i].done ||
		    x[i].rc == CURLE_ABORTED_BY_CALLBACK))
			ids[nids++] = x[i].id;
	}
	if (c->run_id > 0 && nids > 0)
		whch_kill(c, ids, nids);
	free(ids);
	return bad;
}

/* A response of status (0: 200 with an exception after it) saying msg:
 * the error, WH_ERR_DENIED with what to do when the server refused the
 * user or a privilege (chsql_denied), which no retry cures. */
static int
whch_refused(const struct whch_conn *c, long status, const char *msg,
	     struct err *err)
{
	char http[32];
	bool privilege;

	if (status != 0)
		snprintf(http, sizeof http, "(HTTP %ld)", status);
	else
		snprintf(http, sizeof http, "(after HTTP 200)");
	if (!chsql_denied(status, chsql_error_code(msg), &privilege))
		return err_set(err, EXIT_WORK_FAILED, "%s%s%s", msg,
			       msg[0] ? " " : "", http);
	if (privilege)
		return err_set(err, WH_ERR_DENIED, "%s%s%s: user %s lacks a"
			       " privilege this job needs (see"
			       " docs/clickhouse.md, \"Credentials and"
			       " privileges\"); not retried", msg,
			       msg[0] ? " " : "", http,
			       c->user ? c->user : "default");
	return err_set(err, WH_ERR_DENIED, "%s%s%s: the server refused user"
		       " %s: correct user or password_file of warehouse \"%s\""
		       " (or the user in the server's users.xml), then reload;"
		       " not retried", msg, msg[0] ? " " : "", http,
		       c->user ? c->user : "default", c->name);
}

/* The outcome of transfer x: 0, or the error.  Errors: "interrupted";
 * "cannot reach URL: curl's reason"; the server's exception text. */
static int
whch_outcome(struct whch_conn *c, const struct whch_xfer *x,
	     struct err *err)
{
	char msg[ERR_MSG_MAX];
	long status = 0;
	bool privilege;

	if (x->rc == CURLE_ABORTED_BY_CALLBACK)
		return err_interrupted(err);
	if (x->rc != CURLE_OK) {
		c->broken = true;
		return err_set(err, EXIT_WORK_FAILED, "cannot reach %s: %s",
			       c->url, curl_easy_strerror(x->rc));
	}
	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		chsql_error_text(x->body.data, x->body.len - 1, msg,
				 sizeof msg);
		return whch_refused(c, status, msg, err);
	}
	if (chsql_body_exception(x->body.data, x->body.len - 1, msg,
				 sizeof msg)) {
		if (chsql_denied(0, chsql_error_code(msg), &privilege))
			return whch_refused(c, 0, msg, err);
		return err_set(err, EXIT_WORK_FAILED, "%s (after HTTP 200)",
			       msg);
	}
	return 0;
}

/*
 * POST one statement (already bound); the body in *out (NUL-terminated,
 * malloc'd) when out is not NULL.  Errors: whch_outcome's.
 */
static int
whch_post(struct whch_conn *c, const char *sql, char **out, size_t *outlen,
	  struct err *err)
{
	struct whch_xfer x;
	int rc;

	if (out != NULL)
		*out = NULL;
	if (whch_progress_cb(c, 0, 0, 0, 0))
		return err_interrupted(err);
	whch_start(c, &x, c->curl, sql);
	rc = whch_perform(c, &x, 1) == NULL ? 0 : whch_outcome(c, &x, err);
	if (rc == 0 && out != NULL) {
		*outlen = x.body.len - 1;
		*out = buf_steal(&x.body);
	}
	buf_free(&x.body);
	return rc;
}

/* wh_param into chsql_param, then chsql_bind. */
static int
whch_bind(const char *sql, const struct wh_param *params, size_t nparams,
	  char **out, struct err *err)
{
	struct chsql_param cp[8];
	size_t n = nparams < 8 ? nparams : 8;

	for (size_t i = 0; i < n; i++) {
		cp[i].name = params[i].name;
		cp[i].value = params[i].value;
	}
	return chsql_bind(sql, cp, n, out, err);
}

/* sql, bound, as one statement (malloc'd); more than one is an error. */
static int
whch_statement(const char *sql, const struct wh_param *params,
	       size_t nparams, char **out, struct err *err)
{
	char *bound, **stmts;
	size_t n;

	*out = NULL;
	if (whch_bind(sql, params, nparams, &bound, err) == -1)
		return -1;
	chsql_split(bound, &stmts, &n);
	free(bound);
	if (n != 1) {
		chsql_split_free(stmts, n);
		return err_set(err, EXIT_BAD_INPUT, "a query must be one"
			       " statement, got %zu", n);
	}
	*out = stmts[0];
	stmts[0] = NULL;
	chsql_split_free(stmts, n);
	return 0;
}

static void
whch_free(struct whch_conn *c)
{
	if (c->curl != NULL)
		curl_easy_cleanup(c->curl);
	if (c->multi != NULL)
		curl_multi_cleanup(c->multi);
	free(c->name);
	free(c->url);
	free(c->user);
	free(c->password);
	free(c);
}

static int
whch_open(const struct warehouse_def *wh, struct wh_conn **out,
	  struct err *err)
{
	struct whch_conn *c;
	int rc;

	*out = NULL;
	pthread_once(&whch_once, whch_global);
	if (wh->url == NULL)
		return err_set(err, EXIT_BAD_INPUT, "warehouse \"%s\": no"
			       " clickhouse URL", wh->name);
	c = xcalloc(1, sizeof *c);
	c->base.drv = &wh_ch_driver;
	c->name = xstrdup(wh->name);
	c->url = xstrdup(wh->url);
	c->user = wh->user ? xstrdup(wh->user) : NULL;
	atomic_init(&c->interrupted, 0);
	if (wh->password_file != NULL &&
	    whch_password(wh->name, wh->password_file, &c->password, err) == -1) {
		whch_free(c);
		return -1;
	}
	c->curl = curl_easy_init();
	c->multi = curl_multi_init();
	if (c->curl == NULL || c->multi == NULL)
		xalloc_exhausted("libcurl");
	/* reach it now: a wrong URL, password or database fails here */
	c->limit_ms = WHCH_CONNECT_MS;
	rc = whch_post(c, "SELECT 1", NULL, NULL, err);
	c->limit_ms = 0;
	if (rc == -1) {
		err_prefix(err, "warehouse \"%s\": cannot connect to %s",
			   wh->name, wh->url);
		whch_free(c);
		return -1;
	}
	*out = &c->base;
	return 0;
}

static void
whch_close(struct wh_conn *conn)
{
	if (conn != NULL)
		whch_free(whch_conn(conn));
}

static int
whch_begin(struct wh_conn *conn, struct err *err)
{
	atomic_store(&whch_conn(conn)->interrupted, 0);
	(void)err;
	return 0;
}

static int
whch_exec_script(struct wh_conn *conn, const char *sql,
		 const struct wh_param *params, size_t nparams,
		 struct err *err)
{
	struct whch_conn *c = whch_conn(conn);
	char *bound, **stmts;
	size_t n;
	int rc = 0;

	if (whch_bind(sql, params, nparams, &bound, err) == -1)
		return -1;
	chsql_split(bound, &stmts, &n);
	free(bound);
	for (size_t i = 0; i < n && rc == 0; i++)
		if (whch_post(c, stmts[i], NULL, NULL, err) == -1) {
			if (n > 1)
				err_prefix(err, "statement %zu failed", i + 1);
			rc = -1;
		}
	chsql_split_free(stmts, n);
	return rc;
}

/*
 * The statement sql bound with each of params[0..n) at once, each on a
 * handle of its own (the first on c->curl, the others made here) with
 * the next query_id of the run: 18.16 runs an INSERT ... SELECT in one
 * thread, so a stage filled by n statements over shares of the batch
 * fills in about 1/n of the time, as cores allow.  The first failure
 * ends the others and their queries on the server (whch_perform), and is
 * the error, as whch_post forms it.
 */
static int
whch_exec_many(struct wh_conn *conn, const char *sql,
	       const struct wh_param *const *params, size_t nparams,
	       size_t n, struct err *err)
{
	struct whch_conn *c = whch_conn(conn);
	struct whch_xfer *x, *bad;
	char **stmts;
	size_t k;
	int rc = 0;

	if (whch_progress_cb(c, 0, 0, 0, 0))
		return err_interrupted(err);
	if (n == 0)
		return 0;
	stmts = xcalloc(n, sizeof *stmts);
	x = xcalloc(n, sizeof *x);
	for (k = 0; k < n && rc == 0; k++)
		rc = whch_statement(sql, params[k], nparams, &stmts[k], err);
	for (k = 0; k < n && rc == 0; k++) {
		CURL *h = k == 0 ? c->curl : curl_easy_init();

		if (h == NULL)
			xalloc_exhausted("libcurl");
		whch_start(c, &x[k], h, stmts[k]);
	}
	if (rc == 0) {
		bad = whch_perform(c, x, n);
		rc = bad == NULL ? 0 : whch_outcome(c, bad, err);
	}
	for (k = 0; k < n; k++) {
		if (k > 0 && x[k].h != NULL)
			curl_easy_cleanup(x[k].h);
		buf_free(&x[k].body);
		free(stmts[k]);
	}
	free(x);
	free(stmts);
	return rc;
}

/* The first field of each line of a TabSeparated body, unescaped; "\N"
 * (NULL) left out; *lines counts the lines read (it stops at the first
 * value past max), *first_null says the first line was \N. */
static void
whch_column(char *body, size_t len, size_t max, char ***values, size_t *n,
	    bool *too_many, size_t *lines, bool *first_null)
{
	char *p = body, *end = body + len;

	*values = NULL;
	*n = 0;
	*too_many = false;
	*lines = 0;
	*first_null = false;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *line_end = nl ? nl : end;
		size_t flen = strcspn(p, "\t\n");
		struct buf v;

		if (p + flen > line_end)
			flen = (size_t)(line_end - p);
		if ((*lines)++ == 0)
			*first_null = flen == 2 && p[0] == '\\' && p[1] == 'N';
		if (!(flen == 2 && p[0] == '\\' && p[1] == 'N')) {
			if (*n >= max) {
				*too_many = true;
				return;
			}
			buf_init(&v);
			for (size_t i = 0; i < flen; i++) {
				char ch = p[i];

				if (ch == '\\' && i + 1 < flen) {
					ch = p[++i];
					ch = ch == 'n' ? '\n' : ch == 't' ? '\t' :
					    ch == '0' ? '\0' : ch;
				}
				buf_add(&v, &ch, 1);
			}
			buf_add(&v, "", 1);
			*values = xreallocarray(*values, *n + 1, sizeof **values);
			(*values)[(*n)++] = buf_steal(&v);
		}
		p = line_end + 1;
	}
}

/* One statement, bound, its rows' first fields. */
static int
whch_query(struct wh_conn *conn, const char *sql,
	   const struct wh_param *params, size_t nparams, size_t max,
	   char ***values, size_t *nvalues, bool *too_many, size_t *lines,
	   bool *first_null, struct err *err)
{
	struct whch_conn *c = whch_conn(conn);
	char *stmt, *body;
	size_t blen;
	int rc;

	if (whch_statement(sql, params, nparams, &stmt, err) == -1)
		return -1;
	rc = whch_post(c, stmt, &body, &blen, err);
	free(stmt);
	if (rc == -1)
		return -1;
	whch_column(body, blen, max, values, nvalues, too_many, lines,
		    first_null);
	free(body);
	return 0;
}

static void
whch_values_free(char **values, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(values[i]);
	free(values);
}

static int
whch_query_value(struct wh_conn *conn, const char *sql,
		 const struct wh_param *params, size_t nparams, bool *has_row,
		 char **value, struct err *err)
{
	char **values;
	size_t n, lines;
	bool many, first_null;

	*has_row = false;
	*value = NULL;
	if (whch_query(conn, sql, params, nparams, 1, &values, &n, &many,
		       &lines, &first_null, err) == -1)
		return -1;
	/* the first row's value, NULL when its field was \N */
	*has_row = lines > 0;
	if (n > 0 && !first_null) {
		*value = values[0];
		values[0] = NULL;
	}
	whch_values_free(values, n);
	return 0;
}

static int
whch_query_column(struct wh_conn *conn, const char *sql,
		  const struct wh_param *params, size_t nparams,
		  size_t max_values, char ***values, size_t *nvalues,
		  struct err *err)
{
	bool many, first_null;
	size_t lines;

	if (whch_query(conn, sql, params, nparams, max_values, values,
		       nvalues, &many, &lines, &first_null, err) == -1)
		return -1;
	if (many) {
		whch_values_free(*values, *nvalues);
		*values = NULL;
		*nvalues = 0;
		return err_set(err, EXIT_WORK_FAILED, "more than %zu values",
			       max_values);
	}
	return 0;
}

static int
whch_manifest_fill(struct wh_conn *conn, const struct wh_manifest_row *rows,
		   size_t nrows, struct err *err)
{
	(void)conn; (void)rows; (void)nrows;
	return err_set(err, EXIT_BAD_INPUT, "batch jobs are not supported on"
		       " clickhouse warehouses yet");
}

static int
whch_manifest_drop(struct wh_conn *conn, struct err *err)
{
	(void)conn; (void)err;
	return 0;
}

static int
whch_commit(struct wh_conn *conn, struct err *err)
{
	(void)conn; (void)err;
	return 0;
}

static void
whch_rollback(struct wh_conn *conn)
{
	(void)conn;
}

static void
whch_interrupt(struct wh_conn *conn)
{
	atomic_store(&whch_conn(conn)->interrupted, 1);
}

static int64_t
whch_changes(struct wh_conn *conn)
{
	(void)conn;
	return 0;
}

static bool
whch_usable(const struct wh_conn *conn)
{
	return !((const struct whch_conn *)conn)->broken;
}

static void
whch_watch(struct wh_conn *conn, const atomic_int *stop, int64_t timeout_ms,
	   bool allow_wall_clock)
{
	struct whch_conn *c = whch_conn(conn);

	(void)allow_wall_clock;
	c->stop = stop;
	/* a run's timeout is the executor's (its stop flag, then KILL
	 * QUERY), and the server's backstop (max_execution_time); a caller
	 * without one (the start's and reload's check) bounds each query
	 * itself */
	c->limit_ms = stop == NULL ? timeout_ms : 0;
	c->exec_limit_s = stop != NULL && timeout_ms > 0 ?
	    (timeout_ms + 999) / 1000 + WHCH_EXEC_SLACK_S : 0;
}

static bool
whch_stopped(struct wh_conn *conn, char *buf, size_t size)
{
	struct whch_conn *c = whch_conn(conn);

	if (c->stopped[0] == '\0')
		return false;
	snprintf(buf, size, "%s", c->stopped);
	c->stopped[0] = '\0';
	return true;
}

static void
whch_tag(struct wh_conn *conn, int64_t run_id)
{
	whch_conn(conn)->run_id = run_id;
	whch_conn(conn)->nquery = 0;
}

const struct wh_driver wh_ch_driver = {
	.name = "clickhouse",
	.open = whch_open,
	.close = whch_close,
	.begin = whch_begin,
	.exec_script = whch_exec_script,
	.exec_many = whch_exec_many,
	.query_value = whch_query_value,
	.query_column = whch_query_column,
	.manifest_fill = whch_manifest_fill,
	.manifest_drop = whch_manifest_drop,
	.commit = whch_commit,
	.rollback = whch_rollback,
	.interrupt = whch_interrupt,
	.changes = whch_changes,
	.usable = whch_usable,
	.watch = whch_watch,
	.tag = whch_tag,
	.stopped = whch_stopped,
};
