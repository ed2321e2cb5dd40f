/*
 * main.c - backfilld: start-up order, signals, reload and teardown.
 *
 * Start-up: configuration (validated whole), logging, the state store,
 * the worker pool, the scheduler (which recovers runs a crash left
 * running), the control socket; then READY=1.  SIGHUP (or `backfillctl
 * reload`) loads and validates the file again and swaps it in only when
 * valid.  SIGTERM/SIGINT stop dispatching, wait up to shutdown_grace for
 * runs in flight, cancel the rest (queued again at next start), close
 * every handle and exit 0.  A second SIGTERM cancels at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "clock.h"
#include "config.h"
#include "config_diff.h"
#include "control.h"
#include "exec.h"
#include "chsql.h"
#include "buf.h"
#include "hooks.h"
#include "httpd.h"
#include "metrics.h"
#include "keycheck.h"
#include "log.h"
#include "notify.h"
#include "proc.h"
#include "prune.h"
#include "scheduler.h"
#include "startup.h"
#include "cluster_worker.h"
#include "store.h"
#include "text.h"
#include "throttle.h"
#include "xalloc.h"

struct daemon {
	uv_loop_t loop;
	char *config_path;       /* ours: outlives every configuration */
	struct config *cfg;      /* the scheduler owns the live reference */
	struct store *store;
	struct startup_cals cals; /* jobs.calendar as the last check read */
	struct exec *exec;
	struct sched *sched;
	struct throttle *throttle; /* the warehouses' throttles */
	struct hooks *hooks;
	struct metrics *metrics;
	struct httpd *http; /* http_listen (docs/http.md) */
	struct control *control;
	struct notify *notify;
	struct prune *prune;
	struct cworker *cw;      /* several hosts: NULL on one host */
	uv_signal_t sighup, sigterm, sigint;
	uv_timer_t grace;
	uv_timer_t status_timer;
	uv_prepare_t flush;      /* commit each loop turn's state changes */
	uv_fs_event_t clock_watch;
	bool clock_watching;
	bool stopping;
	bool cancelled;
	int lock_fd;             /* STATE_DB.lock, flocked while we run */
	uv_timer_t store_timer;  /* a failed store: try it again (SCHED-7) */
	uint64_t store_retry_ms;
	bool store_waiting_logged;
	bool deposed;            /* several hosts: restarting in place once
				  * the store can be written */
	bool deposed_db_ok;      /* ... or failed: the cluster reached the
				  * store at the last change */
	uint64_t restart_by;     /* a restart in place waiting for forwarded
				  * requests' answers: uv_now it waits until */
	char **argv;             /* to restart in place */
	int cli_log_level;       /* -1 when not given */
	char last_reload[ERR_MSG_MAX + 64];
	struct daemon_reload *reload; /* a reload being checked, or NULL */
	bool reload_again;       /* SIGHUP meanwhile: reload once it ends */
};

static const char usage[] =
	"usage: backfilld --config FILE [--log-level LEVEL]\n"
	"       backfilld --check-config --config FILE\n"
	"       backfilld --version | --help\n"
	"\n"
	"Runs the backfilld scheduler in the foreground (systemd: Type=notify).\n"
	"  -c, --config FILE     configuration (default " CONFIG_DEFAULT_PATH ")\n"
	"  -n, --check-config    validate the configuration and exit 0 or 2\n"
	"  -l, --log-level LVL   err, warning, notice, info or debug\n"
	"  -V, --version         print the version\n"
	"  -h, --help            print this help\n"
	"Signals: SIGHUP reloads the configuration; SIGTERM/SIGINT drain and stop.\n";

/*
 * An error before logging is set up (command line, configuration): one
 * plain line "backfilld: ..." on stderr, with the "<3>" priority prefix
 * when stderr is the journal, so that journald files it as an error.
 */
