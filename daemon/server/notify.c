/*
 * notify.c - the systemd service manager protocol (sd_notify(3)).
 *
 * The manager passes NOTIFY_SOCKET, the path of a unix datagram socket
 * ("@name" for an abstract one); each datagram holds newline separated
 * VARIABLE=value assignments: READY=1, RELOADING=1, STOPPING=1, STATUS=,
 * WATCHDOG=1.  With libsystemd (HAVE_LIBSYSTEMD) sd_notify() sends them;
 * otherwise a built-in sender does what sd_notify's reference
 * implementation does: one SOCK_DGRAM socket per message, sendto, close.
 * Everything is a no-op when NOTIFY_SOCKET is unset, and a failed send is
 * logged once and otherwise ignored: the daemon works without a manager.
 *
 * The watchdog is a repeating uv_timer_t at half of WATCHDOG_USEC, fed
 * from the loop thread, so a loop stuck in a callback stops feeding it and
 * systemd restarts the service.  The timer is unref'd: it never keeps the
 * loop alive on its own.  WATCHDOG_PID, when set, must be our pid (the
 * variables may have been inherited from a parent that was watched).
 *
 * Sends block like sd_notify's: the manager reads its notify socket
 * promptly, and a message dropped on EAGAIN (READY=1) would be worse than
 * a short wait.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/un.h>

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "clock_ms.h"
#include "log.h"
#include "notify.h"
#include "xalloc.h"

/* Longest STATUS= text sent; systemd reads at most PIPE_BUF per datagram. */
#define NOTIFY_STATUS_MAX 1024
/* Longest whole message. */
#define NOTIFY_MSG_MAX (NOTIFY_STATUS_MAX + 128)

struct notify {
	uv_loop_t *loop;
	bool enabled;         /* NOTIFY_SOCKET was set */
	char *socket_path;    /* built-in sender: NOTIFY_SOCKET as given */
	bool warned;          /* a send failure was logged already */

	uv_timer_t watchdog;  /* data points back to this struct */
	bool watchdog_on;     /* the timer was initialised */
	uint64_t watchdog_usec;

	char *last_status;    /* last STATUS= text sent, or NULL */
};

#ifndef HAVE_LIBSYSTEMD
/* Parse a decimal unsigned 64-bit value that fills the whole string. */
static int notify_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = v;
	return 0;
}
#endif

/* WATCHDOG_USEC in *usec when the watchdog is asked of this process. */
static bool notify_watchdog_wanted(uint64_t *usec)
{
#ifdef HAVE_LIBSYSTEMD
	/* Checks WATCHDOG_PID against getpid() itself. */
	return sd_watchdog_enabled(0, usec) > 0 && *usec > 0;
#else
	const char *pid_s = getenv("WATCHDOG_PID");
	uint64_t pid;

	if (notify_parse_u64(getenv("WATCHDOG_USEC"), usec) < 0 || *usec == 0)
		return false;
	if (pid_s != NULL && *pid_s != '\0') {
		if (notify_parse_u64(pid_s, &pid) < 0 ||
		    pid != (uint64_t)getpid())
			return false;
	}
	return true;
#endif
}

#ifndef HAVE_LIBSYSTEMD
/* Send msg to the datagram socket at path ("@" = abstract); -errno on
 * failure. */
static int notify_send_builtin(const char *path, const char *msg)
{
	struct sockaddr_un sa;
	size_t len = strlen(path);
	socklen_t salen;
	ssize_t w;
	int fd, e;

	if ((path[0] != '/' && path[0] != '@') || len < 2)
		return -EAFNOSUPPORT;
	if (len >= sizeof(sa.sun_path))
		return -E2BIG;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	/* Abstract names are counted, not NUL-terminated. */
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	do
		w = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL,
			   (struct sockaddr *)&sa, salen);
	while (w < 0 && errno == EINTR);
	e = w < 0 ? -errno : 0;
	close(fd);
	if (e == 0 && (size_t)w != strlen(msg))
		e = -EMSGSIZE;
	return e;
}
#endif

/* Send one message to the manager, if there is one. */
static void notify_send(struct notify *n, const char *msg)
{
	int r;

	if (n == NULL || !n->enabled)
		return;
#ifdef HAVE_LIBSYSTEMD
	r = sd_notify(0, msg);
	/* 0: NOTIFY_SOCKET vanished from the environment; nothing to do. */
	if (r > 0)
		r = 0;
#else
	r = notify_send_builtin(n->socket_path, msg);
#endif
	if (r < 0 && !n->warned) {
		n->warned = true;
		log_warn("notify: cannot send to NOTIFY_SOCKET: %s "
			 "(the service manager will not see this daemon's state)",
			 strerror(-r));
	}
}

