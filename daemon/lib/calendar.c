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

/* Floor division: rounds toward minus infinity (b > 0). */
static int64_t
cal_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if ((a % b) != 0 && a < 0)
		q--;
	return q;
}

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

/* The configuration word for a grain ("hour", "day", "week", "month"). */
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
	}
	return "unknown";
}

/* Parse a grain word exactly; returns 0, or -1 for anything else. */
int
grain_parse(const char *s, enum grain *g)
{
	static const enum grain all[] = {
		GRAIN_HOUR, GRAIN_DAY, GRAIN_WEEK, GRAIN_MONTH
	};
	size_t i;

	if (s == NULL)
		return -1;
	for (i = 0; i < sizeof all / sizeof all[0]; i++) {
		if (strcmp(s, grain_name(all[i])) == 0) {
			*g = all[i];
			return 0;
		}
	}
	return -1;
}

/* True when `down` is `up` or coarser.  The enum is ordered fine to
 * coarse, so month->week (a month does not fit in weeks) and day->hour
 * are refused, while week->month is allowed: a week straddling two months
 * feeds both. */
bool
grain_can_feed(enum grain up, enum grain down)
{
	if (up < GRAIN_HOUR || up > GRAIN_MONTH ||
	    down < GRAIN_HOUR || down > GRAIN_MONTH)
		return false;
	return up <= down;
}

/* The partition holding day number `days`; for hour, the day's first
 * hour. */
part_t
part_of_day(enum grain g, int64_t days)
{
	int y, m, d;

	switch (g) {
	case GRAIN_HOUR:
		return days * 24;
	case GRAIN_DAY:
		return days;
	case GRAIN_WEEK:
		return cal_div(days + 3, 7);
	case GRAIN_MONTH:
		cal_civil_from_days(days, &y, &m, &d);
		return ((part_t)y - 1970) * 12 + (m - 1);
	}
	return 0;
}

/* The partition holding instant t (seconds). */
part_t
part_of_time(enum grain g, int64_t t)
{
	if (g == GRAIN_HOUR)
		return cal_div(t, CAL_SEC_HOUR);
	return part_of_day(g, cal_div(t, CAL_SEC_DAY));
}

/* Day number of the first day of a day, week or month partition. */
static int64_t
part_first_day(enum grain g, part_t p)
{
	switch (g) {
	case GRAIN_HOUR:
		return cal_div(p, 24);
	case GRAIN_DAY:
		return p;
	case GRAIN_WEEK:
		return p * 7 - 3;
	case GRAIN_MONTH:
		return cal_days_from_civil((int)(1970 + cal_div(p, 12)),
		    (int)cal_mod(p, 12) + 1, 1);
	}
	return 0;
}

/* First second of the partition's interval. */
int64_t
part_start(enum grain g, part_t p)
{
	if (g == GRAIN_HOUR)
		return p * CAL_SEC_HOUR;
	return part_first_day(g, p) * CAL_SEC_DAY;
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
	char date[CAL_KEY_MAX];

	if (g == GRAIN_HOUR) {
		cal_format_date(cal_div(p, 24), date);
		memcpy(buf, date, 10);
		buf[10] = 'T';
		cal_put2(buf + 11, (int)cal_mod(p, 24));
		buf[13] = '\0';
		return;
	}
	cal_format_date(part_first_day(g, p), buf);
}

/* Parse a key at grain g; a week key that is not a Monday, or a month key
 * that is not the 1st, is refused naming the right key. */
int
part_parse_key(enum grain g, const char *s, part_t *p, struct err *err)
{
	char right[CAL_KEY_MAX];
	int64_t v;
	part_t q;

	if (g == GRAIN_HOUR) {
		if (cal_parse_hour(s, &v, err) == -1)
			return -1;
		*p = v;
		return 0;
	}
	if (cal_parse_date(s, &v, err) == -1)
		return -1;
	q = part_of_day(g, v);
	if (part_first_day(g, q) != v) {
		part_key(g, q, right);
		if (g == GRAIN_WEEK)
			return err_set(err, EXIT_BAD_INPUT,
			    "%s is not a week key: weeks are keyed by their "
			    "Monday, %s", s, right);
		return err_set(err, EXIT_BAD_INPUT,
		    "%s is not a month key: months are keyed by their "
		    "first day, %s", s, right);
	}
	*p = q;
	return 0;
}

