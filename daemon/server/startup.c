/*
 * startup.c - what the daemon checks and takes before its loop runs: the
 * state store's lock (one daemon per store, or per command log folder on
 * several hosts), the host (state_db not a symbolic link, socket_group),
 * bounds worth a warning, the warehouses' drivers, the descriptor limit,
 * the log folder, and each job's calendar against the one its built
 * partitions are keyed in.  Each returns 0 or -1 with err (main.c turns it
 * into the exit code), or only logs.
 */
#include "startup.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "chsql.h"
#include "clock.h"
#include "config.h"
#include "exec.h"
#include "log.h"
#include "store.h"
#include "text.h"
#include "xalloc.h"

/* mkdir -p for the log folder. */
int
startup_mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof tmp, "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/*
 * One daemon per state store.  Two daemons on one state_db (say, two
 * configurations that differ only in socket:) would both run every
 * partition.  The first takes an exclusive flock on STATE_DB.lock, beside
 * the store, and writes its pid there; a second finds the lock held and
 * refuses to start, naming the pid.  The lock goes with the process (kill
 * -9 included), so a stale file never blocks a restart.  O_CLOEXEC: the
 * commands we spawn must not inherit it (a command left running would
 * otherwise hold the store against the next daemon).
 *
 * Several hosts: the store is shared by design, but one node's command
 * log folder is not: its files and the marker of its commands (proc.h)
 * would be another daemon's too, and a restart would end that daemon's
 * commands as orphans.  So the lock is LOGDIR.lock there (state_db is the
 * log folder's path, cluster true).
 */
int
startup_lock_store(const char *state_db, bool cluster, int *lock_fd,
		   struct err *err)
{
	char path[PATH_MAX], pidbuf[32];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(path, sizeof path, "%s.lock", state_db) >= sizeof path)
		return err_set(err, EXIT_BAD_INPUT, "state_db %s: path too long",
			       state_db);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY,
		  0640);
	if (fd < 0)
		return err_set(err, EXIT_BAD_INPUT, "cannot open the state store"
			       " lock %s: %s; check state_db and that its folder"
			       " exists and is writable", path, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;

		n = pread(fd, pidbuf, sizeof pidbuf - 1, 0);
		pidbuf[n > 0 ? n : 0] = '\0';
		pidbuf[strcspn(pidbuf, "\n")] = '\0';
		close(fd);
		if (e == EWOULDBLOCK && cluster)
			return err_set(err, EXIT_BAD_INPUT, "command log folder"
				       " %s is in use by another backfilld (pid"
				       " %s, lock %s): stop it first, or start"
				       " this node from a folder of its own",
				       state_db, pidbuf[0] ? pidbuf : "unknown",
				       path);
		if (e == EWOULDBLOCK)
			return err_set(err, EXIT_BAD_INPUT, "state store %s is in"
				       " use by another backfilld (pid %s, lock"
				       " %s): stop it first, or give this"
				       " configuration its own state_db",
				       state_db, pidbuf[0] ? pidbuf : "unknown",
				       path);
		return err_set(err, EXIT_BAD_INPUT, "cannot lock %s: %s",
			       path, strerror(e));
	}
	n = snprintf(pidbuf, sizeof pidbuf, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pidbuf, (size_t)n, 0) != n)
		log_warn("cannot write the pid into %s: %s", path,
			 strerror(errno));
	*lock_fd = fd;
	return 0;
}

/*
 * What the daemon refuses at start that --check-config can see too
 * without the running system: a state_db that is a symbolic link (the
 * store, its WAL and its lock would be written wherever it points), a
 * socket_group that does not exist.
 */
/* "FILE:LINE:COLUMN" of a key's value, like every configuration error
 * (or "FILE" when the value is not in the file), into at. */
static const char *
startup_config_at(const struct config *cfg, struct pos pos, char *at,
		 size_t size)
{
	if (pos.line > 0)
		snprintf(at, size, "%s:%d:%d", cfg->path, pos.line, pos.col);
	else
		snprintf(at, size, "%s", cfg->path);
	return at;
}

