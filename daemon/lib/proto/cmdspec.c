/*
 * cmdspec.c - the commands of backfillctl and backfilld, their arguments
 * and the checks of their values (pure; see cmdspec.h).
 */
#include "cmdspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "mstate.h"
#include "suggest.h"
#include "xalloc.h"

const char *const cmdspec_reprocess_names[] = {
	"all", "failed", "missing", NULL
};

static cmdspec_check_fn cmdspec_backfill_check;
static cmdspec_check_fn cmdspec_runs_check;

/* The message of a missing PARTITION. */
#define CMDSPEC_PARTITION_MISSING "PARTITION: give the partition's key " \
	"(YYYY-MM-DD, or YYYY-MM-DDTHH for an hourly job)"

/* Rows the tables below share. */
#define R CMDSPEC_REQ_OFF
#define CMDSPEC_END { NULL, 0, NULL, NULL, NULL, 0, 0 }
/* --json, into member m (a bool) */
#define CMDSPEC_JSON(m) { "json", CMDSPEC_FLAG, "json", NULL, NULL, 0, R(m) }
#define CMDSPEC_WAIT_OPT { "wait", CMDSPEC_WAIT, NULL, NULL, NULL, 0, 0 }
#define CMDSPEC_PARTITION(m) { "PARTITION", CMDSPEC_DATE, "partition", \
	CMDSPEC_PARTITION_MISSING, NULL, 0, R(m) }
/* REQUEST, for the command verb ("cancel", "retry"). */
#define CMDSPEC_REQUEST(verb) { "REQUEST", CMDSPEC_INT, "request", \
	"REQUEST: say which request to " verb " (ids are in 'backfillctl" \
	" runs')", NULL, 0, R(request.request) }

/* An option or positional of no message, no values, no flags. */
#define CMDSPEC_ARG(name, kind, field, m) \
	{ name, kind, field, NULL, NULL, 0, R(m) }
#define BF(m) R(backfill.m)

