/*
 * map.c - ranges and calendars of partition states (see map.h).  Pure.
 */
#include "map.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "xalloc.h"

static const char *const map_names[MAP_NSTATES] = {
	"not_due", "never_run", "refused", "succeeded", "skipped", "marked",
	"stale",
	"failed",
	"late", "blocked", "queued", "running",
};
static const char map_letters[MAP_NSTATES] = {
	'.', 'n', 'X', 's', 'u', 'm', 't', 'F', 'L', 'B', 'q', 'r',
};
/* ANSI SGR per state: green, red, yellow, cyan, blue, magenta; dim for
 * what has not run; a mark is a success underlined */
static const char *const map_colours[MAP_NSTATES] = {
	"2", "2", "31;2", "32", "2;32", "32;4", "33", "1;31", "1;35", "35", "34",
	"36",
};
/* The order of the legend. */
static const enum map_state map_legend[MAP_NSTATES] = {
	MAP_SUCCEEDED, MAP_SKIPPED, MAP_MARKED, MAP_FAILED, MAP_RUNNING,
	MAP_QUEUED, MAP_BLOCKED, MAP_STALE, MAP_LATE, MAP_NEVER_RUN,
	MAP_REFUSED, MAP_NOT_DUE,
};

const char *
map_state_name(enum map_state s)
{
	return s < MAP_NSTATES ? map_names[s] : "?";
}

int
map_init(struct map *m, const struct cal *c, part_t from, part_t to,
	 struct err *err)
{
	memset(m, 0, sizeof *m);
	if (to < from)
		return err_set(err, EXIT_BAD_INPUT, "the map's --from is after"
			       " its --to; swap them");
	if (to - from + 1 > MAP_MAX_PARTITIONS)
		return err_set(err, EXIT_BAD_INPUT, "the map would hold %" PRId64
			       " partitions, above the bound of %d; narrow it"
			       " with --from and --to", (int64_t)(to - from + 1),
			       MAP_MAX_PARTITIONS);
	m->grain = c->grain;
	m->cal = *c;
	m->from = from;
	m->to = to;
	m->n = (size_t)(to - from + 1);
	m->st = xmalloc(m->n);
	memset(m->st, MAP_NEVER_RUN, m->n);
	return 0;
}

void
map_free(struct map *m)
{
	for (size_t i = 0; m->why != NULL && i < m->n; i++)
		free(m->why[i]);
	free(m->why);
	m->why = NULL;
	free(m->st);
	m->st = NULL;
}

void
map_note(struct map *m, part_t p, const char *text)
{
	size_t i;

	if (p < m->from || p > m->to)
		return;
	if (m->why == NULL)
		m->why = xcalloc(m->n, sizeof *m->why);
	i = (size_t)(p - m->from);
	free(m->why[i]);
	m->why[i] = xstrdup(text);
}

void
map_set(struct map *m, part_t p, enum map_state s)
{
	if (p >= m->from && p <= m->to)
		m->st[p - m->from] = (uint8_t)s;
}

void
map_raise(struct map *m, part_t p, enum map_state s)
{
	if (p >= m->from && p <= m->to && m->st[p - m->from] < s)
		m->st[p - m->from] = (uint8_t)s;
}

void
map_ranges(const struct map *m, map_range_cb cb, void *data)
{
	size_t i = 0;

	while (i < m->n) {
		size_t k = i;

		while (k + 1 < m->n && m->st[k + 1] == m->st[i])
			k++;
		cb(m->from + (part_t)i, m->from + (part_t)k,
		   (enum map_state)m->st[i], (int64_t)(k - i + 1), data);
		i = k + 1;
	}
}

struct json_ctx {
	const struct map *m;
	struct buf *out;
	bool first;
};

/* One range as a JSON object. */
static void
map_json_range_cb(part_t from, part_t to, enum map_state s, int64_t count,
		  void *data)
{
	struct json_ctx *c = data;
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX];

	cal_key(&c->m->cal, from, a);
	cal_key(&c->m->cal, to, b);
	buf_printf(c->out, "%s\n  {\"from\": \"%s\", \"to\": \"%s\", \"state\":"
		   " \"%s\", \"count\": %" PRId64 "}", c->first ? "" : ",", a, b,
		   map_state_name(s), count);
	c->first = false;
}

