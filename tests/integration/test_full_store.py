#!/usr/bin/env python3
"""test_full_store.py - a full disk stops the work, never the daemon.

The state store lives on a small tmpfs that the test fills.  A backfill
then fails to commit: the daemon stays up (same process), stops starting
runs, answers `status` naming the store that cannot be written (text and
--json), refuses what would change state (exit 1, one line), and says so
in systemd's STATUS=.  Once space is freed it restarts in place (the same
pid sends READY=1 again) and finishes the request from what the store
holds: every partition written exactly once in the warehouse, every one
succeeded.

Needs root to mount a tmpfs: skipped (exit 77) otherwise.  The retry
interval is shortened for the test with BACKFILLD_TEST_STORE_RETRY_MS.
"""

import os
import subprocess
import time

import harness as h

GUARD = 60.0
HOURS = 24 * 60
REFUSED = "nothing was recorded and none of it will be done"


def mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", path],
                       capture_output=True, text=True)
    return p.returncode == 0, p.stderr.strip()


def fill(path):
    """Fill the filesystem at path (ENOSPC), leaving nothing free."""
    # unbuffered: a write the disk refused leaves nothing for close() to
    # flush (and fail on) again
    with open(os.path.join(path, "filler"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass


def test_first_refusal_says_the_same():
    """The command whose own commit fails first and the commands after it
    are refused with the same words (docs/guarantees.md), and they are
    true: after the restart in place no request of them exists."""
    h.sqlite_state_only("the state store's filesystem fills up")
    config = ("state_db: {dir}/st/state.db\nsocket: backfilld.sock\n"
              "max_backfill: 100000\n"
              "warehouses:\n  - {name: wh, sqlite: wh.db}\n"
              "jobs:\n  - name: h\n    warehouse: wh\n    partition: hour\n"
              "    sql: INSERT OR REPLACE INTO t (k) VALUES (:partition)\n")
    d = h.Daemon(config=config, warehouses={"wh": "CREATE TABLE t (k TEXT PRIMARY KEY);"},
                 name="full-first", env={"BACKFILLD_TEST_STORE_RETRY_MS": "300"}, start=False)
    st_dir = os.path.join(d.dir, "st")
    ok, why = mount_tmpfs(st_dir, "40M")
    if not ok:
        print("SKIP: cannot mount a tmpfs for the full-store test (%s); run as root" % why)
        raise SystemExit(h.SKIP)
    d.state_db = os.path.join(st_dir, "state.db")
    try:
        d.start()
        d.ok("pause", "h")            # nothing of the request may run
        fill(st_dir)
        # the first: its own commit (thousands of rows) fails
        rc, out, err = d.ctl("backfill", "h", "--from", "2026-01-01", "--to", "2026-06-01")
        first = h.one_line_error(rc, out, err, 1, "the command whose commit failed")
        h.check("state store cannot be written" in first and REFUSED in first, first)
        h.eq(d.json("status")["store"]["state"], "failed", "the store after the first")
        rc, out, err = d.ctl("rerun", "h", "2026-01-01T00")
        then = h.one_line_error(rc, out, err, 1, "a command after it")
        h.eq(then.split(": ", 2)[-1], first.split(": ", 2)[-1],
             "the two refusals' words after the store's error")
        os.unlink(os.path.join(st_dir, "filler"))
        d.wait_notification("READY=1", GUARD, what="READY=1 after the restart in place")
        h.eq(d.state_rows("SELECT count(*) FROM requests WHERE kind = 'backfill'"), [(0,)],
             "backfill requests after the restart: the refused one was not recorded")
        h.eq(d.json("status")["jobs"][0]["queued"], 0, "queued partitions after the restart")
        d.stop()
    finally:
        if d.alive():
            d.stop()
        subprocess.run(["umount", "-l", st_dir])


def test_full_store_keeps_the_daemon_up():
    h.sqlite_state_only("the state store's filesystem fills up")
    config = ("state_db: {dir}/st/state.db\nsocket: backfilld.sock\n"
              "max_backfill: 100000\n"
              "warehouses:\n  - {name: wh, sqlite: wh.db}\n"
              "jobs:\n  - name: h\n    warehouse: wh\n    partition: hour\n"
              "    concurrency: 2\n"
              "    sql: INSERT OR REPLACE INTO t (k, pad) VALUES (:partition, zeroblob(100))\n")
    d = h.Daemon(config=config, warehouses={"wh": "CREATE TABLE t (k TEXT PRIMARY KEY, pad BLOB);"},
                 name="full", env={"BACKFILLD_TEST_STORE_RETRY_MS": "300"}, start=False)
    st_dir = os.path.join(d.dir, "st")
    ok, why = mount_tmpfs(st_dir, "40M")
    if not ok:
        print("SKIP: cannot mount a tmpfs for the full-store test (%s); run as root" % why)
        raise SystemExit(h.SKIP)
    d.state_db = os.path.join(st_dir, "state.db")
    try:
        d.start()
        pid = d.proc.pid
        req = d.enqueue("backfill", "h", "--from", "2026-01-01", "--to", "2026-03-01")
        fill(st_dir)   # while its runs go on
        # wait for the failure to show in status
        deadline = time.monotonic() + GUARD
        while True:
            st = d.json("status")
            if st["store"]["state"] == "failed":
                break
            h.check(time.monotonic() < deadline, "the store never failed: %r" % st["store"])
            time.sleep(0.05)
        h.check(d.alive() and d.proc.pid == pid, "the daemon stayed up")
        h.eq(st["store"]["path"], os.path.join(d.dir, "st", "state.db"), "store path in status")
        h.check(st["store"]["error"] and st["store"]["since"], "error and since: %r" % st["store"])
        text = d.ok("status")
        h.check("state store %s cannot be written" % st["store"]["path"] in text,
                "the text status names the store: %r" % text)
        rc, out, err = d.ctl("rerun", "h", "2026-01-01T00")
        e = h.one_line_error(rc, out, err, 1, "a mutating command while the store is full")
        h.check("state store cannot be written" in e and REFUSED in e, e)
        h.check(any("state store cannot be written" in n for n in d.notifications),
                "STATUS= says the store cannot be written: %r" % d.notifications[-3:])
        # free the space: the daemon restarts in place and finishes the work
        os.unlink(os.path.join(st_dir, "filler"))
        d.wait_notification("READY=1", GUARD, what="READY=1 after the restart in place")
        h.check(d.alive() and d.proc.pid == pid, "restarted in place, same pid")
        st = d.json("status")
        h.eq(st["store"]["state"], "ok", "the store after the restart")
        resp = d.wait_request(req, timeout=120)
        h.eq(resp.get("succeeded"), str(HOURS), "every partition succeeded: %r" % resp)
        rows = d.query("SELECT COUNT(*), COUNT(DISTINCT k) FROM t", wh="wh")
        h.eq(rows, [(HOURS, HOURS)], "warehouse rows: each partition once")
        d.stop()
    finally:
        if d.alive():
            d.stop()
        subprocess.run(["umount", "-l", st_dir])


if __name__ == "__main__":
    h.main([test_first_refusal_says_the_same, test_full_store_keeps_the_daemon_up])
