"""harness.py - start the real backfilld on a temporary folder and drive it.

Python 3 standard library only.  Each test file builds one or more Daemon
objects, drives them with backfillctl (Daemon.ctl) and asserts on the
warehouses, the state store and the --json outputs (backfillctl(1), JSON
OUTPUT).

Readiness is event-driven: the harness binds a unix datagram socket, sets
NOTIFY_SOCKET to it, and waits for the daemon's sd_notify "READY=1" (or
for the daemon to exit, through a pidfd).  A reader thread drains that
socket for the whole life of each daemon process (start() to stop()), as
systemd does its own: the kernel queues only a few datagrams
(net.unix.max_dgram_qlen) and a test that did not read could otherwise
slow the daemon's sends (daemon/server/notify.c bounds them).  The
timeouts below are failure guards only, never the way a test waits for
something to happen.

Exit codes (meson): 0 pass, 1 fail, 77 skip (no binaries to test).

Environment: BACKFILLD and BACKFILLCTL (set by meson), SOURCE_ROOT (the
source tree, for config/ and config/demo/).  KEEP_TMP=1 keeps the temporary
folders of passing tests too (failing ones are always kept).

The state store (BACKFILLD_TEST_STATE; `meson test --setup statepg`
sets it): "sqlite", the default, puts state_db in the daemon's folder;
"postgres" replaces the config's state_db line with a `state: {postgres:
...}` block on a database of its own in a throwaway cluster the harness
starts (test_postgres.Cluster), and skips (exit 77) while this backfilld
does not know that key yet.  Tests read the store through
Daemon.state_rows(); a test that needs SQLite's file itself (its path,
its WAL, a tmpfs under it) calls sqlite_state_only(), and reading
Daemon.state_db does so too.
"""

import contextlib
import datetime
import json
import os
import re
import select
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback

SKIP = 77
READY_TIMEOUT = 20.0   # guard: the daemon must send READY=1 within this
STOP_TIMEOUT = 60.0    # guard: SIGTERM must end the daemon within this
CTL_TIMEOUT = 60.0     # guard: any backfillctl call, --wait included

# The line write_config adds (Daemon.write_config says when and why).
BUILD_FUTURE_LINE = "build_future: true  # the test harness's\n"

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
TOOLS = os.path.join(SOURCE_ROOT, "tools")
SALES_SQL = os.path.join(SOURCE_ROOT, "config", "demo", "sales.sql")
EXAMPLE_YAML = os.path.join(SOURCE_ROOT, "config", "example.yaml")

# The test clock (BACKFILLD_TEST_CLOCK_FILE): a fixed instant before the
# jobs' `start`, so their schedule has nothing due.  The daemon takes every
# time from it, run times included, and it stands still: tests that measure
# elapsed times (runs' started_at/finished_at, retry backoff, staleness by
# landing time) pass clock=None and give their jobs an `end` in the past
# and `catchup: false`.  Whatever the schedule enqueues at the first start
# all the same (with the real clock, a job without `end`), start() waits for
# and runs() leaves out (boot_requests): tests see only what they asked for.
DEFAULT_CLOCK = "2026-01-01T00:00:00Z"

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


STATE = os.environ.get("BACKFILLD_TEST_STATE", "sqlite")


class TestFailure(AssertionError):
    pass


def fail(msg):
    raise TestFailure(msg)


def check(cond, msg):
    if not cond:
        fail(msg)


def eq(got, expected, what):
    if got == expected:
        return
    if isinstance(got, dict) and isinstance(expected, dict):
        lines = []
        for k in sorted(set(got) | set(expected), key=repr):
            if got.get(k) != expected.get(k):
                lines.append("  [%r]: %s" % (k, _brief_diff(got.get(k), expected.get(k))))
        fail("%s differs:\n%s" % (what, "\n".join(lines)))
    if isinstance(got, str) and isinstance(expected, str) and len(expected) > 2000:
        got, expected = got.split("\n"), expected.split("\n")
    if isinstance(got, list) and isinstance(expected, list) and len(repr(expected)) > 2000:
        fail("%s: %s" % (what, _brief_diff(got, expected)))
    fail("%s:\n  expected %r\n  got      %r" % (what, expected, got))


def _brief_diff(got, expected):
    if isinstance(got, list) and isinstance(expected, list):
        gone = [x for x in expected if x not in got]
        new = [x for x in got if x not in expected]
        return ("%d rows expected, %d got; missing %r; unexpected %r"
                % (len(expected), len(got), gone[:10], new[:10]))
    return "expected %r, got %r" % (expected, got)


_SOFT = []


def soft(cond, msg):
    """A check that lets the test go on to find more; it still fails it."""
    if not cond:
        print("  SOFT FAIL: %s" % msg)
        _SOFT.append(msg)
    return cond


def binaries():
    """The two programs under test, or exit 77 when none were given."""
    d = os.environ.get("BACKFILLD")
    c = os.environ.get("BACKFILLCTL")
    if not d or not c:
        for b in ("build", "build-it"):
            cd = os.path.join(SOURCE_ROOT, b, "daemon")
            if os.path.exists(os.path.join(cd, "backfilld")):
                d = d or os.path.join(cd, "backfilld")
                c = c or os.path.join(cd, "backfillctl")
                break
    if not d or not c:
        print("SKIP: set BACKFILLD and BACKFILLCTL (meson test does)")
        sys.exit(SKIP)
    for p in (d, c):
        if not os.access(p, os.X_OK):
            print("FAIL: %s is not an executable" % p)
            sys.exit(1)
    return d, c


