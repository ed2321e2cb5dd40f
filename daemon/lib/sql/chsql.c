/*
 * chsql.c - ClickHouse SQL text the daemon writes (chsql.h).
 */
#include "chsql.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "sqlscan.h"
#include "text.h"
#include "xalloc.h"

/* n digits at s into *v; false when one is not a digit. */
static bool
chsql_digits(const char *s, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (s[i] - '0');
	}
	return true;
}

/* True when s starts with a valid YYYY-MM-DD. */
static bool
chsql_date(const char *s)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
				     30, 31 };
	int y, m, d;

	if (!chsql_digits(s, 4, &y) || s[4] != '-' ||
	    !chsql_digits(s + 5, 2, &m) || s[7] != '-' ||
	    !chsql_digits(s + 8, 2, &d))
		return false;
	if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
		return false;
	if (m == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return false;
	return true;
}

/* Days in month m of year y. */
static int
chsql_mdays(int y, int m)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31,
				     30, 31 };

	return mdays[m - 1] + (m == 2 && ((y % 4 == 0 && y % 100 != 0) ||
					  y % 400 == 0));
}

int
chsql_zoned_hour(const char *key, char utc[CHSQL_LITERAL_MAX])
{
	int y, m, d, hh, oh, om;

	if (strlen(key) != 19 || !chsql_date(key) || key[10] != 'T' ||
	    !chsql_digits(key + 11, 2, &hh) || hh > 23 ||
	    (key[13] != '+' && key[13] != '-') ||
	    !chsql_digits(key + 14, 2, &oh) || oh > 23 || key[16] != ':' ||
	    !chsql_digits(key + 17, 2, &om) || om != 0)
		return -1;
	chsql_digits(key, 4, &y);
	chsql_digits(key + 5, 2, &m);
	chsql_digits(key + 8, 2, &d);
	/* the wall hour less the offset, at most a day either way (the
	 * module has no calendar.c: the day before or after by hand) */
	hh -= key[13] == '+' ? oh : -oh;
	if (hh < 0) {
		hh += 24;
		if (--d == 0 && --m == 0) {
			m = 12;
			y--;
		}
		if (d == 0)
			d = chsql_mdays(y, m);
	} else if (hh > 23) {
		hh -= 24;
		if (++d > chsql_mdays(y, m)) {
			d = 1;
			if (++m == 13) {
				m = 1;
				y++;
			}
		}
	}
	if (y < 1 || y > 9999)
		return -1;
	snprintf(utc, CHSQL_LITERAL_MAX, "%04d-%02d-%02d %02d:00:00", y, m, d,
		 hh);
	return 0;
}

