#!/usr/bin/env python3
"""run.py - run one libFuzzer target for a while; fail on any finding.

    run.py TARGET SEED_CORPUS [--seconds N] [--work DIR] [-- LIBFUZZER_ARGS]

The seed corpus (tests/fuzz/corpus/NAME) is read, never written, and
tests/fuzz/NAME.dict is given as the dictionary when it exists; new
inputs go to WORK/corpus, a crashing, leaking, timing out or invariant
breaking input to WORK/ (crash-*, leak-*, timeout-*, oom-*), and the
input is printed (escaped) so that a CI log alone can reproduce it.

Exit status: 0 no finding, 1 a finding or the target could not run.
Never 77: libFuzzer's own exit code for a finding is 77 by default, which
meson would count as a skip, so the target runs with -error_exitcode=1.
Python 3 standard library only.
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("seeds")
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--work", default=None)
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()

    name = os.path.basename(a.target)
    work = a.work or os.path.abspath(name + ".work")
    corpus = os.path.join(work, "corpus")
    os.makedirs(corpus, exist_ok=True)
    for old in glob.glob(os.path.join(work, "*-*")):  # last run's findings
        if os.path.isfile(old):
            os.unlink(old)
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:allocator_may_return_null=1")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    argv = [a.target, "-max_total_time=%d" % a.seconds, "-timeout=10",
            "-rss_limit_mb=2048", "-error_exitcode=1", "-timeout_exitcode=1",
            "-print_final_stats=1", "-artifact_prefix=" + work + "/"]
    # tests/fuzz/NAME.dict (NAME without fuzz_), when there is one
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     name[len("fuzz_"):] + ".dict")
    if os.path.exists(d):
        argv.append("-dict=" + d)
    argv += a.extra + [corpus, a.seeds]
    print("$ " + " ".join(argv), flush=True)
    t0 = time.monotonic()
    # libFuzzer's output goes to WORK/fuzz.log as it comes (tail -f it on
    # a long run) and, shortened, to this test's log at the end
    logpath = os.path.join(work, "fuzz.log")
    with open(logpath, "wb") as log:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, env=env)
        chunks = []
        for line in p.stdout:
            log.write(line)
            log.flush()
            chunks.append(line)
        p.wait()
    took = time.monotonic() - t0
    out = b"".join(chunks).decode("utf-8", "replace")
    execs = re.search(r"stat::number_of_executed_units:\s*(\d+)", out)
    execs = int(execs.group(1)) if execs else None
    found = sorted(f for f in glob.glob(os.path.join(work, "*-*"))
                   if os.path.isfile(f))
    ok = p.returncode == 0 and not found
    # the start and the end of libFuzzer's output: the report is at the end
    lines = out.splitlines()
    shown = lines if len(lines) <= 120 else lines[:20] + ["..."] + lines[-100:]
    print("\n".join(shown))
    for f in found:
        with open(f, "rb") as fh:
            data = fh.read()
        print("finding %s (%d bytes): %r" % (f, len(data), data[:4096]))
    print("%s: %s executions in %.0f s, %d inputs in %s, exit %d: %s"
          % (name, execs if execs is not None else "?", took,
             len(os.listdir(corpus)), corpus, p.returncode,
             "no finding" if ok else "FINDING"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
