#!/usr/bin/env python3
"""gen_builtin_rules.py on a synthetic profile: the generated table is
exactly the expected one (rows, bounds, order of the algorithms, the 5 %
stickiness of a size alone between two that agree, read from
coll_profile.h, none at a crossover, type classes averaged, strided and
failed points left out), a profile of two rounds ordered by minimax
regret, and a profile of another format_version or a header without
COLL_TABLE_STICKY is refused.

  builtin_gen_test.py GEN_BUILTIN_RULES.py COLL_PROFILE.H
"""
import json
import os
import re
import subprocess
import sys
import tempfile

SHAPE = {2: {"size": 2, "nodes": 1, "tasks_per_node": 2,
             "layout": "contiguous"},
         4: {"size": 4, "nodes": 1, "tasks_per_node": 4,
             "layout": "contiguous"}}


def entry(coll, algo, n, typ, op, nbytes, us, layout="contiguous"):
    shape = dict(SHAPE[n], layout=layout)
    return {"collective": coll, "algorithm": algo, "shape": shape,
            "type": typ, "op": op, "bytes": nbytes,
            "metrics": {"median_us": us, "min_us": us, "max_us": us,
                        "count": 3}}


RD, RING = "allreduce_recursive_doubling", "allreduce_ring"
ENTRIES = [
    # int32 sum (class 1): 8 B rd; 64 B ring 3 % faster between two sizes
    # of rd: rd stays; 512 B rd; 4 KiB ring 2.5 % faster where 32 KiB is
    # ring's too (a crossover): ring
    entry("allreduce", RD, 2, "int32", "sum", 8, 1.0),
    entry("allreduce", RING, 2, "int32", "sum", 8, 2.0),
    entry("allreduce", RD, 2, "int32", "sum", 64, 1.03),
    entry("allreduce", RING, 2, "int32", "sum", 64, 1.0),
    entry("allreduce", RD, 2, "int32", "sum", 512, 2.0),
    entry("allreduce", RING, 2, "int32", "sum", 512, 3.0),
    entry("allreduce", RD, 2, "int32", "sum", 4096, 4.1),
    entry("allreduce", RING, 2, "int32", "sum", 4096, 4.0),
    entry("allreduce", RD, 2, "int32", "sum", 32768, 9.0),
    entry("allreduce", RING, 2, "int32", "sum", 32768, 5.0),
    # strided: left out, however fast
    entry("allreduce", "allreduce_reduce_broadcast", 2, "int32", "sum", 8,
          0.1, layout="strided"),
    # class 2: int64 and uint64 averaged (rd 2.0, ring 1.5)
    entry("allreduce", RD, 2, "int64", "sum", 8, 1.0),
    entry("allreduce", RD, 2, "uint64", "sum", 8, 3.0),
    entry("allreduce", RING, 2, "int64", "sum", 8, 1.5),
    entry("allreduce", RING, 2, "uint64", "sum", 8, 1.5),
    # user op on double: class 9
    entry("allreduce", RD, 2, "double", "user", 16, 1.0),
    # alltoall on 4 tasks
    entry("alltoall", "alltoall_shm", 4, "byte", "none", 8, 1.0),
    entry("alltoall", "alltoall_pairwise", 4, "byte", "none", 8, 4.0),
    entry("alltoall", "alltoall_shm", 4, "byte", "none", 1024, 9.0),
    entry("alltoall", "alltoall_pairwise", 4, "byte", "none", 1024, 4.0),
    entry("barrier", "barrier_shm", 2, "byte", "none", 0, 0.5),
    entry("barrier", "barrier_packets", 2, "byte", "none", 0, 0.7),
]
FAILED = {"collective": "alltoall", "algorithm": "alltoall_linear",
          "shape": SHAPE[4], "type": "byte", "op": "none", "bytes": 8,
          "failed": "the call failed"}

# kind, class, size, nodes, ppn -> [(lo, point, [algos])], hi
# The barrier keeps its hand-set rule: no span.
EXPECTED = {
    ("ALLREDUCE", 1, 2, 1, 2): ([(4, 8, [RD, RING]), (23, 64, [RD, RING]),
                                 (182, 512, [RD, RING]),
                                 (1449, 4096, [RING, RD]),
                                 (11586, 32768, [RING, RD])], 65536),
    ("ALLREDUCE", 2, 2, 1, 2): ([(4, 8, [RING, RD])], 16),
    ("ALLREDUCE", 9, 2, 1, 2): ([(8, 16, [RD])], 32),
    ("ALLTOALL", 0, 4, 1, 4): ([(4, 8, ["alltoall_shm", "alltoall_pairwise"]),
                                (91, 1024, ["alltoall_pairwise",
                                            "alltoall_shm"])], 2048),
}


