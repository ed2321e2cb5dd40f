/*
 * cmdspec.h - the one specification of backfillctl's commands (pure).
 *
 * Both programs read their commands from this table: backfillctl builds
 * its usage, its help and its getopt options from it and checks argv
 * with it (ctl.c); the daemon parses every REQUEST's fields with it
 * again, never trusting the client, into a typed request (struct
 * cmdspec_req, as tmux's args_parse fills a struct args) that is all a
 * command's handler sees (cmd.c, one cmd_*.c per command).  A rule and
 * its message are written once, here, so the two sides cannot drift.
 *
 * Each argument names the member of struct cmdspec_req its value goes
 * to (`off`); the member's type follows from its kind, so one table
 * says a field's name, its check and where its value lives.
 *
 * A command has options (--name, a request field each) and positionals
 * (JOB, PARTITION, REQUEST: a field each too); each argument has a kind
 * that says how its value is checked.  Rules across arguments (exclusive
 * options, pairs) are a command's check function, run on the values.  What needs the
 * configuration (whether a job exists, its grain, bounds and
 * max_backfill) is the daemon's handler's business, not this file's.
 *
 * Messages say what was wrong and what to do; backfillctl adds "; see
 * 'backfillctl COMMAND --help'" to them.
 */
#ifndef BACKFILLD_CMDSPEC_H
#define BACKFILLD_CMDSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* How an argument's value is checked and sent. */
enum cmdspec_kind {
	CMDSPEC_FLAG,       /* takes no value; the field is "1" when given */
	CMDSPEC_TEXT,       /* any text, sent as typed */
	CMDSPEC_JOB,        /* a job name, not empty */
	CMDSPEC_INT,        /* a positive decimal integer */
	CMDSPEC_DATE,       /* a date or an hour: YYYY-MM-DD, YYYY-MM-DDTHH */
	CMDSPEC_ENUM,       /* one of the argument's values */
	CMDSPEC_LIST,       /* names separated by commas, none empty */
	CMDSPEC_DATES_FILE, /* a file the client reads and sends as its dates */
	CMDSPEC_DURATION,   /* a positive duration: 30s, 15m, 2h, 1d */
	CMDSPEC_WAIT        /* the client waits for the request: no field */
};

/* An argument's flags. */
#define CMDSPEC_ARG_CLIENT 0x1 /* the client's alone: the daemon ignores it */

/*
 * An option of a command (name: its long name, without "--") or a
 * positional argument (name: what messages call it, e.g. JOB).  A
 * required one has `missing`: what to say, after "missing ", when it is
 * absent.  `off` is where cmdspec_parse() puts its value in a struct
 * cmdspec_req (CMDSPEC_REQ_OFF), of the member type its kind says
 * (struct cmdspec_req below).  Lists end with a NULL name.
 */
struct cmdspec_arg {
	const char *name;
	enum cmdspec_kind kind;
	const char *field;         /* the request field, or NULL */
	const char *missing;       /* required: the message when absent */
	const char *const *values; /* CMDSPEC_ENUM: NULL-terminated */
	int flags;                 /* CMDSPEC_ARG_* */
	size_t off;                /* its member in struct cmdspec_req */
};

/*
 * Typed values, one member type per kind (cmdspec_parse):
 *   CMDSPEC_FLAG      bool: given as "1"
 *   CMDSPEC_TEXT, CMDSPEC_JOB   const char *: NULL when absent
 *   CMDSPEC_INT       long long: 0 when absent (a given one is positive)
 *   CMDSPEC_DURATION  long long: its seconds, 0 when absent
 *   CMDSPEC_DATE      struct cmdspec_date
 *   CMDSPEC_ENUM      struct cmdspec_enum
 *   CMDSPEC_LIST      struct cmdspec_list
 *   CMDSPEC_DATES_FILE struct cmdspec_dates
 * Strings point into the source (the REQUEST's body, argv) unless the
 * request is a copy (cmdspec_req_dup), which owns them.
 */
