/*
 * clockjump.h - a step of the wall clock while the daemon runs, as a
 * loop event (Linux timerfd, TFD_TIMER_CANCEL_ON_SET).
 *
 * The schedule arms libuv timers, which are monotonic, with the delay to
 * the next due instant of the wall clock (a zone's own midnight).  When
 * the clock is set (settimeofday, an NTP step, date -s) that delay is
 * wrong: the watcher calls back so that the schedule is computed again
 * for the new time, as after a change of the test clock.
 */
#ifndef BACKFILLD_CLOCKJUMP_H
#define BACKFILLD_CLOCKJUMP_H

#include <uv.h>

struct clockjump;

/* Watch for steps of the wall clock on loop (the handle does not keep the
 * loop alive); cb(data) on each.  NULL (with a warning logged) when the
 * system has no such timer: steps are then noticed at the schedule's next
 * wake-up only. */
struct clockjump *clockjump_start(uv_loop_t *loop, void (*cb)(void *data),
				  void *data);
/* Stop watching; freed once the loop has closed the handle.  NULL: no-op. */
void clockjump_close(struct clockjump *cj);

#endif
