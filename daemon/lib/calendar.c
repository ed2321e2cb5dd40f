/*
 * calendar.c - dates, durations and partitions: the pure time arithmetic
 * every other module leans on.  No I/O, no clock, no locale: `now` and
 * every instant are parameters.
 *
 * Rules that must always hold:
 *
 *  - All division is floor division (cal_div, cal_mod), so an instant or
 *    day before 1970 lands in the partition that holds it, not in the one
 *    after.  C's `/` truncates toward zero and is never used on a value
 *    that may be negative.
 *  - Day numbers come from Howard Hinnant's days_from_civil (proleptic
 *    Gregorian, day 0 = 1970-01-01, a Thursday).  ISO week w starts on the
 *    Monday with day number 7w - 3, so part_of_day(WEEK, d) =
 *    floor((d + 3) / 7).  Month index = (y - 1970) * 12 + (m - 1).
 *  - A partition's interval is [part_start(p), part_start(p + 1)).  The
 *    partition of an instant t is the one p with part_start(p) <= t <
 *    part_end(p); everything else (mapping, ranges, due times) is derived
 *    from that one fact, never from a second formula.
 *  - Parsers are strict: exactly the documented shape, ASCII digits only,
 *    no sign, no spaces, no trailing bytes, years 0001..9999, real dates.
 *    A value a parser accepts is the canonical text of what it returns.
 *  - Counting is computed, never enumerated: range_count() is O(1).
 */
#include "calendar.h"
#include "text.h"
#include "tz.h"

#include <stdio.h>
#include <string.h>

#define CAL_SEC_HOUR 3600
#define CAL_SEC_DAY 86400
#define CAL_YEAR_MIN 1
#define CAL_YEAR_MAX 9999
#define CAL_DURATION_MAX ((int64_t)CAL_DURATION_MAX_DAYS * CAL_SEC_DAY)
/* How much of a user's text an error message quotes. */
#define CAL_QUOTE_MAX 48

static const char *cal_month_names[12] = {
	"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"
};

/* Floor modulo: the result is in [0, b) (b > 0). */
static int64_t
cal_mod(int64_t a, int64_t b)
{
	return a - cal_div(a, b) * b;
}