int
startup_check_host(const struct config *cfg, struct err *err)
{
	char at[PATH_MAX + 32];
	struct stat sb;

	if (cfg->state_db != NULL && lstat(cfg->state_db, &sb) == 0 &&
	    S_ISLNK(sb.st_mode))
		return err_set(err, EXIT_BAD_INPUT, "%s: state_db %s is a"
			       " symbolic link: point state_db at the real"
			       " file", startup_config_at(cfg, cfg->state_db_pos,
			       at, sizeof at), cfg->state_db);
	if (cfg->socket_group != NULL && getgrnam(cfg->socket_group) == NULL) {
		char q[128];

		return err_set(err, EXIT_BAD_INPUT, "%s: socket_group \"%s\""
			       " does not exist: create it (groupadd) or change"
			       " socket_group", startup_config_at(cfg,
			       cfg->socket_group_pos, at, sizeof at),
			       text_escape(cfg->socket_group, q, sizeof q));
	}
	return 0;
}

/* --check-config: where the ClickHouse driver substitutes the values it
 * generates (docs/clickhouse.md, "Bound values"); locals[j] (NULL: none
 * known): job j's table is Distributed over that local table, whose
 * stage is the one :stage names. */
void
startup_check_bound(const struct config *cfg, char *const *locals)
{
	struct buf b;

	buf_init(&b);
	for (size_t i = 0; i < cfg->njobs; i++) {
		const struct job_def *j = &cfg->jobs[i];
		char stage[CHSQL_IDENT_MAX + 32], what[160];
		const char *local = locals != NULL ? locals[i] : NULL;
		size_t n;

		if (j->warehouse < 0 || j->sql == NULL ||
		    cfg->warehouses[j->warehouse].kind != WH_CLICKHOUSE)
			continue;
		chsql_stage_name(local ? local : j->table, stage, sizeof stage);
		n = chsql_describe(j->name, "sql", j->sql, j->grain,
				   j->cal.tz != NULL, stage, &b);
		for (size_t k = 0; k < j->nchecks; k++) {
			snprintf(what, sizeof what, "check %s", j->checks[k].name);
			n += chsql_describe(j->name, what, j->checks[k].sql,
					    j->grain, j->cal.tz != NULL, stage,
					    &b);
		}
		if (n > 0 && local == NULL &&
		    cfg->warehouses[j->warehouse].cluster != NULL)
			buf_printf(&b, "  job %s: if table %s is Distributed,"
				   " :stage is _backfilld_stage_ and its local"
				   " table (not known: the server was not"
				   " reached)\n", j->name, j->table);
	}
	if (b.len > 0) {
		printf("values the daemon substitutes (ClickHouse):\n");
		fwrite(b.data, 1, b.len, stdout);
	}
	buf_free(&b);
}

/*
 * A SQLite warehouse whose file does not exist, or is not an SQLite
 * database (config_wh_sqlite_header: read-only, never created): refused
 * at start, by --check-config and on reload, with the position of its
 * path.  The driver never creates a warehouse (wh_sqlite.c), so a mistyped
 * path would otherwise start a daemon whose every run there fails.
 */
int
startup_check_warehouses(const struct config *cfg, struct err *err)
{
	char qn[128], qp[512];
	struct stat sb;

	for (size_t i = 0; i < cfg->nwarehouses; i++) {
		const struct warehouse_def *w = &cfg->warehouses[i];
		char why[160];

		if (w->kind == WH_SQLITE && w->path != NULL &&
		    config_wh_sqlite_header(w->path, why, sizeof why) < 0)
			return err_set(err, EXIT_BAD_INPUT, "%s:%d:%d: warehouse"
				       " \"%s\": sqlite file %s: %s; correct"
				       " the path", w->file, w->path_pos.line,
				       w->path_pos.col,
				       text_escape(w->name, qn, sizeof qn),
				       text_escape(w->path, qp, sizeof qp), why);
		if (w->kind != WH_SQLITE || w->path == NULL ||
		    stat(w->path, &sb) == 0 || errno != ENOENT)
			continue;
		return err_set(err, EXIT_BAD_INPUT, "%s:%d:%d: warehouse \"%s\":"
			       " sqlite file %s does not exist: create it"
			       " (sqlite3 FILE 'VACUUM') or correct the path;"
			       " the daemon never creates a warehouse",
			       w->file, w->path_pos.line, w->path_pos.col,
			       text_escape(w->name, qn, sizeof qn),
			       text_escape(w->path, qp, sizeof qp));
	}
	return 0;
}

