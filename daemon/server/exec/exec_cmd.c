/*
 * exec_cmd.c - command runs: no thread, uv_spawn() in their own session
 * (so the pid is also the process group), with BACKFILLD_* in the
 * environment and stdout and stderr appended to the run's own log file
 * (exec_log_path: named by its run id);
 * reaped by libuv's exit callback on the loop.  A command is stopped by
 * SIGKILL to its group, only while the child is not yet reaped (the pid
 * could be reused after).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec_priv.h"
#include "proc.h"
#include "xalloc.h"

extern char **environ;

/* Kill a command's whole process group, if it is still ours to kill. */
void
exec_cmd_kill(struct exec_flight *fl)
{
	if (!fl->spawned || fl->exited)
		return;
	if (kill(-fl->proc.pid, SIGKILL) == -1)
		kill(fl->proc.pid, SIGKILL);
}

/* Tell the loop a command started (its started_cb comes from the drain). */
static void
exec_post_started(struct exec_flight *fl)
{
	struct exec *ex = fl->ex;

	uv_mutex_lock(&ex->lock);
	exec_started_add(ex, fl);
	uv_mutex_unlock(&ex->lock);
	wake_send(&ex->wake);
}

/* The command's process handle is closed: the run is over. */
static void
exec_proc_close_cb(uv_handle_t *handle)
{
	exec_finish(handle->data);
}

/* The command exited (or was killed): record how. */
static void
exec_proc_exit_cb(uv_process_t *proc, int64_t status, int sig)
{
	struct exec_flight *fl = proc->data;
	struct exec_run *run = fl->run;

	fl->exited = true;
	uv_timer_stop(&fl->timer);
	if (sig != 0)
		exec_fail(run, "command killed by signal %d (log: %s)", sig,
		    fl->log_path);
	else if (status != 0)
		exec_fail(run, "command exited with status %lld (log: %s)",
		    (long long)status, fl->log_path);
	exec_result_stop(fl);
	uv_close((uv_handle_t *)proc, exec_proc_close_cb);
}

/* Length of `s` with its placeholders substituted, written to out if set. */
static size_t
exec_subst_into(const char *s, const struct exec_part *p, char *out)
{
	static const char *const names[] = {
		"{partition}", "{partition_start}", "{partition_end}",
		"{partition_start_utc}", "{partition_end_utc}"
	};
	const char *values[5] = { p->key, p->start, p->end, p->start_utc,
				  p->end_utc };
	size_t n = 0, len, vlen;
	int k;

	while (*s != '\0') {
		for (k = 0; k < 5; k++) {
			len = strlen(names[k]);
			if (strncmp(s, names[k], len) == 0)
				break;
		}
		if (k < 5) {
			vlen = strlen(values[k]);
			if (out != NULL)
				memcpy(out + n, values[k], vlen);
			n += vlen;
			s += len;
		} else {
			if (out != NULL)
				out[n] = *s;
			n++;
			s++;
		}
	}
	if (out != NULL)
		out[n] = '\0';
	return n;
}

/* A copy of `s` with {partition}, {partition_start}, {partition_end},
 * {partition_start_utc}, {partition_end_utc}. */
static char *
exec_subst(const char *s, const struct exec_part *p)
{
	char *out;

	out = xcalloc(exec_subst_into(s, p, NULL) + 1, 1);
	exec_subst_into(s, p, out);
	return out;
}

/* True for an environment entry a run sets itself. */
static bool
exec_env_ours(const char *e)
{
	static const char *const ours[] = {
		"BACKFILLD_JOB=", "BACKFILLD_PARTITION=",
		"BACKFILLD_PARTITION_START=", "BACKFILLD_PARTITION_END=",
		"BACKFILLD_PARTITION_START_UTC=", "BACKFILLD_PARTITION_END_UTC=",
		"BACKFILLD_ATTEMPT=", "BACKFILLD_INSTANCE="
	};
	size_t i;

	for (i = 0; i < sizeof ours / sizeof ours[0]; i++)
		if (strncmp(e, ours[i], strlen(ours[i])) == 0)
			return true;
	return false;
}

/* Whether errno e means "no resources now" (a run that could not start
 * for it is queued again, not failed). */
static bool
exec_resource_errno(int e)
{
	return e == EMFILE || e == ENFILE || e == EAGAIN || e == ENOMEM;
}