/* Copy user text into out as a quoted, one-line, bounded C-style string. */
static const char *
cal_quote(const char *s, char *out, size_t size)
{
	size_t n = 0, i;

	if (size < 8)
		return "\"?\"";
	out[n++] = '"';
	for (i = 0; s != NULL && s[i] != '\0'; i++) {
		unsigned char c = (unsigned char)s[i];

		if (n + 8 >= size || i >= CAL_QUOTE_MAX) {
			out[n++] = '.';
			out[n++] = '.';
			out[n++] = '.';
			break;
		}
		if (c == '"' || c == '\\') {
			out[n++] = '\\';
			out[n++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			n += text_escape_byte(c, out + n); /* the one rule */
		} else if (c > 0x7f) {
			n += (size_t)snprintf(out + n, size - n, "\\x%02x", c);
		} else {
			out[n++] = (char)c;
		}
	}
	out[n++] = '"';
	out[n] = '\0';
	return out;
}

/* True when s[0..n) are all ASCII digits. */
static bool
cal_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Value of n ASCII digits (already checked by cal_digits). */
static int
cal_atoi(const char *s, size_t n)
{
	int v = 0;
	size_t i;

	for (i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

/* Days since 1970-01-01 of a civil date (Hinnant's days_from_civil). */
int64_t
cal_days_from_civil(int y, int m, int d)
{
	int64_t yy = (int64_t)y - (m <= 2);
	int64_t era = cal_div(yy, 400);
	int64_t yoe = yy - era * 400;                          /* [0, 399] */
	int64_t mp = m > 2 ? m - 3 : m + 9;                    /* March = 0 */
	int64_t doy = (153 * mp + 2) / 5 + d - 1;              /* [0, 365] */
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;   /* [0, 146096] */

	return era * 146097 + doe - 719468;
}

/* Civil date of a day number (Hinnant's civil_from_days). */
void
cal_civil_from_days(int64_t days, int *y, int *m, int *d)
{
	int64_t z = days + 719468;
	int64_t era = cal_div(z, 146097);
	int64_t doe = z - era * 146097;                        /* [0, 146096] */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100); /* [0, 365] */
	int64_t mp = (5 * doy + 2) / 153;                      /* [0, 11] */
	int64_t mm = mp < 10 ? mp + 3 : mp - 9;

	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)mm;
	*y = (int)(yoe + era * 400 + (mm <= 2));
}

/* ISO weekday of a day number: 1 = Monday ... 7 = Sunday (day 0 is a
 * Thursday). */
int
cal_weekday(int64_t days)
{
	return (int)cal_mod(days + 3, 7) + 1;
}

/* True for a Gregorian leap year. */
bool
cal_is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days in month m (1..12) of year y; 0 for a month that does not exist. */
int
cal_days_in_month(int y, int m)
{
	static const int days[12] = {
		31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31
	};

	if (m < 1 || m > 12)
		return 0;
	if (m == 2 && cal_is_leap(y))
		return 29;
	return days[m - 1];
}

/* Check that y-m-d (already shaped as digits) is a real date in range;
 * `text` is what the user wrote, for the message. */
static int
cal_check_date(const char *text, int y, int m, int d, struct err *err)
{
	int mdays;

	if (y < CAL_YEAR_MIN || y > CAL_YEAR_MAX)
		return err_set(err, EXIT_BAD_INPUT,
		    "%s is not a date: years run from 0001 to 9999", text);
	if (m < 1 || m > 12)
		return err_set(err, EXIT_BAD_INPUT,
		    "%s is not a date: months run from 01 to 12", text);
	mdays = cal_days_in_month(y, m);
	if (d < 1 || d > mdays)
		return err_set(err, EXIT_BAD_INPUT,
		    "%s is not a date: %s %04d has %d days", text,
		    cal_month_names[m - 1], y, mdays);
	return 0;
}

/* Parse the YYYY-MM-DD shape at the front of s (exactly 10 bytes, no
 * check on what follows) into y, m, d; false when the shape is wrong. */
static bool
cal_scan_date(const char *s, int *y, int *m, int *d)
{
	if (!cal_digits(s, 4) || s[4] != '-' || !cal_digits(s + 5, 2) ||
	    s[7] != '-' || !cal_digits(s + 8, 2))
		return false;
	*y = cal_atoi(s, 4);
	*m = cal_atoi(s + 5, 2);
	*d = cal_atoi(s + 8, 2);
	return true;
}

/* Strict YYYY-MM-DD (real calendar date, years 0001..9999) -> day number. */
int
cal_parse_date(const char *s, int64_t *days, struct err *err)
{
	char q[CAL_QUOTE_MAX + 16];
	int y, m, d;

	if (s == NULL || strlen(s) != 10 || !cal_scan_date(s, &y, &m, &d))
		return err_set(err, EXIT_BAD_INPUT,
		    "bad date %s: write dates as YYYY-MM-DD, e.g. 2026-02-08",
		    cal_quote(s, q, sizeof q));
	if (cal_check_date(s, y, m, d, err) == -1)
		return -1;
	*days = cal_days_from_civil(y, m, d);
	return 0;
}

/* Strict YYYY-MM-DDTHH (HH 00..23) -> hours since the epoch. */
int
cal_parse_hour(const char *s, int64_t *hours, struct err *err)
{
	char q[CAL_QUOTE_MAX + 16], date[11];
	int y, m, d, h;

	if (s == NULL || strlen(s) != 13 || !cal_scan_date(s, &y, &m, &d) ||
	    s[10] != 'T' || !cal_digits(s + 11, 2))
		return err_set(err, EXIT_BAD_INPUT,
		    "bad hour %s: write hours as YYYY-MM-DDTHH, "
		    "e.g. 2026-02-08T13", cal_quote(s, q, sizeof q));
	memcpy(date, s, 10);
	date[10] = '\0';
	if (cal_check_date(date, y, m, d, err) == -1)
		return -1;
	h = cal_atoi(s + 11, 2);
	if (h > 23)
		return err_set(err, EXIT_BAD_INPUT,
		    "%s is not an hour: hours run from 00 to 23", s);
	*hours = cal_days_from_civil(y, m, d) * 24 + h;
	return 0;
}

/* Strict duration: digits then one of s, m, h, d; at most 100 years. */
int
cal_parse_duration(const char *s, int64_t *seconds, struct err *err)
{
	char q[CAL_QUOTE_MAX + 16];
	int64_t n = 0, unit;
	size_t len, i;

	if (s == NULL || s[0] == '\0')
		return err_set(err, EXIT_BAD_INPUT,
		    "empty duration: write a whole number and a unit "
		    "(s, m, h or d), e.g. 30s, 15m, 2h, 1d");
	len = strlen(s);
	switch (s[len - 1]) {
	case 's':
		unit = 1;
		break;
	case 'm':
		unit = 60;
		break;
	case 'h':
		unit = CAL_SEC_HOUR;
		break;
	case 'd':
		unit = CAL_SEC_DAY;
		break;
	default:
		unit = 0;
		break;
	}
	if (unit == 0 || len < 2 || !cal_digits(s, len - 1))
		return err_set(err, EXIT_BAD_INPUT,
		    "bad duration %s: write a whole number and a unit "
		    "(s, m, h or d), e.g. 30s, 15m, 2h, 1d",
		    cal_quote(s, q, sizeof q));
	for (i = 0; i < len - 1; i++) {
		n = n * 10 + (s[i] - '0');
		if (n > CAL_DURATION_MAX / unit)
			return err_set(err, EXIT_BAD_INPUT,
			    "duration %s is too long: the most is %dd "
			    "(100 years)", cal_quote(s, q, sizeof q),
			    CAL_DURATION_MAX_DAYS);
	}
	*seconds = n * unit;
	return 0;
}

/* Two decimal digits of v (0..99) at p. */
static void
cal_put2(char *p, int v)
{
	p[0] = (char)('0' + v / 10);
	p[1] = (char)('0' + v % 10);
}

/* Format a day number as YYYY-MM-DD into buf (CAL_KEY_MAX). */
void
cal_format_date(int64_t days, char *buf)
{
	int y, m, d;

	cal_civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999) {
		snprintf(buf, CAL_KEY_MAX, "%04d-%02d-%02d", y, m, d);
		return;
	}
	/* by hand: this runs for every partition key and bound, and
	 * snprintf cost more than the rest of a one-row run's bookkeeping */
	cal_put2(buf, y / 100);
	cal_put2(buf + 2, y % 100);
	buf[4] = '-';
	cal_put2(buf + 5, m);
	buf[7] = '-';
	cal_put2(buf + 8, d);
	buf[10] = '\0';
}