def parse_iso(s):
    """ISO-8601 UTC with milliseconds -> aware datetime (asserting the shape)."""
    check(isinstance(s, str) and ISO_MS.match(s),
          "timestamp %r is not YYYY-MM-DDTHH:MM:SS.sssZ" % (s,))
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc)


def days(first, last):
    """Inclusive list of YYYY-MM-DD dates."""
    d0 = datetime.date.fromisoformat(first)
    d1 = datetime.date.fromisoformat(last)
    return [(d0 + datetime.timedelta(n)).isoformat() for n in range((d1 - d0).days + 1)]


def week_of(d):
    """ISO week key (its Monday) of a YYYY-MM-DD date."""
    x = datetime.date.fromisoformat(d)
    return (x - datetime.timedelta(x.weekday())).isoformat()


def month_of(d):
    return d[:8] + "01"


# ---------------------------------------------------------------- protocol

PROTO_MAGIC = 0x42464C44
PROTO_VERSION = 2
PROTO_REQUEST, PROTO_RESPONSE, PROTO_PROGRESS, PROTO_DATA = 1, 2, 3, 4


def frame(fields, type_=PROTO_REQUEST, version=PROTO_VERSION, magic=PROTO_MAGIC,
          length=None):
    """A protocol frame (docs/protocol.md); length overrides the header's."""
    if isinstance(fields, bytes):
        body = fields
    else:
        body = b"".join(b"%s=%s\0" % (k.encode(), str(v).encode())
                        for k, v in fields.items())
    n = len(body) if length is None else length
    return struct.pack(">IHHI", magic, version, type_, n) + body


def parse_body(body):
    out = {}
    for part in body.split(b"\0")[:-1]:
        k, _, v = part.partition(b"=")
        out[k.decode()] = v.decode("utf-8", "replace")
    return out


def read_frame(sock, raw=False):
    """One frame from sock: (type, fields), or None at EOF; with raw, the
    body's bytes instead of its fields."""
    hdr = _read_exact(sock, 12)
    if hdr is None:
        return None
    magic, version, type_, n = struct.unpack(">IHHI", hdr)
    check(magic == PROTO_MAGIC, "daemon sent a frame with magic %#x" % magic)
    check(n <= 4 * 1024 * 1024, "daemon announced a body of %d bytes" % n)
    body = _read_exact(sock, n) if n else b""
    check(body is not None, "daemon closed the connection inside a frame")
    return type_, (body if raw else parse_body(body))


def data_out(body):
    """The raw bytes of a DATA frame's out field."""
    check(body.startswith(b"out=") and body.endswith(b"\0"),
          "DATA frame is not one out field: %r" % body[:60])
    return body[4:-1]


def _read_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            if buf:
                fail("connection closed after %d of %d bytes" % (len(buf), n))
            return None
        buf += chunk
    return buf


# ---------------------------------------------------------------- what a test leaves

# Every server or daemon a test starts is stopped whatever the test's
# outcome.  A daemon is this process's child, in its process group: closed
# after each test (main), at exit (atexit), and killed with the group when
# meson times the test out.  A server that leaves the group (pg_ctl starts
# PostgreSQL in a session of its own) registers here (register_server): it
# is closed at exit, killed at once on SIGTERM, SIGINT or SIGHUP (meson
# gives a timed-out test half a second after SIGTERM before SIGKILL), and
# should also have a watchdog (watchdog(), for SIGKILL).  Its folder is
# made by suite_mkdtemp, so that test_leftovers.py, run last, can tell the
# servers of this build's suite from anyone else's.

_SERVERS = []


def free_port():
    """A TCP port on 127.0.0.1 nothing listens on now, below the kernel's
    range of ephemeral ports (tools/chserver.py's free_port)."""
    if TOOLS not in sys.path:
        sys.path.insert(0, TOOLS)
    import chserver
    return chserver.free_port()


def suite_tag():
    """Eight hex digits naming this build (the backfilld under test): in
    the folders of the servers the suite starts."""
    import hashlib
    d = os.environ.get("BACKFILLD") or binaries()[0]
    return hashlib.sha1(os.path.realpath(d).encode()).hexdigest()[:8]


def suite_mkdtemp(kind):
    """A temporary folder bfd-KIND-TAG-XXXXXXXX for a server of the suite."""
    return tempfile.mkdtemp(prefix="bfd-%s-%s-" % (kind, suite_tag()))


def register_server(server):
    """server.close() at exit, server.kill() (fast, no waiting) on a
    signal; both must be safe to call twice."""
    _SERVERS.append(server)


_WATCHDOG = """
import os, signal, sys
sys.stdin.buffer.read()  # EOF: the test process is gone, however it ended
try:
    with open(sys.argv[1]) as f:
        os.kill(int(f.readline()), signal.SIGQUIT)
except (OSError, ValueError):
    pass
"""


def watchdog(pidfile):
    """A process outside this one's group that, when this process ends
    however it ends (SIGKILL too: the pipe it reads closes), sends SIGQUIT
    to the pid on the first line of pidfile (a PostgreSQL postmaster.pid:
    an immediate shutdown).  Close its stdin after a clean stop."""
    return subprocess.Popen([sys.executable, "-c", _WATCHDOG, pidfile],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, cwd="/")


def _close_everything():
    """At exit: the daemons still open, then the servers."""
    for d in list(_ALL):
        try:
            d.close()
        except Exception:
            traceback.print_exc()
    del _ALL[:]
    for srv in reversed(_SERVERS):
        try:
            srv.close()
        except Exception:
            traceback.print_exc()
    del _SERVERS[:]


