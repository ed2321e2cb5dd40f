/*
 * log.h - one line per event on stderr.
 *
 * With JOURNAL_STREAM set (stderr is the journal) lines carry a "<N>"
 * syslog priority prefix and no timestamp; otherwise an ISO-8601 UTC
 * timestamp and the level name.  Messages put their subject in key=value
 * fields ("job=fct_daily_sales partition=2026-02-08 run=42") so that
 * `journalctl -u backfilld | grep job=...` finds them.
 */
#ifndef BACKFILLD_LOG_H
#define BACKFILLD_LOG_H

enum log_level {
	LOG_LEVEL_ERR = 3,
	LOG_LEVEL_WARNING = 4,
	LOG_LEVEL_NOTICE = 5,
	LOG_LEVEL_INFO = 6,
	LOG_LEVEL_DEBUG = 7
};

/* Decide the line format from the environment (JOURNAL_STREAM). */
void log_init(const char *progname);
void log_set_level(int level);
/* "err|error", "warning|warn", "notice", "info", "debug" -> level. */
int log_parse_level(const char *s, int *level);

void log_msg(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_LEVEL_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_LEVEL_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