/* Format epoch milliseconds as YYYY-MM-DDTHH:MM:SS.sssZ into buf. */
void
cal_format_iso_ms(int64_t ms, char *buf)
{
	int64_t secs = cal_div(ms, 1000);
	int64_t sod = cal_mod(secs, CAL_SEC_DAY);
	int y, m, d;

	cal_civil_from_days(cal_div(secs, CAL_SEC_DAY), &y, &m, &d);
	snprintf(buf, CAL_KEY_MAX, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    y, m, d, (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60),
	    (int)cal_mod(ms, 1000));
}

/* Format a duration in seconds in its largest exact unit: "2h", "90s". */
void
cal_format_duration(int64_t seconds, char *buf)
{
	static const struct {
		int64_t secs;
		char unit;
	} units[] = {
		{ CAL_SEC_DAY, 'd' }, { CAL_SEC_HOUR, 'h' }, { 60, 'm' },
		{ 1, 's' }
	};
	size_t i;

	if (seconds == 0) {
		snprintf(buf, CAL_KEY_MAX, "0s");
		return;
	}
	for (i = 0; i < sizeof units / sizeof units[0]; i++)
		if (seconds % units[i].secs == 0)
			break;
	snprintf(buf, CAL_KEY_MAX, "%lld%c",
	    (long long)(seconds / units[i].secs), units[i].unit);
}

/* The UTC calendar of each grain. */
const struct cal cal_utc[GRAIN_COUNT] = {
	{ GRAIN_HOUR, WEEK_MONDAY, NULL },
	{ GRAIN_DAY, WEEK_MONDAY, NULL },
	{ GRAIN_WEEK, WEEK_MONDAY, NULL },
	{ GRAIN_MONTH, WEEK_MONDAY, NULL },
	{ GRAIN_QUARTER, WEEK_MONDAY, NULL },
	{ GRAIN_YEAR, WEEK_MONDAY, NULL },
	{ GRAIN_NONE, WEEK_MONDAY, NULL },
};

/* The one partition of a none calendar: local days 0001-01-01 up to
 * 9999-12-31 (exclusive, so both bounds print as dates), as UTC instants
 * whatever the zone. */
#define CAL_NONE_FIRST_DAY (-719162)  /* 0001-01-01 */
#define CAL_NONE_END_DAY 2932896      /* 9999-12-31 */

/* The configuration word for a grain ("hour" ... "year"). */
const char *
grain_name(enum grain g)
{
	switch (g) {
	case GRAIN_HOUR:
		return "hour";
	case GRAIN_DAY:
		return "day";
	case GRAIN_WEEK:
		return "week";
	case GRAIN_MONTH:
		return "month";
	case GRAIN_QUARTER:
		return "quarter";
	case GRAIN_YEAR:
		return "year";
	case GRAIN_NONE:
		return "none";
	}
	return "unknown";
}

/* Parse one of the first `n` grain words exactly. */
static int
cal_grain_word(const char *s, int n, enum grain *g)
{
	int i;

	if (s == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if (strcmp(s, grain_name((enum grain)i)) == 0) {
			*g = (enum grain)i;
			return 0;
		}
	}
	return -1;
}

/* Parse a grain a job may declare today (hour, day, week, month). */
int
grain_parse(const char *s, enum grain *g)
{
	return cal_grain_word(s, GRAIN_MONTH + 1, g);
}

/* Parse any of the six grain words. */
int
cal_grain_parse(const char *s, enum grain *g)
{
	return cal_grain_word(s, GRAIN_YEAR + 1, g);
}

/* True when `down` is `up` or coarser.  The enum is ordered fine to
 * coarse, so month->week (a month does not fit in weeks) and day->hour
 * are refused, while week->month is allowed: a week straddling two months
 * feeds both. */
bool
grain_can_feed(enum grain up, enum grain down)
{
	if (up < GRAIN_HOUR || up > GRAIN_NONE ||
	    down < GRAIN_HOUR || down > GRAIN_NONE)
		return false;
	return up <= down;
}

/* May `up` feed `down`: by grain alone, zones may differ. */
bool
cal_can_feed(const struct cal *up, const struct cal *down)
{
	return grain_can_feed(up->grain, down->grain);
}

/* The day+ partition (at grain g, weeks starting on ws) holding local
 * day `days`; for hour, the day's first UTC hour. */
