/*
 * complete.c - the bash and zsh completion scripts of backfillctl, from
 * cmdspec_table (see complete.h).
 *
 * Every argument gets one completion action, by its kind: a job name
 * (CMDSPEC_JOB), a comma-separated list of them (CMDSPEC_LIST), one of
 * its values (CMDSPEC_ENUM), a file (CMDSPEC_DATES_FILE, or a value its
 * help calls FILE or PATH), nothing for a flag, and no suggestion for
 * dates, numbers and free text.  Names and values in the table are
 * plain words (letters, digits, '-', '_'), so they go into the scripts
 * unquoted; descriptions are quoted for zsh.
 */
#include "complete.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cmdspec.h"

/* What completes an argument's value. */
enum complete_action {
	COMPLETE_NONE,  /* a flag: no value */
	COMPLETE_ANY,   /* a date, a number, text: nothing to suggest */
	COMPLETE_FILE,
	COMPLETE_JOB,
	COMPLETE_JOBS,  /* JOB[,JOB] */
	COMPLETE_WORDS  /* one of the argument's values */
};

/* The options every command takes beside its own (ctl.c's getopt table;
 * their help is CMDSPEC_COMMON_HELP). */
static const struct cmdspec_arg complete_common[] = {
	{ "socket", CMDSPEC_TEXT, NULL, NULL, NULL, 0, 0 },
	{ "config", CMDSPEC_TEXT, NULL, NULL, NULL, 0, 0 },
	{ "help", CMDSPEC_FLAG, NULL, NULL, NULL, 0, 0 },
	{ NULL, 0, NULL, NULL, NULL, 0, 0 }
};

/* Whether p begins an option's line of help: only spaces, or "-X, ",
 * before it on its line. */
static bool
complete_at_line(const char *help, const char *p)
{
	const char *s = p;

	while (s > help && s[-1] != '\n')
		s--;
	if (p - s >= 4 && p[-1] == ' ' && p[-2] == ',' && p[-4] == '-')
		p -= 4;
	while (s < p && *s == ' ')
		s++;
	return s == p && p > help && p[-1] == ' ';
}

/* Copy an option's description from p into desc: the rest of its line
 * and the lines that continue it (indented, not another option). */
static void
complete_join(const char *p, char *desc, size_t descsz)
{
	size_t n = 0;

	while (*p != '\0' && n + 1 < descsz) {
		if (*p != '\n') {
			desc[n++] = *p++;
			continue;
		}
		if (strncmp(p + 1, "          ", 10) != 0)
			break;
		for (p++; *p == ' '; p++)
			;
		if (p[0] == '-' && (p[1] == '-' || p[2] == ','))
			break; /* the next option's line */
		desc[n++] = ' ';
	}
	desc[n] = '\0';
}

/*
 * Find option name's line in help ("  --name VALUE   what it does", or
 * "  -h, --name ..."): its value placeholder (empty for a flag) into ph
 * and its description (the rest of the line, or the next line when the
 * placeholder fills the column) into desc.  Both empty when absent.
 */
static void
complete_doc(const char *help, const char *name, char *ph, size_t phsz,
    char *desc, size_t descsz)
{
	char key[64];
	const char *p = help, *q;
	size_t n;

	*ph = *desc = '\0';
	snprintf(key, sizeof key, "--%s", name);
	n = strlen(key);
	while ((p = strstr(p, key)) != NULL) {
		if ((p[n] == ' ' || p[n] == '\n') && complete_at_line(help, p))
			break;
		p += n;
	}
	if (p == NULL)
		return;
	p += n;
	if (p[0] == ' ' && p[1] != ' ' && p[1] != '\n') {
		for (q = p + 1; *q != ' ' && *q != '\n' && *q != '\0'; q++)
			;
		snprintf(ph, phsz, "%.*s", (int)(q - p - 1), p + 1);
		p = q;
	}
	while (*p == ' ' || *p == '\n')
		p++;
	complete_join(p, desc, descsz);
}

