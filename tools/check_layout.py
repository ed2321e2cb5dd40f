#!/usr/bin/env python3
"""check_layout.py - the shape rules of the tree (docs/architecture.md).

  (a) no C file under daemon/ above MAX_FILE_LINES lines;
  (b) no function above MAX_FUNC_LINES lines: from the line of its opening
      brace to the line of its closing brace, both counted;
  (c) the layers between daemon/'s folders: a file includes headers
      (a quoted name resolved as the compiler does: the including file's
      folder first, then daemon/meson.build's include_directories order)
      and uses functions (a name another file defines, not static, and
      only one file defines) only of its own folder and of the folders
      MAY_USE lists for it, below it:

        lib/util/                     nothing else
        lib/ (the rule core), lib/checks/, lib/cluster/, lib/config/,
        lib/proto/, lib/sql/          lib/ and its folders
        wh/                           lib/
        store/                        lib/, wh/
        server/base/                  lib/
        server/exec/                  lib/, wh/, server/base/
        server/sched/                 lib/, store/, server/base/,
                                      server/exec/
        server/view/, server/cluster/ as sched/, and server/sched/
        cmd/                          lib/, server/base/, server/exec/,
                                      server/sched/, server/view/ (not
                                      store/: its reads go through the
                                      scheduler; MAY_INCLUDE lets it
                                      include store/cluster.h)
        server/control/               lib/, store/, server/base/,
                                      server/sched/, server/view/, cmd/
        server/ (main, startup)       all but cli/
        cli/                          lib/

      so nothing below includes or calls up: lib/ never server/, store/,
      wh/ or cmd/; wh/ and store/ never server/ or cmd/; the executor
      never the scheduler; cmd/ never server/control/ (control calls
      cmd_run, cmd answers); a folder MAY_USE does not list fails;
  (d) no cycle in the call graph between the scheduler's files
      (daemon/server/sched/scheduler.c and sched_*.c): file A
      points to file B when A uses the name of a function B defines (and
      A does not define itself); a call through a function pointer or a
      struct member (x.f(), x->f()) is no arrow;
  (e) with the table of the scheduler's layers (docs/architecture.md,
      "The scheduler's layers": one row per layer, its number and its
      files), every file of the scheduler is in one layer and every arrow
      of (d) goes from a layer to a higher-numbered one (down);
  (f) no folder of daemon/ holds more than MAX_FOLDER_FILES source files
      (.c and .h, its subfolders not counted);
  (g) no raw allocation outside daemon/lib/util/xalloc.c: a call of
      malloc, calloc, realloc, reallocarray, strdup, strndup, asprintf or
      vasprintf (xalloc.h's wrappers abort on exhaustion, so no caller
      checks for NULL); a file that must (a library's allocator hook)
      is listed in RAW_ALLOC with its reason;
  (h) no read of the system's clocks outside daemon/lib/util/clock_ms.h
      (UTIL-2): a call of clock_gettime, gettimeofday or time (the
      daemon's wall clock is clock.h's, over clock_ms.h; the layers below
      read clock_ms.h directly);
  (i) the rule index (docs/architecture.md, "Rule index": one row per
      rule, `NAME` | what | `home`): every name the sources of daemon/
      say (FAMILY-N, FAMILY one of the index's) is in the index, every
      name of the index is said in daemon/, and each home exists and
      says its name;
  (j) the module map is written once, docs/architecture.md ("Layout" and
      "The scheduler's layers"), and every folder and file it names
      exists: a file of a row is found from the repository, from daemon/,
      from the row's folder, or by its name under the row's folder.

Each violation is printed as one line.  KNOWN below lists the violations
known today, one line each with its figure, as this script prints them:
such a violation is tolerated while its figure stays at or below the
one listed.  The check fails on any other violation and on an entry of
KNOWN that no longer violates (remove it: the list only shrinks).

  tools/check_layout.py [--root DIR] [--known FILE] [--graph]

--root: the tree to check (default: this script's repository); --known:
read the known violations from FILE instead of KNOWN (the self-test);
--graph: print the scheduler's call graph (file -> files) and stop.
Exit 0 when the tree holds, 1 when it does not.
"""