def _on_signal(sig, frame):
    """SIGTERM (a meson timeout), SIGINT, SIGHUP: kill what this test
    started, at once, then die of the signal."""
    for d in list(_ALL):
        if d.proc is not None and d.proc.poll() is None:
            try:
                d.proc.kill()
            except OSError:
                pass
        kill_naming(d.dir)
    for srv in reversed(_SERVERS):
        try:
            srv.kill()
        except Exception:
            pass
    print("killed by signal %d: stopped %d daemons and %d servers; folders kept"
          % (sig, len(_ALL), len(_SERVERS)), flush=True)
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)


def _install_cleanup():
    import atexit
    atexit.register(_close_everything)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)


# ---------------------------------------------------------------- the daemon

def kill_naming(folder):
    """SIGKILL every process (but this one) whose command line names a
    path inside folder."""
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        if folder + "/" in cmd:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


class Daemon:
    """A backfilld on a temporary folder.

    jobs        YAML text of the `jobs:` list items (dedented here)
    warehouses  {name: seed SQL text or None}: SQLite files NAME.db in the
                folder, seeded with the SQL (run through python's sqlite3)
    settings    top-level keys (max_concurrency, max_backfill, ...)
    config      a whole config text instead (jobs/warehouses/settings unused);
                `{dir}` in it is replaced by the temporary folder
    clock       the test clock instant, or None for the real clock
    state       the state store object (configure/rows/tables) instead of
                the one BACKFILLD_TEST_STATE names: several daemons on one
                store (test_cluster.py)
    """

    def __init__(self, jobs=None, warehouses=None, settings=None, config=None,
                 clock=DEFAULT_CLOCK, name="it", env=None, start=True, state=None):
        self.backfilld, self.backfillctl = binaries()
        self.dir = tempfile.mkdtemp(prefix="bfd-%s-" % name)
        self.conf = os.path.join(self.dir, "backfilld.yaml")
        self.sock = os.path.join(self.dir, "backfilld.sock")
        self._state_db = os.path.join(self.dir, "state.db")
        self.state = state if state is not None else state_store(self)
        self.log = os.path.join(self.dir, "backfilld.log")
        self.proc = None
        self.starts = 0
        self.boot_requests = set()
        # every notify datagram received, in order (the reader appends
        # under _notify_cv); _notify_seen: the first not yet consumed by
        # wait_notification or drain_notifications
        self.notifications = []
        self._notify_cv = threading.Condition()
        self._notify_seen = 0
        self._notify_reader = None
        self.extra_env = dict(env or {})
        self.clock_file = None
        if clock is not None:
            self.clock_file = os.path.join(self.dir, "clock")
            self.set_clock(clock)
        self.warehouses = {}
        for wname, seed in (warehouses or {}).items():
            path = os.path.join(self.dir, wname + ".db")
            self.warehouses[wname] = path
            con = sqlite3.connect(path)
            if seed:
                con.executescript(seed)
            con.commit()
            con.close()
        if config is None:
            config = self.render(jobs or "", settings or {})
        self.write_config(config.replace("{dir}", self.dir))
        self.notify_path = os.path.join(self.dir, "notify.sock")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        self.notify.setblocking(False)   # read by the reader thread only
        _ALL.append(self)
        if start:
            self.start()

    # -- configuration

    def render(self, jobs, settings):
        lines = ["state_db: state.db", "socket: backfilld.sock"]
        for k, v in settings.items():
            lines.append("%s: %s" % (k, v))
        if self.warehouses:
            lines.append("warehouses:")
            for wname in self.warehouses:
                lines.append("  - name: %s" % wname)
                lines.append("    sqlite: %s.db" % wname)
        lines.append("jobs:")
        lines.append(textwrap.indent(textwrap.dedent(jobs).strip("\n"), "  "))
        # The suite's clock (DEFAULT_CLOCK, 2026-01-01) is before the
        # dates its tests backfill: partitions that have not closed yet,
        # which backfill and rerun refuse unless build_future allows it
        # (docs/configuration.md).  A daemon of the suite allows it unless
        # its settings say build_future (test_future.py: the refusal):
        # write_config adds it, last, so that no line of the rest moves.
        return "\n".join(lines) + "\n"

    @property
    def state_db(self):
        """The SQLite state store's path (skips the test on another store)."""
        sqlite_state_only("the test reads the SQLite state store's file")
        return self._state_db

    @state_db.setter
    def state_db(self, path):
        """Where the config puts the SQLite store (unused on another)."""
        self._state_db = path

    def write_config(self, text):
        # build_future (see render) for a configuration written whole too,
        # last so that no line moves; not where it says build_future
        # itself, nor where it includes files (test_include.py extends
        # the include list, last in its file, and builds no such date)
        # A text made from config_text with lines added after it (a job
        # more, for a reload) holds the line at its old place: it moves
        # back to the end.
        text = text.replace(BUILD_FUTURE_LINE, "")
        if not re.search(r"(?m)^(build_future|include):", text):
            text = text + ("\n" if text and not text.endswith("\n") else "") \
                + BUILD_FUTURE_LINE
        text = self.state.configure(text)
        tmp = self.conf + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, self.conf)
        self.config_text = text

    def set_clock(self, instant):
        tmp = self.clock_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(instant + "\n")
        os.rename(tmp, self.clock_file)

    # -- life cycle

    def env(self):
        e = dict(os.environ)
        e.pop("NOTIFY_SOCKET", None)
        e.pop("WATCHDOG_USEC", None)
        e.pop("WATCHDOG_PID", None)
        e.pop("JOURNAL_STREAM", None)
        e["NOTIFY_SOCKET"] = self.notify_path
        if self.clock_file:
            e["BACKFILLD_TEST_CLOCK_FILE"] = self.clock_file
        else:
            e.pop("BACKFILLD_TEST_CLOCK_FILE", None)
        e.update(self.extra_env)
        return e

    # Set on an instance (or given to start()) to run the daemon under a
    # wrapper (["valgrind", ...]) or with extra arguments (--log-level).
    wrapper = ()
    daemon_args = ()

    def start(self, wrapper=None, args=None, ready_timeout=READY_TIMEOUT):
        """Start the daemon and return once it sent READY=1."""
        check(self.proc is None, "daemon already running")
        if wrapper is not None:
            self.wrapper = tuple(wrapper)
        if args is not None:
            self.daemon_args = tuple(args)
        self._notify_stop()   # a daemon that exited by itself
        self.drain_notifications()
        self.starts += 1
        logf = open(self.log, "a")
        logf.write("---- start %d\n" % self.starts)
        logf.flush()
        self.proc = subprocess.Popen(
            list(self.wrapper) + [self.backfilld, "--config", self.conf]
            + list(self.daemon_args),
            stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
            env=self.env(), cwd=self.dir)
        logf.close()
        self._notify_start()
        self.wait_notification("READY=1", ready_timeout, what="READY=1 after start")
        if self.starts == 1:
            self.settle()

    def settle(self):
        """Wait for what the schedule enqueued at the first start; remember
        those requests so that runs() leaves them out."""
        # runs --json lists no queued partitions (yet?): ask the state store
        # which requests exist (sql/001_init.sql: requests.id).
        try:
            boot = {int(r[0]) for r in self.state_rows("SELECT id FROM requests")}
        except StateError:
            boot = set()
        boot |= {r["request"] for r in self.runs(include_boot=True)}
        for req in sorted(boot):
            self.wait_request(req)
        self.boot_requests |= boot

    # -- the notify socket

    def _notify_recv(self):
        """Append every datagram queued on the notify socket (under the
        lock, so that drain_notifications and the reader keep the order)."""
        with self._notify_cv:
            got = False
            while True:
                try:
                    msg = self.notify.recv(65536)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    break
                self.notifications.append(msg.decode("utf-8", "replace"))
                got = True
            if got:
                self._notify_cv.notify_all()

    def _notify_run(self, wake, pidfd):
        """The reader thread: receive until told to stop (a byte on wake);
        wake the waiters when the daemon exits (its pidfd)."""
        fds = [self.notify, wake] + ([pidfd] if pidfd is not None else [])
        while True:
            try:
                r, _, _ = select.select(fds, [], [])
            except (OSError, ValueError):
                return
            if pidfd is not None and pidfd in r:
                fds.remove(pidfd)
                with self._notify_cv:
                    self._notify_cv.notify_all()
            if self.notify in r or wake in r:
                self._notify_recv()
            if wake in r:
                return

    def _notify_start(self):
        """Start the reader for the daemon process just started."""
        pidfd = None
        if hasattr(os, "pidfd_open"):
            try:
                pidfd = os.pidfd_open(self.proc.pid)
            except OSError:
                pidfd = None
        wake_r, wake_w = os.pipe()
        t = threading.Thread(target=self._notify_run, args=(wake_r, pidfd), daemon=True)
        self._notify_reader = (t, wake_r, wake_w, pidfd)
        t.start()

    def _notify_stop(self):
        """Stop the reader, if it runs, once it received what was queued."""
        if self._notify_reader is None:
            return
        t, wake_r, wake_w, pidfd = self._notify_reader
        self._notify_reader = None
        os.write(wake_w, b"x")
        # a guard: the reader takes the lock, which a signal handler's
        # close() may interrupt its own thread holding
        t.join(10)
        if t.is_alive():
            return
        for fd in (wake_r, wake_w) + ((pidfd,) if pidfd is not None else ()):
            os.close(fd)

    def wait_notifications(self, pred, timeout, what, start=None):
        """Index in self.notifications of the first datagram from `start`
        (default: the first not consumed yet) for which pred(datagram)
        holds, waiting for the reader to receive more; fails when the
        daemon exits first or the guard runs out.  Consumes nothing."""
        check(self._notify_reader is not None,
              "waiting for %s while nothing reads the notify socket" % what)
        pidfd = self._notify_reader[3]
        deadline = time.monotonic() + timeout
        with self._notify_cv:
            i = self._notify_seen if start is None else start
            while True:
                while i < len(self.notifications):
                    if pred(self.notifications[i]):
                        return i
                    i += 1
                if self.proc.poll() is not None:
                    rc = self.proc.returncode
                    self.proc = None
                    fail("backfilld exited with status %s before %s\n%s"
                         % (rc, what, self.log_tail()))
                left = deadline - time.monotonic()
                if left <= 0:
                    fail("no %s from backfilld within %.0f s (guard)\n%s"
                         % (what, timeout, self.log_tail()))
                # The reader wakes us on a datagram and, through the pidfd,
                # on the daemon's exit; without a pidfd look now and then.
                self._notify_cv.wait(left if pidfd is not None else min(left, 0.5))

    def wait_notification(self, line, timeout, what=None):
        """Wait for a notify datagram holding `line` among those not
        consumed yet (or the daemon's exit); consume it and the ones
        before it, and return it."""
        i = self.wait_notifications(lambda m: line in m.split("\n"), timeout,
                                    what or line)
        with self._notify_cv:
            self._notify_seen = max(self._notify_seen, i + 1)
            return self.notifications[i]

    def drain_notifications(self):
        """Consume every datagram received so far: a wait_notification
        after this waits for a new one."""
        self._notify_recv()
        with self._notify_cv:
            self._notify_seen = len(self.notifications)

    def draining(self):
        """Context manager kept for the tests that wrap a wait in it: the
        reader thread drains the notify socket all the time now."""
        return contextlib.nullcontext(self)

    @contextlib.contextmanager
    def notify_unread(self):
        """Context manager: nobody reads the notify socket while the body
        runs (a service manager that stopped reading; test_notify.py).
        The reader goes on afterwards while the daemon runs."""
        self._notify_stop()
        try:
            yield self
        finally:
            if self.alive() and self._notify_reader is None:
                self._notify_start()
            else:
                self._notify_recv()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def assert_alive(self, what=""):
        if not self.alive():
            rc = self.proc.returncode if self.proc else None
            fail("backfilld is not running %s(exit status %s)\n%s"
                 % (what + " " if what else "", rc, self.log_tail()))

    def stop(self, expect_rc=0):
        """SIGTERM; wait for the exit; assert its status."""
        self.assert_alive("before SIGTERM")
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            self._notify_stop()
            fail("backfilld did not exit within %.0f s of SIGTERM\n%s"
                 % (STOP_TIMEOUT, self.log_tail()))
        self.proc = None
        self._notify_stop()
        if expect_rc is not None:
            eq(rc, expect_rc, "backfilld exit status after SIGTERM")
        self.check_sanitizers()
        return rc

    def check_sanitizers(self):
        """Fail on a sanitizer report in the daemon's log (an ASan/UBSan
        build keeps running after some of them)."""
        try:
            with open(self.log, errors="replace") as f:
                text = f.read()
        except OSError:
            return
        for mark in ("runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer"):
            if mark in text:
                i = text.index(mark)
                fail("sanitizer report in the daemon log:\n%s" % text[max(0, i - 200):i + 1500])

    def kill9(self):
        self.assert_alive("before kill -9")
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None
        self._notify_stop()

    def restart(self):
        if self.alive():
            self.stop()
        self.proc = None
        self.start()

    def signal(self, sig):
        self.assert_alive()
        self.proc.send_signal(sig)

    def close(self, keep=False):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self._notify_stop()
        self.kill_leftovers()
        try:
            self.notify.close()
        except OSError:
            pass
        if keep or os.environ.get("KEEP_TMP"):
            print("kept %s" % self.dir)
        else:
            subprocess.run(["rm", "-rf", self.dir])

    def kill_leftovers(self):
        """SIGKILL processes whose command line names this test's folder:
        job processes the daemon started for us and left behind (after a
        kill -9 or a failed test)."""
        kill_naming(self.dir)

    def log_tail(self, n=40):
        try:
            with open(self.log, errors="replace") as f:
                lines = f.readlines()
        except OSError:
            return "(no daemon log)"
        return "---- daemon log (%s), last %d lines:\n%s" % (
            self.log, n, "".join(lines[-n:]))

    # -- backfillctl

    def ctl(self, *args, timeout=CTL_TIMEOUT, socket_path=None, stdin=None):
        """Run backfillctl --socket SOCK ARGS...; returns (rc, stdout, stderr)."""
        argv = [self.backfillctl, "--socket", socket_path or self.sock] + [str(a) for a in args]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL if stdin is None else None,
                               input=stdin, env=self.env(), cwd=self.dir)
        except subprocess.TimeoutExpired:
            fail("backfillctl %s did not return within %.0f s\n%s"
                 % (" ".join(map(str, args)), timeout, self.log_tail()))
        return p.returncode, p.stdout, p.stderr

    def ok(self, *args, **kw):
        """backfillctl that must exit 0; returns stdout."""
        rc, out, err = self.ctl(*args, **kw)
        if rc != 0:
            fail("backfillctl %s: exit %d, expected 0\nstdout: %s\nstderr: %s\n%s"
                 % (" ".join(map(str, args)), rc, out, err, self.log_tail()))
        return out

    def json(self, *args, **kw):
        """backfillctl ... --json that must exit 0; returns the parsed JSON."""
        out = self.ok(*(args + ("--json",)), **kw)
        try:
            return json.loads(out)
        except ValueError as e:
            fail("backfillctl %s --json printed no JSON (%s):\n%s"
                 % (" ".join(map(str, args)), e, out))

    def runs(self, *filters, include_boot=False):
        """Every run (runs --json), oldest first by id, then the items not
        run yet (queued or blocked: id null); without the schedule's work
        at the first start unless include_boot."""
        rs = self.json("runs", *filters)
        check(isinstance(rs, list), "runs --json is not an array: %r" % (rs,))
        for r in rs:
            for k in ("id", "request", "job", "partition", "attempt", "state",
                      "started_at", "finished_at", "error", "code_version"):
                check(k in r, "runs --json object lacks %r: %r" % (k, r))
        if not include_boot:
            rs = [r for r in rs if r["request"] not in self.boot_requests]
        return sorted(rs, key=lambda r: (r["id"] is None, r["id"] or 0))

    def status(self, job=None):
        st = self.json("status", *([job] if job else []))
        check(isinstance(st, dict) and isinstance(st.get("jobs"), list),
              "status --json has no jobs array: %r" % (st,))
        return {j["name"]: j for j in st["jobs"]}

    def backfill(self, job, frm, to, *extra):
        """backfillctl backfill JOB --from --to EXTRA --wait (exit 0 required);
        returns stdout."""
        return self.ok("backfill", job, "--from", frm, "--to", to, *extra, "--wait")

    def enqueue(self, *args):
        """backfillctl ARGS (a backfill or rerun without --wait) that must
        exit 0; returns the request id it printed (or, failing that, the
        newest request in the state store)."""
        out = self.ok(*args)
        m = re.search(r"[Rr]equest\D{0,4}(\d+)", out)
        if m:
            return int(m.group(1))
        rows = self.state_rows("SELECT max(id) FROM requests")
        row = rows[0] if rows else None
        check(row and row[0], "backfillctl %s printed no request id: %r" % (" ".join(args), out))
        return int(row[0])

    # -- the raw protocol

    def connect(self, timeout=10.0):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(self.sock)
        return s

    def request(self, fields, timeout=CTL_TIMEOUT):
        """Send one REQUEST; returns (progress frames, response fields)."""
        return self._request(fields, timeout)

    def _request(self, fields, timeout):
        s = self.connect(timeout)
        try:
            s.sendall(frame(fields))
            progress = []
            data = b""
            while True:
                fr = read_frame(s, raw=True)
                check(fr is not None, "daemon closed the connection without a RESPONSE to %r" % fields)
                t, body = fr
                if t == PROTO_DATA:
                    data += data_out(body)
                    continue
                f = parse_body(body)
                if t == PROTO_PROGRESS:
                    progress.append(f)
                    continue
                eq(t, PROTO_RESPONSE, "frame type answering %r" % (fields,))
                if data:  # DATA chunks come before the RESPONSE's out
                    f["out"] = data.decode("utf-8", "replace") + f.get("out", "")
                return progress, f
        finally:
            s.close()

    def wait_request(self, req, timeout=CTL_TIMEOUT):
        """Block until request `req` and its downstream work are final
        (protocol cmd=wait); returns the RESPONSE fields."""
        _, resp = self.request({"cmd": "wait", "request": req}, timeout=timeout)
        check(resp.get("finished") == "1" or "status" in resp,
              "wait for request %s answered %r" % (req, resp))
        return resp

    # -- warehouses and the state store

    def wh(self, name="sales"):
        con = sqlite3.connect(self.warehouses[name], timeout=30)
        return con

    def query(self, sql, params=(), wh="sales"):
        con = self.wh(wh)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()

    def dump(self, table, where="1", params=(), wh="sales"):
        """Every row of table (matching where), exact: floats by repr()."""
        con = self.wh(wh)
        try:
            rows = con.execute("SELECT * FROM %s WHERE %s" % (table, where), params).fetchall()
        finally:
            con.close()
        return sorted(tuple(repr(v) for v in r) for r in rows)

    def wh_dump(self, wh="sales"):
        """The whole warehouse as SQL text (schema and rows), rows sorted:
        a partition rewritten with DELETE + INSERT holds the same rows at
        new rowids, which is no change of content.  The daemon's own
        table backfilld_commits (docs/guarantees.md, "Tables in your warehouse") is
        left out: each run of a new request adds its row by design."""
        con = self.wh(wh)
        try:
            return "\n".join(sorted(
                line for line in con.iterdump()
                if "backfilld_commits" not in line))
        finally:
            con.close()

    def wh_commits(self, wh="sales"):
        """The rows of backfilld_commits, (request_id, job, partition_key,
        run_id) in key order; [] before the daemon created it."""
        con = self.wh(wh)
        try:
            if not con.execute("SELECT 1 FROM sqlite_master WHERE name ="
                               " 'backfilld_commits'").fetchall():
                return []
            return con.execute(
                "SELECT request_id, job, partition_key, run_id FROM"
                " backfilld_commits ORDER BY 1, 2, 3").fetchall()
        finally:
            con.close()

    def state_rows(self, sql, params=()):
        """Rows of SQL run on the state store (read only), as tuples;
        `?` in SQL takes the next of params (numbers, text, None);
        raises StateError when it fails."""
        return self.state.rows(sql_inline(sql, params))

    def state_write(self, script):
        """Run an SQL script (statements ended by ';') on the state store
        of the stopped daemon, in one transaction."""
        check(self.proc is None, "state_write while the daemon runs")
        self.state.write(script)

    def state_values(self):
        """Every text value stored anywhere in the state store."""
        out = []
        for t in self.state.tables():
            for row in self.state_rows('SELECT * FROM "%s"' % t):
                out.extend(v for v in row if isinstance(v, str))
        return out

    # a shared store's liveness tables: heartbeats and lease renewals
    # change them every few seconds by design, whatever the clients do
    LIVENESS_TABLES = ("nodes", "lease")

    def state_dump(self):
        """Every row of every table of the state store (for 'nothing
        changed'), but the liveness tables of a shared store."""
        return {t: sorted(repr(r) for r in self.state_rows('SELECT * FROM "%s"' % t))
                for t in self.state.tables() if t not in self.LIVENESS_TABLES}


