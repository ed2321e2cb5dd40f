/*
 * module.c - loading backfilld-pg.so and backfilld-ch.so (module.h).
 */
#include "module.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MODULE_FILE "backfilld-pg.so"

/* Open module `file` from dir; NULL when it is not there. */
static void *
module_open_in(const char *dir, const char *file, char *path, size_t pathsz)
{
	snprintf(path, pathsz, "%s/%s", dir, file);
	return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

/* Open the module: the test folder, else beside the executable, then the
 * install folder.  path names the last place tried. */
static void *
module_open(const char *file, char *path, size_t pathsz)
{
	const char *test_dir = getenv("BACKFILLD_TEST_MODULE_DIR");
	char exe[PATH_MAX], *slash;
	ssize_t n;
	void *h;

	if (test_dir != NULL && *test_dir != '\0') /* tests only */
		return module_open_in(test_dir, file, path, pathsz);
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash != NULL) {
			*slash = '\0';
			if ((h = module_open_in(exe, file, path, pathsz)) != NULL)
				return h;
		}
	}
	return module_open_in(BACKFILLD_MODULEDIR, file, path, pathsz);
}

void *
module_symbol(const char *symbol, const char *what, char *why, size_t whysz)
{
	return module_symbol_in(MODULE_FILE, symbol, what, why, whysz);
}

void *
module_symbol_in(const char *file, const char *symbol, const char *what,
		 char *why, size_t whysz)
{
	char path[PATH_MAX + 32];
	void *h = module_open(file, path, sizeof path);
	void *sym;

	if (h == NULL) {
		snprintf(why, whysz, "cannot load %s %s: %s", what, path,
			 dlerror());
		return NULL;
	}
	sym = dlsym(h, symbol);
	if (sym == NULL)
		snprintf(why, whysz, "%s has no %s: reinstall backfilld", path,
			 symbol);
	return sym;
}
