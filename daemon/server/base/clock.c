/*
 * clock.c - the one place that reads the wall clock (log.c's timestamps
 * aside).
 *
 * Normally clock_now_ms() is CLOCK_REALTIME.  With BACKFILLD_TEST_CLOCK_FILE
 * set, it is the instant written in that file, read lazily on first use and
 * again on each clock_reload(); the clock stands still in between.  The file
 * holds "YYYY-MM-DDTHH:MM:SSZ" (optionally with ".sss" milliseconds) or
 * integer epoch seconds, with an optional trailing newline.
 *
 * Time rules that must hold:
 *   - a test clock never falls back to real time once it has been read:
 *     an unreadable or malformed file logs a warning and keeps the
 *     previous value;
 *   - until the file has been read successfully once, the real clock is
 *     used (and a warning says why).
 * The state is behind a mutex: worker threads may ask for the time.
 */
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "calendar.h"
#include "clock_ms.h"
#include "log.h"

#define CLOCK_FILE_MAX 128

static pthread_mutex_t clock_lock = PTHREAD_MUTEX_INITIALIZER;
static bool clock_tried;   /* the test file has been read at least once */
static bool clock_have;    /* clock_test_ms holds a value from the file */
static int64_t clock_test_ms;

/* The real clock in milliseconds since the epoch. */
static int64_t
clock_real_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

/* Parse n decimal digits at s into *v; -1 if any is not a digit. */
static int
clock_digits(const char *s, int n, int *v)
{
	int i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (s[i] - '0');
	}
	return 0;
}

/* "YYYY-MM-DDTHH:MM:SS[.sss]Z" -> epoch ms; -1 if malformed. */
static int
clock_parse_iso(const char *s, size_t len, int64_t *ms)
{
	int y, mo, d, h, mi, sec, frac = 0;

	if (len != 20 && len != 24)
		return -1;
	if (clock_digits(s, 4, &y) || s[4] != '-' ||
	    clock_digits(s + 5, 2, &mo) || s[7] != '-' ||
	    clock_digits(s + 8, 2, &d) || s[10] != 'T' ||
	    clock_digits(s + 11, 2, &h) || s[13] != ':' ||
	    clock_digits(s + 14, 2, &mi) || s[16] != ':' ||
	    clock_digits(s + 17, 2, &sec))
		return -1;
	if (len == 24 && (s[19] != '.' || clock_digits(s + 20, 3, &frac)))
		return -1;
	if (s[len - 1] != 'Z')
		return -1;
	if (y < 1 || mo < 1 || mo > 12 || d < 1 ||
	    d > cal_days_in_month(y, mo) || h > 23 || mi > 59 || sec > 59)
		return -1;
	*ms = ((cal_days_from_civil(y, mo, d) * 86400) + h * 3600 +
	    mi * 60 + sec) * 1000 + frac;
	return 0;
}

/* Integer epoch seconds (optional '-') -> epoch ms; -1 if malformed. */
static int
clock_parse_epoch(const char *s, size_t len, int64_t *ms)
{
	int64_t v = 0;
	size_t i = 0;
	int neg = 0;

	if (len > 0 && s[0] == '-') {
		neg = 1;
		i = 1;
	}
	if (i == len || len - i > 15) /* 15 digits: far past year 9999 */
		return -1;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*ms = (neg ? -v : v) * 1000;
	return 0;
}

/* Read and parse the test clock file; 0, or -1 with a reason in why. */
static int
clock_read_file(const char *path, int64_t *ms, char *why, size_t whylen)
{
	char text[CLOCK_FILE_MAX + 1];
	size_t len = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		return -1;
	}
	while (len < sizeof text - 1) {
		n = read(fd, text + len, sizeof text - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(why, whylen, "%s", strerror(errno));
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len == sizeof text - 1) {
		snprintf(why, whylen, "file is longer than %d bytes",
		    CLOCK_FILE_MAX);
		return -1;
	}
	text[len] = '\0';
	if (len > 0 && text[len - 1] == '\n')
		len--;
	if (len > 0 && text[len - 1] == '\r')
		len--;
	text[len] = '\0';
	if (clock_parse_iso(text, len, ms) == 0 ||
	    clock_parse_epoch(text, len, ms) == 0)
		return 0;
	snprintf(why, whylen, "'%.40s' is neither YYYY-MM-DDTHH:MM:SSZ nor "
	    "epoch seconds", text);
	return -1;
}

/* Path of the test clock file, or NULL when the real clock is in use. */
const char *
clock_test_file(void)
{
	const char *p = getenv("BACKFILLD_TEST_CLOCK_FILE");

	return p != NULL && *p != '\0' ? p : NULL;
}

/* True when a test clock file is in use. */
bool
clock_is_test(void)
{
	return clock_test_file() != NULL;
}

/* Re-read the test file; called with clock_lock held. */
static void
clock_reload_locked(const char *path)
{
	char why[256];
	int64_t ms;

	clock_tried = true;
	if (clock_read_file(path, &ms, why, sizeof why) == 0) {
		clock_test_ms = ms;
		clock_have = true;
		return;
	}
	if (clock_have)
		log_warn("test clock file %s unusable: %s; keeping the "
		    "previous time (write YYYY-MM-DDTHH:MM:SSZ or epoch "
		    "seconds)", path, why);
	else
		log_warn("test clock file %s unusable: %s; using the real "
		    "clock (write YYYY-MM-DDTHH:MM:SSZ or epoch seconds)",
		    path, why);
}

/* Re-read the test clock file (after it changed); no-op without one. */
void
clock_reload(void)
{
	const char *path = clock_test_file();

	if (path == NULL)
		return;
	pthread_mutex_lock(&clock_lock);
	clock_reload_locked(path);
	pthread_mutex_unlock(&clock_lock);
}

/* Milliseconds since the Unix epoch, UTC: the test clock when set. */
int64_t
clock_now_ms(void)
{
	const char *path = clock_test_file();
	int64_t ms;
	bool have;

	if (path == NULL)
		return clock_real_ms();
	pthread_mutex_lock(&clock_lock);
	if (!clock_tried)
		clock_reload_locked(path);
	have = clock_have;
	ms = clock_test_ms;
	pthread_mutex_unlock(&clock_lock);
	return have ? ms : clock_real_ms();
}

/* Seconds since the Unix epoch, UTC (rounded down). */
int64_t
clock_now(void)
{
	int64_t ms = clock_now_ms();

	return ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
}