# ---------------------------------------------------------------- state stores

class StateError(Exception):
    pass


def sql_literal(v):
    """v as an SQL literal both stores read alike."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, float)):
        return repr(v)
    return "'%s'" % str(v).replace("'", "''")


def sql_inline(sql, params):
    """SQL with each `?` replaced by the next of params as a literal (the
    state stores are read through a command-line client for PostgreSQL)."""
    if not params:
        return sql
    parts = sql.split("?")
    check(len(parts) == len(params) + 1,
          "%d parameters for %d placeholders in %r" % (len(params), len(parts) - 1, sql))
    out = [parts[0]]
    for v, rest in zip(params, parts[1:]):
        out.append(sql_literal(v))
        out.append(rest)
    return "".join(out)


def sqlite_state_only(why):
    """Skip the test (exit 77) unless the daemons' state store is SQLite."""
    if STATE != "sqlite":
        print("SKIP: %s: SQLite state store only (BACKFILLD_TEST_STATE=%s)" % (why, STATE))
        raise SystemExit(SKIP)


class SqliteState:
    """state_db in the daemon's folder (the config says so already)."""

    def __init__(self, d):
        self.d = d

    def configure(self, text):
        return text

    def rows(self, sql):
        try:
            con = sqlite3.connect("file:%s?mode=ro" % self.d._state_db, uri=True, timeout=30)
            try:
                return [tuple(r) for r in con.execute(sql).fetchall()]
            finally:
                con.close()
        except sqlite3.Error as e:
            raise StateError(str(e))

    def write(self, script):
        con = sqlite3.connect(self.d._state_db, timeout=30)
        try:
            con.executescript("BEGIN;\n" + script + "\nCOMMIT;")
        finally:
            con.close()

    def tables(self):
        return [r[0] for r in self.rows(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name")]


_PG = {"cluster": None, "n": 0, "checked": False}


def _pg_state_supported():
    """Does this backfilld know `state: postgres:`?  Asked once, of
    --check-config on a configuration that needs nothing else."""
    if _PG["checked"]:
        return
    backfilld, _ = binaries()
    with tempfile.TemporaryDirectory(prefix="bfd-state-") as tmp:
        conf = os.path.join(tmp, "probe.yaml")
        with open(conf, "w") as f:
            f.write("state:\n  postgres: \"host=%s dbname=probe\"\n"
                    "socket: %s/s.sock\njobs: []\n" % (tmp, tmp))
        p = subprocess.run([backfilld, "--check-config", "--config", conf],
                           capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        print("SKIP: this backfilld has no `state: postgres:` yet (--check-config: %s)"
              % (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1])
        raise SystemExit(SKIP)
    _PG["checked"] = True


def _pg_cluster():
    """The throwaway cluster of this test process (test_postgres.Cluster:
    skips without PostgreSQL, unless BACKFILLD_REQUIRE_POSTGRES=1)."""
    if _PG["cluster"] is None:
        import test_postgres
        _PG["cluster"] = test_postgres.cluster()  # closed at exit
    return _PG["cluster"]


class PgState:
    """A database of its own in the throwaway cluster, owned by the
    cluster's login role, named in a `state: {postgres: ...}` block."""

    def __init__(self, d):
        _pg_state_supported()
        self.c = _pg_cluster()
        _PG["n"] += 1
        self.db = "state_%d" % _PG["n"]
        self.c.psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.db, db="postgres")
        self.c.psql("CREATE DATABASE %s OWNER etl" % self.db, db="postgres")
        self.conninfo = self.c.conninfo.replace("dbname=etl", "dbname=%s" % self.db)

    def configure(self, text):
        # one line, like the state_db line it replaces: the positions of
        # the config's errors (file:line:col) stay those of SQLite's
        block = "state: {postgres: \"%s\", password_file: \"%s\"}" % (
            self.conninfo, self.c.pwfile)
        out, n = re.subn(r"(?m)^state_db:.*$", lambda m: block, text)
        if n == 0 and not re.search(r"(?m)^state:", text):
            out = block + "\n" + text
        return out

    def rows(self, sql):
        # fields split by US, NULL shown as RS: neither occurs in the store
        argv = self.c.psql_cmd(self.db)
        argv[argv.index("-F") + 1] = "\x1f"
        argv += ["-P", "null=\x1e", "-c", sql]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise StateError(r.stderr.strip())
        return [tuple(None if v == "\x1e" else int(v) if re.fullmatch(r"-?\d+", v) else v
                      for v in line.split("\x1f"))
                for line in r.stdout.split("\n") if line != ""]

    def write(self, script):
        with tempfile.NamedTemporaryFile("w", suffix=".sql") as f:
            f.write("SET ROLE etl;\n" + script)
            f.flush()
            argv = self.c.psql_cmd(self.db) + ["-1", "-f", f.name]
            r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise StateError(r.stderr.strip())

    def tables(self):
        return [r[0] for r in self.rows(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
            "ORDER BY tablename")]


def state_store(d):
    """The state store for daemon d, by BACKFILLD_TEST_STATE."""
    if STATE == "sqlite":
        return SqliteState(d)
    if STATE == "postgres":
        return PgState(d)
    fail("BACKFILLD_TEST_STATE=%s: expected sqlite or postgres" % STATE)


_ALL = []
_install_cleanup()


# ---------------------------------------------------------------- running

def one_line_error(rc, out, err, expect_rc, what):
    """Assert a refusal: exit code, one line on stderr, nothing on stdout."""
    if rc != expect_rc:
        fail("%s: exit %d, expected %d\nstdout: %r\nstderr: %r" % (what, rc, expect_rc, out, err))
    e = err.strip("\n")
    check(e != "", "%s: nothing on stderr" % what)
    check("\n" not in e, "%s: stderr is not one line:\n%s" % (what, err))
    check(out.strip() == "", "%s: unexpected stdout %r" % (what, out))
    return e


def main(tests):
    """Run the test functions in order; exit 0 / 1."""
    binaries()
    failed = []
    for t in tests:
        name = t.__name__
        print("---- %s" % name, flush=True)
        before = len(_ALL)
        t0 = time.monotonic()
        ok = True
        del _SOFT[:]
        try:
            t()
            if _SOFT:
                raise TestFailure("%d soft check(s) failed:\n  %s"
                                  % (len(_SOFT), "\n  ".join(_SOFT)))
        except Exception:
            ok = False
            failed.append(name)
            print("FAIL %s" % name)
            traceback.print_exc(file=sys.stdout)
        for d in _ALL[before:]:
            if not ok:
                print(d.log_tail(60))
            d.close(keep=not ok)
        del _ALL[before:]
        if ok:
            print("ok   %s (%.1f s)" % (name, time.monotonic() - t0))
        sys.stdout.flush()
    if failed:
        print("%d of %d failed: %s" % (len(failed), len(tests), ", ".join(failed)))
        sys.exit(1)
    print("all %d passed" % len(tests))
    sys.exit(0)


# ---------------------------------------------------------------- the sales example

def sales_seed():
    """config/demo/sales.sql: the lessons' warehouse, mid-incident."""
    with open(SALES_SQL) as f:
        return f.read()


WINDOW = ("2026-02-08", "2026-02-12")   # the deploy window of the buggy build
ALL_DAYS = ("2026-01-26", "2026-02-22")  # the demo data: four ISO weeks

# The lesson's fixed fact job (refunds included) with its reconciliation check.
FACT_JOB = """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  catchup: false
  concurrency: %(concurrency)d
  retries: 0
  sql: |
    DELETE FROM fct_daily_sales WHERE dt = :partition;
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT dt, store_id, COUNT(*), SUM(amount_usd)
    FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;
  checks:
    - name: reconciles_with_raw
      sql: SELECT (SELECT ROUND(SUM(revenue_usd),2) FROM fct_daily_sales WHERE dt = :partition)
                IS (SELECT ROUND(SUM(amount_usd),2) FROM raw_sales WHERE dt = :partition)
"""

WEEKLY_JOB = """
- name: mart_weekly_sales
  warehouse: sales
  partition: week
  start: 2026-01-26
  end: 2026-02-16
  upstream: [fct_daily_sales]
  sql: |
    DELETE FROM mart_weekly_sales WHERE week_start = :partition;
    INSERT INTO mart_weekly_sales (week_start, revenue_usd)
    SELECT :partition, SUM(revenue_usd) FROM fct_daily_sales
    WHERE dt >= :partition_start AND dt < :partition_end;
"""

MONTHLY_JOB = """
- name: mart_monthly_sales
  warehouse: sales
  partition: month
  start: 2026-01-01
  end: 2026-02-01
  upstream: [fct_daily_sales]
  sql: |
    DELETE FROM mart_monthly_sales WHERE month_start = :partition;
    INSERT INTO mart_monthly_sales (month_start, revenue_usd)
    SELECT :partition, SUM(revenue_usd) FROM fct_daily_sales
    WHERE dt >= :partition_start AND dt < :partition_end;
"""


def fact_job(concurrency=1):
    return FACT_JOB % {"concurrency": concurrency}


def sales_daemon(marts=False, monthly=False, concurrency=1, clock=DEFAULT_CLOCK,
                 settings=None, name="sales"):
    """A daemon on the sales example: the fact job, optionally the marts."""
    jobs = fact_job(concurrency)
    if marts:
        jobs += WEEKLY_JOB
    if monthly:
        jobs += MONTHLY_JOB
    return Daemon(jobs=jobs, warehouses={"sales": sales_seed()},
                  settings=settings or {"max_concurrency": 4}, clock=clock, name=name)


def raw_truth(d, first, last):
    """{(dt, store_id): (sales, revenue)} computed from raw_sales."""
    rows = d.query("SELECT dt, store_id, COUNT(*), SUM(amount_usd) FROM raw_sales "
                   "WHERE dt BETWEEN ? AND ? GROUP BY dt, store_id", (first, last))
    return {(r[0], r[1]): (r[2], r[3]) for r in rows}


def fact_rows(d, first, last):
    rows = d.query("SELECT dt, store_id, sales, revenue_usd FROM fct_daily_sales "
                   "WHERE dt BETWEEN ? AND ?", (first, last))
    return {(r[0], r[1]): (r[2], r[3]) for r in rows}


def assert_fact_repaired(d, first, last):
    truth = raw_truth(d, first, last)
    got = fact_rows(d, first, last)
    eq(sorted(got), sorted(truth), "fct_daily_sales keys for %s..%s" % (first, last))
    for k, (n, rev) in truth.items():
        gn, grev = got[k]
        eq(gn, n, "fct_daily_sales.sales for %s" % (k,))
        check(abs(grev - rev) < 0.005,
              "fct_daily_sales.revenue_usd for %s: expected %.2f (refunds included), got %.2f"
              % (k, rev, grev))


def by_job(runs, job, state=None):
    return [r for r in runs if r["job"] == job and (state is None or r["state"] == state)]


def overlap_max(intervals):
    """Largest number of [start, end) intervals holding one instant."""
    ev = []
    for s, e in intervals:
        ev.append((e, 0))  # ends first at equal times: a freed slot refilled
        ev.append((s, 1))
    ev.sort()
    cur = best = 0
    for _, kind in ev:
        cur += 1 if kind else -1
        best = max(best, cur)
    return best
