/*
 * hooks.c - run the operator's hooks off the loop (see hooks.h).
 *
 * One runner (hooks_run) for every hook, a job's and a warehouse's: the
 * callers differ only in their placeholders, the name the log gives the
 * run and whether its result is counted.  A fired hook is one struct
 * hook_run, its argv and environment made at once; the bounds of
 * daemon/lib/hookq.c decide whether it starts now, waits in the queue
 * (first in, first out, started as running hooks end) or is dropped.  A
 * started run owns three handles: the process, the read end of a pipe
 * that is the hook's stdout and stderr, and its timeout timer.  It is
 * freed when all three are closed: the process handle from its exit
 * callback (libuv's rule), the pipe at EOF, the timer at exit.  Output
 * lines longer than HOOK_LINE_MAX are cut; a hook's output is logged up
 * to HOOKQ_OUTPUT_MAX bytes of log, the rest read and counted.
 */
#include "hooks.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "hookq.h"
#include "log.h"
#include "proc.h"
#include "text.h"
#include "xalloc.h"

extern char **environ;

#define HOOK_LINE_MAX 1024
/* The bytes log.c puts before a line, at most: its time, the program's
 * name and pid and the level ("<6>" for journald). */
#define HOOK_LOG_PREFIX 64

struct hook_run {
	struct hooks *h;
	char who[320];         /* "hook=on_late job=j partition=p", for the log */
	int64_t *counts;       /* [HOOK_RESULT_COUNT] counting its result, or NULL */
	char **argv, **envp;   /* until it starts */
	int64_t timeout_s;
	uv_process_t proc;
	uv_pipe_t out;
	uv_timer_t timer;
	int open;              /* handles not yet closed */
	bool exited, timed_out;
	int64_t started_ms;
	char line[HOOK_LINE_MAX];
	size_t nline, ncut;    /* bytes in line, bytes of it cut */
	struct hookq_out logged;
	struct hook_run *next, *prev; /* started runs */
	struct hook_run *qnext;       /* the queue */
};

struct hooks {
	uv_loop_t *loop;
	struct hook_run runs;  /* list head */
	struct hook_run *qhead, *qtail;
	struct hookq q;
	bool closing;
	int64_t counts[HOOK_COUNT][HOOK_RESULT_COUNT];
};

static void hooks_start(struct hooks *h, struct hook_run *r);

const char *
hook_result_name(enum hook_result r)
{
	static const char *const names[] = { "ok", "failed", "timeout" };

	return r < HOOK_RESULT_COUNT ? names[r] : "?";
}

struct hooks *
hooks_new(uv_loop_t *loop)
{
	struct hooks *h = xcalloc(1, sizeof *h);

	h->loop = loop;
	h->runs.next = h->runs.prev = &h->runs;
	hookq_init(&h->q, HOOKQ_CONCURRENCY_DEFAULT,
		   HOOKQ_QUEUE_DEFAULT);
	return h;
}

/* The var whose placeholder starts at p, or NULL. */
static const struct hook_var *
hooks_var_at(const char *p, const struct hook_var *vars, size_t nvars)
{
	size_t n;

	if (*p != '{')
		return NULL;
	for (size_t i = 0; i < nvars; i++) {
		n = strlen(vars[i].name);
		if (strncmp(p + 1, vars[i].name, n) == 0 && p[n + 1] == '}')
			return &vars[i];
	}
	return NULL;
}