import argparse
import functools
import os
import re
import sys

# The known violations, one line each, as this script prints them without
# the parenthesis ("lines", "function", "files", "include" and "call"
# lines only: a cycle, a layer crossed or a folder in no layer is never
# tolerated).  The figure is a ceiling: a
# file or function that grows past it fails.  Those of other files than
# the scheduler's, fixed in parallel: the list only shrinks, to empty.
KNOWN = """
""".strip().splitlines()

MAX_FILE_LINES = 1200
MAX_FUNC_LINES = 80
MAX_FOLDER_FILES = 30
# daemon/meson.build's include_directories, in its order
INCLUDE_DIRS = ['lib', 'lib/checks', 'lib/cluster', 'lib/config',
                'lib/proto', 'lib/sql', 'lib/util', 'server', 'server/base',
                'server/exec', 'server/sched', 'server/view',
                'server/cluster', 'server/control', 'store', 'wh', 'cmd',
                'cli']
# (c): what each folder of daemon/ may include and call, beside itself
LIB = ['lib', 'lib/checks', 'lib/cluster', 'lib/config', 'lib/proto',
       'lib/sql', 'lib/util']
_SCHED = LIB + ['store', 'server/base', 'server/exec', 'server/sched']
MAY_USE = {
    'lib/util': [],
    'wh': LIB,
    'store': LIB + ['wh'],
    'server/base': LIB,
    'server/exec': LIB + ['wh', 'server/base'],
    'server/sched': LIB + ['store', 'server/base', 'server/exec'],
    'server/view': _SCHED,
    'server/cluster': _SCHED,
    # not store/: a command reads the state store through the
    # scheduler (sched_read_*, sched_query.c), which owns it on the loop
    'cmd': LIB + ['server/base', 'server/exec', 'server/sched',
                  'server/view'],
    'server/control': LIB + ['store', 'server/base', 'server/sched',
                             'server/view', 'cmd'],
    'server': LIB + ['wh', 'store', 'server/base', 'server/exec',
                     'server/sched', 'server/view', 'server/cluster',
                     'server/control', 'cmd'],
    'cli': LIB,
}
for _d in LIB:
    MAY_USE.setdefault(_d, LIB)
# (c), includes: a header a folder may include from a folder MAY_USE does
# not list for it, with why (its functions stay out of reach: calls are
# checked apart).
MAY_INCLUDE = {
    ('cmd', 'store/cluster.h'): 'status and its nodes read the several'
    ' hosts\' state through cmd_ctx\'s cluster_drv, a table of function'
    ' pointers (the driver is loaded with the PostgreSQL store)',
}
SCHED_DIR = 'daemon/server/sched'

# (g): the calls xalloc.h wraps, and the files allowed them, with why.
RAW_ALLOC_CALLS = {'malloc', 'calloc', 'realloc', 'reallocarray', 'strdup',
                   'strndup', 'asprintf', 'vasprintf'}
RAW_ALLOC = {
    'daemon/lib/util/xalloc.c': 'the wrappers themselves',
}
# (h): the calls that read a clock, and the one file allowed them.
CLOCK_CALLS = {'clock_gettime', 'gettimeofday', 'time'}
CLOCK_HOME = 'daemon/lib/util/clock_ms.h'
SCHED_FILES = re.compile(r'^(scheduler|sched_[A-Za-z0-9_]+)\.c$')

KEYWORDS = {
    'if', 'for', 'while', 'switch', 'return', 'sizeof', 'do', 'else',
    'case', 'goto', 'break', 'continue', 'default', 'typedef', 'struct',
    'union', 'enum', 'static', 'const', 'volatile', 'extern', 'inline',
    'register', 'restrict', 'void', 'char', 'short', 'int', 'long',
    'float', 'double', 'signed', 'unsigned', '_Bool', 'bool',
    '__attribute__', '_Static_assert', 'alignof', '_Alignof',
}

