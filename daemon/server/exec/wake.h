/*
 * wake.h - waking the loop from other threads, without a spin.
 *
 * uv_async_send() would do, but libuv (1.44) makes the loop thread spin
 * (then sched_yield()) until the sending thread has returned from its
 * send: on a busy 2-core machine the woken loop often preempts the very
 * thread it waits for, once per run.  A wake is a non-blocking pipe
 * watched by a uv_poll_t instead: wake_send() writes one byte unless one
 * is pending, the callback reads them all, clears the flag and then calls
 * cb, which drains whatever the senders queued under their own lock.
 * Rule: a sender queues its work before it tests the flag; the callback
 * clears the flag after its read and before cb.  So a sender that found
 * the flag set has its work drained by this cb, and one that finds it
 * clear writes a byte that wakes the loop again: nothing queued is missed.
 */
#ifndef BACKFILLD_WAKE_H
#define BACKFILLD_WAKE_H

#include <stdatomic.h>
#include <uv.h>

struct wake {
	uv_poll_t poll;
	int fds[2];          /* read end, write end */
	atomic_int pending;  /* a byte is written and not yet read */
	void (*cb)(struct wake *w);
	void *data;
	void (*close_cb)(struct wake *w);
};

/* Open the pipe and start watching it on loop: 0, or a libuv error. */
int wake_init(uv_loop_t *loop, struct wake *w, void (*cb)(struct wake *w));
/* From any thread: have cb called on the loop thread soon. */
void wake_send(struct wake *w);
/* Whether the wake keeps the loop alive (uv_ref / uv_unref). */
void wake_ref(struct wake *w, int ref);
/* Stop watching and close; close_cb (may be NULL) once it is closed. */
void wake_close(struct wake *w, void (*close_cb)(struct wake *w));

#endif