void
map_json(const struct map *m, const char *job, struct buf *out)
{
	struct json_ctx c = { m, out, true };
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX];

	cal_key(&m->cal, m->from, a);
	cal_key(&m->cal, m->to, b);
	buf_addstr(out, "{\"job\": ");
	json_str(out, job);
	buf_printf(out, ", \"grain\": \"%s\", \"timezone\": ",
		   grain_name(m->grain));
	json_str(out, cal_zone_name(&m->cal));
	buf_printf(out, ", \"from\": \"%s\", \"to\": \"%s\", \"ranges\": [",
		   a, b);
	map_ranges(m, map_json_range_cb, &c);
	buf_addstr(out, c.first ? "]}\n" : "\n]}\n");
}

/* ---- the calendar ------------------------------------------------------ */

struct row {
	struct buf *out;
	bool colour;
	int cur; /* the colour in effect, -1 none */
};

/* One cell: the letter of p's state, or a blank outside the range. */
static void
map_cell(const struct map *m, struct row *r, part_t p)
{
	int s = p >= m->from && p <= m->to ? m->st[p - m->from] : -1;

	if (p > m->to)
		return; /* no trailing blanks */
	if (r->colour && s != r->cur) {
		if (s < 0)
			buf_addstr(r->out, "\033[0m");
		else
			buf_printf(r->out, "\033[0;%sm", map_colours[s]);
		r->cur = s;
	}
	buf_printf(r->out, "%c", s < 0 ? ' ' : map_letters[s]);
}

/* End a row: reset the colour. */
static void
map_row_end(struct row *r)
{
	if (r->colour && r->cur >= 0)
		buf_addstr(r->out, "\033[0m");
	r->cur = -1;
	buf_addstr(r->out, "\n");
}

static const char *const map_months[12] = { "Jan", "Feb", "Mar", "Apr",
	"May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
static const char *const map_months_long[12] = { "January", "February",
	"March", "April", "May", "June", "July", "August", "September",
	"October", "November", "December" };

/* Local day number of partition p's first day. */
static int64_t
map_day(const struct map *m, part_t p)
{
	return cal_first_day(&m->cal, p);
}

/* Days: a row per ISO week (Monday first), month label where a month
 * begins. */
static void
map_days(const struct map *m, struct row *r)
{
	int64_t d0 = map_day(m, m->from), d1 = map_day(m, m->to);
	int64_t first = d0 - (cal_weekday(d0) - 1);
	int lastmon = -1;

	buf_addstr(r->out, "               MTWTFSS\n");
	for (int64_t mon = first; mon <= d1; mon += 7) {
		int y, mo, d, y2, mo2, d2;
		char date[CAL_KEY_MAX];
		const char *label = "   ";

		cal_civil_from_days(mon, &y, &mo, &d);
		cal_civil_from_days(mon + 6, &y2, &mo2, &d2);
		if (mo - 1 != lastmon || mon == first) {
			label = map_months[mo - 1];
			lastmon = mo - 1;
		}
		if (mo2 != mo) {
			label = map_months[mo2 - 1];
			lastmon = mo2 - 1;
		}
		cal_format_date(mon, date);
		buf_printf(r->out, "%s %s ", date, label);
		for (int k = 0; k < 7; k++)
			map_cell(m, r, cal_part_of_day(&m->cal, mon + k));
		map_row_end(r);
	}
}

/* Hours: a row per local day, a cell per hour of it (23 or 25 on the
 * days clocks change). */
static void
map_hours(const struct map *m, struct row *r)
{
	struct cal day = { GRAIN_DAY, WEEK_MONDAY, m->cal.tz };
	int64_t d0 = map_day(m, m->from), d1 = map_day(m, m->to);

	buf_addstr(r->out, "           0     6     12    18\n");
	for (int64_t d = d0; d <= d1; d++) {
		char date[CAL_KEY_MAX];
		struct part_range h = cal_overlap(&m->cal, cal_start(&day, d),
						  cal_end(&day, d));

		cal_format_date(d, date);
		buf_printf(r->out, "%s ", date);
		for (part_t p = h.first; p <= h.last; p++)
			map_cell(m, r, p);
		map_row_end(r);
	}
}

/* The first local day of the row holding day d: a year, or a decade for
 * years. */
static int64_t
map_row_of(const struct map *m, int64_t d, int *label)
{
	int y, mo, dd;

	cal_civil_from_days(d, &y, &mo, &dd);
	if (m->grain == GRAIN_YEAR)
		y -= ((y % 10) + 10) % 10;
	*label = y;
	return cal_days_from_civil(y, 1, 1);
}

/* Weeks, months and quarters: a row per year; years: a row per decade. */
static void
map_years(const struct map *m, struct row *r)
{
	int y;
	int64_t row, last = map_row_of(m, map_day(m, m->to), &y);

	if (m->grain == GRAIN_MONTH)
		buf_addstr(r->out, "     JFMAMJJASOND\n");
	else if (m->grain == GRAIN_QUARTER)
		buf_addstr(r->out, "     1234\n");
	else if (m->grain == GRAIN_YEAR)
		buf_addstr(r->out, "     0123456789\n");
	else
		buf_printf(r->out, "     weeks (by %s) from the first of the "
			   "year\n", m->cal.week_start == WEEK_SUNDAY ?
			   "Sunday" : "Monday");
	for (row = map_row_of(m, map_day(m, m->from), &y); row <= last;) {
		int64_t next = cal_days_from_civil(
		    y + (m->grain == GRAIN_YEAR ? 10 : 1), 1, 1);
		part_t p = cal_part_of_day(&m->cal, row);

		/* a week holding Jan 1 that began the year before belongs
		 * to that year's row */
		if (map_day(m, p) < row)
			p++;
		buf_printf(r->out, "%04d ", y);
		for (; map_day(m, p) < next; p++)
			map_cell(m, r, p);
		map_row_end(r);
		row = map_row_of(m, next, &y);
	}
}

void
map_text(const struct map *m, const char *job, bool colour, struct buf *out)
{
	struct row r = { out, colour, -1 };
	int64_t counts[MAP_NSTATES] = { 0 };
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX];

	cal_key(&m->cal, m->from, a);
	cal_key(&m->cal, m->to, b);
	buf_printf(out, "%s (%s%s%s) %s..%s: %zu partitions\n", job,
		   grain_name(m->grain), m->cal.tz != NULL ? ", " : "",
		   m->cal.tz != NULL ? cal_zone_name(&m->cal) : "", a, b, m->n);
	if (m->grain == GRAIN_NONE) { /* the whole table: one cell */
		buf_addstr(out, "- ");
		map_cell(m, &r, 0);
		map_row_end(&r);
	} else if (m->grain == GRAIN_DAY)
		map_days(m, &r);
	else if (m->grain == GRAIN_HOUR)
		map_hours(m, &r);
	else
		map_years(m, &r);
	for (size_t i = 0; i < m->n; i++)
		counts[m->st[i]]++;
	buf_addstr(out, "legend:");
	for (int i = 0; i < MAP_NSTATES; i++) {
		enum map_state s = map_legend[i];

		if (counts[s] == 0)
			continue;
		buf_addstr(out, "  ");
		if (colour)
			buf_printf(out, "\033[0;%sm%c\033[0m", map_colours[s],
				   map_letters[s]);
		else
			buf_printf(out, "%c", map_letters[s]);
		buf_printf(out, " %s %" PRId64, map_state_name(s), counts[s]);
	}
	buf_addstr(out, "\n");
}