static void __attribute__((format(printf, 1, 2)))
early_error(const char *fmt, ...)
{
	const char *js = getenv("JOURNAL_STREAM");
	va_list ap;

	fprintf(stderr, "%sbackfilld: ", js != NULL && *js != '\0' ? "<3>" : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Refresh systemd's STATUS= line. */
static void
daemon_status(struct daemon *d)
{
	char line[ERR_MSG_MAX + 256];
	const char *why;

	struct cluster_state st = {.db_ok = true};

	if (d->cw != NULL)
		cworker_driver()->state(cworker_cluster(d->cw), &st);
	if (sched_store_failed(d->sched, &why, NULL))
		snprintf(line, sizeof line, "state store cannot be written, no"
			 " new runs: %.900s", why);
	else if (!st.db_ok)
		snprintf(line, sizeof line, "state store lost, no new runs:"
			 " %.900s", st.db_error);
	else
		snprintf(line, sizeof line, "%d running, %" PRId64 " queued, %"
			 PRId64 " failed; %s", sched_running(d->sched),
			 sched_queued(d->sched), sched_failed_total(d->sched),
			 d->last_reload);
	notify_status(d->notify, line);
}

/*
 * A store that cannot be written (store.h, the failure policy: a write or
 * a commit of a loop turn failed; scheduler.c, SCHED-7).  The daemon stays
 * up, says so in STATUS=, and tries the store again every 10 s, backing
 * off to a minute.  Once a real commit succeeds with STORE_MIN_FREE bytes
 * free on its filesystem and no run is in flight, it restarts in place
 * (execv of itself, same pid: systemd sees no failure and no restart
 * loop), and the new image resumes from the store's last commit as after
 * a crash: the runs that finished unrecorded run again (idempotent).
 */
#define STORE_MIN_FREE (16 * 1024 * 1024)
#define STORE_RETRY_FIRST_MS 10000
#define STORE_RETRY_MAX_MS 60000

/* Restart in place: the same program, arguments and pid. */
static void
daemon_reexec(struct daemon *d)
{
	log_notice("the state store can be written again: restarting in place"
		   " to resume from what it holds");
	notify_status(d->notify, "restarting in place after a state store"
		      " failure");
	/* the new image listens on the same socket: no client is refused
	 * meanwhile, and nothing else can take the path */
	control_keep_for_exec(d->control);
	fflush(stderr);
	execv("/proc/self/exe", d->argv);
	log_err("cannot restart in place: %s; exiting so that the service"
		" manager starts backfilld again", strerror(errno));
	exit(EXIT_WORK_FAILED);
}

static void daemon_deposed_reexec(struct daemon *d);

/*
 * Restart in place, once the clients waiting for the planner's answer to
 * a request this node forwarded have it (control_forwarding), for at
 * most RESTART_FORWARD_WAIT_MS: the planner may have queued a backfill
 * already, and a client whose connection the exec cuts is told it failed
 * (exit 3) and may send it again.  Meanwhile the node starts nothing.
 */
#define RESTART_FORWARD_WAIT_MS 10000

static void daemon_restart(struct daemon *d);

static void
daemon_restart_cb(uv_timer_t *t)
{
	daemon_restart(t->data);
}

static void
daemon_restart(struct daemon *d)
{
	uint64_t now = uv_now(&d->loop);
	int n = control_forwarding(d->control);

	if (d->stopping)
		return;
	if (n > 0 && (d->restart_by == 0 || now < d->restart_by)) {
		if (d->restart_by == 0) {
			d->restart_by = now + RESTART_FORWARD_WAIT_MS;
			log_notice("restarting in place once the planner has"
				   " answered the %d requests this node"
				   " forwarded (at most %d s)", n,
				   RESTART_FORWARD_WAIT_MS / 1000);
			sched_suspend(d->sched, "restarting in place");
			if (d->cw != NULL)
				cworker_resign(d->cw);
		}
		uv_timer_start(&d->store_timer, daemon_restart_cb, 100, 0);
		return;
	}
	if (d->deposed)
		daemon_deposed_reexec(d);
	else
		daemon_reexec(d);
}

/* Try the failed store again. */
static void
daemon_store_retry_cb(uv_timer_t *t)
{
	struct daemon *d = t->data;
	struct err err;

	if (d->stopping)
		return;
	if (store_probe_write(d->store, STORE_MIN_FREE, &err) < 0) {
		log_info("state store still cannot be written: %s; trying again"
			 " in %" PRIu64 " s", err.msg, (d->store_retry_ms * 2 >
			 STORE_RETRY_MAX_MS ? STORE_RETRY_MAX_MS :
			 d->store_retry_ms * 2) / 1000);
		d->store_retry_ms = d->store_retry_ms * 2 > STORE_RETRY_MAX_MS ?
			STORE_RETRY_MAX_MS : d->store_retry_ms * 2;
		uv_timer_start(t, daemon_store_retry_cb, d->store_retry_ms, 0);
		return;
	}
	if (d->deposed) {
		daemon_restart(d);
		return;
	}
	if (sched_running(d->sched) > 0) {
		if (!d->store_waiting_logged)
			log_notice("the state store can be written again; waiting"
				   " for %d runs in flight before restarting",
				   sched_running(d->sched));
		d->store_waiting_logged = true;
		uv_timer_start(t, daemon_store_retry_cb, 1000, 0);
		return;
	}
	daemon_restart(d);
}

/* A turn could not be written: say so and start trying again. */
static void
daemon_store_failed_cb(void *data)
{
	struct daemon *d = data;

	const char *test_ms = getenv("BACKFILLD_TEST_STORE_RETRY_MS");

	daemon_status(d);
	if (uv_is_active((uv_handle_t *)&d->store_timer))
		return; /* tried again already (deposed meanwhile) */
	d->store_retry_ms = STORE_RETRY_FIRST_MS;
	if (test_ms != NULL && atoi(test_ms) > 0) /* tests only */
		d->store_retry_ms = (uint64_t)atoi(test_ms);
	uv_timer_start(&d->store_timer, daemon_store_retry_cb,
		       d->store_retry_ms, 0);
}

/* Throttled STATUS refresh. */
static void
daemon_status_timer_cb(uv_timer_t *t)
{
	daemon_status(t->data);
}

static void daemon_store_retry_cb(uv_timer_t *t);

/* The scheduler, the role or the database changed: refresh STATUS
 * within half a second; a node waiting for its store (deposed, or a
 * commit failed) tries it at once when the cluster reaches the database
 * again. */
static void
daemon_changed_cb(void *data)
{
	struct daemon *d = data;
	struct cluster_state st = {.db_ok = false};

	if ((d->deposed || (d->sched != NULL &&
			    sched_store_failed(d->sched, NULL, NULL))) &&
	    d->cw != NULL && !d->stopping) {
		cworker_driver()->state(cworker_cluster(d->cw), &st);
		if (st.db_ok && !d->deposed_db_ok)
			uv_timer_start(&d->store_timer, daemon_store_retry_cb,
				       0, 0);
		d->deposed_db_ok = st.db_ok;
	}
	/* several hosts: only the planner prunes (prune.c), from when it
	 * becomes one; at most once an hour as ever */
	if (d->cw != NULL && !d->stopping)
		prune_tick(d->prune);

	if (!uv_is_active((uv_handle_t *)&d->status_timer) && !d->stopping)
		uv_timer_start(&d->status_timer, daemon_status_timer_cb, 500, 0);
}

/* Before the loop waits for I/O: commit what this turn changed. */
static void
daemon_flush_cb(uv_prepare_t *h)
{
	struct daemon *d = h->data;

	if (d->sched)
		sched_flush(d->sched);
}

/* Apply the log level: command line first, then the configuration. */
static void
daemon_log_level(struct daemon *d, const struct config *cfg)
{
	int level = LOG_LEVEL_INFO;

	if (d->cli_log_level >= 0)
		level = d->cli_log_level;
	else if (cfg->log_level)
		log_parse_level(cfg->log_level, &level);
	log_set_level(level);
}

static void daemon_reload(void *data, bool dry_run, cmd_reload_done_fn *done,
			  void *arg);
static cmd_reload_done_fn daemon_sighup_done;

/* A reload moves the endpoint to the file's http_listen before anything
 * else changes: an address that cannot be bound refuses the whole reload
 * (exit 2), the endpoint left where it was. */
static int
daemon_reload_http(struct daemon *d, const struct config *cfg,
		   struct err *err)
{
	struct err e;

	if (httpd_configure(d->http, cfg, &e) == 0)
		return 0;
	/* the old listener may have been closed to free its port: back */
	if (httpd_configure(d->http, sched_config(d->sched), err) < 0)
		log_err("http: %s; the endpoint is off", err->msg);
	return err_set(err, EXIT_BAD_INPUT, "%s: %s; nothing was reloaded and"
		       " the endpoint stays %s%s", cfg->path, e.msg,
		       sched_config(d->sched)->http_listen ? "on " : "off",
		       sched_config(d->sched)->http_listen ?
		       sched_config(d->sched)->http_listen : "");
}

/* A reload whose configuration is loaded and being checked off the loop
 * (keycheck.h): d->reload while it is. */
struct daemon_reload {
	struct daemon *d;
	struct config *cfg;
	bool dry_run;
	cmd_reload_done_fn *done;
	void *arg;
	char when[CAL_KEY_MAX];
};

/* A reload refused: the running configuration kept, said once. */
static void
daemon_reload_refused(struct daemon *d, bool dry_run, const char *when,
		      const struct err *err)
{
	if (dry_run)
		return;
	log_err("reload refused, keeping the running configuration: %s",
		err->msg);
	snprintf(d->last_reload, sizeof d->last_reload,
		 "reload failed at %s: %s", when, err->msg);
	notify_ready(d->notify, NULL);
	daemon_status(d);
}

/* Per removed job of diff, its queued partitions (diff->removed_queued);
 * returns their sum. */
static int64_t
daemon_reload_queued(struct daemon *d, struct config_diff *diff)
{
	int64_t total = 0;

	diff->removed_queued = xcalloc(diff->jobs.nremoved + 1,
				       sizeof *diff->removed_queued);
	for (size_t i = 0; i < diff->jobs.nremoved; i++) {
		diff->removed_queued[i] = sched_pending_of(d->sched,
							   diff->jobs.removed[i]);
		total += diff->removed_queued[i];
	}
	return total;
}

/*
 * The rest of a reload once cfg passed the checks that reach a warehouse:
 * compare, and apply unless dry_run; takes cfg's reference.  Refused whole
 * (nothing changed, exit 2): a file that defines no job while the running
 * jobs have queued partitions (an include typo or an emptied folder would
 * otherwise cancel all of them), an http_listen that cannot be bound, and
 * a job's calendar changed while it has built partitions (startup.c).
 * A dry run keeps cfg in diff->next: what it proposes is judged by the
 * file's settings.
 */
static int
daemon_reload_apply(struct daemon *d, struct config *cfg, bool dry_run,
		    const char *when, struct config_diff *diff,
		    int64_t *cancelled, struct err *err)
{
	const struct config *old = sched_config(d->sched);
	struct err cerr;
	int64_t queued;

	if (startup_check_warehouses(cfg, err) < 0 ||
	    startup_check_calendars(d->store, cfg, &d->cals, err) < 0) {
		config_unref(cfg);
		return -1;
	}
	config_diff(old, cfg, diff);
	queued = daemon_reload_queued(d, diff);
	if (cfg->njobs == 0 && old->njobs > 0 && queued > 0) {
		err_set(err, EXIT_BAD_INPUT, "%s defines no job: this reload"
			" would remove all %zu jobs and cancel their %" PRId64
			" queued partitions; nothing was reloaded (if that is"
			" meant, cancel their requests first: backfillctl"
			" cancel REQUEST)", cfg->path, old->njobs, queued);
		config_diff_free(diff);
		config_unref(cfg);
		return -1;
	}
	if (dry_run) {
		*cancelled = queued;
		diff->next = cfg;
		return 0;
	}
	for (size_t i = 0; i < diff->nsettings; i++)
		if (config_diff_needs_restart(diff->settings[i]))
			log_warn("%s changed: takes effect at the next restart",
				 diff->settings[i]);
	if (daemon_reload_http(d, cfg, err) < 0) {
		config_diff_free(diff);
		config_unref(cfg);
		return -1;
	}
	if (exec_resize(d->exec, cfg->max_concurrency, err) < 0) {
		struct err e;

		if (httpd_configure(d->http, old, &e) < 0)
			log_err("http: %s", e.msg);
		config_diff_free(diff);
		config_unref(cfg);
		return -1;
	}
	daemon_log_level(d, cfg);
	if (startup_save_calendars(d->store, cfg, &d->cals, &cerr) < 0)
		log_err("cannot record the jobs' calendars: %s", cerr.msg);
	log_notice("configuration reloaded from %s: %zu jobs in %zu files",
		   cfg->path, cfg->njobs, cfg->nfiles);
	*cancelled = sched_reload(d->sched, cfg);
	/* the removed jobs' queued and blocked partitions, as the dry run
	 * and the per-job lines count them (the scheduler's count leaves out
	 * the blocked ones that fall with them) */
	if (*cancelled < queued)
		*cancelled = queued;
	if (d->cw != NULL)
		cworker_reload(d->cw);
	throttle_configure(d->throttle, sched_config(d->sched));
	hooks_bound(d->hooks, sched_config(d->sched)->hook_concurrency,
		    sched_config(d->sched)->hook_queue);
	cmd_reload_log(d->sched, diff, *cancelled);
	snprintf(d->last_reload, sizeof d->last_reload, "reloaded at %s", when);
	notify_ready(d->notify, NULL);
	daemon_status(d);
	return 0;
}

/* The checks that reach a warehouse are done (loop thread). */
static void
daemon_reload_checked(void *arg, int rc, const struct err *cerr)
{
	struct daemon_reload *r = arg;
	struct daemon *d = r->d;
	struct config_diff diff;
	int64_t cancelled = 0;
	struct err err;

	d->reload = NULL;
	memset(&diff, 0, sizeof diff);
	err_clear(&err);
	if (d->stopping) {
		config_unref(r->cfg);
		rc = err_set(&err, EXIT_WORK_FAILED, "the daemon is stopping:"
			     " nothing was reloaded");
	} else if (rc < 0) {
		err = *cerr;
		config_unref(r->cfg);
	} else {
		rc = daemon_reload_apply(d, r->cfg, r->dry_run, r->when, &diff,
					 &cancelled, &err);
	}
	if (rc < 0 && !d->stopping)
		daemon_reload_refused(d, r->dry_run, r->when, &err);
	r->done(r->arg, rc, &diff, cancelled, &err);
	free(r);
	if (d->reload_again && !d->stopping) {
		d->reload_again = false;
		daemon_reload(d, false, daemon_sighup_done, d);
	}
}

/*
 * Reload the configuration: all or nothing (cmd_reload_fn).  The report of
 * what changed (config_diff against the running configuration) is logged
 * and handed back for `backfillctl reload`; a dry run loads, validates and
 * compares, counts what removing jobs would cancel, and changes nothing
 * (no systemd RELOADING=1 either).  The file is read here; the partition
 * keys of ClickHouse targets are checked off the loop (keycheck.h), the
 * rest once that check is done.  One reload at a time: another one asked
 * for meanwhile is refused (SIGHUP: done again after it).
 */
static void
daemon_reload(void *data, bool dry_run, cmd_reload_done_fn *done, void *arg)
{
	struct daemon *d = data;
	struct daemon_reload *r;
	struct config *cfg;
	char when[CAL_KEY_MAX];
	struct err err;

	err_clear(&err);
	if (d->reload != NULL) {
		err_set(&err, EXIT_WORK_FAILED, "a reload is in progress (its"
			" ClickHouse warehouses are being checked): nothing"
			" was changed; try again once it ends");
		done(arg, -1, NULL, 0, &err);
		return;
	}
	cal_format_iso_ms(clock_now_ms(), when);
	if (!dry_run)
		notify_reloading(d->notify);
	if (config_load(d->config_path, &cfg, &err) < 0 ||
	    config_lineage_refuse(&cfg, &err) < 0) {
		daemon_reload_refused(d, dry_run, when, &err);
		done(arg, -1, NULL, 0, &err);
		return;
	}
	r = xcalloc(1, sizeof *r);
	r->d = d;
	r->cfg = cfg;
	r->dry_run = dry_run;
	r->done = done;
	r->arg = arg;
	memcpy(r->when, when, sizeof when);
	d->reload = r;
	keycheck_start(&d->loop, cfg, daemon_reload_checked, r);
}

/* SIGHUP's reload is over: nobody waits for its report. */
static void
daemon_sighup_done(void *arg, int rc, struct config_diff *diff,
		   int64_t cancelled, const struct err *err)
{
	(void)arg; (void)cancelled; (void)err;
	if (rc == 0)
		config_diff_free(diff);
}

static void daemon_exec_closed_cb(void *data);
static void daemon_cluster_closed_cb(void *data);

/* Everything in flight is done: close the executor, then the rest. */
static void
daemon_idle_cb(void *data)
{
	struct daemon *d = data;

	if (!d->stopping)
		return;
	sched_on_idle(d->sched, NULL, NULL);
	if (d->cw != NULL) {
		/* the local runs end, then the cluster closes (it releases
		 * the lease), then the executor */
		cworker_close(d->cw, daemon_cluster_closed_cb, d);
		return;
	}
	uv_timer_stop(&d->grace);
	sched_flush(d->sched); /* the last records, before their stages go */
	exec_close(d->exec, daemon_exec_closed_cb, d);
}

/* Several hosts: the cluster is closed: close the executor. */
static void
daemon_cluster_closed_cb(void *data)
{
	struct daemon *d = data;

	uv_timer_stop(&d->grace);
	sched_flush(d->sched); /* the last records, before their stages go */
	exec_close(d->exec, daemon_exec_closed_cb, d);
}

/* The executor is closed: close every remaining handle. */
static void
daemon_exec_closed_cb(void *data)
{
	struct daemon *d = data;

	metrics_close(d->metrics); /* its last write, at shutdown */
	d->metrics = NULL;
	throttle_close(d->throttle); /* after: the metrics show the throttles */
	sched_close(d->sched);
	sched_set_hooks(d->sched, NULL);
	hooks_close(d->hooks);
	d->hooks = NULL;
	prune_close(d->prune);
	notify_close(d->notify);
	uv_close((uv_handle_t *)&d->sighup, NULL);
	uv_close((uv_handle_t *)&d->sigterm, NULL);
	uv_close((uv_handle_t *)&d->sigint, NULL);
	uv_close((uv_handle_t *)&d->grace, NULL);
	uv_close((uv_handle_t *)&d->status_timer, NULL);
	uv_close((uv_handle_t *)&d->store_timer, NULL);
	sched_flush(d->sched);
	uv_close((uv_handle_t *)&d->flush, NULL);
	if (d->clock_watching)
		uv_close((uv_handle_t *)&d->clock_watch, NULL);
	log_notice("stopped");
}

/* Grace period over: cancel the runs still in flight. */
static void
daemon_grace_cb(uv_timer_t *t)
{
	struct daemon *d = t->data;

	if (d->cancelled)
		return;
	d->cancelled = true;
	log_warn("shutdown grace over: cancelling %d runs in flight; they are"
		 " queued again at the next start", d->cw != NULL ?
		 cworker_running(d->cw) : sched_running(d->sched));
	sched_cancel_running(d->sched);
	if (d->cw != NULL)
		cworker_cancel_all(d->cw);
}

/* Begin the shutdown (first SIGTERM), or cancel at once (second). */
static void
daemon_stop(struct daemon *d)
{
	const struct config *cfg = sched_config(d->sched);
	int taken;

	if (d->stopping) {
		daemon_grace_cb(&d->grace);
		return;
	}
	d->stopping = true;
	notify_stopping(d->notify);
	/* the runs handed ahead that had not started are no runs in flight:
	 * taken back first, they are not counted */
	taken = sched_drain(d->sched);
	log_notice("stopping: no new runs; waiting up to %" PRId64 "s for %d"
		   " runs in flight", cfg->shutdown_grace, d->cw != NULL ?
		   cworker_running(d->cw) : sched_running(d->sched) - taken);
	control_close(d->control);
	httpd_close(d->http);
	/* several hosts: with another node alive, no more claims and a
	 * planner hands the runs it offered over to the next planner
	 * (cworker_stop); alone, its runs are its runs in flight, awaited
	 * for the grace and then stopped, as on a single host */
	if (d->cw != NULL && cworker_others_alive(d->cw))
		cworker_stop(d->cw);
	uv_timer_start(&d->grace, daemon_grace_cb,
		       (uint64_t)cfg->shutdown_grace * 1000, 0);
	sched_on_idle(d->sched, daemon_idle_cb, d);
}

/* SIGHUP, SIGTERM, SIGINT. */
static void
daemon_signal_cb(uv_signal_t *h, int signum)
{
	struct daemon *d = h->data;

	if (signum == SIGHUP) {
		if (d->stopping)
			return;
		if (d->reload != NULL)
			d->reload_again = true; /* once the one in progress ends */
		else
			daemon_reload(d, false, daemon_sighup_done, d);
		return;
	}
	daemon_stop(d);
}

/* The test clock file changed. */
static void
daemon_clock_cb(uv_fs_event_t *h, const char *filename, int events, int status)
{
	struct daemon *d = h->data;
	char *copy = xstrdup(clock_test_file());

	(void)events;
	if (status == 0 && (filename == NULL ||
				    strcmp(filename, basename(copy)) == 0)) {
		clock_reload();
		if (!d->stopping) {
			sched_clock_changed(d->sched);
			prune_tick(d->prune);
		}
	}
	free(copy);
}

/* Close a handle left open (start-up failure path). */
static void
daemon_walk_close_cb(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* A throttle lifted: dispatch again. */
static void
daemon_throttle_poke(void *data)
{
	struct daemon *d = data;

	if (d->sched)
		sched_poke(d->sched);
}

/* A throttle above critical: requeue the warehouse's runs in flight. */
static void
daemon_throttle_requeue(void *data, const char *warehouse)
{
	struct daemon *d = data;

	if (d->sched)
		sched_requeue_warehouse(d->sched, warehouse);
}

/* The executor closed after a failed start: close everything else. */
static void
daemon_abort_closed_cb(void *data)
{
	struct daemon *d = data;

	uv_walk(&d->loop, daemon_walk_close_cb, NULL);
}

/* Restart in place as a deposed planner (the control socket kept). */
static void
daemon_deposed_reexec(struct daemon *d)
{
	log_warn("deposed: this node is no longer the planner; restarting in"
		 " place to resume as a worker from what the state store"
		 " holds");
	notify_status(d->notify, "restarting in place: deposed planner");
	control_keep_for_exec(d->control);
	fflush(stderr);
	execv("/proc/self/exe", d->argv);
	log_err("cannot restart in place: %s; exiting", strerror(errno));
	exit(EXIT_WORK_FAILED);
}

/*
 * Several hosts: this node was the planner and no longer is; what it
 * holds in memory is no longer the truth: restart from the store.  Only
 * once the store can really be written (store_probe_write): a planner
 * deposed because the database went away (its lease ran out unrenewed)
 * or filled up would restart into the same failure.  Until then it stays
 * up with its socket, starts and writes nothing (sched_suspend), answers
 * status from memory, and tries the store again as after a failed
 * commit (daemon_store_retry_cb: 10 s, doubling to a minute).
 */
static void
daemon_deposed_cb(void *data)
{
	struct daemon *d = data;
	char why[ERR_MSG_MAX + 64];
	struct err err;

	if (d->stopping || d->deposed)
		return;
	d->deposed = true;
	if (store_probe_write(d->store, STORE_MIN_FREE, &err) == 0) {
		daemon_restart(d);
		return;
	}
	log_warn("deposed: this node is no longer the planner and the state"
		 " store cannot be written (%s); it starts nothing and restarts"
		 " in place as a worker once the store can be written",
		 err.msg);
	snprintf(why, sizeof why, "deposed while the state store could not"
		 " be written: %s", err.msg);
	sched_suspend(d->sched, why);
	cworker_resign(d->cw);
	daemon_store_failed_cb(d);
}

/* Several hosts: requests forwarded to this planner. */
static void
daemon_mail_cb(void *data)
{
	struct daemon *d = data;

	if (!d->stopping)
		control_mail(d->control);
}

/* Several hosts: join the cluster (the scheduler starts when this node
 * becomes the planner). */
static int
daemon_cluster_open(struct daemon *d, const char *logdir, struct err *err)
{
	struct cworker_opts o = {&d->loop, d->sched, d->store, d->exec,
		logdir, daemon_deposed_cb, daemon_mail_cb, daemon_changed_cb, d};

	sched_end_local_orphans(d->sched);
	if (cworker_open(&o, &d->cw, err) < 0)
		return -1;
	control_set_cluster(d->control, cworker_driver(),
			    cworker_cluster(d->cw));
	return 0;
}

/* The hooks and the throttle, handed to the scheduler. */
static void
daemon_start_hooks(struct daemon *d)
{
	struct throttle_ops ops = { daemon_throttle_poke,
		daemon_throttle_requeue, d };

	d->hooks = hooks_new(&d->loop);
	hooks_bound(d->hooks, sched_config(d->sched)->hook_concurrency,
		    sched_config(d->sched)->hook_queue);
	sched_set_hooks(d->sched, d->hooks);
	sched_on_change(d->sched, daemon_changed_cb, d);
	d->throttle = throttle_new(&d->loop, d->hooks, &ops);
	sched_set_throttle(d->sched, d->throttle);
	throttle_configure(d->throttle, sched_config(d->sched));
}

/* SIGHUP reloads, SIGTERM and SIGINT stop: loop events. */
static void
daemon_start_signals(struct daemon *d)
{
	uv_signal_init(&d->loop, &d->sighup);
	uv_signal_init(&d->loop, &d->sigterm);
	uv_signal_init(&d->loop, &d->sigint);
	d->sighup.data = d->sigterm.data = d->sigint.data = d;
	uv_signal_start(&d->sighup, daemon_signal_cb, SIGHUP);
	uv_signal_start(&d->sigterm, daemon_signal_cb, SIGTERM);
	uv_signal_start(&d->sigint, daemon_signal_cb, SIGINT);
}

/* The test clock: watch its file's folder, so that a change of the
 * clock is a loop event. */
static void
daemon_watch_test_clock(struct daemon *d)
{
	char *copy;

	if (!clock_is_test())
		return;
	copy = xstrdup(clock_test_file());
	uv_fs_event_init(&d->loop, &d->clock_watch);
	d->clock_watch.data = d;
	if (uv_fs_event_start(&d->clock_watch, daemon_clock_cb,
				      dirname(copy), 0) == 0) {
		d->clock_watching = true;
		uv_unref((uv_handle_t *)&d->clock_watch);
	} else {
		uv_close((uv_handle_t *)&d->clock_watch, NULL);
	}
	free(copy);
	log_warn("using the test clock in %s: %s", clock_test_file(),
		 "not for production");
}

/* Pruning, the metrics and the HTTP endpoint; -1 with err filled when
 * the endpoint cannot be configured. */
static int
daemon_start_http(struct daemon *d, struct err *err)
{
	d->prune = prune_new(&d->loop, d->sched);
	d->metrics = metrics_new(&d->loop, d->sched, d->hooks);
	sched_on_run(d->sched, metrics_run_cb, d->metrics);
	d->http = httpd_new(&d->loop, d->sched, d->metrics,
			    d->cw != NULL ? cworker_driver() : NULL,
			    d->cw != NULL ? cworker_cluster(d->cw) : NULL);
	if (httpd_configure(d->http, sched_config(d->sched), err) < 0 ||
	    metrics_lineage_open(d->metrics, err) < 0) {
		metrics_close(d->metrics); /* freed by their close callbacks */
		d->metrics = NULL;
		prune_close(d->prune);
		d->prune = NULL;
		return -1;
	}
	return 0;
}

/* Start everything; returns an exit code when start-up fails, else -1. */
static int
daemon_start(struct daemon *d, struct err *err)
{
	struct config *cfg = d->cfg;
	char dir[PATH_MAX], logdir[PATH_MAX + 8];
	struct err cerr;
	bool cluster = config_is_cluster(cfg);

	/* several hosts (docs/several-hosts.md): no state_db file to lock,
	 * the command log folder instead; the command logs go next to the
	 * configuration */
	snprintf(dir, sizeof dir, "%s", cluster ? cfg->path : cfg->state_db);
	snprintf(logdir, sizeof logdir, "%.4000s/logs", dirname(dir));
	if (startup_check_host(cfg, err) < 0 ||
	    startup_check_warehouses(cfg, err) < 0 ||
	    startup_lock_store(cluster ? logdir : cfg->state_db, cluster,
			       &d->lock_fd, err) < 0)
		return EXIT_BAD_INPUT;
	startup_raise_nofile();
	if (startup_mkdir_p(logdir, 0750) < 0)
		log_warn("cannot create the command log folder %s: %s", logdir,
			 strerror(errno));
	if (store_open_config(cfg, &d->store, err) < 0 ||
	    startup_check_calendars(d->store, cfg, &d->cals, err) < 0)
		return EXIT_BAD_INPUT;
	if (startup_save_calendars(d->store, cfg, &d->cals, &cerr) < 0)
		log_warn("cannot record the jobs' calendars: %s", cerr.msg);
	store_checkpoint_on(d->store, &d->loop);
	if (exec_new(&d->loop, cfg->max_concurrency, &d->exec, err) < 0)
		return EXIT_WORK_FAILED;
	d->cfg = NULL; /* the scheduler holds it now */
	d->sched = sched_new(&d->loop, d->store, d->exec, cfg, logdir);
	daemon_start_hooks(d);
	sched_on_store_failure(d->sched, daemon_store_failed_cb, d);
	if (control_new(&d->loop, d->sched, cfg->socket, cfg->socket_group,
			daemon_reload, d, &d->control, err) < 0)
		return EXIT_BAD_INPUT;
	daemon_start_signals(d);
	daemon_watch_test_clock(d);
	if (cluster ? daemon_cluster_open(d, logdir, err) < 0 :
	    sched_start_adopt(d->sched, NULL, 0, NULL, err) < 0)
		return EXIT_WORK_FAILED;
	if (daemon_start_http(d, err) < 0)
		return EXIT_BAD_INPUT;
	log_notice("backfilld %s started: %zu jobs, socket %s, state %s",
		   BACKFILLD_VERSION, cfg->njobs, cfg->socket,
		   cluster ? "on PostgreSQL, shared by several hosts" :
		   cfg->state_db);
	snprintf(d->last_reload, sizeof d->last_reload, "configuration loaded");
	notify_ready(d->notify, NULL);
	daemon_status(d);
	return -1;
}

/* The command line into d, *config_path and *check; returns an exit code
 * when the program ends here (--version, --help, a bad option), else -1. */
static int
daemon_options(int argc, char **argv, struct daemon *d,
	       const char **config_path, bool *check)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'n' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:nl:Vh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			*config_path = optarg;
			break;
		case 'n':
			*check = true;
			break;
		case 'l':
			if (log_parse_level(optarg, &d->cli_log_level) < 0) {
				early_error("unknown log level \"%s\":"
					    " use err, warning, notice, info or debug",
					    optarg);
				return EXIT_BAD_INPUT;
			}
			break;
		case 'V':
			printf("backfilld %s\n", BACKFILLD_VERSION);
			return EXIT_DONE;
		case 'h':
			fputs(usage, stdout);
			return EXIT_DONE;
		case ':':
			early_error("%s needs a value; see backfilld --help",
				    argv[optind - 1]);
			return EXIT_BAD_INPUT;
		default:
			early_error("unknown option %s; see backfilld --help",
				    argv[optind - 1]);
			return EXIT_BAD_INPUT;
		}
	}
	if (optind < argc) {
		early_error("unexpected argument \"%s\"; see backfilld"
			    " --help", argv[optind]);
		return EXIT_BAD_INPUT;
	}
	return -1;
}

