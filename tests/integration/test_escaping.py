#!/usr/bin/env python3
"""Outside text is escaped by one rule (daemon/lib/util/text.h) in every
output: every byte 0x00-0x1f and 0x7f, carried by a warehouse value that
fails a key_unique check, by an SQL error and by a hook's output, comes
out of `backfill --wait`, `runs`, `audit`, `status`, an error line
(`verify`), the daemon log and the report as \\n, \\r, \\t or \\xNN
(HTML-escaped in the report, JSON-escaped in --json), never raw.

SQL text cannot hold 0x00 (a C string ends there): the warehouse value
and the SQL error carry 0x01-0x1f and 0x7f, the hook's output 0x00 too.

A command run's output (test_logs_outside_bytes) holds any byte: through
`logs` and `logs --follow` a NUL stops nothing, ESC, BEL, CR, DEL and
backspace come out by the rule for lines (newline and tab kept), `--raw`
gives a pipe the exact bytes and is refused on a terminal (which gets
nothing), the daemon stays up and answers `status`, and each command ran
once."""
import os
import pty
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import harness as h
import test_report

GUARD = 20.0
CONTROL = [c for c in range(0x20)] + [0x7f]
SQL_BYTES = [c for c in CONTROL if c != 0]
# A terminal's title set and its screen cleared, as a landing table may
# hold them.
OWNED = "\x1b]0;owned\x07\x1b[2J"


def rule(c):
    """The rendering of control byte c (text.h)."""
    return {0x0a: "\\n", 0x0d: "\\r", 0x09: "\\t"}.get(c, "\\x%02x" % c)


def sql_chars(codes):
    return "char(%s)" % ", ".join(str(c) for c in codes)


SEED = """
CREATE TABLE land (dt TEXT, k TEXT);
CREATE TABLE fact (dt TEXT, k TEXT);
CREATE TABLE paths (p TEXT);
INSERT INTO land VALUES ('2026-02-01', 'dup<' || %(all)s || '>' || %(owned)s);
INSERT INTO land VALUES ('2026-02-01', 'dup<' || %(all)s || '>' || %(owned)s);
INSERT INTO paths VALUES ('path<' || %(all)s || '>');
""" % {"all": sql_chars(SQL_BYTES), "owned": sql_chars([ord(c) for c in OWNED])}

# printf(1) octal escapes: every control byte but the newline on the first
# line, the NUL last (a C string would end there).
HOOK_FMT = "hookout<" + "".join("\\\\%03o" % c for c in CONTROL if c not in (0, 10)) \
    + ">\\\\n" + "second<\\\\000>\\\\n"

JOBS = """
- name: dup_keys
  warehouse: wh
  partition: day
  start: 2026-02-01
  end: 2026-02-02
  catchup: false
  retries: 0
  table: fact
  partition_column: dt
  key: [k]
  sql: |
    DELETE FROM fact WHERE dt = :partition;
    INSERT INTO fact SELECT dt, k FROM land WHERE dt = :partition;
  on_failure: ["printf", "%(fmt)s"]
- name: bad_path
  warehouse: wh
  partition: day
  start: 2026-02-01
  end: 2026-02-02
  catchup: false
  retries: 0
  sql: SELECT json_extract('{}', (SELECT p FROM paths));
- name: bad_proof
  warehouse: wh
  partition: day
  start: 2026-02-01
  end: 2026-02-02
  catchup: false
  table: fact
  partition_column: dt
  sql: SELECT json_extract('{}', (SELECT p FROM paths));
- name: sensed
  warehouse: wh
  partition: day
  start: 2026-02-01
  end: 2026-02-02
  catchup: false
  sql: SELECT 1;
  late_data:
    sql: SELECT k FROM land
    every: 1m
""" % {"fmt": HOOK_FMT}


