/*
 * severity.h - how loud a failed check is (docs/configuration.md,
 * "Guardrails"):
 * severity: error (the default) fails the run, which rolls back;
 * severity: warn publishes the partition and records a warning.
 */
#ifndef BACKFILLD_SEVERITY_H
#define BACKFILLD_SEVERITY_H

#include <stdbool.h>

/* The note a run that succeeded with warnings keeps in its runs row
 * starts with this. */
#define SEVERITY_NOTE "warning: "

/* "error" -> false, "warn" -> true into *warn; -1 for anything else. */
int severity_parse(const char *s, bool *warn);
/* A check's outcome for the audit and the metrics: "passed", "failed"
 * (it fails the run) or "warned" (it failed, with severity: warn). */
const char *severity_result(bool passed, bool warn);
/* Whether a check's outcome fails the run. */
bool severity_fails_run(bool passed, bool warn);
/* Whether a succeeded run's note (runs.error) is its warnings. */
bool severity_is_note(const char *error);

#endif
