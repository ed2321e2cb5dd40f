#!/usr/bin/env python3
"""Shell completion (docs/commands.md, "completion"): the scripts
`backfillctl completion bash|zsh` prints, which the build installs, load
in bash and in an interactive zsh and complete a command, an option, an
option's values and a job name asked of the running daemon (named by
--socket or by --config on the command line being completed); with no
daemon, or one that never answers (after 2 s), a job completes to
nothing.  An unknown shell
is refused (exit 2, one line).  zsh is driven through a pseudo-terminal
(its completion runs only inside the line editor); without zsh that part
is skipped, unless BACKFILLD_REQUIRE_ZSH=1 (as CI sets)."""
import os
import pty
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import harness as h

JOBS = """
- name: fct_sales
  partition: day
  catchup: false
  command: ["/bin/true"]
- name: mart_week
  partition: week
  upstream: [fct_sales]
  command: ["/bin/true"]
- name: mart_month
  partition: month
  upstream: [fct_sales]
  command: ["/bin/true"]
"""


def script(shell):
    """backfillctl completion SHELL, which must exit 0 with nothing on stderr."""
    _, ctl = h.binaries()
    p = subprocess.run([ctl, "completion", shell], capture_output=True, text=True,
                       timeout=30)
    h.eq(p.returncode, 0, "backfillctl completion %s: exit (stderr %r)" % (shell, p.stderr))
    h.eq(p.stderr, "", "backfillctl completion %s: stderr" % shell)
    return p.stdout


def installed(name):
    """The script the build writes for installation (completion/NAME)."""
    _, ctl = h.binaries()
    path = os.path.join(os.path.dirname(os.path.dirname(ctl)), "completion", name)
    with open(path) as f:
        return f.read()


def bash_complete(path, words, cwd):
    """COMPREPLY of _backfillctl for the command line words (the last one
    is being typed), in a bash that sourced path."""
    _, ctl = h.binaries()
    words = [ctl] + list(words)
    arr = " ".join("'%s'" % w.replace("'", "'\\''") for w in words)
    prog = ("source %s || exit 9\n"
            "COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()\n"
            "_backfillctl\n"
            "printf '%%s\\n' \"${COMPREPLY[@]}\"\n" % (path, arr))
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", prog], capture_output=True,
                       text=True, timeout=30, cwd=cwd)
    h.eq(p.returncode, 0, "bash completion of %r: exit (stderr %r)" % (words, p.stderr))
    h.eq(p.stderr, "", "bash completion of %r: stderr" % words)
    return [w for w in p.stdout.split("\n") if w]