/* How argument a of a command (whose help is help) completes. */
static enum complete_action
complete_action_of(const struct cmdspec_arg *a, const char *help)
{
	char ph[32], desc[8];

	switch (a->kind) {
	case CMDSPEC_FLAG:
	case CMDSPEC_WAIT:
		return COMPLETE_NONE;
	case CMDSPEC_JOB:
		return COMPLETE_JOB;
	case CMDSPEC_LIST:
		return COMPLETE_JOBS;
	case CMDSPEC_ENUM:
		return COMPLETE_WORDS;
	case CMDSPEC_DATES_FILE:
		return COMPLETE_FILE;
	default:
		complete_doc(help, a->name, ph, sizeof ph, desc, sizeof desc);
		if (strcmp(ph, "FILE") == 0 || strcmp(ph, "PATH") == 0)
			return COMPLETE_FILE;
		return COMPLETE_ANY;
	}
}

/* The values of an enumerated argument, separated by spaces. */
static void
complete_words(struct buf *out, const struct cmdspec_arg *a)
{
	for (size_t i = 0; a->values[i] != NULL; i++)
		buf_printf(out, "%s%s", i ? " " : "", a->values[i]);
}

/* ---- bash ------------------------------------------------------------ */

static const char complete_bash_head[] =
"# bash completion for backfillctl, written by 'backfillctl completion\n"
"# bash' from its command specification: regenerate, do not edit.\n"
"\n"
"# The job names of the daemon the command line names, if it answers.\n"
"_backfillctl_jobs()\n"
"{\n"
"\tlocal i args=()\n"
"\tfor ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do\n"
"\t\tcase ${COMP_WORDS[i]} in\n"
"\t\t--socket|--config) args+=(\"${COMP_WORDS[i]}\" \"${COMP_WORDS[i+1]}\") ;;\n"
"\t\tesac\n"
"\tdone\n"
"\ttimeout 2 \"${COMP_WORDS[0]}\" \"${args[@]}\" jobs --json 2>/dev/null |\n"
"\t    sed -n 's/^  {\"name\": \"\\([^\"]*\\)\".*/\\1/p'\n"
"}\n"
"\n"
"_backfillctl_complete() # ACTION CUR\n"
"{\n"
"\tlocal pre\n"
"\tcase $1 in\n"
"\tjob) COMPREPLY=($(compgen -W \"$(_backfillctl_jobs)\" -- \"$2\")) ;;\n"
"\tjobs) pre=; [[ $2 == *,* ]] && pre=${2%,*},\n"
"\t\tCOMPREPLY=($(compgen -P \"$pre\" -W \"$(_backfillctl_jobs)\" -- \"${2##*,}\"))\n"
"\t\tcompopt -o nospace 2>/dev/null ;;\n"
"\tfile) compopt -o filenames 2>/dev/null\n"
"\t\tCOMPREPLY=($(compgen -f -- \"$2\")) ;;\n"
"\tw:*) COMPREPLY=($(compgen -W \"${1#w:}\" -- \"$2\")) ;;\n"
"\tesac\n"
"}\n"
"\n"
"_backfillctl()\n"
"{\n"
"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
"\tlocal cmd= ci=0 i w n=0 opts= vals= act= pos=()\n"
"\tCOMPREPLY=()\n"
"\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
"\t\tcase ${COMP_WORDS[i]} in\n"
"\t\t--socket|--config) ((i++)) ;;\n"
"\t\t-*) ;;\n"
"\t\t*) cmd=${COMP_WORDS[i]}; ci=$i; break ;;\n"
"\t\tesac\n"
"\tdone\n"
"\tcase $prev in\n"
"\t--socket|--config) _backfillctl_complete file \"$cur\"; return ;;\n"
"\tesac\n"
"\tcase $cmd in\n"
"\t'')\n"
"\t\tif [[ $cur == -* ]]; then\n"
"\t\t\tCOMPREPLY=($(compgen -W '--socket --config --help --version' -- \"$cur\"))\n"
"\t\telse\n";

