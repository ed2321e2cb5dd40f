/*
 * config_file.c - the files of a configuration: reading one (bounded, never
 * a FIFO), resolving the paths it names against its folder, and include:
 * (globs, nesting, cycles, the bounds on files and bytes).
 */
#include "config_int.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text.h"
#include "xalloc.h"

/* "a/./b//c" -> "a/b/c": drop empty and "." components (".." is kept:
 * only the kernel knows what it means past a symlink). */
static char *
cfg_clean_path(const char *path)
{
	size_t n = strlen(path), o = 0;
	char *out = xmalloc(n + 2);
	const char *s = path;

	if (*s == '/')
		out[o++] = '/';
	while (*s != '\0') {
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len > 0 && !(len == 1 && s[0] == '.')) {
			if (o > 0 && out[o - 1] != '/')
				out[o++] = '/';
			memcpy(out + o, s, len);
			o += len;
		}
		s += len;
		if (*s == '/')
			s++;
	}
	if (o == 0)
		out[o++] = '.';
	out[o] = '\0';
	return out;
}

/* rel resolved against dir (rel itself when absolute), cleaned. */
char *
cfg_resolve(const char *dir, const char *rel)
{
	char *joined, *out;
	size_t n;

	if (rel[0] == '/')
		return cfg_clean_path(rel);
	n = strlen(dir) + strlen(rel) + 2;
	joined = xmalloc(n);
	snprintf(joined, n, "%s/%s", dir, rel);
	out = cfg_clean_path(joined);
	free(joined);
	return out;
}

/* Absolute form of a config path: realpath when it exists, else joined
 * to the working directory. */
char *
cfg_abs_path(const char *path, bool use_realpath)
{
	char cwd[PATH_MAX];
	char *rp;

	if (use_realpath && (rp = realpath(path, NULL)) != NULL)
		return rp;
	if (path[0] == '/')
		return cfg_clean_path(path);
	if (getcwd(cwd, sizeof cwd) == NULL)
		return cfg_clean_path(path);
	return cfg_resolve(cwd, path);
}

/* Folder of an absolute path. */
char *
cfg_dirname(const char *abs)
{
	const char *slash = strrchr(abs, '/');
	size_t n;

	if (slash == NULL)
		return xstrdup(".");
	n = slash == abs ? 1 : (size_t)(slash - abs);
	return xstrndup(abs, n);
}

