/*
 * err.h - the error value every fallible function fills.
 *
 * A function that can fail returns 0 or -1 and, on -1, fills a struct err
 * with an exit code (EXIT_* below) and one line saying what was wrong and
 * what to do.  Callers add context with err_prefix() and decide what to do
 * with it; only start-up code turns an error into an exit.
 */
#ifndef BACKFILLD_ERR_H
#define BACKFILLD_ERR_H

#include <stdarg.h>

/* Exit codes shared by backfilld and backfillctl (EXIT STATUS in
 * backfillctl(1) and backfilld(8)). */
enum {
	EXIT_DONE = 0,        /* done */
	EXIT_WORK_FAILED = 1, /* the work failed: runs failed or stayed blocked */
	EXIT_BAD_INPUT = 2,   /* bad usage or input, or a refused request */
	EXIT_UNREACHABLE = 3, /* the daemon could not be reached */
	EXIT_INTERNAL = 4     /* never shown to users as such: mapped to 1 */
};

/* What kind of failure an error is, for the callers that branch on it
 * (code is the exit code; the message is for people, never compared). */
enum err_kind {
	ERR_NONE = 0,       /* no kind a caller branches on */
	ERR_INTERRUPTED = 1 /* the work was asked to stop: "interrupted" */
};

#define ERR_MSG_MAX 1024

struct err {
	int code;
	char msg[ERR_MSG_MAX];
	/* err_set() and err_prefix() clear it: a caller branches on the
	 * kind of an error as its callee filled it, before context is
	 * added (the message "interrupted" alone, as before kinds) */
	enum err_kind kind;
};

/* Fill err (if not NULL) with code and a formatted message; returns -1. */
int err_set(struct err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int err_setv(struct err *err, int code, const char *fmt, va_list ap);

/* Fill err (if not NULL) with "interrupted", EXIT_WORK_FAILED and kind
 * ERR_INTERRUPTED; returns -1. */
int err_interrupted(struct err *err);

/* True when err (not NULL) is of that kind. */
static inline int
err_is(const struct err *err, enum err_kind kind)
{
	return err->kind == kind;
}

/* Prepend "context: " to err's message, keeping its code. */
void err_prefix(struct err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Reset to no error. */
void err_clear(struct err *err);

#endif
