#!/usr/bin/env python3
"""sidebyside.py: the scheduler's own cost, an older commit against the
working tree's build, in one run (issue 27).

It builds COMMIT (a git worktree of it in a temporary folder, then meson
setup --buildtype=release and compile there; the build is kept in
tests/bench/data/build-SHA so a second run reuses it) and runs both
daemons on the same workload, alternating: a fresh daemon and a fresh
SQLite warehouse for every measurement, max_concurrency 1, a backfill of N
hourly partitions of a one-row INSERT OR REPLACE through `backfillctl
backfill --wait`, timed end to end (the daemon's start is not timed).
Prints each side's median, the ratio old/new, the daemon's CPU time (user +
system, all threads, /proc/PID/stat) per partition, and with --strace the
pwrite/fdatasync/fstat/pread calls per partition of every process of the
daemon (one backfill each under strace -f -c).

  tests/bench/sidebyside.py 3522513                       # 5 pairs of 10,008
  tests/bench/sidebyside.py 3522513 HEAD~3 --pairs 9      # several old commits
  tests/bench/sidebyside.py 3522513 --strace --n 1008     # syscalls per partition
  tests/bench/sidebyside.py 3522513 --new build-bench     # the new side's build folder

Python 3 standard library, git, meson, ninja; strace for --strace.
"""

import argparse
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import run  # noqa: E402  (Daemon, hour_keys, BenchError)

SQL = "INSERT OR REPLACE INTO hourly (hour, n) VALUES (:partition, 1);"
CALLS = ("pwrite64", "fdatasync", "fsync", "newfstatat", "fstat", "pread64")


def git(*argv):
    return subprocess.run(["git", "-C", REPO] + list(argv), check=True,
                          capture_output=True, text=True).stdout.strip()


def build_commit(commit, data):
    """The release build of COMMIT: (backfilld, backfillctl, full sha)."""
    sha = git("rev-parse", "--verify", commit + "^{commit}")
    out = os.path.join(data, "build-" + sha[:12])
    bd, bc = os.path.join(out, "daemon", "backfilld"), os.path.join(out, "daemon", "backfillctl")
    if os.path.exists(bd) and os.path.exists(bc):
        return bd, bc, sha
    src = tempfile.mkdtemp(prefix="sidebyside-src-")
    try:
        git("worktree", "add", "--detach", src, sha)
        run.log("building %s in %s" % (sha[:12], out))
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run(["meson", "setup", out, src, "--buildtype=release", "-Dtests=false"],
                       check=True, capture_output=True, text=True)
        subprocess.run(["meson", "compile", "-C", out], check=True,
                       capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        raise SystemExit("sidebyside: building %s failed:\n%s%s"
                         % (sha[:12], e.stdout[-3000:], e.stderr[-3000:]))
    finally:
        subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", src],
                       capture_output=True)
        shutil.rmtree(src, ignore_errors=True)
    return bd, bc, sha


def config(db, n):
    return ("state_db: state.db\nsocket: backfilld.sock\n"
            "max_concurrency: 1\nmax_backfill: %d\n"
            "warehouses:\n  - name: hourly\n    sqlite: %s\n"
            "jobs:\n"
            "  - name: hourly_rows\n    warehouse: hourly\n    partition: hour\n"
            "    catchup: false\n    concurrency: 1\n    retries: 0\n    max_backfill: %d\n"
            "    sql: |\n      %s\n" % (n + 10, db, n + 10, SQL))


def fresh_db(path):
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE hourly (hour TEXT PRIMARY KEY, n INTEGER)")
    con.commit()
    con.close()