/* What a file that is not a regular one is, for messages. */
static const char *
cfg_file_kind(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

int
cfg_read_config(const char *path, char **buf, size_t *len, struct err *err)
{
	char why[256];

	if (cfg_read_file(path, CFG_FILE_MAX, buf, len, why, sizeof why) < 0)
		return err_set(err, EXIT_BAD_INPUT, "%s: cannot read the"
			       " configuration: %s", path, why);
	return 0;
}

/*
 * Read a whole regular file of at most `max` bytes, NUL-terminated.
 * Opened O_NONBLOCK so that a FIFO cannot hang the load (nor a SIGHUP
 * reload, which runs on the loop); anything but a regular file is
 * refused after fstat, before reading.  Returns 0, or -1 with `why` (one
 * phrase: strerror, "Is a directory", "it is a FIFO, not a regular
 * file", "it is 5000000 bytes, more than 4194304").
 */
int
cfg_read_file(const char *path, size_t max, char **buf, size_t *len,
	      char *why, size_t whysz)
{
	struct stat st;
	size_t n = 0;
	char *b = NULL;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		snprintf(why, whysz, "%s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(why, whysz, "%s", strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(why, whysz, "%s", strerror(EISDIR));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whysz, "it is %s, not a regular file",
			 cfg_file_kind(st.st_mode));
		goto fail;
	}
	if ((uintmax_t)st.st_size > max) {
		snprintf(why, whysz, "it is %jd bytes, more than %zu",
			 (intmax_t)st.st_size, max);
		goto fail;
	}
	b = xmalloc(max + 2);
	/* read up to max + 1: a file that grew past max since fstat */
	while (n <= max) {
		ssize_t r = read(fd, b + n, max + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(why, whysz, "%s", strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		snprintf(why, whysz, "it is more than %zu bytes", max);
		goto fail;
	}
	b[n] = '\0';
	close(fd);
	*buf = b;
	*len = n;
	return 0;
fail:
	free(b);
	close(fd);
	return -1;
}

/* True when an include: entry has glob(3) wildcard characters. */
static bool
cfg_has_wildcard(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* qsort: bytewise order of glob's matches, whatever the locale. */
static int
cfg_strcmp_cb(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Free one file of the configuration. */
void
cfg_src_free(struct cfg_src *f)
{
	if (f == NULL)
		return;
	if (f->has_doc)
		yaml_document_delete(&f->doc);
	free(f->text);
	free(f->file);
	free(f->abs);
	free(f->dir);
	free(f);
}

/* "a.yaml -> b.yaml -> a.yaml": the include chain from file c down to the
 * current file, then abs, into buf. */
static const char *
cfg_include_chain(struct cfg_parser *p, int c, const char *abs, char *buf,
		  size_t n)
{
	int chain[CONFIG_INCLUDE_DEPTH + 2];
	int k = 0, i;
	size_t o = 0;

	for (i = (int)p->cur; i >= 0 && k < CONFIG_INCLUDE_DEPTH + 1;
	     i = p->srcs[i]->parent) {
		chain[k++] = i;
		if (i == c)
			break;
	}
	buf[0] = '\0';
	while (k-- > 0 && o < n)
		o += (size_t)snprintf(buf + o, n - o, "%s -> ",
				      p->srcs[chain[k]]->abs);
	if (o < n)
		snprintf(buf + o, n - o, "%s", abs);
	return buf;
}

/*
 * Read the file `path` that include: entry `it` of the current file
 * matched, and walk it.  Refused (at the entry): more than
 * CONFIG_INCLUDE_FILES files, deeper than CONFIG_INCLUDE_DEPTH, a file
 * that includes itself through any chain, a file read twice, more than
 * CONFIG_TOTAL_BYTES of YAML in all, a file that cannot be read.
 */
static int
cfg_include_file(struct cfg_parser *p, yaml_node_t *it, const char *path)
{
	struct cfg_src *parent = p->srcs[p->cur], *f;
	char buf[CFG_QUOTE_MAX * 4 + 16], why[256], chain[ERR_MSG_MAX / 2];
	char *abs;
	size_t i, me = p->cur;
	int c, rc;

	cfg_quote(cfg_text(it), buf, sizeof buf);
	if (p->nsrcs >= CONFIG_INCLUDE_FILES)
		return cfg_fail(p, it->start_mark,
				"include %s: more than %d configuration files in all; put more jobs in each file",
				buf, CONFIG_INCLUDE_FILES);
	if (parent->depth >= CONFIG_INCLUDE_DEPTH)
		return cfg_fail(p, it->start_mark,
				"include %s: includes nested deeper than %d levels; include these files from a higher level",
				buf, CONFIG_INCLUDE_DEPTH);
	abs = realpath(path, NULL);
	if (abs == NULL)
		return cfg_fail(p, it->start_mark,
				"include %s: cannot read %s: %s; create it or remove it from include:",
				buf, path, strerror(errno));
	for (c = (int)p->cur; c >= 0; c = p->srcs[c]->parent)
		if (strcmp(p->srcs[c]->abs, abs) == 0) {
			rc = cfg_fail(p, it->start_mark,
				      "include cycle %s; remove one of these includes",
				      cfg_include_chain(p, c, abs, chain,
							sizeof chain));
			free(abs);
			return rc;
		}
	for (i = 0; i < p->nsrcs; i++)
		if (strcmp(p->srcs[i]->abs, abs) == 0) {
			rc = cfg_fail(p, it->start_mark,
				      "include %s: %s is already included by %s; include each file once",
				      buf, abs, p->srcs[p->srcs[i]->parent]->file);
			free(abs);
			return rc;
		}
	f = xcalloc(1, sizeof *f);
	p->srcs = xreallocarray(p->srcs, p->nsrcs + 1, sizeof *p->srcs);
	f->abs = abs;
	f->file = xstrdup(abs);
	f->dir = cfg_dirname(abs);
	f->parent = (int)p->cur;
	f->depth = parent->depth + 1;
	f->inc_node = it;
	if (cfg_read_file(abs, CFG_FILE_MAX, &f->text, &f->len, why,
			  sizeof why) < 0) {
		rc = cfg_fail(p, it->start_mark,
			      "include %s: cannot read %s: %s", buf, abs, why);
		cfg_src_free(f);
		return rc;
	}
	if (p->total + f->len > CONFIG_TOTAL_BYTES) {
		rc = cfg_fail(p, it->start_mark,
			      "include %s: the configuration files together are more than %d bytes; make them smaller",
			      buf, CONFIG_TOTAL_BYTES);
		cfg_src_free(f);
		return rc;
	}
	p->total += f->len;
	p->srcs[p->nsrcs++] = f;
	cfg_use(p, p->nsrcs - 1);
	rc = cfg_parse_file(p, true);
	cfg_use(p, me);
	cfg_set_ctx(p, "%s", "");
	return rc;
}

/*
 * One include: entry: the pattern node (a scalar, or the value of an
 * `optional:` mapping) into *pat, and whether it may match nothing.
 */
static int
cfg_include_entry(struct cfg_parser *p, const struct cfg_key *k,
		  yaml_node_t *it, yaml_node_t **pat, bool *optional)
{
	yaml_node_t *v;

	*optional = false;
	*pat = it;
	if (it->type == YAML_MAPPING_NODE) {
		v = cfg_map_get(p, it, "optional");
		if (v == NULL || it->data.mapping.pairs.top -
		    it->data.mapping.pairs.start != 1)
			return cfg_bad_value(p, k, it);
		*optional = true;
		*pat = v;
	}
	return cfg_want_text(p, k, *pat);
}

/*
 * include: each entry a file or a glob(3) pattern, relative to the file
 * that names it; a pattern's matches in bytewise order.  An entry that
 * matches no file is an error (a typo such as job.d/ for jobs.d/ would
 * otherwise load no job at all, and a reload would remove every job),
 * unless written `- optional: PATTERN`: then it may match nothing (an
 * empty folder, a file not there).
 */
int
cfg_h_include(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	      yaml_node_t *key, yaml_node_t *val)
{
	size_t i, m, me = p->cur;
	char buf[CFG_QUOTE_MAX * 4 + 16], where[PATH_MAX * 4 + 8];
	int rc = 0;

	for (i = 0; i < cfg_seq_len(val) && rc == 0; i++) {
		yaml_node_t *it;
		struct stat st;
		bool optional;
		glob_t g;
		char *pat;
		int gr;

		if (cfg_include_entry(p, k, cfg_seq_item(p, val, i), &it,
				      &optional) < 0)
			return -1;
		pat = cfg_resolve(p->srcs[me]->dir, cfg_text(it));
		if (!cfg_has_wildcard(cfg_text(it))) {
			if (!optional || stat(pat, &st) == 0 ||
			    errno != ENOENT)
				rc = cfg_include_file(p, it, pat);
			free(pat);
			continue;
		}
		memset(&g, 0, sizeof g);
		gr = glob(pat, GLOB_NOSORT, NULL, &g);
		if (gr == 0) {
			qsort(g.gl_pathv, g.gl_pathc, sizeof *g.gl_pathv,
			      cfg_strcmp_cb);
			for (m = 0; m < g.gl_pathc && rc == 0; m++) {
				rc = cfg_include_file(p, it, g.gl_pathv[m]);
				cfg_use(p, me);
			}
		} else if (gr == GLOB_NOSPACE) {
			xalloc_exhausted("glob");
		} else if (gr == GLOB_NOMATCH && !optional) {
			rc = cfg_fail(p, it->start_mark,
				      "include %s: the pattern matches no file (it looks in %s); correct it, or write it \"- optional: PATTERN\" if it may match nothing",
				      cfg_quote(cfg_text(it), buf, sizeof buf),
				      text_escape(p->srcs[me]->dir, where,
						  sizeof where));
		} else if (gr != GLOB_NOMATCH) {
			rc = cfg_fail(p, it->start_mark,
				      "include %s: cannot list the files it matches; check the folder's permissions",
				      cfg_quote(cfg_text(it), buf, sizeof buf));
		}
		if (gr != GLOB_NOMATCH)
			globfree(&g);
		free(pat);
	}
	return rc;
}