int
exec_log_path(char *out, size_t size, const char *log_dir, const char *job,
	      const char *key, int64_t run_id)
{
	int n = snprintf(out, size, "%s/%s/%s.run-%" PRId64 ".log", log_dir,
			 job, key, run_id);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Open (creating LOG_DIR/JOB) the run's log file for appending. */
static int
exec_cmd_log(struct exec_flight *fl, int *fd, struct err *err)
{
	struct exec_run *run = fl->run;
	const char *name = run->job->name;
	char dir[PATH_MAX];
	int n;

	if (run->log_dir == NULL) {
		snprintf(fl->log_path, sizeof fl->log_path, "/dev/null");
	} else {
		if (strchr(name, '/') != NULL || strcmp(name, "..") == 0 ||
		    strchr(run->parts[0].key, '/') != NULL)
			return err_set(err, EXIT_WORK_FAILED, "job name %s "
			    "cannot name a log file", name);
		if (mkdir(run->log_dir, 0750) == -1 && errno != EEXIST)
			return err_set(err, EXIT_WORK_FAILED, "cannot create "
			    "%s: %s", run->log_dir, strerror(errno));
		n = snprintf(dir, sizeof dir, "%s/%s", run->log_dir, name);
		if (n < 0 || (size_t)n >= sizeof dir)
			return err_set(err, EXIT_WORK_FAILED, "log path too "
			    "long under %s", run->log_dir);
		if (mkdir(dir, 0750) == -1 && errno != EEXIST)
			return err_set(err, EXIT_WORK_FAILED, "cannot create "
			    "%s: %s", dir, strerror(errno));
		if (exec_log_path(fl->log_path, sizeof fl->log_path,
		    run->log_dir, name, run->parts[0].key, run->run_id) < 0)
			return err_set(err, EXIT_WORK_FAILED, "log path too "
			    "long under %s", dir);
	}
	/* O_NOFOLLOW: a symbolic link planted at the log's path must not
	 * make the daemon append to whatever it points at */
	*fd = open(fl->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
	    O_NOCTTY | O_NOFOLLOW, 0640);
	if (*fd == -1) {
		run->not_started = exec_resource_errno(errno);
		return err_set(err, EXIT_WORK_FAILED, "cannot open %s: %s",
		    fl->log_path, strerror(errno));
	}
	return 0;
}

/* The run's environment (free the array, and extra[0..EXEC_ENV_N - 1]):
 * the daemon's, less any BACKFILLD_* a run sets itself, then the run's
 * own eight. */
#define EXEC_ENV_N 8
static char **
exec_cmd_env(const struct exec_run *run, char *extra[EXEC_ENV_N])
{
	const struct job_def *jd = run->job;
	const struct exec_part *part = &run->parts[0];
	char **envp;
	size_t i, n, k;

	extra[0] = xasprintf("BACKFILLD_JOB=%s", jd->name);
	extra[1] = xasprintf("BACKFILLD_PARTITION=%s", part->key);
	extra[2] = xasprintf("BACKFILLD_PARTITION_START=%s", part->start);
	extra[3] = xasprintf("BACKFILLD_PARTITION_END=%s", part->end);
	extra[4] = xasprintf("BACKFILLD_ATTEMPT=%d", run->attempt);
	/* what finds this group again after a crash (proc.h) */
	extra[5] = xasprintf("BACKFILLD_INSTANCE=%s", run->log_dir ?
			     run->log_dir : "");
	extra[6] = xasprintf("BACKFILLD_PARTITION_START_UTC=%s",
			     part->start_utc);
	extra[7] = xasprintf("BACKFILLD_PARTITION_END_UTC=%s", part->end_utc);
	for (n = 0; environ != NULL && environ[n] != NULL; n++)
		;
	envp = xcalloc(n + EXEC_ENV_N + 1, sizeof *envp);
	for (i = 0, k = 0; i < n; i++)
		if (!exec_env_ours(environ[i]))
			envp[k++] = environ[i];
	for (i = 0; i < EXEC_ENV_N; i++)
		envp[k++] = extra[i];
	return envp;
}

/* Spawn a command run in its own session. */
void
exec_cmd_start(struct exec_flight *fl)
{
	struct exec *ex = fl->ex;
	struct exec_run *run = fl->run;
	const struct job_def *jd = run->job;
	const struct exec_part *part = &run->parts[0];
	uv_process_options_t opt;
	uv_stdio_container_t stdio[3];
	char **argv, **envp, *extra[EXEC_ENV_N];
	int logfd = -1, nullfd, r;
	size_t i;
	struct err err;

	if (exec_cmd_log(fl, &logfd, &err) == -1) {
		exec_fail(run, "%s", err.msg);
		exec_finish(fl);
		return;
	}
	nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nullfd == -1) {
		run->not_started = exec_resource_errno(errno);
		exec_fail(run, "cannot open /dev/null: %s", strerror(errno));
		close(logfd);
		exec_finish(fl);
		return;
	}

	argv = xcalloc(jd->command_len + 1, sizeof *argv);
	for (i = 0; i < jd->command_len; i++)
		argv[i] = exec_subst(jd->command[i], part);
	envp = exec_cmd_env(run, extra);

	memset(&opt, 0, sizeof opt);
	opt.file = argv[0];
	opt.args = argv;
	opt.env = envp;
	opt.flags = UV_PROCESS_DETACHED;
	opt.exit_cb = exec_proc_exit_cb;
	stdio[0].flags = UV_INHERIT_FD;
	stdio[0].data.fd = nullfd;
	stdio[1].flags = UV_INHERIT_FD;
	stdio[1].data.fd = logfd;
	stdio[2].flags = UV_INHERIT_FD;
	stdio[2].data.fd = logfd;
	opt.stdio = stdio;
	opt.stdio_count = 3;
	fl->proc.data = fl;
	proc_cloexec_all(-1);
	r = uv_spawn(ex->loop, &fl->proc, &opt);

	close(nullfd);
	close(logfd);
	for (i = 0; i < jd->command_len; i++)
		free(argv[i]);
	free(argv);
	for (i = 0; i < EXEC_ENV_N; i++)
		free(extra[i]);
	free(envp);

	if (r != 0) {
		/* A handle that failed to spawn must still be closed. */
		run->not_started = exec_resource_errno(-r);
		exec_fail(run, "cannot run %s: %s", jd->command[0],
		    strerror(-r));
		uv_close((uv_handle_t *)&fl->proc, exec_proc_close_cb);
		return;
	}
	fl->spawned = true;
	run->pgid = fl->proc.pid;
	if (proc_start_time(fl->proc.pid, &run->proc_start) < 0)
		run->proc_start = -1;
	exec_arm_timeout(fl);
	exec_post_started(fl);
}
