/*
 * tz.c - a reader of RFC 8536 TZif v2+ files and the timeline they give
 * (see tz.h).  Written from the RFC; tzcode's localtime.c was read for
 * reference only.
 *
 * Rules that must always hold:
 *
 *  - A zone's spans are in strictly increasing `from` order, span 0 from
 *    INT64_MIN, and two neighbours never share an offset (a transition
 *    that changes only isdst or the abbreviation is no change of time).
 *  - Every offset, from the table or the footer, is within +-26 hours, so
 *    the instants whose wall clock reads `w` lie in [w - 26h, w + 26h]:
 *    tz_wall_first() looks at the spans of that window only.
 *  - Cells: span i's first cell is cell[i] = (last cell of span i - 1) + 1
 *    and shift[i] = cell[i] - floor((from[i] + off[i]) / 3600); cells are
 *    strictly increasing, never empty, at most an hour.
 *  - A footer with daylight saving time repeats every 400 Gregorian years
 *    (146097 days, whole hours): past `base` + one cycle, an instant t is
 *    t - k cycles, its cell the reduced cell + k * cycle_cells.  base is
 *    the first 1 January two years after the table's last transition, and
 *    the footer's transitions are generated to a year past base + a cycle.
 *  - Parsing reads only inside [buf, buf + len): every count is checked
 *    against the bytes left before anything is read.
 */
#include "tz.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calendar.h"
#include "digest.h"
#include "xalloc.h"

#define TZ_SEC_HOUR 3600
#define TZ_SEC_DAY 86400
#define TZ_OFF_MAX (26 * TZ_SEC_HOUR)
#define TZ_CYCLE ((int64_t)146097 * TZ_SEC_DAY)
#define TZ_HDR 44
/* Instants are clamped here: far beyond 9999, far enough from overflow. */
#define TZ_T_LIMIT ((int64_t)1 << 52)
/* Years of footer transitions generated past the table. */
#define TZ_RULE_YEARS 406
#define TZ_DEFAULT_DIR "/usr/share/zoneinfo"

struct tz_span {
	int64_t from;  /* INT64_MIN for span 0 */
	int32_t off;   /* seconds east of UT */
	int64_t shift; /* cell of t = floor((t + off) / 3600) + shift */
	int64_t cell;  /* the span's first cell (span 0: INT64_MIN) */
};

struct tz {
	int refs;
	char name[TZ_NAME_MAX + 1];
	char digest[DIGEST_LEN];
	struct tz_span *sp;
	size_t nsp;
	bool cyclic;	     /* the footer's rule repeats past base */
	int64_t base;	     /* start of the first reduced cycle */
	int64_t cycle_cells; /* cells in one cycle */
	int64_t base_cell;   /* cell of base */
	int32_t max_fold;
};

/* One date of a footer rule: Jn, n or Mm.w.d, and a time of day. */
struct tz_rule_date {
	char kind; /* 'J', 'n' or 'M' */
	int n, m, w, d;
	int32_t secs; /* -167h .. 167h */
};

/* A footer: standard offset and, with DST, its offset and rule. */
struct tz_footer {
	bool empty;
	int32_t std, dst; /* seconds east of UT */
	bool has_dst;
	struct tz_rule_date start, end;
};

/* A transition while the timeline is built. */
struct tz_trans {
	int64_t at;
	int32_t off;
	size_t seq; /* order of generation: the later wins a tie */
};

static uint32_t
tz_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static int64_t
tz_be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)tz_be32(p) << 32 | tz_be32(p + 4));
}

static int64_t
tz_clamp(int64_t t)
{
	if (t > TZ_T_LIMIT)
		return TZ_T_LIMIT;
	if (t < -TZ_T_LIMIT)
		return -TZ_T_LIMIT;
	return t;
}

/* --- the footer: a POSIX TZ string with RFC 8536's extensions ---------- */

/* Up to `max` digits at *s into *v; false when there is none. */
static bool
tz_num(const char **s, int max, int *v)
{
	int n = 0, i = 0;

	while (i < max && **s >= '0' && **s <= '9') {
		n = n * 10 + (**s - '0');
		(*s)++;
		i++;
	}
	*v = n;
	return i > 0;
}

