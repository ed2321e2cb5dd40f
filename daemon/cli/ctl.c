/*
 * ctl.c - backfillctl, the operator's client.
 *
 * A thin client in the manner of tmux's: a table of commands (ctl_cmds[],
 * name, usage and a parse function each), every one of which checks its
 * arguments locally, turns them into the fields of one REQUEST frame
 * (docs/protocol.md) and leaves everything else to the daemon.  Each DATA
 * frame's `out` goes to stdout as it arrives (fwrite and fflush per frame:
 * memory stays bounded by one frame however long the answer), then the
 * RESPONSE's `out`; the daemon renders tables and JSON.  Its `err` goes to
 * stderr after "backfillctl: ", and its `status` is our exit status.
 * When stdout is closed early (`backfillctl runs --json | head`), the
 * write fails with EPIPE (SIGPIPE is ignored): backfillctl closes the
 * connection, which ends the daemon's work on the answer, and exits 0
 * without a message, since the reader took what it wanted.  `--wait` then sends cmd=wait on the same connection and
 * redraws a progress line on stderr, when that is a terminal, for each
 * PROGRESS frame until the final RESPONSE.
 *
 * Exit status (DESIGN.md): 0 done, 1 the work failed, 2 bad usage, bad
 * input or a refused request, 3 the daemon could not be reached (or
 * answered with something that is not the protocol, or refused the
 * connection because too many clients are connected).  Every error is one
 * line on stderr: "backfillctl: <what was wrong>; <what to do>".
 *
 * Reads are blocking and have no timeout: a --wait may last hours.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "calendar.h"
#include "config.h"
#include "err.h"
#include "proto.h"
#include "suggest.h"

#ifndef BACKFILLD_VERSION
#define BACKFILLD_VERSION "0.1.0"
#endif

#define CTL_DEFAULT_SOCKET "/run/backfilld/backfilld.sock"
#define CTL_MAX_POS 8
#define CTL_MAX_OPTS 16

/* Option values above the char range: long-only options. */
enum {
	OPT_SOCKET = 256,
	OPT_CONFIG,
	OPT_VERSION,
	OPT_CMD         /* a command's option i is OPT_CMD + i */
};

/* The options every command takes. */
#define CTL_COMMON_OPTS \
	{ "socket", required_argument, NULL, OPT_SOCKET }, \
	{ "config", required_argument, NULL, OPT_CONFIG }, \
	{ "help", no_argument, NULL, 'h' }

#define CTL_COMMON_HELP \
	"  --socket PATH        the daemon's socket\n" \
	"  --config FILE        read the socket path from this configuration\n" \
	"  -h, --help           this text\n"

struct ctl_cmd;

/* The errno of a failed write to stdout, 0 while none failed. */
static int ctl_stdout_errno;

/* What the command line asked for, beyond the request fields. */
struct ctl_ctx {
	const struct ctl_cmd *cmd;
	const char *socket; /* --socket */
	const char *config; /* --config */
	bool help;
	bool wait;
	char *path;         /* the socket path in use */
};

/* How an argument of a command is checked and put in the request. */
enum ctl_kind {
	CTL_FLAG,       /* takes no value; the field is "1" */
	CTL_TEXT,       /* any text, sent as typed */
	CTL_JOB,        /* a job name, not empty */
	CTL_INT,        /* a positive integer */
	CTL_DATE,       /* a date or an hour (YYYY-MM-DD or YYYY-MM-DDTHH) */
	CTL_DATES_FILE, /* a dates file, sent as its dates (ctl_read_dates) */
	CTL_WAIT        /* --wait: no field, the client waits for the work */
};

/* An option of a command (name: its long name) or a positional argument
 * (name: what the messages call it). */
struct ctl_arg {
	const char *name;
	enum ctl_kind kind;
	const char *field;      /* the request field it fills, or NULL */
	const char *missing;    /* a required one: what to say when absent */
};

/*
 * A command: name, synopsis, help text, its options and positionals (each
 * list ends with a NULL name; the first minpos positionals are required)
 * and, when its options have rules across them, a check run after every
 * argument's own check and before the request is filled; val[i] is the
 * value of opts[i] (NULL when not given).  The check returns 0, or -1
 * with err.
 */
struct ctl_cmd {
	const char *name;
	const char *usage;
	const char *help;
	const struct ctl_arg *opts;
	const struct ctl_arg *pos;
	int minpos;
	int (*check)(const struct ctl_ctx *, const char *const *,
	    struct err *);
};

/* Positional arguments gathered while walking the options. */
struct ctl_args {
	int argc;
	char **argv;
	const struct option *longopts;
	bool rest;              /* after "--": everything is positional */
	bool first_only;        /* stop at the first positional (the
				 * command name), leaving optind on it */
	char *pos[CTL_MAX_POS];
	int npos;
	int extra;              /* positionals beyond CTL_MAX_POS */
};

static int ctl_backfill_check(const struct ctl_ctx *, const char *const *,
    struct err *);
static int ctl_runs_check(const struct ctl_ctx *, const char *const *,
    struct err *);
static int ctl_report_check(const struct ctl_ctx *, const char *const *,
    struct err *);

/* report --html FILE: the file the page goes to (written here, through a
 * temporary file renamed once the whole page arrived). */
static const char *ctl_report_path;

