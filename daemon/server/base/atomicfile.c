/*
 * atomicfile.c - whole-file writes by rename (see atomicfile.h).
 */
#include "atomicfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
atomicfile_write(const char *path, const char *data, size_t len,
		 const char *what, const char *key, struct err *err)
{
	char tmp[4200];
	size_t off = 0;
	int fd, rc = 0;

	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0644);
	if (fd < 0)
		return err_set(err, EXIT_WORK_FAILED, "cannot write the %s %s:"
			       " %s; create its folder or fix %s", what, tmp,
			       strerror(errno), key);
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = -1;
			break;
		}
		off += (size_t)n;
	}
	if (close(fd) < 0)
		rc = -1;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -1;
	if (rc < 0) {
		err_set(err, EXIT_WORK_FAILED, "cannot write the %s %s: %s; free"
			" space on its filesystem or fix %s", what, path,
			strerror(errno ? errno : EIO), key);
		unlink(tmp);
	}
	return rc;
}

/* Write o's bytes as path, then free o (atomicfile.h). */
int
atomicfile_put(const char *path, struct buf *o, const char *what,
	       const char *key, struct err *err)
{
	int rc;

	rc = atomicfile_write(path, o->data ? o->data : "", o->len, what, key,
			      err);
	buf_free(o);
	return rc;
}