static part_t
cal_of_day(enum grain g, enum week_start ws, int64_t days)
{
	int y, m, d;

	switch (g) {
	case GRAIN_HOUR:
		return days * 24;
	case GRAIN_DAY:
		return days;
	case GRAIN_WEEK:
		return cal_div(days + (ws == WEEK_SUNDAY ? 4 : 3), 7);
	case GRAIN_NONE:
		return 0;
	case GRAIN_MONTH:
	case GRAIN_QUARTER:
	case GRAIN_YEAR:
		break;
	}
	cal_civil_from_days(days, &y, &m, &d);
	if (g == GRAIN_MONTH)
		return ((part_t)y - 1970) * 12 + (m - 1);
	if (g == GRAIN_QUARTER)
		return ((part_t)y - 1970) * 4 + (m - 1) / 3;
	return (part_t)y - 1970;
}

/* Local day number of the first day of a day+ partition (for hour, of
 * the UTC day holding the hour). */
static int64_t
cal_day_of(enum grain g, enum week_start ws, part_t p)
{
	switch (g) {
	case GRAIN_HOUR:
		return cal_div(p, 24);
	case GRAIN_DAY:
		return p;
	case GRAIN_WEEK:
		return p * 7 - (ws == WEEK_SUNDAY ? 4 : 3);
	case GRAIN_MONTH:
		return cal_days_from_civil((int)(1970 + cal_div(p, 12)),
		    (int)cal_mod(p, 12) + 1, 1);
	case GRAIN_QUARTER:
		return cal_days_from_civil((int)(1970 + cal_div(p, 4)),
		    (int)cal_mod(p, 4) * 3 + 1, 1);
	case GRAIN_YEAR:
		return cal_days_from_civil((int)(1970 + p), 1, 1);
	case GRAIN_NONE:
		return p <= 0 ? CAL_NONE_FIRST_DAY : CAL_NONE_END_DAY;
	}
	return 0;
}

/* The partition holding day number `days`; for hour, the day's first
 * hour. */
part_t
part_of_day(enum grain g, int64_t days)
{
	return cal_of_day(g, WEEK_MONDAY, days);
}

/* The partition holding instant t (seconds). */
part_t
part_of_time(enum grain g, int64_t t)
{
	if (g == GRAIN_HOUR)
		return cal_div(t, CAL_SEC_HOUR);
	return cal_of_day(g, WEEK_MONDAY, cal_div(t, CAL_SEC_DAY));
}

/* First second of the partition's interval. */
int64_t
part_start(enum grain g, part_t p)
{
	if (g == GRAIN_HOUR)
		return p * CAL_SEC_HOUR;
	return cal_day_of(g, WEEK_MONDAY, p) * CAL_SEC_DAY;
}

/* First second after the partition's interval (exclusive end). */
int64_t
part_end(enum grain g, part_t p)
{
	return part_start(g, p + 1);
}

/* Key text of a partition into buf (CAL_KEY_MAX). */
void
part_key(enum grain g, part_t p, char *buf)
{
	cal_key(&cal_utc[g], p, buf);
}

/* Parse a key at grain g (the UTC calendar, Monday weeks). */
int
part_parse_key(enum grain g, const char *s, part_t *p, struct err *err)
{
	return cal_parse_key(&cal_utc[g], s, p, err);
}

/* YYYY-MM-DD HH:MM:SS of wall-clock seconds w into buf. */
static void
cal_format_wall(int64_t w, char *buf)
{
	int64_t sod = cal_mod(w, CAL_SEC_DAY);

	cal_format_date(cal_div(w, CAL_SEC_DAY), buf);
	buf[10] = ' ';
	cal_put2(buf + 11, (int)(sod / 3600));
	buf[13] = ':';
	cal_put2(buf + 14, (int)(sod / 60 % 60));
	buf[16] = ':';
	cal_put2(buf + 17, (int)(sod % 60));
	buf[19] = '\0';
}

/* Bound text of an instant: YYYY-MM-DD, or YYYY-MM-DD HH:MM:SS for hour. */
void
part_bound(enum grain g, int64_t t, char *buf)
{
	if (g != GRAIN_HOUR) {
		cal_format_date(cal_div(t, CAL_SEC_DAY), buf);
		return;
	}
	cal_format_wall(t, buf);
}

/* An instant as UTC text, YYYY-MM-DD HH:MM:SS. */
void
cal_bound_utc(int64_t t, char buf[CAL_KEY_MAX])
{
	cal_format_wall(t, buf);
}

/* Parse --from/--to into the first and last partition at grain g whose
 * interval holds a date (or hour) of the inclusive range. */
int
range_parse(enum grain g, const char *from, const char *to,
    struct part_range *r, struct err *err)
{
	return cal_range_parse(&cal_utc[g], from, to, r, err);
}

/* One date (or hour) of a dates file at grain g. */
int
range_parse_date(enum grain g, const char *s, struct part_range *r,
    struct err *err)
{
	return cal_range_parse_one(&cal_utc[g], s, r, err);
}

/* Number of partitions in an inclusive range (0 if empty); O(1). */
int64_t
range_count(const struct part_range *r)
{
	if (r->last < r->first)
		return 0;
	return r->last - r->first + 1;
}

/* The partitions of grain `down` that contain partition p of grain `up`:
 * returns how many (1 or 2, 0 when up cannot feed down). */
