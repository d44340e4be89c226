#!/usr/bin/env python3
"""Turns measured profiles (pami-tune's JSON, docs/tuning.md) into the C
table of AUTO's built-in rules (coll_builtin.c reads it; docs/tuning.md,
"Built-in rules").

  gen_builtin_rules.py -o OUT.c --sticky-from coll_profile.h PROFILE.json...

Per shape (size, nodes, tasks per node), collective and type class: one
row per measured size, "from lo bytes: these algorithms, best first",
as coll_table.c chooses: per round of measurement the mean of the
medians of the class's types and ops at that size, each algorithm's
worst ratio to the fastest of a round, and the smallest worst ratio
first among those measured in the most rounds (minimax regret; with one
round: fastest first); the previous size's first stays first when its
worst ratio is within COLL_TABLE_STICKY of the first's and the next
size's first is it again, read from coll_profile.h so that a profile's
tables and the built-in rules follow one rule. The row bounds as
coll_table.c draws them (the nearest measured size in log scale, half
the first size, twice the last). Failed points are left out. A later
file's points replace earlier files' points with the same key and round
(coll_profile_merge).
"""
import json
import math
import re
import sys

KINDS = ["barrier", "broadcast", "reduce", "allreduce", "allgather",
         "gather", "scatter", "alltoall", "reduce_scatter", "scan", "exscan",
         "allgatherv", "gatherv", "scatterv", "alltoallv"]
REDUCES = {"reduce", "allreduce", "reduce_scatter", "scan", "exscan"}
TYPES = ["byte", "int8", "int16", "int32", "int64", "uint8", "uint16",
         "uint32", "uint64", "float", "double", "long_double"]
MAX_ALGOS = 8  # per row: the runtime takes the first the call can run
# Collectives that keep their hand-set rule: on a node the barrier is the
# shared register whatever a sweep measured (the only barrier that does
# not grow with n; docs/collectives.md).
HAND_SET = {"barrier"}


def tclass(kind, typ, op):
    """coll_tclass() of coll_table.c."""
    if kind not in REDUCES:
        return 0
    c = {"int64": 2, "uint64": 2, "float": 3, "double": 4,
         "long_double": 4}.get(typ, 1)
    return c + 5 if op == "user" else c


def load(paths):
    """{(shape..., collective, type, op, bytes, algorithm): {round: us}}"""
    points = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            prof = json.load(f)
        if prof.get("format_version") not in (1, 2):
            sys.exit("%s: format_version %r is not 1 or 2" %
                     (path, prof.get("format_version")))
        nrounds = max(1, len(prof.get("rounds", [])))
        for e in prof["entries"]:
            if "metrics" not in e or e.get("failed"):
                continue
            if e["collective"] not in KINDS or e["type"] not in TYPES:
                sys.exit("%s: unknown collective or type in %r" % (path, e))
            s = e["shape"]
            key = (s["size"], s["nodes"], s["tasks_per_node"], s["layout"],
                   e["collective"], e["type"], e["op"], e["bytes"],
                   e["algorithm"])
            rnd = e.get("round", 0)
            if not isinstance(rnd, int) or not 0 <= rnd < nrounds:
                sys.exit("%s: round %r of %r" % (path, rnd, e))
            us = float(e["metrics"]["median_us"])
            points.setdefault(key, {})[rnd] = us
    return points


def sticky_from(header):
    """COLL_TABLE_STICKY as coll_profile.h defines it."""
    with open(header, encoding="utf-8") as f:
        m = re.search(r"^#define COLL_TABLE_STICKY ([0-9.]+)\s*$", f.read(),
                      re.M)
    if m is None:
        sys.exit("%s: no '#define COLL_TABLE_STICKY <number>' line" % header)
    return float(m.group(1))