/* A zone abbreviation: <[A-Za-z0-9+-]+> or [A-Za-z]{3,}. */
static bool
tz_abbr(const char **s)
{
	const char *p = *s;

	if (*p == '<') {
		p++;
		while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '+' || *p == '-')
			p++;
		if (*p != '>' || p - *s < 4)
			return false;
		*s = p + 1;
		return true;
	}
	while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'))
		p++;
	if (p - *s < 3)
		return false;
	*s = p;
	return true;
}

/* [+-]hh[:mm[:ss]] with hh <= hmax, into seconds (sign applied). */
static bool
tz_hms(const char **s, int hmax, int32_t *secs)
{
	int sign = 1, h, m = 0, sec = 0;

	if (**s == '+' || **s == '-') {
		sign = **s == '-' ? -1 : 1;
		(*s)++;
	}
	if (!tz_num(s, 3, &h) || h > hmax)
		return false;
	if (**s == ':') {
		(*s)++;
		if (!tz_num(s, 2, &m) || m > 59)
			return false;
		if (**s == ':') {
			(*s)++;
			if (!tz_num(s, 2, &sec) || sec > 59)
				return false;
		}
	}
	*secs = sign * (h * 3600 + m * 60 + sec);
	return true;
}

/* A rule date: Jn (1..365), n (0..365) or Mm.w.d, then [/time]. */
static bool
tz_rule_date(const char **s, struct tz_rule_date *r)
{
	r->secs = 2 * 3600;
	if (**s == 'J') {
		(*s)++;
		r->kind = 'J';
		if (!tz_num(s, 3, &r->n) || r->n < 1 || r->n > 365)
			return false;
	} else if (**s == 'M') {
		(*s)++;
		r->kind = 'M';
		if (!tz_num(s, 2, &r->m) || r->m < 1 || r->m > 12 ||
		    *(*s)++ != '.' || !tz_num(s, 1, &r->w) || r->w < 1 ||
		    r->w > 5 || *(*s)++ != '.' || !tz_num(s, 1, &r->d) ||
		    r->d > 6)
			return false;
	} else {
		r->kind = 'n';
		if (!tz_num(s, 3, &r->n) || r->n > 365)
			return false;
	}
	if (**s == '/') {
		(*s)++;
		if (!tz_hms(s, 167, &r->secs))
			return false;
	}
	return true;
}

/* Parse the footer text s (NUL-terminated, no newline). */
static bool
tz_footer_parse(const char *s, struct tz_footer *f)
{
	int32_t v;

	memset(f, 0, sizeof *f);
	if (*s == '\0') {
		f->empty = true;
		return true;
	}
	if (!tz_abbr(&s) || !tz_hms(&s, 24, &v))
		return false;
	f->std = -v;
	if (*s == '\0')
		return true;
	if (!tz_abbr(&s))
		return false;
	f->has_dst = true;
	f->dst = f->std + 3600;
	if (*s != ',' && *s != '\0') {
		if (!tz_hms(&s, 24, &v))
			return false;
		f->dst = -v;
	}
	/* zic always writes the rule; POSIX leaves its absence to us */
	if (*s++ != ',' || !tz_rule_date(&s, &f->start) || *s++ != ',' ||
	    !tz_rule_date(&s, &f->end) || *s != '\0')
		return false;
	return f->dst >= -TZ_OFF_MAX && f->dst <= TZ_OFF_MAX;
}

/* Day number of a rule date in year y. */
static int64_t
tz_rule_day(const struct tz_rule_date *r, int y)
{
	int64_t jan1 = cal_days_from_civil(y, 1, 1), first, d;
	int dow;

	if (r->kind == 'J')
		return jan1 + r->n - 1 + (cal_is_leap(y) && r->n >= 60);
	if (r->kind == 'n')
		return jan1 + r->n;
	first = cal_days_from_civil(y, r->m, 1);
	dow = cal_weekday(first) % 7; /* 0 = Sunday, as POSIX counts */
	d = first + (r->d - dow + 7) % 7 + (int64_t)(r->w - 1) * 7;
	while (d >= first + cal_days_in_month(y, r->m))
		d -= 7;
	return d;
}