TOKEN = re.compile(r'[0-9][A-Za-z0-9_.]*|[A-Za-z_][A-Za-z0-9_]*|->|[{}()\[\];=,.]|\n')


def strip_c(text):
    """Comments, string and character literals and preprocessor lines
    blanked out, newlines kept (so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in ' \t':
            out.append(c)
            i += 1
            continue
        if line_start and c == '#':
            # a directive, with its continuation lines
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    out.append('\n')
                    i += 2
                    continue
                i += 1
            continue
        line_start = False
        if c == '\n':
            out.append(c)
            line_start = True
            i += 1
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append(c + ' ' * max(0, min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def tokens(text):
    """(token, line) pairs of a stripped C text."""
    line = 1
    for m in TOKEN.finditer(text):
        t = m.group(0)
        if t == '\n':
            line += 1
        else:
            yield t, line


class CFile:
    """A C file's function definitions and the names it uses."""

    def __init__(self, path, rel):
        self.rel = rel
        with open(path, encoding='utf-8', errors='replace') as f:
            self.text = f.read()
        self.nlines = self.text.count('\n') + (
            0 if self.text.endswith('\n') or not self.text else 1)
        # [name, static, line of {, line of }, line of the name]
        self.functions = []
        self.uses = {}        # name -> [function using it ('' file scope)]
        self._parse(list(tokens(strip_c(self.text))))

    def _parse(self, toks):
        depth = 0
        current = ''   # the function whose body we are in
        for k, (t, line) in enumerate(toks):
            if t == '{':
                if depth == 0:
                    fn = self._definition(toks, k)
                    if fn is not None:
                        current = fn[0]
                        self.functions.append([fn[0], fn[1], line, line,
                                               fn[2]])
                depth += 1
            elif t == '}':
                depth = max(0, depth - 1)
                if depth == 0 and current:
                    self.functions[-1][3] = line
                    current = ''
            elif (t[0].isalpha() or t[0] == '_') and t not in KEYWORDS:
                prev = toks[k - 1][0] if k > 0 else ''
                if prev in ('.', '->'):
                    continue  # a member: a call through a pointer
                if prev in ('struct', 'union', 'enum'):
                    continue  # a tag (struct store_stats), no function
                self.uses.setdefault(t, []).append(current)

    @staticmethod
    def _definition(toks, k):
        """(name, static) when the '{' at toks[k] opens a function body."""
        j = k - 1
        # skip trailing __attribute__((...)) groups
        while j >= 0 and toks[j][0] == ')':
            d, i = 0, j
            while i >= 0:
                if toks[i][0] == ')':
                    d += 1
                elif toks[i][0] == '(':
                    d -= 1
                    if d == 0:
                        break
                i -= 1
            if i > 0 and toks[i - 1][0] == '__attribute__':
                j = i - 2
                continue
            if i <= 0:
                return None
            name = toks[i - 1][0]
            if not (name[0].isalpha() or name[0] == '_') or name in KEYWORDS:
                return None
            # the declaration's specifiers: back to the previous ; } or {
            static = False
            b = i - 2
            while b >= 0 and toks[b][0] not in (';', '}', '{'):
                if toks[b][0] == '=':
                    return None
                if toks[b][0] == 'static':
                    static = True
                b -= 1
            return name, static, toks[i - 1][1]
        return None

    def long_functions(self, limit):
        for name, _static, first, last, at in self.functions:
            if last - first + 1 > limit:
                yield name, at, last - first + 1


def c_files(root, sub):
    top = os.path.join(root, sub)
    for d, dirs, files in os.walk(top):
        dirs.sort()
        for f in sorted(files):
            if f.endswith('.c') or f.endswith('.h'):
                p = os.path.join(d, f)
                yield p, os.path.relpath(p, root).replace(os.sep, '/')


