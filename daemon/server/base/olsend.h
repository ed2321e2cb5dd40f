/*
 * olsend.h - the OpenLineage transport: a thread that delivers the run
 * events' JSON text (lib/olevent.h) to openlineage: url: (HTTP POST,
 * olcurl.h) or appends them to openlineage: file: (JSON lines), so that
 * the loop never waits on a consumer.
 *
 * Rules (docs/operations.md, "Lineage events (OpenLineage)"):
 *   OL-1. olsend_push never blocks and never fails: the queue holds
 *         openlineage: queue: events; a push to a full queue drops the
 *         oldest (counted dropped).
 *   OL-2. A POST that meets no connection, a timeout, a 5xx or a 429 is
 *         sent again after 0.2 s, 0.4 s, 0.8 s (four attempts); then, or
 *         on another status, the event is counted failed.  A write or
 *         fsync of the file that fails counts its events failed.
 *   OL-3. The first failure of a streak is logged (one line: what and
 *         why); the first delivery after it says so.
 *   OL-4. The file is fsync'd each time the queue runs empty (a batch).
 *   OL-5. olsend_close delivers what waits within openlineage: timeout:
 *         (one attempt each, no backoff), the rest counted dropped.
 */
#ifndef BACKFILLD_OLSEND_H
#define BACKFILLD_OLSEND_H

#include <stdint.h>

#include "config.h"
#include "err.h"

struct olsend;

enum olsend_count { OLSEND_SENT, OLSEND_DROPPED, OLSEND_FAILED,
		    OLSEND_NCOUNTS };

/* The transport of cfg's openlineage: into *out (NULL: none configured),
 * its thread started; -1 with err when the file cannot be opened or
 * libcurl cannot be loaded. */
int olsend_open(const struct config *cfg, struct olsend **out,
		struct err *err);
/* Queue one event's text (taken over, freed by the transport). */
void olsend_push(struct olsend *o, char *text);
/* Events sent, dropped and failed since the start. */
int64_t olsend_count(struct olsend *o, enum olsend_count c);
/* "sent", "dropped", "failed". */
const char *olsend_count_name(enum olsend_count c);
/* OL-5, then join the thread and free. */
void olsend_close(struct olsend *o);

#endif