def check_bash(d, tmp):
    text = script("bash")
    h.eq(text, installed("backfillctl"), "the installed bash script is what "
         "'backfillctl completion bash' prints")
    path = os.path.join(tmp, "backfillctl.bash")
    with open(path, "w") as f:
        f.write(text)
    p = subprocess.run(["bash", "--norc", "-c", "source %s && complete -p backfillctl" % path],
                       capture_output=True, text=True, timeout=30)
    h.check(p.returncode == 0 and "-F _backfillctl" in p.stdout,
            "bash: the script registers no completion: %r %r" % (p.stdout, p.stderr))
    h.eq(bash_complete(path, ["ba"], tmp), ["backfill"], "bash: command 'ba'")
    h.eq(bash_complete(path, ["re"], tmp), ["rerun", "resume", "retry", "reload", "report"],
         "bash: commands 're'")
    h.eq(bash_complete(path, ["backfill", "--re"], tmp), ["--reprocess", "--reverse", "--reason"],
         "bash: options of backfill '--re'")
    h.eq(bash_complete(path, ["backfill", "x", "--reprocess", ""], tmp),
         ["all", "failed", "missing"], "bash: values of --reprocess")
    h.eq(bash_complete(path, ["completion", ""], tmp), ["bash", "zsh"], "bash: completion's SHELL")
    dates = os.path.join(tmp, "dates-feb.txt")
    with open(dates, "w") as f:
        f.write("2026-02-01\n")
    for words in (["backfill", "x", "--dates-file", dates[:-6]], ["report", "--html", dates[:-6]],
                  ["--config", dates[:-6]], ["status", "--socket", dates[:-6]]):
        h.eq(bash_complete(path, words, tmp), [dates], "bash: a file for %s" % words[-2])
    sock = ["--socket", d.sock]
    h.eq(sorted(bash_complete(path, sock + ["backfill", ""], tmp)),
         ["fct_sales", "mart_month", "mart_week"], "bash: the daemon's jobs for backfill's JOB")
    h.eq(bash_complete(path, sock + ["rerun", "mart_m"], tmp), ["mart_month"],
         "bash: a job by its prefix")
    h.eq(bash_complete(path, ["runs", "--limit", "3"] + sock + ["--job", "f"], tmp),
         ["fct_sales"], "bash: --job's value, the socket given after the command")
    h.eq(bash_complete(path, ["--config", d.conf, "backfill", "fct_sales", "--downstream",
                              "mart_week,mart_m"], tmp),
         ["mart_week,mart_month"], "bash: the list of --downstream, socket from --config")
    h.eq(bash_complete(path, sock + ["rerun", "fct_sales", ""], tmp), [],
         "bash: PARTITION: no suggestion")
    t0 = time.monotonic()
    h.eq(bash_complete(path, ["--socket", os.path.join(tmp, "none.sock"), "pause", ""], tmp), [],
         "bash: no daemon, no job")
    h.check(time.monotonic() - t0 < 10, "bash: completing with no daemon took %.1f s"
            % (time.monotonic() - t0))
    # a socket that accepts and never answers: the 2 s bound, then nothing
    hung = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    hung.bind(os.path.join(tmp, "hung.sock"))
    hung.listen(8)
    try:
        t0 = time.monotonic()
        h.eq(bash_complete(path, ["--socket", os.path.join(tmp, "hung.sock"), "pause", ""],
                           tmp), [], "bash: a daemon that does not answer, no job")
        took = time.monotonic() - t0
    finally:
        hung.close()
    h.check(1.5 <= took < 10, "bash: completing against a socket that never answers "
            "took %.1f s (the bound is 2 s)" % took)


class Zsh:
    """An interactive zsh on a pseudo-terminal, its completion system
    loaded from the folder fpath_dir, each match printed by a compadd
    wrapper between markers."""

    def __init__(self, fpath_dir, cwd):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.chdir(cwd)
            os.environ["TERM"] = "xterm"
            os.execvp("zsh", ["zsh", "-f", "-i"])
        self.buf = b""
        self.send("PS1='%% '; unset zle_bracketed_paste; fpath=(%s $fpath); "
                  "autoload -U compinit; compinit -u -D\n" % fpath_dir)
        # every match added is printed (a call that only computes, with
        # -O, -A or -D, is passed through), and a TAB ends with a marker
        self.send("compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then "
                  "builtin compadd \"$@\"; return; fi; local -a __hits; "
                  "builtin compadd -A __hits \"$@\"; local w; for w in $__hits; do "
                  "print -r -- \"<hit>$w</hit>\"; done; builtin compadd \"$@\"; }\n")
        self.send("_bfd_tab() { zle complete-word; print -r -- '<end/>'; }; "
                  "zle -N _bfd_tab; bindkey '^I' _bfd_tab\n")
        self.send("echo ready-$((6*7))\n")
        self.read_until(b"ready-42")

    def send(self, s):
        os.write(self.fd, s.encode())

    def read_until(self, marker, timeout=20):
        end = time.monotonic() + timeout
        while marker not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                h.fail("zsh: no %r within %d s; output:\n%s"
                       % (marker, timeout, self.buf[-3000:].decode(errors="replace")))
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    h.fail("zsh exited; output:\n%s" % self.buf.decode(errors="replace"))
                self.buf += chunk
        out, self.buf = self.buf.split(marker, 1)
        return out

    def complete(self, line):
        """The matches zsh offers for line (TAB at its end)."""
        self.buf = b""
        self.send(line + "\t")
        out = self.read_until(b"<end/>").decode(errors="replace")
        self.send("\x15")  # ^U: kill the line
        return sorted(set(re.findall(r"<hit>(.*?)</hit>", out)))

    def close(self):
        try:
            self.send("\x15exit\n")
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        os.close(self.fd)