/* Load the configuration into d->cfg and check it (all of it with
 * --check-config, which ends here); returns an exit code when the program
 * ends here, else -1. */
static int
daemon_load_config(struct daemon *d, const char *config_path, bool check)
{
	struct exec_keycheck kc = { 0 };
	struct err err;

	if (config_load(config_path, &d->cfg, &err) < 0 ||
	    (check && config_lineage_refuse(&d->cfg, &err) < 0)) {
		early_error("%s", err.msg);
		return EXIT_BAD_INPUT;
	}
	/* a start runs with an undeclared read, so that an upgrade never
	 * stops a host (docs/configuration.md, "Lineage from the SQL") */
	if (d->cfg->lineage_error != NULL)
		log_warn("%s; --check-config and reload refuse this"
			 " configuration until it is fixed",
			 d->cfg->lineage_error);
	if (check && (startup_check_host(d->cfg, &err) < 0 ||
	    startup_check_warehouses(d->cfg, &err) < 0 ||
	    exec_check_partition_keys_report(d->cfg, &kc, &err) < 0)) {
		early_error("%s", err.msg);
		exec_keycheck_free(&kc, d->cfg->njobs);
		config_unref(d->cfg);
		return EXIT_BAD_INPUT;
	}
	if (!check && exec_check_partition_keys(d->cfg, &err) < 0) {
		early_error("%s", err.msg);
		config_unref(d->cfg);
		return EXIT_BAD_INPUT;
	}
	if (check) {
		/* the partition keys need the server: checked when reached,
		 * else said plainly (docs/clickhouse.md, "The partition key") */
		printf("%s: configuration OK: %zu job%s, %zu warehouse%s",
		       d->cfg->path, d->cfg->njobs,
		       d->cfg->njobs == 1 ? "" : "s", d->cfg->nwarehouses,
		       d->cfg->nwarehouses == 1 ? "" : "s");
		if (kc.unchecked != NULL)
			printf(" (ClickHouse partition keys not checked: %s;"
			       " they are checked at start)", kc.unchecked);
		else if (kc.nchecked > 0)
			printf(" (ClickHouse partition keys checked on the"
			       " server: %zu job%s)", kc.nchecked,
			       kc.nchecked == 1 ? "" : "s");
		printf("\n");
		startup_check_bound(d->cfg, kc.locals);
		exec_keycheck_free(&kc, d->cfg->njobs);
		config_unref(d->cfg);
		return EXIT_DONE;
	}
	return -1;
}