def raw_controls(data):
    """The control bytes (but the newline that ends a line) in data."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    return sorted({"%02x" % b for b in data if (b < 0x20 and b != 0x0a) or b == 0x7f})


def rendering(marker, codes, flat=()):
    """A regex for marker<codes> rendered by the rule; a byte in flat may
    also show as a space (a run's error is one line when it is recorded:
    daemon/server/exec/exec.c; a hook's output line: daemon/server/base/hooks.c)."""
    parts = []
    for c in codes:
        alt = [re.escape(rule(c))] + ([" "] if c in flat else [])
        parts.append("(?:%s)" % "|".join(alt))
    return re.compile(re.escape(marker + "<") + "".join(parts) + re.escape(">"))


def check_output(text, wants, what):
    """No raw control byte in text, and each wanted rendering in it."""
    bad = raw_controls(text)
    h.check(not bad, "%s: raw control bytes %s in:\n%r" % (what, bad, text[-3000:]))
    for want in wants:
        h.check(want.search(text), "%s: no %s in:\n%r" % (what, want.pattern, text[-3000:]))


NL_CR = (0x0a, 0x0d)
VALUE = rendering("dup", SQL_BYTES, NL_CR)          # in a run's error
VALUE_EXACT = rendering("dup", SQL_BYTES)           # in a check's detail
SQLERR = rendering("path", SQL_BYTES, NL_CR)
HOOKOUT = rendering("hookout", [c for c in CONTROL if c not in (0, 10)], (0x09, 0x0d))
OWNED_TEXT = "\\x1b]0;owned\\x07\\x1b[2J"


def await_log(d, needle, what):
    deadline = time.monotonic() + GUARD
    while True:
        with open(d.log, "rb") as f:
            data = f.read()
        if needle in data:
            return data
        if time.monotonic() > deadline:
            h.fail("%s: no %r in the log after %.0f s (guard)\n%s"
                   % (what, needle, GUARD, d.log_tail()))
        time.sleep(0.02)


def test_every_output():
    """Each source of outside text through each output."""
    d = h.Daemon(jobs=JOBS, warehouses={"wh": SEED}, name="escape")
    reqs = {}
    for job in ("dup_keys", "bad_path"):
        argv = ("backfill", job, "--from", "2026-02-01", "--to", "2026-02-01", "--wait")
        rc, out, err = d.ctl(*argv)
        h.eq(rc, 1, "%s: exit of a backfill whose partition failed" % job)
        m = re.search(r"request (\d+):", out)
        h.check(m, "%s: no request id in %r" % (job, out))
        reqs[job] = int(m.group(1))
        check_output(out + err, [VALUE if job == "dup_keys" else SQLERR], "backfill --wait of " + job)
        if job == "dup_keys":
            h.check(OWNED_TEXT in out, "backfill --wait: the title escape shown escaped: %r" % out)

    text = d.ok("runs")
    check_output(text, [VALUE, SQLERR], "runs")
    h.check(OWNED_TEXT in text, "runs: the title escape shown escaped")
    # one row per run: no byte of the values broke a line
    h.eq(len(text.rstrip("\n").split("\n")), 3, "runs: lines (the head and two runs)")

    check_output(d.ok("audit", "--request", reqs["dup_keys"]), [VALUE_EXACT], "audit of dup_keys")
    check_output(d.ok("audit", "--request", reqs["bad_path"]), [SQLERR], "audit of bad_path")
    # An error line: the SQL error of a proof that could not run.
    rc, out, err = d.ctl("verify", "bad_proof", "2026-02-01")
    h.eq(rc, 2, "verify of a job whose SQL fails: exit")
    check_output(out + err, [SQLERR], "verify's error line")
    h.eq(len(err.rstrip("\n").split("\n")), 1, "verify's error: one line")

    # status: a late-data sensor whose query returned the value.
    d.set_clock("2026-01-01T00:02:00Z")
    deadline = time.monotonic() + GUARD
    while not d.status("sensed")["sensed"]["late_data"]["last_check"]:
        h.check(time.monotonic() < deadline, "the sensor did not check within %.0f s" % GUARD)
        time.sleep(0.02)
    h.check(OWNED in d.status("sensed")["sensed"]["late_data"]["error"],
            "status --json: the sensor's error holds the exact value")
    text = d.ok("status")
    check_output(text, [VALUE_EXACT], "status")
    h.check(OWNED_TEXT in text, "status: the title escape shown escaped")

    # The daemon log: the failures, the sensor's error (its value with
    # newline and carriage return) and the hook's output, escaped.
    log = await_log(d, b"hook=on_failure job=dup_keys partition=2026-02-01 done",
                    "the on_failure hook's end")
    text = log.decode("utf-8", "surrogateescape")
    check_output(text, [VALUE, SQLERR, HOOKOUT, VALUE_EXACT], "the daemon log")
    h.check(OWNED_TEXT in text, "the log: the title escape shown escaped")

    # --json: JSON-escaped, the exact text once parsed.
    rc, out, err = d.ctl("runs", "--json")
    h.eq(rc, 0, "runs --json: exit")
    h.eq(raw_controls(out + err), [], "runs --json: raw control bytes")
    errors = {r["job"]: r["error"] for r in d.runs()}
    flat = "".join(" " if c in NL_CR else chr(c) for c in SQL_BYTES)
    h.check(("dup<%s>" % flat) in errors["dup_keys"],
            "runs --json: the value's bytes parsed back: %r" % errors["dup_keys"])
    h.check(OWNED in errors["dup_keys"], "runs --json: the exact value: %r" % errors["dup_keys"])
    a = d.json("audit", "--request", reqs["dup_keys"])
    details = " ".join(c.get("detail") or "" for p in a["partitions"] for c in p["checks"])
    h.check(("dup<" + "".join(chr(c) for c in SQL_BYTES) + ">") in details,
            "audit --json: the check's detail exact: %r" % details)

    # The report: HTML-escaped after the rule.
    page = os.path.join(d.dir, "report.html")
    d.ok("report", "--html", page)
    with open(page, "rb") as f:
        data = f.read()
    text = data.decode("utf-8", "surrogateescape")
    bad = raw_controls(data)
    h.check(not bad, "report: raw control bytes %s" % bad)
    for want in (VALUE, SQLERR):
        html_want = re.compile(want.pattern.replace(re.escape("<"), "&lt;")
                               .replace(re.escape(">"), "&gt;"))
        h.check(html_want.search(text), "report: no %s" % html_want.pattern)
    # As a browser renders it (headless Chromium, when installed; required
    # with BACKFILLD_REQUIRE_CHROMIUM=1): the escapes are text on the page.
    if shutil.which("chromium") or shutil.which("chromium-browser") or \
            os.environ.get("BACKFILLD_REQUIRE_CHROMIUM") == "1":
        p = test_report.run_chromium(test_report.chromium(), "--dump-dom", "file://" + page)
        h.eq(p.returncode, 0, "chromium --dump-dom: exit (%s)" % p.stderr[-2000:])
        h.eq(raw_controls(p.stdout), [], "the rendered report: raw control bytes")
        h.check(OWNED_TEXT in p.stdout, "the rendered report: the title escape shown escaped")


# What a run may print to take over the terminal of whoever reads its log:
# a title set, the screen cleared, a bell, a carriage return that writes
# over the line, a NUL (which once stopped the daemon), DEL, a backspace;
# and a literal backslash, UTF-8 and a byte that is not UTF-8, kept.
NOISY = (b"first line\n\x1b]0;owned\x07\x1b[2J\rover\x00nul\x7fdel\x08bs\ttab\\x1b\n"
         b"\xc3\xa9 \xff\n")
FOLLOW_1 = b"before\x00\x1b[31mred\x07\n"
FOLLOW_2 = b"after\rcr\x00\x1b[0m\n"


def lines_rule(data):
    """backfillctl logs' rendering of data (text.h, text_escape_lines): the
    rule, newline and tab kept."""
    out = bytearray()
    for b in data:
        if b in (0x0a, 0x09) or (0x20 <= b != 0x7f):
            out.append(b)
        else:
            out += rule(b).encode()
    return bytes(out)


def octal(data):
    return "".join("\\%03o" % b for b in data)


def ctl_bytes(d, *args, stdout=subprocess.PIPE):
    return subprocess.run([d.backfillctl, "--socket", d.sock] + list(args), stdout=stdout,
                          stderr=subprocess.PIPE, env=d.env(), timeout=GUARD)


def test_logs_outside_bytes():
    """A run's output through `logs` and `logs --follow`: every byte carried
    (a NUL stops nothing), shown by the rule; --raw gives the bytes to a
    pipe and is refused on a terminal; the daemon stays up and no command
    runs twice."""
    tmp = tempfile.mkdtemp(prefix="bfd-noisy-")
    go = os.path.join(tmp, "go")
    with open(os.path.join(tmp, "noisy.sh"), "w") as f:
        f.write("echo ran >> %s/noisy.count\nprintf '%s'\n" % (tmp, octal(NOISY)))
    with open(os.path.join(tmp, "follow.sh"), "w") as f:
        f.write("echo ran >> %s/follow.count\nprintf '%s'\n"
                "while [ ! -e %s ]; do sleep 0.05; done\nprintf '%s'\n"
                % (tmp, octal(FOLLOW_1), go, octal(FOLLOW_2)))
    jobs = """
- name: noisy
  partition: day
  catchup: false
  retries: 0
  command: ["sh", "%(tmp)s/noisy.sh"]
- name: follow
  partition: day
  catchup: false
  retries: 0
  command: ["sh", "%(tmp)s/follow.sh"]
""" % {"tmp": tmp}
    d = h.Daemon(jobs=jobs, name="escape-logs", clock=None)
    try:
        d.wait_request(d.enqueue("backfill", "noisy", "--from", "2026-02-01",
                                 "--to", "2026-02-01"))
        p = ctl_bytes(d, "logs", "noisy", "2026-02-01")
        h.eq((p.returncode, p.stderr), (0, b""), "logs of a run that printed a NUL")
        h.eq(p.stdout, lines_rule(NOISY), "logs: the output by the rule")
        h.eq(raw_controls(p.stdout), ["09"], "logs: no raw control byte but tabs")
        d.assert_alive("after logs of a NUL")
        h.check("noisy" in d.status(), "status answers after logs")

        # on the wire: one DATA frame of `bytes`, backslash doubled, NUL as \0
        c = d.connect()
        try:
            c.sendall(h.frame({"cmd": "logs", "job": "noisy", "partition": "2026-02-01"}))
            frames = []
            while not frames or frames[-1][0] != h.PROTO_RESPONSE:
                fr = h.read_frame(c, raw=True)
                h.check(fr is not None, "the daemon closed the connection: %r" % frames)
                frames.append(fr)
        finally:
            c.close()
        h.eq([body for t, body in frames if t == h.PROTO_DATA],
             [b"bytes=" + NOISY.replace(b"\\", b"\\\\").replace(b"\0", b"\\0") + b"\0"],
             "the DATA frames of logs")
        h.eq(h.parse_body(frames[-1][1]).get("status"), "0", "the RESPONSE")

        # --raw to a pipe: the bytes exactly; on a terminal: refused
        p = ctl_bytes(d, "logs", "noisy", "2026-02-01", "--raw")
        h.eq((p.returncode, p.stdout), (0, NOISY), "logs --raw to a pipe: %r" % p.stderr)
        master, slave = pty.openpty()
        try:
            p = ctl_bytes(d, "logs", "noisy", "2026-02-01", "--raw", stdout=slave)
            os.close(slave)
            slave = -1
            shown = b""
            while True:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                shown += chunk
        finally:
            if slave >= 0:
                os.close(slave)
            os.close(master)
        e = h.one_line_error(p.returncode, "", p.stderr.decode(), 2, "logs --raw on a terminal")
        h.check("never to a terminal" in e, e)
        h.eq(shown, b"", "logs --raw on a terminal: nothing written to it")

        # --follow: what it wrote so far, then the rest, each by the rule
        req = d.enqueue("backfill", "follow", "--from", "2026-02-01", "--to", "2026-02-01")
        deadline = time.monotonic() + GUARD
        while d.status("follow")["follow"]["running"] < 1:
            h.check(time.monotonic() < deadline, "follow never ran")
            time.sleep(0.02)
        p = subprocess.Popen([d.backfillctl, "--socket", d.sock, "logs", "follow", "2026-02-01",
                              "--follow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=d.env())
        try:
            first = p.stdout.readline()
            h.eq(first, lines_rule(FOLLOW_1), "--follow: the first part by the rule")
            h.check(p.poll() is None, "--follow goes on while the run runs")
            open(go, "w").close()
            rest, err = p.communicate(timeout=GUARD)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        h.eq((p.returncode, err), (0, b""), "--follow's exit")
        h.eq(rest, lines_rule(FOLLOW_2), "--follow: the rest by the rule")
        h.eq(d.wait_request(req).get("succeeded"), "1", "the followed run")
        d.assert_alive("after logs --follow")
        h.check("follow" in d.status(), "status answers after --follow")

        # each command ran once: nothing stopped the daemon mid-run
        for job in ("noisy", "follow"):
            with open(os.path.join(tmp, job + ".count")) as f:
                h.eq(f.read(), "ran\n", "%s ran once" % job)
            h.eq(len(d.runs("--job", job)), 1, "runs of %s" % job)
        d.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_logs_bad_encoding():
    """A DATA frame whose `bytes` is not an encoding (a backslash followed by
    neither a backslash nor 0) is refused by backfillctl: one line, exit 3,
    nothing of it printed."""
    tmp = tempfile.mkdtemp(prefix="bfd-fake-")
    path = os.path.join(tmp, "fake.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    srv.settimeout(GUARD)

    def serve():
        try:
            c, _ = srv.accept()
        except OSError:
            return
        with c:
            c.settimeout(GUARD)
            h.read_frame(c, raw=True)
            c.sendall(h.frame(b"bytes=ok\\x1b\0", h.PROTO_DATA) +
                      h.frame({"status": 0}, h.PROTO_RESPONSE))
            try:
                c.recv(1)
            except OSError:
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        p = subprocess.run([h.binaries()[1], "--socket", path, "logs", "j", "2026-02-01"],
                           capture_output=True, timeout=GUARD)
        e = h.one_line_error(p.returncode, p.stdout.decode(), p.stderr.decode(), 3,
                             "a DATA frame that is not an encoding")
        h.check("bytes are not encoded" in e, e)
    finally:
        srv.close()
        t.join(GUARD)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    h.main([test_every_output, test_logs_outside_bytes, test_logs_bad_encoding])