/*
 * Descriptors.  Command runs open a log file and spawn through pipes;
 * warehouse connections and control clients take descriptors too.  The
 * soft limit (often 1024) is raised to the hard one so that runs have a
 * reserve; a run that still finds none is put back in the queue without
 * counting an attempt (sched_dispatch.c).
 */
void
startup_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warn("cannot raise the descriptor limit to %llu: %s",
			 (unsigned long long)rl.rlim_max, strerror(errno));
}

/*
 * Calendars.  A job's keys name intervals of its calendar (timezone:,
 * week_start:): the same key is another day in another zone.  The store
 * records the calendar a job's keys were accepted in (jobs.calendar,
 * config_cal_name); a start or reload that changes it while the job has
 * built partitions is refused, so nothing reinterprets them.
 */

/* "timezone: Europe/Berlin" (", week_start: sunday" for a weekly job) of
 * a config_cal_name. */
static const char *
startup_cal_words(const char *cal, bool weekly, char *buf, size_t size)
{
	const char *sp = strchr(cal, ' ');
	int zlen = sp != NULL ? (int)(sp - cal) : (int)strlen(cal);

	if (zlen == 0)
		snprintf(buf, size, "timezone: UTC");
	else
		snprintf(buf, size, "timezone: %.*s", zlen, cal);
	if (weekly)
		snprintf(buf + strlen(buf), size - strlen(buf),
			 ", week_start: %s", sp != NULL ? "sunday" : "monday");
	return buf;
}

int
startup_check_calendars(struct store *st, const struct config *cfg,
			struct startup_cals *cals, struct err *err)
{
	char want[CONFIG_CAL_NAME_MAX];
	char was[CONFIG_CAL_NAME_MAX + 64], now[CONFIG_CAL_NAME_MAX + 64];
	char qn[128];
	struct err rerr;
	bool built;

	startup_cals_free(cals); /* what the check before read */
	cals->n = cfg->njobs;
	cals->had = xcalloc(cfg->njobs ? cfg->njobs : 1, sizeof *cals->had);
	for (size_t i = 0; i < cfg->njobs; i++) {
		const struct job_def *j = &cfg->jobs[i];
		bool weekly = j->grain == GRAIN_WEEK;
		char *had = cals->had[i];

		config_cal_name(j, want, sizeof want);
		if (store_job_calendar(st, j->name, had, CONFIG_CAL_NAME_MAX,
				       &built, &rerr) < 0) {
			/* a state store that cannot be read (down while the
			 * daemon starts: it starts and reconnects) does not
			 * stop a start or a reload; said, checked next time */
			log_warn("the jobs' calendars were not checked against"
				 " their built partitions: %s; they are at the"
				 " next start or reload", rerr.msg);
			return 0;
		}
		if (!built || strcmp(had, want) == 0)
			continue;
		err_set(err, EXIT_BAD_INPUT, "job \"%s\": its built"
			" partitions are keyed in %s; %s would give those"
			" keys other intervals: write %s again, or define a"
			" new job (another name and table) in the new"
			" calendar", text_escape(j->name, qn, sizeof qn),
			startup_cal_words(had, weekly, was, sizeof was),
			startup_cal_words(want, weekly, now, sizeof now), was);
		startup_cals_free(cals);
		return -1;
	}
	cals->read = true;
	return 0;
}

int
startup_save_calendars(struct store *st, const struct config *cfg,
		       const struct startup_cals *cals, struct err *err)
{
	char want[CONFIG_CAL_NAME_MAX];
	int64_t at = clock_now_ms();

	/* not read: nothing known to differ (a built job's record must not
	 * be overwritten unseen); recorded at the next start or reload */
	if (!cals->read || cals->n != cfg->njobs)
		return 0;
	for (size_t i = 0; i < cfg->njobs; i++) {
		config_cal_name(&cfg->jobs[i], want, sizeof want);
		if (strcmp(cals->had[i], want) != 0 &&
		    store_job_calendar_put(st, cfg->jobs[i].name, want, at,
					   err) < 0)
			return -1;
	}
	return 0;
}

void
startup_cals_free(struct startup_cals *cals)
{
	free(cals->had);
	cals->had = NULL;
	cals->n = 0;
	cals->read = false;
}