int
chsql_literal(const char *v, char out[CHSQL_LITERAL_MAX], struct err *err)
{
	size_t n = strlen(v);
	int hh, mi, ss;
	char q[96], utc[CHSQL_LITERAL_MAX];

	if (chsql_zoned_hour(v, utc) == 0) {
		snprintf(out, CHSQL_LITERAL_MAX, "toDateTime('%s', 'UTC')", utc);
		return 0;
	}
	if (n == 10 && chsql_date(v)) {
		snprintf(out, CHSQL_LITERAL_MAX, "toDate('%s')", v);
		return 0;
	}
	if (n == 13 && chsql_date(v) && v[10] == 'T' &&
	    chsql_digits(v + 11, 2, &hh) && hh < 24) {
		snprintf(out, CHSQL_LITERAL_MAX, "toDateTime('%.10s %.2s:00:00')",
			 v, v + 11);
		return 0;
	}
	if (n == 19 && chsql_date(v) && v[10] == ' ' &&
	    chsql_digits(v + 11, 2, &hh) && hh < 24 && v[13] == ':' &&
	    chsql_digits(v + 14, 2, &mi) && mi < 60 && v[16] == ':' &&
	    chsql_digits(v + 17, 2, &ss) && ss < 60) {
		snprintf(out, CHSQL_LITERAL_MAX, "toDateTime('%s')", v);
		return 0;
	}
	/* an instant (late_data's :since): YYYY-MM-DDTHH:MM:SS[.mmm]Z, to
	 * the second, in UTC */
	if ((n == 20 || n == 24) && chsql_date(v) && v[10] == 'T' &&
	    chsql_digits(v + 11, 2, &hh) && hh < 24 && v[13] == ':' &&
	    chsql_digits(v + 14, 2, &mi) && mi < 60 && v[16] == ':' &&
	    chsql_digits(v + 17, 2, &ss) && ss < 60 && v[n - 1] == 'Z' &&
	    (n == 20 || (v[19] == '.' && chsql_digits(v + 20, 3, &mi)))) {
		snprintf(out, CHSQL_LITERAL_MAX, "toDateTime('%.10s %.8s', 'UTC')",
			 v, v + 11);
		return 0;
	}
	return err_set(err, EXIT_BAD_INPUT, "refused: \"%s\" is not a"
		       " partition key, bound or instant (YYYY-MM-DD,"
		       " YYYY-MM-DDTHH, YYYY-MM-DDTHH+HH:00, YYYY-MM-DD"
		       " HH:MM:SS or YYYY-MM-DDTHH:MM:SS.mmmZ); nothing was"
		       " sent to the server",
		       text_escape(v, q, sizeof q));
}

int
chsql_plain(const char *key, char out[CHSQL_LITERAL_MAX], struct err *err)
{
	size_t n = strlen(key);
	char lit[CHSQL_LITERAL_MAX];
	const char *q;

	/* an hour of a zone: the text of its UTC hour */
	if (chsql_zoned_hour(key, lit) == 0) {
		snprintf(out, CHSQL_LITERAL_MAX, "'%s'", lit);
		return 0;
	}
	if ((n != 10 && n != 13) || chsql_literal(key, lit, err) == -1)
		return n == 10 || n == 13 ? -1 :
		       err_set(err, EXIT_BAD_INPUT, "refused: a partition key"
			       " is YYYY-MM-DD, YYYY-MM-DDTHH or"
			       " YYYY-MM-DDTHH+HH:00; nothing was sent to the"
			       " server");
	/* the quoted text of toDate('...') or toDateTime('...') */
	q = strchr(lit, '\'');
	snprintf(out, CHSQL_LITERAL_MAX, "%.*s", (int)(strrchr(lit, '\'') - q + 1),
		 q);
	return 0;
}

bool
chsql_ident_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= CHSQL_IDENT_MAX ||
	    !(isalpha((unsigned char)name[0]) || name[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)name[i]) || name[i] == '_'))
			return false;
	return true;
}

void
chsql_stage_name(const char *table, char *buf, size_t len)
{
	int n = snprintf(buf, len, "_backfilld_stage_%s", table);

	if (n < 0 || (size_t)n >= len || n >= CHSQL_IDENT_MAX)
		buf[0] = '\0';
}

void
chsql_mark_name(const char *table, char *buf, size_t len)
{
	int n = snprintf(buf, len, "_backfilld_marks_%s", table);

	if (n < 0 || (size_t)n >= len || n >= CHSQL_IDENT_MAX)
		buf[0] = '\0';
}

/* The value given for placeholder `name` (n bytes), or NULL. */
static const struct chsql_param *
chsql_find(const struct chsql_param *params, size_t nparams, const char *name,
	   size_t n)
{
	for (size_t i = 0; i < nparams; i++)
		if (strlen(params[i].name) == n &&
		    strncmp(params[i].name, name, n) == 0)
			return &params[i];
	return NULL;
}

/* True for a UTC bound's name (partition_start_utc, partition_end_utc). */
static bool
chsql_utc_name(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && strcmp(name + n - 4, "_utc") == 0;
}