struct cmdspec_date {
	const char *text; /* as sent, NULL when absent */
	int64_t v;        /* its day (cal_parse_date) or hour number */
	bool hour;        /* YYYY-MM-DDTHH */
};
struct cmdspec_enum {
	const char *name; /* NULL when absent */
	int i;            /* its index in the argument's values */
};
struct cmdspec_list {
	const char *text; /* as sent ("a,b"), NULL when absent */
	size_t n;
	char **v;         /* its n names (owned by the request) */
};
struct cmdspec_dates {
	const char *text;  /* the dates, '\n' between them (the client:
			    * the file's path); NULL when absent */
	const char *file;  /* the file's name for messages ("stdin") */
	const char *lines; /* the file line of each date */
};

/* The values of each command, one struct per shape (the union of struct
 * cmdspec_req says which command uses which). */
struct cmdreq_backfill { /* backfill, rerun */
	const char *job;
	struct cmdspec_date partition; /* rerun */
	struct cmdspec_date from, to;
	struct cmdspec_dates dates;
	struct cmdspec_enum reprocess;
	const char *built_by, *reason;
	struct cmdspec_list downstream;
	long long concurrency, budget;
	bool changed, reverse, no_downstream, fail_fast, no_cutoff, stale,
	    dry_run, verify, json;
};
struct cmdreq_part { /* verify, logs */
	const char *job;
	struct cmdspec_date partition;
	long long attempt;
	bool json, follow, raw;
};
struct cmdreq_show { /* status, stale, jobs */
	const char *job;
	bool json;
};
struct cmdreq_runs {
	const char *job;
	long long request, limit;
	struct cmdspec_enum state;
	bool json, jsonl;
};
struct cmdreq_request { /* audit, cancel, retry, wait */
	long long request;
	bool json;
};
struct cmdreq_reload {
	bool dry_run, json;
};
struct cmdreq_map {
	const char *job, *from, *to;
	bool json;
};
struct cmdreq_mark {
	const char *job, *reason;
	struct cmdspec_list partitions;
	bool succeeded, no_downstream;
};
struct cmdreq_client { /* report, completion: backfillctl's */
	const char *html;
	struct cmdspec_enum shell;
};

struct cmdspec;
/* A request parsed by its command's specification: what a handler
 * receives (cmd_entry.h), never the raw fields. */
struct cmdspec_req {
	const struct cmdspec *cs;
	bool tty;   /* the client's standard output is a terminal */
	bool owned; /* a copy: its strings are its own */
	union {
		struct cmdreq_backfill backfill;
		struct cmdreq_part part;
		struct cmdreq_show show;
		struct cmdreq_runs runs;
		struct cmdreq_request request;
		struct cmdreq_reload reload;
		struct cmdreq_map map;
		struct cmdreq_mark mark;
		struct cmdreq_client client;
	};
};
/* An argument's `off`: CMDSPEC_REQ_OFF(backfill.from). */
#define CMDSPEC_REQ_OFF(member) offsetof(struct cmdspec_req, member)

/* A command's flags. */
#define CMDSPEC_MUTATES 0x1 /* changes state: needs the socket's group
			     * (not with dry_run=1) */
#define CMDSPEC_STREAMS 0x2 /* always answers with DATA frames */
#define CMDSPEC_CONTROL 0x4 /* answered by the control socket itself
			     * (wait: PROGRESS frames), not by a cmd_entry */
#define CMDSPEC_CLIENT 0x8  /* answered by backfillctl alone, never sent
			     * (completion); the daemon has no entry */
#define CMDSPEC_MANY 0x10   /* the last positional repeats: backfillctl
			     * sends its values joined by commas (its kind
			     * is CMDSPEC_LIST) */
#define CMDSPEC_LOCAL 0x20  /* several hosts: a node answers it itself,
			     * never forwarded to the planner (runs reads
			     * the shared store, reload this node's
			     * configuration, logs its log folder) */

/* Where a check reads the values: the value of request field `field`,
 * or NULL when absent (proto_get for the daemon, argv for the client). */
typedef const char *cmdspec_get_fn(const void *src, const char *field);

/* A command's rules across its arguments, on its parsed values: 0, or
 * -1 with err. */
typedef int cmdspec_check_fn(const struct cmdspec_req *rq, struct err *err);