/* The process settings, the loop and its own handles (timers, the flush
 * before each poll); returns an exit code when that fails, else -1. */
static int
daemon_init_loop(struct daemon *d, char **argv)
{
	daemon_log_level(d, d->cfg);
	signal(SIGPIPE, SIG_IGN);
	/* SQLite's sorters ask for large blocks on every run; glibc would
	 * mmap each one and give it back after the run, so the next run
	 * page-faults it in again (measured: 5x the floor's page faults on a
	 * 90-day backfill).  Keep such blocks in the heap and keep the heap. */
	mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
	/* A copy: the first configuration (and its path) is freed once a
	 * reload replaces it and its last run finishes. */
	d->config_path = xstrdup(d->cfg->path);
	uv_loop_init(&d->loop);
	d->notify = notify_new(&d->loop);
	uv_timer_init(&d->loop, &d->grace);
	d->grace.data = d;
	uv_timer_init(&d->loop, &d->status_timer);
	d->status_timer.data = d;
	uv_timer_init(&d->loop, &d->store_timer);
	d->store_timer.data = d;
	d->argv = argv;
	uv_prepare_init(&d->loop, &d->flush);
	d->flush.data = d;
	uv_prepare_start(&d->flush, daemon_flush_cb);
	uv_unref((uv_handle_t *)&d->flush);
	return -1;
}