/* ---- the report's grid ------------------------------------------------- */

void
map_html_calendar(const struct cal *c, struct buf *out)
{
	buf_addstr(out, grain_name(c->grain));
	if (c->week_start == WEEK_SUNDAY)
		buf_addstr(out, ", Sunday weeks");
	if (c->tz != NULL) /* [A-Za-z0-9_+./-]: nothing to escape */
		buf_printf(out, ", %s, local time", cal_zone_name(c));
}

/* A label of the grid: <span class="CLASS" data-job="JOB"
 * data-ATTR="VALUE">TEXT</span>. */
static void
map_html_label(struct buf *o, const char *cls, const char *job,
	       const char *attr, const char *value, const char *text)
{
	buf_printf(o, "<span class=\"%s\" data-job=\"%s\" data-%s=\"%s\">%s"
		   "</span>", cls, job, attr, value, text);
}

/* Partition p's cell; hour: its local hour (HH' the second time). */
static void
map_html_cell(const struct map *m, const char *job, part_t p,
	      const char *hour, bool again, struct buf *o)
{
	const char *st = map_state_name((enum map_state)m->st[p - m->from]);
	char a[CAL_KEY_MAX];

	cal_key(&m->cal, p, a);
	buf_printf(o, "\n<span class=\"c%s s-%s\" data-job=\"%s\""
		   " data-partition=\"%s\" data-state=\"%s\"", again ? " rep" : "",
		   st, job, a, st);
	if (hour != NULL)
		buf_printf(o, " data-hour=\"%s%s\"", hour, again ? "'" : "");
	buf_printf(o, " title=\"%s %s%s%s", a, st, again ? ", the second " :
		   "", again ? hour : "");
	if (m->why != NULL && m->why[p - m->from] != NULL)
		buf_printf(o, ": %s", m->why[p - m->from]);
	buf_addstr(o, "\"></span>");
}