def cpu_s(pid):
    """User + system CPU seconds of process PID so far (all its threads)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one(side, work, dbdir, keys, strace_out=None, by_file=False, cpu=None):
    """A fresh daemon and warehouse, one backfill --wait: seconds. With
    STRACE_OUT, strace -f -c follows the daemon (attached once it is ready,
    detached after the backfill) and writes its summary there; with
    BY_FILE, every call instead, each with its descriptor's path (-y)."""
    d = tempfile.mkdtemp(prefix="sbs-", dir=work)
    db = os.path.join(dbdir, "sbs-%d.db" % os.getpid())
    fresh_db(db)
    dm = run.Daemon(side, d, config(db, len(keys))).start()
    tracer = None
    try:
        if strace_out:
            tracer = subprocess.Popen(["strace", "-f", "-y" if by_file else "-c", "-o", strace_out,
                                       "-e", "trace=" + ",".join(CALLS), "-p", str(dm.pid)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            # attached once it reports it (a line on stderr per thread)
            if "attached" not in tracer.stderr.readline():
                raise run.BenchError("strace did not attach to %d" % dm.pid)
        c0 = cpu_s(dm.pid)
        dt, out = dm.ctl("backfill", "hourly_rows", "--from", keys[0], "--to", keys[-1],
                         "--wait", timeout=3600)
        if cpu is not None:
            cpu.append(cpu_s(dm.pid) - c0)
        ok = dm.runs().get(("hourly_rows", "succeeded"), 0)
    finally:
        if tracer:
            tracer.send_signal(signal.SIGINT)
            tracer.wait(timeout=60)
        dm.stop()
    con = sqlite3.connect(db)
    rows = con.execute("SELECT COUNT(*) FROM hourly").fetchone()[0]
    con.close()
    if ok != len(keys) or rows != len(keys):
        raise run.BenchError("%s: %d partitions, %d succeeded runs, %d rows\n%s"
                             % (side.label, len(keys), ok, rows, out))
    shutil.rmtree(d, ignore_errors=True)
    return dt


def strace_by_file(path, dbdir):
    """{(call, file): count} from an strace -f -y log; the file is the
    descriptor's path (or the path argument) with the scratch folder cut,
    and the warehouse's and state store's names made generic."""
    counts = {}
    with open(path) as f:
        for line in f:
            p = line.split(None, 1)
            rest = p[1] if len(p) > 1 and p[0].isdigit() else line
            call = rest.split("(", 1)[0].strip()
            if call not in CALLS:
                continue
            arg = rest.split("(", 1)[1] if "(" in rest else ""
            if arg.startswith("AT_FDCWD") and "\"" in arg:
                name = arg.split("\"")[1]   # the path argument, not the cwd
            elif "<" in arg.split(",")[0]:
                name = arg.split("<", 1)[1].split(">", 1)[0]
            else:
                name = arg.split(",")[0]
            name = os.path.basename(name)
            if name.startswith("sbs-") and ".db" in name:
                name = "warehouse" + name[name.index(".db") + 3:]
            elif name.startswith("state.db"):
                name = "state" + name[len("state.db"):]
            elif name.startswith("sidebyside-"):
                name = "warehouse's folder"
            elif name.startswith("sbs-"):
                name = "daemon's folder"
            counts[(call, name)] = counts.get((call, name), 0) + 1
    return counts


def strace_counts(path):
    """{call: count} from an strace -c -f summary."""
    counts = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 5 and p[-1] in CALLS:
                try:
                    counts[p[-1]] = int(p[3])
                except ValueError:
                    pass
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old", nargs="+", help="older commits (anything git rev-parse takes)")
    ap.add_argument("--new", default=None,
                    help="the new side's build folder (default: build-bench, else build)")
    ap.add_argument("--n", type=int, default=10008, help="hourly partitions (10,008)")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="folder of the warehouse and state store (default /dev/shm)")
    ap.add_argument("--strace", action="store_true",
                    help="also count syscalls per partition (one backfill of each side)")
    ap.add_argument("--by-file", action="store_true",
                    help="with --strace, also the calls per partition by file (strace -y)")
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    args = ap.parse_args()
    os.makedirs(args.data, exist_ok=True)

    newb = args.new or next((b for b in ("build-bench", "build")
                             if os.path.exists(os.path.join(REPO, b, "daemon", "backfilld"))), None)
    if not newb:
        raise SystemExit("sidebyside: no build of the working tree (meson setup build-bench "
                         "--buildtype=release && meson compile -C build-bench)")
    newb = os.path.join(REPO, newb)
    sides = [types.SimpleNamespace(label="working tree (%s)" % os.path.basename(newb),
                                   backfilld=os.path.join(newb, "daemon", "backfilld"),
                                   backfillctl=os.path.join(newb, "daemon", "backfillctl"))]
    for c in args.old:
        bd, bc, sha = build_commit(c, args.data)
        sides.append(types.SimpleNamespace(label=sha[:7], backfilld=bd, backfillctl=bc))

    keys = run.hour_keys("2024-01-01T00", args.n)
    work = tempfile.mkdtemp(prefix="sidebyside-", dir=args.dir)
    dbdir = work  # inside --dir, removed at the end
    try:
        times = {s.label: [] for s in sides}
        cpus = {s.label: [] for s in sides}
        run.log("%d partitions, %d pairs, load average %s" % (args.n, args.pairs, run.loadavg()))
        for i in range(args.pairs):
            order = sides if i % 2 == 0 else list(reversed(sides))
            for s in order:
                t = one(s, work, dbdir, keys, cpu=cpus[s.label])
                times[s.label].append(t)
                run.log("  pair %d %-28s %7.3f s  %6.0f partitions/s  %5.1f us CPU/partition"
                        % (i + 1, s.label, t, args.n / t, cpus[s.label][-1] * 1e6 / args.n))
        new = statistics.median(times[sides[0].label])
        newc = statistics.median(cpus[sides[0].label])
        print("\n%d one-row hourly partitions, max_concurrency 1, median of %d, alternating"
              % (args.n, args.pairs))
        print("%-28s %9s %14s %12s %14s %12s" % ("daemon", "median s", "partitions/s", "vs new",
                                                 "CPU us/part.", "CPU vs new"))
        for s in sides:
            m = statistics.median(times[s.label])
            c = statistics.median(cpus[s.label])
            print("%-28s %9.3f %14.0f %12.2f %14.1f %12.2f"
                  % (s.label, m, args.n / m, m / new, c * 1e6 / args.n, c / newc))
        if args.strace:
            if not shutil.which("strace"):
                raise SystemExit("sidebyside: --strace needs strace (apt-get install strace)")
            print("\nsystem calls per partition (strace -f -c, one backfill each)")
            print("%-28s" % "daemon" + "".join("%12s" % c for c in CALLS))
            for s in sides:
                out = os.path.join(work, "strace-%s.txt" % s.label.split()[0])
                one(s, work, dbdir, keys, strace_out=out)
                c = strace_counts(out)
                print("%-28s" % s.label + "".join("%12.2f" % (c.get(k, 0) / args.n) for k in CALLS))
            if args.by_file:
                print("\nby file, per partition (strace -f -y, one backfill each)")
                for s in sides:
                    out = os.path.join(work, "strace-y-%s.txt" % s.label.split()[0])
                    one(s, work, dbdir, keys, strace_out=out, by_file=True)
                    c = strace_by_file(out, dbdir)
                    print(s.label)
                    for (call, name), v in sorted(c.items()):
                        if v / args.n >= 0.01:
                            print("  %-12s %-28s %8.2f" % (call, name, v / args.n))
        print("load average at the end %s" % run.loadavg())
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except run.BenchError as e:
        print("sidebyside: %s" % e, file=sys.stderr)
        sys.exit(1)