/* Start-up failed: close what was opened (the loop then runs their close
 * callbacks). */
static void
daemon_abort_start(struct daemon *d)
{
	d->stopping = true;
	if (d->sched)
		sched_set_hooks(d->sched, NULL);
	hooks_close(d->hooks); /* none ran: freed at once */
	d->hooks = NULL;
	if (d->control)
		control_close(d->control);
	httpd_close(d->http);
	throttle_close(d->throttle);
	if (d->exec)
		exec_close(d->exec, daemon_abort_closed_cb, d);
	else
		uv_walk(&d->loop, daemon_walk_close_cb, NULL);
}

/* After the loop: free what the close callbacks left, the lock last. */
static void
daemon_free(struct daemon *d)
{
	control_free(d->control);
	httpd_free(d->http);
	throttle_free(d->throttle);
	if (d->sched)
		sched_free(d->sched);
	else if (d->cfg)
		config_unref(d->cfg);
	if (d->cw != NULL)
		cworker_free(d->cw);
	exec_free(d->exec);
	store_close(d->store);
	startup_cals_free(&d->cals);
	notify_free(d->notify);
	free(d->config_path);
	if (d->lock_fd >= 0)
		close(d->lock_fd); /* last: the store is closed */
}

int
main(int argc, char **argv)
{
	struct daemon d;
	const char *config_path = CONFIG_DEFAULT_PATH;
	bool check = false;
	struct err err;
	int rc;

	/* no descriptor this process was given, or a thread of the image
	 * before a restart in place left open, reaches a child */
	if (getenv("BACKFILLD_CONTROL_FD") != NULL)
		proc_close_strays(atoi(getenv("BACKFILLD_CONTROL_FD")));
	else
		proc_cloexec_all(-1);
	memset(&d, 0, sizeof d);
	d.cli_log_level = -1;
	d.lock_fd = -1;
	log_init("backfilld");
	if ((rc = daemon_options(argc, argv, &d, &config_path, &check)) >= 0 ||
	    (rc = daemon_load_config(&d, config_path, check)) >= 0 ||
	    (rc = daemon_init_loop(&d, argv)) >= 0)
		return rc;
	rc = daemon_start(&d, &err);
	if (rc >= 0) {
		/* start-up failed: close what was opened, then exit */
		log_err("cannot start: %s", err.msg);
		daemon_abort_start(&d);
	} else {
		rc = EXIT_DONE;
	}
	uv_run(&d.loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&d.loop) != 0 && rc == EXIT_DONE)
		log_warn("some libuv handles were still open at exit");
	daemon_free(&d);
	return rc;
}
