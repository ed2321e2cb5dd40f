/*
 * ctl_wire.c - backfillctl's connection to the daemon (ctl.c): connect
 * to the control socket, send a frame, read the next frame
 * (docs/protocol.md), the RESPONSE's status as the exit status.  Every
 * error is one line with its exit code (3: the daemon could not be
 * reached or did not speak the protocol).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"
#include "ctl_wire.h"
#include "err.h"
#include "proto.h"

/* Connect to the daemon's socket: the fd, or -1 with err (exit 3, or 2
 * for a path that cannot be a socket path). */
int
ctl_connect(const char *path, struct err *err)
{
	struct sockaddr_un addr;
	int fd, e;

	memset(&addr, 0, sizeof addr);
	addr.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof addr.sun_path)
		return err_set(err, EXIT_BAD_INPUT, "socket path %s is too long "
		    "(at most %zu bytes); use a shorter --socket path", path,
		    sizeof addr.sun_path - 1);
	memcpy(addr.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_set(err, EXIT_UNREACHABLE, "cannot create a socket: "
		    "%s; check the system's limits", strerror(errno));
	while (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
		if (errno == EINTR)
			continue;
		e = errno;
		close(fd);
		if (e == ENOENT || e == ECONNREFUSED)
			return err_set(err, EXIT_UNREACHABLE, "cannot reach "
			    "backfilld at %s: %s; is the daemon running? "
			    "(systemctl status backfilld)", path, strerror(e));
		if (e == EACCES || e == EPERM)
			return err_set(err, EXIT_UNREACHABLE, "permission "
			    "denied on %s: ask to be added to the socket's "
			    "group, or use sudo", path);
		return err_set(err, EXIT_UNREACHABLE, "cannot reach backfilld "
		    "at %s: %s; check the socket path (--socket or --config)",
		    path, strerror(e));
	}
	return fd;
}

/* Send a whole frame; -1 with err (exit 3) when the daemon is gone. */
int
ctl_send(int fd, const char *path, const struct buf *frame, struct err *err)
{
	size_t off = 0;
	ssize_t n;

	while (off < frame->len) {
		n = send(fd, frame->data + off, frame->len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_set(err, EXIT_UNREACHABLE, "backfilld at %s "
			    "closed the connection before taking the request "
			    "(%s); check its log (journalctl -u backfilld)",
			    path, strerror(errno));
		off += (size_t)n;
	}
	return 0;
}

/*
 * Read the next frame into msg, keeping bytes of later frames in `in`.
 * -1 with err (exit 3) when the daemon closes the connection first or
 * sends something that is not a frame.
 */
int
ctl_recv(int fd, const char *path, struct buf *in, struct proto_msg *msg,
    struct err *err)
{
	char chunk[65536];
	size_t used;
	ssize_t n;
	int rc;

	for (;;) {
		rc = proto_parse(in->data != NULL ? in->data : "", in->len,
		    &used, msg, err);
		if (rc == 1) {
			memmove(in->data, in->data + used, in->len - used);
			in->len -= used;
			return 0;
		}
		if (rc == -1) {
			err_prefix(err, "invalid answer from backfilld at %s",
			    path);
			err->code = EXIT_UNREACHABLE;
			return -1;
		}
		n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_set(err, EXIT_UNREACHABLE, "lost the "
			    "connection to backfilld at %s: %s; check its log "
			    "(journalctl -u backfilld)", path, strerror(errno));
		if (n == 0 && in->len > 0)
			return err_set(err, EXIT_UNREACHABLE, "backfilld at %s "
			    "closed the connection in the middle of an answer; "
			    "check its log (journalctl -u backfilld)", path);
		if (n == 0)
			return err_set(err, EXIT_UNREACHABLE, "backfilld at %s "
			    "closed the connection without answering; check "
			    "its log (journalctl -u backfilld)", path);
		buf_add(in, chunk, (size_t)n);
	}
}

/* The response's status as our exit code; -1 with err when it has none. */
int
ctl_status(const struct proto_msg *msg, const char *path, struct err *err)
{
	long long st;

	if (proto_get_int(msg, "status", &st) != 0 || st < 0 ||
	    st > EXIT_INTERNAL)
		return err_set(err, EXIT_UNREACHABLE, "invalid answer from "
		    "backfilld at %s: no valid status; use backfillctl and "
		    "backfilld from the same release", path);
	return st == EXIT_INTERNAL ? EXIT_WORK_FAILED : (int)st;
}
