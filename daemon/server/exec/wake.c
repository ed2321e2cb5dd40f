/*
 * wake.c - waking the loop from other threads (wake.h).
 */
#include "wake.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* The pipe is readable: empty it, then let the owner drain its queues. */
static void
wake_poll_cb(uv_poll_t *h, int status, int events)
{
	struct wake *w = h->data;
	char buf[64];

	(void)status;
	(void)events;
	/* cleared after the read and before the drain: a sender that saw
	 * it set queued its work before this store, so cb finds it; one
	 * that comes later writes a byte again, which stays for the next
	 * wake (cleared before the read, a byte read here could belong to
	 * a sender whose work comes after cb, and later senders would see
	 * the flag set and write nothing: a lost wake) */
	while (read(w->fds[0], buf, sizeof buf) > 0)
		;
	atomic_store(&w->pending, 0);
	w->cb(w);
}

int
wake_init(uv_loop_t *loop, struct wake *w, void (*cb)(struct wake *w))
{
	int r;

	w->cb = cb;
	w->close_cb = NULL;
	atomic_init(&w->pending, 0);
	if (pipe2(w->fds, O_NONBLOCK | O_CLOEXEC) == -1)
		return uv_translate_sys_error(errno);
	if ((r = uv_poll_init(loop, &w->poll, w->fds[0])) == 0) {
		w->poll.data = w;
		if ((r = uv_poll_start(&w->poll, UV_READABLE,
		    wake_poll_cb)) == 0)
			return 0;
		uv_close((uv_handle_t *)&w->poll, NULL);
	}
	close(w->fds[0]);
	close(w->fds[1]);
	return r;
}

void
wake_send(struct wake *w)
{
	char one = 1;

	/* a full pipe (EAGAIN) already wakes the loop: nothing lost */
	if (atomic_exchange(&w->pending, 1) == 0)
		while (write(w->fds[1], &one, 1) == -1 && errno == EINTR)
			;
}

void
wake_ref(struct wake *w, int ref)
{
	if (ref)
		uv_ref((uv_handle_t *)&w->poll);
	else
		uv_unref((uv_handle_t *)&w->poll);
}

/* The poll handle is closed: close the pipe, tell the owner. */
static void
wake_close_cb(uv_handle_t *h)
{
	struct wake *w = h->data;

	close(w->fds[0]);
	close(w->fds[1]);
	if (w->close_cb != NULL)
		w->close_cb(w);
}

void
wake_close(struct wake *w, void (*close_cb)(struct wake *w))
{
	w->close_cb = close_cb;
	uv_poll_stop(&w->poll);
	uv_close((uv_handle_t *)&w->poll, wake_close_cb);
}
