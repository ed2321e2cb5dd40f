/*
 * hooks.c - run the operator's hooks off the loop (see hooks.h).
 *
 * Each hook is one struct hook_run owning three handles: the process, the
 * read end of a pipe that is the hook's stdout and stderr, and its timeout
 * timer.  It is freed when all three are closed: the process handle from
 * its exit callback (libuv's rule), the pipe at EOF, the timer at exit.
 * Output lines longer than HOOK_LINE_MAX are cut.
 */
#include "hooks.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

extern char **environ;

#define HOOK_LINE_MAX 1024

struct hook_run {
	struct hooks *h;
	enum hook_kind kind;
	char job[128];
	char partition[64];
	uv_process_t proc;
	uv_pipe_t out;
	uv_timer_t timer;
	int open;              /* handles not yet closed */
	bool exited, timed_out;
	int64_t started_ms;
	char line[HOOK_LINE_MAX];
	size_t nline;
	struct hook_run *next, *prev;
};

struct hooks {
	uv_loop_t *loop;
	struct hook_run runs;  /* list head */
	int nrunning;
	bool closing;
	int64_t counts[HOOK_COUNT][HOOK_RESULT_COUNT];
};

const char *
hook_result_name(enum hook_result r)
{
	static const char *const names[] = { "ok", "failed", "timeout" };

	return r < HOOK_RESULT_COUNT ? names[r] : "?";
}

/* Die on allocation failure, as the rest of the daemon does. */
static void *
hooks_xalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (p == NULL) {
		log_err("out of memory");
		abort();
	}
	return p;
}

struct hooks *
hooks_new(uv_loop_t *loop)
{
	struct hooks *h = hooks_xalloc(sizeof *h);

	h->loop = loop;
	h->runs.next = h->runs.prev = &h->runs;
	return h;
}