/* Copy status onto one line (no newline could smuggle in another
 * assignment), cut at NOTIFY_STATUS_MAX bytes on a UTF-8 boundary. */
static void notify_clean_status(const char *status, char *out, size_t size)
{
	size_t i, len = strlen(status);

	if (len > size - 1) {
		len = size - 1;
		/* Do not split a multi-byte sequence. */
		while (len > 0 && ((unsigned char)status[len] & 0xC0) == 0x80)
			len--;
	}
	for (i = 0; i < len; i++)
		out[i] = (status[i] == '\n' || status[i] == '\r') ? ' ' :
			 status[i];
	out[len] = '\0';
}

/* Remember status as sent; true when it differs from the last one. */
static bool notify_status_changed(struct notify *n, const char *clean)
{
	char *copy;

	if (n->last_status != NULL && strcmp(n->last_status, clean) == 0)
		return false;
	copy = xstrdup(clean);
	free(n->last_status);
	n->last_status = copy;
	return true;
}

/* Build "head" or "head\nSTATUS=..." (only when the status changed) and
 * send it. */
static void notify_send_with_status(struct notify *n, const char *head,
				    const char *status)
{
	char clean[NOTIFY_STATUS_MAX + 1];
	char msg[NOTIFY_MSG_MAX];

	if (n == NULL || !n->enabled)
		return;
	if (status == NULL) {
		notify_send(n, head);
		return;
	}
	notify_clean_status(status, clean, sizeof(clean));
	if (!notify_status_changed(n, clean)) {
		if (head != NULL)
			notify_send(n, head);
		return;
	}
	if (head != NULL)
		snprintf(msg, sizeof(msg), "%s\nSTATUS=%s", head, clean);
	else
		snprintf(msg, sizeof(msg), "STATUS=%s", clean);
	notify_send(n, msg);
}

/* The watchdog timer fired: tell the manager the loop is alive. */
static void notify_watchdog_cb(uv_timer_t *t)
{
	notify_send(t->data, "WATCHDOG=1");
}

/* Read the environment and start the watchdog timer when asked. */
struct notify *notify_new(uv_loop_t *loop)
{
	struct notify *n;
	const char *path;
	uint64_t ms;

	n = xcalloc(1, sizeof(*n));
	n->loop = loop;

	path = getenv("NOTIFY_SOCKET");
	if (path == NULL || *path == '\0')
		return n;
	n->enabled = true;
	n->socket_path = xstrdup(path);

	if (notify_watchdog_wanted(&n->watchdog_usec)) {
		/* Half the interval, as sd_watchdog_enabled(3) advises. */
		ms = n->watchdog_usec / 2000;
		if (ms == 0)
			ms = 1;
		uv_timer_init(loop, &n->watchdog);
		n->watchdog.data = n;
		n->watchdog_on = true;
		uv_timer_start(&n->watchdog, notify_watchdog_cb, ms, ms);
		uv_unref((uv_handle_t *)&n->watchdog);
		log_debug("notify: watchdog every %llu ms",
			  (unsigned long long)ms);
	}
	return n;
}

/* READY=1, with STATUS= when given and changed. */
void notify_ready(struct notify *n, const char *status)
{
	notify_send_with_status(n, "READY=1", status);
}

/* RELOADING=1 with the CLOCK_MONOTONIC time systemd 253+ asks for. */
void notify_reloading(struct notify *n)
{
	char msg[64];
	unsigned long long usec;

	if (n == NULL || !n->enabled)
		return;
	usec = (unsigned long long)clock_us(CLOCK_MONOTONIC); /* UTIL-2 */
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu", usec);
	notify_send(n, msg);
}

/* STOPPING=1. */
void notify_stopping(struct notify *n)
{
	notify_send(n, "STOPPING=1");
}

/* STATUS=<one line>, only when it changed. */
void notify_status(struct notify *n, const char *status)
{
	if (status != NULL)
		notify_send_with_status(n, NULL, status);
}

/* Stop the watchdog and close its handle (the loop runs the close). */
void notify_close(struct notify *n)
{
	if (n == NULL || !n->watchdog_on)
		return;
	uv_timer_stop(&n->watchdog);
	if (!uv_is_closing((uv_handle_t *)&n->watchdog))
		uv_close((uv_handle_t *)&n->watchdog, NULL);
}

/* Free n once its handle's close callback has run. */
void notify_free(struct notify *n)
{
	if (n == NULL)
		return;
	free(n->socket_path);
	free(n->last_status);
	free(n);
}
