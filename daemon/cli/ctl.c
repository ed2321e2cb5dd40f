/*
 * ctl.c - backfillctl, the operator's client.
 *
 * A thin client in the manner of tmux's: the commands, their arguments
 * and the checks of their values are the specification shared with the
 * daemon (cmdspec.h); backfillctl builds its usage and getopt options
 * from it, checks argv with it, turns the arguments into the fields of
 * one REQUEST frame (docs/protocol.md) and leaves everything else to the
 * daemon, which checks the fields again by the same specification.  Each DATA
 * frame's `out` goes to stdout as it arrives (fwrite and fflush per frame:
 * memory stays bounded by one frame however long the answer), then the
 * RESPONSE's `out`; the daemon renders tables and JSON.  Its `err` goes to
 * stderr after "backfillctl: ", and its `status` is our exit status.
 * When stdout is closed early (`backfillctl runs --json | head`), the
 * write fails with EPIPE (SIGPIPE is ignored): backfillctl closes the
 * connection, which ends the daemon's work on the answer, and exits 0
 * without a message, since the reader took what it wanted.  `--wait`
 * then sends cmd=wait on the same connection and redraws a progress line on stderr, when that is a terminal, for each
 * PROGRESS frame until the final RESPONSE.  `backfillctl wait REQUEST`
 * is that part alone, for a request submitted by anyone.
 *
 * Exit status (backfillctl(1)): 0 done, 1 the work failed, 2 bad usage, bad
 * input or a refused request, 3 the daemon could not be reached (or
 * answered with something that is not the protocol, or refused the
 * connection because too many clients are connected).  Every error is one
 * line on stderr: "backfillctl: <what was wrong>; <what to do>".
 *
 * Reads are blocking and have no timeout: a --wait may last hours.  The
 * connection and its frames: ctl_wire.c.
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
#include <unistd.h>

#include "buf.h"
#include "calendar.h"
#include "cmdspec.h"
#include "complete.h"
#include "config.h"
#include "err.h"
#include "proto.h"
#include "suggest.h"
#include "text.h"
#include "xalloc.h"
#include "ctl_wire.h"

#ifndef BACKFILLD_VERSION
#define BACKFILLD_VERSION "0.1.0"
#endif

#define CTL_DEFAULT_SOCKET "/run/backfilld/backfilld.sock"
#define CTL_MAX_POS 1024 /* mark JOB PARTITION... */
#define CTL_MAX_OPTS CMDSPEC_MAX_OPTS

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

/* their help: CMDSPEC_COMMON_HELP (cmdspec.h), which the completion
 * scripts read too */


/* The errno of a failed write to stdout, 0 while none failed. */
static int ctl_stdout_errno;