def check_sizes(root):
    """(a) and (b): (key, figure, line) per violation."""
    out = []
    for path, rel in c_files(root, 'daemon'):
        cf = CFile(path, rel)
        if rel.endswith('.c') and cf.nlines > MAX_FILE_LINES:
            out.append(('lines %s' % rel, cf.nlines,
                        'lines %s %d (above %d)' % (rel, cf.nlines,
                                                    MAX_FILE_LINES)))
        for name, first, n in cf.long_functions(MAX_FUNC_LINES):
            out.append(('function %s:%s' % (rel, name), n,
                        'function %s:%s %d (above %d; line %d)' %
                        (rel, name, n, MAX_FUNC_LINES, first)))
    return out


INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def resolve(root, rel, header):
    """Where daemon/rel's #include "header" lands, relative to daemon/."""
    here = os.path.dirname(rel)  # daemon/<layer>
    for d in [here] + ['daemon/' + x for x in INCLUDE_DIRS]:
        p = os.path.normpath(os.path.join(root, d, header))
        if os.path.isfile(p):
            return os.path.relpath(p, os.path.join(root, 'daemon')).replace(
                os.sep, '/')
    return None


def folder_of(rel):
    """daemon/<folder>/x.c -> <folder> ('' for daemon/ itself)."""
    return os.path.dirname(rel)[len('daemon/'):]


def may_use(src, dst):
    return src == dst or dst in MAY_USE.get(src, ())


def check_includes(root):
    """(c), includes: (key, figure, line) per violation (the figure: 1)."""
    out = []
    for path, rel in c_files(root, 'daemon'):
        src = folder_of(rel)
        if src not in MAY_USE:
            continue  # said once, by check_folders
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            where = resolve(root, rel, m.group(1))
            if where is None:
                continue
            dst = os.path.dirname(where)
            if not may_use(src, dst) and (src, where) not in MAY_INCLUDE:
                key = 'include %s %s' % (rel, where)
                out.append((key, 1, '%s (%s/ may not include %s/)' %
                            (key, src, dst)))
    return out


def check_calls(root):
    """(c), calls: (key, figure, line) per file and folder it may not
    use, the figure the number of that folder's names it uses."""
    files = {rel: CFile(path, rel)
             for path, rel in c_files(root, 'daemon') if rel.endswith('.c')}
    owners = {}
    for rel, cf in files.items():
        for name, static, _a, _b, _at in cf.functions:
            if not static:
                owners.setdefault(name, set()).add(rel)
    out = []
    for rel, cf in sorted(files.items()):
        src = folder_of(rel)
        if src not in MAY_USE:
            continue
        own = {fn[0] for fn in cf.functions}
        bad = {}
        for name in cf.uses:
            where = owners.get(name)
            if name in own or where is None or len(where) != 1:
                continue
            dst = folder_of(next(iter(where)))
            if not may_use(src, dst):
                bad.setdefault(dst, []).append(name)
        for dst, names in sorted(bad.items()):
            key = 'call %s %s' % (rel, dst)
            out.append((key, len(names), '%s %d (uses %s; %s/ may not use'
                        ' %s/)' % (key, len(names), ' '.join(sorted(names)),
                                   src, dst)))
    return out


def check_folders(root):
    """(c) and (f): a folder without a layer; a folder above
    MAX_FOLDER_FILES source files (the figure: their number)."""
    out = []
    top = os.path.join(root, 'daemon')
    for d, dirs, files in os.walk(top):
        dirs.sort()
        n = sum(1 for f in files if f.endswith('.c') or f.endswith('.h'))
        rel = os.path.relpath(d, root).replace(os.sep, '/')
        if n and folder_of(rel + '/x') not in MAY_USE:
            key = 'folder %s' % rel
            out.append((key, None, '%s: in no layer (MAY_USE in'
                        ' tools/check_layout.py)' % key))
        if n > MAX_FOLDER_FILES:
            key = 'files %s' % rel
            out.append((key, n, '%s %d (above %d)' %
                        (key, n, MAX_FOLDER_FILES)))
    return out