int
part_map(enum grain up, part_t p, enum grain down, part_t out[2])
{
	struct part_range r;

	if (!grain_can_feed(up, down))
		return 0;
	r = cal_map(&cal_utc[up], p, &cal_utc[down]);
	out[0] = r.first;
	if (r.last == r.first)
		return 1;
	out[1] = r.last;
	return 2;
}

/* The range of `up` partitions that overlap partition d of grain `down`
 * (an empty range, last < first, when up cannot feed down). */
struct part_range
part_inputs(enum grain up, enum grain down, part_t d)
{
	struct part_range r = { 0, -1 };

	if (!grain_can_feed(up, down))
		return r;
	return cal_inputs(&cal_utc[up], &cal_utc[down], d);
}

/*
 * The calendar of a job.  Every function starts with the UTC branch (tz
 * == NULL): the closed forms, one predictable branch for a UTC job.
 */

/* First instant of local day `days`: the first instant whose wall clock
 * reads that date or later. */
static int64_t
cal_day_start(const struct cal *c, int64_t days)
{
	if (c->tz == NULL)
		return days * CAL_SEC_DAY;
	return tz_wall_first(c->tz, days * CAL_SEC_DAY);
}

/* Local day number of instant t: the day whose interval holds t. */
int64_t
cal_local_day(const struct cal *c, int64_t t)
{
	int64_t d;

	if (c->tz == NULL)
		return cal_div(t, CAL_SEC_DAY);
	/* the wall clock's date, moved to the day whose interval holds t
	 * (a fold at midnight, a skipped day) */
	d = cal_div(t + tz_offset(c->tz, t), CAL_SEC_DAY);
	while (cal_day_start(c, d + 1) <= t)
		d++;
	while (cal_day_start(c, d) > t)
		d--;
	return d;
}

/* The partition holding instant t. */
part_t
cal_part_of(const struct cal *c, int64_t t)
{
	if (c->grain == GRAIN_NONE)
		return 0;
	if (c->grain == GRAIN_HOUR)
		return c->tz == NULL ? cal_div(t, CAL_SEC_HOUR) :
		    tz_cell_of(c->tz, t);
	return cal_of_day(c->grain, c->week_start, cal_local_day(c, t));
}

/* First second of p's interval. */
int64_t
cal_start(const struct cal *c, part_t p)
{
	if (c->grain == GRAIN_NONE)
		return cal_day_of(GRAIN_NONE, c->week_start, p) * CAL_SEC_DAY;
	if (c->grain == GRAIN_HOUR)
		return c->tz == NULL ? p * CAL_SEC_HOUR :
		    tz_cell_start(c->tz, p);
	return cal_day_start(c, cal_day_of(c->grain, c->week_start, p));
}

/* First second after p's interval. */
int64_t
cal_end(const struct cal *c, part_t p)
{
	return cal_start(c, p + 1);
}

/* True for a zero-length partition (a local day a zone skipped). */
bool
cal_empty(const struct cal *c, part_t p)
{
	if (c->grain == GRAIN_NONE)
		return p != 0;
	if (c->tz == NULL)
		return false;
	return cal_start(c, p) == cal_end(c, p);
}

/* Local day number of p's key (day+), or of its first instant (hour). */
int64_t
cal_first_day(const struct cal *c, part_t p)
{
	if (c->grain == GRAIN_HOUR)
		return cal_local_day(c, cal_start(c, p));
	return cal_day_of(c->grain, c->week_start, p);
}

/* The partition holding local day `local_day` (hour: its first cell). */
part_t
cal_part_of_day(const struct cal *c, int64_t local_day)
{
	if (c->grain == GRAIN_HOUR && c->tz != NULL)
		return cal_part_of(c, cal_day_start(c, local_day));
	return cal_of_day(c->grain, c->week_start, local_day);
}

/* Write an offset as +HH:MM, or +HH:MM:SS when it has seconds (the local
 * mean time of a place before 1900), at p; returns its length. */
static size_t
cal_format_offset(int32_t off, char *p)
{
	int32_t a = off < 0 ? -off : off;

	p[0] = off < 0 ? '-' : '+';
	cal_put2(p + 1, (int)(a / 3600));
	p[3] = ':';
	cal_put2(p + 4, (int)(a / 60 % 60));
	if (a % 60 == 0)
		return 6;
	p[6] = ':';
	cal_put2(p + 7, (int)(a % 60));
	return 9;
}

/* The key of hour cell p of a zone: the wall hour and the offset of its
 * first instant, YYYY-MM-DDTHH+01:00. */
static void
cal_zoned_key(const struct cal *c, part_t p, char buf[CAL_KEY_MAX])
{
	int64_t t = tz_cell_start(c->tz, p);
	int32_t off = tz_offset(c->tz, t);
	int64_t w = t + off;

	cal_format_date(cal_div(w, CAL_SEC_DAY), buf);
	buf[10] = 'T';
	cal_put2(buf + 11, (int)(cal_mod(w, CAL_SEC_DAY) / 3600));
	buf[13 + cal_format_offset(off, buf + 13)] = '\0';
}

/* Parse the offset of a zoned hour key at s: [+-]HH:MM or [+-]HH:MM:SS
 * and nothing after; false when the shape is wrong. */