/* --- building the timeline ---------------------------------------------- */

struct tz_build {
	struct tz_trans *t;
	size_t n, cap;
};

static void
tz_build_add(struct tz_build *b, int64_t at, int32_t off)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 64;
		b->t = xreallocarray(b->t, b->cap, sizeof *b->t);
	}
	b->t[b->n].at = at;
	b->t[b->n].off = off;
	b->t[b->n].seq = b->n;
	b->n++;
}

static int
tz_trans_cmp(const void *a, const void *b)
{
	const struct tz_trans *x = a, *y = b;

	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

/* The footer's transitions of years y0..y1, sorted. */
static void
tz_footer_gen(const struct tz_footer *f, int y0, int y1, struct tz_build *b)
{
	for (int y = y0; y <= y1; y++) {
		tz_build_add(b, tz_rule_day(&f->start, y) * TZ_SEC_DAY +
		    f->start.secs - f->std, f->dst);
		tz_build_add(b, tz_rule_day(&f->end, y) * TZ_SEC_DAY +
		    f->end.secs - f->dst, f->std);
	}
	qsort(b->t, b->n, sizeof *b->t, tz_trans_cmp);
}

/* Append a change to offset `off` at `at` (at >= the last span's from). */
static void
tz_span_add(struct tz *z, size_t *cap, int64_t at, int32_t off)
{
	struct tz_span *last = &z->sp[z->nsp - 1];

	if (last->off == off)
		return;
	if (at == last->from && z->nsp > 1) {
		/* a zero-length span: the later offset wins */
		z->nsp--;
		tz_span_add(z, cap, at, off);
		return;
	}
	if (z->nsp == *cap) {
		*cap *= 2;
		z->sp = xreallocarray(z->sp, *cap, sizeof *z->sp);
	}
	z->sp[z->nsp].from = at;
	z->sp[z->nsp].off = off;
	z->nsp++;
}

/* Number the cells and find the largest fold. */
static void
tz_cells(struct tz *z)
{
	z->sp[0].shift = 0;
	z->sp[0].cell = INT64_MIN;
	z->max_fold = 0;
	for (size_t i = 1; i < z->nsp; i++) {
		struct tz_span *p = &z->sp[i - 1], *s = &z->sp[i];
		int64_t c = cal_div(s->from - 1 + p->off, TZ_SEC_HOUR) +
		    p->shift + 1;

		s->cell = c;
		s->shift = c - cal_div(s->from + s->off, TZ_SEC_HOUR);
		if (p->off - s->off > z->max_fold)
			z->max_fold = p->off - s->off;
	}
}

/* The span index holding t (no reduction). */
static size_t
tz_find(const struct tz *z, int64_t t)
{
	size_t lo = 0, hi = z->nsp; /* sp[lo].from <= t < sp[hi].from */

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (z->sp[mid].from <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Cell of t, no reduction. */
static int64_t
tz_raw_cell(const struct tz *z, int64_t t)
{
	const struct tz_span *s = &z->sp[tz_find(z, t)];

	return cal_div(t + s->off, TZ_SEC_HOUR) + s->shift;
}

/* The table's offsets (type of each transition), the footer, and its
 * generated transitions, into z's spans.  Returns false when the footer
 * disagrees with the table's last offset. */
static bool
tz_timeline(struct tz *z, const int64_t *at, const int32_t *off,
    size_t timecnt, int32_t off0, const struct tz_footer *f)
{
	struct tz_build b = { NULL, 0, 0 };
	size_t cap = timecnt + 2 * TZ_RULE_YEARS + 16;
	int32_t cur;
	int y, m, d, ylast;
	bool ok = true;

	z->sp = xcalloc(cap, sizeof *z->sp);
	z->nsp = 1;
	z->sp[0].from = INT64_MIN;
	z->sp[0].off = timecnt == 0 && !f->empty ? f->std : off0;
	for (size_t i = 0; i < timecnt; i++)
		tz_span_add(z, &cap, at[i], off[i]);
	if (f->has_dst) {
		ylast = 0;
		if (timecnt > 0) {
			cal_civil_from_days(cal_div(at[timecnt - 1],
			    TZ_SEC_DAY), &y, &m, &d);
			ylast = y;
		}
		tz_footer_gen(f, ylast - 1, ylast + TZ_RULE_YEARS, &b);
		/* the rule's offset at the last transition is the table's */
		cur = b.t[0].off == f->dst ? f->std : f->dst;
		for (size_t i = 0; i < b.n; i++) {
			if (timecnt > 0 && b.t[i].at <= at[timecnt - 1]) {
				cur = b.t[i].off;
				continue;
			}
			if (timecnt == 0 && z->nsp == 1 && i == 0)
				z->sp[0].off = cur;
			tz_span_add(z, &cap, b.t[i].at, b.t[i].off);
		}
		if (timecnt > 0 && cur != off[timecnt - 1])
			ok = false;
		z->cyclic = true;
		z->base = cal_days_from_civil(ylast + 2, 1, 1) * TZ_SEC_DAY;
	} else if (!f->empty && timecnt > 0 && f->std != off[timecnt - 1]) {
		ok = false;
	}
	free(b.t);
	tz_cells(z);
	if (z->cyclic) {
		z->base_cell = tz_raw_cell(z, z->base);
		z->cycle_cells = tz_raw_cell(z, z->base + TZ_CYCLE) -
		    z->base_cell;
	}
	return ok;
}

/* --- parsing ------------------------------------------------------------ */

/* The six counts of a header at b (TZ_HDR bytes available). */
struct tz_counts {
	uint64_t isut, isstd, leap, time, type, chars;
};

static void
tz_counts_read(const unsigned char *b, struct tz_counts *c)
{
	c->isut = tz_be32(b + 20);
	c->isstd = tz_be32(b + 24);
	c->leap = tz_be32(b + 28);
	c->time = tz_be32(b + 32);
	c->type = tz_be32(b + 36);
	c->chars = tz_be32(b + 40);
}

/* Size of a data block with times of `tsz` bytes (4 or 8). */
static uint64_t
tz_block_size(const struct tz_counts *c, uint64_t tsz)
{
	return c->time * (tsz + 1) + c->type * 6 + c->chars +
	    c->leap * (tsz + 4) + c->isstd + c->isut;
}

/* Check the v2+ block's counts and contents; fill at/off/off0. */
static int
tz_block(const char *name, const unsigned char *p, const struct tz_counts *c,
    int64_t *at, int32_t *off, int32_t *off0, struct err *err)
{
	const unsigned char *idx = p + c->time * 8, *tt = idx + c->time;

	if (c->type == 0 || c->chars == 0 ||
	    (c->isut != 0 && c->isut != c->type) ||
	    (c->isstd != 0 && c->isstd != c->type))
		return err_set(err, EXIT_BAD_INPUT, "time zone %s: its file "
		    "has inconsistent counts (not a zone tzdata installs)",
		    name);
	for (uint64_t i = 0; i < c->type; i++) {
		int32_t u = (int32_t)tz_be32(tt + i * 6);

		if (u < -TZ_OFF_MAX || u > TZ_OFF_MAX || tt[i * 6 + 4] > 1 ||
		    tt[i * 6 + 5] >= c->chars)
			return err_set(err, EXIT_BAD_INPUT, "time zone %s: "
			    "its file has a bad local time type", name);
	}
	*off0 = (int32_t)tz_be32(tt);
	for (uint64_t i = 0; i < c->time; i++) {
		at[i] = tz_be64(p + i * 8);
		if (i > 0 && at[i] <= at[i - 1])
			return err_set(err, EXIT_BAD_INPUT, "time zone %s: "
			    "its file's transitions are not in order", name);
		if (idx[i] >= c->type)
			return err_set(err, EXIT_BAD_INPUT, "time zone %s: "
			    "its file names a local time type it lacks", name);
		off[i] = (int32_t)tz_be32(tt + idx[i] * 6);
	}
	return 0;
}

/* Check the header at b: magic, a version of 2 or more. */
static int
tz_header(const char *name, const unsigned char *b, size_t len,
    struct err *err)
{
	if (len < TZ_HDR || memcmp(b, "TZif", 4) != 0)
		return err_set(err, EXIT_BAD_INPUT, "time zone %s: not a "
		    "TZif file (RFC 8536); reinstall tzdata", name);
	if (b[4] < '2')
		return err_set(err, EXIT_BAD_INPUT, "time zone %s: a version "
		    "1 TZif file (32-bit times only); backfilld reads "
		    "version 2 or later", name);
	return 0;
}

/* The footer at p[0..n): "\n" TZ "\n" and nothing after. */
static int
tz_footer(const char *name, const unsigned char *p, size_t n,
    struct tz_footer *f, struct err *err)
{
	char text[128];
	const unsigned char *nl;

	if (n < 2 || p[0] != '\n' || p[n - 1] != '\n')
		return err_set(err, EXIT_BAD_INPUT, "time zone %s: its file "
		    "is truncated or has bytes after its footer", name);
	nl = memchr(p + 1, '\n', n - 1);
	if (nl != p + n - 1 || n - 2 >= sizeof text ||
	    memchr(p + 1, '\0', n - 2) != NULL)
		return err_set(err, EXIT_BAD_INPUT, "time zone %s: its "
		    "footer is not one line of a TZ rule", name);
	memcpy(text, p + 1, n - 2);
	text[n - 2] = '\0';
	if (!tz_footer_parse(text, f))
		return err_set(err, EXIT_BAD_INPUT, "time zone %s: its "
		    "footer \"%s\" is not a TZ rule this reader knows "
		    "(RFC 8536 section 3.3)", name, text);
	return 0;
}

/* FNV-1a 64 of the file's bytes, as 16 hex digits. */
static void
tz_fingerprint(const unsigned char *buf, size_t len, char *out)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= buf[i];
		h *= 0x100000001b3ULL;
	}
	digest_format(h, out, DIGEST_LEN);
}

/* Parse the bytes of a TZif file named `name`. */
int
tz_parse(const char *name, const unsigned char *buf, size_t len,
    struct tz **out, struct err *err)
{
	struct tz_counts c;
	struct tz_footer f;
	const unsigned char *p;
	uint64_t v1, v2;
	int64_t *at;
	int32_t *off, off0 = 0;
	struct tz *z;
	bool agree;

	if (tz_header(name, buf, len, err) == -1)
		return -1;
	tz_counts_read(buf, &c);
	v1 = tz_block_size(&c, 4);
	if (v1 > len - TZ_HDR || len - TZ_HDR - v1 < TZ_HDR)
		return err_set(err, EXIT_BAD_INPUT, "time zone %s: its file "
		    "is truncated (%zu bytes)", name, len);
	p = buf + TZ_HDR + v1;
	if (tz_header(name, p, TZ_HDR, err) == -1)
		return -1;
	tz_counts_read(p, &c);
	p += TZ_HDR;
	v2 = tz_block_size(&c, 8);
	if (v2 > len - (size_t)(p - buf))
		return err_set(err, EXIT_BAD_INPUT, "time zone %s: its file "
		    "is truncated (%zu bytes)", name, len);
	if (c.leap > 0)
		return err_set(err, EXIT_BAD_INPUT, "time zone %s counts "
		    "leap seconds (a right/ zone); use the zone without "
		    "right/", name);
	if (tz_footer(name, p + v2, len - (size_t)(p - buf) - v2, &f,
	    err) == -1)
		return -1;
	at = xcalloc(c.time + 1, sizeof *at);
	off = xcalloc(c.time + 1, sizeof *off);
	if (tz_block(name, p, &c, at, off, &off0, err) == -1) {
		free(at);
		free(off);
		return -1;
	}
	z = xcalloc(1, sizeof *z);
	z->refs = 1;
	snprintf(z->name, sizeof z->name, "%s", name);
	tz_fingerprint(buf, len, z->digest);
	agree = tz_timeline(z, at, off, (size_t)c.time, off0, &f);
	free(at);
	free(off);
	if (!agree) {
		tz_unref(z);
		return err_set(err, EXIT_BAD_INPUT, "time zone %s: its "
		    "footer disagrees with its last transition", name);
	}
	*out = z;
	return 0;
}

/* --- names and loading -------------------------------------------------- */

/* Check a zone name (see tz.h). */
int
tz_name_check(const char *name, struct err *err)
{
	size_t n = name != NULL ? strlen(name) : 0, i;
	const char *comp;

	if (n == 0 || n > TZ_NAME_MAX)
		return err_set(err, EXIT_BAD_INPUT, "bad time zone name: "
		    "write an IANA name such as Europe/Berlin");
	for (i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || strchr("_+./-", ch) != NULL))
			return err_set(err, EXIT_BAD_INPUT, "bad time zone "
			    "name %.64s: write an IANA name such as "
			    "Europe/Berlin", name);
	}
	for (comp = name; ; comp += i + 1) {
		i = strcspn(comp, "/");
		if (i == 0 || (i == 1 && comp[0] == '.') ||
		    (i == 2 && comp[0] == '.' && comp[1] == '.'))
			return err_set(err, EXIT_BAD_INPUT, "bad time zone "
			    "name %s: write an IANA name such as "
			    "Europe/Berlin", name);
		if (comp[i] == '\0')
			break;
	}
	if (strcmp(name, "localtime") == 0 || strcmp(name, "posixrules") == 0 ||
	    strncmp(name, "right/", 6) == 0)
		return err_set(err, EXIT_BAD_INPUT, "time zone %s is not a "
		    "zone name: write an IANA name such as Europe/Berlin",
		    name);
	return 0;
}