def calls_of(root, names, allowed):
    """(rel, line, name) per call of one of names in daemon/'s sources
    but those of allowed (not a member call, x.f() or x->f())."""
    for path, rel in c_files(root, 'daemon'):
        if rel in allowed:
            continue
        with open(path, encoding='utf-8', errors='replace') as f:
            toks = list(tokens(strip_c(f.read())))
        for k, (t, line) in enumerate(toks):
            if (t in names and k + 1 < len(toks) and
                    toks[k + 1][0] == '(' and
                    (k == 0 or toks[k - 1][0] not in ('.', '->'))):
                yield rel, line, t


def check_alloc(root):
    """(g): one (key, None, line) per raw allocation call (never
    tolerated: a file that must is listed in RAW_ALLOC)."""
    out = []
    for rel, line, t in calls_of(root, RAW_ALLOC_CALLS, RAW_ALLOC):
        key = 'alloc %s:%d %s' % (rel, line, t)
        out.append((key, None, '%s (use x%s of lib/util/xalloc.h,'
                    ' or list the file in RAW_ALLOC with its'
                    ' reason)' % (key, t)))
    return out


RULE_ROW = re.compile(r'^\|\s*`([A-Z]+)-(\d+)`\s*\|.*\|\s*`([^`]+)`\s*\|\s*$')
ARCH = 'docs/architecture.md'


def rule_index(root):
    """{name: (home, line)} of the index's rows, or None without one."""
    path = os.path.join(root, ARCH)
    if not os.path.isfile(path):
        return None
    rules, inside = None, False
    with open(path, encoding='utf-8') as f:
        for n, ln in enumerate(f, 1):
            if ln.startswith('## '):
                inside = ln.strip() == '## Rule index'
                if inside:
                    rules = {}
                continue
            m = RULE_ROW.match(ln) if inside else None
            if m:
                rules.setdefault('%s-%s' % (m.group(1), m.group(2)),
                                 (m.group(3), n))
    return rules


def check_rules(root):
    """(i): one (key, None, line) per name out of the index, per index
    row said nowhere, per home missing or silent (never tolerated)."""
    rules = rule_index(root)
    if rules is None:
        return []
    out = []
    fams = sorted({r.split('-')[0] for r in rules})
    if not fams:
        return []
    said = {}
    tag = re.compile(r'\b(%s)-(\d+)\b' % '|'.join(fams))
    for path, rel in c_files(root, 'daemon'):
        with open(path, encoding='utf-8', errors='replace') as f:
            for n, ln in enumerate(f, 1):
                for m in tag.finditer(ln):
                    said.setdefault(m.group(0), []).append((rel, n))
    for name in sorted(set(said) - set(rules)):
        rel, n = said[name][0]
        key = 'rule %s' % name
        out.append((key, None, '%s: said at %s:%d, not in the rule index'
                    ' of %s' % (key, rel, n, ARCH)))
    for name, (home, n) in sorted(rules.items()):
        key = 'rule %s' % name
        if not os.path.isfile(os.path.join(root, home)):
            out.append((key, None, '%s: its home %s (%s:%d) does not'
                        ' exist' % (key, home, ARCH, n)))
        elif name not in said:
            out.append((key, None, '%s: in the rule index (%s:%d), said'
                        ' nowhere in daemon/' % (key, ARCH, n)))
        elif home not in [rel for rel, _ in said[name]]:
            out.append((key, None, '%s: its home %s (%s:%d) does not say'
                        ' it' % (key, home, ARCH, n)))
    return out


def check_clock(root):
    """(h): one (key, None, line) per clock read outside CLOCK_HOME
    (never tolerated)."""
    out = []
    for rel, line, t in calls_of(root, CLOCK_CALLS, {CLOCK_HOME}):
        key = 'clock %s:%d %s' % (rel, line, t)
        out.append((key, None, '%s (read the clock through %s:'
                    ' clock_read, clock_ms, clock_us; the'
                    ' daemon\'s wall clock is clock.h\'s)' %
                    (key, CLOCK_HOME)))
    return out