int
chsql_bind(const char *sql, const struct chsql_param *params, size_t nparams,
	   char **out, struct err *err)
{
	static const char *const opens[] = {
		[SQLSCAN_STRING] = "string", [SQLSCAN_QUOTED] = "quoted name",
		[SQLSCAN_COMMENT] = "comment"
	};
	const struct chsql_param *p;
	char lit[CHSQL_LITERAL_MAX];
	struct sqlscan sc;
	struct sqlscan_tok t;
	struct buf b;

	*out = NULL;
	buf_init(&b);
	sqlscan_init(&sc, sql, SQLSCAN_CH);
	while (sqlscan_next(&sc, &t) != SQLSCAN_END) {
		if (t.kind == SQLSCAN_UNTERMINATED) {
			const char *what = t.open < sizeof opens / sizeof *opens &&
				opens[t.open] ? opens[t.open] : "quote";

			buf_free(&b);
			return err_set(err, EXIT_BAD_INPUT, "refused: a %s that"
				       " does not end at line %d; nothing was"
				       " sent to the server", what, t.line);
		}
		if (t.kind != SQLSCAN_PARAM) {
			buf_add(&b, sql + t.off, t.len);
			continue;
		}
		p = chsql_find(params, nparams, sql + t.off + 1, t.len - 1);
		if (p == NULL || p->value == NULL) {
			buf_free(&b);
			return err_set(err, EXIT_BAD_INPUT, "statement uses %.*s,"
				       " which is not bound here (:partition,"
				       " :partition_start, :partition_end,"
				       " :partition_start_utc,"
				       " :partition_end_utc%s)",
				       (int)(t.len > 64 ? 64 : t.len),
				       sql + t.off, chsql_find(params, nparams,
				       "stage", 5) ? ", :stage" : "");
		}
		if (strcmp(p->name, "stage") == 0) {
			if (!chsql_ident_ok(p->value)) {
				buf_free(&b);
				return err_set(err, EXIT_BAD_INPUT, "refused:"
					       " the stage table name is no"
					       " plain identifier");
			}
			buf_printf(&b, "`%s`", p->value);
			continue;
		}
		if (chsql_literal(p->value, lit, err) == -1) {
			buf_free(&b);
			return -1;
		}
		/* a UTC bound is an instant: DateTime('UTC'), whatever the
		 * server's or the column's zone */
		if (chsql_utc_name(p->name) && strlen(p->value) == 19)
			buf_printf(&b, "toDateTime('%s', 'UTC')", p->value);
		else
			buf_addstr(&b, lit);
	}
	buf_add(&b, "", 1);
	*out = buf_steal(&b);
	return 0;
}