/* What the command line asked for, beyond the request fields. */
struct ctl_ctx {
	const struct cmdspec *cmd;
	const char *socket; /* --socket */
	const char *config; /* --config */
	bool help;
	bool wait;
	long long wait_request; /* backfillctl wait REQUEST */
	const char *shell;      /* backfillctl completion SHELL */
	char *path;         /* the socket path in use */
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

/* report --html FILE: the file the page goes to (written here, through a
 * temporary file renamed once the whole page arrived). */
static const char *ctl_report_path;

/* logs --raw: a run's output (DATA frames of `bytes`) written as the
 * command wrote it; otherwise rendered by text.h's rule for lines. */
static bool ctl_raw;

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


/* The joined values of ctl_join_many, freed at exit. */
static char *ctl_joined;

static void
ctl_joined_free(void)
{
	free(ctl_joined);
}

/* A command whose last positional repeats (CMDSPEC_MANY): its values,
 * from positional npos - 1 on, joined by commas into that one. */
static void
ctl_join_many(struct ctl_args *a, int npos)
{
	struct buf b;

	buf_init(&b);
	for (int i = npos - 1; i < a->npos; i++)
		buf_printf(&b, "%s%s", i > npos - 1 ? "," : "", a->pos[i]);
	free(ctl_joined);
	if (ctl_joined == NULL)
		atexit(ctl_joined_free);
	ctl_joined = a->pos[npos - 1] = buf_steal(&b);
	a->npos = npos;
}

/* Check the number of positionals: at most the command's (the missing
 * ones are cmdspec_check's). */
static int
ctl_args_check(const struct ctl_ctx *ctx, const struct ctl_args *a, int max,
    struct err *err)
{
	if (a->npos > max || a->extra > 0)
		return ctl_usage_err(ctx, err, "unexpected argument '%s'",
		    a->npos > max ? a->pos[max] : "...");
	return 0;
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
		if (cmdspec_date_ok(s, err) != 0) {
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


/* The values of the command line, by request field, for cmdspec_check. */
struct ctl_vals {
	const struct cmdspec *cs;
	const char *const *val; /* val[i]: option i's value, or NULL */
	char *const *pos;
	int npos;
};

/* The value given for request field `field`, or NULL (cmdspec_get_fn). */
static const char *
ctl_get(const void *src, const char *field)
{
	const struct ctl_vals *v = src;
	int i;

	for (i = 0; i < v->npos; i++) {
		if (v->cs->pos[i].field != NULL &&
		    strcmp(v->cs->pos[i].field, field) == 0)
			return v->pos[i];
	}
	for (i = 0; v->cs->opts[i].name != NULL; i++) {
		if (v->cs->opts[i].field != NULL &&
		    strcmp(v->cs->opts[i].field, field) == 0)
			return v->val[i];
	}
	return NULL;
}

/* Add one checked argument (s, the value as typed) to the request. */
static int
ctl_arg_add(const struct ctl_ctx *ctx, const struct cmdspec_arg *arg,
    const char *s, struct buf *req, struct err *err)
{
	struct buf dates, lines;
	long long n;

	if (arg->field == NULL)
		return 0;
	switch (arg->kind) {
	case CMDSPEC_FLAG:
		proto_add(req, arg->field, "1");
		return 0;
	case CMDSPEC_INT:
		if (cmdspec_check_value(arg, arg->name, s, &n, err) != 0)
			return -1;
		proto_add_int(req, arg->field, n);
		return 0;
	case CMDSPEC_DATES_FILE:
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

/* Build the getopt options of a command: its own (option i's value is
 * OPT_CMD + i), then the common ones.  The number of its own. */
static int
ctl_longopts(const struct cmdspec *cs, struct option *longopts)
{
	static const struct option common[] = {
		CTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 }
	};
	int n;

	for (n = 0; cs->opts[n].name != NULL; n++) {
		longopts[n].name = cs->opts[n].name;
		longopts[n].has_arg = cs->opts[n].kind == CMDSPEC_FLAG ||
		    cs->opts[n].kind == CMDSPEC_WAIT ? no_argument :
		    required_argument;
		longopts[n].flag = NULL;
		longopts[n].val = OPT_CMD + n;
	}
	memcpy(longopts + n, common, sizeof common);
	return n;
}

/*
 * Parse the current command's arguments (argv[0] is its name) by its
 * specification into req: walk the options, then check the number of
 * positionals, every value and the command's rules (cmdspec_check, as
 * the daemon does again), the client's own rule (--dry-run has nothing
 * to --wait for), and only then add the fields, positionals first, then
 * options in the table's order (a dates file is read there).  0, or -1
 * with err.
 */
static int
ctl_parse(struct ctl_ctx *ctx, int argc, char **argv, struct buf *req,
    struct err *err)
{
	const struct cmdspec *cs = ctx->cmd;
	struct option longopts[CTL_MAX_OPTS + 4];
	const char *val[CTL_MAX_OPTS] = { NULL };
	struct ctl_vals v;
	struct ctl_args a;
	char msg[ERR_MSG_MAX];
	int c, i, nopts;

	if (cmdspec_nopts(cs) > CTL_MAX_OPTS)
		return err_set(err, EXIT_INTERNAL, "backfillctl %s has more "
		    "than %d options", cs->name, CTL_MAX_OPTS);
	nopts = ctl_longopts(cs, longopts);
	ctl_args_init(&a, argc, argv, longopts);
	while ((c = ctl_next(ctx, &a, err)) >= 0) {
		i = c - OPT_CMD;
		if (i < 0 || i >= nopts)
			continue;
		if (cs->opts[i].kind == CMDSPEC_WAIT)
			ctx->wait = true;
		val[i] = longopts[i].has_arg == no_argument ? "1" : optarg;
	}
	if (c == -2)
		return -1;
	if (ctx->help)
		return 0;
	if ((cs->flags & CMDSPEC_MANY) && a.npos > cmdspec_npos(cs))
		ctl_join_many(&a, cmdspec_npos(cs));
	if (ctl_args_check(ctx, &a, cmdspec_npos(cs), err) != 0)
		return -1;
	v.cs = cs;
	v.val = val;
	v.pos = a.pos;
	v.npos = a.npos;
	if (cmdspec_check(cs, ctl_get, &v, true, err) != 0) {
		snprintf(msg, sizeof msg, "%s", err->msg);
		return ctl_usage_err(ctx, err, "%s", msg);
	}
	if (ctx->wait && ctl_get(&v, "dry_run") != NULL)
		return ctl_usage_err(ctx, err, "--dry-run enqueues nothing, so "
		    "there is nothing to --wait for: drop one of them");
	if (cs == &cmdspec_report)
		ctl_report_path = ctl_get(&v, "html");
	if (cs == &cmdspec_logs && ctl_get(&v, "raw") != NULL) {
		if (isatty(STDOUT_FILENO))
			return err_set(err, EXIT_BAD_INPUT, "--raw writes the "
			    "command's bytes as they are, escape sequences "
			    "included, so never to a terminal: redirect or "
			    "pipe the output (> FILE, | less -R), or drop "
			    "--raw to see them escaped");
		ctl_raw = true;
	}
	if (cs == &cmdspec_wait)
		ctx->wait_request = strtoll(v.pos[0], NULL, 10);
	if (cs == &cmdspec_completion)
		ctx->shell = v.pos[0];
	for (i = 0; i < v.npos; i++) {
		if (ctl_arg_add(ctx, &cs->pos[i], v.pos[i], req, err) != 0)
			return -1;
	}
	for (i = 0; i < nopts; i++) {
		if (val[i] != NULL && ctl_arg_add(ctx, &cs->opts[i], val[i],
		    req, err) != 0)
			return -1;
	}
	return 0;
}

/* The message for an unknown command, with the closest one if any (or
 * the commands it begins, when there are several). */
static int
ctl_unknown_cmd(const char *name, struct err *err)
{
	const char *names[64], *hit;
	char several[256] = "";
	size_t i, n = 0;

	for (i = 0; i < cmdspec_count && i < 64; i++) {
		names[i] = cmdspec_table[i]->name;
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
	hit = suggest_closest(name, names, i);
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
	for (i = 0; i < cmdspec_count; i++)
		fprintf(f, "  %s\n", cmdspec_table[i]->usage);
	fprintf(f, "\n'backfillctl COMMAND --help' describes a command.\n"
	    "The socket is --socket PATH, else the socket of --config FILE,\n"
	    "else $BACKFILLD_SOCKET, else " CTL_DEFAULT_SOCKET ".\n"
	    "Exit status: 0 done, 1 the work failed, 2 bad usage or a refused "
	    "request,\n3 the daemon could not be reached.\n");
}

/* Print a command's usage to stdout. */
static void
ctl_cmd_usage(const struct cmdspec *cmd)
{
	printf("usage: backfillctl %s\n%s%s", cmd->usage, cmd->help,
	    CMDSPEC_COMMON_HELP);
}

/* Decide the socket path: --socket, else --config's socket, else
 * $BACKFILLD_SOCKET, else the default. */
static int
ctl_socket_path(struct ctl_ctx *ctx, struct err *err)
{
	char warn[512], *sock;
	const char *env;

	if (ctx->socket != NULL) {
		ctx->path = xstrdup(ctx->socket);
	} else if (ctx->config != NULL) {
		/* only its socket: the daemon checks the rest (docs/commands.md,
		 * "backfillctl") */
		if (config_socket(ctx->config, &sock, warn, sizeof warn,
		    err) != 0) {
			err->code = EXIT_BAD_INPUT;
			return -1;
		}
		if (warn[0] != '\0')
			fprintf(stderr, "backfillctl: warning: %s\n", warn);
		ctx->path = xstrdup(sock != NULL ? sock : CTL_DEFAULT_SOCKET);
		free(sock);
	} else if ((env = getenv("BACKFILLD_SOCKET")) != NULL && *env != '\0') {
		ctx->path = xstrdup(env);
	} else {
		ctx->path = xstrdup(CTL_DEFAULT_SOCKET);
	}
	return 0;
}

/* Write a DATA frame to stdout now: its `out` as is (text the daemon
 * rendered), its `bytes` (outside bytes, a run's output) decoded and
 * rendered by text.h's rule for lines, or as they are with --raw.  0, the
 * errno of a failed write (EPIPE: its reader, such as head, went away),
 * or -1 when `bytes` is not an encoding. */
static int
ctl_data(const struct proto_msg *msg)
{
	struct buf dec, shown;
	const struct buf *w;
	size_t i;
	int rc = 0;

	buf_init(&dec);
	buf_init(&shown);
	for (i = 0; i < msg->nfields && rc == 0; i++) {
		const char *v = msg->fields[i].value;
		size_t n = msg->fields[i].value_len;

		if (strcmp(msg->fields[i].key, "bytes") == 0) {
			buf_reset(&dec);
			buf_reset(&shown);
			if (proto_bytes_decode(v, n, &dec) < 0) {
				rc = -1;
				break;
			}
			if (!ctl_raw)
				text_escape_lines(&shown, dec.data, dec.len);
			w = ctl_raw ? &dec : &shown;
			v = w->data;
			n = w->len;
		} else if (strcmp(msg->fields[i].key, "out") != 0) {
			continue;
		}
		errno = 0;
		if ((n > 0 && fwrite(v, 1, n, stdout) != n) ||
		    fflush(stdout) != 0)
			rc = errno ? errno : EIO;
	}
	buf_free(&dec);
	buf_free(&shown);
	return rc;
}

/* Print a response's out (stdout, as is: the daemon escaped what came
 * from outside) and err (stderr, one line, its control bytes escaped by
 * the one rule of text.h: an error may quote an SQL error or a value). */
static void
ctl_print(const struct proto_msg *msg)
{
	const char *out = proto_get(msg, "out");
	const char *e = proto_get(msg, "err");
	struct buf line;
	size_t len;

	if (out != NULL && *out != '\0') {
		fputs(out, stdout);
		fflush(stdout);
	}
	if (e != NULL && *e != '\0') {
		len = strlen(e);
		if (e[len - 1] == '\n')
			len--;
		buf_init(&line);
		text_escape_add(&line, e, len);
		fprintf(stderr, "backfillctl: %s\n", line.data);
		buf_free(&line);
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

/* A DATA frame whose `bytes` is not an encoding: -1 with err. */
static int
ctl_bad_data(bool drawn, const char *path, struct err *err)
{
	if (drawn)
		fputs("\r\033[K", stderr);
	return err_set(err, EXIT_UNREACHABLE, "invalid answer from backfilld "
	    "at %s: a data frame whose bytes are not encoded; use backfillctl "
	    "and backfilld from the same release", path);
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
	bool tty = isatty(STDERR_FILENO), drawn = false, sent;
	struct proto_msg msg;
	struct err rerr;
	struct buf req;
	int rc;

	buf_init(&req);
	proto_begin(&req, PROTO_REQUEST);
	proto_add(&req, "cmd", "wait");
	proto_add_int(&req, "request", request);
	if (isatty(STDOUT_FILENO))
		proto_add(&req, "tty", "1");
	proto_end(&req);
	/* A send failure may come with an answer saying why (a connection
	 * refused for want of descriptors): read it. */
	sent = ctl_send(fd, path, &req, err) == 0;
	buf_free(&req);
	for (;;) {
		if (ctl_recv(fd, path, in, &msg, sent ? err : &rerr) != 0) {
			if (drawn)
				fputs("\r\033[K", stderr);
			return -1;
		}
		if (msg.type == PROTO_DATA) {
			rc = ctl_data(&msg);
			proto_msg_free(&msg);
			if (rc < 0)
				return ctl_bad_data(drawn, path, err);
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
	if (ctx->cmd == &cmdspec_wait) {
		/* a request submitted by anyone: only the --wait part */
		st = ctl_wait(fd, ctx->path, &in, ctx->wait_request, err);
		goto out;
	}
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
			if (closed < 0) {
				st = ctl_bad_data(false, ctx->path, err);
				goto out;
			}
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

/* backfillctl completion SHELL: the script, from the specification
 * (complete.c); the daemon is not asked.  The exit status. */
static int
ctl_completion(const char *shell)
{
	struct buf out;

	buf_init(&out);
	if (complete_script(&out, shell) != 0) { /* the spec checked it */
		buf_free(&out);
		fprintf(stderr, "backfillctl: no completion for '%s'\n", shell);
		return EXIT_BAD_INPUT;
	}
	fwrite(out.data, 1, out.len, stdout);
	buf_free(&out);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "backfillctl: cannot write the output: %s; "
		    "check where standard output goes\n", strerror(errno));
		return EXIT_WORK_FAILED;
	}
	return EXIT_DONE;
}

/* The global options, up to the command name, and the command: 0, 1
 * when done already (*st: --version, --help), or -1 with err. */
static int
ctl_global(struct ctl_ctx *ctx, int argc, char **argv, int *st,
	   struct err *err)
{
	static const struct option opts[] = {
		{ "version", no_argument, NULL, OPT_VERSION },
		CTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct ctl_args a;
	int c;

	/* Global options stop at the command name. */
	ctl_args_init(&a, argc, argv, opts);
	a.first_only = true;
	while ((c = ctl_next(ctx, &a, err)) >= 0) {
		if (c == OPT_VERSION) {
			printf("backfillctl %s\n", BACKFILLD_VERSION);
			*st = EXIT_DONE;
			return 1;
		}
	}
	if (c == -2)
		return -1;
	if (a.npos == 0) {
		if (ctx->help) {
			ctl_usage(stdout);
			*st = EXIT_DONE;
			return 1;
		}
		return err_set(err, EXIT_BAD_INPUT, "no command given; see "
		    "'backfillctl --help' for the commands");
	}
	ctx->cmd = cmdspec_find(a.pos[0]);
	if (ctx->cmd == NULL) {
		ctl_unknown_cmd(a.pos[0], err);
		return -1;
	}
	return 0;
}

/* The command's own options, from its name on, into the REQUEST frame
 * req: 0, 1 when answered here (*st: its --help, completion), or -1
 * with err. */
static int
ctl_request(struct ctl_ctx *ctx, int argc, char **argv, struct buf *req,
	    int *st, struct err *err)
{
	proto_begin(req, PROTO_REQUEST);
	proto_add(req, "cmd", ctx->cmd->name);
	if (ctl_parse(ctx, argc, argv, req, err) != 0)
		return -1;
	if (ctx->help) {
		ctl_cmd_usage(ctx->cmd);
		*st = EXIT_DONE;
		return 1;
	}
	if (ctx->shell != NULL) {
		*st = ctl_completion(ctx->shell);
		return 1;
	}
	if (isatty(STDOUT_FILENO))
		proto_add(req, "tty", "1");
	proto_end(req);
	if (req->len - PROTO_HEADER > PROTO_MAX_BODY)
		return err_set(err, EXIT_BAD_INPUT, "the request is too large "
		    "(%zu bytes, at most %u); split it into smaller ones",
		    req->len - PROTO_HEADER, PROTO_MAX_BODY);
	return 0;
}

/* The exit status once stdout is flushed: a write that failed is said
 * (quietly when its reader went away). */
static int
ctl_flush(int st)
{
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
}

/* backfillctl [--socket PATH | --config FILE] COMMAND [ARGS] */
int
main(int argc, char **argv)
{
	struct ctl_ctx ctx;
	struct err err;
	struct buf req;
	char tmp[PATH_MAX + 32];
	int rc, st = EXIT_DONE;

	signal(SIGPIPE, SIG_IGN);
	memset(&ctx, 0, sizeof ctx);
	err_clear(&err);
	buf_init(&req);
	if ((rc = ctl_global(&ctx, argc, argv, &st, &err)) == 0)
		rc = ctl_request(&ctx, argc - optind, argv + optind, &req, &st,
				 &err);
	if (rc > 0) {
		buf_free(&req);
		return st;
	}
	if (rc < 0 || ctl_socket_path(&ctx, &err) != 0)
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
	return ctl_flush(st);

fail:
	buf_free(&req);
	free(ctx.path);
	fprintf(stderr, "backfillctl: %s\n", err.msg);
	return err.code == EXIT_INTERNAL ? EXIT_WORK_FAILED : err.code;
}