static const char complete_bash_tail[] =
"\t*) return ;;\n"
"\tesac\n"
"\tif [[ -n $act ]]; then\n"
"\t\t_backfillctl_complete \"$act\" \"$cur\"\n"
"\t\treturn\n"
"\tfi\n"
"\tif [[ $cur == -* ]]; then\n"
"\t\tCOMPREPLY=($(compgen -W \"$opts --socket --config --help\" -- \"$cur\"))\n"
"\t\treturn\n"
"\tfi\n"
"\t# the positional being typed: the words after the command that are\n"
"\t# neither options nor their values\n"
"\tfor ((i = ci + 1; i < COMP_CWORD; i++)); do\n"
"\t\tw=${COMP_WORDS[i]}\n"
"\t\tcase $w in\n"
"\t\t--socket|--config) ((i++)) ;;\n"
"\t\t-*) [[ \" $vals \" == *\" $w \"* ]] && ((i++)) ;;\n"
"\t\t*) ((n++)) ;;\n"
"\t\tesac\n"
"\tdone\n"
"\t_backfillctl_complete \"${pos[n]}\" \"$cur\"\n"
"}\n"
"\n"
"complete -F _backfillctl backfillctl\n";

/* Each action in each script, by enum complete_action; COMPLETE_WORDS
 * is written from the argument's values. */
static const char *const complete_bash_acts[] = {
	"-", "-", "file", "job", "jobs", NULL
};
static const char *const complete_zsh_acts[] = {
	" ", " ", "_files", "_backfillctl_jobs", "_sequence _backfillctl_jobs",
	NULL
};

/* Argument a's action in a script: its values between open and close,
 * or its entry of acts. */
static void
complete_act(struct buf *out, const struct cmdspec_arg *a, const char *help,
    const char *const *acts, const char *open, const char *close)
{
	enum complete_action act = complete_action_of(a, help);

	if (act != COMPLETE_WORDS) {
		buf_addstr(out, acts[act]);
		return;
	}
	buf_addstr(out, open);
	complete_words(out, a);
	buf_addstr(out, close);
}

/* The bash action word of argument a ("-": nothing to complete). */
static void
complete_bash_action(struct buf *out, const struct cmdspec_arg *a,
    const char *help)
{
	complete_act(out, a, help, complete_bash_acts, "'w:", "'");
}

/* One command's branch of the bash script's `case $cmd`. */
static void
complete_bash_cmd(struct buf *out, const struct cmdspec *cs)
{
	const struct cmdspec_arg *o = cs->opts;
	int i, any = 0;

	buf_printf(out, "\t%s)\n\t\topts='", cs->name);
	for (i = 0; o[i].name != NULL; i++)
		buf_printf(out, "%s--%s", i ? " " : "", o[i].name);
	buf_addstr(out, "'\n\t\tvals='");
	for (i = 0; o[i].name != NULL; i++) {
		if (complete_action_of(&o[i], cs->help) != COMPLETE_NONE)
			buf_printf(out, "%s--%s", any++ ? " " : "", o[i].name);
	}
	buf_addstr(out, "'\n\t\tpos=(");
	for (i = 0; cs->pos[i].name != NULL; i++) {
		buf_addstr(out, i ? " " : "");
		complete_bash_action(out, &cs->pos[i], cs->help);
	}
	buf_addstr(out, ")\n\t\tcase $prev in\n");
	for (i = 0; o[i].name != NULL; i++) {
		if (complete_action_of(&o[i], cs->help) == COMPLETE_NONE)
			continue;
		buf_printf(out, "\t\t--%s) act=", o[i].name);
		complete_bash_action(out, &o[i], cs->help);
		buf_addstr(out, " ;;\n");
	}
	buf_addstr(out, "\t\tesac\n\t\t;;\n");
}

