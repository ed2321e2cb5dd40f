/*
 * cluster_probe.c - one node of several hosts, driven line by line, for
 * tests/integration/test_cluster_pg.py: it loads cluster_pg_driver from
 * the PostgreSQL module and runs it on a libuv loop, reads commands on
 * stdin and prints what happens on stdout, one line per event.
 *
 *	cluster_probe MODULE CONNINFO NODE LEASE_S
 *
 * MODULE is the path of backfilld-pg.so; its folder is the one module.c
 * looks in (BACKFILLD_TEST_MODULE_DIR).
 *
 * Commands (answers in brackets):
 *	offer FIRST COUNT [JOB]  offer runs FIRST.. [offered N | offer-refused]
 *	own FIRST COUNT [JOB]    as planner, make runs FIRST.. its own claims
 *	                         (claim_own) [owned N | own-refused WHY]
 *	planner-now              [planner-now yes|no]
 *	claim MAX [JOB]          claim runs [claimed ID...]
 *	finish ID                record a success [finish ID ok|refused|error]
 *	results                  done rows [result ID BY FAILED INTERRUPTED
 *	                         ERROR... then results-end]
 *	forget ID...             delete rows [forgot N]
 *	inflight                 [inflight ID...]
 *	nodes                    [node NAME ROLE INCARNATION RUNNING AGE_MS
 *	                         ... then nodes-end]
 *	state                    [state ROLE GENERATION INCARNATION DB PLANNER
 *	                         LIVE_NODES PREVIOUS_PLANNER]
 *	forward TEXT             ask the planner [reply TEXT | reply-error WHY]
 *	serve                    as planner, answer mail with "echo:REQUEST"
 *	batch MAX ID...          finish IDs and claim up to MAX runs of job j
 *	                         in one statement (finish_claim) [batch-finish
 *	                         ID ok|refused ... then claimed ID...]
 *	auto N                   on each wakeup finish the runs claimed at the
 *	                         last one and claim up to N runs of job j, in
 *	                         one statement [claimed ID..., finish ID ok]
 *	quit                     leave cleanly [closed]
 * Events: role ROLE GENERATION, fenced OLD NEW, db ok|lost WHY, work,
 * done, mail, cancel ID.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "cluster.h"
#include "xalloc.h"

static const struct cluster_driver *drv;
static struct cluster *cl;
static uv_loop_t *loop;
static uv_pipe_t in;
static char line[1 << 16];
static size_t linelen;
static bool serving;
static size_t auto_max;
static int64_t lease_s;
static uv_idle_t again; /* not a 0 ms timer: see cluster_pg.c's kick */

static void probe_again_cb(uv_idle_t *t);
static void probe_auto(void);

/* Print one line and flush it. */
static void __attribute__((format(printf, 1, 2)))
out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "out %" PRIu64 ": ", uv_now(loop));
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Claim up to max runs of job, print them. */
static void
probe_claim(size_t max, const char *job)
{
	const char *jobs[1] = { job };
	struct cluster_work *w;
	char buf[1 << 14];
	size_t n, i, o;
	struct err err;

	if (drv->claim(cl, jobs, 1, max, &w, &n, &err) < 0) {
		out("claim-error %s", err.msg);
		return;
	}
	o = (size_t)snprintf(buf, sizeof buf, "claimed");
	for (i = 0; i < n && o < sizeof buf - 24; i++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, " %" PRId64,
				      w[i].id);
	out("%s", buf);
	drv->work_free(w, n);
}

/* auto: the runs claimed at the last wakeup, finished at the next. */
static int64_t *auto_ids;
static size_t auto_n;

/* One finish_claim: finish ids, claim up to max; print what happened. */
static int
probe_batch(size_t max, const int64_t *ids, size_t nf, bool quiet)
{
	const char *jobs[1] = { "j" };
	struct cluster_finish *f = xcalloc(nf + 1, sizeof *f);
	struct cluster_work *w;
	char buf[1 << 14];
	size_t n, i, o;
	struct err err;

	for (i = 0; i < nf; i++)
		f[i] = (struct cluster_finish){ ids[i], { false, NULL, "{}" },
						0 };
	if (drv->finish_claim(cl, f, nf, jobs, 1, max, &w, &n, &err) < 0) {
		out("batch-error %s", err.msg);
		free(f);
		return -1;
	}
	for (i = 0; i < nf; i++)
		out("%s %" PRId64 " %s", quiet ? "finish" : "batch-finish",
		    f[i].id, f[i].ok ? "ok" : "refused");
	free(f);
	o = (size_t)snprintf(buf, sizeof buf, "claimed");
	for (i = 0; i < n && o < sizeof buf - 24; i++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, " %" PRId64,
				      w[i].id);
	if (n > 0 || !quiet)
		out("%s", buf);
	if (quiet) {
		free(auto_ids);
		auto_ids = xcalloc(n + 1, sizeof *auto_ids);
		for (i = 0; i < n; i++)
			auto_ids[i] = w[i].id;
		auto_n = n;
	}
	drv->work_free(w, n);
	return (int)n;
}