def write(path, version=1, entries=None, rounds=None):
    prof = {"format_version": version, "producer": "test",
            "machine": {"cpu": "x", "cores": 2, "nodes": 1,
                        "tasks_per_node": 4},
            "entries": entries if entries is not None
            else ENTRIES + [FAILED]}
    if rounds is not None:
        prof["rounds"] = rounds
    with open(path, "w", encoding="utf-8") as f:
        json.dump(prof, f)


def parse(text):
    arrays = {m.group(1): re.findall(r'"([^"]+)"', m.group(2)) for m in
              re.finditer(r"static const char \*const (\w+)\[\] = "
                          r"\{(.*?)NULL\};", text)}
    rows = [(int(lo), int(pt), arrays[a]) for lo, pt, a in
            re.findall(r"\{(\d+)ull, (\d+)ull, (a\d+)\}", text)]
    spans = {}
    for m in re.finditer(r"\{PAMI_XFER_(\w+), (\d+), (\d+), (\d+), (\d+), "
                         r"(\d+), (\d+), (\d+)ull\}", text):
        kind, cls, size, nodes, ppn, first, n, hi = m.groups()
        key = (kind, int(cls), int(size), int(nodes), int(ppn))
        spans[key] = (rows[int(first):int(first) + int(n)], int(hi))
    count = int(re.search(r"coll_builtin_nspans = (\d+);", text).group(1))
    return spans, count


def main():
    gen, header = sys.argv[1], sys.argv[2]
    sticky = ["--sticky-from", header]
    with tempfile.TemporaryDirectory() as d:
        prof, out = os.path.join(d, "p.json"), os.path.join(d, "t.c")
        write(prof)
        subprocess.run([sys.executable, gen, "-o", out] + sticky + [prof],
                       check=True)
        with open(out, encoding="utf-8") as f:
            spans, count = parse(f.read())
        if spans != EXPECTED or count != len(EXPECTED):
            for k in sorted(set(spans) | set(EXPECTED)):
                if spans.get(k) != EXPECTED.get(k):
                    print("span %r: got %r, want %r" %
                          (k, spans.get(k), EXPECTED.get(k)))
            sys.exit("FAIL: the generated table differs")
        # A later file replaces an earlier one's point.
        later = os.path.join(d, "q.json")
        write(later, entries=[entry("alltoall", "alltoall_pairwise", 4,
                                    "byte", "none", 8, 0.5)])
        subprocess.run([sys.executable, gen, "-o", out] + sticky +
                       [prof, later], check=True)
        with open(out, encoding="utf-8") as f:
            spans, _ = parse(f.read())
        if spans[("ALLTOALL", 0, 4, 1, 4)][0][0][2][0] != \
                "alltoall_pairwise":
            sys.exit("FAIL: the later profile's point did not win")
        # Two rounds (two states of the machine): minimax regret first,
        # neither round's fastest nor the mean's (test_rounds.c).
        two = os.path.join(d, "two.json")
        A2A = ["alltoall_pairwise", "alltoall_shm_cma", "alltoall_shm"]
        rounds = []
        for rnd, times in enumerate([(13, 10, 30), (130, 200, 100)]):
            for algo, us in zip(A2A, times):
                e = entry("alltoall", algo, 4, "byte", "none", 65536, us)
                e["round"] = rnd
                rounds.append(e)
        write(two, version=2, entries=rounds,
              rounds=[{"floor_lat_us": 0.04}, {"floor_lat_us": 0.2}])
        subprocess.run([sys.executable, gen, "-o", out] + sticky + [two],
                       check=True)
        with open(out, encoding="utf-8") as f:
            spans, _ = parse(f.read())
        got = spans[("ALLTOALL", 0, 4, 1, 4)][0][0][2]
        if got != A2A:
            sys.exit("FAIL: two rounds ordered %r, want %r" % (got, A2A))
        write(prof, version=3)
        r = subprocess.run([sys.executable, gen, "-o", out] + sticky + [prof],
                           capture_output=True, text=True)
        if r.returncode == 0 or "format_version" not in r.stderr:
            sys.exit("FAIL: format_version 3 accepted: %r" % r.stderr)
        write(prof)
        bare = os.path.join(d, "bare.h")
        with open(bare, "w", encoding="utf-8") as f:
            f.write("/* no stickiness here */\n")
        r = subprocess.run([sys.executable, gen, "-o", out, "--sticky-from",
                            bare, prof], capture_output=True, text=True)
        if r.returncode == 0 or "COLL_TABLE_STICKY" not in r.stderr:
            sys.exit("FAIL: a header without the factor accepted: %r" %
                     r.stderr)
    print("builtin_gen_test: %d spans as expected" % len(EXPECTED))


if __name__ == "__main__":
    main()
