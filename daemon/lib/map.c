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
map_init(struct map *m, enum grain g, part_t from, part_t to, struct err *err)
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
	m->grain = g;
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
	free(m->st);
	m->st = NULL;
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

	part_key(c->m->grain, from, a);
	part_key(c->m->grain, to, b);
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

	part_key(m->grain, m->from, a);
	part_key(m->grain, m->to, b);
	buf_addstr(out, "{\"job\": ");
	json_str(out, job);
	buf_printf(out, ", \"grain\": \"%s\", \"from\": \"%s\", \"to\": \"%s\","
		   " \"ranges\": [", grain_name(m->grain), a, b);
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

/* Day number of partition p's first day. */
static int64_t
map_day(enum grain g, part_t p)
{
	int64_t t = part_start(g, p);

	return t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
}

/* Days: a row per ISO week (Monday first), month label where a month
 * begins. */
static void
map_days(const struct map *m, struct row *r)
{
	int64_t d0 = map_day(GRAIN_DAY, m->from), d1 = map_day(GRAIN_DAY, m->to);
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
			map_cell(m, r, part_of_day(GRAIN_DAY, mon + k));
		map_row_end(r);
	}
}

/* Hours: a row per day, 24 columns. */
static void
map_hours(const struct map *m, struct row *r)
{
	int64_t d0 = map_day(GRAIN_HOUR, m->from);
	int64_t d1 = map_day(GRAIN_HOUR, m->to);

	buf_addstr(r->out, "           0     6     12    18\n");
	for (int64_t d = d0; d <= d1; d++) {
		char date[CAL_KEY_MAX];
		part_t h0 = part_of_day(GRAIN_HOUR, d);

		cal_format_date(d, date);
		buf_printf(r->out, "%s ", date);
		for (int k = 0; k < 24; k++)
			map_cell(m, r, h0 + k);
		map_row_end(r);
	}
}

/* Weeks and months: a row per year. */
static void
map_years(const struct map *m, struct row *r)
{
	int y0, y1, mo, d;

	cal_civil_from_days(map_day(m->grain, m->from), &y0, &mo, &d);
	cal_civil_from_days(map_day(m->grain, m->to), &y1, &mo, &d);
	if (m->grain == GRAIN_MONTH)
		buf_addstr(r->out, "     JFMAMJJASOND\n");
	else
		buf_addstr(r->out, "     weeks (by Monday) from the first of the year\n");
	for (int y = y0; y <= y1; y++) {
		part_t p = part_of_day(m->grain, cal_days_from_civil(y, 1, 1));

		/* a week holding Jan 1 with its Monday in the year before
		 * belongs to that year's row */
		if (map_day(m->grain, p) < cal_days_from_civil(y, 1, 1))
			p++;
		buf_printf(r->out, "%04d ", y);
		for (; map_day(m->grain, p) < cal_days_from_civil(y + 1, 1, 1); p++)
			map_cell(m, r, p);
		map_row_end(r);
	}
}

void
map_text(const struct map *m, const char *job, bool colour, struct buf *out)
{
	struct row r = { out, colour, -1 };
	int64_t counts[MAP_NSTATES] = { 0 };
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX];

	part_key(m->grain, m->from, a);
	part_key(m->grain, m->to, b);
	buf_printf(out, "%s (%s) %s..%s: %zu partitions\n", job,
		   grain_name(m->grain), a, b, m->n);
	if (m->grain == GRAIN_DAY)
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
