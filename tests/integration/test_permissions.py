#!/usr/bin/env python3
"""A control-socket client without permission is refused (issue 5,
Permissions).

The tests run as root and run backfillctl as the unprivileged user nobody
(uid/gid 65534) through setpriv(1) (util-linux), or runuser(1) when setpriv
is missing; they skip (77) when not root.

- The socket is 0660 root:root in a folder nobody may traverse: nobody
  cannot even connect.  backfillctl says "permission denied", names the
  socket, gives a hint, and exits 3.
- The test makes the socket world-writable (chmod 0666): nobody connects,
  and reading commands (status, runs, verify: it rolls back) work, but mutating ones (pause,
  backfill, reload, ...) are refused by the daemon's SO_PEERCRED check
  with exit 2 and one "permission denied" line, and change nothing.
- socket_group: the socket belongs to that group and its members (here
  nobody's primary group, nogroup) may run mutating commands.
"""
import grp
import os
import pwd
import shutil
import subprocess

import harness as h

NOBODY = 65534

JOBS = """
- name: export
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  command: ["/bin/true"]
- name: load
  warehouse: w
  partition: day
  table: out
  partition_column: dt
  sql: |
    DELETE FROM out WHERE dt = :partition;
    INSERT INTO out VALUES (:partition, 1);
"""


def as_nobody_argv():
    if shutil.which("setpriv"):
        return ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]
    if shutil.which("runuser"):
        return ["runuser", "-u", pwd.getpwuid(NOBODY).pw_name, "--"]
    return None


def preflight():
    if os.geteuid() != 0:
        print("SKIP: needs root (to run backfillctl as another user)")
        raise SystemExit(h.SKIP)
    if as_nobody_argv() is None:
        print("SKIP: neither setpriv nor runuser is installed")
        raise SystemExit(h.SKIP)
    try:
        pwd.getpwuid(NOBODY)
    except KeyError:
        print("SKIP: no user with uid %d" % NOBODY)
        raise SystemExit(h.SKIP)
    # nobody must be able to execute backfillctl where it was built.
    _, ctl = h.binaries()
    r = subprocess.run(as_nobody_argv() + [ctl, "--version"], capture_output=True, text=True)
    if r.returncode != 0:
        print("SKIP: nobody cannot run %s (%s)" % (ctl, r.stderr.strip()))
        raise SystemExit(h.SKIP)


def daemon(name, settings=None):
    s = {"max_concurrency": 2}
    s.update(settings or {})
    d = h.Daemon(jobs=JOBS, settings=s, name=name,
                 warehouses={"w": "CREATE TABLE out (dt TEXT, v INTEGER);"})
    # mkdtemp makes the folder 0700: let nobody traverse it, so that the
    # socket's own mode is what decides.
    os.chmod(d.dir, 0o755)
    return d


def ctl_nobody(d, *args):
    """backfillctl --socket SOCK ARGS as nobody; (rc, stdout, stderr)."""
    argv = as_nobody_argv() + [d.backfillctl, "--socket", d.sock] + [str(a) for a in args]
    env = d.env()
    env["HOME"] = "/"
    try:
        with d.draining():
            p = subprocess.run(argv, capture_output=True, text=True, timeout=h.CTL_TIMEOUT,
                               stdin=subprocess.DEVNULL, env=env, cwd="/")
    except subprocess.TimeoutExpired:
        h.fail("backfillctl %s as nobody did not return\n%s" % (" ".join(args), d.log_tail()))
    return p.returncode, p.stdout, p.stderr


def test_cannot_open_socket():
    d = daemon("perm-open")
    st = os.stat(d.sock)
    h.eq(oct(st.st_mode & 0o777), oct(0o660), "mode of the control socket")
    h.eq((st.st_uid, st.st_gid), (0, 0), "owner of the control socket (the daemon runs as root)")
    for args in (("status",), ("pause", "export"), ("runs", "--json")):
        rc, out, err = ctl_nobody(d, *args)
        e = h.one_line_error(rc, out, err, 3, "backfillctl %s as nobody on a 0660 root socket"
                             % " ".join(args))
        h.check("permission denied" in e.lower(),
                "the error does not say 'permission denied': %r" % e)
        h.check(d.sock in e, "the error does not name the socket %s: %r" % (d.sock, e))
        h.check("group" in e or "sudo" in e,
                "the error gives no hint (join the socket's group, or sudo): %r" % e)
    # root still can
    h.eq(d.status()["export"]["paused"], False, "export paused after the refused pause")
    d.assert_alive("after the refused clients")
    d.stop()