def rows_of(points, sticky):
    """{(size, nodes, ppn, kind, class): [(bytes, [algo...])]} for the
    contiguous layout (the world's and the built-in rules' shape)."""
    agg = {}
    for (size, nodes, ppn, layout, kind, typ, op, nbytes, algo), by_round \
            in points.items():
        if layout != "contiguous" or kind in HAND_SET:
            continue
        span = (size, nodes, ppn, kind, tclass(kind, typ, op))
        cell = agg.setdefault(span, {}).setdefault(nbytes, {})
        for rnd, us in by_round.items():
            tot, n = cell.get((algo, rnd), (0.0, 0))
            cell[(algo, rnd)] = (tot + us, n + 1)
    out = {}
    for span, by_bytes in agg.items():
        rows, prev = [], None
        sizes = sorted(by_bytes)
        scores = [score(by_bytes[b]) for b in sizes]
        for i, nbytes in enumerate(sizes):
            sc = scores[i]
            order = sorted(sc, key=lambda a: (-sc[a][0], sc[a][1], a))
            nxt = min(scores[i + 1],
                      key=lambda a: (-scores[i + 1][a][0],
                                     scores[i + 1][a][1], a)) \
                if i + 1 < len(sizes) else None
            # Noise must not flip the choice at one size between two
            # that agree: the previous size's first stays first within
            # sticky when the next size's first is it again (not at a
            # crossover, nor at the last size: coll_table.c).
            if prev in sc and prev != order[0] and prev == nxt and \
                    sc[prev][0] == sc[order[0]][0] and \
                    sc[prev][1] <= sticky * sc[order[0]][1]:
                order.remove(prev)
                order.insert(0, prev)
            prev = order[0]
            rows.append((nbytes, order[:MAX_ALGOS]))
        out[span] = rows
    return out


def score(cell):
    """{algo: (rounds measured, worst ratio to a round's fastest)} of one
    size, from {(algo, round): (sum, n)}: coll_table.c's choose()."""
    mean = {k: t / n for k, (t, n) in cell.items()}
    best = {}
    for (algo, rnd), us in mean.items():
        best[rnd] = min(best.get(rnd, us), us)
    out = {}
    for (algo, rnd), us in mean.items():
        b = best[rnd]
        ratio = us / b if b > 0 else (math.inf if us > 0 else 1.0)
        cover, worst = out.get(algo, (0, 0.0))
        out[algo] = (cover + 1, max(worst, ratio))
    return out


def c_string(s):
    if any(c in s for c in '"\\\n') or not s.isprintable():
        sys.exit("algorithm name %r cannot be written" % s)
    return '"%s"' % s


def emit(spans, sources, f):
    w = f.write
    w("/* Generated by collectives/gen_builtin_rules.py from %s:\n"
      " * do not edit; change the profiles and rebuild. */\n"
      % ", ".join(sources))
    w('#include "coll_builtin.h"\n\n')
    names = {}
    for rows in spans.values():
        for _, algos in rows:
            names.setdefault(tuple(algos), "a%d" % len(names))
    for algos, name in names.items():
        w("static const char *const %s[] = {%s, NULL};\n"
          % (name, ", ".join(c_string(a) for a in algos)))
    w("\nconst coll_builtin_row_t coll_builtin_rows[] = {\n")
    table, first = [], 0
    for span in sorted(spans, key=lambda s: (KINDS.index(s[3]), s[4],
                                              s[0], s[1], s[2])):
        rows, prev = spans[span], 0
        for i, (nbytes, algos) in enumerate(rows):
            if i == 0:
                lo = nbytes // 2
            elif prev == 0:
                lo = 1
            else:
                lo = math.isqrt(prev * nbytes) + 1
            w("    {%dull, %dull, %s},\n" % (lo, nbytes, names[tuple(algos)]))
            prev = nbytes
        table.append((span, first, len(rows), prev * 2))
        first += len(rows)
    if first == 0:
        w("    {0, 0, NULL},\n")
    w("};\n\nconst coll_builtin_span_t coll_builtin_spans[] = {\n")
    for (size, nodes, ppn, kind, cls), first_row, n, hi in table:
        w("    {PAMI_XFER_%s, %d, %d, %d, %d, %d, %d, %dull},\n"
          % (kind.upper(), cls, size, nodes, ppn, first_row, n, hi))
    if not table:
        w("    {PAMI_XFER_COUNT, 0, 0, 0, 0, 0, 0, 0},\n")
    w("};\n\nconst size_t coll_builtin_nspans = %d;\n" % len(table))


def main(argv):
    if len(argv) < 6 or argv[1] != "-o" or argv[3] != "--sticky-from":
        sys.exit("usage: gen_builtin_rules.py -o OUT.c --sticky-from "
                 "coll_profile.h PROFILE.json...")
    spans = rows_of(load(argv[5:]), sticky_from(argv[4]))
    names = [p.rsplit("/", 1)[-1] for p in argv[5:]]
    with open(argv[2], "w", encoding="utf-8") as f:
        emit(spans, names, f)


if __name__ == "__main__":
    main(sys.argv)
