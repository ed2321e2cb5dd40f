/*
 * config_socket.c - config_socket: the socket path of a configuration file
 * as backfillctl --config reads it, the rest unchecked (config.h).
 */
#include "config_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* The value of a "socket:" line read alone (a file that is not YAML):
 * unquoted, its comment cut; NULL when the text has no such line. */
static char *
cfg_socket_line(const char *text, size_t len, int *lineno)
{
	const char *p = text, *end = text + len, *eol, *v, *ve;

	for (*lineno = 1; p < end; p = eol + 1, (*lineno)++) {
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			eol = end;
		if ((size_t)(eol - p) < 7 || strncmp(p, "socket:", 7) != 0)
			continue;
		for (v = p + 7; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		if (v < eol && (*v == '"' || *v == '\'')) {
			ve = memchr(v + 1, *v, (size_t)(eol - v - 1));
			if (ve == NULL)
				continue;
			v++;
		} else {
			for (ve = v; ve < eol && *ve != '\r' &&
			     !(*ve == '#' && ve > v && (ve[-1] == ' ' ||
			     ve[-1] == '\t')); ve++)
				;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
		}
		if (ve > v && memchr(v, '\0', (size_t)(ve - v)) == NULL)
			return xstrndup(v, (size_t)(ve - v));
	}
	return NULL;
}

/* Where the event walk of config_socket_string is. */
struct cfg_sock_walk {
	int depth;  /* of the event: 1 inside the top-level mapping */
	int item;   /* events of the top-level mapping: key, value, ... */
	bool want;  /* the key just read is socket: */
	bool done;
	char *v;    /* socket:'s value as written, or NULL */
	int rc;     /* -1 when it is not a path (err says why) */
};

/* Take one event of the walk. */
static void
cfg_socket_event(struct cfg_sock_walk *w, const yaml_event_t *ev,
		 const char *path, struct err *err)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		/* an item of the top-level mapping: key, value, ... */
		if (w->depth == 1 && w->item++ % 2 == 0) {
			w->want = ev->type == YAML_SCALAR_EVENT &&
			    strcmp((char *)ev->data.scalar.value,
			    "socket") == 0;
		} else if (w->depth == 1 && w->want) {
			if (ev->type != YAML_SCALAR_EVENT ||
			    ev->data.scalar.length == 0) {
				w->rc = err_set(err, EXIT_BAD_INPUT,
				    "%s:%zu:%zu: socket must be a socket"
				    " path, got %s", path,
				    ev->start_mark.line + 1,
				    ev->start_mark.column + 1,
				    ev->type == YAML_SCALAR_EVENT ?
				    "nothing" : ev->type ==
				    YAML_SEQUENCE_START_EVENT ?
				    "a sequence" : "a mapping");
			} else {
				w->v = xstrndup((char *)ev->data.scalar.value,
						ev->data.scalar.length);
			}
			w->done = true;
		}
		if (ev->type != YAML_SCALAR_EVENT &&
		    ++w->depth > CFG_DEPTH_MAX)
			w->done = true;   /* not worth reading further */
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		/* the end of the top-level mapping ends the search */
		if (--w->depth == 0)
			w->done = true;
		break;
	case YAML_STREAM_END_EVENT:
		w->done = true;
		break;
	default:
		break;
	}
}

int
config_socket_string(const char *path, const char *text, size_t len,
		     char **socket, char *warn, size_t wsize, struct err *err)
{
	char *abs = cfg_abs_path(path, true), *dir = cfg_dirname(abs);
	struct cfg_sock_walk w = { 0, 0, false, false, NULL, 0 };
	yaml_parser_t yp;
	yaml_event_t ev;
	int line;

	*socket = NULL;
	if (wsize > 0)
		warn[0] = '\0';
	if (!yaml_parser_initialize(&yp))
		xalloc_exhausted("libyaml");
	yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
	while (!w.done) {
		if (!yaml_parser_parse(&yp, &ev)) {
			if (yp.error == YAML_MEMORY_ERROR)
				xalloc_exhausted("libyaml");
			/* not YAML: its socket: line read alone */
			w.v = cfg_socket_line(text, len, &line);
			snprintf(warn, wsize, "%s:%zu:%zu: invalid YAML: %s;"
				 " %s", path, yp.problem_mark.line + 1,
				 yp.problem_mark.column + 1,
				 yp.problem ? yp.problem : "syntax error",
				 w.v != NULL ? "read its socket: line alone" :
				 "it has no socket: line, the default is used");
			break;
		}
		cfg_socket_event(&w, &ev, path, err);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&yp);
	if (w.rc == 0 && w.v != NULL)
		*socket = cfg_resolve(dir, w.v);
	free(w.v);
	free(dir);
	free(abs);
	return w.rc;
}

int
config_socket(const char *path, char **socket, char *warn, size_t wsize,
	      struct err *err)
{
	char *text;
	size_t len;
	int rc;

	*socket = NULL;
	if (cfg_read_config(path, &text, &len, err) < 0)
		return -1;
	rc = config_socket_string(path, text, len, socket, warn, wsize, err);
	free(text);
	return rc;
}