static const struct ctl_arg ctl_backfill_opts[] = {
	{ "from", CTL_TEXT, "from", NULL },
	{ "to", CTL_TEXT, "to", NULL },
	{ "dates-file", CTL_DATES_FILE, "dates", NULL },
	{ "reprocess", CTL_TEXT, "reprocess", NULL },
	{ "built-by", CTL_TEXT, "built_by", NULL },
	{ "reverse", CTL_FLAG, "reverse", NULL },
	{ "no-downstream", CTL_FLAG, "no_downstream", NULL },
	{ "downstream", CTL_TEXT, "downstream", NULL },
	{ "concurrency", CTL_INT, "concurrency", NULL },
	{ "fail-fast", CTL_FLAG, "fail_fast", NULL },
	{ "stale", CTL_FLAG, "stale", NULL },
	{ "reason", CTL_TEXT, "reason", NULL },
	{ "dry-run", CTL_FLAG, "dry_run", NULL },
	{ "verify", CTL_FLAG, "verify", NULL },
	{ "wait", CTL_WAIT, NULL, NULL },
	{ "json", CTL_FLAG, "json", NULL },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_backfill_pos[] = {
	{ "JOB", CTL_JOB, "job", "JOB: say which job to backfill" },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_rerun_opts[] = {
	{ "reason", CTL_TEXT, "reason", NULL },
	{ "wait", CTL_WAIT, NULL, NULL },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_rerun_pos[] = {
	{ "JOB", CTL_JOB, "job", "JOB: say which job to rerun" },
	{ "PARTITION", CTL_DATE, "partition", "PARTITION: give the "
	  "partition's key (YYYY-MM-DD, or YYYY-MM-DDTHH for an hourly job)" },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_verify_pos[] = {
	{ "JOB", CTL_JOB, "job", "JOB: say which job to verify" },
	{ "PARTITION", CTL_DATE, "partition", "PARTITION: give the "
	  "partition's key (YYYY-MM-DD, or YYYY-MM-DDTHH for an hourly job)" },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_json_opts[] = {
	{ "json", CTL_FLAG, "json", NULL },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_status_pos[] = {
	{ "JOB", CTL_JOB, "job", NULL },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_runs_opts[] = {
	{ "job", CTL_JOB, "job", NULL },
	{ "request", CTL_INT, "request", NULL },
	{ "state", CTL_TEXT, "state", NULL },
	{ "limit", CTL_INT, "limit", NULL },
	{ "json", CTL_FLAG, "json", NULL },
	{ "jsonl", CTL_FLAG, "jsonl", NULL },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_audit_opts[] = {
	{ "request", CTL_INT, "request", "missing --request N: say which "
	  "request to audit (ids are in 'backfillctl runs')" },
	{ "json", CTL_FLAG, "json", NULL },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_job_pos[] = {
	{ "JOB", CTL_JOB, "job", "JOB: say which job" },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_cancel_pos[] = {
	{ "REQUEST", CTL_INT, "request", "REQUEST: say which request to "
	  "cancel (ids are in 'backfillctl runs')" },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_reload_opts[] = {
	{ "dry-run", CTL_FLAG, "dry_run", NULL },
	{ "json", CTL_FLAG, "json", NULL },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_retry_pos[] = {
	{ "REQUEST", CTL_INT, "request", "REQUEST: say which request to "
	  "retry (ids are in 'backfillctl runs')" },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_wait_opts[] = {
	{ "wait", CTL_WAIT, NULL, NULL },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_map_opts[] = {
	{ "from", CTL_TEXT, "from", NULL },
	{ "to", CTL_TEXT, "to", NULL },
	{ "json", CTL_FLAG, "json", NULL },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_report_opts[] = {
	{ "html", CTL_TEXT, "html", NULL },
	{ NULL, 0, NULL, NULL }
};
static const struct ctl_arg ctl_none[] = {
	{ NULL, 0, NULL, NULL }
};

static const struct ctl_cmd ctl_cmds[] = {
	{ "backfill",
	  "backfill JOB (--from D --to D | --dates-file F | --stale | "
	  "--built-by VERSION) [options]",
	  "Enqueue the partitions of JOB in a range of dates as one request,\n"
	  "with the downstream partitions that contain them.\n\n"
	  "  --from D             first date, YYYY-MM-DD (YYYY-MM-DDTHH for "
	  "an hourly job)\n"
	  "  --to D               last date, inclusive\n"
	  "  --dates-file F       the dates, one a line ('#' comments, blank "
	  "lines skipped;\n"
	  "                       - reads standard input)\n"
	  "  --reprocess WHICH    all (default), failed or missing\n"
	  "  --built-by VERSION   the partitions whose latest build used this "
	  "code version\n"
	  "  --stale              the stale partitions (see 'backfillctl "
	  "stale')\n"
	  "  --reverse            newest partition first\n"
	  "  --no-downstream      do not rebuild the downstream partitions\n"
	  "  --downstream JOB[,JOB]\n"
	  "                       rebuild only these downstream jobs (and what "
	  "they feed)\n"
	  "  --concurrency N      at most N runs of this request at once (at "
	  "most the\n"
	  "                       job's own concurrency)\n"
	  "  --fail-fast          after the first failure, cancel the rest "
	  "(resume it\n"
	  "                       with 'backfillctl retry REQUEST')\n"
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
	  ctl_backfill_opts, ctl_backfill_pos, 1, ctl_backfill_check },
	{ "rerun",
	  "rerun JOB PARTITION [--reason TEXT] [--wait]",
	  "Run one partition of JOB again (PARTITION is its key: YYYY-MM-DD,\n"
	  "or YYYY-MM-DDTHH for an hourly job).\n\n"
	  "  --reason TEXT        why, recorded with the request\n"
	  "  --wait               show progress; return when the work is "
	  "done\n",
	  ctl_rerun_opts, ctl_rerun_pos, 2, NULL },
	{ "verify",
	  "verify JOB PARTITION [--json]",
	  "Prove that JOB is idempotent: run it for PARTITION twice in one\n"
	  "transaction, compare the partition after each run (row count and an\n"
	  "order-independent checksum of its rows), and roll everything back.\n"
	  "Exit 2 when the second run changed the partition.  JOB must be a SQL\n"
	  "job that declares table: and partition_column:.\n\n"
	  "  --json               print JSON\n",
	  ctl_json_opts, ctl_verify_pos, 2, NULL },
	{ "status",
	  "status [JOB] [--json]",
	  "Per job: paused, queued, running, succeeded, failed, blocked,\n"
	  "watermark and catchup state; the partitions past a job's deadline\n"
	  "(late) and the oldest of them.\n\n"
	  "  --json               print JSON\n",
	  ctl_json_opts, ctl_status_pos, 0, NULL },
	{ "runs",
	  "runs [--job J] [--request N] [--state S] [--limit N] [--json | "
	  "--jsonl]",
	  "The runs, newest first (the newest 50 on a terminal unless "
	  "--limit).\n\n"
	  "  --job J              only the runs of job J\n"
	  "  --request N          only the runs of request N\n"
	  "  --state S            queued, running, succeeded, failed, blocked "
	  "or cancelled\n"
	  "  --limit N            at most N runs\n"
	  "  --json               print JSON (every matching run unless "
	  "--limit)\n"
	  "  --jsonl              print one JSON object per line\n",
	  ctl_runs_opts, ctl_none, 0, ctl_runs_check },
	{ "stale",
	  "stale [--json]",
	  "The downstream partitions older than their inputs.\n\n"
	  "  --json               print JSON\n",
	  ctl_json_opts, ctl_none, 0, NULL },
	{ "audit",
	  "audit --request N [--json]",
	  "Per partition of request N: code version, rows and metrics before "
	  "and\nafter, checks, pass or fail.\n\n"
	  "  --request N          the request\n"
	  "  --json               print JSON\n",
	  ctl_audit_opts, ctl_none, 0, NULL },
	{ "pause",
	  "pause JOB",
	  "Freeze JOB's schedule and queue.\n\n",
	  ctl_none, ctl_job_pos, 1, NULL },
	{ "resume",
	  "resume JOB",
	  "Unfreeze JOB's schedule and queue.\n\n",
	  ctl_none, ctl_job_pos, 1, NULL },
	{ "cancel",
	  "cancel REQUEST",
	  "Drop the queued partitions of request REQUEST.\n\n",
	  ctl_none, ctl_cancel_pos, 1, NULL },
	{ "retry",
	  "retry REQUEST [--wait]",
	  "Queue again the failed, blocked and cancelled partitions of request\n"
	  "REQUEST, with their downstream, as the same request (refused while "
	  "runs\nof it are in flight).\n\n"
	  "  --wait               show progress; return when the work is "
	  "done\n",
	  ctl_wait_opts, ctl_retry_pos, 1, NULL },
	{ "reload",
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
	  ctl_reload_opts, ctl_none, 0, NULL },
	{ "jobs",
	  "jobs [--json]",
	  "The loaded jobs: grain, warehouse or command, upstream, paused,\n"
	  "catchup state, watermark, code version, and the file and line that\n"
	  "define each.\n\n"
	  "  --json               print JSON\n",
	  ctl_json_opts, ctl_none, 0, NULL },
	{ "map",
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
	  ctl_map_opts, ctl_job_pos, 1, NULL },
	{ "report",
	  "report --html FILE",
	  "Write the report page to FILE now: one self-contained HTML file\n"
	  "(no script, no external asset) with each job's partition map, the\n"
	  "requests with their progress, the newest failures with their\n"
	  "errors, and the late and stale partitions.  FILE is replaced whole\n"
	  "(a temporary file beside it, renamed).\n\n"
	  "  --html FILE          where to write the page\n",
	  ctl_report_opts, ctl_none, 0, ctl_report_check },
};
#define CTL_NCMDS (sizeof ctl_cmds / sizeof ctl_cmds[0])

/* Fill err with a usage error (exit 2) that points at the command's
 * --help; returns -1. */
static int __attribute__((format(printf, 3, 4)))
ctl_usage_err(const struct ctl_ctx *ctx, struct err *err, const char *fmt,
    ...)
{
	char what[ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (ctx->cmd != NULL)
		return err_set(err, EXIT_BAD_INPUT,
		    "%s; see 'backfillctl %s --help'", what, ctx->cmd->name);
	return err_set(err, EXIT_BAD_INPUT, "%s; see 'backfillctl --help'",
	    what);
}

/* Explain an option getopt_long refused ('?'); fills err, returns -1. */
static int
ctl_bad_option(const struct ctl_ctx *ctx, struct ctl_args *a,
    struct err *err)
{
	const char *word = optind > 0 && optind <= a->argc ?
	    a->argv[optind - 1] : "";
	const char *names[64], *hit = NULL;
	size_t n = 0, len, i, matches = 0;
	char name[64];

	/* glibc: optopt is 0 for an unknown long option, the option's value
	 * for a long option given a value it does not take, and the
	 * character for an unknown short option. */
	if (optopt > 0 && optopt <= 0x7f &&
	    !(optopt == 'h' && strncmp(word, "--", 2) == 0))
		return ctl_usage_err(ctx, err, "unknown option '-%c'",
		    isprint(optopt) ? optopt : '?');
	if (strncmp(word, "--", 2) != 0)
		return ctl_usage_err(ctx, err, "unknown option '%.40s'", word);
	len = strcspn(word + 2, "=");
	snprintf(name, sizeof name, "%.*s", (int)len, word + 2);
	for (i = 0; a->longopts[i].name != NULL && n < 64; i++) {
		names[n++] = a->longopts[i].name;
		if (strcmp(a->longopts[i].name, name) == 0 &&
		    a->longopts[i].has_arg == no_argument &&
		    word[2 + len] == '=')
			return ctl_usage_err(ctx, err,
			    "option '--%s' takes no value", name);
		if (strncmp(a->longopts[i].name, name, len) == 0) {
			matches++;
			hit = a->longopts[i].name;
		}
	}
	if (matches > 1)
		return ctl_usage_err(ctx, err, "option '--%s' is ambiguous: "
		    "write more of its name", name);
	if (matches == 1 && hit != NULL && word[2 + len] == '=')
		return ctl_usage_err(ctx, err, "option '--%s' takes no value",
		    hit);
	hit = suggest_closest(name, names, n);
	if (hit != NULL)
		return ctl_usage_err(ctx, err, "unknown option '--%s' (did "
		    "you mean '--%s'?)", name, hit);
	return ctl_usage_err(ctx, err, "unknown option '--%s'", name);
}

/* Record one positional argument. */
static void
ctl_add_pos(struct ctl_args *a, char *arg)
{
	if (a->npos < CTL_MAX_POS)
		a->pos[a->npos++] = arg;
	else
		a->extra++;
}

/*
 * The next option of a command line: its value, -1 at the end, -2 on a
 * usage error (err filled).  Positionals are gathered in a->pos wherever
 * they stand, so options may come before or after them; "--" ends the
 * options.  The options every command takes (--socket, --config, --help)
 * are handled here.
 */
static int
ctl_next(struct ctl_ctx *ctx, struct ctl_args *a, struct err *err)
{
	int c, before;

	for (;;) {
		if (optind >= a->argc)
			return -1;
		if (a->rest) {
			ctl_add_pos(a, a->argv[optind]);
			if (a->first_only)
				return -1;
			optind++;
			continue;
		}
		before = optind;
		c = getopt_long(a->argc, a->argv, "+:h", a->longopts, NULL);
		if (c == -1) {
			if (optind == before + 1 &&
			    strcmp(a->argv[before], "--") == 0) {
				a->rest = true;
				continue;
			}
			if (optind >= a->argc)
				return -1;
			ctl_add_pos(a, a->argv[optind]);
			if (a->first_only)
				return -1;
			optind++;
			continue;
		}
		switch (c) {
		case 'h':
			ctx->help = true;
			break;
		case OPT_SOCKET:
			ctx->socket = optarg;
			break;
		case OPT_CONFIG:
			ctx->config = optarg;
			break;
		case OPT_VERSION:
			return c;
		case ':':
			if (strncmp(a->argv[optind - 1], "--", 2) == 0)
				ctl_usage_err(ctx, err, "option '%s' needs a "
				    "value", a->argv[optind - 1]);
			else
				ctl_usage_err(ctx, err, "option '-%c' needs a "
				    "value", optopt);
			return -2;
		case '?':
			ctl_bad_option(ctx, a, err);
			return -2;
		default:
			return c;
		}
	}
}

/* Start walking argv (argv[0] is the command name). */
static void
ctl_args_init(struct ctl_args *a, int argc, char **argv,
    const struct option *longopts)
{
	memset(a, 0, sizeof *a);
	a->argc = argc;
	a->argv = argv;
	a->longopts = longopts;
	optind = 0; /* glibc: full reinitialisation */
	opterr = 0;
}

/* Check the number of positionals: between min and max; pos[] says what
 * each one is, for the message. */
static int
ctl_args_check(const struct ctl_ctx *ctx, const struct ctl_args *a, int min,
    int max, const struct ctl_arg *pos, struct err *err)
{
	if (a->npos < min)
		return ctl_usage_err(ctx, err, "missing %s",
		    pos[a->npos].missing);
	if (a->npos > max || a->extra > 0)
		return ctl_usage_err(ctx, err, "unexpected argument '%s'",
		    a->npos > max ? a->pos[max] : "...");
	return 0;
}

/* Strict positive decimal integer (the ids and --limit). */
static int
ctl_posint(const struct ctl_ctx *ctx, const char *what, const char *s,
    long long *v, struct err *err)
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
		return ctl_usage_err(ctx, err, "%s must be a positive integer, "
		    "not '%.40s'", what, s);
	*v = n;
	return 0;
}

/* A job name: anything the daemon may know, but not empty. */
static int
ctl_job_ok(const struct ctl_ctx *ctx, const char *job, struct err *err)
{
	if (*job == '\0')
		return ctl_usage_err(ctx, err, "the job name is empty");
	return 0;
}

/* A date or an hour (YYYY-MM-DD or YYYY-MM-DDTHH): 0, or -1 with the
 * calendar's message. */
static int
ctl_date_ok(const char *s, struct err *err)
{
	int64_t v;

	if (strlen(s) == 13 && s[10] == 'T')
		return cal_parse_hour(s, &v, err);
	return cal_parse_date(s, &v, err);
}

/*
 * Read a dates file (path "-": standard input) into `dates`: one date (or
 * hour) a line, '#' starts a comment, blank lines skipped, each checked;
 * the dates joined by '\n', and in `lines` the file line of each.
 */
static int
ctl_read_dates(const struct ctl_ctx *ctx, const char *path, struct buf *dates,
    struct buf *lines, struct err *err)
{
	FILE *f;
	char *line = NULL, *s, *e;
	size_t cap = 0, lineno = 0, count = 0;
	ssize_t n;
	int rc = 0;

	f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (f == NULL)
		return err_set(err, EXIT_BAD_INPUT, "cannot read %s: %s; check "
		    "the path given to --dates-file", path, strerror(errno));
	errno = 0;
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (memchr(line, '\0', (size_t)n) != NULL) {
			rc = err_set(err, EXIT_BAD_INPUT, "%s:%zu: the line "
			    "holds a NUL byte; is this a text file of dates?",
			    path, lineno);
			break;
		}
		s = line;
		if ((e = strchr(s, '#')) != NULL)
			*e = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strlen(s);
		while (e > s && isspace((unsigned char)e[-1]))
			e--;
		*e = '\0';
		if (*s == '\0')
			continue;
		if (ctl_date_ok(s, err) != 0) {
			err_prefix(err, "%s:%zu", path, lineno);
			rc = -1;
			break;
		}
		if (count++ > 0) {
			buf_add(dates, "\n", 1);
			buf_add(lines, "\n", 1);
		}
		buf_addstr(dates, s);
		buf_printf(lines, "%zu", lineno);
		if (dates->len + lines->len + strlen(path) > PROTO_MAX_BODY - 256) {
			rc = err_set(err, EXIT_BAD_INPUT, "%s is too long (more "
			    "than %u bytes of dates); split it into smaller "
			    "requests", path, PROTO_MAX_BODY);
			break;
		}
	}
	if (rc == 0 && ferror(f))
		rc = err_set(err, EXIT_BAD_INPUT, "cannot read %s: %s; check "
		    "the path given to --dates-file", path,
		    strerror(errno ? errno : EIO));
	if (rc == 0 && count == 0)
		rc = ctl_usage_err(ctx, err, "%s holds no dates: write one "
		    "YYYY-MM-DD a line", path);
	free(line);
	if (f != stdin)
		fclose(f);
	return rc;
}

/* The value given to the current command's option `name` (NULL when it
 * was not given); val[] as in struct ctl_cmd. */
static const char *
ctl_val(const struct ctl_ctx *ctx, const char *const *val, const char *name)
{
	size_t i;

	for (i = 0; ctx->cmd->opts[i].name != NULL; i++) {
		if (strcmp(ctx->cmd->opts[i].name, name) == 0)
			return val[i];
	}
	return NULL;
}

/* report: --html FILE is required. */
static int
ctl_report_check(const struct ctl_ctx *ctx, const char *const *val,
    struct err *err)
{
	ctl_report_path = ctl_val(ctx, val, "html");
	if (ctl_report_path == NULL || ctl_report_path[0] == '\0')
		return ctl_usage_err(ctx, err, "missing --html FILE: say where "
		    "to write the report page");
	return 0;
}

/* Send stdout to a temporary file beside the report's file (its name in
 * tmp); -1 with err. */
static int
ctl_report_open(char *tmp, size_t tmpsz, struct err *err)
{
	int fd;

	snprintf(tmp, tmpsz, "%s.tmp.%ld", ctl_report_path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(err, EXIT_BAD_INPUT, "cannot write %s: %s; check "
		    "the folder of --html", tmp, strerror(errno));
	fflush(stdout);
	if (dup2(fd, STDOUT_FILENO) < 0) {
		close(fd);
		unlink(tmp);
		return err_set(err, EXIT_WORK_FAILED, "cannot write %s: %s", tmp,
		    strerror(errno));
	}
	close(fd);
	return 0;
}

/* The page arrived (st 0): rename it over the report's file; otherwise
 * drop it.  Returns st, or -1 with err. */
static int
ctl_report_close(const char *tmp, int st, struct err *err)
{
	if (st != EXIT_DONE || fflush(stdout) != 0 || ferror(stdout)) {
		unlink(tmp);
		return st == EXIT_DONE ? err_set(err, EXIT_WORK_FAILED,
		    "cannot write %s: %s; check the space left", tmp,
		    strerror(errno)) : st;
	}
	if (rename(tmp, ctl_report_path) < 0) {
		unlink(tmp);
		return err_set(err, EXIT_WORK_FAILED, "cannot rename %s to %s: %s",
		    tmp, ctl_report_path, strerror(errno));
	}
	return st;
}

/* backfill: one way of choosing the dates, valid bounds in order, a known
 * --reprocess, a code version for --built-by, not --dry-run with --wait,
 * not --downstream with --no-downstream nor with an empty name. */
static int
ctl_backfill_check(const struct ctl_ctx *ctx, const char *const *val,
    struct err *err)
{
	const char *from = ctl_val(ctx, val, "from");
	const char *to = ctl_val(ctx, val, "to");
	const char *file = ctl_val(ctx, val, "dates-file");
	const char *reprocess = ctl_val(ctx, val, "reprocess");
	const char *built_by = ctl_val(ctx, val, "built-by");
	const char *down = ctl_val(ctx, val, "downstream");
	bool stale = ctl_val(ctx, val, "stale") != NULL;
	bool dry = ctl_val(ctx, val, "dry-run") != NULL;
	struct part_range r;

	if (from != NULL && to == NULL)
		return ctl_usage_err(ctx, err, "--from without --to: give both "
		    "bounds (inclusive; the same date twice for one day)");
	if (to != NULL && from == NULL)
		return ctl_usage_err(ctx, err, "--to without --from: give both "
		    "bounds (inclusive; the same date twice for one day)");
	if (from != NULL && file != NULL)
		return ctl_usage_err(ctx, err, "--from/--to and --dates-file "
		    "both given: choose the dates one way");
	if (from == NULL && file == NULL && !stale && built_by == NULL)
		return ctl_usage_err(ctx, err, "no dates given: add --from D "
		    "--to D, --dates-file F, --stale or --built-by VERSION");
	if (from != NULL && ctl_date_ok(from, err) != 0) {
		err_prefix(err, "--from");
		return -1;
	}
	if (to != NULL && ctl_date_ok(to, err) != 0) {
		err_prefix(err, "--to");
		return -1;
	}
	/* Hour grain takes both forms of bound; it checks the order. */
	if (from != NULL && range_parse(GRAIN_HOUR, from, to, &r, err) != 0)
		return -1;
	if (reprocess != NULL && strcmp(reprocess, "all") != 0 &&
	    strcmp(reprocess, "failed") != 0 &&
	    strcmp(reprocess, "missing") != 0)
		return ctl_usage_err(ctx, err, "--reprocess must be all, failed "
		    "or missing, not '%.40s'", reprocess);
	if (built_by != NULL && *built_by == '\0')
		return ctl_usage_err(ctx, err, "--built-by needs a code "
		    "version (the code_version of 'backfillctl runs')");
	if (dry && ctx->wait)
		return ctl_usage_err(ctx, err, "--dry-run enqueues nothing, so "
		    "there is nothing to --wait for: drop one of them");
	if (down != NULL && ctl_val(ctx, val, "no-downstream") != NULL)
		return ctl_usage_err(ctx, err, "--downstream and "
		    "--no-downstream both given: choose one");
	if (down != NULL && (*down == '\0' || *down == ',' ||
	    down[strlen(down) - 1] == ',' || strstr(down, ",,") != NULL))
		return ctl_usage_err(ctx, err, "--downstream '%.60s' has an "
		    "empty job name: give job names separated by commas",
		    down);
	return 0;
}

/* runs: --state is one of the run states. */
static int
ctl_runs_check(const struct ctl_ctx *ctx, const char *const *val,
    struct err *err)
{
	static const char *const states[] = {
		"queued", "running", "succeeded", "failed", "blocked",
		"cancelled"
	};
	const char *state = ctl_val(ctx, val, "state"), *hit;
	size_t i;

	if (state == NULL)
		return 0;
	for (i = 0; i < sizeof states / sizeof states[0]; i++) {
		if (strcmp(state, states[i]) == 0)
			return 0;
	}
	hit = suggest_closest(state, states, sizeof states / sizeof states[0]);
	if (hit != NULL)
		return ctl_usage_err(ctx, err, "unknown state '%.40s' (did you "
		    "mean '%s'?)", state, hit);
	return ctl_usage_err(ctx, err, "unknown state '%.40s': states are "
	    "queued, running, succeeded, failed, blocked and cancelled", state);
}

/* Check one argument s by its kind (what: its name in messages); an
 * integer is left in *n. */
static int
ctl_arg_check(const struct ctl_ctx *ctx, const struct ctl_arg *arg,
    const char *what, const char *s, long long *n, struct err *err)
{
	switch (arg->kind) {
	case CTL_JOB:
		return ctl_job_ok(ctx, s, err);
	case CTL_INT:
		return ctl_posint(ctx, what, s, n, err);
	case CTL_DATE:
		return ctl_date_ok(s, err);
	default:
		return 0;
	}
}

/* Add one checked argument (s, or n for an integer) to the request. */
static int
ctl_arg_add(const struct ctl_ctx *ctx, const struct ctl_arg *arg,
    const char *s, long long n, struct buf *req, struct err *err)
{
	struct buf dates, lines;

	if (arg->field == NULL)
		return 0;
	switch (arg->kind) {
	case CTL_FLAG:
		proto_add(req, arg->field, "1");
		return 0;
	case CTL_INT:
		proto_add_int(req, arg->field, n);
		return 0;
	case CTL_DATES_FILE:
		buf_init(&dates);
		buf_init(&lines);
		if (ctl_read_dates(ctx, s, &dates, &lines, err) != 0) {
			buf_free(&dates);
			buf_free(&lines);
			return -1;
		}
		proto_add(req, arg->field, dates.data);
		buf_free(&dates);
		/* so that the daemon's errors say FILE:LINE */
		proto_add(req, "dates_file", strcmp(s, "-") == 0 ? "stdin" : s);
		proto_add(req, "dates_lines", lines.data);
		buf_free(&lines);
		return 0;
	default:
		proto_add(req, arg->field, s);
		return 0;
	}
}

/*
 * Parse the current command's arguments (argv[0] is its name) by its
 * tables into req: walk the options, then check the positionals, each
 * option given (or required), the command's own rules, and only then add
 * the fields, positionals first, then options in the table's order (a
 * dates file is read there).  0, or -1 with err.
 */
static int
ctl_parse(struct ctl_ctx *ctx, int argc, char **argv, struct buf *req,
    struct err *err)
{
	static const struct option common[] = {
		CTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 }
	};
	const struct ctl_cmd *cmd = ctx->cmd;
	struct option longopts[CTL_MAX_OPTS + sizeof common / sizeof common[0]];
	const char *val[CTL_MAX_OPTS] = { NULL };
	long long num[CTL_MAX_OPTS] = { 0 }, posnum[CTL_MAX_POS] = { 0 };
	char what[64];
	struct ctl_args a;
	int c, i, nopts, npos;

	for (nopts = 0; cmd->opts[nopts].name != NULL; nopts++) {
		if (nopts == CTL_MAX_OPTS)
			return err_set(err, EXIT_INTERNAL, "backfillctl %s has "
			    "more than %d options", cmd->name, CTL_MAX_OPTS);
		longopts[nopts].name = cmd->opts[nopts].name;
		longopts[nopts].has_arg = cmd->opts[nopts].kind == CTL_FLAG ||
		    cmd->opts[nopts].kind == CTL_WAIT ? no_argument :
		    required_argument;
		longopts[nopts].flag = NULL;
		longopts[nopts].val = OPT_CMD + nopts;
	}
	memcpy(longopts + nopts, common, sizeof common);
	for (npos = 0; cmd->pos[npos].name != NULL; npos++)
		;

	ctl_args_init(&a, argc, argv, longopts);
	while ((c = ctl_next(ctx, &a, err)) >= 0) {
		i = c - OPT_CMD;
		if (i < 0 || i >= nopts)
			continue;
		if (cmd->opts[i].kind == CTL_WAIT)
			ctx->wait = true;
		val[i] = longopts[i].has_arg == no_argument ? "1" : optarg;
	}
	if (c == -2)
		return -1;
	if (ctx->help)
		return 0;
	if (ctl_args_check(ctx, &a, cmd->minpos, npos, cmd->pos, err) != 0)
		return -1;
	for (i = 0; i < a.npos; i++) {
		if (ctl_arg_check(ctx, &cmd->pos[i], cmd->pos[i].name, a.pos[i],
		    &posnum[i], err) != 0)
			return -1;
	}
	for (i = 0; i < nopts; i++) {
		if (val[i] == NULL && cmd->opts[i].missing != NULL)
			return ctl_usage_err(ctx, err, "%s",
			    cmd->opts[i].missing);
		snprintf(what, sizeof what, "--%s", cmd->opts[i].name);
		if (val[i] != NULL && ctl_arg_check(ctx, &cmd->opts[i], what,
		    val[i], &num[i], err) != 0)
			return -1;
	}
	if (cmd->check != NULL && cmd->check(ctx, val, err) != 0)
		return -1;
	for (i = 0; i < a.npos; i++) {
		if (ctl_arg_add(ctx, &cmd->pos[i], a.pos[i], posnum[i], req,
		    err) != 0)
			return -1;
	}
	for (i = 0; i < nopts; i++) {
		if (val[i] != NULL && ctl_arg_add(ctx, &cmd->opts[i], val[i],
		    num[i], req, err) != 0)
			return -1;
	}
	return 0;
}

/* The command called name, or NULL. */
static const struct ctl_cmd *
ctl_find(const char *name)
{
	size_t i;

	for (i = 0; i < CTL_NCMDS; i++) {
		if (strcmp(ctl_cmds[i].name, name) == 0)
			return &ctl_cmds[i];
	}
	return NULL;
}

/* The message for an unknown command, with the closest one if any (or
 * the commands it begins, when there are several). */
static int
ctl_unknown_cmd(const char *name, struct err *err)
{
	const char *names[CTL_NCMDS], *hit;
	char several[256] = "";
	size_t i, n = 0;

	for (i = 0; i < CTL_NCMDS; i++) {
		names[i] = ctl_cmds[i].name;
		if (*name != '\0' &&
		    strncmp(names[i], name, strlen(name)) == 0) {
			snprintf(several + strlen(several),
			    sizeof several - strlen(several), "%s'%s'",
			    n++ > 0 ? " or " : "", names[i]);
		}
	}
	if (n > 1)
		return err_set(err, EXIT_BAD_INPUT, "unknown command '%.40s'; "
		    "did you mean %s? (see 'backfillctl --help')", name,
		    several);
	hit = suggest_closest(name, names, CTL_NCMDS);
	if (hit != NULL)
		return err_set(err, EXIT_BAD_INPUT, "unknown command '%.40s'; "
		    "did you mean '%s'? (see 'backfillctl --help')", name, hit);
	return err_set(err, EXIT_BAD_INPUT, "unknown command '%.40s'; see "
	    "'backfillctl --help' for the commands", name);
}

/* Print the program's usage to f. */
static void
ctl_usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: backfillctl [--socket PATH | --config FILE] "
	    "COMMAND [ARGS]\n"
	    "       backfillctl --help | --version\n\ncommands:\n");
	for (i = 0; i < CTL_NCMDS; i++)
		fprintf(f, "  %s\n", ctl_cmds[i].usage);
	fprintf(f, "\n'backfillctl COMMAND --help' describes a command.\n"
	    "The socket is --socket PATH, else the socket of --config FILE,\n"
	    "else $BACKFILLD_SOCKET, else " CTL_DEFAULT_SOCKET ".\n"
	    "Exit status: 0 done, 1 the work failed, 2 bad usage or a refused "
	    "request,\n3 the daemon could not be reached.\n");
}

/* Print a command's usage to stdout. */
static void
ctl_cmd_usage(const struct ctl_cmd *cmd)
{
	printf("usage: backfillctl %s\n%s%s", cmd->usage, cmd->help,
	    CTL_COMMON_HELP);
}

/* Decide the socket path: --socket, else --config's socket, else
 * $BACKFILLD_SOCKET, else the default. */
static int
ctl_socket_path(struct ctl_ctx *ctx, struct err *err)
{
	struct config *cfg;
	const char *env;

	if (ctx->socket != NULL) {
		ctx->path = strdup(ctx->socket);
	} else if (ctx->config != NULL) {
		if (config_load(ctx->config, &cfg, err) != 0) {
			err->code = EXIT_BAD_INPUT;
			return -1;
		}
		ctx->path = strdup(cfg->socket != NULL ? cfg->socket :
		    CTL_DEFAULT_SOCKET);
		config_unref(cfg);
	} else if ((env = getenv("BACKFILLD_SOCKET")) != NULL && *env != '\0') {
		ctx->path = strdup(env);
	} else {
		ctx->path = strdup(CTL_DEFAULT_SOCKET);
	}
	if (ctx->path == NULL)
		return err_set(err, EXIT_INTERNAL, "out of memory");
	return 0;
}

/* Connect to the daemon's socket: the fd, or -1 with err (exit 3, or 2
 * for a path that cannot be a socket path). */
static int
ctl_connect(const char *path, struct err *err)
{
	struct sockaddr_un addr;
	int fd, e;

	memset(&addr, 0, sizeof addr);
	addr.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof addr.sun_path)
		return err_set(err, EXIT_BAD_INPUT, "socket path %s is too long "
		    "(at most %zu bytes); use a shorter --socket path", path,
		    sizeof addr.sun_path - 1);
	memcpy(addr.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_set(err, EXIT_UNREACHABLE, "cannot create a socket: "
		    "%s; check the system's limits", strerror(errno));
	while (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
		if (errno == EINTR)
			continue;
		e = errno;
		close(fd);
		if (e == ENOENT || e == ECONNREFUSED)
			return err_set(err, EXIT_UNREACHABLE, "cannot reach "
			    "backfilld at %s: %s; is the daemon running? "
			    "(systemctl status backfilld)", path, strerror(e));
		if (e == EACCES || e == EPERM)
			return err_set(err, EXIT_UNREACHABLE, "permission "
			    "denied on %s: ask to be added to the socket's "
			    "group, or use sudo", path);
		return err_set(err, EXIT_UNREACHABLE, "cannot reach backfilld "
		    "at %s: %s; check the socket path (--socket or --config)",
		    path, strerror(e));
	}
	return fd;
}

/* Send a whole frame; -1 with err (exit 3) when the daemon is gone. */
static int
ctl_send(int fd, const char *path, const struct buf *frame, struct err *err)
{
	size_t off = 0;
	ssize_t n;

	while (off < frame->len) {
		n = send(fd, frame->data + off, frame->len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_set(err, EXIT_UNREACHABLE, "backfilld at %s "
			    "closed the connection before taking the request "
			    "(%s); check its log (journalctl -u backfilld)",
			    path, strerror(errno));
		off += (size_t)n;
	}
	return 0;
}

/*
 * Read the next frame into msg, keeping bytes of later frames in `in`.
 * -1 with err (exit 3) when the daemon closes the connection first or
 * sends something that is not a frame.
 */
static int
ctl_recv(int fd, const char *path, struct buf *in, struct proto_msg *msg,
    struct err *err)
{
	char chunk[65536];
	size_t used;
	ssize_t n;
	int rc;

	for (;;) {
		rc = proto_parse(in->data != NULL ? in->data : "", in->len,
		    &used, msg, err);
		if (rc == 1) {
			memmove(in->data, in->data + used, in->len - used);
			in->len -= used;
			return 0;
		}
		if (rc == -1) {
			err_prefix(err, "invalid answer from backfilld at %s",
			    path);
			err->code = EXIT_UNREACHABLE;
			return -1;
		}
		n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_set(err, EXIT_UNREACHABLE, "lost the "
			    "connection to backfilld at %s: %s; check its log "
			    "(journalctl -u backfilld)", path, strerror(errno));
		if (n == 0 && in->len > 0)
			return err_set(err, EXIT_UNREACHABLE, "backfilld at %s "
			    "closed the connection in the middle of an answer; "
			    "check its log (journalctl -u backfilld)", path);
		if (n == 0)
			return err_set(err, EXIT_UNREACHABLE, "backfilld at %s "
			    "closed the connection without answering; check "
			    "its log (journalctl -u backfilld)", path);
		buf_add(in, chunk, (size_t)n);
	}
}

/* The response's status as our exit code; -1 with err when it has none. */
static int
ctl_status(const struct proto_msg *msg, const char *path, struct err *err)
{
	long long st;

	if (proto_get_int(msg, "status", &st) != 0 || st < 0 ||
	    st > EXIT_INTERNAL)
		return err_set(err, EXIT_UNREACHABLE, "invalid answer from "
		    "backfilld at %s: no valid status; use backfillctl and "
		    "backfilld from the same release", path);
	return st == EXIT_INTERNAL ? EXIT_WORK_FAILED : (int)st;
}

/* Write a DATA frame's out to stdout now; 0, or the errno of a failed
 * write (EPIPE: its reader, such as head, went away). */
static int
ctl_data(const struct proto_msg *msg)
{
	size_t i;

	for (i = 0; i < msg->nfields; i++) {
		if (strcmp(msg->fields[i].key, "out") != 0)
			continue;
		if (fwrite(msg->fields[i].value, 1, msg->fields[i].value_len,
		    stdout) != msg->fields[i].value_len || fflush(stdout) != 0)
			return errno ? errno : EIO;
	}
	return 0;
}

/* Print a response's out (stdout, as is) and err (stderr, one line). */
static void
ctl_print(const struct proto_msg *msg)
{
	const char *out = proto_get(msg, "out");
	const char *e = proto_get(msg, "err");
	size_t len;

	if (out != NULL && *out != '\0') {
		fputs(out, stdout);
		fflush(stdout);
	}
	if (e != NULL && *e != '\0') {
		len = strlen(e);
		fprintf(stderr, "backfillctl: %s%s", e,
		    e[len - 1] == '\n' ? "" : "\n");
	}
}

/* A counter of a PROGRESS frame (0 when absent or malformed: progress is
 * only shown, never acted upon). */
static long long
ctl_count(const struct proto_msg *msg, const char *key)
{
	long long v;

	return proto_get_int(msg, key, &v) == 0 && v >= 0 ? v : 0;
}

/* Format seconds as M:SS or H:MM:SS. */
static void
ctl_format_eta(long long s, char *buf, size_t len)
{
	if (s >= 3600)
		snprintf(buf, len, "%lld:%02lld:%02lld", s / 3600,
		    s / 60 % 60, s % 60);
	else
		snprintf(buf, len, "%lld:%02lld", s / 60, s % 60);
}

/* Redraw the progress line on stderr (a terminal) from a PROGRESS frame. */
static void
ctl_progress(const struct proto_msg *msg, long long request)
{
	long long total = ctl_count(msg, "total"), done = ctl_count(msg, "done");
	long long elapsed = ctl_count(msg, "elapsed_ms");
	char line[256], eta[32];
	struct winsize ws;
	size_t width = sizeof line - 1;

	if (done > 0 && done <= total) {
		double left = (double)elapsed * (double)(total - done) /
		    (double)done / 1000.0;
		ctl_format_eta(left > 1e9 ? 999999999LL : (long long)(left +
		    0.5), eta, sizeof eta);
	} else {
		snprintf(eta, sizeof eta, "--");
	}
	snprintf(line, sizeof line, "request %lld: %lld/%lld done, %lld "
	    "failed, %lld blocked, %lld running, ETA %s", request, done, total,
	    ctl_count(msg, "failed"), ctl_count(msg, "blocked"),
	    ctl_count(msg, "running"), eta);
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 &&
	    (size_t)ws.ws_col - 1 < width)
		width = (size_t)ws.ws_col - 1;
	if (strlen(line) > width)
		line[width] = '\0';
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
}

/* Writing to stdout failed with errno e: stop reading the answer.  main()
 * then exits 0 without a message when its reader closed it (EPIPE), or
 * says what failed and exits 1. */
static int
ctl_closed_stdout(bool drawn, int e)
{
	if (drawn)
		fputs("\r\033[K", stderr);
	ctl_stdout_errno = e;
	return EXIT_DONE;
}

/*
 * The --wait part: ask for `request`'s progress on the same connection,
 * show PROGRESS frames when stderr is a terminal, and return the final
 * RESPONSE's status (or -1 with err).
 */
static int
ctl_wait(int fd, const char *path, struct buf *in, long long request,
    struct err *err)
{
	bool tty = isatty(STDERR_FILENO), drawn = false;
	struct proto_msg msg;
	struct buf req;
	int rc;

	buf_init(&req);
	proto_begin(&req, PROTO_REQUEST);
	proto_add(&req, "cmd", "wait");
	proto_add_int(&req, "request", request);
	if (isatty(STDOUT_FILENO))
		proto_add(&req, "tty", "1");
	proto_end(&req);
	rc = ctl_send(fd, path, &req, err);
	buf_free(&req);
	if (rc != 0)
		return -1;
	for (;;) {
		if (ctl_recv(fd, path, in, &msg, err) != 0) {
			if (drawn)
				fputs("\r\033[K", stderr);
			return -1;
		}
		if (msg.type == PROTO_DATA) {
			rc = ctl_data(&msg);
			proto_msg_free(&msg);
			if (rc != 0)
				return ctl_closed_stdout(drawn, rc);
			continue;
		}
		if (msg.type == PROTO_PROGRESS) {
			if (tty) {
				ctl_progress(&msg, request);
				drawn = true;
			}
			proto_msg_free(&msg);
			continue;
		}
		if (drawn) {
			fputs("\r\033[K", stderr);
			fflush(stderr);
		}
		if (msg.type != PROTO_RESPONSE) {
			proto_msg_free(&msg);
			return err_set(err, EXIT_UNREACHABLE, "invalid answer "
			    "from backfilld at %s: a request frame; use "
			    "backfillctl and backfilld from the same release",
			    path);
		}
		rc = ctl_status(&msg, path, err);
		if (rc >= 0)
			ctl_print(&msg);
		proto_msg_free(&msg);
		return rc;
	}
}

/* Connect, send the request, print the answer (and wait if asked); the
 * exit status, or -1 with err. */
static int
ctl_run(struct ctl_ctx *ctx, const struct buf *req, struct err *err)
{
	struct proto_msg msg;
	struct err rerr;
	struct buf in;
	long long request;
	int fd, rc, st;

	fd = ctl_connect(ctx->path, err);
	if (fd < 0)
		return -1;
	buf_init(&in);
	/* A send failure may come with an answer saying why: read it. */
	rc = ctl_send(fd, ctx->path, req, err);
	for (;;) {
		if (ctl_recv(fd, ctx->path, &in, &msg, &rerr) != 0) {
			if (rc == 0)
				*err = rerr;
			st = -1;
			goto out;
		}
		if (msg.type == PROTO_RESPONSE)
			break;
		if (msg.type == PROTO_DATA) {
			int closed = ctl_data(&msg);

			proto_msg_free(&msg);
			if (closed) {
				st = ctl_closed_stdout(false, closed);
				goto out;
			}
			continue;
		}
		if (msg.type == PROTO_REQUEST) {
			proto_msg_free(&msg);
			st = err_set(err, EXIT_UNREACHABLE, "invalid answer "
			    "from backfilld at %s: a request frame; use "
			    "backfillctl and backfilld from the same release",
			    ctx->path);
			goto out;
		}
		proto_msg_free(&msg); /* PROGRESS before the RESPONSE */
	}
	st = ctl_status(&msg, ctx->path, err);
	if (st < 0) {
		proto_msg_free(&msg);
		goto out;
	}
	ctl_print(&msg);
	if (ctx->wait && st == EXIT_DONE &&
	    proto_get_int(&msg, "request", &request) == 0) {
		proto_msg_free(&msg);
		st = ctl_wait(fd, ctx->path, &in, request, err);
		goto out;
	}
	proto_msg_free(&msg);
out:
	buf_free(&in);
	close(fd);
	return st;
}

/* backfillctl [--socket PATH | --config FILE] COMMAND [ARGS] */
int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "version", no_argument, NULL, OPT_VERSION },
		CTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct ctl_ctx ctx;
	struct ctl_args a;
	struct err err;
	struct buf req;
	char tmp[PATH_MAX + 32];
	int c, st;

	signal(SIGPIPE, SIG_IGN);
	memset(&ctx, 0, sizeof ctx);
	err_clear(&err);
	buf_init(&req);

	/* Global options stop at the command name. */
	ctl_args_init(&a, argc, argv, opts);
	a.first_only = true;
	while ((c = ctl_next(&ctx, &a, &err)) >= 0) {
		if (c == OPT_VERSION) {
			printf("backfillctl %s\n", BACKFILLD_VERSION);
			return EXIT_DONE;
		}
	}
	if (c == -2)
		goto fail;
	if (a.npos == 0) {
		if (ctx.help) {
			ctl_usage(stdout);
			return EXIT_DONE;
		}
		err_set(&err, EXIT_BAD_INPUT, "no command given; see "
		    "'backfillctl --help' for the commands");
		goto fail;
	}
	ctx.cmd = ctl_find(a.pos[0]);
	if (ctx.cmd == NULL) {
		ctl_unknown_cmd(a.pos[0], &err);
		goto fail;
	}

	/* The command's own options, from its name on. */
	c = optind;
	proto_begin(&req, PROTO_REQUEST);
	proto_add(&req, "cmd", ctx.cmd->name);
	if (ctl_parse(&ctx, argc - c, argv + c, &req, &err) != 0)
		goto fail;
	if (ctx.help) {
		ctl_cmd_usage(ctx.cmd);
		buf_free(&req);
		return EXIT_DONE;
	}
	if (isatty(STDOUT_FILENO))
		proto_add(&req, "tty", "1");
	proto_end(&req);
	if (req.len - PROTO_HEADER > PROTO_MAX_BODY) {
		err_set(&err, EXIT_BAD_INPUT, "the request is too large (%zu "
		    "bytes, at most %u); split it into smaller ones",
		    req.len - PROTO_HEADER, PROTO_MAX_BODY);
		goto fail;
	}
	if (ctl_socket_path(&ctx, &err) != 0)
		goto fail;
	if (ctl_report_path != NULL && ctl_report_open(tmp, sizeof tmp, &err) < 0)
		goto fail;
	st = ctl_run(&ctx, &req, &err);
	if (ctl_report_path != NULL)
		st = ctl_report_close(tmp, st, &err);
	if (st < 0)
		goto fail;
	buf_free(&req);
	free(ctx.path);
	if (fflush(stdout) != 0 || ferror(stdout) || ctl_stdout_errno) {
		if (ctl_stdout_errno == 0)
			ctl_stdout_errno = errno;
		if (ctl_stdout_errno == EPIPE)
			return st; /* its reader went away: quietly */
		fprintf(stderr, "backfillctl: cannot write the output: "
		    "%s; check where standard output goes\n",
		    strerror(ctl_stdout_errno));
		return st == EXIT_DONE ? EXIT_WORK_FAILED : st;
	}
	return st;

fail:
	buf_free(&req);
	free(ctx.path);
	fprintf(stderr, "backfillctl: %s\n", err.msg);
	return err.code == EXIT_INTERNAL ? EXIT_WORK_FAILED : err.code;
}
