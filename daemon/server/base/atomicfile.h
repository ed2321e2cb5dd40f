/*
 * atomicfile.h - write a whole file so that readers never see half of it:
 * to a temporary file in the same folder, then rename(2) over the path
 * (how node_exporter's textfile collector and browsers want the metrics
 * file and the report page).
 */
#ifndef BACKFILLD_ATOMICFILE_H
#define BACKFILLD_ATOMICFILE_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

/* Write len bytes of data as path.  On failure -1 with err: "cannot write
 * the WHAT PATH: ...; create its folder or fix KEY" (or "free space on its
 * filesystem or fix KEY"), and no temporary file left behind. */
int atomicfile_write(const char *path, const char *data, size_t len,
		     const char *what, const char *key, struct err *err);
/* atomicfile_write of what o holds (nothing: an empty file), then free o. */
int atomicfile_put(const char *path, struct buf *o, const char *what,
		   const char *key, struct err *err);

#endif