/* Read all of fd (a regular file of at most TZ_FILE_MAX bytes). */
static int
tz_read_fd(int fd, const char *name, const char *path, unsigned char **buf,
    size_t *len, struct err *err)
{
	struct stat st;
	size_t got = 0;

	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		return err_set(err, EXIT_BAD_INPUT, "time zone %s: %s is not "
		    "a zone file", name, path);
	if (st.st_size > TZ_FILE_MAX)
		return err_set(err, EXIT_BAD_INPUT, "time zone %s: %s is "
		    "larger than %d bytes: not a zone file", name, path,
		    TZ_FILE_MAX);
	*buf = xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, *buf + got, (size_t)st.st_size - got);

		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(*buf);
			return err_set(err, EXIT_BAD_INPUT, "time zone %s: "
			    "cannot read %s: %s", name, path,
			    r == 0 ? "shorter than it was" : strerror(errno));
		}
		got += (size_t)r;
	}
	*len = got;
	return 0;
}

/* Read zone `name` from $TZDIR (or /usr/share/zoneinfo). */
int
tz_load(const char *name, struct tz **out, struct err *err)
{
	const char *dir = getenv("TZDIR");
	char path[PATH_MAX];
	unsigned char *buf = NULL;
	size_t len = 0;
	int fd, rc;

	if (tz_name_check(name, err) == -1)
		return -1;
	if (dir == NULL || dir[0] == '\0')
		dir = TZ_DEFAULT_DIR;
	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >=
	    sizeof path)
		return err_set(err, EXIT_BAD_INPUT, "time zone %s: the path "
		    "under %s is too long", name, dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return err_set(err, EXIT_BAD_INPUT, "unknown time zone %s: "
		    "%s is not in %s (%s); write an IANA name such as "
		    "Europe/Berlin", name, name, dir, strerror(errno));
	rc = tz_read_fd(fd, name, path, &buf, &len, err);
	close(fd);
	if (rc == -1)
		return -1;
	rc = tz_parse(name, buf, len, out, err);
	free(buf);
	return rc;
}