/* batch MAX ID...: the first two ids in a2, a3, the rest to come from
 * strtok. */
static void
probe_batch_cmd(const char *a1, char *a2, char *a3)
{
	int64_t ids[64];
	size_t n = 0;

	for (char *a = a2; a != NULL && n < 64; a = n == 1 ? a3 :
	     strtok(NULL, " "))
		ids[n++] = strtoll(a, NULL, 10);
	probe_batch(strtoul(a1, NULL, 10), ids, n, false);
}

/* auto: finish what the last wakeup claimed and claim again; while
 * there was work, again on the next loop turn (as the daemon does), so
 * that its heartbeat keeps its beat. */
static void
probe_auto(void)
{
	int64_t *ids = auto_ids;
	size_t nf = auto_n;
	int n;

	auto_ids = NULL;
	auto_n = 0;
	n = probe_batch(auto_max, ids, nf, true);
	free(ids);
	if (n > 0)
		uv_idle_start(&again, probe_again_cb);
}

/* Claim again on the next loop turn (auto). */
static void
probe_again_cb(uv_idle_t *t)
{
	uv_idle_stop(t);
	probe_auto();
}

/* role_cb */
static void
probe_role_cb(void *data, enum cluster_role role, int64_t generation)
{
	(void)data;
	out("role %s %" PRId64, cluster_role_name(role), generation);
}

/* work_cb */
static void
probe_work_cb(void *data)
{
	(void)data;
	out("work");
	if (auto_max > 0)
		probe_auto();
}

/* done_cb */
static void
probe_done_cb(void *data)
{
	(void)data;
	out("done");
}

/* mail_cb: answer every request when serving. */
static void
probe_mail_cb(void *data)
{
	struct cluster_mail *m;
	struct err err;
	char *resp;

	(void)data;
	out("mail");
	while (serving && drv->mail_take(cl, &m, &err) == 0 && m != NULL) {
		resp = xasprintf("echo:%s", (char *)m->req);
		if (drv->mail_answer(cl, m->id, resp, strlen(resp), &err) < 0)
			out("answer-error %s", err.msg);
		free(resp);
		drv->mail_free(m);
	}
}

/* fenced_cb */
static void
probe_fenced_cb(void *data, int64_t old, int64_t new_inc)
{
	(void)data;
	out("fenced %" PRId64 " %" PRId64, old, new_inc);
}

/* db_cb */
static void
probe_db_cb(void *data, bool ok, const char *why)
{
	(void)data;
	out("db %s %s", ok ? "ok" : "lost", why ? why : "");
}

/* cancel_cb */
static void
probe_cancel_cb(void *data, int64_t id)
{
	(void)data;
	out("cancel %" PRId64, id);
}

/* log_cb: to stderr. */
static void
probe_log_cb(void *data, int prio, const char *l)
{
	(void)data;
	fprintf(stderr, "<%d>%" PRIu64 " %s\n", prio, uv_now(loop), l);
}

/* A forwarded request's answer. */
static void
probe_reply_cb(void *arg, int status, const void *resp, size_t len,
	       const char *why)
{
	(void)arg;
	if (status < 0)
		out("reply-error %s", why);
	else
		out("reply %.*s", (int)len, (const char *)resp);
}

/* Closed: stop the loop. */
static void
probe_closed_cb(void *arg)
{
	(void)arg;
	out("closed");
	uv_close((uv_handle_t *)&in, NULL);
	uv_close((uv_handle_t *)&again, NULL);
}