struct cmdspec {
	const char *name;
	const char *usage;          /* the synopsis, after "backfillctl " */
	const char *help;           /* what it does, and its options */
	int flags;                  /* CMDSPEC_MUTATES, CMDSPEC_STREAMS, ... */
	const struct cmdspec_arg *opts;
	const struct cmdspec_arg *pos;
	int minpos;                 /* the first minpos positionals are
				     * required */
	cmdspec_check_fn *check;    /* or NULL */
	/* request fields a client may send that are no option of the
	 * command line (no --name: not in usage, help or completion), or
	 * NULL */
	const struct cmdspec_arg *fields;
};

/* Options of one command, at most (backfillctl's getopt table). */
#define CMDSPEC_MAX_OPTS 32

/* The help of the options every command takes (backfillctl's own:
 * --socket, --config, --help), after a command's own. */
#define CMDSPEC_COMMON_HELP \
	"  --socket PATH        the daemon's socket\n" \
	"  --config FILE        read the socket path from this configuration\n" \
	"  -h, --help           this text\n"

/* Each command, and all of them in the order of backfillctl --help. */
extern const struct cmdspec cmdspec_backfill, cmdspec_rerun, cmdspec_verify,
    cmdspec_status, cmdspec_runs, cmdspec_stale, cmdspec_audit,
    cmdspec_pause, cmdspec_resume, cmdspec_cancel, cmdspec_retry,
    cmdspec_reload, cmdspec_jobs, cmdspec_map, cmdspec_report,
    cmdspec_wait, cmdspec_completion, cmdspec_mark, cmdspec_logs;
extern const struct cmdspec *const cmdspec_table[];
extern const size_t cmdspec_count;

/* The command called name, or NULL. */
const struct cmdspec *cmdspec_find(const char *name);
/* Whether the command called name (NULL: none) is one with flag. */
bool cmdspec_is(const char *name, int flag);
/* Its number of options, and of positionals. */
int cmdspec_nopts(const struct cmdspec *cs);
int cmdspec_npos(const struct cmdspec *cs);

/*
 * Parse a request by its command's specification, once: each argument
 * given is checked by its kind (in the order positionals, then options)
 * and its value put in *rq, each required one must be present, then the
 * command's rules are checked on the values.  With `client` false,
 * arguments marked CMDSPEC_ARG_CLIENT and CMDSPEC_WAIT are skipped.  0,
 * or -1 with err (EXIT_BAD_INPUT); either way *rq is to be released with
 * cmdspec_req_free (its lists are allocated).
 */
int cmdspec_parse(const struct cmdspec *cs, cmdspec_get_fn *get,
		  const void *src, bool client, struct cmdspec_req *rq,
		  struct err *err);
/* Release what a parsed request or a copy holds. */
void cmdspec_req_free(struct cmdspec_req *rq);
/* A copy of rq that owns its strings (kept past its source's life: a
 * backfill waiting for its proof, verify.c). */
void cmdspec_req_dup(const struct cmdspec_req *rq, struct cmdspec_req *out);
/* Check a request's values as cmdspec_parse does, keeping nothing. */
int cmdspec_check(const struct cmdspec *cs, cmdspec_get_fn *get,
		  const void *src, bool client, struct err *err);
/* Check one value s of argument a (what: its name in messages, "--from"
 * or "JOB"); an integer is left in *n when n is not NULL.  0, or -1. */
int cmdspec_check_value(const struct cmdspec_arg *a, const char *what,
			const char *s, long long *n, struct err *err);
/* A positive duration (30s, 15m, 2h, 1d) into *seconds (may be NULL):
 * 0, or -1 with a message naming what (--budget). */
int cmdspec_duration(const char *what, const char *s, long long *seconds,
		     struct err *err);
/* A date or an hour (YYYY-MM-DD or YYYY-MM-DDTHH): 0, or -1 with the
 * calendar's message. */
int cmdspec_date_ok(const char *s, struct err *err);

/* --reprocess: which partitions of the range a backfill runs again. */
enum reprocess { REPROCESS_ALL, REPROCESS_FAILED, REPROCESS_MISSING };
extern const char *const cmdspec_reprocess_names[]; /* by enum, NULL-ended */
/* NULL (not given) is all.  0, or -1 when s is not one of the names. */
int cmdspec_reprocess_parse(const char *s, enum reprocess *out);
const char *cmdspec_reprocess_name(enum reprocess r);


#endif