/* A job's zone: NULL for a zone that is UTC itself. */
int
tz_load_calendar(const char *name, struct tz **out, struct err *err)
{
	struct tz *z = NULL;

	*out = NULL;
	if (name != NULL && strcmp(name, "UTC") == 0)
		return 0;
	if (tz_load(name, &z, err) == -1)
		return -1;
	if (tz_is_utc(z))
		tz_unref(z);
	else
		*out = z;
	return 0;
}

struct tz *
tz_ref(struct tz *z)
{
	z->refs++;
	return z;
}

void
tz_unref(struct tz *z)
{
	if (z == NULL || --z->refs > 0)
		return;
	free(z->sp);
	free(z);
}

const char *
tz_name(const struct tz *z)
{
	return z->name;
}

const char *
tz_digest(const struct tz *z)
{
	return z->digest;
}

bool
tz_is_utc(const struct tz *z)
{
	return z->nsp == 1 && z->sp[0].off == 0;
}

int32_t
tz_max_fold(const struct tz *z)
{
	return z->max_fold;
}

bool
tz_hours_on_utc_hours(const struct tz *z, int64_t from, int64_t to)
{
	struct tz_seg s;

	for (int64_t t = tz_clamp(from); t < tz_clamp(to); t = s.to) {
		tz_seg_at(z, t, &s);
		if (s.off % TZ_SEC_HOUR != 0)
			return false;
		if (s.to == INT64_MAX)
			break;
	}
	return true;
}