static void
complete_bash(struct buf *out)
{
	size_t i;

	buf_addstr(out, complete_bash_head);
	buf_addstr(out, "\t\t\tCOMPREPLY=($(compgen -W '");
	for (i = 0; i < cmdspec_count; i++)
		buf_printf(out, "%s%s", i ? " " : "", cmdspec_table[i]->name);
	buf_addstr(out, "' -- \"$cur\"))\n\t\tfi\n\t\treturn ;;\n");
	for (i = 0; i < cmdspec_count; i++)
		complete_bash_cmd(out, cmdspec_table[i]);
	buf_addstr(out, complete_bash_tail);
}

/* ---- zsh ------------------------------------------------------------- */

static const char complete_zsh_head[] =
"#compdef backfillctl\n"
"# zsh completion for backfillctl, written by 'backfillctl completion\n"
"# zsh' from its command specification: regenerate, do not edit.\n"
"\n"
"# The job names of the daemon the command line names, if it answers.\n"
"_backfillctl_jobs()\n"
"{\n"
"\tlocal -a jobs\n"
"\tjobs=(${(f)\"$(timeout 2 $_backfillctl_prog $_backfillctl_sock jobs --json \\\n"
"\t    2>/dev/null | sed -n 's/^  {\"name\": \"\\([^\"]*\\)\".*/\\1/p')\"})\n"
"\t_wanted jobs expl job compadd -a jobs\n"
"}\n"
"\n"
"_backfillctl()\n"
"{\n"
"\tlocal curcontext=$curcontext state line ret=1 i\n"
"\tlocal _backfillctl_prog=$words[1]\n"
"\tlocal -a _backfillctl_sock\n"
"\tfor ((i = 2; i < $#words; i++)); do\n"
"\t\tcase $words[i] in\n"
"\t\t--socket|--config) _backfillctl_sock+=($words[i] $words[i+1]) ;;\n"
"\t\t--socket=*|--config=*) _backfillctl_sock+=($words[i]) ;;\n"
"\t\tesac\n"
"\tdone\n"
"\t_arguments -C \\\n";

static const char complete_zsh_tail[] =
"\t\tesac\n"
"\t\t;;\n"
"\tesac\n"
"\treturn ret\n"
"}\n"
"\n"
"if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
"\t_backfillctl \"$@\"\n"
"else\n"
"\tcompdef _backfillctl backfillctl\n"
"fi\n";

/* s inside single quotes, and inside _arguments' [...] when brackets. */
static void
complete_zsh_text(struct buf *out, const char *s, bool brackets)
{
	for (; *s != '\0'; s++) {
		if (*s == '\'')
			buf_addstr(out, "'\\''");
		else if (brackets && strchr("[]\\:", *s) != NULL)
			buf_printf(out, "\\%c", *s);
		else
			buf_add(out, s, 1);
	}
}

/* A message word (a value placeholder): its letters, digits and ",._-"
 * ("JOB[,JOB]" is "JOB,JOB"). */
static void
complete_zsh_word(struct buf *out, const char *s)
{
	for (; *s != '\0'; s++)
		if (isalnum((unsigned char)*s) || strchr(",._-", *s) != NULL)
			buf_add(out, s, 1);
}

/* The zsh action of an argument, after its message. */
static void
complete_zsh_action(struct buf *out, const struct cmdspec_arg *a,
    const char *help)
{
	complete_act(out, a, help, complete_zsh_acts, "(", ")");
}

/* One option's _arguments spec: '--name=[desc]:VALUE:action' or
 * '--name[desc]' (common: help is CMDSPEC_COMMON_HELP). */
static void
complete_zsh_opt(struct buf *out, const struct cmdspec_arg *a,
    const char *help)
{
	char ph[32], desc[160];
	bool flag = complete_action_of(a, help) == COMPLETE_NONE;

	complete_doc(help, a->name, ph, sizeof ph, desc, sizeof desc);
	if (strcmp(a->name, "help") == 0)
		buf_addstr(out, "\t\t'(- *)'{-h,--help}'[");
	else
		buf_printf(out, "\t\t'--%s%s[", a->name, flag ? "" : "=");
	complete_zsh_text(out, desc, true);
	buf_addstr(out, "]");
	if (!flag) {
		buf_addstr(out, ":");
		complete_zsh_word(out, *ph != '\0' ? ph : a->name);
		buf_addstr(out, ":");
		complete_zsh_action(out, a, help);
	}
	buf_addstr(out, "' \\\n");
}