/* Offer COUNT runs from FIRST (own: as the planner's own claims). */
static void
probe_offer(int64_t first, int64_t count, const char *job, bool own)
{
	struct cluster_offer *o = xcalloc((size_t)count, sizeof *o);
	char (*keys)[32] = xcalloc((size_t)count, sizeof *keys);
	const char **kp = xcalloc((size_t)count, sizeof *kp);
	struct err err;
	int64_t i;

	for (i = 0; i < count; i++) {
		snprintf(keys[i], sizeof keys[i], "k%" PRId64, first + i);
		kp[i] = keys[i];
		o[i].id = first + i;
		o[i].request = 1;
		o[i].job = job;
		o[i].keys = &kp[i];
		o[i].nkeys = 1;
		o[i].attempt = 1;
	}
	if (own && drv->claim_own(cl, o, (size_t)count, &err) < 0)
		out("own-refused %s", err.msg);
	else if (own)
		out("owned %" PRId64, count);
	else if (drv->offer(cl, o, (size_t)count, &err) < 0)
		out("offer-refused %s", err.msg);
	else
		out("offered %" PRId64, count);
	free(o);
	free(keys);
	free(kp);
}

/* The results rows. */
static void
probe_results(void)
{
	struct cluster_work *w;
	struct err err;
	size_t n, i;

	if (drv->results(cl, 100000, &w, &n, &err) < 0) {
		out("results-error %s", err.msg);
		return;
	}
	for (i = 0; i < n; i++)
		out("result %" PRId64 " %s %d %d %s", w[i].id, w[i].claimed_by,
		    w[i].failed, w[i].interrupted, w[i].error ? w[i].error : "");
	out("results-end");
	drv->work_free(w, n);
}

/* The nodes rows. */
static void
probe_nodes(void)
{
	struct cluster_node *nd;
	struct err err;
	int64_t now;
	size_t n, i;

	if (drv->nodes(cl, &nd, &n, &now, &err) < 0) {
		out("nodes-error %s", err.msg);
		return;
	}
	for (i = 0; i < n; i++)
		out("node %s %s %" PRId64 " %d %" PRId64, nd[i].name,
		    nd[i].role, nd[i].incarnation, nd[i].running,
		    now - nd[i].last_seen_ms);
	out("nodes-end");
	free(nd);
}

/* Run one command line. */
static void
probe_command(char *l)
{
	char *cmd = strtok(l, " "), *a1 = strtok(NULL, " ");
	char *a2 = strtok(NULL, " "), *a3 = strtok(NULL, " ");
	struct cluster_state st;
	struct err err;

	if (cmd == NULL)
		return;
	if (strcmp(cmd, "offer") == 0 && a2 != NULL) {
		probe_offer(strtoll(a1, NULL, 10), strtoll(a2, NULL, 10),
			    a3 ? a3 : "j", false);
	} else if (strcmp(cmd, "own") == 0 && a2 != NULL) {
		probe_offer(strtoll(a1, NULL, 10), strtoll(a2, NULL, 10),
			    a3 ? a3 : "j", true);
	} else if (strcmp(cmd, "planner-now") == 0) {
		out("planner-now %s", drv->planner_now(cl) ? "yes" : "no");
	} else if (strcmp(cmd, "claim") == 0 && a1 != NULL) {
		probe_claim(strtoul(a1, NULL, 10), a2 ? a2 : "j");
	} else if (strcmp(cmd, "finish") == 0 && a1 != NULL) {
		struct cluster_result r = { false, NULL, "{}" };
		int rc = drv->finish(cl, strtoll(a1, NULL, 10), &r, &err);

		if (rc < 0)
			out("finish %s error %s", a1, err.msg);
		else
			out("finish %s %s", a1, rc ? "ok" : "refused");
	} else if (strcmp(cmd, "results") == 0) {
		probe_results();
	} else if (strcmp(cmd, "batch") == 0 && a1 != NULL) {
		probe_batch_cmd(a1, a2, a3);
	} else if (strcmp(cmd, "forget") == 0) {
		int64_t ids[64];
		size_t n = 0;

		for (char *a = a1; a != NULL && n < 64; a = n == 1 ? a2 :
		     n == 2 ? a3 : strtok(NULL, " "))
			ids[n++] = strtoll(a, NULL, 10);
		if (drv->forget(cl, ids, n, &err) < 0)
			out("forget-error %s", err.msg);
		else
			out("forgot %zu", n);
	} else if (strcmp(cmd, "inflight") == 0) {
		int64_t *ids;
		size_t n, i, o;
		char buf[1 << 14];

		if (drv->in_flight(cl, &ids, &n, &err) < 0) {
			out("inflight-error %s", err.msg);
			return;
		}
		o = (size_t)snprintf(buf, sizeof buf, "inflight");
		for (i = 0; i < n && o < sizeof buf - 24; i++)
			o += (size_t)snprintf(buf + o, sizeof buf - o,
					      " %" PRId64, ids[i]);
		out("%s", buf);
		free(ids);
	} else if (strcmp(cmd, "nodes") == 0) {
		probe_nodes();
	} else if (strcmp(cmd, "state") == 0) {
		drv->state(cl, &st);
		out("state %s %" PRId64 " %" PRId64 " %s %s %d %s",
		    cluster_role_name(st.role), st.generation, st.incarnation,
		    st.db_ok ? "ok" : "lost", st.planner[0] ? st.planner : "-",
		    st.live_nodes, st.prev_planner[0] ? st.prev_planner : "-");
	} else if (strcmp(cmd, "forward") == 0 && a1 != NULL) {
		if (drv->forward(cl, a1, strlen(a1), lease_s * 1000 + 2000,
				 probe_reply_cb, NULL, &err) < 0)
			out("reply-error %s", err.msg);
	} else if (strcmp(cmd, "serve") == 0) {
		serving = true;
		out("serving");
		probe_mail_cb(NULL);
	} else if (strcmp(cmd, "auto") == 0 && a1 != NULL) {
		auto_max = strtoul(a1, NULL, 10);
		out("auto %zu", auto_max);
		probe_auto();
	} else if (strcmp(cmd, "quit") == 0) {
		uv_read_stop((uv_stream_t *)&in);
		drv->close(cl, probe_closed_cb, NULL);
	} else {
		out("unknown %s", cmd);
	}
}

