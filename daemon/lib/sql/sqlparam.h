/*
 * sqlparam.h - one named parameter of a statement: what the warehouse
 * drivers bind (wh.h) and the pure SQL builders read (pgsql.h), so that
 * lib/ needs no driver header.
 */
#ifndef BACKFILLD_SQLPARAM_H
#define BACKFILLD_SQLPARAM_H

/* One named parameter; `name` without its ':'; `value` NULL binds NULL. */
struct wh_param {
	const char *name;
	const char *value;
};

#endif