/* Bound text of an instant: YYYY-MM-DD, or YYYY-MM-DD HH:MM:SS for hour. */
void
part_bound(enum grain g, int64_t t, char *buf)
{
	char date[CAL_KEY_MAX];
	int64_t sod = cal_mod(t, CAL_SEC_DAY);

	cal_format_date(cal_div(t, CAL_SEC_DAY), date);
	if (g != GRAIN_HOUR) {
		memcpy(buf, date, CAL_KEY_MAX);
		return;
	}
	memcpy(buf, date, 10);
	buf[10] = ' ';
	cal_put2(buf + 11, (int)(sod / 3600));
	buf[13] = ':';
	cal_put2(buf + 14, (int)(sod / 60 % 60));
	buf[16] = ':';
	cal_put2(buf + 17, (int)(sod % 60));
	buf[19] = '\0';
}

/* Parse one --from/--to bound at grain g into the hours it spans (hour
 * grain) or the day it names (other grains): [*lo, *hi]. */
static int
range_parse_bound(enum grain g, const char *opt, const char *s, int64_t *lo,
    int64_t *hi, struct err *err)
{
	char q[CAL_QUOTE_MAX + 16];
	int64_t v;

	if (s != NULL && strchr(s, 'T') != NULL) {
		if (g != GRAIN_HOUR)
			return err_set(err, EXIT_BAD_INPUT,
			    "%s %s: only hourly jobs take YYYY-MM-DDTHH "
			    "bounds; this job's partitions are %ss, write "
			    "%s as YYYY-MM-DD", opt, cal_quote(s, q, sizeof q),
			    grain_name(g), opt);
		if (cal_parse_hour(s, &v, err) == -1) {
			err_prefix(err, "%s", opt);
			return -1;
		}
		*lo = *hi = v;
		return 0;
	}
	if (cal_parse_date(s, &v, err) == -1) {
		err_prefix(err, "%s", opt);
		return -1;
	}
	if (g == GRAIN_HOUR) {
		*lo = v * 24;
		*hi = v * 24 + 23;
	} else {
		*lo = *hi = v;
	}
	return 0;
}

/* Parse --from/--to into the first and last partition at grain g whose
 * interval holds a date (or hour) of the inclusive range. */
int
range_parse(enum grain g, const char *from, const char *to,
    struct part_range *r, struct err *err)
{
	int64_t flo = 0, fhi = 0, tlo = 0, thi = 0;

	if (range_parse_bound(g, "--from", from, &flo, &fhi, err) == -1 ||
	    range_parse_bound(g, "--to", to, &tlo, &thi, err) == -1)
		return -1;
	if (flo > thi)
		return err_set(err, EXIT_BAD_INPUT,
		    "--from %s is after --to %s: give the earlier one as "
		    "--from (the range is inclusive)", from, to);
	if (g == GRAIN_HOUR) {
		r->first = flo;
		r->last = thi;
	} else {
		r->first = part_of_day(g, flo);
		r->last = part_of_day(g, thi);
	}
	return 0;
}

/* Parse one date (or hour) of a dates file into the partitions at grain
 * g that hold it; errors speak of "the date", not of --from. */
int
range_parse_date(enum grain g, const char *s, struct part_range *r,
    struct err *err)
{
	int64_t lo = 0, hi = 0;

	if (range_parse_bound(g, "the date", s, &lo, &hi, err) == -1)
		return -1;
	if (g == GRAIN_HOUR) {
		r->first = lo;
		r->last = hi;
	} else {
		r->first = part_of_day(g, lo);
		r->last = part_of_day(g, hi);
	}
	return 0;
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
	part_t first, last;

	if (!grain_can_feed(up, down))
		return 0;
	first = part_of_time(down, part_start(up, p));
	last = part_of_time(down, part_end(up, p) - 1);
	out[0] = first;
	if (last == first)
		return 1;
	out[1] = last;
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
	r.first = part_of_time(up, part_start(down, d));
	r.last = part_of_time(up, part_end(down, d) - 1);
	return r;
}
