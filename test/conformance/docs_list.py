#!/usr/bin/env python3
"""docs/conformance.md lists every case: each case id that
`pami-conformance --list` prints (built-in suites, the generic plug-in
suite and the example plug-ins' own cases) must appear in the doc's
tables as `name` under its suite's heading.

  docs_list.py RUNNER DOC PLUGIN...
"""
import re
import subprocess
import sys


def main():
    runner, doc = sys.argv[1], sys.argv[2]
    cmd = [runner, "--list", "--suite", "all", "--suite", "selftest"]
    for p in sys.argv[3:]:
        cmd += ["--protocol", p]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True,
                         timeout=60).stdout.split()
    text = open(doc).read()
    # The doc's case tables: "### suite..." headings, rows "| `name` |".
    sections = {}
    current = None
    for line in text.splitlines():
        h = re.match(r"^### ([a-z]+)", line)
        if h:
            current = h.group(1)
            sections.setdefault(current, set())
            continue
        row = re.match(r"^\| `([A-Za-z0-9_.-]+)` \|", line)
        if row and current is not None:
            sections[current].add(row.group(1))
    missing = []
    for cid in out:
        suite, name = cid.split(".")[0], cid.split(".")[-1]
        if name not in sections.get(suite, set()):
            missing.append(cid)
    if not out:
        print("FAIL: --list printed nothing")
        return 1
    for m in missing:
        print("FAIL: %s is not in %s under '### %s'" % (m, doc,
                                                        m.split(".")[0]))
    if not missing:
        print("OK: %d cases, all documented" % len(out))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
