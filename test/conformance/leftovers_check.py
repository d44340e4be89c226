#!/usr/bin/env python3
"""The runner removes what a case process killed mid-way leaves in
/dev/shm (docs/conformance.md, "Leftovers"). Runs the runner's selftest
suite: in case 1 every task allocates a shared region and is killed
(SIGKILL), in case 2 every task allocates one and hangs until the runner
kills it at --timeout. Each task prints the names of its job's objects on
stderr. Passes when case 1 is CRASH and case 2 TIMEOUT, each task named
at least its own segment, case 1's names were gone already while case 2
ran (removed after each case, not at the end) and no name is left when
the runner ends.

  leftovers_check.py PAMIRUN RUNNER N
"""
import os
import re
import subprocess
import sys


def main():
    pamirun, runner, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cmd = [pamirun, "-n", str(n), runner, "--suite", "selftest",
           "--timeout", "10", "--tap"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    left = re.compile(r"selftest: left (/dev/shm/pami-(oob-[0-9a-f-]+?)-"
                      r"mr-(\d+)-\S+)")
    by_job = {}       # job key -> names, in the order the jobs appeared
    early_gone = None  # case 1's names checked while case 2 ran
    errors = []
    for line in p.stderr:
        sys.stderr.write(line)
        m = left.search(line)
        if not m:
            continue
        by_job.setdefault(m.group(2), set()).add((m.group(1),
                                                  int(m.group(3))))
        if len(by_job) == 2 and early_gone is None:
            first = next(iter(by_job.values()))
            early_gone = [path for path, _ in first if os.path.exists(path)]
    out, _ = p.communicate(timeout=300)
    sys.stdout.write(out)
    if p.returncode != 1:
        errors.append("expected exit status 1, seen %d" % p.returncode)
    statuses = re.findall(r"^not ok \d+ - (\S+)\n\s+---\n\s+status: (\w+)",
                          out, re.M)
    want = [("selftest.killed_with_region", "CRASH"),
            ("selftest.hangs_with_region", "TIMEOUT")]
    if statuses != want:
        errors.append("expected %s, seen %s" % (want, statuses))
    if len(by_job) != 2:
        errors.append("expected the names of 2 jobs on stderr, seen %d"
                      % len(by_job))
    for job, names in by_job.items():
        tasks = {t for _, t in names}
        if tasks != set(range(n)):
            errors.append("job %s: expected a segment of every task, seen "
                          "tasks %s" % (job, sorted(tasks)))
    if early_gone:
        errors.append("expected case 1's objects removed before case 2 "
                      "ran, seen %s" % early_gone)
    after = sorted(path for names in by_job.values() for path, _ in names
                   if os.path.exists(path))
    if after:
        errors.append("expected no object left, seen %s" % after)
        for path in after:
            os.unlink(path)
    for e in errors:
        print("leftovers_check: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
