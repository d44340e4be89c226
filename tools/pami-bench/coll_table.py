#!/usr/bin/env python3
"""Summarizes collective runs of pami-bench --json --vs-mpi as Markdown.

    coll_table.py [--compact] RUN.json...

Each file holds the JSON lines of one run (any number of tasks; the "[0] "
prefixes of pamirun --tag-output are ignored). Prints one row per collective and size, and
for each task count the best named pami algorithm (lowest pami median),
its pami median in us, Open MPI's in us and their ratio, then AUTO's
ratio; and a list of the rows whose best ratio is above 1.5. Every line
of a size measured Open MPI again, moments apart from its pami side: the
Open MPI value of a row is the median of those lines' mpi medians, which
one disturbed line does not move. --compact: per task count only the
best algorithm, "pami / mpi" in us and the ratio (AUTO's in brackets).

Several runs of one task count (one file each) are passes: a cell then
shows the median over the passes of each pass's best ratio, with their
range, the algorithm best in most passes, and the medians of the pami
and Open MPI values; the list of misses uses the median ratio.
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
    rows = {}  # (coll, bytes) -> tasks -> [{algo: line} per file]
    for path in paths:
        seen = {}
        with open(path) as f:
            for raw in f:
                raw = PREFIX.sub("", raw).strip()
                if not raw.startswith("{"):
                    continue
                obj = json.loads(raw)
                coll, algo = collective(obj["test"])
                if coll is None or obj.get("pami") is None:
                    continue
                key = (coll, obj["bytes"], obj["tasks"])
                if key not in seen:
                    seen[key] = {}
                    rows.setdefault(key[:2], {}).setdefault(
                        obj["tasks"], []).append(seen[key])
                seen[key][algo] = obj
    return rows


def one_pass(algos):
    """(best algorithm, pami us, mpi us, ratio, auto ratio) of one run."""
    named = {a: o for a, o in algos.items() if a != "auto"}
    if not named:
        return None
    a, o = min(named.items(), key=lambda kv: kv[1]["pami"])
    mpis = [x["mpi"] for x in algos.values() if x.get("mpi")]
    mpi = statistics.median(mpis) if mpis else None
    r = o["pami"] / mpi if mpi else None
    auto = algos.get("auto", {}).get("pami")
    auto = auto / mpi if auto and mpi else None
    return a, o["pami"], mpi, r, auto


def median_or_none(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


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
                passes = [p for p in map(one_pass,
                                         rows[(coll, b)].get(t, []))
                          if p is not None]
                if not passes:
                    cells += ["-"] * (3 if compact else 5)
                    continue
                names = [p[0] for p in passes]
                a = max(set(names), key=names.count)
                pami = median_or_none([p[1] for p in passes])
                mpi = median_or_none([p[2] for p in passes])
                ratios = [p[3] for p in passes if p[3] is not None]
                r = median_or_none(ratios)
                auto = median_or_none([p[4] for p in passes])
                rtext = "%.2f" % r if r else "-"
                if len(ratios) > 1:
                    rtext += " [%.2f..%.2f]" % (min(ratios), max(ratios))
                if compact:
                    cells += [a, "%s / %s" % (us(pami),
                                              us(mpi) if mpi else "-"),
                              rtext + (" (%.2f)" % auto if auto else "")]
                else:
                    cells += [a, "%.1f" % pami,
                              "%.1f" % mpi if mpi else "-", rtext,
                              "%.2f" % auto if auto else "-"]
                if r and r > 1.5:
                    misses.append("%s %s at %d tasks: %s %s" %
                                  (coll, size(b), t, a, rtext))
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