/* --- conversions ---------------------------------------------------------- */

/* Whole cycles to take off t (>= 0): t is past base + a cycle. */
static int64_t
tz_cycles(const struct tz *z, int64_t t)
{
	if (!z->cyclic || t < z->base + TZ_CYCLE)
		return 0;
	return (t - z->base) / TZ_CYCLE;
}

void
tz_seg_at(const struct tz *z, int64_t t, struct tz_seg *s)
{
	int64_t k, span;
	size_t i;

	t = tz_clamp(t);
	k = tz_cycles(z, t);
	span = k * TZ_CYCLE;
	i = tz_find(z, t - span);
	s->off = z->sp[i].off;
	s->from = i == 0 ? INT64_MIN : z->sp[i].from + span;
	s->to = i + 1 < z->nsp ? z->sp[i + 1].from + span : INT64_MAX;
	s->shift = z->sp[i].shift + k * z->cycle_cells -
	    k * (TZ_CYCLE / TZ_SEC_HOUR);
}

int32_t
tz_offset(const struct tz *z, int64_t t)
{
	struct tz_seg s;

	tz_seg_at(z, t, &s);
	return s.off;
}

int64_t
tz_cell_of(const struct tz *z, int64_t t)
{
	struct tz_seg s;

	t = tz_clamp(t);
	tz_seg_at(z, t, &s);
	return cal_div(t + s.off, TZ_SEC_HOUR) + s.shift;
}

