#!/usr/bin/env python3
"""Runs pami-conformance under pamirun with --tap and --junit and checks
the outcome with real parsers: a TAP 13 consumer (below) and
xml.etree for the JUnit file. Passes when exactly the cases named with
--expect-fail failed (none by default), every other selected case passed
or was skipped, the two outputs agree, and the exit status matches.

  conformance_check.py PAMIRUN RUNNER -n N [--expect-fail ID]...
      [--expect-timeout ID]... [--expect-cases K] -- RUNNER-ARGS...
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET


def parse_tap(text):
    """A TAP 13 consumer: version line, plan, test points with
    directives, YAML diagnostics. Returns (plan, [(num, ok, name, skip,
    yaml)]). Lines that are not TAP are ignored, as TAP 13 says."""
    lines = text.splitlines()
    i = 0
    while i < len(lines) and not lines[i].startswith("TAP version"):
        i += 1
    if i == len(lines) or lines[i].strip() != "TAP version 13":
        raise ValueError("no 'TAP version 13' line")
    plan = None
    points = []
    point_re = re.compile(r"^(not ok|ok)\s+(\d+)\s*(?:-\s*)?([^#]*?)\s*"
                          r"(?:#\s*(SKIP|TODO)\b\s*(.*))?$", re.I)
    i += 1
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^1\.\.(\d+)\s*(#.*)?$", line)
        if m:
            if plan is not None:
                raise ValueError("two plans")
            plan = int(m.group(1))
            i += 1
            continue
        m = point_re.match(line)
        if m:
            yaml = {}
            if i + 1 < len(lines) and lines[i + 1].strip() == "---":
                j = i + 2
                while j < len(lines) and lines[j].strip() != "...":
                    kv = re.match(r"^\s+(\w+):\s*(.*)$", lines[j])
                    if kv:
                        yaml[kv.group(1)] = kv.group(2)
                    j += 1
                if j == len(lines):
                    raise ValueError("YAML block without '...'")
                i = j
            points.append((int(m.group(2)), m.group(1).lower() == "ok",
                           m.group(3), (m.group(4) or "").upper() == "SKIP",
                           yaml))
        i += 1
    if plan is None:
        raise ValueError("no plan")
    if len(points) != plan:
        raise ValueError("plan says %d tests, saw %d" % (plan, len(points)))
    for k, p in enumerate(points, 1):
        if p[0] != k:
            raise ValueError("test %d numbered %d" % (k, p[0]))
    return plan, points


def parse_junit(path):
    root = ET.parse(path).getroot()
    if root.tag != "testsuites":
        raise ValueError("root is <%s>, not <testsuites>" % root.tag)
    cases = {}
    total = 0
    for suite in root.findall("testsuite"):
        n = 0
        for tc in suite.findall("testcase"):
            n += 1
            kinds = [c.tag for c in tc if c.tag in
                     ("failure", "error", "skipped")]
            cases[tc.get("name")] = kinds[0] if kinds else "pass"
            if kinds and kinds[0] != "skipped" and \
                    not tc.find(kinds[0]).get("message"):
                raise ValueError("%s: a %s without a message" %
                                 (tc.get("name"), kinds[0]))
        if int(suite.get("tests")) != n:
            raise ValueError("suite %s says %s tests, has %d" %
                             (suite.get("name"), suite.get("tests"), n))
        total += n
    if int(root.get("tests")) != total:
        raise ValueError("testsuites says %s tests, has %d" %
                         (root.get("tests"), total))
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pamirun")
    ap.add_argument("runner")
    ap.add_argument("-n", type=int, required=True)
    ap.add_argument("--expect-fail", action="append", default=[])
    ap.add_argument("--expect-timeout", action="append", default=[])
    ap.add_argument("--expect-cases", type=int, default=None)
    ap.add_argument("--job-timeout", type=int, default=400)
    ap.add_argument("--mpirun", action="store_true",
                    help="PAMIRUN is Open MPI's mpirun (the pmix bootstrap)")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    rest = argv[cut + 1:]
    with tempfile.TemporaryDirectory() as tmp:
        junit = os.path.join(tmp, "out.xml")
        if a.mpirun:
            launch = [a.pamirun, "--allow-run-as-root", "--oversubscribe",
                      "-np", str(a.n)]
        else:
            launch = [a.pamirun, "-n", str(a.n), "--timeout",
                      str(a.job_timeout)]
        cmd = launch + [a.runner, "--tap", "--junit", junit] + rest
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               timeout=a.job_timeout + 30)
        except subprocess.TimeoutExpired:
            print("FAIL: the job did not end within %d s" %
                  (a.job_timeout + 30))
            return 1
        sys.stdout.write(p.stdout)
        errs = [l for l in p.stderr.splitlines() if "pami warn" not in l]
        if errs:
            sys.stdout.write("--- stderr (warn lines left out) ---\n" +
                             "\n".join(errs[-40:]) + "\n")
        problems = []
        try:
            plan, points = parse_tap(p.stdout)
        except ValueError as e:
            print("FAIL: TAP output does not parse: %s" % e)
            return 1
        try:
            junit_cases = parse_junit(junit)
        except (ValueError, ET.ParseError, OSError) as e:
            print("FAIL: JUnit output does not parse: %s" % e)
            return 1
    failed = {name for _, ok, name, _, _ in points if not ok}
    for _, ok, name, skip, yaml in points:
        if not ok and not yaml.get("message"):
            problems.append("%s failed without a message" % name)
        want = ("skipped" if skip else "pass") if ok else None
        got = junit_cases.get(name)
        if got is None:
            problems.append("%s is in TAP but not in JUnit" % name)
        elif want is not None and got != want:
            problems.append("%s: TAP says %s, JUnit %s" % (name, want, got))
        elif want is None and got not in ("failure", "error"):
            problems.append("%s: TAP says failed, JUnit %s" % (name, got))
    if len(junit_cases) != plan:
        problems.append("JUnit has %d cases, TAP %d" % (len(junit_cases),
                                                        plan))
    for _, ok, name, _, yaml in points:
        timed_out = yaml.get("status", "").strip('"') == "TIMEOUT"
        if timed_out != (name in a.expect_timeout):
            problems.append("%s: expected %s, saw status %s" % (
                name, "a timeout" if name in a.expect_timeout
                else "no timeout", yaml.get("status", "PASS")))
        if timed_out and "no result within" not in yaml.get("message", ""):
            problems.append("%s: a timeout that does not say so" % name)
    expected = set(a.expect_fail) | set(a.expect_timeout)
    if failed != expected:
        problems.append("expected exactly %s to fail, saw %s" %
                        (sorted(expected) or "nothing", sorted(failed)))
    if (p.returncode == 0) != (not failed):
        problems.append("exit status %d with %d failed cases" %
                        (p.returncode, len(failed)))
    if a.expect_cases is not None and plan != a.expect_cases:
        problems.append("expected %d cases, saw %d" % (a.expect_cases, plan))
    if plan == 0:
        problems.append("no cases ran")
    for pr in problems:
        print("FAIL: " + pr)
    if not problems:
        print("OK: %d cases, failed exactly %s" % (plan, sorted(failed)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