def test_world_writable_socket_mutations_refused():
    d = daemon("perm-mut")
    os.chmod(d.sock, 0o666)   # the test opens the door; the daemon must still check

    rc, out, err = ctl_nobody(d, "status")
    h.eq(rc, 0, "backfillctl status as nobody on a 0666 socket (stderr %r)" % err)
    h.check("export" in out, "status as nobody does not list the job: %r" % out)
    rc, out, err = ctl_nobody(d, "runs", "--json")
    h.eq(rc, 0, "backfillctl runs --json as nobody (stderr %r)" % err)

    before = d.state_dump()
    refused = [
        ("pause", "export"),
        ("resume", "export"),
        ("backfill", "export", "--from", "2026-02-01", "--to", "2026-02-03"),
        ("rerun", "export", "2026-02-01"),
        ("cancel", "1"),
        ("reload",),
        ("mark", "export", "2026-02-01", "--succeeded", "--reason", "by hand"),
    ]
    for args in refused:
        rc, out, err = ctl_nobody(d, *args)
        what = "backfillctl %s as nobody (not root, not the daemon's user or group)" % " ".join(args)
        e = h.one_line_error(rc, out, err, 2, what)
        h.check("permission denied" in e.lower(), "%s: no 'permission denied' in %r" % (what, e))
        h.check(args[0] in e, "%s: the error does not name the command: %r" % (what, e))
    # a dry run changes nothing, so it needs no right to change anything
    rc, out, err = ctl_nobody(d, "backfill", "export", "--from", "2026-02-01",
                              "--to", "2026-02-03", "--dry-run")
    h.eq(rc, 0, "backfill --dry-run as nobody (stderr %r)" % err)
    h.check("2026-02-03" in out, "backfill --dry-run as nobody printed no plan: %r" % out)
    rc, out, err = ctl_nobody(d, "reload", "--dry-run")
    h.eq(rc, 0, "reload --dry-run as nobody (stderr %r)" % err)
    # so does the idempotency proof: it rolls everything back
    wh0 = d.wh_dump("w")
    rc, out, err = ctl_nobody(d, "verify", "load", "2026-02-01", "--json")
    h.eq(rc, 0, "verify as nobody (stderr %r)" % err)
    h.check('"idempotent": true' in out, "verify as nobody gave its verdict: %r" % out)
    h.eq(d.wh_dump("w"), wh0, "the warehouse after verify as nobody")
    d.assert_alive("after the refused commands")
    st = d.status()["export"]
    h.eq((st["paused"], st["queued"], st["running"], st["succeeded"]), (False, 0, 0, 0),
         "export after the refused commands")
    h.eq(d.state_dump(), before, "state store after the refused commands (nothing changed)")
    h.check(not any(n.startswith("RELOADING=1") for n in d.notifications),
            "a refused reload reloaded: %r" % d.notifications)

    # root may
    d.ok("pause", "export")
    h.eq(d.status()["export"]["paused"], True, "export paused by root")
    d.ok("resume", "export")
    d.stop()


def test_socket_group_may_change():
    try:
        gname = grp.getgrgid(NOBODY).gr_name
    except KeyError:
        print("  (no group %d: skipped)" % NOBODY)
        return
    d = daemon("perm-group", {"socket_group": gname})
    st = os.stat(d.sock)
    h.eq(oct(st.st_mode & 0o777), oct(0o660), "mode of the control socket")
    h.eq(st.st_gid, NOBODY, "group of the control socket with socket_group: %s" % gname)
    rc, out, err = ctl_nobody(d, "pause", "export")
    h.eq(rc, 0, "backfillctl pause as a member of socket_group (stderr %r)" % err)
    h.eq(d.status()["export"]["paused"], True, "export paused by a member of socket_group")
    rc, out, err = ctl_nobody(d, "resume", "export")
    h.eq(rc, 0, "backfillctl resume as a member of socket_group (stderr %r)" % err)
    h.eq(d.status()["export"]["paused"], False, "export resumed")
    d.stop()


if __name__ == "__main__":
    h.binaries()
    preflight()
    h.main([test_cannot_open_socket, test_world_writable_socket_mutations_refused,
            test_socket_group_may_change])