/* The labels before a week's row of the day grid whose first partition
 * drawn is day: the month of the grid's first day and of each 1st drawn
 * in the week, on lines of their own; then the date of its Monday. */
static void
map_html_week(const struct map *m, const char *job, part_t day,
	      struct buf *o)
{
	int64_t days = cal_first_day(&m->cal, day);
	int64_t monday = days - (cal_weekday(days) - 1);
	int64_t end = cal_first_day(&m->cal, m->to);
	char value[16], text[32];
	int y, mo, d;

	for (int64_t k = days; k < monday + 7 && k <= end; k++) {
		cal_civil_from_days(k, &y, &mo, &d);
		if (d != 1 && !(k == days && day == m->from))
			continue;
		snprintf(value, sizeof value, "%04d-%02d", y, mo);
		snprintf(text, sizeof text, "%s %04d", map_months_long[mo - 1],
			 y);
		map_html_label(o, "month", job, "month", value, text);
	}
	cal_civil_from_days(monday, &y, &mo, &d);
	snprintf(value, sizeof value, "%04d-%02d-%02d", y, mo, d);
	map_html_label(o, "lbl", job, "week", value, value);
}

/* Days: a row of weekdays, then a row per ISO week. */
static void
map_html_days(const struct map *m, const char *job, struct buf *o)
{
	static const char *const wd[7] = { "M", "T", "W", "T", "F", "S", "S" };
	int64_t pads = cal_weekday(cal_first_day(&m->cal, m->from)) - 1;

	buf_addstr(o, "<span class=\"lbl\"></span>");
	for (int i = 0; i < 7; i++)
		buf_printf(o, "<span class=\"wd\">%s</span>", wd[i]);
	for (int64_t i = 0; i < pads; i++) {
		if (i == 0)
			map_html_week(m, job, m->from, o);
		buf_addstr(o, "<span class=\"c pad\"></span>");
	}
	for (size_t i = 0; i < m->n; i++) {
		if ((pads + (int64_t)i) % 7 == 0)
			map_html_week(m, job, m->from + (part_t)i, o);
		map_html_cell(m, job, m->from + (part_t)i, NULL, false, o);
	}
}

/* Hours: a row per local day, its date first, then its 23, 24 or 25
 * hours; a repeated local hour's second cell marked. */
static void
map_html_hours(const struct map *m, const char *job, struct buf *o)
{
	struct cal day = { GRAIN_DAY, WEEK_MONDAY, m->cal.tz };
	int64_t d0 = map_day(m, m->from), d1 = map_day(m, m->to);

	for (int64_t d = d0; d <= d1; d++) {
		struct part_range h = cal_overlap(&m->cal, cal_start(&day, d),
						  cal_end(&day, d));
		char date[CAL_KEY_MAX], key[CAL_KEY_MAX], hh[4] = "";
		int prev = -1;

		cal_format_date(d, date);
		map_html_label(o, "lbl", job, "day", date, date);
		for (part_t p = h.first; p <= h.last && p <= m->to; p++) {
			int hour;

			if (p < m->from) {
				buf_addstr(o, "<span class=\"c pad\"></span>");
				continue;
			}
			cal_key(&m->cal, p, key);
			hour = atoi(key + 11);
			snprintf(hh, sizeof hh, "%02d", hour % 100);
			map_html_cell(m, job, p, hh, hour == prev, o);
			prev = hour;
		}
	}
}

void
map_html(const struct map *m, const char *job_html, struct buf *out)
{
	int64_t counts[MAP_NSTATES] = { 0 };

	buf_printf(out, "<div class=\"map g-%s\">", grain_name(m->grain));
	if (m->grain == GRAIN_DAY)
		map_html_days(m, job_html, out);
	else if (m->grain == GRAIN_HOUR)
		map_html_hours(m, job_html, out);
	else
		for (size_t i = 0; i < m->n; i++)
			map_html_cell(m, job_html, m->from + (part_t)i, NULL,
				      false, out);
	for (size_t i = 0; i < m->n; i++)
		counts[m->st[i]]++;
	buf_addstr(out, "</div>\n<p class=\"legend\">");
	for (int k = MAP_NSTATES - 1; k >= 0; k--)
		if (counts[k] > 0)
			buf_printf(out, "<span class=\"c s-%s\"></span>%s %"
				   PRId64, map_state_name((enum map_state)k),
				   map_state_name((enum map_state)k), counts[k]);
}