@functools.lru_cache(maxsize=None)
def sched_graph(root):
    """The scheduler's files: {file: {file it uses: [(fn, name)]}}."""
    top = os.path.join(root, SCHED_DIR)
    files = {}
    if os.path.isdir(top):
        for f in sorted(os.listdir(top)):
            if SCHED_FILES.match(f):
                files[f] = CFile(os.path.join(top, f), SCHED_DIR + '/' + f)
    owner = {}
    for f, cf in files.items():
        for name, static, _a, _b, _at in cf.functions:
            if not static:
                owner.setdefault(name, f)
    graph = {f: {} for f in files}
    for f, cf in files.items():
        own = {fn[0] for fn in cf.functions}
        for name, users in cf.uses.items():
            g = owner.get(name)
            if g is None or g == f or name in own:
                continue
            for u in users:
                graph[f].setdefault(g, []).append((u or '(file scope)', name))
    return graph


def sccs(graph):
    """Tarjan's strongly connected components, each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def a_cycle(graph, comp):
    """One cycle through the first file of a component: [f, ..., f]."""
    start, inside = comp[0], set(comp)
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v]):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w in inside and w not in prev:
                prev[w] = v
                queue.append(w)
    return comp + [comp[0]]


def check_cycles(root):
    """(d): one line per cycle (per strongly connected set of files)."""
    graph = sched_graph(root)
    out = []
    for comp in sccs(graph):
        if len(comp) < 2:
            continue
        cyc = a_cycle(graph, comp)
        why = ', '.join('%s:%s uses %s' % (a, graph[a][b][0][0],
                                           graph[a][b][0][1])
                        for a, b in zip(cyc, cyc[1:]))
        key = 'cycle ' + ' -> '.join(cyc)
        out.append((key, None, '%s (%s; %d files in the circle: %s)' %
                    (key, why, len(comp), ' '.join(comp))))
    return out


LAYER_ROW = re.compile(r'^\|\s*(\d+)\s*\|([^|]*)\|')
LAYERS_WHERE = 'the table in docs/architecture.md ("The scheduler\'s layers")'


def doc_section(root, title):
    """[(line number, line)] of docs/architecture.md's section `## title`,
    or None without it."""
    path = os.path.join(root, 'docs', 'architecture.md')
    if not os.path.isfile(path):
        return None
    rows, inside = None, False
    with open(path, encoding='utf-8', errors='replace') as f:
        for n, ln in enumerate(f, 1):
            if ln.startswith('## '):
                inside = ln.strip() == '## ' + title
                if inside:
                    rows = []
                continue
            if inside:
                rows.append((n, ln.rstrip('\n')))
    return rows


def sched_layers(root):
    """{file: [layers]} from docs/architecture.md's table, or None."""
    rows = doc_section(root, "The scheduler's layers")
    if rows is None:
        return None
    layers = {}
    for _, ln in rows:
        m = LAYER_ROW.match(ln)
        if m:
            for name in re.findall(r'`([^`]+\.c)`', m.group(2)):
                layers.setdefault(name, []).append(int(m.group(1)))
    return layers


# the libraries' headers the map names, not files of the tree
SYSTEM_HEADERS = {'sqlite3.h', 'libpq-fe.h', 'uv.h', 'yaml.h', 'check.h'}
MAP_FILE = re.compile(r'^[A-Za-z0-9_./-]+\.(?:c|h|py|sql|md|sh)$')


def map_found(root, folder, name):
    """Whether file name of the map's row of folder exists."""
    if name in SYSTEM_HEADERS:
        return True
    for base in ('', 'daemon', folder, os.path.join('daemon', folder)):
        if os.path.isfile(os.path.join(root, base, name)):
            return True
    for top in ([folder] if folder else []) + ['daemon']:
        for d, _, files in os.walk(os.path.join(root, top)):
            if os.path.basename(name) in files:
                return True
    return False


