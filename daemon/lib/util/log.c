/*
 * log.c - one line per event on stderr, safe from any thread.
 *
 * Each line is built whole in a buffer on the caller's stack and handed to
 * the kernel with a single write(2), so lines from the loop thread and the
 * worker threads never interleave (stderr is a pipe or the journal socket,
 * where writes of a line are atomic).  No lock is taken: the only shared
 * state is the level (atomic) and the format chosen by log_init(), which
 * runs before any thread starts.  A message is cut at LOG_LINE_MAX bytes
 * and its control bytes, newlines included, are escaped by the one rule
 * of daemon/lib/util/text.h (\n, \t, \xNN): one event, one line, and no
 * outside text (an SQL error, a warehouse value, a hook's output) can
 * drive the terminal of whoever reads the log.
 *
 * Timestamps: this file reads CLOCK_REALTIME itself.  It is the only
 * exception to the rule that clock.c alone reads the clock: a log line says
 * when it was written, even when a test clock file stands the daemon's
 * clock still.
 */
#include "clock_ms.h"
#include "log.h"
#include "text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 4096

static char log_progname[64] = "backfilld";
static bool log_journal;
static atomic_int log_level = LOG_LEVEL_INFO;
static long log_pid; /* the daemon's, read once (a system call a line) */

/* Choose the format: "<N>" prefixes when stderr is the journal. */
void
log_init(const char *progname)
{
	const char *js = getenv("JOURNAL_STREAM");

	if (progname != NULL) {
		const char *slash = strrchr(progname, '/');
		snprintf(log_progname, sizeof log_progname, "%s",
		    slash != NULL ? slash + 1 : progname);
	}
	log_journal = js != NULL && *js != '\0';
	log_pid = (long)getpid();
}

/* Show messages of this level and more urgent ones. */
void
log_set_level(int level)
{
	if (level < LOG_LEVEL_ERR)
		level = LOG_LEVEL_ERR;
	if (level > LOG_LEVEL_DEBUG)
		level = LOG_LEVEL_DEBUG;
	atomic_store(&log_level, level);
}

/* Level name -> level; 0, or -1 when the name is unknown. */
int
log_parse_level(const char *s, int *level)
{
	static const struct {
		const char *name;
		int level;
	} names[] = {
		{ "err", LOG_LEVEL_ERR },
		{ "error", LOG_LEVEL_ERR },
		{ "warning", LOG_LEVEL_WARNING },
		{ "warn", LOG_LEVEL_WARNING },
		{ "notice", LOG_LEVEL_NOTICE },
		{ "info", LOG_LEVEL_INFO },
		{ "debug", LOG_LEVEL_DEBUG },
	};
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcasecmp(s, names[i].name) == 0) {
			*level = names[i].level;
			return 0;
		}
	}
	return -1;
}

/* The name a level shows as in non-journal lines. */
static const char *
log_level_name(int level)
{
	switch (level) {
	case LOG_LEVEL_ERR:
		return "error";
	case LOG_LEVEL_WARNING:
		return "warning";
	case LOG_LEVEL_NOTICE:
		return "notice";
	case LOG_LEVEL_INFO:
		return "info";
	default:
		return "debug";
	}
}

/* Write all of line with as few write(2) calls as the kernel allows. */
static void
log_write(const char *line, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(STDERR_FILENO, line, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return; /* nowhere left to report it */
		}
		line += n;
		len -= (size_t)n;
	}
}

/* Log one event at `level` (a LOG_LEVEL_*), if the level lets it through. */
void
log_msg(int level, const char *fmt, ...)
{
	char line[LOG_LINE_MAX], msg[LOG_LINE_MAX];
	size_t len = 0;
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if (level > atomic_load(&log_level))
		return;
	if (log_journal) {
		n = snprintf(line, sizeof line, "<%d>", level);
	} else {
		ts = clock_read(CLOCK_REALTIME); /* UTIL-2 */
		gmtime_r(&ts.tv_sec, &tm);
		n = snprintf(line, sizeof line,
		    "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%ld]: %s: ",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		    tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, log_progname,
		    log_pid != 0 ? log_pid : (long)getpid(),
		    log_level_name(level));
	}
	if (n < 0)
		return;
	len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n < 0)
		msg[0] = '\0';
	else if ((size_t)n >= sizeof msg)
		memcpy(msg + sizeof msg - 4, "...", 3);
	/* One event, one line, and nothing for the reader's terminal: the
	 * control bytes of the message, newlines included, by text.h's
	 * rule (idempotent, so fields escaped before are unchanged). */
	text_escape(msg, line + len, sizeof line - len - 1);
	len += strlen(line + len);
	/* line has room: at most sizeof line - 1 bytes are used. */
	line[len++] = '\n';
	log_write(line, len);
}
