/*
 * clock.h - the daemon's wall clock: the one place the server's layers
 * read it (the system's clock through clock_ms.h, UTIL-2, or the test
 * clock).
 *
 * Everything else takes `now` as a parameter.  For tests, the environment
 * variable BACKFILLD_TEST_CLOCK_FILE names a file holding the current time
 * as an ISO-8601 UTC instant (YYYY-MM-DDTHH:MM:SSZ) or epoch seconds; when
 * set, clock_now_ms() returns that time (plus nothing: the clock stands
 * still until the file changes); the daemon watches the file's folder
 * (main.c) and calls clock_reload() when it is rewritten, so a test moves
 * time by writing the file.
 */
#ifndef BACKFILLD_CLOCK_H
#define BACKFILLD_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* Milliseconds since the Unix epoch, UTC. */
int64_t clock_now_ms(void);
/* Seconds since the Unix epoch, UTC. */
int64_t clock_now(void);
/* True when a test clock file is in use. */
bool clock_is_test(void);
/* Path of the test clock file, or NULL. */
const char *clock_test_file(void);
/* Re-read the test clock file (after it changed). */
void clock_reload(void);

#endif