char *
hooks_subst(const char *arg, const char *job, const char *partition,
	    const char *request, const char *error)
{
	static const char *const names[] = { "{job}", "{partition}",
					     "{request}", "{error}" };
	const char *vals[] = { job, partition, request, error };
	size_t cap = strlen(arg) + 1, n = 0;
	char *out;

	for (size_t i = 0; i < 4; i++)
		cap += strlen(vals[i]) * (strlen(arg) / strlen(names[i]) + 1);
	out = hooks_xalloc(cap);
	for (const char *p = arg; *p;) {
		size_t i;

		for (i = 0; i < 4; i++)
			if (strncmp(p, names[i], strlen(names[i])) == 0)
				break;
		if (i < 4) {
			memcpy(out + n, vals[i], strlen(vals[i]));
			n += strlen(vals[i]);
			p += strlen(names[i]);
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = '\0';
	return out;
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

/* Log the line gathered so far. */
static void
hooks_flush_line(struct hook_run *r)
{
	if (r->nline == 0)
		return;
	log_info("hook=%s job=%s partition=%s output: %.*s",
		 hook_kind_name(r->kind), r->job, r->partition,
		 (int)r->nline, r->line);
	r->nline = 0;
}

/* Buffer for the pipe. */
static void
hooks_alloc_cb(uv_handle_t *hd, size_t hint, uv_buf_t *buf)
{
	static char mem[4096];

	(void)hd;
	(void)hint;
	*buf = uv_buf_init(mem, sizeof mem);
}

/* Output of a hook: to the log, line by line. */
static void
hooks_read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct hook_run *r = st->data;

	if (n < 0) {
		hooks_flush_line(r);
		uv_close((uv_handle_t *)&r->out, hooks_close_cb);
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		char c = buf->base[i];

		if (c == '\n') {
			hooks_flush_line(r);
			r->nline = 0;
		} else if (r->nline < sizeof r->line) {
			r->line[r->nline++] = c == '\r' || c == '\t' ? ' ' : c;
		}
	}
}

/* The hook exited: log and count its result. */
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
	h->nrunning--;
	if (r->timed_out)
		res = HOOK_TIMEOUT;
	else if (status == 0 && sig == 0)
		res = HOOK_OK;
	else
		res = HOOK_FAILED;
	h->counts[r->kind][res]++;
	if (res == HOOK_OK)
		log_info("hook=%s job=%s partition=%s done in %" PRId64 " ms",
			 hook_kind_name(r->kind), r->job, r->partition, ms);
	else if (res == HOOK_TIMEOUT)
		log_warn("hook=%s job=%s partition=%s killed after its"
			 " hook_timeout; not retried: make it return sooner or"
			 " raise hook_timeout", hook_kind_name(r->kind), r->job,
			 r->partition);
	else if (sig != 0)
		log_warn("hook=%s job=%s partition=%s killed by signal %d; not"
			 " retried", hook_kind_name(r->kind), r->job,
			 r->partition, sig);
	else
		log_warn("hook=%s job=%s partition=%s failed: exit status %"
			 PRId64 "; not retried", hook_kind_name(r->kind),
			 r->job, r->partition, status);
	uv_timer_stop(&r->timer);
	uv_close((uv_handle_t *)&r->timer, hooks_close_cb);
	uv_close((uv_handle_t *)p, hooks_close_cb);
}

/* hook_timeout passed: kill the hook's process group. */
static void
hooks_timeout_cb(uv_timer_t *t)
{
	struct hook_run *r = t->data;

	r->timed_out = true;
	kill(-r->proc.pid, SIGKILL);
}

void
hooks_fire(struct hooks *h, const struct job_def *j, enum hook_kind kind,
	   int64_t timeout_s, const char *partition, int64_t request,
	   const char *error)
{
	const struct hook_def *hd = &j->hooks[kind];
	uv_process_options_t opt;
	uv_stdio_container_t stdio[3];
	uv_file fds[2];
	char reqs[32] = "", *extra[4], **argv, **envp;
	size_t n, k, i;
	struct hook_run *r;
	int rc;

	if (hd->argv == NULL || h == NULL || h->closing)
		return;
	if (partition == NULL)
		partition = "";
	if (error == NULL)
		error = "";
	if (request > 0)
		snprintf(reqs, sizeof reqs, "%" PRId64, request);
	if ((rc = uv_pipe(fds, 0, 0)) != 0) {
		h->counts[kind][HOOK_FAILED]++;
		log_warn("hook=%s job=%s partition=%s cannot start: %s; not"
			 " retried", hook_kind_name(kind), j->name, partition,
			 uv_strerror(rc));
		return;
	}
	r = hooks_xalloc(sizeof *r);
	r->h = h;
	r->kind = kind;
	snprintf(r->job, sizeof r->job, "%s", j->name);
	snprintf(r->partition, sizeof r->partition, "%s",
		 partition[0] ? partition : "-");
	r->started_ms = clock_now_ms();

	argv = hooks_xalloc((hd->argc + 1) * sizeof *argv);
	for (i = 0; i < hd->argc; i++)
		argv[i] = hooks_subst(hd->argv[i], j->name, partition, reqs,
				      error);
	extra[0] = hooks_subst("BACKFILLD_JOB={job}", j->name, "", "", "");
	extra[1] = hooks_subst("BACKFILLD_PARTITION={partition}", "",
			       partition, "", "");
	extra[2] = hooks_subst("BACKFILLD_REQUEST={request}", "", "", reqs, "");
	extra[3] = hooks_subst("BACKFILLD_ERROR={error}", "", "", "", error);
	for (n = 0; environ != NULL && environ[n] != NULL; n++)
		;
	envp = hooks_xalloc((n + 5) * sizeof *envp);
	for (i = 0, k = 0; i < n; i++)
		if (strncmp(environ[i], "BACKFILLD_", 10) != 0)
			envp[k++] = environ[i];
	for (i = 0; i < 4; i++)
		envp[k++] = extra[i];

	memset(&opt, 0, sizeof opt);
	opt.file = argv[0];
	opt.args = argv;
	opt.env = envp;
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
	rc = uv_spawn(h->loop, &r->proc, &opt);
	close(fds[1]);
	for (i = 0; i < hd->argc; i++)
		free(argv[i]);
	free(argv);
	for (i = 0; i < 4; i++)
		free(extra[i]);
	free(envp);

	r->next = h->runs.next;
	r->prev = &h->runs;
	h->runs.next->prev = r;
	h->runs.next = r;
	uv_pipe_init(h->loop, &r->out, 0);
	uv_pipe_open(&r->out, fds[0]);
	uv_timer_init(h->loop, &r->timer);
	if (rc != 0) {
		h->counts[kind][HOOK_FAILED]++;
		log_warn("hook=%s job=%s partition=%s cannot run %s: %s; not"
			 " retried", hook_kind_name(kind), j->name,
			 r->partition, hd->argv[0], uv_strerror(rc));
		r->open = 3;
		uv_close((uv_handle_t *)&r->proc, hooks_close_cb);
		uv_close((uv_handle_t *)&r->out, hooks_close_cb);
		uv_close((uv_handle_t *)&r->timer, hooks_close_cb);
		return;
	}
	r->open = 3;
	h->nrunning++;
	log_info("hook=%s job=%s partition=%s started: pid %d",
		 hook_kind_name(kind), j->name, r->partition, r->proc.pid);
	uv_read_start((uv_stream_t *)&r->out, hooks_alloc_cb, hooks_read_cb);
	uv_timer_start(&r->timer, hooks_timeout_cb, (uint64_t)timeout_s * 1000,
		       0);
}

int64_t
hooks_count(const struct hooks *h, enum hook_kind kind, enum hook_result r)
{
	return h != NULL ? h->counts[kind][r] : 0;
}

int
hooks_running(const struct hooks *h)
{
	return h != NULL ? h->nrunning : 0;
}

void
hooks_close(struct hooks *h)
{
	if (h == NULL)
		return;
	h->closing = true;
	for (struct hook_run *r = h->runs.next; r != &h->runs; r = r->next)
		if (!r->exited && r->proc.pid > 0)
			kill(-r->proc.pid, SIGKILL);
	if (h->runs.next == &h->runs)
		free(h);
}