static bool
cal_scan_offset(const char *s, int32_t *off)
{
	size_t n = strlen(s);
	int32_t v;

	if ((n != 6 && n != 9) || (s[0] != '+' && s[0] != '-') ||
	    !cal_digits(s + 1, 2) || s[3] != ':' || !cal_digits(s + 4, 2) ||
	    (n == 9 && (s[6] != ':' || !cal_digits(s + 7, 2))))
		return false;
	v = cal_atoi(s + 1, 2) * 3600 + cal_atoi(s + 4, 2) * 60 +
	    (n == 9 ? cal_atoi(s + 7, 2) : 0);
	if (cal_atoi(s + 4, 2) > 59 || (n == 9 && cal_atoi(s + 7, 2) > 59) ||
	    v > 26 * 3600)
		return false;
	*off = s[0] == '-' ? -v : v;
	return true;
}

/* The keys of the cells of wall hour h (hours since the epoch, local)
 * into list ("K1 and K2"); returns how many. */
static int
cal_wall_hour_keys(const struct cal *c, int64_t h, char *list, size_t size)
{
	struct part_range r = cal_overlap(c,
	    tz_wall_first(c->tz, h * CAL_SEC_HOUR),
	    tz_wall_first(c->tz, (h + 1) * CAL_SEC_HOUR));
	char want[CAL_KEY_MAX], key[CAL_KEY_MAX];
	int n = 0;

	cal_key(&cal_utc[GRAIN_HOUR], h, want);
	list[0] = '\0';
	for (part_t p = r.first; p <= r.last; p++) {
		cal_key(c, p, key);
		if (strncmp(key, want, 13) != 0)
			continue;
		snprintf(list + strlen(list), size - strlen(list), "%s%s",
		    n > 0 ? " and " : "", key);
		n++;
	}
	return n;
}

/* Refuse wall hour h of a zone: not a key of it (naming the keys it
 * has) or a time the clocks skipped (naming the change). */
static int
cal_refuse_hour(const struct cal *c, const char *s, int64_t h,
    struct err *err)
{
	char list[4 * CAL_KEY_MAX], q[CAL_QUOTE_MAX + 16], a[CAL_KEY_MAX],
	    b[CAL_KEY_MAX];
	int64_t t;
	int n = cal_wall_hour_keys(c, h, list, sizeof list);

	if (n > 0)
		return err_set(err, EXIT_BAD_INPUT, "%s is not an hour of %s: "
		    "that hour is %s", cal_quote(s, q, sizeof q),
		    tz_name(c->tz), list);
	t = tz_wall_first(c->tz, h * CAL_SEC_HOUR);
	cal_format_wall(t - 1 + tz_offset(c->tz, t - 1) + 1, a);
	cal_format_wall(t + tz_offset(c->tz, t), b);
	return err_set(err, EXIT_BAD_INPUT, "%s does not exist in %s: clocks "
	    "went from %.5s to %.5s on %.10s", cal_quote(s, q, sizeof q),
	    tz_name(c->tz), a + 11, b + 11, a);
}

/* Parse a zoned hour key YYYY-MM-DDTHH+01:00: exactly one cell of the
 * three around its instant must have that key. */
static int
cal_parse_zoned_hour(const struct cal *c, const char *s, part_t *p,
    struct err *err)
{
	char hour[14], key[CAL_KEY_MAX], q[CAL_QUOTE_MAX + 16];
	int64_t h;
	int32_t off;
	part_t mid;

	if (s == NULL || strlen(s) < 14 || strlen(s) > 22 ||
	    !cal_scan_offset(s + 13, &off))
		return err_set(err, EXIT_BAD_INPUT, "bad hour %s: write hours "
		    "of %s as YYYY-MM-DDTHH and their offset, e.g. "
		    "2026-02-08T13+01:00", cal_quote(s, q, sizeof q),
		    c->tz != NULL ? tz_name(c->tz) : "a zone");
	memcpy(hour, s, 13);
	hour[13] = '\0';
	if (cal_parse_hour(hour, &h, err) == -1)
		return -1;
	mid = tz_cell_of(c->tz, h * CAL_SEC_HOUR - off);
	for (part_t k = mid - 1; k <= mid + 1; k++) {
		cal_key(c, k, key);
		if (strcmp(key, s) == 0) {
			*p = k;
			return 0;
		}
	}
	return cal_refuse_hour(c, s, h, err);
}

/* Key text of p into buf. */
void
cal_key(const struct cal *c, part_t p, char buf[CAL_KEY_MAX])
{
	if (c->grain == GRAIN_NONE) {
		strcpy(buf, "-");
		return;
	}
	if (c->grain != GRAIN_HOUR) {
		cal_format_date(cal_day_of(c->grain, c->week_start, p), buf);
		return;
	}
	if (c->tz != NULL) {
		cal_zoned_key(c, p, buf);
		return;
	}
	cal_format_date(cal_div(p, 24), buf);
	buf[10] = 'T';
	cal_put2(buf + 11, (int)cal_mod(p, 24));
	buf[13] = '\0';
}

