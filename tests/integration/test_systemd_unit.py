"""test_systemd_unit.py - systemd/backfilld.service passes systemd's own checks.

A copy of the unit template with ExecStart pointed at the built backfilld
(env BACKFILLD) is written to a temporary folder, then:

- `systemd-analyze verify --man=no` must exit 0 and print nothing;
- `systemd-analyze security --offline=true` must report an overall exposure
  level of at most 2.0;
- its one condition is ConditionPathExists= on the configuration file
  ExecStart reads (the unit is idle until configured).

No systemd manager is started.  Exit codes (meson): 0 pass, 1 fail, 77 skip
(no systemd-analyze, or no backfilld to point ExecStart at).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
MAX_EXPOSURE = 2.0

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
TEMPLATE = os.path.join(SOURCE_ROOT, "systemd", "backfilld.service.in")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def render(template, backfilld):
    """The unit as meson's configure_file makes it, ExecStart at backfilld."""
    with open(template) as f:
        text = f.read()
    text = text.replace("@sbindir@/backfilld", backfilld)
    text = text.replace("@sysconfdir@", "/etc")
    left = re.findall(r"@[A-Za-z_]+@", text)
    if left:
        fail("%s: unsubstituted variables %s" % (template, sorted(set(left))))
    return text


def check_condition(text):
    """Enabled but idle until configured (docs/operations.md, "The Debian
    package"): the unit starts only when the configuration ExecStart
    names exists, and that is the one condition."""
    conf = re.search(r"^ExecStart=\S+ --config (\S+)$", text, re.M)
    if conf is None:
        fail("ExecStart names no --config file")
    conds = re.findall(r"^(Condition\w+|Assert\w+)=(.*)$", text, re.M)
    if conds != [("ConditionPathExists", conf.group(1))]:
        fail("the unit's conditions are %r, expected ConditionPathExists=%s"
             % (conds, conf.group(1)))
    print("ok   ConditionPathExists=%s, the file ExecStart reads" % conf.group(1))


def run(argv, cwd):
    env = dict(os.environ, SYSTEMD_COLORS="0", SYSTEMD_PAGER="", LC_ALL="C")
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout + p.stderr


def main():
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        print("SKIP: systemd-analyze is not installed")
        sys.exit(SKIP)
    backfilld = os.environ.get("BACKFILLD")
    if not backfilld:
        print("SKIP: set BACKFILLD to the built daemon (meson test does)")
        sys.exit(SKIP)
    backfilld = os.path.abspath(backfilld)
    if not os.access(backfilld, os.X_OK):
        fail("%s is not an executable" % backfilld)
    if not os.path.exists(TEMPLATE):
        fail("no unit template at %s" % TEMPLATE)

    tmp = tempfile.mkdtemp(prefix="bfd-unit-")
    ok = False
    try:
        unit = os.path.join(tmp, "backfilld.service")
        with open(unit, "w") as f:
            f.write(render(TEMPLATE, backfilld))

        check_condition(render(TEMPLATE, backfilld))

        rc, out = run([analyze, "verify", "--man=no", unit], tmp)
        if rc != 0 or out.strip():
            fail("systemd-analyze verify --man=no %s: exit %d, output:\n%s"
                 % (unit, rc, out))
        print("ok   systemd-analyze verify: silent")

        rc, out = run([analyze, "security", "--offline=true", "--no-pager", unit], tmp)
        m = re.search(r"Overall exposure level for \S+:\s*([0-9]+(?:\.[0-9]+)?)", out)
        if m is None:
            fail("systemd-analyze security --offline=true: exit %d, no overall "
                 "exposure level in:\n%s" % (rc, out))
        score = float(m.group(1))
        if score > MAX_EXPOSURE:
            fail("exposure level %.1f above %.1f; the checks that cost:\n%s"
                 % (score, MAX_EXPOSURE,
                    "\n".join(l for l in out.splitlines() if l.startswith("\u2717"))))
        print("ok   systemd-analyze security: exposure %.1f <= %.1f" % (score, MAX_EXPOSURE))
        ok = True
    finally:
        if ok and not os.environ.get("KEEP_TMP"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept %s" % tmp)


if __name__ == "__main__":
    main()