int64_t
tz_cell_start(const struct tz *z, int64_t cell)
{
	size_t lo = 0, hi = z->nsp;
	int64_t k = 0;
	const struct tz_span *s;

	if (cell > TZ_T_LIMIT / TZ_SEC_HOUR)
		cell = TZ_T_LIMIT / TZ_SEC_HOUR;
	if (cell < -TZ_T_LIMIT / TZ_SEC_HOUR)
		cell = -TZ_T_LIMIT / TZ_SEC_HOUR;
	if (z->cyclic && cell >= z->base_cell + z->cycle_cells)
		k = (cell - z->base_cell) / z->cycle_cells;
	cell -= k * z->cycle_cells;
	while (hi - lo > 1) { /* sp[lo].cell <= cell < sp[hi].cell */
		size_t mid = lo + (hi - lo) / 2;

		if (z->sp[mid].cell <= cell)
			lo = mid;
		else
			hi = mid;
	}
	s = &z->sp[lo];
	if (lo > 0 && cell == s->cell)
		return s->from + k * TZ_CYCLE;
	return (cell - s->shift) * TZ_SEC_HOUR - s->off + k * TZ_CYCLE;
}

int64_t
tz_wall_first(const struct tz *z, int64_t wall)
{
	int64_t k, span;
	size_t i;

	wall = tz_clamp(wall);
	k = tz_cycles(z, wall - TZ_OFF_MAX);
	span = k * TZ_CYCLE;
	wall -= span;
	for (i = tz_find(z, wall - TZ_OFF_MAX); i < z->nsp; i++) {
		int64_t cand = wall - z->sp[i].off;

		if (i > 0 && cand < z->sp[i].from)
			cand = z->sp[i].from;
		if (i + 1 == z->nsp || cand < z->sp[i + 1].from)
			return cand + span;
	}
	return wall + span; /* not reached: the last span is endless */
}