/* Append s[0..n) trimmed, as a statement, when not empty. */
static void
chsql_push(const char *s, size_t n, char ***stmts, size_t *nstmts)
{
	while (n > 0 && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if (n == 0)
		return;
	*stmts = xreallocarray(*stmts, *nstmts + 1, sizeof **stmts);
	(*stmts)[(*nstmts)++] = xstrndup(s, n);
}

void
chsql_split(const char *sql, char ***stmts, size_t *n)
{
	struct sqlscan sc;
	struct sqlscan_tok t;
	size_t start = 0;
	bool solid = false;

	*stmts = NULL;
	*n = 0;
	sqlscan_init(&sc, sql, SQLSCAN_CH);
	while (sqlscan_next(&sc, &t) != SQLSCAN_END) {
		if (sqlscan_is_punct(&sc, &t, ';')) {
			if (solid)
				chsql_push(sql + start, t.off - start, stmts, n);
			start = t.off + 1;
			solid = false;
		} else if (t.kind != SQLSCAN_SPACE &&
			   t.kind != SQLSCAN_COMMENT) {
			solid = true;
		}
	}
	if (solid)
		chsql_push(sql + start, strlen(sql) - start, stmts, n);
}

void
chsql_split_free(char **stmts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(stmts[i]);
	free(stmts);
}

/* key without blanks or backquotes, function names lowered, into buf. */
static void
chsql_key_norm(const char *key, char *buf, size_t len)
{
	size_t o = 0;

	for (const char *p = key; *p != '\0' && o + 1 < len; p++)
		if (!isspace((unsigned char)*p) && *p != '`')
			buf[o++] = *p;
	buf[o] = '\0';
}

const char *
chsql_grain_fn(enum grain g)
{
	switch (g) {
	case GRAIN_HOUR:
		return "toStartOfHour";
	case GRAIN_DAY:
		return "toDate";
	case GRAIN_WEEK:
		return "toMonday";
	case GRAIN_QUARTER:
		return "toStartOfQuarter";
	case GRAIN_YEAR:
		return "toStartOfYear";
	default:
		return "toStartOfMonth";
	}
}

enum chsql_key_shape
chsql_key_shape(const char *partition_key, const char *column, enum grain g,
		char *want, size_t wantsz)
{
	char got[256], a[256];

	chsql_key_norm(partition_key, got, sizeof got);
	snprintf(a, sizeof a, "%s(%s)", chsql_grain_fn(g), column);
	/* a day's: the column itself, or toDate of it */
	snprintf(want, wantsz, "%s", g == GRAIN_DAY ? column : a);
	if (strcasecmp(got, a) == 0)
		return CHSQL_KEY_GRAIN;
	/* the column itself: a day's Date, or (g coarser than a day) a Date
	 * that must hold its partition's first day (audited in the stage) */
	if (g != GRAIN_HOUR && strcmp(got, column) == 0)
		return g == GRAIN_DAY ? CHSQL_KEY_GRAIN : CHSQL_KEY_FIRST_DAY;
	return CHSQL_KEY_NONE;
}

bool
chsql_key_matches(const char *partition_key, const char *column, enum grain g,
		  char *want, size_t wantsz)
{
	return chsql_key_shape(partition_key, column, g, want, wantsz) !=
	       CHSQL_KEY_NONE;
}

int
chsql_first_day_sql(const char *stage, const char *column, enum grain g,
		    char *out, size_t outsz)
{
	int n;

	if (!chsql_ident_ok(stage) || !chsql_ident_ok(column))
		return -1;
	n = snprintf(out, outsz, "SELECT toString(`%s`) FROM `%s` WHERE"
		     " %s(`%s`) = :partition AND `%s` != :partition LIMIT 1",
		     column, stage, chsql_grain_fn(g), column, column);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

/* The start of the last non-empty line of body[0..len). */
static const char *
chsql_last_line(const char *body, size_t len, size_t *n)
{
	const char *end = body + len, *p;

	while (end > body && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	for (p = end; p > body && p[-1] != '\n'; p--)
		;
	*n = (size_t)(end - p);
	return p;
}

/* "Code: N, e.displayText() = DB::Exception: X, e.what() = ..." at s:
 * the message without the e.what() tail into msg; false when s is no
 * such line. */
static bool
chsql_exception_line(const char *s, size_t n, char *msg, size_t msgsz)
{
	const char *tail;
	size_t i = 6, keep;

	if (n < 8 || strncmp(s, "Code: ", 6) != 0)
		return false;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i == 6 || i + 1 >= n || s[i] != ',')
		return false;
	keep = n;
	for (tail = s; (tail = strstr(tail, ", e.what() = ")) != NULL &&
	     tail < s + n; tail++)
		keep = (size_t)(tail - s);
	for (i = 0; i < keep && i + 1 < msgsz; i++)
		msg[i] = s[i] == '\t' ? ' ' : s[i];
	if (msgsz > 0)
		msg[i] = '\0';
	return true;
}

bool
chsql_body_exception(const char *body, size_t len, char *msg, size_t msgsz)
{
	size_t n;
	const char *line = chsql_last_line(body, len, &n);

	return chsql_exception_line(line, n, msg, msgsz);
}

void
chsql_error_text(const char *body, size_t len, char *msg, size_t msgsz)
{
	const char *s = body, *nl;
	size_t n, i;

	if (chsql_body_exception(body, len, msg, msgsz))
		return;
	while (len > 0 && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	nl = memchr(s, '\n', len);
	n = nl ? (size_t)(nl - s) : len;
	if (chsql_exception_line(s, n, msg, msgsz))
		return;
	for (i = 0; i < n && i + 1 < msgsz; i++)
		msg[i] = (unsigned char)s[i] < 0x20 ? ' ' : s[i];
	if (msgsz > 0)
		msg[i] = '\0';
}

int
chsql_error_code(const char *msg)
{
	long v;
	char *end;

	if (strncmp(msg, "Code: ", 6) != 0)
		return 0;
	v = strtol(msg + 6, &end, 10);
	return end != msg + 6 && *end == ',' && v > 0 && v < 100000 ? (int)v :
	    0;
}

bool
chsql_denied(long status, int code, bool *privilege)
{
	*privilege = code == 497 || code == 164;
	switch (code) {
	case 516: case 192: case 193: case 194: case 195:
		return true;
	case 497: case 164:
		return true;
	default:
		break;
	}
	*privilege = status == 403;
	return status == 401 || status == 403;
}

size_t
chsql_describe(const char *job, const char *what, const char *sql,
	       enum grain g, bool zoned, const char *stage, struct buf *b)
{
	struct sqlscan sc;
	struct sqlscan_tok t;
	size_t n = 0;

	sqlscan_init(&sc, sql, SQLSCAN_CH);
	while (sqlscan_next(&sc, &t) != SQLSCAN_END) {
		const char *name = sql + t.off + 1, *form;
		size_t len = t.len - 1;

		if (t.kind != SQLSCAN_PARAM)
			continue;
		if (len == 5 && strncmp(name, "stage", 5) == 0) {
			buf_printf(b, "  job %s %s line %d: :stage -> `%s`\n",
				   job, what, t.line, stage);
			n++;
			continue;
		}
		if (len == 9 && strncmp(name, "partition", 9) == 0)
			form = g != GRAIN_HOUR ? "toDate('YYYY-MM-DD')" :
			       zoned ? "toDateTime('YYYY-MM-DD HH:00:00',"
				       " 'UTC') (the hour's UTC start)" :
				       "toDateTime('YYYY-MM-DD HH:00:00')";
		else if ((len == 15 && strncmp(name, "partition_start", 15) == 0) ||
			 (len == 13 && strncmp(name, "partition_end", 13) == 0))
			form = g == GRAIN_HOUR ?
				"toDateTime('YYYY-MM-DD HH:MM:SS')" :
				"toDate('YYYY-MM-DD')";
		else if ((len == 19 &&
			  strncmp(name, "partition_start_utc", 19) == 0) ||
			 (len == 17 &&
			  strncmp(name, "partition_end_utc", 17) == 0))
			form = "toDateTime('YYYY-MM-DD HH:MM:SS', 'UTC')";
		else
			form = "refused: not bound here";
		buf_printf(b, "  job %s %s line %d: :%.*s -> %s\n", job, what,
			   t.line, (int)len, name, form);
		n++;
	}
	return n;
}

/* One argument of an engine's list at *p: a plain name, or one in single
 * quotes or backquotes (no escapes: a name chsql_ident_ok accepts). */
static int
chsql_engine_arg(const char **p, char *out, size_t outsz)
{
	const char *q = *p;
	char quote = 0;
	size_t n = 0;

	while (*q == ' ')
		q++;
	if (*q == '\'' || *q == '`')
		quote = *q++;
	while (*q != '\0' && (quote ? *q != quote : (*q != ',' && *q != ')' &&
	       *q != ' '))) {
		if (n + 1 >= outsz)
			return -1;
		out[n++] = *q++;
	}
	if (quote && *q++ != quote)
		return -1;
	while (*q == ' ')
		q++;
	out[n] = '\0';
	*p = q;
	return chsql_ident_ok(out) ? 0 : -1;
}

int
chsql_distributed(const char *engine_full, char *cluster, char *db,
		  char *table, size_t sz)
{
	const char *p = engine_full;
	char *outs[3] = { cluster, db, table };

	if (strncmp(p, "Distributed(", 12) != 0)
		return -1;
	p += 12;
	for (int i = 0; i < 3; i++) {
		if (chsql_engine_arg(&p, outs[i], sz) < 0)
			return -1;
		if (*p != (i < 2 ? ',' : *p == ',' ? ',' : ')'))
			return -1;
		p++;
	}
	return 0;
}

int
chsql_shard_url(const char *url, const char *host, const char *db, char *out,
		size_t outsz)
{
	const char *hs = strstr(url, "://"), *he, *port;
	bool v6;
	int n;

	if (hs == NULL || strspn(host, "0123456789abcdefABCDEF.:-"
				 "ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ_") !=
	    strlen(host) || host[0] == '\0' || !chsql_ident_ok(db))
		return -1;
	hs += 3;
	he = hs + strcspn(hs, "/?");
	/* the port of the configured URL (the cluster gives TCP ports) */
	port = memchr(hs, ']', (size_t)(he - hs));
	port = memchr(port ? port : hs, ':', (size_t)(he - (port ? port : hs)));
	v6 = strchr(host, ':') != NULL; /* an IPv6 address: in brackets */
	n = snprintf(out, outsz, "%.*s%s%s%s%.*s/?database=%s",
		     (int)(hs - url), url, v6 ? "[" : "", host, v6 ? "]" : "",
		     (int)(port ? he - port : 0), port ? port : "", db);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

/* ---- the write-audit-publish statements (chsql.h) ------------------- */

char *
chsql_create_stage_sql(const char *stage, const char *live)
{
	return xasprintf("CREATE TABLE IF NOT EXISTS `%s` AS `%s`", stage, live);
}

char *
chsql_create_marks_sql(const char *mark)
{
	return xasprintf("CREATE TABLE IF NOT EXISTS `%s` (partition String,"
			 " request Int64, run Int64) ENGINE = MergeTree PARTITION"
			 " BY run ORDER BY partition", mark);
}

char *
chsql_drop_table_sql(const char *table)
{
	return xasprintf("DROP TABLE IF EXISTS `%s`", table);
}

char *
chsql_fill_sql(const char *stage, const char *select)
{
	return xasprintf("INSERT INTO `%s` %s", stage, select);
}

char *
chsql_drop_part_sql(const char *stage)
{
	return xasprintf("ALTER TABLE `%s` DROP PARTITION :partition", stage);
}

char *
chsql_marks_of_sql(const char *mark)
{
	return xasprintf("SELECT toString(request) FROM `%s` WHERE partition ="
			 " toString(:partition)", mark);
}

char *
chsql_engine_sql(const char *table)
{
	return xasprintf("SELECT engine_full FROM system.tables WHERE"
			 " database = currentDatabase() AND name = '%s'", table);
}

char *
chsql_cluster_hosts_sql(const char *cluster)
{
	return xasprintf("SELECT host_address FROM system.clusters WHERE"
			 " cluster = '%s' AND replica_num = 1 ORDER BY shard_num",
			 cluster);
}

char *
chsql_table_key_sql(const char *db, const char *table)
{
	if (db == NULL)
		return xasprintf("SELECT concat(engine, ' ', partition_key) FROM"
				 " system.tables WHERE database = currentDatabase()"
				 " AND name = '%s'", table);
	return xasprintf("SELECT concat(engine, ' ', partition_key) FROM"
			 " system.tables WHERE database = '%s' AND name = '%s'",
			 db, table);
}