static const struct cmdspec_arg cmdspec_backfill_opts[] = {
	CMDSPEC_ARG("from", CMDSPEC_DATE, "from", backfill.from),
	CMDSPEC_ARG("to", CMDSPEC_DATE, "to", backfill.to),
	CMDSPEC_ARG("dates-file", CMDSPEC_DATES_FILE, "dates", backfill.dates),
	{ "reprocess", CMDSPEC_ENUM, "reprocess", NULL, cmdspec_reprocess_names,
	  0, BF(reprocess) },
	CMDSPEC_ARG("built-by", CMDSPEC_TEXT, "built_by", backfill.built_by),
	CMDSPEC_ARG("changed", CMDSPEC_FLAG, "changed", backfill.changed),
	CMDSPEC_ARG("reverse", CMDSPEC_FLAG, "reverse", backfill.reverse),
	CMDSPEC_ARG("no-downstream", CMDSPEC_FLAG, "no_downstream",
		    backfill.no_downstream),
	CMDSPEC_ARG("downstream", CMDSPEC_LIST, "downstream",
		    backfill.downstream),
	CMDSPEC_ARG("concurrency", CMDSPEC_INT, "concurrency",
		    backfill.concurrency),
	CMDSPEC_ARG("fail-fast", CMDSPEC_FLAG, "fail_fast", backfill.fail_fast),
	CMDSPEC_ARG("no-cutoff", CMDSPEC_FLAG, "no_cutoff", backfill.no_cutoff),
	CMDSPEC_ARG("budget", CMDSPEC_DURATION, "budget", backfill.budget),
	CMDSPEC_ARG("stale", CMDSPEC_FLAG, "stale", backfill.stale),
	CMDSPEC_ARG("reason", CMDSPEC_TEXT, "reason", backfill.reason),
	CMDSPEC_ARG("dry-run", CMDSPEC_FLAG, "dry_run", backfill.dry_run),
	CMDSPEC_ARG("verify", CMDSPEC_FLAG, "verify", backfill.verify),
	CMDSPEC_WAIT_OPT,
	CMDSPEC_JSON(backfill.json),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_backfill_pos[] = {
	{ "JOB", CMDSPEC_JOB, "job", "JOB: say which job to backfill", NULL,
	  0, BF(job) },
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_rerun_opts[] = {
	CMDSPEC_ARG("reason", CMDSPEC_TEXT, "reason", backfill.reason),
	CMDSPEC_WAIT_OPT,
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_rerun_pos[] = {
	{ "JOB", CMDSPEC_JOB, "job", "JOB: say which job to rerun", NULL, 0,
	  BF(job) },
	CMDSPEC_PARTITION(backfill.partition),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_verify_opts[] = {
	CMDSPEC_JSON(part.json),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_verify_pos[] = {
	{ "JOB", CMDSPEC_JOB, "job", "JOB: say which job to verify", NULL, 0,
	  R(part.job) },
	CMDSPEC_PARTITION(part.partition),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_json_opts[] = {
	CMDSPEC_JSON(show.json),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_status_pos[] = {
	CMDSPEC_ARG("JOB", CMDSPEC_JOB, "job", show.job),
	CMDSPEC_END
};
/* stale: a job the request may name, though backfillctl never does */
static const struct cmdspec_arg cmdspec_stale_fields[] = {
	CMDSPEC_ARG("job", CMDSPEC_TEXT, "job", show.job),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_runs_opts[] = {
	CMDSPEC_ARG("job", CMDSPEC_JOB, "job", runs.job),
	CMDSPEC_ARG("request", CMDSPEC_INT, "request", runs.request),
	{ "state", CMDSPEC_ENUM, "state", NULL, mstate_names, 0,
	  R(runs.state) },
	CMDSPEC_ARG("limit", CMDSPEC_INT, "limit", runs.limit),
	CMDSPEC_JSON(runs.json),
	CMDSPEC_ARG("jsonl", CMDSPEC_FLAG, "jsonl", runs.jsonl),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_audit_opts[] = {
	{ "request", CMDSPEC_INT, "request", "--request N: say which request "
	  "to audit (ids are in 'backfillctl runs')", NULL, 0,
	  R(request.request) },
	CMDSPEC_JSON(request.json),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_job_pos[] = {
	{ "JOB", CMDSPEC_JOB, "job", "JOB: say which job", NULL, 0,
	  R(show.job) },
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_map_pos[] = {
	{ "JOB", CMDSPEC_JOB, "job", "JOB: say which job", NULL, 0,
	  R(map.job) },
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_cancel_pos[] = {
	CMDSPEC_REQUEST("cancel"),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_reload_opts[] = {
	CMDSPEC_ARG("dry-run", CMDSPEC_FLAG, "dry_run", reload.dry_run),
	CMDSPEC_JSON(reload.json),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_retry_pos[] = {
	CMDSPEC_REQUEST("retry"),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_wait_opts[] = {
	CMDSPEC_WAIT_OPT,
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_wait_pos[] = {
	CMDSPEC_REQUEST("wait for"),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_map_opts[] = {
	CMDSPEC_ARG("from", CMDSPEC_TEXT, "from", map.from),
	CMDSPEC_ARG("to", CMDSPEC_TEXT, "to", map.to),
	CMDSPEC_JSON(map.json),
	CMDSPEC_END
};
/* The page is written by the client: the daemon ignores the field. */
static const struct cmdspec_arg cmdspec_report_opts[] = {
	{ "html", CMDSPEC_TEXT, "html", "--html FILE: say where to write the "
	  "report page", NULL, CMDSPEC_ARG_CLIENT, R(client.html) },
	CMDSPEC_END
};
static const char *const cmdspec_shell_names[] = { "bash", "zsh", NULL };
static const struct cmdspec_arg cmdspec_completion_pos[] = {
	{ "SHELL", CMDSPEC_ENUM, "shell", "SHELL: say which shell, bash or "
	  "zsh", cmdspec_shell_names, 0, R(client.shell) },
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_none[] = {
	CMDSPEC_END
};

const struct cmdspec cmdspec_backfill = {
	"backfill",
	"backfill JOB (--from D --to D | --dates-file F | --stale | "
	"--built-by VERSION | --changed) [options]",
	"Enqueue the partitions of JOB in a range of dates as one request,\n"
	"with the downstream partitions that contain them.  A job with\n"
	"partition: none takes no dates: its one partition is -.\n\n"
	"  --from D             first date, YYYY-MM-DD (YYYY-MM-DDTHH for "
	"an hourly job)\n"
	"  --to D               last date, inclusive\n"
	"  --dates-file F       the dates, one a line ('#' comments, blank "
	"lines skipped;\n"
	"                       - reads standard input)\n"
	"  --reprocess WHICH    all (default), failed or missing\n"
	"  --built-by VERSION   the partitions whose latest build used this "
	"code version\n"
	"  --changed            the partitions whose latest build used a code "
	"version\n"
	"                       other than the job's current one (a deploy's)\n"
	"  --stale              the stale partitions (see 'backfillctl "
	"stale')\n"
	"  --reverse            newest partition first\n"
	"  --no-downstream      do not rebuild the downstream partitions\n"
	"  --no-cutoff          rebuild the downstream partitions even where "
	"their\n"
	"                       inputs came out unchanged (early cut-off)\n"
	"  --downstream JOB[,JOB]\n"
	"                       rebuild only these downstream jobs (and what "
	"they feed)\n"
	"  --concurrency N      at most N runs of this request at once (at "
	"most the\n"
	"                       job's own concurrency)\n"
	"  --fail-fast          after the first failure, cancel the rest "
	"(resume it\n"
	"                       with 'backfillctl retry REQUEST')\n"
	"  --budget DURATION    the request's budget of warehouse time (at "
	"most the\n"
	"                       job's max_backfill_time): refused when its "
	"estimate is\n"
	"                       above it, stopped past 1.5 times it (resume "
	"with retry)\n"
	"  --reason TEXT        why, recorded with the request\n"
	"  --dry-run            print the partitions it would run, in order, "
	"and an\n"
	"                       estimate of its duration; change nothing\n"
	"  --verify             first prove the job idempotent on the first "
	"partition\n"
	"                       (see 'backfillctl verify'); refuse the "
	"request if not\n"
	"  --wait               show progress; return when the work is "
	"done\n"
	"  --json               print JSON\n",
	CMDSPEC_MUTATES,
	cmdspec_backfill_opts, cmdspec_backfill_pos, 1, cmdspec_backfill_check, NULL
};

const struct cmdspec cmdspec_rerun = {
	"rerun",
	"rerun JOB PARTITION [--reason TEXT] [--wait]",
	"Run one partition of JOB again (PARTITION is its key: YYYY-MM-DD,\n"
	"or YYYY-MM-DDTHH for an hourly job).\n\n"
	"  --reason TEXT        why, recorded with the request\n"
	"  --wait               show progress; return when the work is "
	"done\n",
	CMDSPEC_MUTATES,
	cmdspec_rerun_opts, cmdspec_rerun_pos, 2, NULL, NULL
};

const struct cmdspec cmdspec_verify = {
	"verify",
	"verify JOB PARTITION [--json]",
	"Prove that JOB is idempotent: run it for PARTITION twice in one\n"
	"transaction, compare the partition after each run (row count and an\n"
	"order-independent checksum of its rows), and roll everything back.\n"
	"Exit 2 when the second run changed the partition.  JOB must be a SQL\n"
	"job that declares table: and partition_column:.  It changes nothing:\n"
	"anyone who may connect may run it.\n\n"
	"  --json               print JSON (\"idempotent\": false too)\n",
	CMDSPEC_STREAMS,
	cmdspec_verify_opts, cmdspec_verify_pos, 2, NULL, NULL
};

const struct cmdspec cmdspec_status = {
	"status",
	"status [JOB] [--json]",
	"Per job: paused, queued, running, succeeded, failed, blocked,\n"
	"watermark and catchup state; the partitions past a job's deadline\n"
	"(late) and the oldest of them.\n\n"
	"  --json               print JSON\n",
	0,
	cmdspec_json_opts, cmdspec_status_pos, 0, NULL, NULL
};

const struct cmdspec cmdspec_runs = {
	"runs",
	"runs [--job J] [--request N] [--state S] [--limit N] [--json | "
	"--jsonl]",
	"The runs, newest first (the newest 50 on a terminal unless "
	"--limit).\n\n"
	"  --job J              only the runs of job J\n"
	"  --request N          only the runs of request N\n"
	"  --state S            queued, running, succeeded, failed, blocked, "
	"cancelled\n"
	"                       or skipped (early cut-off)\n"
	"  --limit N            at most N runs\n"
	"  --json               print JSON (every matching run unless "
	"--limit)\n"
	"  --jsonl              print one JSON object per line\n",
	CMDSPEC_STREAMS | CMDSPEC_LOCAL,
	cmdspec_runs_opts, cmdspec_none, 0, cmdspec_runs_check, NULL
};

const struct cmdspec cmdspec_stale = {
	"stale",
	"stale [--json]",
	"The downstream partitions older than their inputs.\n\n"
	"  --json               print JSON\n",
	0,
	cmdspec_json_opts, cmdspec_none, 0, NULL, cmdspec_stale_fields
};

const struct cmdspec cmdspec_audit = {
	"audit",
	"audit --request N [--json]",
	"Per partition of request N: code version, rows and metrics before "
	"and\nafter, checks, pass or fail.\n\n"
	"  --request N          the request\n"
	"  --json               print JSON\n",
	0,
	cmdspec_audit_opts, cmdspec_none, 0, NULL, NULL
};

const struct cmdspec cmdspec_pause = {
	"pause",
	"pause JOB",
	"Freeze JOB's schedule and queue.\n\n",
	CMDSPEC_MUTATES,
	cmdspec_none, cmdspec_job_pos, 1, NULL, NULL
};

const struct cmdspec cmdspec_resume = {
	"resume",
	"resume JOB",
	"Unfreeze JOB's schedule and queue.\n\n",
	CMDSPEC_MUTATES,
	cmdspec_none, cmdspec_job_pos, 1, NULL, NULL
};

const struct cmdspec cmdspec_cancel = {
	"cancel",
	"cancel REQUEST",
	"Drop the queued partitions of request REQUEST.\n\n",
	CMDSPEC_MUTATES,
	cmdspec_none, cmdspec_cancel_pos, 1, NULL, NULL
};

const struct cmdspec cmdspec_retry = {
	"retry",
	"retry REQUEST [--wait]",
	"Queue again the failed, blocked and cancelled partitions of request\n"
	"REQUEST, with their downstream, as the same request (refused while "
	"runs\nof it are in flight).\n\n"
	"  --wait               show progress; return when the work is "
	"done\n",
	CMDSPEC_MUTATES,
	cmdspec_wait_opts, cmdspec_retry_pos, 1, NULL, NULL
};

const struct cmdspec cmdspec_reload = {
	"reload",
	"reload [--dry-run] [--json]",
	"Re-read the daemon's configuration (as SIGHUP does) and print what\n"
	"changed: jobs added, removed and changed (old and new code version,\n"
	"the keys that changed), warehouses, settings, and how many queued\n"
	"partitions of removed jobs were cancelled; \"no change\" when nothing\n"
	"did.  A broken file is refused (FILE:LINE:COL, exit 2) and the running\n"
	"configuration stays.\n\n"
	"  --dry-run            validate the file and print the same report\n"
	"                       against the running configuration; apply "
	"nothing\n"
	"  --json               print JSON: {added, removed, changed, "
	"warehouses,\n"
	"                       settings, cancelled}\n",
	CMDSPEC_MUTATES | CMDSPEC_LOCAL,
	cmdspec_reload_opts, cmdspec_none, 0, NULL, NULL
};

const struct cmdspec cmdspec_jobs = {
	"jobs",
	"jobs [--json]",
	"The loaded jobs: grain, warehouse or command, upstream, paused,\n"
	"catchup state, watermark, code version, and the file and line that\n"
	"define each.\n\n"
	"  --json               print JSON\n",
	0,
	cmdspec_json_opts, cmdspec_none, 0, NULL, NULL
};

const struct cmdspec cmdspec_map = {
	"map",
	"map JOB [--from D --to D] [--json]",
	"JOB's partitions as a calendar, one letter per partition by state\n"
	"(days: a row per ISO week; hours: a row per day; weeks and months: a\n"
	"row per year), with a legend and counts; in colour on a terminal.\n"
	"Default range: the job's start (or its first built partition) to its\n"
	"newest due partition; at most 100000 partitions.\n\n"
	"  --from D             first date, YYYY-MM-DD (YYYY-MM-DDTHH for "
	"an hourly job)\n"
	"  --to D               last date, inclusive\n"
	"  --json               print {job, grain, from, to, ranges: [{from, "
	"to, state,\n"
	"                       count}]}: runs of consecutive partitions in "
	"one state\n",
	0,
	cmdspec_map_opts, cmdspec_map_pos, 1, NULL, NULL
};

const struct cmdspec cmdspec_report = {
	"report",
	"report --html FILE",
	"Write the report page to FILE now: one self-contained HTML file\n"
	"(no script, no external asset) with the partition maps of the\n"
	"first 20 jobs (the others are on the pages of http_listen's\n"
	"/report), the requests with their progress, the newest failures\n"
	"with their errors, and the late and stale partitions; below 2 MiB.\n"
	"FILE is replaced whole (a temporary file beside it, renamed).\n\n"
	"  --html FILE          where to write the page\n",
	0,
	cmdspec_report_opts, cmdspec_none, 0, NULL, NULL
};
const struct cmdspec cmdspec_wait = {
	"wait",
	"wait REQUEST",
	"Wait for request REQUEST, whoever submitted it, as --wait does: a\n"
	"progress line on stderr (when it is a terminal) until the request and\n"
	"its downstream work are done, then the summary.  Exit 0 when every\n"
	"partition succeeded, 1 when one failed, was blocked or was cancelled,\n"
	"2 for a request that does not exist.\n\n",
	CMDSPEC_CONTROL,
	cmdspec_none, cmdspec_wait_pos, 1, NULL, NULL
};

/* The script is built from this table by backfillctl (lib/proto/complete.c):
 * the daemon is not asked. */
const struct cmdspec cmdspec_completion = {
	"completion",
	"completion bash|zsh",
	"Print the shell completion script of backfillctl for bash or zsh:\n"
	"its commands, their options and values, and job names from the\n"
	"running daemon when it answers.  The package installs both; from a\n"
	"shell: source <(backfillctl completion bash).\n\n",
	CMDSPEC_CLIENT,
	cmdspec_none, cmdspec_completion_pos, 1, NULL, NULL
};
static const struct cmdspec_arg cmdspec_mark_opts[] = {
	{ "succeeded", CMDSPEC_FLAG, "succeeded", "--succeeded: say what to"
	  " record (the one state a mark records)", NULL, 0,
	  R(mark.succeeded) },
	{ "reason", CMDSPEC_TEXT, "reason", "--reason TEXT: say why the"
	  " partitions are marked (recorded with the operator's name)", NULL,
	  0, R(mark.reason) },
	CMDSPEC_ARG("no-downstream", CMDSPEC_FLAG, "no_downstream",
		    mark.no_downstream),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_mark_pos[] = {
	{ "JOB", CMDSPEC_JOB, "job", "JOB: say which job", NULL, 0,
	  R(mark.job) },
	{ "PARTITION", CMDSPEC_LIST, "partitions", "PARTITION: say which"
	  " partitions to mark (their keys: YYYY-MM-DD, or YYYY-MM-DDTHH for"
	  " an hourly job)", NULL, 0, R(mark.partitions) },
	CMDSPEC_END
};
const struct cmdspec cmdspec_mark = {
	"mark",
	"mark JOB PARTITION... --succeeded --reason TEXT [--no-downstream]",
	"Record partitions of JOB as built without running them (they were\n"
	"repaired by hand), with your user name and the reason: shown as\n"
	"marked in runs, audit and map.  Their downstream partitions are\n"
	"rebuilt, as after any landing.  Prints the request id.\n\n"
	"  --succeeded          the state recorded (required)\n"
	"  --reason TEXT        why (required)\n"
	"  --no-downstream      do not rebuild the downstream partitions\n",
	CMDSPEC_MUTATES | CMDSPEC_MANY,
	cmdspec_mark_opts, cmdspec_mark_pos, 2, NULL, NULL
};
static const struct cmdspec_arg cmdspec_logs_opts[] = {
	CMDSPEC_ARG("attempt", CMDSPEC_INT, "attempt", part.attempt),
	CMDSPEC_ARG("follow", CMDSPEC_FLAG, "follow", part.follow),
	CMDSPEC_ARG("raw", CMDSPEC_FLAG, "raw", part.raw),
	CMDSPEC_END
};
static const struct cmdspec_arg cmdspec_logs_pos[] = {
	{ "JOB", CMDSPEC_JOB, "job", "JOB: say which job", NULL, 0,
	  R(part.job) },
	CMDSPEC_PARTITION(part.partition),
	CMDSPEC_END
};
const struct cmdspec cmdspec_logs = {
	"logs",
	"logs JOB PARTITION [--attempt N] [--follow] [--raw]",
	"Print the output of a partition's newest run (or of attempt N of its\n"
	"newest request): a command run's log, a SQL run's error with its\n"
	"statement and position.  Streamed by the daemon: no access to its\n"
	"log folder is needed.  Control bytes (ESC, BEL, CR, NUL...) are shown\n"
	"escaped (\\r, \\x1b), as in every output; newlines and tabs are\n"
	"kept.  Exit 2 for a partition never run or an attempt that does not\n"
	"exist.\n\n"
	"  --attempt N          that attempt instead of the newest\n"
	"  --follow             go on printing while the run is running;\n"
	"                       return when it ends\n"
	"  --raw                the bytes as the command wrote them, for a\n"
	"                       pipe or a file (refused on a terminal)\n",
	CMDSPEC_STREAMS | CMDSPEC_LOCAL,
	cmdspec_logs_opts, cmdspec_logs_pos, 2, NULL, NULL
};

const struct cmdspec *const cmdspec_table[] = {
	&cmdspec_backfill, &cmdspec_rerun, &cmdspec_verify, &cmdspec_status,
	&cmdspec_runs, &cmdspec_stale, &cmdspec_audit, &cmdspec_pause,
	&cmdspec_resume, &cmdspec_cancel, &cmdspec_retry, &cmdspec_reload,
	&cmdspec_jobs, &cmdspec_map, &cmdspec_report, &cmdspec_wait,
	&cmdspec_completion, &cmdspec_mark, &cmdspec_logs
};
const size_t cmdspec_count = sizeof cmdspec_table / sizeof cmdspec_table[0];

/* The command called name, or NULL. */
const struct cmdspec *
cmdspec_find(const char *name)
{
	for (size_t i = 0; i < cmdspec_count; i++)
		if (strcmp(cmdspec_table[i]->name, name) == 0)
			return cmdspec_table[i];
	return NULL;
}

bool
cmdspec_is(const char *name, int flag)
{
	const struct cmdspec *cs = name != NULL ? cmdspec_find(name) : NULL;

	return cs != NULL && (cs->flags & flag) != 0;
}

/* The number of arguments of a list. */
static int
cmdspec_nargs(const struct cmdspec_arg *a)
{
	int n = 0;

	while (a[n].name != NULL)
		n++;
	return n;
}

/* The number of options of a command. */
int
cmdspec_nopts(const struct cmdspec *cs)
{
	return cmdspec_nargs(cs->opts);
}

/* The number of positionals of a command. */
int
cmdspec_npos(const struct cmdspec *cs)
{
	return cmdspec_nargs(cs->pos);
}

/* A date or an hour, told apart by the 'T' every hour has, so that a
 * badly written hour is told how hours are written, not dates.  An hour
 * of a zone may carry its offset, YYYY-MM-DDTHH+01:00 (its key: the one
 * hour of a repeated wall hour; the daemon checks it against the job's
 * zone, cal_range_parse); *v is then its wall hour. */
static int
cmdspec_when(const char *s, int64_t *v, bool *hour, struct err *err)
{
	char wall[14];

	*hour = strchr(s, 'T') != NULL;
	if (*hour && strlen(s) == 19 && (s[13] == '+' || s[13] == '-') &&
	    strspn(s + 14, "0123456789") == 2 && s[16] == ':' &&
	    strspn(s + 17, "0123456789") == 2) {
		memcpy(wall, s, 13);
		wall[13] = '\0';
		return cal_parse_hour(wall, v, err);
	}
	return *hour ? cal_parse_hour(s, v, err) : cal_parse_date(s, v, err);
}

/* s without the offset of an hour of a zone (cmdspec_when), in buf. */
static const char *
cmdspec_wall(const char *s, char buf[CAL_KEY_MAX])
{
	if (s == NULL || strlen(s) != 19 || (s[13] != '+' && s[13] != '-'))
		return s;
	memcpy(buf, s, 13);
	buf[13] = '\0';
	return buf;
}

/* A date or an hour. */
int
cmdspec_date_ok(const char *s, struct err *err)
{
	int64_t v;
	bool hour;

	return cmdspec_when(s, &v, &hour, err);
}

/* Strict positive decimal integer: digits only, no sign, no overflow. */
static int
cmdspec_posint(const char *what, const char *s, long long *v,
	       struct err *err)
{
	long long n = 0;
	const char *p;

	for (p = s; *p >= '0' && *p <= '9'; p++) {
		if (n > (999999999999999999LL - (*p - '0')) / 10) {
			n = -1;
			break;
		}
		n = n * 10 + (*p - '0');
	}
	if (p == s || *p != '\0' || n <= 0)
		return err_set(err, EXIT_BAD_INPUT, "%s must be a positive "
			       "integer, not '%.40s'", what, s);
	if (v != NULL)
		*v = n;
	return 0;
}

/* One of a NULL-terminated list of values; the message lists them and
 * names the closest one, if any. */
static int
cmdspec_enum_ok(const char *what, const char *const *values, const char *s,
		struct err *err)
{
	char list[256] = "";
	const char *hit;
	size_t n, i, len;

	for (n = 0; values[n] != NULL; n++)
		if (strcmp(values[n], s) == 0)
			return 0;
	for (i = 0; i < n; i++) {
		len = strlen(list);
		snprintf(list + len, sizeof list - len, "%s%s", i == 0 ? "" :
			 i + 1 == n ? " or " : ", ", values[i]);
	}
	hit = suggest_closest(s, values, n);
	if (hit != NULL)
		return err_set(err, EXIT_BAD_INPUT, "%s must be %s, not '%.40s'"
			       " (did you mean '%s'?)", what, list, s, hit);
	return err_set(err, EXIT_BAD_INPUT, "%s must be %s, not '%.40s'", what,
		       list, s);
}

/* A positive duration. */
int
cmdspec_duration(const char *what, const char *s, long long *seconds,
		 struct err *err)
{
	int64_t v;

	if (cal_parse_duration(s, &v, NULL) < 0 || v <= 0)
		return err_set(err, EXIT_BAD_INPUT, "%s must be a positive "
			       "duration like 30s, 15m, 2h or 1d, at most %dd"
			       " (100 years), not '%.40s'", what,
			       CAL_DURATION_MAX_DAYS, s);
	if (seconds != NULL)
		*seconds = (long long)v;
	return 0;
}

/* Names separated by commas, none of them empty. */
static int
cmdspec_list_ok(const char *what, const char *s, struct err *err)
{
	size_t len = strlen(s);

	if (len == 0 || s[0] == ',' || s[len - 1] == ',' ||
	    strstr(s, ",,") != NULL)
		return err_set(err, EXIT_BAD_INPUT, "%s '%.60s' has an empty "
			       "job name: give job names separated by commas",
			       what, s);
	return 0;
}

/* Check one value by its argument's kind. */
int
cmdspec_check_value(const struct cmdspec_arg *a, const char *what,
		    const char *s, long long *n, struct err *err)
{
	switch (a->kind) {
	case CMDSPEC_JOB:
		if (*s == '\0')
			return err_set(err, EXIT_BAD_INPUT, "the job name is "
				       "empty: name one of the configured jobs "
				       "('backfillctl jobs' lists them)");
		return 0;
	case CMDSPEC_INT:
		return cmdspec_posint(what, s, n, err);
	case CMDSPEC_DATE:
		/* -, the one partition of a job with partition: none; the
		 * daemon parses a PARTITION in the job's calendar */
		if (strcmp(a->name, "PARTITION") == 0 && strcmp(s, "-") == 0)
			return 0;
		if (cmdspec_date_ok(s, err) < 0) {
			err_prefix(err, "%s", what);
			return -1;
		}
		return 0;
	case CMDSPEC_ENUM:
		return cmdspec_enum_ok(what, a->values, s, err);
	case CMDSPEC_LIST:
		return cmdspec_list_ok(what, s, err);
	case CMDSPEC_DURATION:
		return cmdspec_duration(what, s, n, err);
	default:
		return 0;
	}
}

/* The member at offset off of rq. */
#define CMDSPEC_AT(rq, off, type) ((type *)(void *)((char *)(rq) + (off)))

/* A list's names into l->v (one allocation: the names follow the
 * pointers). */
static void
cmdspec_list_split(const char *s, struct cmdspec_list *l)
{
	size_t n = 1, len = strlen(s);
	char *names;

	for (const char *p = s; *p != '\0'; p++)
		n += *p == ',';
	l->v = xmalloc(n * sizeof *l->v + len + 1);
	names = (char *)(l->v + n);
	memcpy(names, s, len + 1);
	l->n = 0;
	for (char *p = names;; p++) {
		if (l->n == 0 || p[-1] == '\0')
			l->v[l->n++] = p;
		if (*p == '\0')
			break;
		if (*p == ',')
			*p = '\0';
	}
	l->text = s;
}

/* Check value s of argument a (what: its name in messages) and put it
 * in its member of rq. */
static int
cmdspec_put(const struct cmdspec_arg *a, const char *what, const char *s,
	    cmdspec_get_fn *get, const void *src, struct cmdspec_req *rq,
	    struct err *err)
{
	char field[64];
	struct cmdspec_date *d;
	struct cmdspec_dates *ds;
	long long n = 0;

	if (cmdspec_check_value(a, what, s, &n, err) < 0)
		return -1;
	switch (a->kind) {
	case CMDSPEC_FLAG:
		*CMDSPEC_AT(rq, a->off, bool) = strcmp(s, "1") == 0;
		break;
	case CMDSPEC_INT:
	case CMDSPEC_DURATION:
		*CMDSPEC_AT(rq, a->off, long long) = n;
		break;
	case CMDSPEC_DATE:
		d = CMDSPEC_AT(rq, a->off, struct cmdspec_date);
		d->text = s;
		d->v = 0;
		d->hour = false;
		(void)cmdspec_when(s, &d->v, &d->hour, err);
		break;
	case CMDSPEC_ENUM:
		CMDSPEC_AT(rq, a->off, struct cmdspec_enum)->name = s;
		for (int i = 0; a->values[i] != NULL; i++)
			if (strcmp(a->values[i], s) == 0)
				CMDSPEC_AT(rq, a->off, struct cmdspec_enum)->i = i;
		break;
	case CMDSPEC_LIST:
		cmdspec_list_split(s, CMDSPEC_AT(rq, a->off,
						 struct cmdspec_list));
		break;
	case CMDSPEC_DATES_FILE:
		ds = CMDSPEC_AT(rq, a->off, struct cmdspec_dates);
		ds->text = s;
		snprintf(field, sizeof field, "%s_file", a->field);
		ds->file = get(src, field);
		snprintf(field, sizeof field, "%s_lines", a->field);
		ds->lines = get(src, field);
		break;
	case CMDSPEC_TEXT:
	case CMDSPEC_JOB:
		*CMDSPEC_AT(rq, a->off, const char *) = s;
		break;
	case CMDSPEC_WAIT:
		break;
	}
	return 0;
}

/* Parse each argument of a list that was given, and check that each
 * required one was; opts: the list is of options (messages say
 * --name). */
static int
cmdspec_parse_args(const struct cmdspec_arg *args, bool opts,
		   cmdspec_get_fn *get, const void *src, bool client,
		   struct cmdspec_req *rq, struct err *err)
{
	char what[64];
	const char *v;

	for (const struct cmdspec_arg *a = args; a->name != NULL; a++) {
		if (a->field == NULL || (!client && (a->flags &
		    CMDSPEC_ARG_CLIENT)))
			continue;
		v = get(src, a->field);
		if (a->missing != NULL && (v == NULL || (*v == '\0' &&
		    a->kind == CMDSPEC_TEXT)))
			return err_set(err, EXIT_BAD_INPUT, "missing %s",
				       a->missing);
		if (v == NULL)
			continue;
		snprintf(what, sizeof what, "%s%s", opts ? "--" : "", a->name);
		if (cmdspec_put(a, what, v, get, src, rq, err) < 0)
			return -1;
	}
	return 0;
}

/* Parse a request by the command's specification. */
int
cmdspec_parse(const struct cmdspec *cs, cmdspec_get_fn *get,
	      const void *src, bool client, struct cmdspec_req *rq,
	      struct err *err)
{
	const char *tty = get(src, "tty");

	memset(rq, 0, sizeof *rq);
	rq->cs = cs;
	rq->tty = tty != NULL && strcmp(tty, "1") == 0;
	if (cmdspec_parse_args(cs->pos, false, get, src, client, rq, err) < 0 ||
	    cmdspec_parse_args(cs->opts, true, get, src, client, rq, err) < 0 ||
	    (cs->fields != NULL && cmdspec_parse_args(cs->fields, false, get,
	    src, client, rq, err) < 0))
		return -1;
	if (cs->check != NULL)
		return cs->check(rq, err);
	return 0;
}

/* Check a request's values, keeping nothing. */
int
cmdspec_check(const struct cmdspec *cs, cmdspec_get_fn *get,
	      const void *src, bool client, struct err *err)
{
	struct cmdspec_req rq;
	int rc = cmdspec_parse(cs, get, src, client, &rq, err);

	cmdspec_req_free(&rq);
	return rc;
}

/* Call fn on each argument of cs with a member that holds memory. */
static void
cmdspec_each_arg(const struct cmdspec *cs,
		 void (*fn)(const struct cmdspec_arg *a, void *data),
		 void *data)
{
	const struct cmdspec_arg *lists[3] = { cs->pos, cs->opts, cs->fields };

	for (int i = 0; i < 3; i++)
		for (const struct cmdspec_arg *a = lists[i];
		     a != NULL && a->name != NULL; a++)
			if (a->field != NULL)
				fn(a, data);
}

/* Free one argument's member (strings too when the request owns them). */
static void
cmdspec_free_arg(const struct cmdspec_arg *a, void *data)
{
	struct cmdspec_req *rq = data;
	struct cmdspec_list *l;
	struct cmdspec_dates *ds;

	switch (a->kind) {
	case CMDSPEC_LIST:
		l = CMDSPEC_AT(rq, a->off, struct cmdspec_list);
		free(l->v);
		if (rq->owned)
			free((char *)l->text);
		memset(l, 0, sizeof *l);
		return;
	case CMDSPEC_TEXT:
	case CMDSPEC_JOB:
		if (rq->owned)
			free(*CMDSPEC_AT(rq, a->off, char *));
		return;
	case CMDSPEC_DATE:
		if (rq->owned)
			free((char *)CMDSPEC_AT(rq, a->off,
						struct cmdspec_date)->text);
		return;
	case CMDSPEC_ENUM:
		if (rq->owned)
			free((char *)CMDSPEC_AT(rq, a->off,
						struct cmdspec_enum)->name);
		return;
	case CMDSPEC_DATES_FILE:
		ds = CMDSPEC_AT(rq, a->off, struct cmdspec_dates);
		if (rq->owned) {
			free((char *)ds->text);
			free((char *)ds->file);
			free((char *)ds->lines);
		}
		return;
	default:
		return;
	}
}

/* Release a request's memory. */
void
cmdspec_req_free(struct cmdspec_req *rq)
{
	if (rq->cs != NULL)
		cmdspec_each_arg(rq->cs, cmdspec_free_arg, rq);
}

/* A copy of string s, or NULL. */
static const char *
cmdspec_strdup(const char *s)
{
	return s != NULL ? xstrdup(s) : NULL;
}

/* Make one argument's member of a copy its own. */
static void
cmdspec_dup_arg(const struct cmdspec_arg *a, void *data)
{
	struct cmdspec_req *rq = data;
	struct cmdspec_list *l;
	struct cmdspec_dates *ds;
	const char **sp;

	switch (a->kind) {
	case CMDSPEC_LIST:
		l = CMDSPEC_AT(rq, a->off, struct cmdspec_list);
		if (l->text != NULL)
			cmdspec_list_split(xstrdup(l->text), l);
		return;
	case CMDSPEC_TEXT:
	case CMDSPEC_JOB:
		sp = CMDSPEC_AT(rq, a->off, const char *);
		*sp = cmdspec_strdup(*sp);
		return;
	case CMDSPEC_DATE:
		sp = &CMDSPEC_AT(rq, a->off, struct cmdspec_date)->text;
		*sp = cmdspec_strdup(*sp);
		return;
	case CMDSPEC_ENUM:
		sp = &CMDSPEC_AT(rq, a->off, struct cmdspec_enum)->name;
		*sp = cmdspec_strdup(*sp);
		return;
	case CMDSPEC_DATES_FILE:
		ds = CMDSPEC_AT(rq, a->off, struct cmdspec_dates);
		ds->text = cmdspec_strdup(ds->text);
		ds->file = cmdspec_strdup(ds->file);
		ds->lines = cmdspec_strdup(ds->lines);
		return;
	default:
		return;
	}
}

/* A copy that owns its strings. */
void
cmdspec_req_dup(const struct cmdspec_req *rq, struct cmdspec_req *out)
{
	*out = *rq;
	out->owned = true;
	if (out->cs != NULL)
		cmdspec_each_arg(out->cs, cmdspec_dup_arg, out);
}

/*
 * backfill: --from and --to go together; the dates are chosen one way:
 * --from/--to, --dates-file, --stale or --built-by (which --from/--to
 * may narrow), or none for a job with partition: none; the bounds in
 * order; --built-by names a version;
 * --downstream not with --no-downstream.
 */
static int
cmdspec_backfill_check(const struct cmdspec_req *rq, struct err *err)
{
	static const char *const way[] = { "--from/--to", "--dates-file",
		"--stale", "--built-by", "--changed" };
	const struct cmdreq_backfill *b = &rq->backfill;
	const char *from = b->from.text, *to = b->to.text;
	bool given[5];
	struct part_range r;
	char fw[CAL_KEY_MAX], tw[CAL_KEY_MAX];
	int i, k;

	if (from != NULL && to == NULL)
		return err_set(err, EXIT_BAD_INPUT, "--from without --to: give "
			       "both bounds (inclusive; the same date twice for "
			       "one day)");
	if (to != NULL && from == NULL)
		return err_set(err, EXIT_BAD_INPUT, "--to without --from: give "
			       "both bounds (inclusive; the same date twice for "
			       "one day)");
	given[0] = from != NULL;
	given[1] = b->dates.text != NULL;
	given[2] = b->stale;
	given[3] = b->built_by != NULL;
	given[4] = b->changed;
	for (i = 0; i < 5; i++)
		for (k = i + 1; k < 5; k++)
			if (given[i] && given[k] && !(i == 0 && k >= 3))
				return err_set(err, EXIT_BAD_INPUT, "%s and %s "
					       "both given: choose the dates one "
					       "way%s", way[i], way[k], k >= 3 ?
					       " (only --from/--to may narrow "
					       "--built-by and --changed)" : "");
	/* no way at all: the daemon refuses it unless the job has
	 * partition: none (its one partition; cmd_backfill.c) */
	/* Hour grain takes both forms of bound; it checks the order (of
	 * the wall hours of hours with an offset: the wall clock only
	 * repeats, never goes back, so the daemon's check is the exact one,
	 * cal_range_parse) */
	if (from != NULL && range_parse(GRAIN_HOUR, cmdspec_wall(from, fw),
					cmdspec_wall(to, tw), &r, err) < 0)
		return -1;
	if (b->built_by != NULL && *b->built_by == '\0')
		return err_set(err, EXIT_BAD_INPUT, "--built-by needs a code "
			       "version (the code_version of 'backfillctl "
			       "runs')");
	if (b->built_by != NULL && (strlen(b->built_by) != 16 ||
	    strspn(b->built_by, "0123456789abcdef") != 16))
		return err_set(err, EXIT_BAD_INPUT, "--built-by takes a code"
			       " version: its 16 hex digits as the VERSION"
			       " column of 'backfillctl runs' shows them, e.g."
			       " 3f2a9c0d41b7e865");
	if (b->downstream.text != NULL && b->no_downstream)
		return err_set(err, EXIT_BAD_INPUT, "--downstream and "
			       "--no-downstream both given: choose one");
	return 0;
}

/* runs: --json and --jsonl exclude each other. */
static int
cmdspec_runs_check(const struct cmdspec_req *rq, struct err *err)
{
	if (rq->runs.json && rq->runs.jsonl)
		return err_set(err, EXIT_BAD_INPUT, "--json and --jsonl exclude "
			       "each other: choose one");
	return 0;
}

/* Parse --reprocess; NULL is all. */
int
cmdspec_reprocess_parse(const char *s, enum reprocess *out)
{
	if (s == NULL) {
		*out = REPROCESS_ALL;
		return 0;
	}
	for (int i = 0; cmdspec_reprocess_names[i] != NULL; i++) {
		if (strcmp(s, cmdspec_reprocess_names[i]) == 0) {
			*out = (enum reprocess)i;
			return 0;
		}
	}
	return -1;
}

/* The name of a reprocess value. */
const char *
cmdspec_reprocess_name(enum reprocess r)
{
	return (unsigned)r <= REPROCESS_MISSING ? cmdspec_reprocess_names[r] :
	    "all";
}
