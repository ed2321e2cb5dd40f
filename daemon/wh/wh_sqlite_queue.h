/*
 * wh_sqlite_queue.h - this process's writers of one SQLite file take
 * turns in the process (wh_sqlite.c, "Waiting on a lock").
 *
 * A SQLite file has one writer at a time.  Runs of one daemon that write
 * the same file used to find that out from the file lock: each one's
 * BEGIN IMMEDIATE failed, and its busy handler slept and tried again, in
 * steps of 1 ms up to 100 ms, so that at a concurrency of 48 most runs
 * slept, woke and retried many times for each that committed, and the
 * lock often lay free while every waiter slept.  Now a run first takes
 * its turn here: a free file at once, else when a writer that ends wakes
 * the longest waiter (or, once that one waited 10 ms, hands it the file
 * directly; wh_sqlite_queue.c).  The file lock then has one contender
 * from this process, and the busy handler only waits for other
 * processes.  Keyed by the file (device and inode), so that two
 * warehouse names for one file share a queue.
 *
 * A wait is bounded by the caller: left() says how long the waiter may
 * still wait (at most one step, so that a stop is seen within it), or 0
 * to give up, as the busy handler's rules decide.
 */
#ifndef BACKFILLD_WH_SQLITE_QUEUE_H
#define BACKFILLD_WH_SQLITE_QUEUE_H

#include <stdint.h>
#include <sys/types.h>

struct whq;

/* The queue of the file (dev, ino), created on first use; one reference
 * more.  whq_put drops it, and frees the queue with its last one. */
struct whq *whq_get(dev_t dev, ino_t ino);
void whq_put(struct whq *q);

/* Wait for the turn: 0 once it is the caller's, -1 when left(arg)
 * returned 0 first (called before each wait, under the queues' mutex:
 * it must not block; its answer is the longest wait in ms). */
int whq_take(struct whq *q, int64_t (*left)(void *arg), void *arg);

/* End the caller's turn: the longest waiter's, or nobody's. */
void whq_give(struct whq *q);

/* Waiters now (tests). */
int whq_waiting(struct whq *q);

#endif
