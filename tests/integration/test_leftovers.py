#!/usr/bin/env python3
"""The suite leaves nothing running (issue 24, item 8).

Declared last and alone (tests/integration/meson.build: priority -1000,
is_parallel false: meson starts it once every other test has ended), it
fails when a process of this build's suite is still running: a backfilld
of this build (its program's path in the command line), or a PostgreSQL
or ClickHouse server in a folder the harness made for this build
(harness.suite_mkdtemp: bfd-KIND-TAG-..., TAG naming the backfilld under
test).  Another build's suite, running beside this one, is not counted.
Before failing it stops what it found, so that the next run starts clean.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

import harness as h

GRACE = 10.0   # a server stopped by the last test's teardown may take a moment


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return None


def leftovers():
    """(pid, kind, command line) of this suite's processes still running."""
    backfilld = os.path.realpath(h.binaries()[0])
    folder = "/bfd-"
    tag = "-%s-" % h.suite_tag()
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        argv = cmdline(int(name))
        if not argv:
            continue
        text = " ".join(argv)
        prog = os.path.basename(argv[0])
        if backfilld in text and ("backfilld" in prog or "valgrind" in prog):
            found.append((int(name), "backfilld", text))
        elif (prog.startswith("postgres") or prog.startswith("clickhouse")) and \
                any(folder in a and tag in a for a in argv):
            found.append((int(name), prog, text))
    return found


def naming(folder):
    """(pid, kind, command line) of the processes naming folder."""
    found = []
    for name in os.listdir("/proc"):
        argv = cmdline(int(name)) if name.isdigit() and int(name) != os.getpid() else None
        if argv and any(folder in a for a in argv):
            found.append((int(name), os.path.basename(argv[0]), " ".join(argv)))
    return found


def stop(found):
    for pid, kind, _ in found:
        try:
            os.kill(pid, signal.SIGQUIT if kind.startswith("postgres") else signal.SIGKILL)
        except OSError:
            pass


def test_nothing_left_running():
    """No backfilld, PostgreSQL or ClickHouse server of this suite runs."""
    deadline = time.monotonic() + GRACE
    found = leftovers()
    while found and time.monotonic() < deadline:
        time.sleep(0.1)
        found = leftovers()
    if found:
        stop(found)
        h.fail("%d processes of the suite still running %.0f s after its last test"
               " (now stopped):\n  %s" % (len(found), GRACE, "\n  ".join(
                   "%d %s: %s" % f for f in found)))


def test_finds_a_leftover():
    """The check sees what it looks for: a PostgreSQL server left in a folder
    of the suite is found (a sleep named postgres stands for it)."""
    folder = h.suite_mkdtemp("pg")
    try:
        prog = os.path.join(folder, "postgres")
        os.symlink("/bin/sleep", prog)
        p = subprocess.Popen([prog, "300"], start_new_session=True)
        try:
            deadline = time.monotonic() + GRACE
            while not cmdline(p.pid) and time.monotonic() < deadline:
                time.sleep(0.01)   # Popen may return before the exec shows
            got = [f for f in leftovers() if f[0] == p.pid]
            h.eq(len(got), 1, "the stand-in server found")
            h.eq(got[0][1], "postgres", "its kind")
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# A test process that starts a PostgreSQL server and a daemon, says where,
# and waits to be killed.
CHILD = """
import sys, time
sys.path.insert(0, %r)
import harness as h
import test_postgres as tp
c = tp.cluster()
d = h.Daemon(jobs='- name: a\\n  partition: day\\n  command: [\\"true\\"]\\n', name="lo")
print(c.dir, d.dir, d.proc.pid, flush=True)
time.sleep(300)
""" % h.HERE


def killed_child(how):
    """Start CHILD in a process group of its own and kill the group as meson
    does a timed-out test (SIGTERM, SIGKILL half a second later) or
    outright (SIGKILL); return what is left of it after GRACE."""
    p = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        line = p.stdout.readline().split()
        if len(line) != 3:
            p.wait(120)
            if p.returncode == h.SKIP:
                print("SKIP: no PostgreSQL server to start (the child test skipped)")
                return None
            h.fail("the child test printed %r (exit %s)" % (line, p.returncode))
        pgdir, ddir = line[0], line[1]
        if how == "sigterm":
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(0.5)
            except subprocess.TimeoutExpired:
                pass
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(10)
        deadline = time.monotonic() + GRACE
        while True:
            left = naming(pgdir + "/") + naming(ddir + "/")
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        stop(left)
        return left, pgdir, ddir
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        p.stdout.close()


def test_timed_out_test_leaves_nothing():
    """A test killed as meson kills one that timed out (SIGTERM to its
    group, SIGKILL half a second later) leaves no server and no daemon."""
    got = killed_child("sigterm")
    if got is None:
        return
    left, pgdir, ddir = got
    h.eq(left, [], "processes left by a timed-out test")
    for d in (pgdir, ddir):
        shutil.rmtree(d, ignore_errors=True)


def test_killed_test_leaves_nothing():
    """A test killed outright (SIGKILL to its group) leaves no server: the
    watchdog stops it."""
    got = killed_child("sigkill")
    if got is None:
        return
    left, pgdir, ddir = got
    h.eq(left, [], "processes left by a killed test")
    for d in (pgdir, ddir):
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    h.main([test_finds_a_leftover, test_timed_out_test_leaves_nothing,
            test_killed_test_leaves_nothing, test_nothing_left_running])
