/*
 * complete.h - backfillctl's shell completion scripts, written from the
 * one command specification (cmdspec.h; pure: text in, text out).
 *
 * `backfillctl completion bash|zsh` prints them and the build installs
 * them (daemon/meson.build), so the commands, their options, the values
 * of an enumerated option (--reprocess, --state) and which arguments are
 * files or jobs come from cmdspec_table and cannot drift from the
 * program.  Job names are the one thing asked at completion time: the
 * script runs `backfillctl [--socket S | --config F] jobs --json` (with
 * the socket options already on the command line, for at most 2 s) and
 * completes nothing when the daemon does not answer.
 *
 * An option's value placeholder and its description are read from the
 * command's help text (the "  --name VALUE   what it does" lines), the
 * text `--help` prints.
 */
#ifndef BACKFILLD_COMPLETE_H
#define BACKFILLD_COMPLETE_H

#include "buf.h"

/* Append the completion script for shell ("bash" or "zsh") to out.
 * 0, or -1 (out unchanged) for another shell. */
int complete_script(struct buf *out, const char *shell);

#endif