char *
hooks_subst(const char *arg, const struct hook_var *vars, size_t nvars)
{
	const struct hook_var *v;
	size_t cap = 1, n = 0;
	const char *p;
	char *out;

	/* two passes over arg: the size, then the text */
	for (p = arg; *p != '\0';) {
		if ((v = hooks_var_at(p, vars, nvars)) != NULL) {
			cap += strlen(v->value);
			p += strlen(v->name) + 2;
		} else {
			cap++;
			p++;
		}
	}
	out = xmalloc(cap);
	for (p = arg; *p != '\0';) {
		if ((v = hooks_var_at(p, vars, nvars)) != NULL) {
			memcpy(out + n, v->value, strlen(v->value));
			n += strlen(v->value);
			p += strlen(v->name) + 2;
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = '\0';
	return out;
}

char **
hooks_argv(char *const *argv, size_t argc, const struct hook_var *vars,
	   size_t nvars)
{
	char **out = xcalloc(argc + 1, sizeof *out);

	for (size_t i = 0; i < argc; i++)
		out[i] = hooks_subst(argv[i], vars, nvars);
	return out;
}

char **
hooks_env(char *const *env, const struct hook_var *vars, size_t nvars)
{
	size_t n = 0, k = 0, i;
	char **out, *e;

	while (env != NULL && env[n] != NULL)
		n++;
	out = xcalloc(n + nvars + 1, sizeof *out);
	for (i = 0; i < n; i++)
		if (strncmp(env[i], "BACKFILLD_", 10) != 0)
			out[k++] = xstrdup(env[i]);
	for (i = 0; i < nvars; i++) {
		out[k] = xasprintf("BACKFILLD_%s=%s", vars[i].name,
				   vars[i].value);
		for (e = out[k] + 10; *e != '=' && *e != '\0'; e++)
			*e = (char)toupper((unsigned char)*e);
		k++;
	}
	return out;
}

void
hooks_strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/* Free a run that never started (or whose start failed before any
 * handle). */
static void
hooks_run_free(struct hook_run *r)
{
	hooks_strv_free(r->argv);
	hooks_strv_free(r->envp);
	free(r);
}

/* Start the queue's head while the bounds allow. */
static void
hooks_pump(struct hooks *h)
{
	struct hook_run *r;

	while (!h->closing && h->qhead != NULL && hookq_next(&h->q)) {
		r = h->qhead;
		if ((h->qhead = r->qnext) == NULL)
			h->qtail = NULL;
		hooks_start(h, r);
	}
}

/* One handle of run r closed: free r after the last. */
static void
hooks_close_cb(uv_handle_t *hd)
{
	struct hook_run *r = hd->data;
	struct hooks *h = r->h;

	if (--r->open > 0)
		return;
	r->prev->next = r->next;
	r->next->prev = r->prev;
	free(r);
	if (h->closing && h->runs.next == &h->runs)
		free(h);
}

/* Log the line gathered so far, while the hook's share of the log lasts. */
static void
hooks_flush_line(struct hook_run *r, bool nl)
{
	struct buf esc;
	size_t cost;

	if (r->nline == 0 && r->ncut == 0) {
		if (nl && r->logged.full)
			r->logged.dropped++;
		return;
	}
	/* every byte of the line, a NUL included, by the one rule */
	buf_init(&esc);
	text_escape_add(&esc, r->line, r->nline);
	/* the log's prefix, who, " output: ", esc, "\n" */
	cost = HOOK_LOG_PREFIX + strlen(r->who) + 9 + esc.len + 1;
	if (hookq_out_take(&r->logged, r->nline, cost, nl))
		log_info("%s output: %.*s", r->who, (int)esc.len,
			 esc.len ? esc.data : "");
	buf_free(&esc);
	hookq_out_cut(&r->logged, r->ncut);
	r->nline = r->ncut = 0;
}

/* Buffer for the pipe. */
static void
hooks_alloc_cb(uv_handle_t *hd, size_t hint, uv_buf_t *buf)
{
	static char mem[65536];

	(void)hd;
	(void)hint;
	*buf = uv_buf_init(mem, sizeof mem);
}

/* Output of a hook: to the log, line by line, up to its share. */
static void
hooks_read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct hook_run *r = st->data;

	if (n < 0) {
		hooks_flush_line(r, false);
		if (r->logged.dropped > 0)
			log_warn("%s output: %" PRIu64 " bytes more not logged"
				 " (a hook's output is logged up to %d bytes)",
				 r->who, r->logged.dropped, HOOKQ_OUTPUT_MAX);
		uv_close((uv_handle_t *)&r->out, hooks_close_cb);
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		char c = buf->base[i];

		if (c == '\n') {
			hooks_flush_line(r, true);
		} else if (r->logged.full) {
			r->logged.dropped++;
		} else if (r->nline < sizeof r->line - 1) {
			r->line[r->nline++] = c == '\r' || c == '\t' ? ' ' : c;
		} else {
			r->ncut++;
		}
	}
}

/* The hook exited: log and count its result, start the next one. */
static void
hooks_exit_cb(uv_process_t *p, int64_t status, int sig)
{
	struct hook_run *r = p->data;
	struct hooks *h = r->h;
	int64_t ms = clock_now_ms() - r->started_ms;
	enum hook_result res;

	/* the hook's children may hold the pipe: their group goes with it */
	kill(-p->pid, SIGKILL);
	r->exited = true;
	if (r->timed_out)
		res = HOOK_TIMEOUT;
	else if (status == 0 && sig == 0)
		res = HOOK_OK;
	else
		res = HOOK_FAILED;
	if (r->counts != NULL)
		r->counts[res]++;
	if (res == HOOK_OK)
		log_info("%s done in %" PRId64 " ms", r->who, ms);
	else if (res == HOOK_TIMEOUT)
		log_warn("%s failed: killed after hook_timeout (%" PRId64 "s);"
			 " not retried: make it return sooner or raise"
			 " hook_timeout", r->who, r->timeout_s);
	else if (sig != 0)
		log_warn("%s failed: killed by signal %d (%s); not retried",
			 r->who, sig, strsignal(sig));
	else
		log_warn("%s failed: exit status %" PRId64 "; not retried",
			 r->who, status);
	uv_timer_stop(&r->timer);
	uv_close((uv_handle_t *)&r->timer, hooks_close_cb);
	uv_close((uv_handle_t *)p, hooks_close_cb);
	hookq_done(&h->q);
	hooks_pump(h);
}

/* hook_timeout passed: kill the hook's process group. */
static void
hooks_timeout_cb(uv_timer_t *t)
{
	struct hook_run *r = t->data;

	r->timed_out = true;
	kill(-r->proc.pid, SIGKILL);
}

/* A run that cannot start: logged and counted as failed, its slot
 * given back (the caller pumps the queue). */
static void
hooks_cannot_start(struct hooks *h, struct hook_run *r, const char *what,
		   int rc)
{
	if (r->counts != NULL)
		r->counts[HOOK_FAILED]++;
	log_warn("%s failed: cannot start %s: %s; not retried", r->who, what,
		 uv_strerror(rc));
	hookq_done(&h->q);
}

/*
 * Start run r (counted running): its argv in its own process group, its
 * output to the log, killed after its timeout.
 */
static void
hooks_start(struct hooks *h, struct hook_run *r)
{
	uv_process_options_t opt;
	uv_stdio_container_t stdio[3];
	uv_file fds[2];
	int rc;

	if ((rc = uv_pipe(fds, 0, 0)) != 0) {
		hooks_cannot_start(h, r, r->argv[0], rc);
		hooks_run_free(r);
		return;
	}
	r->started_ms = clock_now_ms();
	memset(&opt, 0, sizeof opt);
	opt.file = r->argv[0];
	opt.args = r->argv;
	opt.env = r->envp;
	opt.flags = UV_PROCESS_DETACHED; /* own session: killed as a group */
	opt.exit_cb = hooks_exit_cb;
	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_INHERIT_FD;
	stdio[1].data.fd = fds[1];
	stdio[2].flags = UV_INHERIT_FD;
	stdio[2].data.fd = fds[1];
	opt.stdio = stdio;
	opt.stdio_count = 3;
	r->proc.data = r->out.data = r->timer.data = r;
	proc_cloexec_all(-1);
	rc = uv_spawn(h->loop, &r->proc, &opt);
	close(fds[1]);

	r->next = h->runs.next;
	r->prev = &h->runs;
	h->runs.next->prev = r;
	h->runs.next = r;
	uv_pipe_init(h->loop, &r->out, 0);
	uv_pipe_open(&r->out, fds[0]);
	uv_timer_init(h->loop, &r->timer);
	r->open = 3;
	if (rc != 0) {
		hooks_cannot_start(h, r, r->argv[0], rc);
		hooks_strv_free(r->argv);
		hooks_strv_free(r->envp);
		r->argv = r->envp = NULL;
		uv_close((uv_handle_t *)&r->proc, hooks_close_cb);
		uv_close((uv_handle_t *)&r->out, hooks_close_cb);
		uv_close((uv_handle_t *)&r->timer, hooks_close_cb);
		return;
	}
	hooks_strv_free(r->argv);
	hooks_strv_free(r->envp);
	r->argv = r->envp = NULL;
	log_info("%s started: pid %d", r->who, r->proc.pid);
	uv_read_start((uv_stream_t *)&r->out, hooks_alloc_cb, hooks_read_cb);
	uv_timer_start(&r->timer, hooks_timeout_cb,
		       (uint64_t)r->timeout_s * 1000, 0);
}

/*
 * Fire one hook: argv (placeholders of vars substituted) in its own
 * process group, vars also in the environment, output to the log under
 * `who`, killed after timeout_s; its result counted in counts (when not
 * NULL).  It starts now, waits in the queue or is dropped (hookq.h).
 */
static void
hooks_run(struct hooks *h, const char *who, char *const *tmpl, size_t argc,
	  const struct hook_var *vars, size_t nvars, int64_t timeout_s,
	  int64_t *counts)
{
	enum hookq_verdict v = hookq_fire(&h->q);
	struct hook_run *r;

	if (v == HOOKQ_DROP_LOG)
		log_warn("%s dropped: %d hooks running (hook_concurrency) and"
			 " %d queued (hook_queue); counted in"
			 " backfilld_hooks_dropped_total, logged once until the"
			 " queue empties", who, h->q.running, h->q.queued);
	if (v == HOOKQ_DROP || v == HOOKQ_DROP_LOG)
		return;
	r = xcalloc(1, sizeof *r);
	r->h = h;
	r->counts = counts;
	snprintf(r->who, sizeof r->who, "%s", who);
	r->timeout_s = timeout_s;
	r->argv = hooks_argv(tmpl, argc, vars, nvars);
	r->envp = hooks_env(environ, vars, nvars);
	if (v == HOOKQ_QUEUE) {
		log_debug("%s queued: %d hooks running (hook_concurrency)",
			  r->who, h->q.running);
		if (h->qtail != NULL)
			h->qtail->qnext = r;
		else
			h->qhead = r;
		h->qtail = r;
		return;
	}
	hooks_start(h, r);
}

void
hooks_fire(struct hooks *h, const struct job_def *j, enum hook_kind kind,
	   int64_t timeout_s, const char *partition, int64_t request,
	   const char *error)
{
	const struct hook_def *hd = &j->hooks[kind];
	char reqs[32] = "", who[320];

	if (hd->argv == NULL || h == NULL || h->closing)
		return;
	if (partition == NULL)
		partition = "";
	if (error == NULL)
		error = "";
	if (request > 0)
		snprintf(reqs, sizeof reqs, "%" PRId64, request);
	const struct hook_var vars[] = { { "job", j->name },
		{ "partition", partition }, { "request", reqs },
		{ "error", error } };
	snprintf(who, sizeof who, "hook=%s job=%.127s partition=%.63s",
		 hook_kind_name(kind), j->name, partition[0] ? partition : "-");
	hooks_run(h, who, hd->argv, hd->argc, vars, 4, timeout_s,
		  h->counts[kind]);
}

void
hooks_fire_budget(struct hooks *h, const struct job_def *j, int64_t timeout_s,
		  int64_t request, const char *error, int64_t budget_ms,
		  int64_t spent_ms)
{
	const struct hook_def *hd = &j->hooks[HOOK_FAILURE];
	char reqs[32], budget[32], spent[32], who[320];

	if (hd->argv == NULL || h == NULL || h->closing)
		return;
	snprintf(reqs, sizeof reqs, "%" PRId64, request);
	snprintf(budget, sizeof budget, "%" PRId64, budget_ms / 1000);
	snprintf(spent, sizeof spent, "%" PRId64, spent_ms / 1000);
	const struct hook_var vars[] = { { "job", j->name },
		{ "partition", "" }, { "request", reqs },
		{ "error", error ? error : "" }, { "budget", budget },
		{ "warehouse_seconds", spent } };
	snprintf(who, sizeof who, "hook=on_failure job=%.127s request=%s"
		 " over budget", j->name, reqs);
	hooks_run(h, who, hd->argv, hd->argc, vars, 6, timeout_s,
		  h->counts[HOOK_FAILURE]);
}

void
hooks_fire_throttle(struct hooks *h, const struct warehouse_def *w,
		    int64_t timeout_s, const char *value, const char *state)
{
	const struct hook_var vars[] = { { "warehouse", w->name },
		{ "value", value }, { "state", state } };
	char who[320];

	if (w->on_throttle == NULL || h == NULL || h->closing)
		return;
	snprintf(who, sizeof who, "hook=on_throttle warehouse=%.127s state=%s",
		 w->name, state);
	hooks_run(h, who, w->on_throttle, w->on_throttle_len, vars, 3,
		  timeout_s, NULL);
}

int64_t
hooks_count(const struct hooks *h, enum hook_kind kind, enum hook_result r)
{
	return h != NULL ? h->counts[kind][r] : 0;
}

void
hooks_bound(struct hooks *h, int concurrency, int queue)
{
	if (h == NULL)
		return;
	hookq_bound(&h->q, concurrency, queue);
	hooks_pump(h);
}

int64_t
hooks_dropped(const struct hooks *h)
{
	return h != NULL ? h->q.dropped : 0;
}

void
hooks_close(struct hooks *h)
{
	struct hook_run *r;

	if (h == NULL)
		return;
	h->closing = true;
	/* the queued never start */
	while ((r = h->qhead) != NULL) {
		h->qhead = r->qnext;
		hooks_run_free(r);
	}
	h->qtail = NULL;
	for (r = h->runs.next; r != &h->runs; r = r->next)
		if (!r->exited && r->proc.pid > 0)
			kill(-r->proc.pid, SIGKILL);
	if (h->runs.next == &h->runs)
		free(h);
}