/* Buffer for stdin. */
static void
probe_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	static char b[4096];

	(void)h;
	(void)hint;
	*buf = uv_buf_init(b, sizeof b);
}

/* Lines from stdin. */
static void
probe_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	ssize_t i;

	if (n < 0) {
		uv_read_stop(s);
		drv->close(cl, probe_closed_cb, NULL);
		return;
	}
	for (i = 0; i < n; i++) {
		if (buf->base[i] != '\n') {
			if (linelen < sizeof line - 1)
				line[linelen++] = buf->base[i];
			continue;
		}
		line[linelen] = '\0';
		linelen = 0;
		probe_command(line);
		if (uv_is_closing((uv_handle_t *)&in) ||
		    !uv_is_readable(s))
			return;
	}
}

int
main(int argc, char **argv)
{
	struct cluster_cbs cbs = {
		.role_cb = probe_role_cb, .work_cb = probe_work_cb,
		.done_cb = probe_done_cb, .mail_cb = probe_mail_cb,
		.fenced_cb = probe_fenced_cb, .db_cb = probe_db_cb,
		.cancel_cb = probe_cancel_cb, .log_cb = probe_log_cb,
	};
	struct cluster_opts o;
	char why[512], dir[4096], *slash;
	struct err err;

	if (argc != 5) {
		fprintf(stderr, "usage: cluster_probe MODULE CONNINFO NODE"
			" LEASE_S\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	/* the module named on the command line (module.c's test hook) */
	snprintf(dir, sizeof dir, "%s", argv[1]);
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	setenv("BACKFILLD_TEST_MODULE_DIR", dir, 1);
	if ((drv = cluster_driver_load(why, sizeof why)) == NULL) {
		fprintf(stderr, "%s\n", why);
		return 1;
	}
	loop = uv_default_loop();
	memset(&o, 0, sizeof o);
	o.conninfo = argv[2];
	o.node = argv[3];
	o.lease_s = lease_s = strtoll(argv[4], NULL, 10);
	o.config_hash = "0123456789abcdef";
	o.password_file = getenv("PROBE_PASSWORD_FILE");
	uv_idle_init(loop, &again);
	uv_pipe_init(loop, &in, 0);
	uv_pipe_open(&in, 0);
	if (drv->open(loop, &o, &cbs, &cl, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	out("ready %s", argv[3]);
	uv_read_start((uv_stream_t *)&in, probe_alloc_cb, probe_read_cb);
	uv_run(loop, UV_RUN_DEFAULT);
	drv->free(cl);
	uv_loop_close(loop);
	return 0;
}
