#!/usr/bin/env python3
"""Summarizes collective runs of pami-bench --json --vs-mpi as Markdown.

    coll_table.py [--compact] RUN.json...

Each file holds the JSON lines of one run (any number of tasks; pamirun's
"[0] " prefixes are ignored). Prints one row per collective and size, and
for each task count the best named pami algorithm (lowest pami median),
its pami median in us, Open MPI's in us and their ratio, then AUTO's
ratio; and a list of the rows whose best ratio is above 1.5. Every line
of a size measured Open MPI again, moments apart from its pami side: the
Open MPI value of a row is the median of those lines' mpi medians, which
one disturbed line does not move. --compact: per task count only the
best algorithm, "pami / mpi" in us and the ratio (AUTO's in brackets).
"""
import json
import re
import statistics
import sys

ORDER = ["allreduce", "broadcast", "allgather", "alltoall", "reduce_scatter"]
PREFIX = re.compile(r"^\[\d+\] ")


def collective(test):
    for c in ORDER:
        if test.startswith(c + "_"):
            return c, test[len(c) + 1:]
    return None, None


def load(paths):
    rows = {}  # (coll, bytes) -> tasks -> {algo: line}
    for path in paths:
        with open(path) as f:
            for raw in f:
                raw = PREFIX.sub("", raw).strip()
                if not raw.startswith("{"):
                    continue
                obj = json.loads(raw)
                coll, algo = collective(obj["test"])
                if coll is None or obj.get("pami") is None:
                    continue
                rows.setdefault((coll, obj["bytes"]), {}).setdefault(
                    obj["tasks"], {})[algo] = obj
    return rows


def size(b):
    if b >= 1 << 20:
        return "%d MiB" % (b >> 20)
    if b >= 1 << 10:
        return "%d KiB" % (b >> 10)
    return "%d B" % b


def us(v):
    return "%.0f" % v if v >= 100 else "%.3g" % v


def main(paths):
    compact = paths[:1] == ["--compact"]
    paths = paths[1:] if compact else paths
    rows = load(paths)
    tasks = sorted({t for r in rows.values() for t in r})
    head = ["collective", "bytes"]
    for t in tasks:
        if compact:
            head += ["%d tasks: best" % t, "pami / mpi us", "ratio (auto)"]
        else:
            head += ["%d: best" % t, "pami us", "mpi us", "ratio", "auto"]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    misses = []
    for coll in ORDER:
        for b in sorted(k[1] for k in rows if k[0] == coll):
            cells = [coll, size(b)]
            for t in tasks:
                algos = rows[(coll, b)].get(t, {})
                named = {a: o for a, o in algos.items() if a != "auto"}
                if not named:
                    cells += ["-"] * (3 if compact else 5)
                    continue
                a, o = min(named.items(), key=lambda kv: kv[1]["pami"])
                mpis = [x["mpi"] for x in algos.values() if x.get("mpi")]
                mpi = statistics.median(mpis) if mpis else None
                r = o["pami"] / mpi if mpi else None
                auto = algos.get("auto", {}).get("pami")
                auto = auto / mpi if auto and mpi else None
                if compact:
                    cells += [a, "%s / %s" % (us(o["pami"]),
                                              us(mpi) if mpi else "-"),
                              ("%.2f" % r if r else "-") +
                              (" (%.2f)" % auto if auto else "")]
                else:
                    cells += [a, "%.1f" % o["pami"],
                              "%.1f" % mpi if mpi else "-",
                              "%.2f" % r if r else "-",
                              "%.2f" % auto if auto else "-"]
                if r and r > 1.5:
                    misses.append("%s %s at %d tasks: %s %.2f" %
                                  (coll, size(b), t, a, r))
            print("| " + " | ".join(cells) + " |")
    if misses:
        print("\nabove 1.5 x Open MPI (best named algorithm):")
        for m in misses:
            print("- " + m)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1:])