def check_zsh(d, tmp):
    text = script("zsh")
    h.eq(text, installed("_backfillctl"), "the installed zsh script is what "
         "'backfillctl completion zsh' prints")
    fdir = os.path.join(tmp, "zfunc")
    os.mkdir(fdir)
    with open(os.path.join(fdir, "_backfillctl"), "w") as f:
        f.write(text)
    bindir = os.path.join(tmp, "bin")
    os.mkdir(bindir)
    _, ctl = h.binaries()
    os.symlink(ctl, os.path.join(bindir, "backfillctl"))
    z = Zsh(fdir, tmp)
    try:
        z.send("path=(%s $path)\n" % bindir)
        z.send("echo path-$((6*7))\n")
        z.read_until(b"path-42")
        hits = z.complete("backfillctl ba")
        h.check("backfill" in hits, "zsh: command 'ba': %r" % hits)
        hits = z.complete("backfillctl backfill --re")
        for o in ("--reprocess", "--reverse", "--reason"):
            h.check(o in hits, "zsh: option %s of backfill '--re': %r" % (o, hits))
        h.check("--from" not in hits, "zsh: '--re' offers --from: %r" % hits)
        hits = z.complete("backfillctl backfill x --reprocess ")
        h.eq(hits, ["all", "failed", "missing"], "zsh: values of --reprocess")
        hits = z.complete("backfillctl --socket %s backfill " % d.sock)
        h.eq(hits, ["fct_sales", "mart_month", "mart_week"],
             "zsh: the daemon's jobs for backfill's JOB")
        hits = z.complete("backfillctl --config %s rerun mart_w" % d.conf)
        h.check("mart_week" in hits and "fct_sales" not in hits,
                "zsh: a job by its prefix, socket from --config: %r" % hits)
        hits = z.complete("backfillctl completion ")
        h.eq(hits, ["bash", "zsh"], "zsh: completion's SHELL")
    finally:
        z.close()
    # loaded with source (not from fpath): it registers itself
    p = subprocess.run(["zsh", "-f", "-c", "autoload -U compinit; compinit -u -D; "
                        "source <(%s completion zsh) && print -r -- $_comps[backfillctl]" % ctl],
                       capture_output=True, text=True, timeout=30)
    h.eq(p.stdout.strip(), "_backfillctl", "zsh: source <(backfillctl completion zsh) "
         "registers _backfillctl (stderr %r)" % p.stderr)


def test_refused():
    _, ctl = h.binaries()
    p = subprocess.run([ctl, "completion", "fish"], capture_output=True, text=True, timeout=30)
    h.eq(p.returncode, 2, "completion fish: exit")
    h.eq(p.stdout, "", "completion fish: stdout")
    h.check(p.stderr.count("\n") == 1 and "bash" in p.stderr and "zsh" in p.stderr,
            "completion fish: one line naming the shells: %r" % p.stderr)
    p = subprocess.run([ctl, "completion"], capture_output=True, text=True, timeout=30)
    h.eq(p.returncode, 2, "completion without SHELL: exit")
    h.check("SHELL" in p.stderr and p.stderr.count("\n") == 1, "stderr: %r" % p.stderr)


def test_completion():
    d = h.Daemon(jobs=JOBS, name="compl")
    tmp = tempfile.mkdtemp(prefix="bfd-compl-")
    try:
        check_bash(d, tmp)
        if shutil.which("zsh"):
            check_zsh(d, tmp)
        elif os.environ.get("BACKFILLD_REQUIRE_ZSH") == "1":
            h.fail("zsh is not installed (apt-get install zsh) and BACKFILLD_REQUIRE_ZSH=1")
        else:
            print("zsh is not installed: its part is skipped")
    finally:
        shutil.rmtree(tmp)
    d.stop()


if __name__ == "__main__":
    h.main([test_refused, test_completion])