/* The refusal of a day+ key that is not its partition's first day. */
static int
cal_refuse_key(const struct cal *c, const char *s, part_t q,
    struct err *err)
{
	char right[CAL_KEY_MAX];

	cal_key(c, q, right);
	switch (c->grain) {
	case GRAIN_WEEK:
		return err_set(err, EXIT_BAD_INPUT,
		    "%s is not a week key: weeks are keyed by their "
		    "%s, %s", s, c->week_start == WEEK_SUNDAY ? "Sunday" :
		    "Monday", right);
	case GRAIN_NONE:
		return err_set(err, EXIT_BAD_INPUT,
		    "%s is not the key of a job with partition: none: its "
		    "one partition is keyed -", s);
	case GRAIN_HOUR:
	case GRAIN_DAY:
	case GRAIN_MONTH:
	case GRAIN_QUARTER:
	case GRAIN_YEAR:
		break;
	}
	return err_set(err, EXIT_BAD_INPUT,
	    "%s is not a %s key: %ss are keyed by their first day, %s", s,
	    grain_name(c->grain), grain_name(c->grain), right);
}

/* Parse a canonical key of calendar c. */
int
cal_parse_key(const struct cal *c, const char *s, part_t *p, struct err *err)
{
	int64_t v;
	part_t q;

	if (c->grain == GRAIN_NONE) {
		if (strcmp(s, "-") != 0)
			return cal_refuse_key(c, s, 0, err);
		*p = 0;
		return 0;
	}
	if (c->grain == GRAIN_HOUR) {
		if (c->tz != NULL)
			return cal_parse_zoned_hour(c, s, p, err);
		if (cal_parse_hour(s, &v, err) == -1)
			return -1;
		*p = v;
		return 0;
	}
	if (cal_parse_date(s, &v, err) == -1)
		return -1;
	q = cal_of_day(c->grain, c->week_start, v);
	if (cal_day_of(c->grain, c->week_start, q) != v)
		return cal_refuse_key(c, s, q, err);
	if (c->tz != NULL && cal_empty(c, q))
		return err_set(err, EXIT_BAD_INPUT, "%s did not happen in %s: "
		    "its clocks skipped that day", s, tz_name(c->tz));
	*p = q;
	return 0;
}

/* Local bounds of p. */
void
cal_bounds_local(const struct cal *c, part_t p, char start[CAL_KEY_MAX],
    char end[CAL_KEY_MAX])
{
	int64_t t;

	if (c->grain != GRAIN_HOUR) { /* none: 0001-01-01, 9999-12-31 */
		cal_format_date(cal_day_of(c->grain, c->week_start, p), start);
		cal_format_date(cal_day_of(c->grain, c->week_start, p + 1),
		    end);
		return;
	}
	if (c->tz == NULL) {
		cal_format_wall(p * CAL_SEC_HOUR, start);
		cal_format_wall((p + 1) * CAL_SEC_HOUR, end);
		return;
	}
	/* the end is the wall clock of the cell's last second, plus one:
	 * the first 01 hour of a fold ends at 02:00:00, not 01:00:00 */
	t = cal_start(c, p);
	cal_format_wall(t + tz_offset(c->tz, t), start);
	t = cal_end(c, p) - 1;
	cal_format_wall(t + tz_offset(c->tz, t) + 1, end);
}

/* The first instant whose wall clock reads w or later. */
static int64_t
cal_wall_first(const struct cal *c, int64_t w)
{
	return c->tz == NULL ? w : tz_wall_first(c->tz, w);
}

/* A bound that is one cell of a zone: an hour with its offset. */
static int
cal_range_cell(const struct cal *c, const char *opt, const char *s,
    int64_t *lo, int64_t *hi, struct err *err)
{
	part_t p;

	if (cal_parse_key(c, s, &p, err) == -1) {
		err_prefix(err, "%s", opt);
		return -1;
	}
	*lo = cal_start(c, p);
	*hi = cal_end(c, p);
	return 0;
}

/* Parse one --from/--to bound of calendar c into the instants it covers,
 * [*lo, *hi): a local date, or (hour grain) a local hour. */
static int
cal_range_bound(const struct cal *c, const char *opt, const char *s,
    int64_t *lo, int64_t *hi, struct err *err)
{
	char q[CAL_QUOTE_MAX + 16];
	int64_t v;

	if (c->grain == GRAIN_NONE)
		return err_set(err, EXIT_BAD_INPUT,
		    "%s %s: a job with partition: none has one partition, "
		    "-, and takes no dates (a backfill without dates "
		    "rebuilds it)", opt, cal_quote(s, q, sizeof q));
	if (s != NULL && strchr(s, 'T') != NULL) {
		if (c->grain != GRAIN_HOUR)
			return err_set(err, EXIT_BAD_INPUT,
			    "%s %s: only hourly jobs take YYYY-MM-DDTHH "
			    "bounds; this job's partitions are %ss, write "
			    "%s as YYYY-MM-DD", opt, cal_quote(s, q, sizeof q),
			    grain_name(c->grain), opt);
		if (c->tz != NULL && strlen(s) > 13)
			return cal_range_cell(c, opt, s, lo, hi, err);
		if (cal_parse_hour(s, &v, err) == -1) {
			err_prefix(err, "%s", opt);
			return -1;
		}
		*lo = cal_wall_first(c, v * CAL_SEC_HOUR);
		*hi = cal_wall_first(c, (v + 1) * CAL_SEC_HOUR);
		return 0;
	}
	if (cal_parse_date(s, &v, err) == -1) {
		err_prefix(err, "%s", opt);
		return -1;
	}
	*lo = cal_day_start(c, v);
	*hi = cal_day_start(c, v + 1);
	return 0;
}