/* A command's description: its help's first sentence, up to a ':', ';'
 * or " (" past its first words, cut to 64 characters at a word. */
static void
complete_zsh_summary(struct buf *out, const char *help)
{
	char s[72];
	size_t n = 0;

	for (; *help != '\0' && n < 64; help++) {
		if (*help == '.' && strchr(" \n", help[1]) != NULL)
			break;
		if (n >= 10 && (*help == ':' || *help == ';' ||
		    (*help == ' ' && help[1] == '(')))
			break;
		s[n++] = *help == '\n' ? ' ' : *help;
	}
	if (n == 64 && *help != '\0')
		while (n > 0 && s[n - 1] != ' ')
			n--;
	while (n > 0 && strchr(" ,", s[n - 1]) != NULL)
		n--;
	s[n] = '\0';
	complete_zsh_text(out, s, false);
}

/* One command's branch of `case $words[1]`. */
static void
complete_zsh_cmd(struct buf *out, const struct cmdspec *cs)
{
	int i;

	buf_printf(out, "\t\t%s)\n\t\t\t_arguments \\\n", cs->name);
	for (i = 0; cs->opts[i].name != NULL; i++) {
		buf_addstr(out, "\t");
		complete_zsh_opt(out, &cs->opts[i], cs->help);
	}
	for (i = 0; complete_common[i].name != NULL; i++) {
		buf_addstr(out, "\t");
		complete_zsh_opt(out, &complete_common[i], CMDSPEC_COMMON_HELP);
	}
	for (i = 0; cs->pos[i].name != NULL; i++) {
		buf_printf(out, "\t\t\t'%d:%s%s:", i + 1,
		    i < cs->minpos ? "" : ":", cs->pos[i].name);
		complete_zsh_action(out, &cs->pos[i], cs->help);
		buf_addstr(out, "' \\\n");
	}
	buf_addstr(out, "\t\t\t&& ret=0\n\t\t\t;;\n");
}

static void
complete_zsh(struct buf *out)
{
	size_t i;

	buf_addstr(out, complete_zsh_head);
	for (i = 0; complete_common[i].name != NULL; i++)
		complete_zsh_opt(out, &complete_common[i], CMDSPEC_COMMON_HELP);
	buf_addstr(out, "\t\t'(- *)--version[print the version]' \\\n"
	    "\t\t'1:command:->command' \\\n"
	    "\t\t'*::argument:->argument' && ret=0\n"
	    "\tcase $state in\n\tcommand)\n\t\tlocal -a cmds\n\t\tcmds=(\n");
	for (i = 0; i < cmdspec_count; i++) {
		buf_printf(out, "\t\t\t'%s:", cmdspec_table[i]->name);
		complete_zsh_summary(out, cmdspec_table[i]->help);
		buf_addstr(out, "'\n");
	}
	buf_addstr(out, "\t\t)\n"
	    "\t\t_describe -t commands 'backfillctl command' cmds && ret=0\n"
	    "\t\t;;\n\targument)\n"
	    "\t\tcurcontext=${curcontext%:*:*}:backfillctl-$words[1]:\n"
	    "\t\tcase $words[1] in\n");
	for (i = 0; i < cmdspec_count; i++)
		complete_zsh_cmd(out, cmdspec_table[i]);
	buf_addstr(out, complete_zsh_tail);
}

int
complete_script(struct buf *out, const char *shell)
{
	if (strcmp(shell, "bash") == 0)
		complete_bash(out);
	else if (strcmp(shell, "zsh") == 0)
		complete_zsh(out);
	else
		return -1;
	return 0;
}
