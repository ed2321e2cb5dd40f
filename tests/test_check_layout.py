#!/usr/bin/env python3
"""The test of tools/check_layout.py: tiny trees that break each rule
once (and their twins that keep it) make it fail with the one line
that names the violation, or pass.  CHECK_LAYOUT: the script."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

SCRIPT = os.environ.get('CHECK_LAYOUT') or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', 'tools',
    'check_layout.py')

SCHEDULER = '''\
/*
 * scheduler.c - the entry (its layers: docs/architecture.md).
 */
#include "sched_int.h"

void
sched_start(struct sched *s)
{
	sched_a_run(s);
}
'''

SCHED_A = '''\
#include "sched_int.h"

/* sched_b_f is named in a comment only */
void
sched_a_run(struct sched *s)
{
	const char *x = "sched_b_g(s)";

	s->sched_b_g(s);	/* through a pointer: no arrow */
	(void)x;
	sched_b_f(s);
}
'''

ARCH = '''\
# The map

## The scheduler's layers

| layer | files | what |
| --- | --- | --- |
| 1 | `scheduler.c` | the entry |
| 2 | `sched_a.c` | a |
| 3 | `sched_b.c` | b |

## Layout

| path | what |
| --- | --- |
| `daemon/lib/` | the core (`calc.c`, `err.h`) |
'''

SCHED_B = '''\
#include "sched_int.h"

static void
sched_a_run(struct sched *s)	/* its own, shadowing sched_a.c's */
{
	(void)s;
}

void
sched_b_f(struct sched *s)
{
	sched_a_run(s);
}

int
sched_b_g(struct sched *s)
{
	return s != 0;
}
'''


def function(name, nlines, static=False):
    """A C function whose body spans nlines lines, braces included."""
    body = ''.join('\tx += %d;\n' % i for i in range(nlines - 3))
    return '%sint\n%s(int x)\n{\n%s\treturn x;\n}\n' % (
        'static ' if static else '', name, body)


class Tree:
    """A tree in a temporary folder: daemon/{lib,server,store,wh}."""

    def __init__(self, test):
        self.tmp = tempfile.TemporaryDirectory()
        test.addCleanup(self.tmp.cleanup)
        self.root = self.tmp.name
        for d in ('lib', 'lib/util', 'server', 'server/sched', 'server/exec',
                  'server/control', 'store', 'wh', 'cmd', 'cli'):
            os.makedirs(os.path.join(self.root, 'daemon', d))
        self.write('daemon/lib/err.h', '#define ERR 1\n')
        self.write('daemon/server/log.h', 'void log_err(void);\n')
        self.write('daemon/server/clock_ms.h', 'long clock_ms(void);\n')
        self.write('daemon/lib/calc.c', '#include "err.h"\n' +
                   function('calc_add', 10))
        os.makedirs(os.path.join(self.root, 'docs'))
        self.write('docs/architecture.md', ARCH)
        self.write('daemon/server/sched/scheduler.c', SCHEDULER)
        self.write('daemon/server/sched/sched_a.c', SCHED_A)
        self.write('daemon/server/sched/sched_b.c', SCHED_B)

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)

    def check(self, known=None):
        """(exit status, lines printed) of the script on this tree."""
        args = [sys.executable, SCRIPT, '--root', self.root]
        if known is not None:
            path = os.path.join(self.root, 'known.txt')
            with open(path, 'w', encoding='utf-8') as f:
                f.write(textwrap.dedent(known))
            args += ['--known', path]
        else:
            args += ['--known', os.devnull]
        p = subprocess.run(args, capture_output=True, text=True,
                           timeout=60)
        return p.returncode, p.stdout.splitlines()


class CheckLayout(unittest.TestCase):

    def test_clean_tree_passes(self):
        rc, out = Tree(self).check()
        self.assertEqual(out, [])
        self.assertEqual(rc, 0)

    def test_file_above_1200_lines(self):
        t = Tree(self)
        t.write('daemon/store/big.c', '\n' * 1201)
        t.write('daemon/store/fits.c', '\n' * 1200)
        t.write('daemon/store/big.h', '\n' * 1500)  # a header: not counted
        rc, out = t.check()
        self.assertEqual(out, ['lines daemon/store/big.c 1201 (above 1200)'])
        self.assertEqual(rc, 1)

    def test_function_above_80_lines(self):
        t = Tree(self)
        t.write('daemon/wh/long.c', '\n' + function('wh_fits', 80) + '\n' +
                function('wh_long', 81, static=True))
        t.write('daemon/wh/inline.h',
                function('wh_inline', 90, static=True))
        rc, out = t.check()
        self.assertEqual(out, [
            'function daemon/wh/inline.h:wh_inline 90 (above 80; line 2)',
            'function daemon/wh/long.c:wh_long 81 (above 80; line 86)',
        ])
        self.assertEqual(rc, 1)

    def test_server_header_from_a_lower_layer(self):
        t = Tree(self)
        t.write('daemon/store/st.c', '#include "err.h"\n#include "log.h"\n'
                '#include <stdio.h>\n')
        t.write('daemon/wh/w.h', '#  include "../server/clock_ms.h"\n')
        # a server/ file may include its own headers
        t.write('daemon/server/srv.c', '#include "log.h"\n')
        rc, out = t.check()
        self.assertEqual(out, [
            'include daemon/store/st.c server/log.h (store/ may not include'
            ' server/)',
            'include daemon/wh/w.h server/clock_ms.h (wh/ may not include'
            ' server/)',
        ])
        self.assertEqual(rc, 1)

    def test_include_up_between_folders(self):
        t = Tree(self)
        t.write('daemon/server/sched/scheduler.h', 'struct sched;\n')
        t.write('daemon/server/exec/exec.h', 'struct exec;\n')
        # down: the scheduler includes the executor's header
        t.write('daemon/server/sched/trend_hist.c', '#include "exec.h"\n')
        # up: the executor includes the scheduler's, the rule core cmd's
        t.write('daemon/server/exec/exec.c', '#include "exec.h"\n'
                '#include "scheduler.h"\n')
        t.write('daemon/cmd/cmd.h', 'struct cmd;\n')
        t.write('daemon/lib/util/buf.c', '#include "cmd.h"\n')
        rc, out = t.check()
        self.assertEqual(out, [
            'include daemon/lib/util/buf.c cmd/cmd.h (lib/util/ may not'
            ' include cmd/)',
            'include daemon/server/exec/exec.c server/sched/scheduler.h'
            ' (server/exec/ may not include server/sched/)',
        ])
        self.assertEqual(rc, 1)

    def test_util_includes_only_util(self):
        t = Tree(self)
        t.write('daemon/lib/cal.h', 'int cal(void);\n')
        t.write('daemon/lib/util/json.c', '#include "cal.h"\n')
        t.write('daemon/lib/plan.c', '#include "buf.h"\n')  # core: util
        t.write('daemon/lib/util/buf.h', 'struct buf;\n')
        rc, out = t.check()
        self.assertEqual(out, [
            'include daemon/lib/util/json.c lib/cal.h (lib/util/ may not'
            ' include lib/)'])
        self.assertEqual(rc, 1)

    def test_call_up_without_an_include(self):
        t = Tree(self)
        # control calls cmd (allowed); cmd calls control back (not),
        # through a declaration of its own: the include rule cannot see it
        t.write('daemon/server/control/control.c',
                'void cmd_run(void);\nvoid\ncontrol_reply(void)\n{\n'
                '\tcmd_run();\n}\nstatic void\nlocal(void)\n{\n}\n')
        t.write('daemon/cmd/cmd.c',
                'void control_reply(void);\nvoid\ncmd_run(void)\n{\n'
                '\tcontrol_reply();\n\tlocal();\n}\n')
        rc, out = t.check()
        self.assertEqual(out, [
            'call daemon/cmd/cmd.c server/control 1 (uses control_reply;'
            ' cmd/ may not use server/control/)'])
        self.assertEqual(rc, 1)
        # known with its figure: tolerated; one more name: it grew
        self.assertEqual(t.check('call daemon/cmd/cmd.c server/control 1\n'),
                         (0, []))
        t.write('daemon/server/control/control_b.c',
                'void\ncontrol_more(void)\n{\n}\n')
        t.write('daemon/cmd/cmd.c',
                'void\ncmd_run(void)\n{\n\tcontrol_reply();\n'
                '\tcontrol_more();\n}\n')
        rc, out = t.check('call daemon/cmd/cmd.c server/control 1\n')
        self.assertEqual(out, [
            'call daemon/cmd/cmd.c server/control 2 (uses control_more'
            ' control_reply; cmd/ may not use server/control/) (known at 1:'
            ' it grew)'])
        self.assertEqual(rc, 1)

    def test_cmd_reads_the_store_through_the_scheduler(self):
        t = Tree(self)
        t.write('daemon/store/store.h', 'struct store_stats { int n; };\n')
        t.write('daemon/store/cluster.h', 'struct cluster_state;\n')
        t.write('daemon/store/store.c',
                'void\nstore_stats(void)\n{\n}\n')
        # the several hosts' types (MAY_INCLUDE), and a struct tag named
        # as a store function, are no use of store/
        t.write('daemon/cmd/cmd_status.c',
                '#include "cluster.h"\nvoid\ncmd_status(void)\n{\n'
                '\tstruct store_stats ss;\n}\n')
        self.assertEqual(t.check(), (0, []))
        # a store function called, or store.h included: refused
        t.write('daemon/cmd/cmd_status.c',
                '#include "store.h"\nvoid\ncmd_status(void)\n{\n'
                '\tstore_stats();\n}\n')
        rc, out = t.check()
        self.assertEqual(out, [
            'include daemon/cmd/cmd_status.c store/store.h (cmd/ may not'
            ' include store/)',
            'call daemon/cmd/cmd_status.c store 1 (uses store_stats; cmd/'
            ' may not use store/)'])
        self.assertEqual(rc, 1)

    def test_folder_above_30_files(self):
        t = Tree(self)
        for i in range(30):
            t.write('daemon/wh/w%02d.h' % i, '\n')
        rc, out = t.check()
        self.assertEqual((rc, out), (0, []))  # 30: fits
        t.write('daemon/wh/more.c', '\n')
        t.write('daemon/wh/notes.txt', '\n')  # not a source file
        rc, out = t.check()
        self.assertEqual(out, ['files daemon/wh 31 (above 30)'])
        self.assertEqual(rc, 1)

    def test_raw_allocation_outside_xalloc(self):
        t = Tree(self)
        t.write('daemon/lib/util/xalloc.c', 'void *\nxmalloc(unsigned long n)'
                '\n{\n\treturn malloc(n);\n}\n')  # the wrapper: allowed
        t.write('daemon/store/ok.c', '/* malloc(1) in a comment */\n'
                'void\nok(struct a *a)\n{\n\tchar *p = xmalloc(1), *q ='
                ' xstrdup("strdup(x)");\n\n\ta->malloc(2);\n'
                '\t(void)p; (void)q;\n}\n')
        t.write('daemon/server/raw.c', 'void\nraw(void)\n{\n'
                '\tchar *p = calloc(1, 2);\n\tchar *s = strdup("a");\n'
                '\t(void)p; (void)s;\n}\n')
        rc, out = t.check()
        self.assertEqual(out, [
            'alloc daemon/server/raw.c:4 calloc (use xcalloc of'
            ' lib/util/xalloc.h, or list the file in RAW_ALLOC with its'
            ' reason)',
            'alloc daemon/server/raw.c:5 strdup (use xstrdup of'
            ' lib/util/xalloc.h, or list the file in RAW_ALLOC with its'
            ' reason)',
        ])
        self.assertEqual(rc, 1)

    def test_clock_read_outside_clock_ms(self):
        t = Tree(self)
        t.write('daemon/lib/util/clock_ms.h', 'static inline long\n'
                'clock_ms(int id)\n{\n\tstruct timespec ts;\n\n'
                '\tclock_gettime(id, &ts);\n\treturn ts.tv_sec;\n}\n')
        t.write('daemon/store/ok.c', '/* clock_gettime(x) in a comment */\n'
                'long\nok(struct a *a)\n{\n\treturn clock_ms(1) +'
                ' a->time(2) + f("time(0)");\n}\n')
        t.write('daemon/server/raw.c', 'long\nraw(void)\n{\n'
                '\tstruct timespec ts;\n\n\tclock_gettime(1, &ts);\n'
                '\treturn time(NULL);\n}\n')
        rc, out = t.check()
        self.assertEqual(out, [
            'clock daemon/server/raw.c:6 clock_gettime (read the clock'
            ' through daemon/lib/util/clock_ms.h: clock_read, clock_ms,'
            ' clock_us; the daemon\'s wall clock is clock.h\'s)',
            'clock daemon/server/raw.c:7 time (read the clock through'
            ' daemon/lib/util/clock_ms.h: clock_read, clock_ms, clock_us;'
            ' the daemon\'s wall clock is clock.h\'s)',
        ])
        self.assertEqual(rc, 1)

    def test_rule_index(self):
        t = Tree(self)
        t.write('docs/architecture.md', '# x\n\n## Rule index\n\n'
                '| name | rule | home |\n| --- | --- | --- |\n'
                '| `PICK-1` | caps | `daemon/lib/calc.c` |\n'
                '| `PICK-2` | order | `daemon/lib/calc.c` |\n'
                '| `WAP-1` | marks | `daemon/lib/gone.c` |\n\n'
                '## Layout\n\n| `PICK-9` | not the index | `x` |\n')
        t.write('daemon/lib/calc.c', '/* PICK-1. caps; PICK-2. order */\n'
                '#include "err.h"\n' + function('calc_add', 10))
        t.write('daemon/server/sched/sched_b.c', SCHED_B +
                '/* as PICK-1 says; PICK-3 is no rule; WAP-1 */\n')
        rc, out = t.check()
        self.assertEqual(out, [
            'rule PICK-3: said at daemon/server/sched/sched_b.c:%d, not in'
            ' the rule index of docs/architecture.md' %
            (SCHED_B.count('\n') + 1),
            'rule WAP-1: its home daemon/lib/gone.c'
            ' (docs/architecture.md:9) does not exist'])
        self.assertEqual(rc, 1)
        # a rule of the index that no code says, or not its home
        t.write('daemon/lib/calc.c', '/* PICK-1. caps */\n'
                '#include "err.h"\n' + function('calc_add', 10))
        t.write('daemon/server/sched/sched_b.c', SCHED_B +
                '/* PICK-1 */\n')
        t.write('daemon/lib/gone.c', '/* WAP-1. marks */\n')
        rc, out = t.check()
        self.assertEqual(out, [
            'rule PICK-2: in the rule index (docs/architecture.md:8), said'
            ' nowhere in daemon/'])
        self.assertEqual(rc, 1)
        t.write('daemon/server/sched/sched_b.c', SCHED_B +
                '/* PICK-2 */\n')
        rc, out = t.check()
        self.assertEqual(out, [
            'rule PICK-2: its home daemon/lib/calc.c'
            ' (docs/architecture.md:8) does not say it'])
        self.assertEqual(rc, 1)

    def test_map_names_what_exists(self):
        t = Tree(self)
        t.write('docs/architecture.md', ARCH.replace(
            '(`calc.c`, `err.h`) |', '(`calc.c`, `err.h`, `gone.c`, the'
            ' `sqlite3.h` of SQLite) |\n| `daemon/nowhere/` | nothing |'))
        rc, out = t.check()
        self.assertEqual(out, [
            'map gone.c: named in docs/architecture.md:15, no such file',
            'map daemon/nowhere/: named in docs/architecture.md:16, no such'
            ' folder'])
        self.assertEqual(rc, 1)

    def test_folder_in_no_layer(self):
        t = Tree(self)
        os.makedirs(os.path.join(t.root, 'daemon', 'server', 'new'))
        t.write('daemon/server/new/x.c', '\n')
        rc, out = t.check()
        self.assertEqual(out, [
            'folder daemon/server/new: in no layer (MAY_USE in'
            ' tools/check_layout.py)'])
        self.assertEqual(rc, 1)
        # and a folder in no layer cannot be known
        rc, _ = t.check('folder daemon/server/new\n')
        self.assertNotEqual(rc, 0)

    def test_header_moved_below_resolves_there(self):
        t = Tree(self)
        t.write('daemon/store/st.c', '#include "log.h"\n')
        t.write('daemon/lib/log.h', 'void log_err(void);\n')  # lib first
        rc, out = t.check()
        self.assertEqual((rc, out), (0, []))

    def test_cycle_between_scheduler_files(self):
        t = Tree(self)
        t.write('daemon/server/sched/sched_b.c', SCHED_B.replace(
            'static void\nsched_a_run', 'static void\nsched_b_own'))
        rc, out = t.check()
        self.assertEqual(rc, 1)
        self.assertIn(
            'cycle sched_a.c -> sched_b.c -> sched_a.c (sched_a.c:sched_a_run'
            ' uses sched_b_f, sched_b.c:sched_b_f uses sched_a_run; 2 files'
            ' in the circle: sched_a.c sched_b.c)', out)
        # and the arrow up, against the table of layers
        self.assertIn('layer sched_b.c (3) -> sched_a.c (2): sched_b.c:'
                      'sched_b_f uses sched_a_run, not of a lower layer', out)
        self.assertEqual(len(out), 2)

    def test_three_file_cycle_through_a_callback(self):
        t = Tree(self)
        # a function named as a value (a callback registered) is an arrow
        t.write('daemon/server/sched/sched_c.c', '#include "sched_int.h"\n'
                'void\nsched_c_f(struct sched *s)\n{\n'
                '\tuv_idle_start(&s->h, sched_start);\n}\n')
        t.write('daemon/server/sched/sched_b.c', SCHED_B + 'void\nsched_b_h(void)\n'
                '{\n\tsched_c_f(0);\n}\n')
        rc, out = t.check()
        self.assertEqual(rc, 1)
        self.assertTrue(any(ln.startswith(
            'cycle sched_a.c -> sched_b.c -> sched_c.c -> scheduler.c ->'
            ' sched_a.c (') for ln in out), out)
        self.assertIn('layer sched_c.c: in no layer of the table in'
                      ' docs/architecture.md ("The scheduler\'s layers")',
                      out)

    def test_layer_listed_twice_or_not_a_file(self):
        t = Tree(self)
        t.write('docs/architecture.md', ARCH.replace(
            '| 3 | `sched_b.c` | b |\n',
            '| 3 | `sched_b.c` | b |\n| 4 | `sched_b.c`, `sched_gone.c` |'
            ' c |\n'))
        rc, out = t.check()
        self.assertEqual(out, [
            'layer sched_b.c: in layers 3 4 of the table in'
            ' docs/architecture.md ("The scheduler\'s layers")',
            'layer sched_gone.c: not a file of the scheduler of the table in'
            ' docs/architecture.md ("The scheduler\'s layers")',
            'map sched_gone.c: named in docs/architecture.md:10, no such'
            ' file',
        ])
        self.assertEqual(rc, 1)

    def broken(self):
        t = Tree(self)
        t.write('daemon/lib/big.c', '\n' * 1300)
        t.write('daemon/lib/long.c', function('lib_long', 100))
        t.write('daemon/store/st.c', '#include "log.h"\n')
        return t

    def test_known_violations_tolerated(self):
        rc, out = self.broken().check('''\
            # what other branches fix
            lines daemon/lib/big.c 1300
            function daemon/lib/long.c:lib_long 100
            include daemon/store/st.c server/log.h
            ''')
        self.assertEqual((rc, out), (0, []))

    def test_known_violation_that_grew_fails(self):
        rc, out = self.broken().check('''\
            lines daemon/lib/big.c 1299
            function daemon/lib/long.c:lib_long 101
            include daemon/store/st.c server/log.h
            ''')
        self.assertEqual(out, [
            'lines daemon/lib/big.c 1300 (above 1200) (known at 1299: it'
            ' grew)',
            'known (lower its figure to 100): function daemon/lib/long.c:'
            'lib_long 100 (above 80; line 2)',
        ])
        self.assertEqual(rc, 1)

    def test_known_violation_fixed_fails_until_removed(self):
        t = self.broken()
        t.write('daemon/lib/big.c', '\n' * 1200)
        rc, out = t.check('''\
            lines daemon/lib/big.c 1300
            function daemon/lib/long.c:lib_long 100
            include daemon/store/st.c server/log.h
            ''')
        self.assertEqual(out, [
            'fixed (remove it from KNOWN in tools/check_layout.py): lines'
            ' daemon/lib/big.c 1300',
        ])
        self.assertEqual(rc, 1)

    def test_a_cycle_cannot_be_known(self):
        rc, _ = Tree(self).check('cycle sched_a.c -> sched_b.c\n')
        self.assertNotEqual(rc, 0)

    def test_unknown_violation_beside_known_ones_fails(self):
        t = self.broken()
        t.write('daemon/wh/w.c', '#include "clock_ms.h"\n')
        rc, out = t.check('''\
            lines daemon/lib/big.c 1300
            function daemon/lib/long.c:lib_long 100
            include daemon/store/st.c server/log.h
            ''')
        self.assertEqual(out, [
            'include daemon/wh/w.c server/clock_ms.h (wh/ may not include'
            ' server/)'])
        self.assertEqual(rc, 1)


if __name__ == '__main__':
    unittest.main(verbosity=2)