/* Refuse a range of time the zone's clocks skipped. */
static int
cal_refuse_skipped(const struct cal *c, const char *from, const char *to,
    struct err *err)
{
	char q[CAL_QUOTE_MAX + 16], q2[CAL_QUOTE_MAX + 16];

	return err_set(err, EXIT_BAD_INPUT, "%s..%s did not happen in %s: "
	    "its clocks skipped that time; nothing was queued",
	    cal_quote(from, q, sizeof q), cal_quote(to, q2, sizeof q2),
	    cal_zone_name(c));
}

/* Parse --from/--to of calendar c: the partitions overlapping the
 * instants from the first of `from` to the last of `to`. */
int
cal_range_parse(const struct cal *c, const char *from, const char *to,
    struct part_range *r, struct err *err)
{
	int64_t flo = 0, fhi = 0, tlo = 0, thi = 0;

	if (cal_range_bound(c, "--from", from, &flo, &fhi, err) == -1 ||
	    cal_range_bound(c, "--to", to, &tlo, &thi, err) == -1)
		return -1;
	if (flo >= thi && flo > tlo)
		return err_set(err, EXIT_BAD_INPUT,
		    "--from %s is after --to %s: give the earlier one as "
		    "--from (the range is inclusive)", from, to);
	if (flo >= thi)
		return cal_refuse_skipped(c, from, to, err);
	*r = cal_overlap(c, flo, thi);
	return 0;
}

/* One date (or hour) of a dates file: the partitions overlapping it. */
int
cal_range_parse_one(const struct cal *c, const char *s,
    struct part_range *r, struct err *err)
{
	int64_t lo = 0, hi = 0;

	if (cal_range_bound(c, "the date", s, &lo, &hi, err) == -1)
		return -1;
	if (lo >= hi)
		return cal_refuse_skipped(c, s, s, err);
	*r = cal_overlap(c, lo, hi);
	return 0;
}

/* The partitions of c overlapping the instants [lo, hi). */
struct part_range
cal_overlap(const struct cal *c, int64_t lo, int64_t hi)
{
	struct part_range r = { 0, -1 };

	if (lo >= hi)
		return r;
	r.first = cal_part_of(c, lo);
	r.last = cal_part_of(c, hi - 1);
	return r;
}

/* The partitions of `down` that partition p of `up` overlaps. */
struct part_range
cal_map(const struct cal *up, part_t p, const struct cal *down)
{
	return cal_overlap(down, cal_start(up, p), cal_end(up, p));
}

/* The partitions of `up` that overlap partition d of `down`. */
struct part_range
cal_inputs(const struct cal *up, const struct cal *down, part_t d)
{
	return cal_overlap(up, cal_start(down, d), cal_end(down, d));
}

/* The partitions of `up` in the window of d (lookback L). */
struct part_range
cal_window_inputs(const struct cal *up, const struct cal *down, part_t d,
    int lookback)
{
	return cal_overlap(up, cal_start(down, d - lookback),
	    cal_end(down, d));
}

/* The partitions of `down` whose window (lookback L) overlaps u. */
struct part_range
cal_window_readers(const struct cal *up, part_t u, const struct cal *down,
    int lookback)
{
	struct part_range r = cal_map(up, u, down);

	if (r.last >= r.first)
		r.last += lookback;
	return r;
}

/* True unless keys sort out of time order (hours of a zone). */
bool
cal_keys_sort_in_time(const struct cal *c)
{
	return c->tz == NULL || c->grain != GRAIN_HOUR;
}

/* Byte-order bounds holding every key of range r. */
void
cal_key_hull(const struct cal *c, struct part_range r, char lo[CAL_KEY_MAX],
    char hi[CAL_KEY_MAX])
{
	int64_t t;

	if (cal_keys_sort_in_time(c)) {
		cal_key(c, r.first, lo);
		cal_key(c, r.last, hi);
		return;
	}
	/* a key's wall hour is within the largest fold of its instant's */
	t = cal_start(c, r.first);
	t += tz_offset(c->tz, t) - tz_max_fold(c->tz);
	cal_key(&cal_utc[GRAIN_HOUR], cal_div(t, CAL_SEC_HOUR), lo);
	t = cal_start(c, r.last);
	t += tz_offset(c->tz, t) + tz_max_fold(c->tz);
	cal_key(&cal_utc[GRAIN_HOUR], cal_div(t, CAL_SEC_HOUR), hi);
	hi[13] = '~'; /* after every offset's sign: '+' and '-' */
	hi[14] = '\0';
}

/* "UTC" or the zone's IANA name. */
const char *
cal_zone_name(const struct cal *c)
{
	return c->tz == NULL ? "UTC" : tz_name(c->tz);
}