def check_map(root):
    """(j): one (key, None, line) per folder or file of the map that does
    not exist (never tolerated)."""
    out = []
    for title in ('Layout', "The scheduler's layers"):
        for n, ln in doc_section(root, title) or []:
            cells = ln.split('|')
            if len(cells) < 4 or not ln.startswith('|'):
                continue
            first = re.findall(r'`([^`]+)`', cells[1])
            folder = first[0] if first and first[0].endswith('/') else \
                'daemon/server/sched/' if title != 'Layout' else ''
            for f in first:
                if f.endswith('/') and not any(os.path.isdir(
                        os.path.join(root, b, f)) for b in ('', 'daemon')):
                    key = 'map %s' % f
                    out.append((key, None, '%s: named in'
                                ' docs/architecture.md:%d, no such folder'
                                % (key, n)))
            for name in re.findall(r'`([^`]+)`', ln):
                if MAP_FILE.match(name) and \
                        not map_found(root, folder, name):
                    key = 'map %s' % name
                    out.append((key, None, '%s: named in'
                                ' docs/architecture.md:%d, no such file' %
                                (key, n)))
    return out


def check_layers(root):
    """(e): one line per file out of the table, per arrow up or across."""
    layers = sched_layers(root)
    if layers is None:
        return []
    graph = sched_graph(root)
    out = []
    for f in sorted(set(graph) | set(layers)):
        where = layers.get(f, [])
        if len(where) != 1 or f not in graph:
            key = 'layer %s' % f
            why = ('in no layer' if not where else
                   'in layers %s' % ' '.join(map(str, where))
                   if f in graph else 'not a file of the scheduler')
            out.append((key, None, '%s: %s of %s' % (key, why,
                                                     LAYERS_WHERE)))
    for f, to in graph.items():
        for g, uses in sorted(to.items()):
            a, b = layers.get(f, [0]), layers.get(g, [0])
            if len(a) == 1 and len(b) == 1 and f in layers and \
                    g in layers and b[0] <= a[0]:
                key = 'layer %s (%d) -> %s (%d)' % (f, a[0], g, b[0])
                out.append((key, None, '%s: %s:%s uses %s, not of a'
                            ' lower layer' % (key, f, uses[0][0],
                                              uses[0][1])))
    return out


def parse_known(lines):
    """{key: figure} of the known violations (blank and # lines skipped)."""
    known = {}
    for ln in lines:
        ln = ln.strip()
        if not ln or ln.startswith('#'):
            continue
        m = re.match(r'^(lines \S+|function \S+|files \S+|call \S+ \S+)'
                     r' (\d+)', ln)
        if m:
            known[m.group(1)] = int(m.group(2))
            continue
        m = re.match(r'^(include \S+ \S+)', ln)
        if m:
            known[m.group(1)] = 1
            continue
        raise SystemExit('check_layout: cannot read the known violation'
                         ' %r' % ln)
    return known


def check(root, known_lines):
    """The lines to print and whether the tree holds."""
    known = parse_known(known_lines)
    found = (check_sizes(root) + check_includes(root) + check_calls(root) +
             check_folders(root) + check_cycles(root) + check_layers(root) +
             check_alloc(root) + check_clock(root) + check_rules(root) +
             check_map(root))
    lines, ok, seen = [], True, set()
    for key, figure, line in found:
        seen.add(key)
        if figure is not None and key in known and figure <= known[key]:
            if figure < known[key]:
                lines.append('known (lower its figure to %d): %s' %
                             (figure, line))
            continue
        if key in known:
            line += ' (known at %d: it grew)' % known[key]
        lines.append(line)
        ok = False
    for key in sorted(set(known) - seen):
        lines.append('fixed (remove it from KNOWN in tools/check_layout.py):'
                     ' %s %d' % (key, known[key]))
        ok = False
    return lines, ok


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default=os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument('--known')
    ap.add_argument('--graph', action='store_true')
    args = ap.parse_args(argv)
    if args.graph:
        for f, to in sched_graph(args.root).items():
            print('%s -> %s' % (f, ' '.join(sorted(to)) or '(nothing)'))
        return 0
    if args.known is not None:
        with open(args.known, encoding='utf-8') as f:
            known_lines = f.read().splitlines()
    else:
        known_lines = KNOWN
    lines, ok = check(args.root, known_lines)
    for ln in lines:
        print(ln)
    if not ok:
        print('check_layout: the tree breaks the rules above'
              ' (docs/architecture.md)', file=sys.stderr)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
