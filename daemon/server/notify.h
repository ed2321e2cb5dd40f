/*
 * notify.h - the systemd service manager protocol (sd_notify).
 *
 * No-op when NOTIFY_SOCKET is unset.  A built-in datagram sender whose
 * sends are bounded (notify.c: a state change waits at most 2 s for room in
 * the manager's queue, STATUS= and WATCHDOG=1 never wait), so a manager
 * that stops reading cannot stop the loop.  The watchdog is fed from a
 * timer on the event loop at half of WATCHDOG_USEC, so a stuck loop stops
 * feeding it.
 */
#ifndef BACKFILLD_NOTIFY_H
#define BACKFILLD_NOTIFY_H

#include <uv.h>

#include "err.h"

struct notify;

/* Read NOTIFY_SOCKET and WATCHDOG_USEC (honouring WATCHDOG_PID); start the
 * watchdog timer on loop when asked for. */
struct notify *notify_new(uv_loop_t *loop);
/* READY=1 (and STATUS= when status is not NULL); may wait up to 2 s. */
void notify_ready(struct notify *n, const char *status);
/* RELOADING=1 with MONOTONIC_USEC=<CLOCK_MONOTONIC in us>; may wait up to
 * 2 s. */
void notify_reloading(struct notify *n);
/* STOPPING=1; may wait up to 2 s. */
void notify_stopping(struct notify *n);
/* STATUS=<one line>; sent only when it changed since the last one sent;
 * never waits. */
void notify_status(struct notify *n, const char *status);
/* Stop the watchdog timer and close its handle; free after the loop ran
 * the close callbacks (notify_free). */
void notify_close(struct notify *n);
void notify_free(struct notify *n);

#endif
